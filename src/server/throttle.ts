/**
 * Throttling of credential guessing. Failed sign-ins are counted per account (the email
 * typed) and per client address, failed API key / access token checks per client
 * address; past the limit within the window, further attempts are refused with 429 and
 * `Retry-After` until the oldest failure leaves the window, without checking the
 * credential (so a locked-out guesser learns nothing). A success clears the account's
 * count. Counts live in memory: a restart clears them.
 *
 * | What is counted                         | Limit | Window   |
 * | --------------------------------------- | ----- | -------- |
 * | failed sign-ins per account (email)     | 5     | 15 min   |
 * | failed sign-ins per client address      | 20    | 15 min   |
 * | failed key/token checks per address     | 30    | 1 min    |
 *
 * @module
 */

/** A limit: at most `failures` within `windowMs`. */
export interface ThrottleLimit {
  failures: number;
  windowMs: number;
}

/** Failed sign-ins per account (email). */
export const SIGN_IN_PER_ACCOUNT: ThrottleLimit = { failures: 5, windowMs: 15 * 60_000 };
/** Failed sign-ins per client address. */
export const SIGN_IN_PER_ADDRESS: ThrottleLimit = { failures: 20, windowMs: 15 * 60_000 };
/** Failed API key or access token checks per client address. */
export const KEY_CHECK_PER_ADDRESS: ThrottleLimit = { failures: 30, windowMs: 60_000 };

/** Most keys one throttle tracks; the stalest go first, so memory stays bounded. */
const MAX_KEYS = 10_000;

/**
 * Failure counts over a sliding window, per key (an email, an address).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const throttle = new Throttle({ failures: 5, windowMs: 60_000 });
 * assert.equal(throttle.retryAfter("ana@example.com"), 0); // no failure yet: no wait
 * ```
 */
export class Throttle {
  readonly limit: ThrottleLimit;
  readonly #failures = new Map<string, number[]>();
  readonly #now: () => number;

  /** @param now Clock in ms (tests pass their own). */
  constructor(limit: ThrottleLimit, now: () => number = Date.now) {
    this.limit = limit;
    this.#now = now;
  }

  #recent(key: string): number[] {
    const since = this.#now() - this.limit.windowMs;
    const times = (this.#failures.get(key) ?? []).filter((t) => t > since);
    if (times.length === 0) this.#failures.delete(key);
    else this.#failures.set(key, times);
    return times;
  }

  /** Seconds until `key` may try again; 0 when it may now. */
  retryAfter(key: string): number {
    const times = this.#recent(key);
    if (times.length < this.limit.failures) return 0;
    const freed = times[times.length - this.limit.failures] + this.limit.windowMs;
    return Math.max(1, Math.ceil((freed - this.#now()) / 1000));
  }

  /** Counts a failure of `key`. */
  fail(key: string): void {
    const times = this.#recent(key);
    times.push(this.#now());
    this.#failures.delete(key);
    this.#failures.set(key, times.slice(-this.limit.failures));
    if (this.#failures.size > MAX_KEYS) {
      const oldest = this.#failures.keys().next().value;
      if (oldest !== undefined) this.#failures.delete(oldest);
    }
  }

  /** Forgets `key`'s failures (after a success). */
  clear(key: string): void {
    this.#failures.delete(key);
  }
}

/** The throttles one server shares between its API and its sign-in page. */
export interface Throttles {
  signInPerAccount: Throttle;
  signInPerAddress: Throttle;
  keyCheckPerAddress: Throttle;
}

/** Fresh throttles with the documented limits. */
export function newThrottles(): Throttles {
  return {
    signInPerAccount: new Throttle(SIGN_IN_PER_ACCOUNT),
    signInPerAddress: new Throttle(SIGN_IN_PER_ADDRESS),
    keyCheckPerAddress: new Throttle(KEY_CHECK_PER_ADDRESS),
  };
}

/**
 * The client address of a request served by `Deno.serve` (Hono passes the serve info as
 * the context's env), or `"unknown"` (in-process requests).
 */
export function clientAddress(env: unknown): string {
  const info = env as { remoteAddr?: { hostname?: unknown } } | undefined;
  const host = info?.remoteAddr?.hostname;
  return typeof host === "string" ? host : "unknown";
}
