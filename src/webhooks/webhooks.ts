/**
 * Render webhooks: when a render has a `callback_url`, the server POSTs a
 * {@linkcode WebhookPayload} to it once the render terminates (completed or failed),
 * whether or not anyone is polling. The `callback_id` given with the render is echoed.
 *
 * Request sent to the receiver:
 *
 * ```text
 * POST <callback_url>
 * content-type: application/json
 * user-agent: vid-webhooks/1
 * vid-signature: t=1767225600,v1=5f2b…(64 hex digits)
 * vid-delivery-attempt: 1
 * vid-delivery-id: whd_…
 *
 * {"render_id":"…","status":"completed","callback_id":"…","video_url":"https://…","error":null,"delivery_id":"whd_…"}
 * ```
 *
 * `vid-signature` is `t=<unix seconds>,v1=<hex HMAC-SHA256>`. The HMAC key is the shared
 * webhook secret (UTF-8) and the signed message is `"<t>.<raw body>"`: the timestamp
 * exactly as written in the header, a full stop, then the request body bytes as received.
 *
 * To verify, a receiver:
 *
 * 1. reads the raw body before parsing it (re-serialising parsed JSON changes the bytes);
 * 2. splits the header on `,` into `key=value` parts, takes `t` and every `v1`;
 * 3. computes HMAC-SHA256(secret, `${t}.${rawBody}`) as lowercase hex and compares it with
 *    each `v1` in constant time;
 * 4. rejects the request if `t` is more than 5 minutes away from its own clock, so a
 *    captured request cannot be replayed later.
 *
 * {@linkcode verifyWebhook} does all of this. Each retry is signed afresh with a new
 * timestamp, so a delivery that succeeds after long backoff still verifies. Receivers
 * should answer 2xx quickly and deduplicate: delivery is at least once (a delivery whose
 * response was lost, or that was in flight when the server stopped, is sent again). The
 * hosted server gives each delivery a stable id, the same on every attempt and across
 * restarts: `delivery_id` in the body, so it is covered by the signature, and repeated in
 * the `vid-delivery-id` header for receivers that route before parsing (trust the header
 * only when it equals the verified body's `delivery_id`). Deliveries without an id (the
 * Lambda worker's) deduplicate on `render_id`.
 *
 * Retries: 2xx means delivered. 408, 429, 5xx, network errors and timeouts are retried
 * with exponential backoff (1 s, 2 s, 4 s… capped at 60 s, with jitter), 6 attempts in
 * all by default. Any other status, including redirects (which are never followed), is
 * final: the receiver has said the request itself is wrong.
 *
 * Targets: the server delivers only to public addresses (the address policy of
 * `src/net/address_policy.ts`), checked when the render is submitted
 * ({@linkcode checkCallbackTarget}) and again before every attempt, connecting to the
 * addresses just checked, since DNS can change in between.
 *
 * Two surfaces deliver webhooks: the hosted server (`src/server/queue/queue.ts`) and the Lambda
 * worker's `assemble` task (`worker/handler.ts`, under Node). So this module lives below
 * both, outside `src/server/`, and uses web standards and `node:` built-ins only.
 *
 * @module
 */

import {
  BlockedAddressError,
  type CheckedAddress,
  resolvePublicHost,
} from "../net/address_policy.ts";
import { guardedFetch } from "../net/guarded_fetch.ts";
import { backoffDelay as sharedBackoffDelay, sleep as abortableSleep } from "../util/async.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** Name of the request header carrying the signature. */
export const SIGNATURE_HEADER = "vid-signature";
/** Name of the request header repeating the payload's `delivery_id`, when it has one. */
export const DELIVERY_ID_HEADER = "vid-delivery-id";
/** Name of the request header carrying the 1-based attempt number. */
export const ATTEMPT_HEADER = "vid-delivery-attempt";
/** `user-agent` of delivery requests. */
export const USER_AGENT = "vid-webhooks/1";
/** Longest `callback_url` accepted, in characters. */
export const MAX_CALLBACK_URL_LENGTH = 2048;

/** The JSON body POSTed to `callback_url` when a render terminates. */
export interface WebhookPayload {
  /** Id of the render. */
  render_id: string;
  /** How the render ended. */
  status: "completed" | "failed";
  /** The opaque `callback_id` given with the render, echoed; `null` when none was given. */
  callback_id: string | null;
  /** Where the finished video can be fetched; `null` unless `status` is `"completed"`. */
  video_url: string | null;
  /** Why the render failed; `null` unless `status` is `"failed"`. */
  error: string | null;
  /**
   * The delivery's stable id, the same on every attempt (the hosted server sets it);
   * receivers drop a delivery id they have seen. Absent from the Lambda worker's webhooks.
   */
  delivery_id?: string;
}

const encoder = new TextEncoder();

function assertSecret(secret: string): void {
  if (typeof secret !== "string" || secret.length === 0) {
    throw new TypeError("webhook secret must be a non-empty string");
  }
}

function hmacKey(secret: string): Promise<CryptoKey> {
  assertSecret(secret);
  return crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
}

async function hmacHex(secret: string, message: string): Promise<string> {
  const mac = await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(message));
  return Array.from(new Uint8Array(mac), (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/**
 * Signs a webhook body and returns the {@linkcode SIGNATURE_HEADER} value,
 * `t=<timestamp>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>">`.
 *
 * @param secret The shared webhook secret; must not be empty.
 * @param timestamp Unix time in whole seconds.
 * @param body The exact request body that will be sent.
 * @returns The header value.
 * @throws {TypeError} When `secret` is empty or `timestamp` is not a non-negative integer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const body = JSON.stringify({ render_id: "r_1", status: "completed" });
 * const header = await signWebhook("s3cret", 1767225600, body);
 * assert.match(header, /^t=1767225600,v1=[0-9a-f]{64}$/);
 * assert.ok(await verifyWebhook("s3cret", header, body, { now: 1767225600 }));
 * ```
 */
export async function signWebhook(
  secret: string,
  timestamp: number,
  body: string,
): Promise<string> {
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new TypeError(
      `webhook timestamp must be a non-negative integer of seconds, got ${timestamp}`,
    );
  }
  return `t=${timestamp},v1=${await hmacHex(secret, `${timestamp}.${body}`)}`;
}

/** Options of {@linkcode verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** Largest accepted distance between the signed timestamp and `now`, in seconds. @default 300 */
  toleranceSeconds?: number;
  /** The receiver's clock, in unix seconds. @default Date.now() / 1000 */
  now?: number;
}

/** Compares two equal-purpose strings without an early exit, so timing reveals no prefix. */
function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/**
 * Checks a {@linkcode SIGNATURE_HEADER} value against the raw request body. Several `v1`
 * parts may be present (as during a secret rotation); one matching is enough.
 *
 * @param secret The shared webhook secret; must not be empty.
 * @param header The header value as received, or `null` when the header is missing.
 * @param body The raw request body, before any JSON parsing.
 * @param options Clock and tolerance.
 * @returns `true` when a signature matches and the timestamp is within tolerance of `now`;
 * `false` for a missing, malformed, stale or non-matching header.
 * @throws {TypeError} When `secret` is empty.
 *
 * @example
 * ```ts no_run
 * Deno.serve(async (request) => {
 *   const body = await request.text();
 *   const secret = Deno.env.get("VID_WEBHOOK_SECRET")!;
 *   if (!await verifyWebhook(secret, request.headers.get(SIGNATURE_HEADER), body)) {
 *     return new Response("bad signature", { status: 400 });
 *   }
 *   const payload: WebhookPayload = JSON.parse(body);
 *   console.log(payload.render_id, payload.status);
 *   return new Response(null, { status: 204 });
 * });
 * ```
 */
export async function verifyWebhook(
  secret: string,
  header: string | null,
  body: string,
  options: VerifyWebhookOptions = {},
): Promise<boolean> {
  assertSecret(secret);
  if (header === null) return false;
  let timestamp: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const separator = part.indexOf("=");
    if (separator < 0) return false;
    const name = part.slice(0, separator).trim();
    const value = part.slice(separator + 1).trim();
    if (name === "t") {
      if (timestamp !== undefined || !/^\d{1,15}$/.test(value)) return false;
      timestamp = value;
    } else if (name === "v1") {
      signatures.push(value.toLowerCase());
    }
  }
  if (timestamp === undefined || signatures.length === 0) return false;
  const tolerance = options.toleranceSeconds ?? 300;
  const now = options.now ?? Date.now() / 1000;
  if (!(Math.abs(now - Number(timestamp)) <= tolerance)) return false;
  const expected = await hmacHex(secret, `${timestamp}.${body}`);
  let matched = false;
  // Every candidate is compared, so timing does not reveal which one matched.
  for (const signature of signatures) matched = timingSafeEqual(expected, signature) || matched;
  return matched;
}

/** A `callback_url` was rejected. The message says why and never echoes credentials. */
export class CallbackUrlError extends VidError {
  /** Always `"CallbackUrlError"`. */
  override name = "CallbackUrlError";
  /** The render field at fault. */
  override readonly field = "callback_url";

  /** Creates the error; the CLI exits 1. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
  }
}

/** Options of {@linkcode checkCallbackUrl}. */
export interface CheckCallbackUrlOptions {
  /**
   * Also accept `http://` to the loopback host (`127.0.0.1`, `[::1]`, `localhost`), for
   * local development. Other hosts must still use https.
   * @default false
   */
  allowHttpLoopback?: boolean;
}

const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "[::1]", "localhost"]);

/**
 * Validates a render's `callback_url` when the render is submitted, so a bad URL is
 * refused up front instead of failing silently when the render ends.
 *
 * @param url The `callback_url` as given.
 * @param options Whether http to loopback is allowed.
 * @returns The parsed URL.
 * @throws {CallbackUrlError} When the URL is too long (over 2048 characters), does not
 * parse, is not https (or loopback http when allowed), or carries a user name or password.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(checkCallbackUrl("https://example.com/hooks/vid").href, "https://example.com/hooks/vid");
 * assert.throws(() => checkCallbackUrl("http://example.com/hooks/vid"), /must be an https:\/\/ URL/);
 * assert.equal(checkCallbackUrl("http://127.0.0.1:8080/hook", { allowHttpLoopback: true }).port, "8080");
 * ```
 */
export function checkCallbackUrl(url: string, options: CheckCallbackUrlOptions = {}): URL {
  if (typeof url !== "string") {
    throw new CallbackUrlError(`callback_url must be a string, got ${typeof url}`);
  }
  if (url.length > MAX_CALLBACK_URL_LENGTH) {
    throw new CallbackUrlError(
      `callback_url is ${url.length} characters long; the limit is ${MAX_CALLBACK_URL_LENGTH}`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CallbackUrlError(`callback_url is not a valid absolute URL: ${JSON.stringify(url)}`);
  }
  if (parsed.username !== "" || parsed.password !== "") {
    throw new CallbackUrlError(
      "callback_url must not contain a user name or password; authenticate with the signature",
    );
  }
  if (parsed.protocol === "https:") return parsed;
  if (
    options.allowHttpLoopback && parsed.protocol === "http:" && LOOPBACK_HOSTS.has(parsed.hostname)
  ) {
    return parsed;
  }
  const hint = options.allowHttpLoopback
    ? " (http is allowed only to 127.0.0.1, [::1] and localhost)"
    : "";
  throw new CallbackUrlError(
    `callback_url must be an https:// URL${hint}, got ${JSON.stringify(parsed.href)}`,
  );
}

/** Which addresses a callback may reach. */
export interface CallbackTargetPolicy {
  /** Any address, private ones included (`vid server --allow-private-urls`). @default false */
  allowPrivate?: boolean;
  /** Loopback addresses too (`vid server --allow-http-callbacks`, development). @default false */
  allowLoopback?: boolean;
}

/**
 * Checks that a `callback_url`'s host resolves only to addresses the policy allows
 * (public ones, by default), in any IP notation.
 *
 * @returns The checked addresses to connect to; undefined when any address is allowed.
 * @throws {CallbackUrlError} When the host does not resolve or is not allowed.
 *
 * @example
 * ```ts no_run
 * await checkCallbackTarget(new URL("https://hooks.example.com/vid")); // addresses
 * await checkCallbackTarget(new URL("https://127.0.0.1/hook")); // throws CallbackUrlError
 * ```
 */
export async function checkCallbackTarget(
  url: URL,
  policy: CallbackTargetPolicy = {},
): Promise<CheckedAddress[] | undefined> {
  if (policy.allowPrivate) return undefined;
  try {
    return await resolvePublicHost(url.hostname, "callback_url", {
      allowLoopback: policy.allowLoopback,
    });
  } catch (error) {
    if (error instanceof BlockedAddressError) throw new CallbackUrlError(error.message);
    throw error;
  }
}

/** Outcome of {@linkcode deliverWebhook}. */
export interface DeliveryResult {
  /** Whether the receiver answered 2xx. */
  delivered: boolean;
  /** Requests made, including the successful one. */
  attempts: number;
  /** HTTP status of the last response, when there was one. */
  status?: number;
  /** Why the last attempt failed; absent when delivered. */
  error?: string;
  /**
   * Whether trying again later could succeed (a network error, a timeout, 408, 429, 5xx);
   * false when delivered or when the answer was final.
   */
  retryable: boolean;
}

/** Options of {@linkcode deliverWebhook}. */
export interface DeliverWebhookOptions {
  /** The `callback_url`, already accepted by {@linkcode checkCallbackUrl}. */
  url: string;
  /** What to send. */
  payload: WebhookPayload;
  /** The shared webhook secret used to sign each request. */
  secret: string;
  /** Most requests to make, the first included. @default 6 */
  attempts?: number;
  /**
   * The number of this call's first request, for the attempt header, when earlier calls
   * made attempts of the same delivery (the hosted server sends one attempt per call and
   * keeps the count in its database). @default 1
   */
  firstAttempt?: number;
  /**
   * Delay in milliseconds after failed attempt `attempt` (1-based) before the next one.
   * @default {@linkcode backoffDelay}
   */
  backoffMs?: (attempt: number) => number;
  /** Per-request limit in milliseconds, for connecting and receiving the status. @default 10000 */
  timeoutMs?: number;
  /** Stops delivery: an in-flight request is cancelled and no further attempt is made. */
  signal?: AbortSignal;
  /** The fetch implementation. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** The clock used for signature timestamps, in milliseconds. @default Date.now */
  now?: () => number;
  /** Waits between attempts. @default an abortable `setTimeout` */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Re-check the target with {@linkcode checkCallbackTarget} before every attempt and
   * connect to the addresses checked (without a custom `fetch`); a refused target is a
   * final failure. Absent: the URL is used as given.
   */
  target?: CallbackTargetPolicy;
}

/**
 * The default retry delay: 1 s after the first failed attempt, doubling each time, with
 * ±20 % jitter so many webhooks failing together do not retry in lockstep; never over 60 s.
 *
 * @param attempt The failed attempt, from 1.
 * @param random A source of numbers in [0, 1). @default Math.random
 * @returns Milliseconds to wait.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const within = (ms: number, low: number, high: number) => ms >= low && ms <= high;
 * assert.ok(within(backoffDelay(1), 800, 1200));
 * assert.ok(within(backoffDelay(3), 3200, 4800));
 * assert.ok(within(backoffDelay(10), 48000, 60000));
 * ```
 */
export function backoffDelay(attempt: number, random: () => number = Math.random): number {
  return sharedBackoffDelay(attempt, { baseMs: 1000, maxMs: 60_000, jitter: 0.2 }, random);
}

function positiveInteger(field: string, value: number): void {
  if (!Number.isInteger(value) || value <= 0) {
    throw new RangeError(`${field} must be a positive integer, got ${value}`);
  }
}

/** Serialises in the documented field order, whatever the order of the object given. */
function payloadBody(payload: WebhookPayload): string {
  const { render_id, status, callback_id, video_url, error, delivery_id } = payload;
  return JSON.stringify(
    delivery_id === undefined
      ? { render_id, status, callback_id, video_url, error }
      : { render_id, status, callback_id, video_url, error, delivery_id },
  );
}

/**
 * POSTs a signed {@linkcode WebhookPayload} to `url`, retrying with backoff until the
 * receiver answers 2xx, gives a final answer, or the attempts run out. Never throws for
 * delivery failures: the outcome is in the result. Validate the URL with
 * {@linkcode checkCallbackUrl} when the render is submitted; with `target`, its host is
 * re-checked here before every attempt.
 *
 * @param options Where, what, the secret, and retry settings.
 * @returns Whether it was delivered, after how many attempts, and the last status or error.
 * @throws {RangeError} When `attempts` or `timeoutMs` is not a positive integer.
 *
 * @example
 * ```ts no_run
 * const result = await deliverWebhook({
 *   url: "https://example.com/hooks/vid",
 *   secret: Deno.env.get("VID_WEBHOOK_SECRET")!,
 *   payload: {
 *     render_id: "r_1",
 *     status: "completed",
 *     callback_id: "order-42",
 *     video_url: "https://vid.example.com/renders/r_1.mp4",
 *     error: null,
 *   },
 * });
 * if (!result.delivered) console.error(`webhook failed after ${result.attempts}: ${result.error}`);
 * ```
 */
export async function deliverWebhook(options: DeliverWebhookOptions): Promise<DeliveryResult> {
  const maxAttempts = options.attempts ?? 6;
  const timeoutMs = options.timeoutMs ?? 10_000;
  const firstAttempt = options.firstAttempt ?? 1;
  positiveInteger("attempts", maxAttempts);
  positiveInteger("timeoutMs", timeoutMs);
  positiveInteger("firstAttempt", firstAttempt);
  const backoff = options.backoffMs ?? ((attempt: number) => backoffDelay(attempt));
  const doFetch = options.fetch ?? globalThis.fetch;
  const now = options.now ?? Date.now;
  const signal = options.signal;
  // An abort ends the wait; the loop then reports "aborted".
  const sleep = options.sleep ?? ((ms: number) => abortableSleep(ms, signal).catch(() => {}));
  const body = payloadBody(options.payload);

  let status: number | undefined;
  let error = "not attempted";
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    if (signal?.aborted) {
      return { delivered: false, attempts: attempt - 1, status, error: "aborted", retryable: true };
    }
    let send = doFetch;
    if (options.target) {
      let pinned: CheckedAddress[] | undefined;
      try {
        pinned = await checkCallbackTarget(new URL(options.url), options.target);
      } catch (refused) {
        return {
          delivered: false,
          attempts: attempt - 1,
          status,
          error: (refused as Error).message,
          retryable: false,
        };
      }
      if (!options.fetch) {
        send = (input, init) =>
          guardedFetch(new URL(String(input)), {
            field: "callback_url",
            method: init?.method,
            headers: init?.headers as Record<string, string>,
            body: init?.body as string,
            signal: init?.signal ?? undefined,
            allowPrivate: pinned === undefined,
            pinned,
          });
      }
    }
    const outcome = await attemptDelivery(send, options.url, body, {
      signature: await signWebhook(options.secret, Math.floor(now() / 1000), body),
      attempt: firstAttempt + attempt - 1,
      deliveryId: options.payload.delivery_id,
      timeoutMs,
      signal,
    });
    status = outcome.status ?? status;
    if (outcome.delivered) return { delivered: true, attempts: attempt, status, retryable: false };
    error = outcome.error;
    if (signal?.aborted) {
      return { delivered: false, attempts: attempt, status, error: "aborted", retryable: true };
    }
    if (!outcome.retry) {
      return { delivered: false, attempts: attempt, status, error, retryable: false };
    }
    if (attempt < maxAttempts) await sleep(Math.max(0, backoff(attempt)));
  }
  return { delivered: false, attempts: maxAttempts, status, error, retryable: true };
}

type AttemptOutcome =
  | { delivered: true; status: number }
  | { delivered: false; retry: boolean; status?: number; error: string };

async function attemptDelivery(
  doFetch: typeof fetch,
  url: string,
  body: string,
  request: {
    signature: string;
    attempt: number;
    deliveryId?: string;
    timeoutMs: number;
    signal?: AbortSignal;
  },
): Promise<AttemptOutcome> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, request.timeoutMs);
  const forwardAbort = (): void => controller.abort();
  request.signal?.addEventListener("abort", forwardAbort, { once: true });
  try {
    const response = await doFetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "user-agent": USER_AGENT,
        [SIGNATURE_HEADER]: request.signature,
        [ATTEMPT_HEADER]: String(request.attempt),
        ...(request.deliveryId !== undefined && { [DELIVERY_ID_HEADER]: request.deliveryId }),
      },
      body,
      // A redirect could lead to plain http or an internal host that checkCallbackUrl
      // never saw, so the receiver must give its final URL.
      redirect: "manual",
      signal: controller.signal,
    });
    // The response body is of no interest; cancelling frees the connection.
    await response.body?.cancel().catch(() => {});
    const status = response.status;
    if (status >= 200 && status < 300) return { delivered: true, status };
    const retry = status === 408 || status === 429 || status >= 500;
    const reason = status >= 300 && status < 400 ? " (redirects are not followed)" : "";
    return {
      delivered: false,
      retry,
      status,
      error: `callback_url answered HTTP ${status}${reason}`,
    };
  } catch (cause) {
    if (timedOut) {
      return { delivered: false, retry: true, error: `timed out after ${request.timeoutMs} ms` };
    }
    return { delivered: false, retry: true, error: `request failed: ${errorMessage(cause)}` };
  } finally {
    clearTimeout(timer);
    request.signal?.removeEventListener("abort", forwardAbort);
  }
}

/** Node's fetch says only "fetch failed"; the reason (ECONNREFUSED…) is in `cause`. */
function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}
