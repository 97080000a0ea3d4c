/**
 * The page's virtual clock: `Date`, `performance.now`, `setTimeout`/`setInterval` and
 * `requestAnimationFrame` advance only when the renderer seeks. Seeking to frame n fires
 * the timers due up to that frame in order (due time, then the order they were set), then
 * one round of animation frame callbacks, so a page sees the same sequence of events
 * whatever frame a chunk starts at.
 *
 * The real timers are captured first ({@linkcode captureRealTime}): the readiness gate and
 * the media waits run on wall-clock time, which the page's own code no longer sees.
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`).
 *
 * @module
 */

/** The page's own timers and clock, captured before the virtual ones replace them. */
export interface RealTime {
  /** The page's `setTimeout`, bound to the window. */
  setTimeout: (fn: () => void, ms: number) => ReturnType<typeof setTimeout>;
  /** The page's `clearTimeout`, bound to the window. */
  clearTimeout: (id: ReturnType<typeof setTimeout> | undefined) => void;
  /** The page's `Date`. */
  Date: DateConstructor;
  /** Resolves after `ms` of wall-clock time. */
  sleep(ms: number): Promise<void>;
}

/**
 * Captures the real timers and `Date`; call before {@linkcode installVirtualClock}.
 *
 * @example
 * ```ts no_run
 * const real = captureRealTime();
 * await real.sleep(10); // wall-clock time, whatever the page's clock says
 * ```
 */
export function captureRealTime(): RealTime {
  const setTimeoutReal = globalThis.setTimeout.bind(globalThis);
  return {
    setTimeout: setTimeoutReal,
    clearTimeout: globalThis.clearTimeout.bind(globalThis),
    Date,
    sleep: (ms: number) => new Promise<void>((resolve) => setTimeoutReal(resolve, ms)),
  };
}

/**
 * When frame n is shown, in milliseconds: n × den / num × 1000 with an exact rate, else
 * n / fps × 1000.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(frameTimeMs(3, 30), 100);
 * assert.equal(frameTimeMs(30000, 29.97, { num: 30000, den: 1001 }), 1001000);
 * ```
 */
export function frameTimeMs(n: number, fps: number, rate?: { num: number; den: number }): number {
  return rate ? (n * rate.den * 1000) / rate.num : (n * 1000) / fps;
}

/**
 * When frame n is shown, in seconds (see {@linkcode frameTimeMs}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(frameTimeSeconds(15, 30), 0.5);
 * ```
 */
export function frameTimeSeconds(
  n: number,
  fps: number,
  rate?: { num: number; den: number },
): number {
  return rate ? (n * rate.den) / rate.num : n / fps;
}

/** A timer of the virtual clock. */
export interface VirtualTimer {
  /** The id `setTimeout` returned. */
  id: number;
  /** Virtual time (ms) it is due at. */
  due: number;
  /** Order it was set (or last rescheduled) in: breaks ties between equal due times. */
  seq: number;
  /** What it calls. */
  fn: (...args: unknown[]) => void;
  /** The extra arguments of `setTimeout`. */
  args: unknown[];
  /** Its period (ms) for `setInterval`; absent for `setTimeout`. */
  interval?: number;
}

/**
 * The timer that fires next among those due by `targetMs`: the earliest due, then the
 * first set; undefined when none is due.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const fn = () => {};
 * const timers = [
 *   { id: 1, due: 50, seq: 1, fn, args: [] },
 *   { id: 2, due: 50, seq: 0, fn, args: [] },
 *   { id: 3, due: 90, seq: 2, fn, args: [] },
 * ];
 * assert.equal(nextDueTimer(timers, 60)?.id, 2);
 * assert.equal(nextDueTimer(timers, 40), undefined);
 * ```
 */
export function nextDueTimer(
  timers: Iterable<VirtualTimer>,
  targetMs: number,
): VirtualTimer | undefined {
  let next: VirtualTimer | undefined;
  for (const timer of timers) {
    if (timer.due > targetMs) continue;
    if (!next || timer.due < next.due || (timer.due === next.due && timer.seq < next.seq)) {
      next = timer;
    }
  }
  return next;
}

/** The virtual clock of one page. */
export interface VirtualClock {
  /** Virtual time in ms since the page started. */
  nowMs: number;
  /**
   * Fires, in order, every timer due by `targetMs` (an interval fires again while due), then
   * leaves the clock at `targetMs`.
   */
  runTimersUntil(targetMs: number): Promise<void>;
  /** Runs the animation frame callbacks requested so far (one round). */
  runFrameCallbacks(): void;
}

/** What the clock calls back into. */
export interface ClockHooks {
  /** A timer or frame callback threw: records it (the render fails with it). */
  report(error: unknown): void;
  /** After each callback: new animations it started are picked up at this time. */
  settle(): void;
}

/**
 * Replaces `Date`, `performance.now`, the timers and `requestAnimationFrame` of the page with
 * the virtual clock; `epochMs` is what `Date.now()` returns at virtual time 0.
 *
 * @example
 * ```ts no_run
 * const clock = installVirtualClock(Date.UTC(2024, 0, 1), captureRealTime(), {
 *   report: console.error,
 *   settle: () => {},
 * });
 * setTimeout(() => console.log("fires at virtual 100 ms"), 100);
 * await clock.runTimersUntil(1000 / 30 * 3); // frame 3 at 30 fps
 * clock.runFrameCallbacks();
 * ```
 */
export function installVirtualClock(
  epochMs: number,
  real: RealTime,
  hooks: ClockHooks,
): VirtualClock {
  const w = globalThis as unknown as Record<string, unknown> & Window;
  const RealDate = real.Date;
  const clock: VirtualClock = {
    nowMs: 0,
    runTimersUntil,
    runFrameCallbacks,
  };

  function VirtualDate(this: unknown, ...args: unknown[]): unknown {
    if (!new.target) return new RealDate(epochMs + clock.nowMs).toString();
    const date = args.length === 0
      ? new RealDate(epochMs + clock.nowMs)
      : new (RealDate as unknown as new (...a: unknown[]) => Date)(...args);
    Object.setPrototypeOf(date, new.target.prototype);
    return date;
  }
  VirtualDate.prototype = RealDate.prototype;
  Object.assign(VirtualDate, {
    now: () => epochMs + clock.nowMs,
    parse: RealDate.parse,
    UTC: RealDate.UTC,
  });
  w.Date = VirtualDate as unknown as DateConstructor;
  Object.defineProperty(performance, "now", { value: () => clock.nowMs, configurable: true });

  const timers = new Map<number, VirtualTimer>();
  let nextTimerId = 1;
  let seq = 0;
  const toCallback = (handler: unknown): (...args: unknown[]) => void =>
    typeof handler === "function"
      ? handler as (...args: unknown[]) => void
      : () => (0, eval)(String(handler));
  const addTimer = (handler: unknown, delay: unknown, args: unknown[], repeat: boolean) => {
    const ms = Math.max(0, Number(delay) || 0);
    const id = nextTimerId++;
    timers.set(id, {
      id,
      due: clock.nowMs + ms,
      seq: seq++,
      fn: toCallback(handler),
      args,
      interval: repeat ? Math.max(1, ms) : undefined,
    });
    return id;
  };
  w.setTimeout =
    ((handler: unknown, delay?: unknown, ...args: unknown[]) =>
      addTimer(handler, delay, args, false)) as unknown as typeof setTimeout;
  w.setInterval =
    ((handler: unknown, delay?: unknown, ...args: unknown[]) =>
      addTimer(handler, delay, args, true)) as unknown as typeof setInterval;
  w.clearTimeout = ((id?: number) => {
    if (id !== undefined) timers.delete(id);
  }) as typeof clearTimeout;
  w.clearInterval = w.clearTimeout as unknown as typeof clearInterval;

  let frameCallbacks = new Map<number, FrameRequestCallback>();
  let nextFrameId = 1;
  w.requestAnimationFrame = (callback: FrameRequestCallback): number => {
    const id = nextFrameId++;
    frameCallbacks.set(id, callback);
    return id;
  };
  w.cancelAnimationFrame = (id: number): void => {
    frameCallbacks.delete(id);
  };

  async function runTimersUntil(targetMs: number): Promise<void> {
    let fired = 0;
    while (true) {
      const next = nextDueTimer(timers.values(), targetMs);
      if (!next) break;
      if (++fired > 100000) {
        throw new Error("more than 100000 timer callbacks in one frame: a timer loop?");
      }
      clock.nowMs = Math.max(clock.nowMs, next.due);
      if (next.interval !== undefined) {
        next.due += next.interval;
        next.seq = seq++;
      } else {
        timers.delete(next.id);
      }
      try {
        // Called as a plain function: its stack frame then names no receiver object.
        Reflect.apply(next.fn, globalThis, next.args);
      } catch (error) {
        hooks.report(error);
      }
      await Promise.resolve();
      hooks.settle();
    }
    clock.nowMs = targetMs;
  }

  function runFrameCallbacks(): void {
    const callbacks = frameCallbacks;
    frameCallbacks = new Map();
    for (const callback of callbacks.values()) {
      try {
        callback(clock.nowMs);
      } catch (error) {
        hooks.report(error);
      }
    }
    hooks.settle();
  }

  return clock;
}
