/**
 * The networked engine: PostgreSQL through the npm client `postgres` (see ARCHITECTURE.md for
 * why that client), behind the same {@linkcode Database} as SQLite. Statements keep the `?`
 * placeholders server code writes; they become `$1, $2, …` here. Transactions run
 * `serializable`, so the read-then-write steps the server does in one (charge a render,
 * claim an idempotency key, take the next queued render) stay correct when several
 * instances run them at once; one that loses a conflict is run again from the start.
 *
 * @module
 */

import postgres from "postgres";
import type { Database, Queries, Row, SqlValue } from "./types.ts";
import { guardClientCrash } from "./client_crash.ts";
import { migratePostgres } from "./schema.ts";
import { TransactionOverError } from "./sqlite.ts";
import { checkPostgresUrl, DatabaseUnavailableError, DatabaseUnreachableError } from "./url.ts";
import { backoffDelay, sleep } from "../../util/async.ts";

/**
 * The client's type for PostgreSQL's `int8`: counts and bigint columns (timestamps in ms) come
 * back as numbers, as SQLite gives them.
 */
export const INT8_AS_NUMBER = {
  to: 20,
  from: [20],
  serialize: (value: number): string => String(value),
  parse: (value: string): number => Number(value),
};

/** Seconds a connection attempt may take before the database counts as unreachable. */
export const CONNECT_TIMEOUT_SECONDS = 10;
/** Connections one instance keeps to PostgreSQL at most. */
export const POOL_SIZE = 10;
/**
 * Runs of a transaction that keeps losing serialization conflicts (40001, deadlocks) before
 * it fails. A burst of 50 submissions over two API instances lost 8 after 8 runs spread over
 * a few ms: the runs now back off exponentially with full jitter (10 ms doubling, at most
 * 1 s apart, on average under 15 s in all), so the losers of one round do not meet again in
 * the next. Measured: 100 at once over two instances on a shared 2-core host, 16 runs up to
 * 500 ms apart left one a 503.
 */
const CONFLICT_RETRIES = 30;

/** The backoff between runs of a conflicting transaction, see {@linkcode CONFLICT_RETRIES}. */
const CONFLICT_BACKOFF = { baseMs: 10, maxMs: 1000, jitter: "full" } as const;
/** SQLSTATEs of a transaction that lost to a concurrent one and may simply run again. */
const RETRYABLE = new Set(["40001", "40P01"]);

/**
 * Codes of errors that say the database is away rather than that a statement is wrong: the
 * client's own (no connection) and PostgreSQL's connection and shutdown classes.
 */
const AWAY = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  // A write to a connection PostgreSQL already closed (it shut down between two statements).
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ETIMEDOUT",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_ENDED",
  "CONNECTION_DESTROYED",
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08004",
  "08006",
]);

/** `error` as a {@linkcode DatabaseUnavailableError} when it says the database is away. */
function away(error: unknown): unknown {
  const code = String((error as { code?: unknown } | undefined)?.code);
  if (!AWAY.has(code)) return error;
  return new DatabaseUnavailableError(
    error instanceof Error ? error.message : String(error),
    { cause: error },
  );
}

/**
 * `sql` with each `?` outside a quoted string turned into `$n`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(numberedPlaceholders("a = ? and b = '?' and c = ?"), "a = $1 and b = '?' and c = $2");
 * ```
 */
export function numberedPlaceholders(sql: string): string {
  let n = 0;
  let quoted = false;
  let out = "";
  for (const char of sql) {
    if (char === "'") quoted = !quoted;
    out += char === "?" && !quoted ? `$${++n}` : char;
  }
  return out;
}

type Sql = postgres.Sql<Record<string, never>>;

class PostgresQueries implements Queries {
  readonly #sql: () => postgres.Sql | postgres.TransactionSql;
  constructor(sql: () => postgres.Sql | postgres.TransactionSql) {
    this.#sql = sql;
  }
  async #query(sql: string, params: SqlValue[]): Promise<postgres.RowList<Row[]>> {
    try {
      return await this.#sql().unsafe<Row[]>(numberedPlaceholders(sql), params);
    } catch (error) {
      throw away(error);
    }
  }
  async get<T = Row>(sql: string, ...params: SqlValue[]): Promise<T | undefined> {
    const rows = await this.#query(sql, params);
    return rows[0] === undefined ? undefined : { ...rows[0] } as T;
  }
  async all<T = Row>(sql: string, ...params: SqlValue[]): Promise<T[]> {
    return (await this.#query(sql, params)).map((row) => ({ ...row }) as T);
  }
  async run(sql: string, ...params: SqlValue[]): Promise<number> {
    return (await this.#query(sql, params)).count;
  }
}

class PostgresDatabase extends PostgresQueries implements Database {
  #sql: Sql;
  readonly #connect: () => Sql;
  readonly #unguard: () => void;
  constructor(connect: () => Sql) {
    const first = connect();
    let current = first;
    super(() => current);
    this.#sql = first;
    this.#connect = connect;
    this.#unguard = guardClientCrash(() => {
      // The client lost track of a connection: a fresh pool for the next statements; the old
      // one is ended at once, so what it still holds fails (CONNECTION_DESTROYED: away)
      // rather than waiting forever.
      const old = this.#sql;
      current = this.#sql = this.#connect();
      old.end({ timeout: 0 }).catch(() => {});
    });
  }

  async transaction<T>(fn: (tx: Queries) => Promise<T>): Promise<T> {
    for (let attempt = 1;; attempt++) {
      let open = true;
      try {
        return await this.#sql.begin("isolation level serializable", async (sql) => {
          try {
            return await fn(
              new PostgresQueries(() => {
                if (!open) throw new TransactionOverError();
                return sql;
              }),
            );
          } finally {
            open = false;
          }
        }) as T;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (!RETRYABLE.has(String(code))) throw away(error);
        if (attempt >= CONFLICT_RETRIES) {
          // Never a 500: the request may simply be sent again (503 with Retry-After).
          throw new DatabaseUnavailableError(
            `a transaction kept conflicting with concurrent ones (${code}) ${attempt} times`,
            { cause: error },
          );
        }
        await sleep(backoffDelay(attempt, CONFLICT_BACKOFF));
      }
    }
  }

  /** Ends the pool within `seconds` (failed opens: nothing to wait for). */
  async end(seconds: number): Promise<void> {
    this.#unguard();
    await this.#sql.end({ timeout: seconds }).catch(() => {});
  }

  async close(): Promise<void> {
    this.#unguard();
    await this.#sql.end({ timeout: 5 });
  }
}

/**
 * Connects to PostgreSQL at `url` and migrates its schema (under a lock, so instances
 * starting together migrate once).
 *
 * @throws {DatabaseUrlError} `url` is not a PostgreSQL URL.
 * @throws {DatabaseUnreachableError} Nothing answered, or it refused the credentials.
 * @throws {SchemaTooNewError} A newer vid migrated the database.
 *
 * @example
 * ```ts no_run
 * const db = await openPostgres("postgres://vid:secret@db.internal:5432/vid");
 * console.log(await db.get("select count(*) as n from renders"));
 * await db.close();
 * ```
 */
export async function openPostgres(url: string): Promise<Database> {
  checkPostgresUrl(url);
  const connect = (): Sql =>
    postgres(url, {
      max: POOL_SIZE,
      connect_timeout: CONNECT_TIMEOUT_SECONDS,
      onnotice: () => {},
      // The client's default reads PostgreSQL's array types on every new connection, in a
      // promise nothing awaits: a connection ended during that read (a shutdown, a restart, a
      // terminated backend) rejected it unhandled, which ended the whole server. Statements here
      // bind only strings, numbers and nulls, so the array types are never needed.
      fetch_types: false,
      types: { int8: INT8_AS_NUMBER },
    }) as unknown as Sql;
  const db = new PostgresDatabase(connect);
  try {
    await migratePostgres(db);
  } catch (error) {
    await db.end(1);
    if (error instanceof Error && error.name === "SchemaTooNewError") throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw new DatabaseUnreachableError(url, message, { cause: error });
  }
  return db;
}
