/**
 * A request id for every HTTP request `vid server` serves: the caller's `X-Request-Id` when it
 * is sane (1 to {@linkcode MAX_REQUEST_ID_LENGTH} characters of letters, digits and
 * `._:-/+=@`), else a new one (`req_` and 16 hex digits). It is answered as the
 * `X-Request-Id` header of every response, errors included, and every log line written while
 * the request is served carries it (`log.ts`); in the `json` log format the request ends with
 * one access line (method, path without its query, status, duration), except probes and
 * metrics that succeed.
 *
 * @module
 */

import { ApiError } from "./errors.ts";
import { log, logContext, logFormat, withLogContext } from "../log.ts";
import { randomId } from "../auth/secrets.ts";

/** The header a request id comes in and goes out on. */
export const REQUEST_ID_HEADER = "x-request-id";

/** Longest `X-Request-Id` taken from a caller; a longer one is replaced. */
export const MAX_REQUEST_ID_LENGTH = 128;

const SANE_ID = new RegExp(`^[A-Za-z0-9._:\\-/+=@]{1,${MAX_REQUEST_ID_LENGTH}}$`);

/** Paths polled by probes and scrapers: a success there writes no access line. */
const QUIET_PATHS = new Set(["/healthz", "/readyz", "/metrics"]);

/**
 * The request id of a request with `headers`: its `X-Request-Id` when sane, else a new one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(requestIdOf(new Headers({ "x-request-id": "lb-7f3a" })), "lb-7f3a");
 * assert.match(requestIdOf(new Headers({ "x-request-id": "a b" })), /^req_[0-9a-f]{16}$/);
 * assert.match(requestIdOf(new Headers()), /^req_[0-9a-f]{16}$/);
 * ```
 */
export function requestIdOf(headers: Headers): string {
  const given = headers.get(REQUEST_ID_HEADER);
  return given !== null && SANE_ID.test(given) ? given : randomId("req", 8);
}

/** `response` with header `name` set, copied when its headers are immutable. */
function withHeader(response: Response, name: string, value: string): Response {
  try {
    response.headers.set(name, value);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    copy.headers.set(name, value);
    return copy;
  }
}

/**
 * `handler` (the app's `fetch`) with request ids: each request runs in a log context
 * carrying its id, and its response (an error's too) carries it as `X-Request-Id`.
 *
 * @example
 * ```ts no_run
 * import { Hono } from "hono";
 *
 * const app = new Hono();
 * Deno.serve({ port: 8787 }, withRequestId(app.fetch));
 * ```
 */
export function withRequestId<Info>(
  handler: (request: Request, info: Info) => Response | Promise<Response>,
): (request: Request, info: Info) => Promise<Response> {
  return (request, info) => {
    const requestId = requestIdOf(request.headers);
    return withLogContext({ requestId }, async () => {
      const started = performance.now();
      let response: Response;
      try {
        response = await handler(request, info);
      } catch (error) {
        // The app answers its own errors; this is the last resort, still with the id.
        log.error(`internal error: ${error instanceof Error ? error.stack : error}`);
        response = Response.json(new ApiError(500, "vid_internal", "internal error").toJSON(), {
          status: 500,
        });
      }
      if (logFormat() === "json") accessLine(request, response.status, started);
      return withHeader(response, REQUEST_ID_HEADER, requestId);
    });
  };
}

/** The `json` format's line of a served request. */
function accessLine(request: Request, status: number, started: number): void {
  const path = new URL(request.url).pathname;
  if (QUIET_PATHS.has(path) && status < 400) return;
  log.info(`${request.method} ${path} ${status}`, {
    ...logContext(),
    method: request.method,
    path,
    status,
    durationMs: Math.round(performance.now() - started),
  });
}
