/**
 * API errors: every failure of the hosted API answers `{"error": {"code", "message",
 * "field"?}}` with a stable code (see api/openapi.yaml).
 *
 * @module
 */
import { EXIT_FAILED, EXIT_USAGE, VidError } from "../../errors.ts";

/** The stable error codes of the API. */
export type ErrorCode =
  | "vid_unauthorized"
  | "vid_forbidden"
  | "vid_not_found"
  | "vid_invalid_request"
  | "vid_project_invalid"
  | "vid_payload_too_large"
  | "vid_idempotency_conflict"
  | "vid_insufficient_credits"
  | "vid_asset_not_ready"
  | "vid_rate_limited"
  | "vid_too_many_renders"
  | "vid_limit_exceeded"
  | "vid_unavailable"
  | "vid_insufficient_storage"
  | "vid_internal";

/** An error the API answers with its status and body. */
export class ApiError extends VidError {
  override name = "ApiError";
  override readonly status: number;
  override readonly code: ErrorCode;
  override readonly field?: string;
  constructor(status: number, code: ErrorCode, message: string, field?: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.status = status;
    this.code = code;
    this.field = field;
  }

  /** The JSON body. */
  toJSON(): { error: { code: ErrorCode; message: string; field?: string } } {
    return {
      error: {
        code: this.code,
        message: this.message,
        ...(this.field !== undefined ? { field: this.field } : {}),
      },
    };
  }
}

/** 429: too many failed attempts; the answer carries `Retry-After`. */
export class RateLimitedError extends ApiError {
  override name = "RateLimitedError";
  /** Seconds until the client may try again. */
  readonly retryAfterSeconds: number;
  constructor(message: string, retryAfterSeconds: number) {
    super(429, "vid_rate_limited", `${message}; try again in ${retryAfterSeconds} s`);
    this.retryAfterSeconds = retryAfterSeconds;
  }
}

/**
 * 429: the account has as many renders queued as the server allows
 * (`--max-queued-per-account`); the answer carries `Retry-After`.
 */
export class TooManyRendersError extends RateLimitedError {
  override name = "TooManyRendersError";
  override readonly code: ErrorCode = "vid_too_many_renders";
}

/**
 * 422: the render asks more than the server's `flag` allows (`--max-duration`,
 * `--max-frames`); refused before any charge.
 */
export class LimitExceededError extends ApiError {
  override name = "LimitExceededError";
  /** The `vid server` flag that sets the limit. */
  override readonly flag: string;
  constructor(message: string, field: string, flag: string) {
    super(422, "vid_limit_exceeded", message, field);
    this.flag = flag;
  }
}

/**
 * 400 naming a request field. The message is prefixed with the field unless it already
 * starts with it (checks shared with the SDK, such as `checkCallbackUrl`, name the field
 * themselves; the prefix once is enough).
 */
export function invalid(field: string, message: string): ApiError {
  const named = message.startsWith(`${field}:`) || message.startsWith(`${field} `);
  return new ApiError(400, "vid_invalid_request", named ? message : `${field}: ${message}`, field);
}

/** 404 for an object this account cannot see. */
export function notFound(what: string, id: string): ApiError {
  return new ApiError(404, "vid_not_found", `no ${what} ${id} in this account`);
}

/** Every API error code, as keys: the compiler refuses a code added to ErrorCode and not here. */
const ERROR_CODES: Readonly<Record<ErrorCode, true>> = {
  vid_unauthorized: true,
  vid_forbidden: true,
  vid_not_found: true,
  vid_invalid_request: true,
  vid_project_invalid: true,
  vid_payload_too_large: true,
  vid_idempotency_conflict: true,
  vid_insufficient_credits: true,
  vid_asset_not_ready: true,
  vid_rate_limited: true,
  vid_too_many_renders: true,
  vid_limit_exceeded: true,
  vid_unavailable: true,
  vid_insufficient_storage: true,
  vid_internal: true,
};

/**
 * The API's answer to an error a route threw, read off the one error tree: an
 * {@linkcode ApiError} is its own answer; another {@linkcode VidError} with an HTTP status
 * and an API code answers with them; an input error naming its field (a bad value of a
 * declared render option) is a 400 naming the API field. Anything else is `undefined`:
 * a fault of the server, which the caller logs and answers with a bare 500.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { VidError } from "../../errors.ts";
 *
 * const answer = apiErrorFor(
 *   new VidError("fps: must be a rate", { field: "fps", detail: "must be a rate" }),
 * );
 * assert.deepEqual(answer?.toJSON(), {
 *   error: { code: "vid_invalid_request", message: "fps: must be a rate", field: "fps" },
 * });
 * assert.equal(apiErrorFor(new Error("a bug")), undefined);
 * ```
 */
export function apiErrorFor(error: unknown): ApiError | undefined {
  if (error instanceof ApiError) return error;
  if (!(error instanceof VidError)) return undefined;
  if (
    error.status !== undefined && error.code !== undefined && Object.hasOwn(ERROR_CODES, error.code)
  ) {
    return new ApiError(error.status, error.code as ErrorCode, error.message, error.field);
  }
  if (error.exitCode === EXIT_USAGE && error.field !== undefined) {
    return invalid(error.field, error.detail ?? error.message);
  }
  return undefined;
}

/** What a tenant may be told about where the server keeps things: nothing. */
const SERVER_PATH = "<server path>";
/** Top folders of server file systems; a path under one is the server's, not the project's. */
const SYSTEM_ROOTS =
  "usr|opt|home|root|tmp|var|etc|srv|mnt|media|private|Users|nix|snap|proc|dev|run|lib|bin|sbin|data|workspace|work|app";

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * A message for a tenant (a render's `error`), with the server's file system paths taken
 * out: paths inside the render's project (unpacked for the render, or for one of its chunks)
 * become project-relative (`index.html`); the
 * server's folders (`roots`: data, temp, working and home folders), `file://` URLs and
 * absolute paths under system folders (`/usr`, `/tmp`, `/home`, …) become `<server path>`.
 * A project URL such as `/clips/a.mp4` is kept. Errors returned to tenants never contain
 * server paths.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   tenantMessage("/srv/vid/work/run-1/render-rnd_1-x/project/a.html: bad", ["/srv/vid"]),
 *   "a.html: bad",
 * );
 * ```
 */
export function tenantMessage(message: string, roots: readonly string[]): string {
  let text = message.replace(
    /(?:file:\/\/)?\/[^\s"'`]*?\/(?:render|chunk|lambda|upload)-[^/\s]+\/project\//g,
    "",
  );
  text = text.replace(/file:\/\/\/[^\s"'`),;]*/g, SERVER_PATH);
  for (const root of roots) {
    const clean = root.replace(/\/+$/, "");
    if (clean.length < 2) continue;
    text = text.replace(
      new RegExp(`${escapeRegExp(clean)}(?:/[^\\s"'\`),;:]*)?`, "g"),
      SERVER_PATH,
    );
  }
  return text.replace(
    new RegExp(
      `(^|[\\s"'\`(=:[])/(?:${SYSTEM_ROOTS})(?:/[^\\s"'\`),;]*)?(?=$|[\\s"'\`),;:\\]])`,
      "g",
    ),
    `$1${SERVER_PATH}`,
  );
}
