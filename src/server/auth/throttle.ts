/**
 * Throttling of credential guessing, shaped so that nobody can lock anyone else out.
 *
 * - Sign-in: failures are counted per client address and email together, and per address.
 *   Past either limit, that address's next attempts (for that email, or for any) are refused
 *   with 429 and `Retry-After` until the oldest failure leaves the window, without checking
 *   the password, so a locked-out guesser learns nothing. A stranger elsewhere cannot lock an
 *   account: their failures count against their own address. A success clears the
 *   address+email count.
 * - API keys and access tokens: a presented credential is always checked (a hash and one
 *   indexed lookup), and a valid one is served whatever the address failed: keys and tokens
 *   are 128+ random bits, so no rate of guessing finds one, and a proxy or NAT sharing one
 *   address must not let one client's bad keys refuse another's good key. Failures are
 *   counted per address; past the limit an invalid credential gets 429 instead of 401, which
 *   slows a scanner down and tells it so.
 *
 * The address is the connection's peer, or the client a `--trusted-proxy` reports (see
 * `client_address.ts`). A server counts in its database, so the limits hold across every
 * instance on it and across restarts.
 *
 * | What is counted                              | Limit | Window   |
 * | -------------------------------------------- | ----- | -------- |
 * | failed sign-ins per client address and email | 5     | 15 min   |
 * | failed sign-ins per client address           | 20    | 15 min   |
 * | failed key/token checks per address          | 30    | 1 min    |
 *
 * @module
 */

import type { Queries } from "../database/mod.ts";

/** A limit: at most `failures` within `windowMs`. */
export interface ThrottleLimit {
  failures: number;
  windowMs: number;
}

/** Failed sign-ins per client address and account (email). */
export const SIGN_IN_PER_ADDRESS_ACCOUNT: ThrottleLimit = { failures: 5, windowMs: 15 * 60_000 };
/** Failed sign-ins per client address. */
export const SIGN_IN_PER_ADDRESS: ThrottleLimit = { failures: 20, windowMs: 15 * 60_000 };
/** Failed API key or access token checks per client address. */
export const KEY_CHECK_PER_ADDRESS: ThrottleLimit = { failures: 30, windowMs: 60_000 };

/** Most keys one in-memory throttle tracks; the stalest go first, so memory stays bounded. */
const MAX_KEYS = 10_000;

/** Where a throttle keeps its failure times. */
export interface ThrottleStore {
  /** The failure times (ms) of `key` after `since`, oldest first. */
  recent(key: string, since: number): Promise<number[]>;
  /** Records a failure of `key` at `at`; times at or before `forget` may be dropped. */
  add(key: string, at: number, forget: number): Promise<void>;
  /** Forgets every failure of `key`. */
  clear(key: string): Promise<void>;
}

/** Failure times in this process's memory (one instance, or tests). */
export class MemoryThrottleStore implements ThrottleStore {
  readonly #failures = new Map<string, number[]>();

  recent(key: string, since: number): Promise<number[]> {
    const times = (this.#failures.get(key) ?? []).filter((t) => t > since);
    if (times.length === 0) this.#failures.delete(key);
    else this.#failures.set(key, times);
    return Promise.resolve(times);
  }

  add(key: string, at: number, forget: number): Promise<void> {
    const times = (this.#failures.get(key) ?? []).filter((t) => t > forget);
    times.push(at);
    // Re-inserted, so the map's order is least recently failed first.
    this.#failures.delete(key);
    this.#failures.set(key, times);
    if (this.#failures.size > MAX_KEYS) {
      const oldest = this.#failures.keys().next().value;
      if (oldest !== undefined) this.#failures.delete(oldest);
    }
    return Promise.resolve();
  }

  clear(key: string): Promise<void> {
    this.#failures.delete(key);
    return Promise.resolve();
  }
}

/**
 * Failure times in the server's database (`throttle_failures`), so every instance on one
 * database counts the same failures and a limit holds however requests are spread.
 */
export class DatabaseThrottleStore implements ThrottleStore {
  readonly #db: Queries;
  constructor(db: Queries) {
    this.#db = db;
  }

  async recent(key: string, since: number): Promise<number[]> {
    const rows = await this.#db.all<{ at: number }>(
      "select at from throttle_failures where key = ? and at > ? order by at",
      key,
      since,
    );
    return rows.map((row) => Number(row.at));
  }

  async add(key: string, at: number, forget: number): Promise<void> {
    await this.#db.run("insert into throttle_failures (key, at) values (?, ?)", key, at);
    // Failures older than every window are of no use to any key.
    await this.#db.run("delete from throttle_failures where at <= ?", forget);
  }

  async clear(key: string): Promise<void> {
    await this.#db.run("delete from throttle_failures where key = ?", key);
  }
}

/**
 * Failure counts over a sliding window, per key (an email, an address).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const throttle = new Throttle({ failures: 2, windowMs: 60_000 });
 * assert.equal(await throttle.retryAfter("ana@example.com"), 0); // no failure yet: no wait
 * await throttle.fail("ana@example.com");
 * await throttle.fail("ana@example.com");
 * assert.ok((await throttle.retryAfter("ana@example.com")) > 0);
 * ```
 */
export class Throttle {
  readonly limit: ThrottleLimit;
  readonly #store: ThrottleStore;
  readonly #name: string;
  readonly #now: () => number;

  /**
   * @param store Where failures are kept. @default in memory
   * @param name Prefix of its keys in a shared store, so throttles do not count each other's.
   * @param now Clock in ms (tests pass their own).
   */
  constructor(
    limit: ThrottleLimit,
    store: ThrottleStore = new MemoryThrottleStore(),
    name = "",
    now: () => number = Date.now,
  ) {
    this.limit = limit;
    this.#store = store;
    this.#name = name;
    this.#now = now;
  }

  /** Seconds until `key` may try again; 0 when it may now. */
  async retryAfter(key: string): Promise<number> {
    const now = this.#now();
    const times = await this.#store.recent(this.#name + key, now - this.limit.windowMs);
    if (times.length < this.limit.failures) return 0;
    const freed = times[times.length - this.limit.failures] + this.limit.windowMs;
    return Math.max(1, Math.ceil((freed - now) / 1000));
  }

  /** Counts a failure of `key`. */
  async fail(key: string): Promise<void> {
    const now = this.#now();
    await this.#store.add(this.#name + key, now, now - LONGEST_WINDOW_MS);
  }

  /** Forgets `key`'s failures (after a success). */
  async clear(key: string): Promise<void> {
    await this.#store.clear(this.#name + key);
  }
}

/** The longest window of the documented limits: failures older than it count nowhere. */
const LONGEST_WINDOW_MS = Math.max(
  SIGN_IN_PER_ADDRESS_ACCOUNT.windowMs,
  SIGN_IN_PER_ADDRESS.windowMs,
  KEY_CHECK_PER_ADDRESS.windowMs,
);

/** The throttles of one server. */
export interface Throttles {
  /** Keyed by `signInKey(address, email)`. */
  signInPerAddressAccount: Throttle;
  signInPerAddress: Throttle;
  keyCheckPerAddress: Throttle;
}

/** Throttles with the documented limits, counting in `store` (the server's database). */
export function newThrottles(store: ThrottleStore = new MemoryThrottleStore()): Throttles {
  return {
    signInPerAddressAccount: new Throttle(
      SIGN_IN_PER_ADDRESS_ACCOUNT,
      store,
      "sign-in address+account ",
    ),
    signInPerAddress: new Throttle(SIGN_IN_PER_ADDRESS, store, "sign-in address "),
    keyCheckPerAddress: new Throttle(KEY_CHECK_PER_ADDRESS, store, "key check address "),
  };
}

/**
 * The key of `signInPerAddressAccount`: one email tried from one address.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(signInKey("203.0.113.9", "Ana@example.com"), "203.0.113.9 ana@example.com");
 * ```
 */
export function signInKey(address: string, email: string): string {
  return `${address} ${email.toLowerCase()}`;
}
