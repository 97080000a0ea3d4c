/**
 * The async helpers every surface needs, written once: an abortable `sleep`, a host-owned
 * deadline on a promise (`withTimeout`) and a bounded wait that goes on (`within`), a bounded
 * `pool` over items, exponential `backoffDelay` with jitter, `retry` built from them, and
 * `linkSignals`, the disposable stand-in for `AbortSignal.any` under a long-lived signal.
 * Before this module each was written again where it was needed (five sleeps, five pool
 * loops and a semaphore, three backoff formulas), each with its own abort behaviour.
 *
 * Why not an npm library (p-limit, p-map, p-retry were considered): the worker bundle and
 * the npm SDK would carry three more dependencies for ~150 lines, and none of them has the
 * two behaviours the callers rely on: a pool that reads an async iterable only as fast as
 * lanes free up (the batch file is streamed with back-pressure), and that, on the first
 * failure, stops taking items and waits for the ones running before it rejects, so nothing
 * of the pool still runs when the caller's `finally` cleans up.
 *
 * Web standards only (no `Deno.*`, no `node:`): the worker under Node and the browser-free
 * SDK import it too.
 *
 * @module
 */

/**
 * Resolves after `ms` milliseconds; rejects with `signal.reason` as soon as `signal`
 * aborts (at once when it already has), and the timer is cleared then.
 *
 * @param ms Milliseconds to wait (negative waits 0).
 * @param signal Ends the wait early.
 * @returns A promise that resolves after the wait.
 *
 * @example
 * ```ts
 * const controller = new AbortController();
 * setTimeout(() => controller.abort(), 10);
 * await sleep(60_000, controller.signal).catch(() => "aborted"); // after ~10 ms
 * ```
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, Math.max(0, ms));
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Settles as `promise` does, or rejects with `onTimeout()` after `ms` milliseconds if it has
 * not settled by then; the timer is cleared either way, so nothing keeps the process alive.
 * The host owns the deadline: use it around a promise another party (a page, a browser, a
 * server) may never settle.
 *
 * @param promise The work to wait for.
 * @param ms Milliseconds it may take.
 * @param onTimeout Makes the error to reject with, naming what timed out.
 * @returns What `promise` resolves to.
 *
 * @example
 * ```ts
 * const slow = new Promise((resolve) => setTimeout(resolve, 1000));
 * await withTimeout(slow, 10, () => new Error("slow: timed out after 10 ms"))
 *   .catch((error) => error.message); // "slow: timed out after 10 ms"
 * ```
 */
export function withTimeout<T>(
  promise: Promise<T>,
  ms: number,
  onTimeout: () => Error,
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(onTimeout()), Math.max(0, ms));
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Waits for `promise` at most `ms` milliseconds: `{ value }` when it resolved in time,
 * `undefined` when the time ran out first (the promise is left to settle on its own). For
 * a bounded wait that goes on either way: closing a window a hung browser may not answer,
 * a grace period before a kill. The timer is cleared either way. A rejection of `promise`
 * in time passes through.
 *
 * @param promise The work to wait for.
 * @param ms Milliseconds to wait at most.
 * @returns `{ value }`, or `undefined` after `ms`.
 *
 * @example
 * ```ts
 * const never = new Promise<number>(() => {});
 * await within(Promise.resolve(7), 1000); // { value: 7 }
 * await within(never, 10); // undefined, after ~10 ms
 * ```
 */
export async function within<T>(
  promise: Promise<T>,
  ms: number,
): Promise<{ value: T } | undefined> {
  let timer: Parameters<typeof clearTimeout>[0];
  try {
    return await Promise.race([
      promise.then((value) => ({ value })),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(resolve, Math.max(0, ms));
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** A signal that aborts when any of its sources does, until {@linkcode LinkedSignal.dispose}. */
export interface LinkedSignal {
  /** Aborts with the first source's reason. */
  readonly signal: AbortSignal;
  /** Unhooks it from its sources: call once the work it guards has ended (idempotent). */
  dispose(): void;
}

/**
 * `AbortSignal.any(sources)` that lets go of its sources when `dispose` is called.
 *
 * Why not `AbortSignal.any`: the DOM standard keeps a dependent signal alive while any of
 * its sources may still abort and it has an abort listener, and so does Deno. Each render
 * of a worker took `AbortSignal.any([queue's lifelong signal, …])`, and whatever listened
 * under it (with everything its listener's closure holds) stayed reachable from the queue
 * for the life of the process: about 1.2 KB per signal with one empty listener, measured,
 * and a render's listeners hold far more. Here the sources hold one listener each, removed
 * on `dispose` (and once any source aborts), so nothing of a finished render stays
 * reachable from a signal that outlives it.
 *
 * @param sources The signals to follow; an already aborted one aborts the result at once.
 * @returns The linked signal and its `dispose`.
 *
 * @example
 * ```ts
 * const queue = new AbortController(); // lives as long as the process
 * const linked = linkSignals(queue.signal, AbortSignal.timeout(60_000));
 * try {
 *   await sleep(1, linked.signal); // the work the signal guards
 * } finally {
 *   linked.dispose(); // the queue's signal no longer reaches this work
 * }
 * ```
 */
export function linkSignals(...sources: AbortSignal[]): LinkedSignal {
  const controller = new AbortController();
  const hooked: [AbortSignal, () => void][] = [];
  const dispose = (): void => {
    for (const [source, listener] of hooked.splice(0)) {
      source.removeEventListener("abort", listener);
    }
  };
  const aborted = sources.find((source) => source.aborted);
  if (aborted) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, dispose };
  }
  for (const source of sources) {
    const listener = (): void => {
      controller.abort(source.reason);
      dispose();
    };
    source.addEventListener("abort", listener, { once: true });
    hooked.push([source, listener]);
  }
  return { signal: controller.signal, dispose };
}

/**
 * Runs `work` over `items` with at most `concurrency` calls in flight, and returns the
 * results in item order. Items are taken one at a time as lanes free up, so an async
 * iterable (a streamed file) is read only as fast as the work goes.
 *
 * On the first rejection of `work`, or when `signal` aborts, no further item is taken; the
 * calls already running are awaited, then the pool rejects with that first error (or
 * `signal.reason`). Nothing started by the pool runs after it settles.
 *
 * @param items What to work on, in order.
 * @param concurrency Most calls at once (at least 1).
 * @param work Called once per item with its index.
 * @param signal Stops taking items.
 * @returns The results of `work`, in item order.
 * @throws {RangeError} When `concurrency` is not a positive integer.
 *
 * @example
 * ```ts
 * const squares = await pool([1, 2, 3, 4], 2, async (n) => n * n);
 * // [1, 4, 9, 16], with at most 2 calls in flight
 * ```
 */
export async function pool<T, R>(
  items: Iterable<T> | AsyncIterable<T>,
  concurrency: number,
  work: (item: T, index: number) => Promise<R>,
  signal?: AbortSignal,
): Promise<R[]> {
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`);
  }
  const iterator: Iterator<T> | AsyncIterator<T> = Symbol.asyncIterator in items
    ? (items as AsyncIterable<T>)[Symbol.asyncIterator]()
    : (items as Iterable<T>)[Symbol.iterator]();
  const results: R[] = [];
  let index = 0;
  let done = false;
  let failure: { error: unknown } | undefined;
  // Lanes take items one after another: an async iterator must not be asked twice at once.
  let turn: Promise<unknown> = Promise.resolve();
  const take = (): Promise<{ item: T; index: number } | undefined> => {
    const next = turn.then(async () => {
      if (done || failure || signal?.aborted) return undefined;
      const step = await iterator.next();
      if (step.done) {
        done = true;
        return undefined;
      }
      return { item: step.value, index: index++ };
    });
    turn = next.catch(() => {});
    return next;
  };
  const lane = async (): Promise<void> => {
    try {
      for (let next = await take(); next; next = await take()) {
        results[next.index] = await work(next.item, next.index);
      }
    } catch (error) {
      failure ??= { error };
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  if (!done) await iterator.return?.();
  if (failure) throw failure.error;
  if (signal?.aborted && !done) throw signal.reason;
  return results;
}

/** How a retry delay grows: see {@linkcode backoffDelay}. */
export interface BackoffOptions {
  /** Delay ceiling after the first failed attempt, ms; doubles per attempt. */
  baseMs: number;
  /** Largest delay, ms. */
  maxMs: number;
  /**
   * `"full"`: a uniform delay between 0 and the ceiling (callers that start many calls at
   * once spread out most). A number `f` in [0, 1]: the ceiling ±`f` (so 0.2 is 80-120 %),
   * never over `maxMs`. `0` or unset: exactly the ceiling.
   */
  jitter?: "full" | number;
}

/**
 * The delay before attempt `attempt + 1`: `baseMs · 2^(attempt-1)`, capped at `maxMs`,
 * with jitter so many callers failing together do not retry in lockstep.
 *
 * @param attempt The failed attempt, from 1.
 * @param options Base, cap and jitter.
 * @param random A source of numbers in [0, 1). @default Math.random
 * @returns Milliseconds to wait (an integer).
 *
 * @example
 * ```ts
 * backoffDelay(3, { baseMs: 1000, maxMs: 60_000, jitter: 0.2 }); // 3200…4800
 * backoffDelay(3, { baseMs: 200, maxMs: 5000, jitter: "full" }); // 0…800
 * ```
 */
export function backoffDelay(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(options.baseMs * 2 ** Math.max(attempt - 1, 0), options.maxMs);
  const jitter = options.jitter ?? 0;
  const delay = jitter === "full"
    ? ceiling * random()
    : ceiling * (1 - jitter + 2 * jitter * random());
  return Math.min(Math.round(delay), options.maxMs);
}

/** Options of {@linkcode retry}. */
export interface RetryOptions extends BackoffOptions {
  /** Attempts in all, the first included (at least 1). */
  attempts: number;
  /** Whether an error is worth another attempt. @default every error */
  retryable?: (error: unknown) => boolean;
  /** Called before each wait, with the failed attempt, its error and the delay. */
  onRetry?: (info: { attempt: number; error: unknown; delayMs: number }) => void;
  /** Stops waiting: the pending wait rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** A source of numbers in [0, 1) for the jitter. @default Math.random */
  random?: () => number;
}

/**
 * Calls `fn` until it resolves, an error is not `retryable`, or `attempts` run out, waiting
 * {@linkcode backoffDelay} between attempts. Rejects with the last error, or with
 * `signal.reason` when `signal` aborts (before an attempt or during a wait).
 *
 * @param fn The operation; receives the attempt number, from 1.
 * @param options Attempts, backoff, which errors to retry, and the abort signal.
 * @returns What `fn` resolved to.
 * @throws {RangeError} When `attempts` is not a positive integer.
 *
 * @example
 * ```ts
 * let calls = 0;
 * const flaky = () => ++calls < 3 ? Promise.reject(new Error("busy")) : Promise.resolve(calls);
 * const result = await retry(flaky, { attempts: 4, baseMs: 5, maxMs: 50, jitter: "full" });
 * // 3: two failures, then the answer
 * ```
 */
export async function retry<T>(
  fn: (attempt: number) => Promise<T>,
  options: RetryOptions,
): Promise<T> {
  if (!Number.isInteger(options.attempts) || options.attempts < 1) {
    throw new RangeError(`attempts must be a positive integer, got ${options.attempts}`);
  }
  for (let attempt = 1;; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await fn(attempt);
    } catch (error) {
      if (attempt >= options.attempts || !(options.retryable?.(error) ?? true)) throw error;
      const delayMs = backoffDelay(attempt, options, options.random);
      options.onRetry?.({ attempt, error, delayMs });
      await sleep(delayMs, options.signal);
    }
  }
}
