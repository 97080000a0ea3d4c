/**
 * Server-side HTTP(S) requests under the address policy (`address_policy.ts`): the
 * connection goes to the very addresses the policy checked (a `lookup` hook on
 * `node:http(s)`), so a name that resolves publicly once and privately the next time
 * (DNS rebinding) cannot reach the private one. Redirects are never followed here:
 * {@linkcode guardedGet} follows them by hand, checking every hop, and reads bodies as a
 * stream with a byte cap that aborts at the limit (nothing is read in full first).
 *
 * Node built-ins only: the Lambda worker bundles this file for Node 22.
 *
 * @module
 */

import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { LookupFunction } from "node:net";
import { Readable } from "node:stream";
import { BlockedAddressError, type CheckedAddress, resolvePublicHost } from "./address_policy.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** Who may be reached. */
export interface NetworkPolicy {
  /** Reach private and loopback addresses too (no guard). @default false */
  allowPrivate?: boolean;
  /**
   * Exact `host:port` origins allowed whatever their address (a render's own project
   * server). @default none
   */
  allowHosts?: readonly string[];
}

/** Options of {@linkcode guardedFetch}. */
export interface GuardedFetchOptions extends NetworkPolicy {
  /** The field named in errors (`url`, `callback_url`, a variable name). */
  field: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /** Addresses already checked by the caller: connect to these, check nothing more. */
  pinned?: CheckedAddress[];
}

/** The URL is not an http(s) URL, or carries credentials. */
export class UnsupportedUrlError extends VidError {
  override name = "UnsupportedUrlError";
  /** The field holding the URL. */
  override readonly field: string;
  constructor(field: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
  }
}

/** A download went over its byte limit; it was aborted there. */
export class DownloadTooLargeError extends VidError {
  override name = "DownloadTooLargeError";
  /** The field holding the URL. */
  override readonly field: string;
  /** The limit in bytes. */
  readonly limit: number;
  constructor(field: string, url: string, limit: number) {
    super(`${field}: ${url} is over the ${limit} byte limit`, { exitCode: EXIT_FAILED });
    this.field = field;
    this.limit = limit;
  }
}

/**
 * A download failed: the server could not be reached or timed out (`cause` holds the
 * network error), answered with an error status (`status`), or redirected too often.
 */
export class DownloadError extends VidError {
  override name = "DownloadError";
  /** The field holding the URL. */
  override readonly field: string;
  /** The URL that failed, after any redirects. */
  readonly url: string;
  /** The HTTP status the server answered with, when it answered. */
  readonly httpStatus?: number;
  constructor(
    field: string,
    url: string,
    message: string,
    options: { cause?: unknown; httpStatus?: number } = {},
  ) {
    super(`${field}: ${message}`, { exitCode: EXIT_FAILED, cause: options.cause });
    this.field = field;
    this.url = url;
    if (options.httpStatus !== undefined) this.httpStatus = options.httpStatus;
  }
}

/**
 * A `lookup` hook for `node:net`/`node:http(s)` that answers only with the addresses
 * already checked, so the connection goes where the policy looked.
 */
export function pinnedLookup(addresses: CheckedAddress[]): LookupFunction {
  type Callback = (
    error: Error | null,
    address: string | CheckedAddress[],
    family?: number,
  ) => void;
  return ((_host: string, options: { all?: boolean }, callback: Callback) => {
    if (options?.all) callback(null, addresses);
    else callback(null, addresses[0].address, addresses[0].family);
  }) as unknown as LookupFunction;
}

/**
 * Checks an http(s) URL against the policy; returns the addresses to connect to
 * (undefined: connect by name, the policy allows anything).
 *
 * @throws {UnsupportedUrlError} When the URL is not http(s) or has credentials.
 * @throws {BlockedAddressError} When the host is not public.
 */
export async function checkUrl(
  url: URL,
  field: string,
  policy: NetworkPolicy,
): Promise<CheckedAddress[] | undefined> {
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new UnsupportedUrlError(field, `${field}: must be an http(s) URL, got ${url.protocol}`);
  }
  if (url.username || url.password) {
    throw new UnsupportedUrlError(field, `${field}: must not carry a user name or password`);
  }
  if (policy.allowPrivate) return undefined;
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  if (policy.allowHosts?.includes(`${url.hostname}:${port}`)) return undefined;
  return await resolvePublicHost(url.hostname, field);
}

/**
 * One HTTP(S) request (no redirect following) to a host the policy allows, connected to
 * the checked addresses. The response body streams.
 *
 * @example
 * ```ts no_run
 * const response = await guardedFetch(new URL("https://example.com/"), { field: "url" });
 * ```
 */
export async function guardedFetch(url: URL, options: GuardedFetchOptions): Promise<Response> {
  const addresses = options.pinned ?? await checkUrl(url, options.field, options);
  options.signal?.throwIfAborted();
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  return await new Promise<Response>((resolve, reject) => {
    const req = request(url, {
      method: options.method ?? "GET",
      headers: options.headers,
      signal: options.signal,
      ...(addresses ? { lookup: pinnedLookup(addresses) } : {}),
    }, (res) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(res.headers)) {
        if (value === undefined) continue;
        for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
      }
      const status = res.statusCode ?? 502;
      const empty = status === 204 || status === 304 || options.method === "HEAD";
      if (empty) res.resume();
      resolve(
        new Response(empty ? null : Readable.toWeb(res) as ReadableStream<Uint8Array>, {
          status,
          statusText: res.statusMessage,
          headers,
        }),
      );
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Options of {@linkcode guardedGet}. */
export interface GuardedGetOptions extends NetworkPolicy {
  field: string;
  /** Abort the download beyond this many bytes. */
  maxBytes: number;
  /** Redirects followed, each hop re-checked. @default 5 */
  maxRedirects?: number;
  /** Whole download, redirects included. @default 60000 */
  timeoutMs?: number;
  signal?: AbortSignal;
  /** Receives the body chunk by chunk (then `chunks` stays empty); e.g. a file write. */
  sink?: (chunk: Uint8Array) => Promise<void>;
}

/** A finished download. */
export interface GuardedDownload {
  /** The final URL after redirects. */
  url: string;
  status: number;
  contentType: string;
  /** Every chunk, in order (none with a `sink`); their total is at most `maxBytes`. */
  chunks: Uint8Array[];
  bytes: number;
}

/**
 * GETs `source`, following up to `maxRedirects` redirects (each hop checked against the
 * policy), and streams the body with a byte cap: a declared `content-length` over the
 * cap fails at once, an undeclared one fails as soon as the running total passes it.
 *
 * @throws {BlockedAddressError} A hop's host is not public.
 * @throws {DownloadTooLargeError} The body is over `maxBytes`.
 * @throws {Error} The host cannot be reached, answered non-2xx, or redirected too often.
 *
 * @example
 * ```ts no_run
 * const got = await guardedGet("https://cdn.example.com/logo.png", { field: "logo", maxBytes: 1e6 });
 * ```
 */
export async function guardedGet(
  source: string,
  options: GuardedGetOptions,
): Promise<GuardedDownload> {
  const { field } = options;
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    throw new UnsupportedUrlError(field, `${field}: is not a URL`);
  }
  const timeout = AbortSignal.timeout(options.timeoutMs ?? 60000);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
  const maxRedirects = options.maxRedirects ?? 5;
  for (let hop = 0; hop <= maxRedirects; hop++) {
    let response: Response;
    try {
      response = await guardedFetch(url, { ...options, signal });
    } catch (error) {
      if (error instanceof BlockedAddressError || error instanceof UnsupportedUrlError) throw error;
      const reason = timeout.aborted ? "timed out" : (error as Error).message;
      throw new DownloadError(field, url.href, `cannot download ${url.href} (${reason})`, {
        cause: error,
      });
    }
    const location = response.headers.get("location");
    if (response.status >= 300 && response.status < 400 && location !== null) {
      await response.body?.cancel();
      url = new URL(location, url);
      continue;
    }
    if (response.status < 200 || response.status >= 300) {
      await response.body?.cancel();
      throw new DownloadError(field, url.href, `${url.href} answered HTTP ${response.status}`, {
        httpStatus: response.status,
      });
    }
    const declared = Number(response.headers.get("content-length") ?? NaN);
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      await response.body?.cancel();
      throw new DownloadTooLargeError(field, url.href, options.maxBytes);
    }
    const chunks: Uint8Array[] = [];
    let bytes = 0;
    if (response.body) {
      const reader = response.body.getReader();
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          bytes += value.length;
          if (bytes > options.maxBytes) {
            await reader.cancel();
            throw new DownloadTooLargeError(field, url.href, options.maxBytes);
          }
          if (options.sink) await options.sink(value);
          else chunks.push(value);
        }
      } catch (error) {
        if (error instanceof DownloadTooLargeError) throw error;
        const reason = timeout.aborted ? "timed out" : (error as Error).message;
        throw new DownloadError(field, url.href, `cannot download ${url.href} (${reason})`, {
          cause: error,
        });
      }
    }
    return {
      url: url.href,
      status: response.status,
      contentType: response.headers.get("content-type") ?? "application/octet-stream",
      chunks,
      bytes,
    };
  }
  throw new DownloadError(field, url.href, `${source} redirected more than ${maxRedirects} times`);
}
