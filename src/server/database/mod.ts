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
import type { Database } from "./types.ts";

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

export type { Database, Queries, Row, SqlValue } from "./types.ts";

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
