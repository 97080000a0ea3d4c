/**
 * Which render `vid server`'s queue runs next, over a real SQLite database with a
 * stand-in backend in this process: accounts take turns (round-robin on when each last
 * started a render), and one account renders on at most `maxRendersPerAccount` workers
 * while another account's render takes a free one. Real renders of two tenants are in
 * tests/integration/server_queue_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ServerContext, serverLimits } from "../../src/server/context.ts";
import { now, openDatabase } from "../../src/server/database/mod.ts";
import { startQueue } from "../../src/server/queue/queue.ts";
import type { RenderBackend } from "../../src/server/queue/render_backend.ts";
import { FsStorage } from "../../src/server/storage/storage_file.ts";
import { waitFor } from "../helpers.ts";

/** A database with `queued` renders named `<account>-<n>`, recorded in the order given. */
async function queueOf(accountsInOrder: string[]) {
  const dir = await Deno.makeTempDir({ prefix: "vid-queue-order-" });
  const db = await openDatabase(`${dir}/vid.db`);
  const counts = new Map<string, number>();
  for (const account of accountsInOrder) {
    if (!counts.has(account)) {
      await db.run(
        "insert into accounts (id, email, password_hash, credits, created_at) values (?, ?, '', 10, ?)",
        account,
        `${account}@example.com`,
        now(),
      );
    }
    const n = (counts.get(account) ?? 0) + 1;
    counts.set(account, n);
    await db.run(
      "insert into renders (id, account_id, asset_id, status, request, width, height, duration_seconds, credits, created_at) values (?, ?, 'ast_x', 'queued', '{}', 320, 180, 1, 1, ?)",
      `${account}-${n}`,
      account,
      now(),
    );
  }
  const context = (slots: number, maxRendersPerAccount?: number): ServerContext => ({
    db,
    storage: new FsStorage(`${dir}/storage`),
    secret: "s",
    publicUrl: "http://127.0.0.1",
    workDir: `${dir}/work`,
    allowHttpCallbacks: false,
    allowPrivateUrls: false,
    limits: serverLimits({ maxRendersPerAccount }, slots),
    wake: () => {},
  });
  const statuses = async (): Promise<Record<string, string>> =>
    Object.fromEntries(
      (await db.all<{ id: string; status: string }>("select id, status from renders order by seq"))
        .map((r) => [r.id, r.status]),
    );
  const close = async () => {
    await db.close();
    await Deno.remove(dir, { recursive: true });
  };
  return { context, statuses, close };
}

describe("render queue order", () => {
  it("takes accounts in turn: a, b and c's first renders before a's second", async () => {
    const { context, statuses, close } = await queueOf(["a", "a", "a", "b", "c"]);
    const order: string[] = [];
    const backend: RenderBackend = {
      kind: "local",
      slots: 1,
      render: (_ctx, job) => {
        order.push(job.id);
        return Promise.resolve();
      },
      close: () => {},
    };
    const queue = startQueue(context(1), backend);
    try {
      await waitFor("five renders", () => order.length === 5, { timeoutMs: 10_000 });
      assert.deepEqual(order, ["a-1", "b-1", "c-1", "a-2", "a-3"]);
      await waitFor(
        "all completed",
        async () => Object.values(await statuses()).every((s) => s === "completed"),
        { timeoutMs: 10_000 },
      );
    } finally {
      await queue.stop();
      await close();
    }
  });

  it("lets go of each finished render's signal: stopping the queue reaches none of them", async () => {
    // With AbortSignal.any under the queue's lifelong signal, each render's signal (and every
    // listener under it) stayed reachable from the queue for the life of the process; this
    // abort reaching it was that leak's visible side (issue 26).
    const { context, close } = await queueOf(["a", "a", "a"]);
    const signals: AbortSignal[] = [];
    const backend: RenderBackend = {
      kind: "local",
      slots: 1,
      render: (_ctx, _job, signal) => {
        signal.addEventListener("abort", () => {});
        signals.push(signal);
        return Promise.resolve();
      },
      close: () => {},
    };
    const queue = startQueue(context(1), backend);
    try {
      await waitFor("three renders started", () => signals.length === 3, { timeoutMs: 10_000 });
    } finally {
      await queue.stop();
      await close();
    }
    // The first two had ended before the third began (one slot); the third may still be
    // recording its outcome when the queue stops.
    assert.deepEqual(signals.slice(0, 2).map((s) => s.aborted), [false, false]);
  });

  it("runs one account on at most maxRendersPerAccount workers; another takes the free one", async () => {
    const { context, statuses, close } = await queueOf(["a", "a", "a", "b"]);
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => release = resolve);
    const backend: RenderBackend = {
      kind: "local",
      slots: 3,
      render: () => gate,
      close: () => {},
    };
    // 3 workers: by default an account may use 1 (half of 3, rounded down).
    const ctx = context(3);
    assert.equal(ctx.limits.maxRendersPerAccount, 1);
    const queue = startQueue(ctx, backend);
    try {
      await waitFor("b's render to start", async () => (await statuses())["b-1"] === "rendering", {
        timeoutMs: 10_000,
      });
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(await statuses(), {
        "a-1": "rendering",
        "a-2": "queued",
        "a-3": "queued",
        "b-1": "rendering",
      });
      release();
      await waitFor(
        "all completed",
        async () => Object.values(await statuses()).every((s) => s === "completed"),
        { timeoutMs: 10_000 },
      );
    } finally {
      release();
      await queue.stop();
      await close();
    }
  });
});

describe("render queue on leases", () => {
  /** A backend whose renders wait for `release`, or throw `fail`'s error when given. */
  const gated = (fail?: Error) => {
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => release = resolve);
    const started: string[] = [];
    const backend: RenderBackend = {
      kind: "local",
      slots: 1,
      render: async (_ctx, job, signal) => {
        started.push(job.id);
        if (fail) throw fail;
        await Promise.race([
          gate,
          new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
        ]);
      },
      close: () => {},
    };
    return { backend, started, release: () => release() };
  };

  it("takes over a render whose worker stopped renewing its lease, counting an attempt; the first worker records nothing", async () => {
    const { context, statuses, close } = await queueOf(["a"]);
    const ctx = context(1);
    const first = gated();
    const stalled = startQueue(ctx, first.backend, { owner: "one", leaseMs: 60_000 });
    const second = gated();
    let other: ReturnType<typeof startQueue> | undefined;
    try {
      await waitFor("the first worker to start it", () => first.started.length === 1, {
        timeoutMs: 10_000,
      });
      // As if the first worker had died: its lease ran out.
      await ctx.db.run("update renders set lease_expires_at = 1 where id = 'a-1'");
      other = startQueue(ctx, second.backend, { owner: "two", leaseMs: 60_000 });
      await waitFor("the take-over", () => second.started.length === 1, { timeoutMs: 10_000 });
      const row = await ctx.db.get("select lease_owner, attempts from renders where id = 'a-1'");
      assert.deepEqual({ ...row }, { lease_owner: "two", attempts: 2 });
      // The first worker finishes late: it no longer holds the lease, so nothing is recorded.
      first.release();
      await new Promise((r) => setTimeout(r, 200));
      assert.equal((await statuses())["a-1"], "rendering");
      second.release();
      await waitFor("completed", async () => (await statuses())["a-1"] === "completed", {
        timeoutMs: 10_000,
      });
      const done = await ctx.db.get("select lease_owner, attempts from renders where id = 'a-1'");
      assert.deepEqual({ ...done }, { lease_owner: null, attempts: 2 });
    } finally {
      first.release();
      second.release();
      await stalled.stop();
      await other?.stop();
      await close();
    }
  });

  it("fails a render, refunded, once it has lost its lease as often as allowed", async () => {
    const { context, statuses, close } = await queueOf(["a"]);
    const ctx = context(1);
    await ctx.db.run(
      "update renders set status = 'rendering', lease_owner = 'gone', lease_expires_at = 1, attempts = 3 where id = 'a-1'",
    );
    const worker = gated();
    const queue = startQueue(ctx, worker.backend, { owner: "one", leaseMs: 60_000 });
    try {
      await waitFor("failed", async () => (await statuses())["a-1"] === "failed", {
        timeoutMs: 10_000,
      });
      assert.equal(worker.started.length, 0, "not run again");
      const row = await ctx.db.get("select error from renders where id = 'a-1'");
      assert.match(String(row?.error), /interrupted 3 times .*not retried again/);
      const account = await ctx.db.get("select credits from accounts where id = 'a'");
      assert.equal(Number(account?.credits), 11, "refunded once");
    } finally {
      await queue.stop();
      await close();
    }
  });

  it("fails a render that fails by itself at once, refunded once, never retried", async () => {
    const { context, statuses, close } = await queueOf(["a"]);
    const ctx = context(1);
    const worker = gated(new Error("index.html: logo.png is missing from the project"));
    const queue = startQueue(ctx, worker.backend, { owner: "one", leaseMs: 60_000 });
    try {
      await waitFor("failed", async () => (await statuses())["a-1"] === "failed", {
        timeoutMs: 10_000,
      });
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(worker.started.length, 1, "run once");
      const account = await ctx.db.get("select credits from accounts where id = 'a'");
      assert.equal(Number(account?.credits), 11, "refunded once");
      const row = await ctx.db.get("select lease_owner, attempts from renders where id = 'a-1'");
      assert.deepEqual({ ...row }, { lease_owner: null, attempts: 1 });
    } finally {
      await queue.stop();
      await close();
    }
  });

  it("hands a render back on stop: queued, its lease released, no attempt counted", async () => {
    const { context, statuses, close } = await queueOf(["a"]);
    const ctx = context(1);
    const worker = gated();
    const queue = startQueue(ctx, worker.backend, { owner: "one", leaseMs: 60_000 });
    try {
      await waitFor("started", () => worker.started.length === 1, { timeoutMs: 10_000 });
      await queue.stop();
      assert.equal((await statuses())["a-1"], "queued");
      const row = await ctx.db.get(
        "select lease_owner, attempts, progress from renders where id = 'a-1'",
      );
      assert.deepEqual({ ...row }, { lease_owner: null, attempts: 0, progress: 0 });
    } finally {
      worker.release();
      await queue.stop();
      await close();
    }
  });

  it("drops a render deleted through another instance at its next renewal", async () => {
    const { context, close } = await queueOf(["a"]);
    const ctx = context(1);
    let aborted: unknown;
    const backend: RenderBackend = {
      kind: "local",
      slots: 1,
      render: (_ctx, _job, signal) =>
        new Promise((_, reject) =>
          signal.addEventListener("abort", () => {
            aborted = signal.reason;
            reject(signal.reason);
          })
        ),
      close: () => {},
    };
    const queue = startQueue(ctx, backend, { owner: "one", leaseMs: 150 });
    try {
      await waitFor(
        "started",
        async () => (await ctx.db.get("select lease_owner from renders"))?.lease_owner === "one",
        { timeoutMs: 10_000 },
      );
      // What another instance's DELETE writes; it cannot reach this worker's `cancel`.
      await ctx.db.run(
        "update renders set status = 'deleted', deleted_at = 'now' where id = 'a-1'",
      );
      await waitFor("the render dropped", () => aborted !== undefined, { timeoutMs: 5000 });
      assert.match(String((aborted as Error).message), /deleted_at is null/);
    } finally {
      await queue.stop();
      await close();
    }
  });
});
