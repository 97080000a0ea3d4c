/**
 * Chunk rows of a render spread over workers (`src/server/queue/chunk_jobs.ts`), on the embedded
 * engine: workers claim different chunks, a chunk whose worker stopped renewing its lease is
 * taken over (the attempt counted), one lost too often fails with a message saying so, and
 * chunks of a render no longer rendering are left alone. The chunks' rendering is tested
 * with real renders in tests/integration/server_chunks_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type ServerContext, serverLimits } from "../../src/server/context.ts";
import { openDatabase } from "../../src/server/database/mod.ts";
import { FsStorage } from "../../src/server/storage/storage_file.ts";
import { claimChunk, writeChunkRows } from "../../src/server/queue/chunk_jobs.ts";
import { serverChunkPlan } from "../../src/server/queue/chunks.ts";
import type { RenderJob } from "../../src/server/queue/render_backend.ts";

async function withRender<T>(fn: (ctx: ServerContext) => Promise<T>): Promise<T> {
  const db = await openDatabase(":memory:");
  const ctx: ServerContext = {
    db,
    storage: new FsStorage("/nonexistent"),
    secret: "s",
    publicUrl: "http://127.0.0.1",
    workDir: "/nonexistent",
    allowHttpCallbacks: false,
    allowPrivateUrls: false,
    limits: serverLimits({}, 1),
    wake: () => {},
  };
  try {
    await db.run(
      "insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')",
    );
    await db.run(
      "insert into renders (id, account_id, status, request, created_at) values ('r', 'a', 'rendering', '{}', 'now')",
    );
    // 3 s at 10 fps in chunks of 10 frames: three chunks.
    const job = { id: "r", durationSeconds: 3, request: { fps: 10 } } as RenderJob;
    await writeChunkRows(ctx, job, serverChunkPlan(job, { chunkSize: 10 }));
    return await fn(ctx);
  } finally {
    await db.close();
  }
}

const OPTIONS = { chunkSize: 10, leaseMs: 60_000, maxAttempts: 2 };

describe("chunk rows", () => {
  it("workers claim different chunks in order, each with its lease; none is left to claim", async () => {
    await withRender(async (ctx) => {
      const claims = [];
      for (const worker of ["w/1", "w/2", "w/1"]) {
        claims.push(await claimChunk(ctx, worker, OPTIONS));
      }
      assert.deepEqual(claims.map((c) => [c?.lease.id, c?.lease.owner, c?.chunk.from]), [
        ["r:0", "w/1", 0],
        ["r:1", "w/2", 10],
        ["r:2", "w/1", 20],
      ]);
      assert.equal(await claimChunk(ctx, "w/3", OPTIONS), undefined);
      assert.deepEqual(
        (await ctx.db.all("select worker, status, attempts from render_chunks order by idx"))
          .map((row) => ({ ...row })),
        [
          { worker: "w/1", status: "running", attempts: 1 },
          { worker: "w/2", status: "running", attempts: 1 },
          { worker: "w/1", status: "running", attempts: 1 },
        ],
      );
    });
  });

  it("takes over a chunk whose lease ran out, counting the attempt; fails it once lost too often", async () => {
    await withRender(async (ctx) => {
      await ctx.db.run("update render_chunks set status = 'done' where idx > 0");
      const first = await claimChunk(ctx, "dead/1", OPTIONS);
      assert.equal(first?.lease.attempts, 1);
      // The worker died: its lease runs out.
      await ctx.db.run("update render_chunks set lease_expires_at = 1 where id = 'r:0'");
      const second = await claimChunk(ctx, "alive/1", OPTIONS);
      assert.deepEqual([second?.lease.id, second?.lease.attempts], ["r:0", 2]);
      await ctx.db.run("update render_chunks set lease_expires_at = 1 where id = 'r:0'");
      assert.equal(await claimChunk(ctx, "alive/2", OPTIONS), undefined);
      const row = await ctx.db.get<{ status: string; error: string }>(
        "select status, error from render_chunks where id = 'r:0'",
      );
      assert.equal(row?.status, "failed");
      assert.match(
        row?.error ?? "",
        /render r: chunk 0 \(frames 0-9\) was lost by its worker 2 times \(killed, or cut off from the database\); giving up/,
      );
    });
  });

  it("leaves the chunks of a render that is no longer rendering, and claims only the given render's", async () => {
    await withRender(async (ctx) => {
      assert.equal(await claimChunk(ctx, "w/1", OPTIONS, "other"), undefined);
      await ctx.db.run("update renders set status = 'failed' where id = 'r'");
      assert.equal(await claimChunk(ctx, "w/1", OPTIONS), undefined);
    });
  });

  it("keeps an earlier attempt's rows: writing them again changes nothing", async () => {
    await withRender(async (ctx) => {
      await ctx.db.run("update render_chunks set status = 'done' where idx = 0");
      const job = { id: "r", durationSeconds: 3, request: { fps: 10 } } as RenderJob;
      await writeChunkRows(ctx, job, serverChunkPlan(job, { chunkSize: 30 }));
      assert.deepEqual(
        (await ctx.db.all("select idx, status from render_chunks order by idx"))
          .map((row) => ({ ...row })),
        [{ idx: 0, status: "done" }, { idx: 1, status: "pending" }, { idx: 2, status: "pending" }],
      );
    });
  });
});
