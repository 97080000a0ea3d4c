/**
 * The HTTP client of the hosted render API (`/v3/…`, see api/openapi.yaml): bearer
 * authentication with one refresh-and-replay on 401 (an OAuth token only; never twice), retries
 * with backoff on network errors and 5xx, and the API's error body turned into a
 * {@linkcode CloudApiError} that names the code and field.
 *
 * @module
 */

import { backoffDelay, sleep } from "../util/async.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** An error answer of the API, or a request that never got one. */
export class CloudApiError extends VidError {
  /** Always `"CloudApiError"`. */
  override name = "CloudApiError";
  /** HTTP status; 0 when the request never got an answer. */
  override readonly status: number;
  /** The API's error code, e.g. `vid_project_invalid`. */
  override readonly code: string;
  /** The request field at fault, when the API names one. */
  override readonly field?: string;
  /**
   * Creates the error.
   *
   * @param status HTTP status (0: no answer).
   * @param code The API error code.
   * @param message What is wrong.
   * @param field The request field at fault.
   */
  constructor(status: number, code: string, message: string, field?: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

/** How the client authenticates. */
export interface Authenticator {
  /** The `Authorization` header value. */
  header(): string;
  /**
   * Gets a fresh credential after a 401; resolves false when there is nothing to refresh
   * (an API key).
   */
  refresh?(): Promise<boolean>;
}

/** Options of {@linkcode CloudClient}. */
export interface CloudClientOptions {
  /** Base URL, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** Adds the credential to each request. @default none */
  auth?: Authenticator;
  /** Attempts for network errors and 5xx. @default 4 */
  attempts?: number;
  /** Wait before retry `n` (1-based). @default 500 ms x 2^(n-1), capped at 8 s */
  backoffMs?: (attempt: number) => number;
  /** Told before each retry (the CLI prints it). */
  onRetry?: (info: { what: string; attempt: number; reason: string }) => void;
  /** The fetch to use. @default globalThis.fetch */
  fetch?: typeof fetch;
}

/** One request. */
export interface RequestOptions {
  /** JSON request body. */
  body?: unknown;
  /** Idempotency-Key header. */
  idempotencyKey?: string;
  /** What the request does, for retry messages. */
  what?: string;
}

function defaultBackoff(attempt: number): number {
  return backoffDelay(attempt, { baseMs: 500, maxMs: 8000 });
}

/**
 * A client of one API base URL.
 *
 * @example
 * ```ts no_run
 * const key = Deno.env.get("CLOUD_API_KEY")!;
 * const client = new CloudClient({
 *   baseUrl: "http://127.0.0.1:8787",
 *   auth: { header: () => `Bearer ${key}` },
 * });
 * const me = await client.request<{ email: string }>("GET", "/v3/me");
 * ```
 */
export class CloudClient {
  /** The API address, without a trailing slash. */
  readonly baseUrl: string;
  #options: CloudClientOptions;

  /**
   * Creates a client.
   *
   * @param options Address, credential and retry settings.
   */
  constructor(options: CloudClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#options = options;
  }

  /** Sends `method path` with JSON, retrying and refreshing as documented; returns the JSON. */
  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    let refreshed = false;
    while (true) {
      const response = await this.#send(
        options.what ?? `${method} ${path}`,
        () => {
          const headers = new Headers({ accept: "application/json" });
          const auth = this.#options.auth;
          if (auth) headers.set("authorization", auth.header());
          if (options.idempotencyKey) headers.set("idempotency-key", options.idempotencyKey);
          let body: string | undefined;
          if (options.body !== undefined) {
            headers.set("content-type", "application/json");
            body = JSON.stringify(options.body);
          }
          return new Request(`${this.baseUrl}${path}`, { method, headers, body });
        },
      );
      if (response.status === 401) {
        await response.body?.cancel();
        if (!refreshed && (await this.#options.auth?.refresh?.())) {
          refreshed = true;
          continue;
        }
        throw new CloudApiError(
          401,
          "vid_unauthorized",
          refreshed
            ? "the server still refuses the credential after a refresh: run `vid auth login`"
            : "the server refused the credential: run `vid auth login`, or check CLOUD_API_KEY / VID_API_KEY",
        );
      }
      return await this.#json<T>(response);
    }
  }

  /** PUTs bytes to a signed upload URL (no bearer token), retrying as documented. */
  async upload<T>(url: string, bytes: Uint8Array<ArrayBuffer>, what = "upload"): Promise<T> {
    const response = await this.#send(what, () =>
      new Request(url, {
        method: "PUT",
        headers: { "content-type": "application/zip" },
        body: bytes,
      }));
    return await this.#json<T>(response);
  }

  /** GETs a signed download URL, retrying as documented; returns the response to stream. */
  async download(url: string, what = "download"): Promise<Response> {
    const response = await this.#send(what, () => new Request(url));
    if (!response.ok) await this.#json(response);
    return response;
  }

  async #json<T>(response: Response): Promise<T> {
    const text = await response.text();
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      // not JSON: reported below
    }
    if (!response.ok) {
      const error = (body as { error?: { code?: string; message?: string; field?: string } })
        ?.error;
      throw new CloudApiError(
        response.status,
        error?.code ?? `http_${response.status}`,
        error?.message ?? `HTTP ${response.status}: ${text.slice(0, 200)}`,
        error?.field,
      );
    }
    return body as T;
  }

  async #send(what: string, build: () => Request): Promise<Response> {
    const attempts = this.#options.attempts ?? 4;
    const fetcher = this.#options.fetch ?? fetch;
    for (let attempt = 1;; attempt++) {
      let reason: string;
      try {
        const response = await fetcher(build());
        if (response.status < 500) return response;
        reason = `HTTP ${response.status}`;
        if (attempt >= attempts) return response;
        await response.body?.cancel();
      } catch (error) {
        reason = (error as Error).message;
        if (attempt >= attempts) {
          throw new CloudApiError(
            0,
            "network_error",
            `${what}: ${reason} (after ${attempt} attempts); check that the server at ` +
              `${this.baseUrl} runs, or set CLOUD_API_URL to its address`,
          );
        }
      }
      this.#options.onRetry?.({ what, attempt, reason });
      const wait = (this.#options.backoffMs ?? defaultBackoff)(attempt);
      await sleep(wait);
    }
  }
}

/** An authenticator for a fixed bearer credential (API key). */
export function bearerAuth(credential: string): Authenticator {
  return { header: () => `Bearer ${credential}` };
}
