/**
 * A deadline on every call vid makes to S3 or Step Functions. An endpoint that accepts a
 * connection and never answers would otherwise hold a call (and `vid lambda render-batch`,
 * and its Ctrl-C) forever: the SDK's `requestHandler` timeouts do not fire under Deno, but
 * an `abortSignal` passed to `send` does, on connect and on the whole request alike. So each
 * client made by `src/aws/clients.ts` sends every command with a signal that aborts after
 * the deadline (the SDK's retries included) or when {@linkcode abortAwsCalls} is called
 * (the CLI's Ctrl-C), and a deadline that passes becomes an
 * {@linkcode EndpointUnreachableError} naming the endpoint.
 *
 * The deadline is {@linkcode DEFAULT_AWS_CALL_TIMEOUT_MS} unless `VID_AWS_CALL_TIMEOUT`
 * (seconds) says otherwise, plus time for a request body of known size to go up at
 * {@linkcode UPLOAD_FLOOR_BYTES_PER_S}. It ends when the call answers: a response body
 * streaming on (a download) is not cut by it.
 *
 * Web standards, `node:process` and the errors only: the worker bundle runs this under Node.
 *
 * @module
 */

import process from "node:process";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** The deadline of one call (connect, request, answer, the SDK's retries) by default. */
export const DEFAULT_AWS_CALL_TIMEOUT_MS = 30_000;

/** The slowest upload a deadline allows for: 256 KiB/s (4 s more per MiB of body). */
export const UPLOAD_FLOOR_BYTES_PER_S = 256 * 1024;

/** An AWS (or S3/Step Functions-compatible) endpoint did not answer a call in time. */
export class EndpointUnreachableError extends VidError {
  /** Always `"EndpointUnreachableError"`. */
  override name = "EndpointUnreachableError";
  /** The endpoint that did not answer. */
  readonly endpoint: string;

  /**
   * Creates the error.
   *
   * @param endpoint The endpoint that did not answer.
   * @param timeoutMs The deadline that passed.
   * @param cause The SDK's abort error.
   */
  constructor(endpoint: string, timeoutMs: number, cause?: unknown) {
    super(
      `${endpoint} is unreachable: no answer within ${timeoutMs / 1000} s (check the ` +
        "endpoint, e.g. VID_S3_ENDPOINT or VID_SFN_ENDPOINT, and the network; " +
        "VID_AWS_CALL_TIMEOUT sets the deadline in seconds)",
      { exitCode: EXIT_FAILED, code: "endpoint_unreachable", field: "endpoint", cause },
    );
    this.endpoint = endpoint;
  }
}

let everyCall = new AbortController();

/**
 * Aborts every AWS call in flight and every later one of this process: the CLI calls it on
 * Ctrl-C so a hung call ends at once and the command can write what it has.
 *
 * @param reason Why, the rejection of the aborted calls.
 *
 * @example
 * ```ts no_run
 * Deno.addSignalListener("SIGINT", () => abortAwsCalls(new Error("interrupted")));
 * ```
 */
export function abortAwsCalls(reason?: unknown): void {
  everyCall.abort(reason);
}

/** Lets AWS calls run again after {@linkcode abortAwsCalls} (for tests in one process). */
export function resumeAwsCalls(): void {
  if (everyCall.signal.aborted) everyCall = new AbortController();
}

/**
 * The deadline of one call: `VID_AWS_CALL_TIMEOUT` seconds, else the default.
 *
 * @returns Milliseconds.
 */
export function awsCallTimeoutMs(): number {
  const seconds = Number(process.env.VID_AWS_CALL_TIMEOUT);
  return Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : DEFAULT_AWS_CALL_TIMEOUT_MS;
}

/** What a client's `send` takes as its second argument, as far as the deadline cares. */
interface SendOptions {
  abortSignal?: AbortSignal;
}

/** The part of an AWS SDK v3 client the deadline wraps. */
export interface Sender {
  send(command: unknown, options?: unknown): Promise<unknown>;
}

/**
 * Runs `call` with a signal that aborts after `timeoutMs`, on {@linkcode abortAwsCalls}, or
 * with the caller's own signal, until `call` settles; a passed deadline rejects with an
 * {@linkcode EndpointUnreachableError} naming `endpoint`, an abort with its reason.
 *
 * @param endpoint The endpoint, for the message (`http://127.0.0.1:4566`, `Step Functions`).
 * @param call The call, given the signal to pass to the SDK.
 * @param options The caller's signal and the deadline. @default awsCallTimeoutMs()
 * @returns What the call returns.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const error = await withAwsDeadline(
 *   "http://127.0.0.1:9",
 *   (signal) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
 *   { timeoutMs: 10 },
 * ).catch((e) => e);
 * assert.ok(error instanceof EndpointUnreachableError);
 * ```
 */
export async function withAwsDeadline<T>(
  endpoint: string,
  call: (signal: AbortSignal) => Promise<T>,
  options: { signal?: AbortSignal; timeoutMs?: number } = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? awsCallTimeoutMs();
  // A signal of our own, not `AbortSignal.any`: once the call has answered, nothing may
  // abort it any more, or a response body still streaming (a download) would be cut.
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`no answer within ${timeoutMs} ms`, "TimeoutError"));
  }, timeoutMs);
  const sources = [everyCall.signal, ...(options.signal ? [options.signal] : [])];
  const forwards = sources.map((source) => {
    const forward = () => controller.abort(source.reason);
    if (source.aborted) forward();
    else source.addEventListener("abort", forward, { once: true });
    return () => source.removeEventListener("abort", forward);
  });
  try {
    return await call(controller.signal);
  } catch (error) {
    if (timedOut) throw new EndpointUnreachableError(endpoint, timeoutMs, error);
    // The SDK rejects with its own AbortError: the reason says why (the interruption).
    if (controller.signal.aborted) throw controller.signal.reason;
    throw error;
  } finally {
    clearTimeout(timer);
    for (const remove of forwards) remove();
  }
}

/** Bytes of a command's request body, when known (`ContentLength`, bytes or text). */
function requestBytes(command: unknown): number {
  const input = (command as { input?: { ContentLength?: unknown; Body?: unknown } })?.input;
  if (typeof input?.ContentLength === "number") return input.ContentLength;
  const body = input?.Body;
  if (typeof body === "string") return body.length;
  if (body instanceof Uint8Array) return body.byteLength;
  return 0;
}

/**
 * Makes every `send` of `client` go through {@linkcode withAwsDeadline}, keeping a signal
 * the caller passes.
 *
 * @param client An AWS SDK v3 client.
 * @param endpoint The endpoint, for the message.
 * @returns The same client.
 *
 * @example
 * ```ts no_run
 * import { S3Client } from "@aws-sdk/client-s3";
 *
 * const s3 = withDeadlines(new S3Client({ endpoint: "http://127.0.0.1:4568" }), "http://127.0.0.1:4568");
 * ```
 */
export function withDeadlines<C extends Sender>(client: C, endpoint: string): C {
  const send = client.send.bind(client);
  client.send = (command: unknown, options?: unknown) => {
    const given = options as SendOptions | undefined;
    // An upload's body must get through on a slow link: time for it at the floor rate.
    const timeoutMs = awsCallTimeoutMs() +
      Math.ceil(requestBytes(command) / UPLOAD_FLOOR_BYTES_PER_S) * 1000;
    return withAwsDeadline(
      endpoint,
      (abortSignal) => send(command, { ...given, abortSignal }),
      { signal: given?.abortSignal, timeoutMs },
    );
  };
  return client;
}
