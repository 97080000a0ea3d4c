/**
 * The embedded engine: `node:sqlite` behind the asynchronous {@linkcode Database}. One
 * connection serves the whole process, so a transaction holds it: statements from other
 * requests wait until it commits instead of landing inside it (with a synchronous driver
 * they could not interleave; with `await` inside a transaction they could).
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { chmodSync, closeSync, openSync } from "node:fs";
import type { Database, Queries, Row, SqlValue } from "./mod.ts";
import { migrateSqlite } from "./schema.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

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

  get<T = Row>(sql: string, ...params: SqlValue[]): Promise<T | undefined> {
    return this.#exclusive(() => this.#queries.get<T>(sql, ...params));
  }

  all<T = Row>(sql: string, ...params: SqlValue[]): Promise<T[]> {
    return this.#exclusive(() => this.#queries.all<T>(sql, ...params));
  }

  run(sql: string, ...params: SqlValue[]): Promise<number> {
    return this.#exclusive(() => this.#queries.run(sql, ...params));
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
      // Immediate, so a writer in another process waits here rather than at commit.
      this.#db.exec("begin immediate");
      try {
        const result = await fn(tx);
        this.#db.exec("commit");
        return result;
      } catch (error) {
        this.#db.exec("rollback");
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
    raw.exec("pragma journal_mode = wal; pragma foreign_keys = on; pragma busy_timeout = 5000;");
    migrateSqlite(raw);
    return new SqliteDatabase(raw);
  } catch (error) {
    raw.close();
    throw error;
  }
}
