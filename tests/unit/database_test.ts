/**
 * The data-access module (`src/server/database/`) on its embedded engine: the schema's
 * recorded version, the refusal of a database newer than this vid, and transactions that
 * other statements of the process wait for instead of landing inside.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { openDatabase } from "../../src/server/database/mod.ts";
import { SCHEMA_VERSION, SchemaTooNewError } from "../../src/server/database/mod.ts";
import { TransactionOverError } from "../../src/server/database/sqlite.ts";

async function inTempDir<T>(fn: (file: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "vid-database-" });
  try {
    return await fn(`${dir}/vid.db`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const ACCOUNT =
  "insert into accounts (id, email, password_hash, created_at) values (?, ?, 'h', 'now')";

describe("server database (SQLite)", () => {
  it("records the schema version once, however often and however concurrently it is opened", async () => {
    await inTempDir(async (file) => {
      const opened = await Promise.all([openDatabase(file), openDatabase(file)]);
      for (const db of opened) await db.close();
      const again = await openDatabase(file);
      assert.deepEqual(
        (await again.all("select version from vid_schema")).map((row) => ({ ...row })),
        [{ version: SCHEMA_VERSION }],
      );
      await again.close();
    });
  });

  it("refuses a database a newer vid migrated, naming both versions, and changes nothing", async () => {
    await inTempDir(async (file) => {
      await (await openDatabase(file)).close();
      const raw = new DatabaseSync(file);
      raw.exec(`update vid_schema set version = ${SCHEMA_VERSION + 1}`);
      raw.close();
      await assert.rejects(
        () => openDatabase(file),
        (error: unknown) =>
          error instanceof SchemaTooNewError && error.field === "database" &&
          error.exitCode === 1 &&
          error.message.includes(`schema version ${SCHEMA_VERSION + 1}`) &&
          error.message.includes(`versions up to ${SCHEMA_VERSION}`) &&
          /upgrade vid/.test(error.message),
      );
      const check = new DatabaseSync(file, { readOnly: true });
      assert.deepEqual(
        { ...check.prepare("select version from vid_schema").get() },
        { version: SCHEMA_VERSION + 1 },
      );
      check.close();
    });
  });

  it("makes statements outside a transaction wait for it, and rolls it back when it throws", async () => {
    const db = await openDatabase(":memory:");
    try {
      const order: string[] = [];
      let inside = (): void => {};
      const entered = new Promise<void>((resolve) => inside = resolve);
      let finish = (): void => {};
      const finished = new Promise<void>((resolve) => finish = resolve);
      const tx = db.transaction(async (tx) => {
        await tx.run(ACCOUNT, "a", "a@x");
        inside();
        await finished;
        order.push("transaction");
        throw new Error("changed my mind");
      });
      await entered;
      const outside = db.run(ACCOUNT, "b", "b@x").then(() => order.push("outside"));
      await new Promise((resolve) => setTimeout(resolve, 20));
      assert.deepEqual(order, [], "the outside statement waits for the transaction");
      finish();
      await assert.rejects(tx, /changed my mind/);
      await outside;
      assert.deepEqual(order, ["transaction", "outside"]);
      assert.deepEqual(
        (await db.all<{ id: string }>("select id from accounts order by id")).map((r) => r.id),
        ["b"],
        "the transaction's insert was rolled back",
      );
    } finally {
      await db.close();
    }
  });

  it("runs many transactions started at once one after another, none inside another", async () => {
    const db = await openDatabase(":memory:");
    try {
      await Promise.all(Array.from({ length: 8 }, (_, i) =>
        db.transaction(async (tx) => {
          await tx.run(ACCOUNT, `t${i}`, `t${i}@x`);
          await new Promise((resolve) => setTimeout(resolve, 1));
          await tx.run("update accounts set credits = credits + 1 where id = ?", `t${i}`);
        })));
      assert.equal(
        (await db.get<{ n: number }>("select count(*) as n from accounts where credits = 1"))?.n,
        8,
      );
    } finally {
      await db.close();
    }
  });

  it("refuses a transaction's handle once the transaction has ended", async () => {
    const db = await openDatabase(":memory:");
    try {
      const kept = await db.transaction((tx) => Promise.resolve(tx));
      await assert.rejects(() => kept.run(ACCOUNT, "c", "c@x"), TransactionOverError);
    } finally {
      await db.close();
    }
  });
});
