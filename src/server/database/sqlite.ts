/**
 * The embedded engine: `node:sqlite` behind the asynchronous {@linkcode Database}. One
 * connection serves the whole process, so a transaction holds it: statements from other
 * requests wait until it commits instead of landing inside it (with a synchronous driver
 * they could not interleave; with `await` inside a transaction they could).
 *
 * Another process holding the write lock (a backup, an `sqlite3` shell in a transaction)
 * must not stop the server: SQLite's own busy timeout sleeps inside the synchronous call,
 * which froze the event loop (a 10 s lock made `/healthz` take 9.9 s). So SQLite never
 * waits here (`busy_timeout = 0`); a statement that finds the database locked is tried
 * again after an asynchronous backoff, up to {@linkcode BUSY_WAIT_MS}, and meanwhile every
 * request that needs no database (and `/readyz`, which reports the wait) is answered.
 * Chosen over the database on a worker thread, measured (20,000 `select 1` on a shared
 * 2-core host): a statement through this queue and retry took 170 µs against 120 µs for the
 * bare synchronous call, while a worker's message round trip alone costs 80 µs more per
 * statement, and the one-connection queue would still be needed.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { chmodSync, closeSync, openSync } from "node:fs";
import type { Database, Queries, Row, SqlValue } from "./types.ts";
import { migrateSqlite } from "./schema.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";
import { backoffDelay, sleep } from "../../util/async.ts";
import { DatabaseUnavailableError } from "./url.ts";

/**
 * How long a statement waits for another process's write lock before it fails with
 * `DatabaseUnavailableError` (the API's 503): what the old 5 s busy timeout allowed, now
 * without blocking.
 */
export const BUSY_WAIT_MS = 5000;

/** Whether `error` is SQLite's SQLITE_BUSY (another connection holds the lock). */
function isBusy(error: unknown): boolean {
  return (error as { errcode?: number })?.errcode === 5 ||
    /database is locked/.test((error as Error)?.message ?? "");
}

/** A transaction handle used after its transaction ended: a bug in the caller. */
export class TransactionOverError extends VidError {
  override name = "TransactionOverError";
  constructor() {
    super("a statement ran on a transaction that had already ended; run it on the database", {
      exitCode: EXIT_FAILED,
    });
  }
}

/**
 * `sql` without its row-locking clauses (`for update`, `for update of t skip locked`), which
 * SQLite does not parse: one writer at a time holds the whole database, so the lock they ask
 * PostgreSQL for is already held. The queue's claim is written once, for both engines.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(withoutRowLocks("select * from r limit 1 for update of r skip locked"), "select * from r limit 1");
 * ```
 */
export function withoutRowLocks(sql: string): string {
  return sql.replace(/\s+for\s+update(\s+of\s+\w+)?(\s+skip\s+locked|\s+nowait)?\b/gi, "");
}

class SqliteQueries implements Queries {
  readonly #db: DatabaseSync;
  constructor(db: DatabaseSync) {
    this.#db = db;
  }
  get<T = Row>(sql: string, ...params: SqlValue[]): Promise<T | undefined> {
    return Promise.resolve(this.#db.prepare(withoutRowLocks(sql)).get(...params) as T | undefined);
  }
  all<T = Row>(sql: string, ...params: SqlValue[]): Promise<T[]> {
    return Promise.resolve(this.#db.prepare(withoutRowLocks(sql)).all(...params) as T[]);
  }
  run(sql: string, ...params: SqlValue[]): Promise<number> {
    return Promise.resolve(Number(this.#db.prepare(withoutRowLocks(sql)).run(...params).changes));
  }
}

class SqliteDatabase implements Database {
  readonly #db: DatabaseSync;
  readonly #queries: SqliteQueries;
  /** Settles when the last statement or transaction queued so far has ended. */
  #tail: Promise<unknown> = Promise.resolve();
  /** When the statement waiting for another process's lock first found it held. */
  #lockedSince: number | undefined;

  constructor(db: DatabaseSync) {
    this.#db = db;
    this.#queries = new SqliteQueries(db);
  }

  /**
   * Runs `work` once everything queued before it has ended: the queue is taken in the same
   * synchronous step that joins it, so two waiters can never both find the connection free.
   */
  #exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#tail.then(work);
    this.#tail = run.catch(() => {});
    return run;
  }

  /**
   * Runs the synchronous `step`, again after a backoff while another process holds the lock,
   * for {@linkcode BUSY_WAIT_MS} at most; then SQLite's error is thrown.
   */
  async #whenUnlocked<T>(step: () => T): Promise<T> {
    const started = Date.now();
    for (let attempt = 1;; attempt++) {
      try {
        const result = step();
        this.#lockedSince = undefined;
        return result;
      } catch (error) {
        if (!isBusy(error)) throw error;
        this.#lockedSince ??= started;
        const waited = Date.now() - started;
        if (waited >= BUSY_WAIT_MS) {
          this.#lockedSince = undefined;
          // A 503 with Retry-After for an API request, as for a database that went away.
          throw new DatabaseUnavailableError(
            `database is locked: another process held its write lock for ${waited} ms`,
            { cause: error },
          );
        }
        await sleep(backoffDelay(attempt, { baseMs: 5, maxMs: 250, jitter: 0.5 }));
      }
    }
  }

  lockedForMs(): number {
    return this.#lockedSince === undefined ? 0 : Date.now() - this.#lockedSince;
  }

  get<T = Row>(sql: string, ...params: SqlValue[]): Promise<T | undefined> {
    return this.#exclusive(() =>
      this.#whenUnlocked(() =>
        this.#db.prepare(withoutRowLocks(sql)).get(...params) as T | undefined
      )
    );
  }

  all<T = Row>(sql: string, ...params: SqlValue[]): Promise<T[]> {
    return this.#exclusive(() =>
      this.#whenUnlocked(() => this.#db.prepare(withoutRowLocks(sql)).all(...params) as T[])
    );
  }

  run(sql: string, ...params: SqlValue[]): Promise<number> {
    return this.#exclusive(() =>
      this.#whenUnlocked(() =>
        Number(this.#db.prepare(withoutRowLocks(sql)).run(...params).changes)
      )
    );
  }

  transaction<T>(fn: (tx: Queries) => Promise<T>): Promise<T> {
    return this.#exclusive(async () => {
      let open = true;
      const guard = (): SqliteQueries => {
        if (!open) throw new TransactionOverError();
        return this.#queries;
      };
      const tx: Queries = {
        get: async (sql, ...params) => await guard().get(sql, ...params),
        all: async (sql, ...params) => await guard().all(sql, ...params),
        run: async (sql, ...params) => await guard().run(sql, ...params),
      };
      // Immediate, so a writer in another process waits here rather than at commit; once
      // it is begun, this connection holds the write lock until commit or rollback.
      await this.#whenUnlocked(() => this.#db.exec("begin immediate"));
      try {
        const result = await fn(tx);
        this.#db.exec("commit");
        return result;
      } catch (error) {
        // A transaction SQLite already ended itself (a full disk rolls back) has nothing
        // to roll back: that error is the one to report.
        if (this.#db.isTransaction) this.#db.exec("rollback");
        throw error;
      } finally {
        open = false;
      }
    });
  }

  close(): Promise<void> {
    return this.#exclusive(() => {
      if (this.#db.isOpen) this.#db.close();
      return Promise.resolve();
    });
  }
}

/**
 * Opens (and migrates) an SQLite database file, or `:memory:`. The file holds password and
 * credential hashes, so it is created mode 0600 before SQLite opens it (SQLite gives its
 * `-wal` and `-shm` files the database file's mode), and an existing one is tightened to
 * 0600 with them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const db = await openSqlite(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * assert.equal((await db.get<{ n: number }>("select count(*) as n from accounts"))?.n, 1);
 * await db.close();
 * ```
 */
export function openSqlite(file: string): Promise<Database> {
  try {
    return Promise.resolve(openSqliteNow(file));
  } catch (error) {
    return Promise.reject(error);
  }
}

function openSqliteNow(file: string): Database {
  if (file !== ":memory:") {
    closeSync(openSync(file, "a", 0o600));
    for (const path of [file, `${file}-wal`, `${file}-shm`]) {
      try {
        chmodSync(path, 0o600);
      } catch {
        // -wal and -shm exist only while a connection is open
      }
    }
  }
  const raw = new DatabaseSync(file);
  try {
    // busy_timeout 0: SQLite would sleep inside the call (see the module's note). The
    // migration runs before the server serves, so it may wait there, a bounded while.
    raw.exec("pragma busy_timeout = 5000; pragma journal_mode = wal; pragma foreign_keys = on;");
    migrateSqlite(raw);
    raw.exec("pragma busy_timeout = 0;");
    return new SqliteDatabase(raw);
  } catch (error) {
    raw.close();
    throw error;
  }
}
