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
 * (seconds) says otherwise.
 *
 * Web standards, `node:process` and the errors only: the worker bundle runs this under Node.
 *
 * @module
 */

import process from "node:process";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** The deadline of one call (connect, request, answer, the SDK's retries) by default. */
export const DEFAULT_AWS_CALL_TIMEOUT_MS = 30_000;

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
 * with the caller's own signal; a passed deadline rejects with an
 * {@linkcode EndpointUnreachableError} naming `endpoint`.
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
  const deadline = AbortSignal.timeout(timeoutMs);
  const signals = [deadline, everyCall.signal, ...(options.signal ? [options.signal] : [])];
  try {
    return await call(AbortSignal.any(signals));
  } catch (error) {
    if (deadline.aborted && !everyCall.signal.aborted && !options.signal?.aborted) {
      throw new EndpointUnreachableError(endpoint, timeoutMs, error);
    }
    if (everyCall.signal.aborted && everyCall.signal.reason !== undefined) {
      throw everyCall.signal.reason;
    }
    throw error;
  }
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
    return withAwsDeadline(
      endpoint,
      (abortSignal) => send(command, { ...given, abortSignal }),
      { signal: given?.abortSignal },
    );
  };
  return client;
}
