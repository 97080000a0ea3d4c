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
import { now, openDatabase } from "../../src/server/db.ts";
import { startQueue } from "../../src/server/queue.ts";
import type { RenderBackend } from "../../src/server/render_backend.ts";
import { FsStorage } from "../../src/server/storage_file.ts";

async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10000,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

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
      await eventually(() => order.length === 5, "five renders");
      assert.deepEqual(order, ["a-1", "b-1", "c-1", "a-2", "a-3"]);
      await eventually(
        async () => Object.values(await statuses()).every((s) => s === "completed"),
        "all completed",
      );
    } finally {
      await queue.stop();
      await close();
    }
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
      await eventually(
        async () => (await statuses())["b-1"] === "rendering",
        "b's render to start",
      );
      await new Promise((r) => setTimeout(r, 300));
      assert.deepEqual(await statuses(), {
        "a-1": "rendering",
        "a-2": "queued",
        "a-3": "queued",
        "b-1": "rendering",
      });
      release();
      await eventually(
        async () => Object.values(await statuses()).every((s) => s === "completed"),
        "all completed",
      );
    } finally {
      release();
      await queue.stop();
      await close();
    }
  });
});
