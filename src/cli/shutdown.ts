/**
 * Stopping a long-running command (`vid server`, `vid preview`, `vid lambda local`) on
 * SIGINT or SIGTERM with a deadline. The first signal starts an orderly stop; the process
 * exits once that is done, or when the deadline passes, or at a second signal, whichever
 * comes first: an orderly stop can wait on what the process does not control (a client
 * holding a request open, a render that ignores its cancellation), and an operator's
 * `systemctl stop` or Ctrl-C must not then hang until SIGKILL. When the stop is cut short,
 * `kill` ends the command's child processes first, so nothing outlives it.
 *
 * @module
 */

import { Option } from "@commander-js/extra-typings";
import { EXIT, positiveInteger } from "./shared.ts";

/** Default of `--shutdown-timeout`, seconds. */
export const DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 20;

/**
 * The `--shutdown-timeout <s>` option of a long-running command; `stops` says what the
 * orderly stop does, for its help.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const option = shutdownTimeoutOption("closes the studio");
 * assert.equal(option.long, "--shutdown-timeout");
 * assert.equal(option.defaultValue, 20);
 * ```
 */
export function shutdownTimeoutOption(
  stops: string,
): Option<"--shutdown-timeout <s>", undefined, number, number, false, undefined> {
  return new Option(
    "--shutdown-timeout <s>",
    `seconds an orderly stop (SIGTERM/SIGINT: ${stops}) may take before child processes ` +
      "are killed and the command exits; a second signal exits at once",
  ).argParser(positiveInteger("--shutdown-timeout")).default(DEFAULT_SHUTDOWN_TIMEOUT_SECONDS);
}

/** The signals that stop a long-running command. */
const STOP_SIGNALS: readonly Deno.Signal[] = ["SIGINT", "SIGTERM"];

/**
 * SIGINT and SIGTERM caught from the moment {@linkcode listenForStop} returns: the first and
 * any later signal. {@linkcode runUntilStopped} acts on them and removes the listeners.
 */
export interface StopSignals extends Disposable {
  /** Resolves with the first stop signal. */
  first: Promise<Deno.Signal>;
  /** Resolves with a stop signal after the first. */
  again: Promise<Deno.Signal>;
}

/**
 * Starts catching SIGINT and SIGTERM. A long-running command calls it BEFORE it announces
 * that it is ready (its "listening" line): a supervisor or a test may signal the moment it
 * reads that line, and a signal that arrives before the listeners are in place takes the
 * default action (exit 143, no orderly stop). Hand the result to {@linkcode runUntilStopped}.
 *
 * @example
 * ```ts no_run
 * const signals = listenForStop();
 * console.log("listening on http://127.0.0.1:8787");
 * await runUntilStopped({
 *   name: "vid server",
 *   timeoutSeconds: 20,
 *   stopping: "stopping",
 *   signals,
 *   close: () => Promise.resolve(),
 *   kill: () => "nothing to kill",
 * });
 * ```
 */
export function listenForStop(): StopSignals {
  const first = Promise.withResolvers<Deno.Signal>();
  const again = Promise.withResolvers<Deno.Signal>();
  let signalled = false;
  const onSignal = (signal: Deno.Signal) => (): void => {
    if (signalled) again.resolve(signal);
    else {
      signalled = true;
      first.resolve(signal);
    }
  };
  const listeners = STOP_SIGNALS.map((signal) => [signal, onSignal(signal)] as const);
  for (const [signal, listener] of listeners) Deno.addSignalListener(signal, listener);
  let disposed = false;
  return {
    first: first.promise,
    again: again.promise,
    [Symbol.dispose](): void {
      if (disposed) return;
      disposed = true;
      for (const [signal, listener] of listeners) Deno.removeSignalListener(signal, listener);
    },
  };
}

/** What {@linkcode runUntilStopped} does on a stop signal. */
export interface StopPlan {
  /** The command's name in messages, e.g. `vid server`. */
  name: string;
  /** Seconds the orderly stop may take. */
  timeoutSeconds: number;
  /** Told when the first signal arrives: what the orderly stop does. */
  stopping: string;
  /** Where `stopping` goes. @default console.log (stdout) */
  log?: (message: string) => void;
  /**
   * Signals caught since before the command announced itself ({@linkcode listenForStop}).
   * @default caught from this call on
   */
  signals?: StopSignals;
  /** The orderly stop. */
  close(): Promise<void>;
  /**
   * Ends everything at once (child processes first); returns what it did, for the message.
   * A promise must settle within its own bound: the exit waits for it.
   */
  kill(): string | Promise<string>;
}

/**
 * Waits for SIGINT or SIGTERM, then stops as {@linkcode StopPlan} says: `close()` within
 * `timeoutSeconds`, else (deadline passed, or a second signal) `kill()` and exit with
 * status 1 at once. Resolves after an orderly stop.
 *
 * @example
 * ```ts no_run
 * await runUntilStopped({
 *   name: "vid server",
 *   timeoutSeconds: 20,
 *   stopping: "stopping: in-flight renders go back to the queue",
 *   close: () => Promise.resolve(),
 *   kill: () => "nothing to kill",
 * });
 * ```
 */
export async function runUntilStopped(plan: StopPlan): Promise<void> {
  using signals = plan.signals ?? listenForStop();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await signals.first;
    (plan.log ?? console.log)(
      `${plan.stopping} (up to ${plan.timeoutSeconds} s; a second signal stops at once)`,
    );
    const deadline = new Promise<"deadline">((resolve) => {
      timer = setTimeout(() => resolve("deadline"), plan.timeoutSeconds * 1000);
    });
    const closing = plan.close().then(() => "closed" as const);
    // A close that fails after the cut is of no interest any more.
    closing.catch(() => {});
    const outcome = await Promise.race([closing, deadline, signals.again.then(() => "signal")]);
    if (outcome === "closed") return;
    const done = await plan.kill();
    console.error(
      `${plan.name}: ${
        outcome === "signal"
          ? "stopped at once on a second signal"
          : `the orderly stop took longer than ${plan.timeoutSeconds} s (--shutdown-timeout)`
      }; ${done}`,
    );
    Deno.exit(EXIT.failed);
  } finally {
    clearTimeout(timer);
  }
}
