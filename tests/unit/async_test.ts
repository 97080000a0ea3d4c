/**
 * Unit tests of the shared async helpers (src/util/async.ts): an abortable sleep, the
 * bounded pool (concurrency bound, result order, first error stops it, abort, streamed
 * input read only as lanes free up), backoff bounds, and retry counts and abort. Nothing
 * here asserts a duration except generous upper bounds on aborted waits.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  backoffDelay,
  linkSignals,
  pool,
  retry,
  sleep,
  within,
  withTimeout,
} from "../../src/util/async.ts";

describe("sleep", () => {
  it("resolves after the wait", async () => {
    assert.equal(await sleep(1), undefined);
  });

  it("rejects with the signal's reason when aborted mid-sleep, long before the wait", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const waiting = sleep(60_000, controller.signal);
    setTimeout(() => controller.abort(new Error("stop")), 5);
    await assert.rejects(waiting, /stop/);
    assert.ok(performance.now() - started < 10_000);
  });

  it("rejects at once on an already aborted signal", async () => {
    await assert.rejects(sleep(60_000, AbortSignal.abort(new Error("early"))), /early/);
  });
});

describe("pool", () => {
  it("keeps at most `concurrency` calls in flight and returns results in item order", async () => {
    let running = 0;
    let most = 0;
    const items = Array.from({ length: 20 }, (_, i) => i);
    const results = await pool(items, 3, async (item, index) => {
      running++;
      most = Math.max(most, running);
      // Later items finish first, so completion order differs from item order.
      await sleep((20 - item) % 4);
      running--;
      return `${item}@${index}`;
    });
    assert.equal(most, 3);
    assert.deepEqual(results, items.map((i) => `${i}@${i}`));
  });

  it("stops taking items on the first error, waits for running calls, rejects with it", async () => {
    const started: number[] = [];
    let finished = 0;
    const outcome = pool(Array.from({ length: 50 }, (_, i) => i), 4, async (item) => {
      started.push(item);
      if (item === 5) throw new Error("item 5 failed");
      await sleep(2);
      finished++;
    });
    await assert.rejects(outcome, /item 5 failed/);
    const settledAt = finished;
    // Every call started has settled by the time the pool rejects: nothing runs later.
    assert.equal(settledAt, started.length - 1);
    assert.ok(started.length < 50, `took ${started.length} items after the failure`);
    await sleep(20);
    assert.equal(finished, settledAt);
  });

  it("stops taking items when the signal aborts and rejects with its reason", async () => {
    const controller = new AbortController();
    const started: number[] = [];
    const outcome = pool(Array.from({ length: 100 }, (_, i) => i), 2, async (item) => {
      started.push(item);
      if (item === 3) controller.abort(new Error("cancelled"));
      await sleep(1);
    }, controller.signal);
    await assert.rejects(outcome, /cancelled/);
    assert.ok(started.length <= 5, `started ${started.length}`);
  });

  it("reads an async iterable only as lanes free up (back-pressure) and closes it", async () => {
    let read = 0;
    let closed = false;
    let gap = 0;
    let completed = 0;
    async function* source(): AsyncGenerator<number> {
      try {
        for (let i = 0; i < 30; i++) {
          read++;
          gap = Math.max(gap, read - completed);
          yield i;
        }
      } finally {
        closed = true;
      }
    }
    const results = await pool(source(), 2, async (item) => {
      await sleep(1);
      completed++;
      return item * 2;
    });
    assert.equal(results.length, 30);
    assert.equal(results[29], 58);
    assert.ok(gap <= 3, `read ${gap} items ahead of the work`);
    assert.ok(closed);

    closed = false;
    read = 0;
    completed = 0;
    await assert.rejects(
      pool(source(), 2, (item) => item === 4 ? Promise.reject(new Error("x")) : sleep(1)),
      /x/,
    );
    assert.ok(closed, "the source is closed when the pool stops early");
    assert.ok(read < 30);
  });

  it("refuses a concurrency below 1", async () => {
    await assert.rejects(pool([1], 0, async () => {}), RangeError);
  });
});

describe("backoffDelay", () => {
  it("doubles from baseMs up to maxMs, with ±jitter and full jitter in bounds", () => {
    const opts = { baseMs: 1000, maxMs: 60_000, jitter: 0.2 };
    assert.equal(backoffDelay(1, opts, () => 0.5), 1000);
    assert.equal(backoffDelay(3, opts, () => 0.5), 4000);
    assert.equal(backoffDelay(1, opts, () => 0), 800);
    assert.equal(backoffDelay(1, opts, () => 0.999999), 1200);
    assert.equal(backoffDelay(30, opts, () => 0.999999), 60_000);
    const full = { baseMs: 200, maxMs: 5000, jitter: "full" as const };
    for (let attempt = 1; attempt < 12; attempt++) {
      for (const r of [0, 0.3, 0.999999]) {
        const delay = backoffDelay(attempt, full, () => r);
        assert.ok(delay >= 0 && delay <= Math.min(5000, 200 * 2 ** (attempt - 1)));
      }
    }
    assert.equal(backoffDelay(2, { baseMs: 100, maxMs: 1000 }), 200);
  });
});

describe("retry", () => {
  it("retries retryable errors up to `attempts`, with the backoff between", async () => {
    const delays: number[] = [];
    let calls = 0;
    await assert.rejects(
      retry(() => {
        calls++;
        return Promise.reject(new Error(`fail ${calls}`));
      }, {
        attempts: 4,
        baseMs: 1,
        maxMs: 4,
        onRetry: ({ delayMs }) => delays.push(delayMs),
      }),
      /fail 4/,
    );
    assert.equal(calls, 4);
    assert.deepEqual(delays, [1, 2, 4]);
  });

  it("returns the first success and passes the attempt number", async () => {
    const result = await retry(
      (attempt) => attempt < 3 ? Promise.reject(new Error("not yet")) : Promise.resolve(attempt),
      { attempts: 5, baseMs: 1, maxMs: 1 },
    );
    assert.equal(result, 3);
  });

  it("does not retry an error that is not retryable", async () => {
    let calls = 0;
    await assert.rejects(
      retry(() => {
        calls++;
        return Promise.reject(new TypeError("fatal"));
      }, { attempts: 5, baseMs: 1, maxMs: 1, retryable: (e) => !(e instanceof TypeError) }),
      /fatal/,
    );
    assert.equal(calls, 1);
  });

  it("stops waiting when the signal aborts", async () => {
    const controller = new AbortController();
    let calls = 0;
    const started = performance.now();
    const outcome = retry(() => {
      calls++;
      setTimeout(() => controller.abort(new Error("cancelled")), 5);
      return Promise.reject(new Error("busy"));
    }, { attempts: 10, baseMs: 60_000, maxMs: 60_000, signal: controller.signal });
    await assert.rejects(outcome, /cancelled/);
    assert.equal(calls, 1);
    assert.ok(performance.now() - started < 10_000);
  });
});

/** A lifelong signal that counts the abort listeners hooked on it, as a queue's is. */
function countedSignal(): { controller: AbortController; listeners: () => number } {
  const controller = new AbortController();
  const live = new Set<unknown>();
  const signal = controller.signal;
  const add = signal.addEventListener.bind(signal);
  const remove = signal.removeEventListener.bind(signal);
  signal.addEventListener = (
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | AddEventListenerOptions,
  ) => {
    live.add(listener);
    add(type, listener, options);
  };
  signal.removeEventListener = (
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | EventListenerOptions,
  ) => {
    live.delete(listener);
    remove(type, listener, options);
  };
  return { controller, listeners: () => live.size };
}

describe("linkSignals", () => {
  it("aborts with the reason of the first source that aborts", () => {
    const a = new AbortController();
    const b = new AbortController();
    const linked = linkSignals(a.signal, b.signal);
    assert.equal(linked.signal.aborted, false);
    b.abort(new Error("deleted"));
    assert.equal(linked.signal.aborted, true);
    assert.equal((linked.signal.reason as Error).message, "deleted");
    a.abort(new Error("later"));
    assert.equal((linked.signal.reason as Error).message, "deleted");
  });

  it("is aborted at once when a source already is", () => {
    const linked = linkSignals(new AbortController().signal, AbortSignal.abort("gone"));
    assert.equal(linked.signal.aborted, true);
    assert.equal(linked.signal.reason, "gone");
  });

  it("leaves a lifelong source without listeners after 100 renders disposed it", () => {
    // The leak it replaces: AbortSignal.any([lifelong, …]) with a listener under it stays
    // reachable from the lifelong signal for the life of the process.
    const queue = countedSignal();
    for (let render = 0; render < 100; render++) {
      const own = new AbortController();
      const linked = linkSignals(queue.controller.signal, own.signal);
      linked.signal.addEventListener("abort", () => {});
      assert.equal(queue.listeners(), 1);
      linked.dispose();
    }
    assert.equal(queue.listeners(), 0);
    // Disposed: the lifelong signal's abort no longer reaches it.
    const linked = linkSignals(queue.controller.signal);
    linked.dispose();
    queue.controller.abort();
    assert.equal(linked.signal.aborted, false);
  });

  it("lets go of every source once one aborted", () => {
    const queue = countedSignal();
    const own = new AbortController();
    const linked = linkSignals(queue.controller.signal, own.signal);
    own.abort();
    assert.equal(queue.listeners(), 0);
    linked.dispose(); // idempotent
    assert.equal(linked.signal.aborted, true);
  });
});

describe("withTimeout", () => {
  it("resolves with the promise's value when it settles in time, and leaves no timer", async () => {
    assert.equal(await withTimeout(Promise.resolve(7), 60_000, () => new Error("late")), 7);
  });

  it("rejects with onTimeout's error when the promise does not settle in time", async () => {
    const never = new Promise<never>(() => {});
    await assert.rejects(withTimeout(never, 10, () => new Error("page: timed out")), {
      message: "page: timed out",
    });
  });

  it("passes the promise's own rejection through", async () => {
    await assert.rejects(
      withTimeout(Promise.reject(new Error("refused")), 60_000, () => new Error("late")),
      { message: "refused" },
    );
  });
});

describe("within", () => {
  it("gives { value } when the promise resolves in time", async () => {
    assert.deepEqual(await within(Promise.resolve(7), 60_000), { value: 7 });
  });

  it("gives undefined when the time runs out first, and clears its timer", async () => {
    const started = performance.now();
    assert.equal(await within(new Promise<number>(() => {}), 20), undefined);
    assert.ok(performance.now() - started >= 15);
  });

  it("passes a rejection in time through", async () => {
    await assert.rejects(within(Promise.reject(new Error("refused")), 60_000), {
      message: "refused",
    });
  });
});
