/**
 * The one way server code reaches its database. It is asynchronous because a networked
 * engine (PostgreSQL) answers later even when the embedded one (`node:sqlite`) answers at
 * once; handlers, the queue and the admin commands are written once against
 * {@linkcode Database} and never ask which engine is behind it. SQL is written with `?`
 * placeholders in the dialect both engines share; each driver turns it into its own.
 *
 * @module
 */

import { openSqlite } from "./sqlite.ts";
import { openPostgres } from "./postgres.ts";

export { openPostgres, openSqlite };
export { SCHEMA_VERSION, SchemaTooNewError } from "./schema.ts";
export {
  DATABASE_ENV,
  DATABASE_FLAG,
  DatabaseUnavailableError,
  DatabaseUnreachableError,
  DatabaseUrlError,
  redactUrl,
} from "./url.ts";

/** A value a query takes or a row holds. */
export type SqlValue = string | number | null;

/** A row as a query returns it, by column name. */
export type Row = Record<string, SqlValue>;

/** The statements a database, or a transaction on it, runs. */
export interface Queries {
  /** The first row `sql` selects, or `undefined`. */
  get<T = Row>(sql: string, ...params: SqlValue[]): Promise<T | undefined>;
  /** Every row `sql` selects. */
  all<T = Row>(sql: string, ...params: SqlValue[]): Promise<T[]>;
  /** Runs an insert, update or delete; resolves to how many rows it changed. */
  run(sql: string, ...params: SqlValue[]): Promise<number>;
}

/** An open database: statements, transactions, and closing. */
export interface Database extends Queries {
  /**
   * Runs `fn` in one transaction, committed when it resolves and rolled back when it throws.
   * Statements in it go through `tx`; the database's own methods wait until it ends, so a
   * transaction that calls them instead of `tx` would wait on itself, and `tx` refuses work
   * once the transaction is over.
   */
  transaction<T>(fn: (tx: Queries) => Promise<T>): Promise<T>;
  /**
   * Milliseconds the oldest statement waiting now has waited for another process's lock on
   * the database (SQLite's write lock); 0 when none waits. `/readyz` is not ready past a
   * bound. Engines that wait on the network instead (PostgreSQL) leave it out.
   */
  lockedForMs?(): number;
  /** Closes the connection(s); statements after it fail. */
  close(): Promise<void>;
}

/** The current time as ISO 8601. */
export function now(): string {
  return new Date().toISOString();
}

/**
 * Opens the database at `location`: a `postgres://` URL, or the path of an SQLite file
 * (`:memory:` for one that lives as long as the process). Either way it is migrated to this
 * vid's schema before it is returned.
 *
 * @throws {DatabaseUrlError} A URL of another kind, or a malformed one.
 * @throws {DatabaseUnreachableError} PostgreSQL did not answer or refused the credentials.
 * @throws {SchemaTooNewError} A newer vid migrated the database.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const db = await openDatabase(":memory:");
 * assert.equal((await db.get<{ n: number }>("select count(*) as n from renders"))?.n, 0);
 * await db.close();
 * ```
 */
export function openDatabase(location: string): Promise<Database> {
  return /^[a-z][a-z0-9+.-]*:/i.test(location) && location !== ":memory:"
    ? openPostgres(location)
    : openSqlite(location);
}
