/**
 * The server suite again, on PostgreSQL: `server_test.ts` and `server_queue_test.ts` run
 * unchanged with every data folder given a database of its own on one PostgreSQL from the
 * OS package (`VID_DATABASE_URL`, as an operator would set it), so the two engines behind
 * `src/server/database/` cannot drift apart. Tests that are about SQLite's file lock are
 * skipped here.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { serverEngine, useServerPostgres } from "../server_process.ts";

const stop = await useServerPostgres();
await import("./server_test.ts");
await import("./server_queue_test.ts");

describe("the server suite on PostgreSQL", () => {
  it("ran on PostgreSQL, and its database server stops with nothing left running", async () => {
    assert.equal(serverEngine(), "postgres");
    await stop();
    assert.equal(serverEngine(), "sqlite");
  });
});
