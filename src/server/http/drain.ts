/**
 * Draining a stopping server's requests. From SIGTERM or SIGINT on, a request that arrives is
 * answered 503 `vid_unavailable` with `Retry-After` and `Connection: close` (its client's retry
 * goes to another instance, or to this one restarted), except the probes, which report the
 * stop themselves; requests already in flight (an upload still streaming its body, a download
 * still being sent) are left to finish until the drain deadline. Those still running then are
 * cut off: a body still arriving ends with a 503 answer, a download still going out is ended,
 * and each is logged on one line (no stack trace) with its method, path and age.
 *
 * @module
 */

import { ApiError } from "./errors.ts";

/** `Retry-After` of the 503 a stopping server answers, seconds. */
export const DRAINING_RETRY_AFTER_SECONDS = 5;

/** Paths a stopping server still serves: `/readyz` says it is stopping, `/healthz` is alive. */
const PROBES: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/metrics"]);

/** How long cut-off requests get to send their 503 before the listener closes, ms. */
const CUT_OFF_ANSWER_MS = 1000;

/** A request handler as `Deno.serve` takes it. */
export type Handler = (
  request: Request,
  info: Deno.ServeHandlerInfo<Deno.NetAddr>,
) => Response | Promise<Response>;

/** 503 of a request cut off at the drain deadline (its body was still arriving). */
export class DrainCutOffError extends ApiError {
  override name = "DrainCutOffError";
  constructor(seconds: number) {
    super(
      503,
      "vid_unavailable",
      `the server stopped before this request finished (it was given ${seconds} s); send it ` +
        "again",
    );
  }
}

/** One request in flight. */
interface InFlight {
  method: string;
  path: string;
  started: number;
  /** Ends its body (arriving or going out) now. */
  cutOff(reason: Error): void;
  /** Settles when the request is over: answered, and its streamed answer sent. */
  done: Promise<void>;
}

/** What a drain did. */
export interface DrainResult {
  /** Requests that were in flight at the signal and finished within the deadline. */
  finished: number;
  /** Requests cut off at the deadline (each logged). */
  cutOff: number;
}

/** The answer to a request that arrives while the server stops. */
function stoppingAnswer(): Response {
  return Response.json(
    new ApiError(
      503,
      "vid_unavailable",
      "this server is stopping and takes no new requests; send the request again after " +
        "Retry-After seconds (to another instance, or this one restarted)",
    ).toJSON(),
    {
      status: 503,
      headers: {
        "retry-after": String(DRAINING_RETRY_AFTER_SECONDS),
        connection: "close",
      },
    },
  );
}

/**
 * `response` with `Connection: close`: the client of a request cut off mid-body still holds
 * its connection open, and the listener's close would wait on it.
 */
function closing(response: Response): Response {
  const headers = new Headers(response.headers);
  headers.set("connection", "close");
  return new Response(response.body, {
    status: response.status,
    statusText: response.statusText,
    headers,
  });
}

/** `body` ending (with `reason`) when `signal` aborts. */
function abortable(
  body: ReadableStream<Uint8Array>,
  signal: AbortSignal,
): ReadableStream<Uint8Array> {
  // An abort errors the readable side with the signal's reason and cancels `body`.
  return body.pipeThrough(new TransformStream<Uint8Array, Uint8Array>(), { signal });
}

/**
 * A streamed answer of known length (a download) counted until its last byte is sent, or the
 * client goes away; `cut` ends it. Answers without `Content-Length` (the API's JSON) are over
 * when the handler returns and are not wrapped.
 */
function tracked(
  response: Response,
  signal: AbortSignal,
  over: () => void,
): Response {
  if (response.body === null || !response.headers.has("content-length")) {
    over();
    return response;
  }
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await reader.read();
        if (done) {
          controller.close();
          over();
        } else controller.enqueue(value);
      } catch (error) {
        controller.error(error);
        over();
      }
    },
    cancel(reason) {
      over();
      return reader.cancel(reason);
    },
  });
  signal.addEventListener("abort", () => {
    reader.cancel(signal.reason).catch(() => {});
    over();
  }, { once: true });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/**
 * The requests of one server: {@linkcode Drain.handler} wraps its handler, and
 * {@linkcode Drain.drain} stops taking new requests and waits for those in flight.
 *
 * @example
 * ```ts no_run
 * const drain = new Drain();
 * const server = Deno.serve({ port: 8787 }, drain.handler(() => new Response("hi")));
 * // on SIGTERM:
 * const { cutOff } = await drain.drain(15_000);
 * await server.shutdown();
 * console.log(`${cutOff} request(s) cut off`);
 * ```
 */
export class Drain {
  readonly #inFlight = new Set<InFlight>();
  #stopping: string | undefined;
  readonly #log: (line: string) => void;

  /** @param log Where a cut-off request is told. @default console.error */
  constructor(log: (line: string) => void = console.error) {
    this.#log = log;
  }

  /** Why new requests are refused (the server stops), else `undefined`. */
  get stopping(): string | undefined {
    return this.#stopping;
  }

  /** Requests in flight now. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** `handler`, with its requests counted and refused while the server stops. */
  handler(handler: Handler): Handler {
    return async (request, info) => {
      const path = new URL(request.url).pathname;
      if (this.#stopping !== undefined && !PROBES.has(path)) return stoppingAnswer();
      const abort = new AbortController();
      const finished = Promise.withResolvers<void>();
      const entry: InFlight = {
        method: request.method,
        path,
        started: performance.now(),
        cutOff: (reason) => abort.abort(reason),
        done: finished.promise,
      };
      const over = (): void => {
        if (this.#inFlight.delete(entry)) finished.resolve();
      };
      this.#inFlight.add(entry);
      try {
        // Built from its parts: reading `request.signal` (as `new Request(request)` does)
        // makes Deno warn of its legacy abort, and no handler reads it.
        const given = request.body === null ? request : new Request(request.url, {
          method: request.method,
          headers: request.headers,
          body: abortable(request.body, abort.signal),
        });
        const response = await handler(given, info);
        return tracked(abort.signal.aborted ? closing(response) : response, abort.signal, over);
      } catch (error) {
        over();
        throw error;
      }
    };
  }

  /**
   * Refuses new requests (503) from now on and waits up to `deadlineMs` for those in flight;
   * the ones still running then are cut off, each logged on one line, and given a moment to
   * send their 503.
   */
  async drain(deadlineMs: number, reason = "stopping"): Promise<DrainResult> {
    this.#stopping = reason;
    const waiting = [...this.#inFlight];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((resolve) => timer = setTimeout(resolve, deadlineMs));
    try {
      await Promise.race([Promise.all(waiting.map((r) => r.done)), deadline]);
    } finally {
      clearTimeout(timer);
    }
    const left = [...this.#inFlight];
    const seconds = Math.round(deadlineMs / 100) / 10;
    for (const request of left) {
      const age = ((performance.now() - request.started) / 1000).toFixed(1);
      this.#log(
        `vid server: cut off ${request.method} ${request.path} at the drain deadline ` +
          `(${seconds} s after the stop signal; in flight ${age} s)`,
      );
      request.cutOff(new DrainCutOffError(seconds));
    }
    if (left.length > 0) {
      await Promise.race([
        Promise.all(left.map((r) => r.done)),
        new Promise((resolve) => timer = setTimeout(resolve, CUT_OFF_ANSWER_MS)),
      ]);
      clearTimeout(timer);
    }
    return { finished: waiting.length - left.length, cutOff: left.length };
  }
}
