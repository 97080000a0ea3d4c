/**
 * The host's deadlines on a composition page. A page's own timers cannot guard it: a
 * script that busy-loops (`setTimeout(() => { while (true) {} }, 300)`) stops the page's
 * readiness timeout with everything else on its main thread, and a CDP call into that page
 * (`Runtime.evaluate` of a seek, a capture) then never answers. So the renderer's process
 * holds the timer: when a frame's seek and capture, or a page's load, outlive their
 * deadline, or the render's abort signal fires meanwhile, the page's script is stopped
 * (`Runtime.terminateExecution`), the page's browser is killed with its process group (the
 * caller's ffmpeg goes with the render's failure) and the wait ends at once with an error
 * naming the frame, instead of holding a render slot forever.
 *
 * @module
 */

import { EXIT_FAILED, VidError } from "../errors.ts";
import type { CdpSession } from "./cdp.ts";
import { within } from "../util/async.ts";

// The default deadline is declared with the render option (`--frame-timeout`).
export { DEFAULT_FRAME_TIMEOUT_MS } from "../request/options.ts";

/**
 * Deadline of opening a composition page (window, runtime, navigation to its load event)
 * and of listing its media, milliseconds: a page's load may fetch more than a frame does,
 * so it gets at least this long, whatever the frame deadline.
 */
export const PAGE_LOAD_TIMEOUT_MS = 60000;

/** Seconds, for messages: `3 s`, `0.5 s`. */
function secondsText(ms: number): string {
  return `${Number((ms / 1000).toFixed(3))} s`;
}

/**
 * A composition page stopped responding: a frame's seek and capture (or the page's load)
 * did not finish within its deadline, measured by the host. The page's script was stopped
 * and its browser killed. `frame` is null when the page hung while loading.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const error = new FrameTimeoutError(12, 3000);
 * assert.match(error.message, /^frame 12: the page stopped responding/);
 * assert.equal(error.flag, "--frame-timeout");
 * ```
 */
export class FrameTimeoutError extends VidError {
  /** Always `"FrameTimeoutError"`. */
  override name = "FrameTimeoutError";
  /** The frame that hung; null for the page's load. */
  readonly frame: number | null;
  /** The deadline that passed, milliseconds. */
  readonly timeoutMs: number;
  /**
   * Creates the error.
   *
   * @param frame The frame whose seek and capture hung; null for the page's load.
   * @param timeoutMs The deadline that passed, milliseconds.
   */
  constructor(frame: number | null, timeoutMs: number) {
    const hung = frame === null
      ? `the page stopped responding while loading (it did not finish within ${
        secondsText(timeoutMs)
      })`
      : `frame ${frame}: the page stopped responding (its seek and capture did not finish ` +
        `within ${secondsText(timeoutMs)})`;
    super(
      `${hung}, so the render was stopped. A script of the page is probably busy without ` +
        "end (a loop that never yields, e.g. in a timer or animation callback): fix the page " +
        "script. If its frames are legitimately this slow, raise --frame-timeout (SDK " +
        "frameTimeoutMs).",
      // No `detail`: the message names the frame, not a flag value.
      { field: "frameTimeoutMs", flag: "--frame-timeout", exitCode: EXIT_FAILED },
    );
    this.frame = frame;
    this.timeoutMs = timeoutMs;
  }
}

/** What {@linkcode underDeadline} does when its deadline passes or its signal aborts. */
export interface DeadlineOptions {
  /** Milliseconds the work may take. */
  timeoutMs: number;
  /** Aborts the wait at once (the render was cancelled or another worker failed). */
  signal?: AbortSignal;
  /** The error of an expired deadline. */
  expired(): Error;
  /**
   * Stops what the abandoned work still runs (stops the page's script, kills its browser),
   * before the wait rejects. Its own failures are ignored.
   */
  stop(): Promise<void>;
}

/**
 * Awaits `work` under a host-enforced deadline: when `timeoutMs` pass first, or `signal`
 * aborts first, `stop()` runs and the returned promise rejects (with `expired()`, or the
 * signal's reason) however long `work` would still have taken. `work` is started by the
 * caller; its late outcome is ignored.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * let stopped = false;
 * await assert.rejects(
 *   underDeadline(new Promise(() => {}), {
 *     timeoutMs: 10,
 *     expired: () => new Error("too slow"),
 *     stop: async () => {
 *       stopped = true;
 *     },
 *   }),
 *   /too slow/,
 * );
 * assert.ok(stopped);
 * assert.equal(await underDeadline(Promise.resolve(5), {
 *   timeoutMs: 10,
 *   expired: () => new Error("too slow"),
 *   stop: async () => {},
 * }), 5);
 * ```
 */
export async function underDeadline<T>(work: Promise<T>, options: DeadlineOptions): Promise<T> {
  const { signal } = options;
  // The abandoned work may still reject later (its browser killed): handled here.
  work.catch(() => {});
  if (signal?.aborted) {
    await options.stop().catch(() => undefined);
    throw signal.reason;
  }
  // No Promise.withResolvers: the npm SDK also runs on Node 20.
  let reject: (error: unknown) => void = () => {};
  const cut = new Promise<never>((_, rejectCut) => reject = rejectCut);
  let wasCut = false;
  const stopWith = (error: unknown): void => {
    wasCut = true;
    reject(error);
  };
  const timer = setTimeout(() => stopWith(options.expired()), options.timeoutMs);
  const onAbort = (): void => stopWith(signal!.reason);
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    return await Promise.race([work, cut]);
  } catch (error) {
    // Only a cut stops the page: the work's own failure leaves it to the caller.
    if (wasCut) await options.stop().catch(() => undefined);
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

/** How long `Runtime.terminateExecution` may take before the browser is killed anyway. */
const TERMINATE_WAIT_MS = 1000;

/**
 * Stops a hung page: its running script is terminated (so a browser that is kept, or
 * killed a moment later, stops spinning a core at once), then `kill` takes the browser
 * down. Never throws.
 *
 * @example
 * ```ts no_run
 * import type { CdpSession } from "./cdp.ts";
 * import type { Browser } from "./browser.ts";
 *
 * async function giveUp(page: CdpSession, browser: Browser): Promise<void> {
 *   await stopHungPage(page, () => browser.close());
 * }
 * ```
 */
export async function stopHungPage(page: CdpSession, kill: () => Promise<void>): Promise<void> {
  await within(page.send("Runtime.terminateExecution").catch(() => undefined), TERMINATE_WAIT_MS);
  await kill().catch(() => undefined);
}
