/**
 * Leases on database rows (`src/server/queue/leases.ts`), on the embedded engine: one holder at a
 * time, take-over once a lease runs out (an attempt counted), renewals that stop working
 * once another worker took the row, a hand-back that does not count, and a holder that
 * gives the work up when the database stays away until its lease would end.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { type Database, openDatabase, type Queries } from "../../src/server/database/mod.ts";
import {
  acquireLease,
  expireLeasesOfDeadRuns,
  holdLease,
  holdsLease,
  LeaseLostError,
  leaseOwner,
  releaseLease,
  renewLease,
} from "../../src/server/queue/leases.ts";
import { withoutRowLocks } from "../../src/server/database/sqlite.ts";
import {
  claimKey,
  releaseKeysOfDeadRuns,
  STALE_CLAIM_MS,
} from "../../src/server/http/idempotency.ts";

async function withRender<T>(fn: (db: Database) => Promise<T>): Promise<T> {
  const db = await openDatabase(":memory:");
  try {
    await db.run(
      "insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')",
    );
    await db.run(
      "insert into renders (id, account_id, status, request, created_at) values ('r', 'a', 'queued', '{}', 'now')",
    );
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** Waits until `signal` aborts, failing after `ms` (the host holds the deadline). */
function aborted(signal: AbortSignal, ms: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not aborted within ${ms} ms`)), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      resolve(signal.reason);
    }, { once: true });
  });
}

describe("leases", () => {
  it("lets one owner hold a row; another takes it over only once the lease ran out, counting an attempt", async () => {
    await withRender(async (db) => {
      const first = await acquireLease(db, "renders", "r", "one", 60);
      assert.equal(first?.attempts, 1);
      assert.equal(await acquireLease(db, "renders", "r", "two", 60), undefined);
      await new Promise((resolve) => setTimeout(resolve, 80));
      const second = await acquireLease(db, "renders", "r", "two", 60_000);
      assert.equal(second?.attempts, 2);
      // The first owner finds out at its next renewal, and records nothing.
      assert.equal(await renewLease(db, first!), false);
      assert.equal(await releaseLease(db, first!), false);
      assert.equal(await db.transaction((tx) => holdsLease(tx, first!)), false);
      assert.equal(await db.transaction((tx) => holdsLease(tx, second!)), true);
    });
  });

  it("renews a lease that ran out while nobody took it over", async () => {
    await withRender(async (db) => {
      const lease = (await acquireLease(db, "renders", "r", "one", 20))!;
      await new Promise((resolve) => setTimeout(resolve, 40));
      assert.ok(await renewLease(db, lease));
      assert.ok(lease.expiresAt > Date.now() + 10);
      assert.equal(await acquireLease(db, "renders", "r", "two", 20), undefined);
    });
  });

  it("takes back the attempt of work handed back, not of work released after it ran", async () => {
    await withRender(async (db) => {
      const handed = (await acquireLease(db, "renders", "r", "one", 60_000))!;
      assert.ok(await releaseLease(db, handed, { handBack: true }));
      const kept = (await acquireLease(db, "renders", "r", "two", 60_000))!;
      assert.equal(kept.attempts, 1);
      assert.ok(await releaseLease(db, kept));
      assert.equal((await acquireLease(db, "renders", "r", "three", 60_000))?.attempts, 2);
    });
  });

  it("aborts the holder's signal when another worker takes the row over", async () => {
    await withRender(async (db) => {
      const lease = (await acquireLease(db, "renders", "r", "one", 90))!;
      const holder = holdLease(db, lease);
      try {
        // As if the worker had stalled past its lease and another took the render.
        await db.run("update renders set lease_owner = 'two' where id = 'r'");
        const reason = await aborted(holder.signal, 5000);
        assert.ok(reason instanceof LeaseLostError);
        assert.match(reason.message, /renders r: another worker took it over/);
      } finally {
        await holder.stop();
      }
    });
  });

  it("keeps the work while the database is away, then gives it up when the lease would end", async () => {
    await withRender(async (db) => {
      const lease = (await acquireLease(db, "renders", "r", "one", 150))!;
      let away = false;
      const errors: unknown[] = [];
      const flaky: Queries = {
        get: (sql, ...params) => db.get(sql, ...params),
        all: (sql, ...params) => db.all(sql, ...params),
        run: (sql, ...params) =>
          away ? Promise.reject(new Error("connection refused")) : db.run(sql, ...params),
      };
      const holder = holdLease(flaky, lease, { onError: (error) => errors.push(error) });
      try {
        away = true;
        const started = Date.now();
        const reason = await aborted(holder.signal, 5000);
        assert.ok(reason instanceof LeaseLostError);
        assert.match(reason.message, /database stayed unreachable until it ran out/);
        assert.ok(Date.now() >= lease.expiresAt, "not given up before the lease's end");
        assert.ok(errors.length >= 1);
        assert.ok(Date.now() - started < 5000);
      } finally {
        await holder.stop();
      }
    });
  });

  it("names owners uniquely, and refuses a table name that is not a plain identifier", async () => {
    assert.notEqual(leaseOwner(), leaseOwner());
    await withRender(async (db) => {
      await assert.rejects(
        () => acquireLease(db, "renders; drop table x", "r", "one", 1),
        TypeError,
      );
    });
  });

  it("drops row-locking clauses on SQLite, where the single writer already holds the lock", () => {
    assert.equal(
      withoutRowLocks("select r.* from renders r where x = ? limit 1 for update of r skip locked"),
      "select r.* from renders r where x = ? limit 1",
    );
    assert.equal(withoutRowLocks("select 1 from t for update"), "select 1 from t");
    assert.equal(withoutRowLocks("select 'for updates' from t"), "select 'for updates' from t");
  });
});

describe("leases and claims of dead runs", () => {
  it("ends at once the leases of this data folder's dead runs, not of live runs or other instances", async () => {
    await withRender(async (db) => {
      for (const id of ["r2", "r3", "r4"]) {
        await db.run(
          "insert into renders (id, account_id, status, request, created_at) values (?, 'a', 'queued', '{}', 'now')",
          id,
        );
      }
      await acquireLease(db, "renders", "r", "box-1:111:w_a", 60_000);
      await acquireLease(db, "renders", "r2", "box-1:222:w_b", 60_000);
      await acquireLease(db, "renders", "r3", "box-2:111:w_c", 60_000);
      await acquireLease(db, "renders", "r4", "box-10:111:w_d", 60_000);
      const ended = await expireLeasesOfDeadRuns(db, "renders", "box-1", new Set([222]));
      assert.equal(ended, 1);
      const expires = await db.all<{ id: string; lease_expires_at: number }>(
        "select id, lease_expires_at from renders order by id",
      );
      assert.deepEqual(
        expires.map((row) => [row.id, Number(row.lease_expires_at) === 0]),
        [["r", true], ["r2", false], ["r3", false], ["r4", false]],
      );
      // Taken over at once, attempt counted.
      assert.equal((await acquireLease(db, "renders", "r", "box-1:333:w_e", 1000))?.attempts, 2);
    });
  });

  it("releases pending idempotency claims of dead runs; a claim older than 15 minutes is taken over", async () => {
    await withRender(async (db) => {
      const where = (key: string) => ({ accountId: "a", scope: "renders" as const, key });
      assert.deepEqual(await claimKey(db, where("k1"), "h", "box-1:111:w_a"), { kind: "claimed" });
      assert.deepEqual(await claimKey(db, where("k2"), "h", "box-1:222:w_b"), { kind: "claimed" });
      assert.equal(await releaseKeysOfDeadRuns(db, "box-1", new Set([222])), 1);
      assert.deepEqual(await claimKey(db, where("k1"), "h", "box-1:333:w_c"), { kind: "claimed" });
      // k2's run is alive: a request with its key would wait. Once it is older than the
      // limit, its run is presumed dead elsewhere and the next request takes it over.
      await db.run(
        "update idempotency set created_at = ? where key = 'k2'",
        new Date(Date.now() - STALE_CLAIM_MS - 1000).toISOString(),
      );
      assert.deepEqual(await claimKey(db, where("k2"), "h", "box-2:1:w_d"), { kind: "claimed" });
      const row = await db.get("select owner from idempotency where key = 'k2'");
      assert.equal(row?.owner, "box-2:1:w_d");
    });
  });
});
