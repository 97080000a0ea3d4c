/**
 * The server's tables and their versions. The database records the version of its schema
 * in `vid_schema`; an instance migrates an older database forward inside one transaction
 * (so two instances starting at once cannot both migrate: the second waits and then finds
 * nothing to do), and refuses a newer one, naming both versions, rather than write rows a
 * newer vid reads differently.
 *
 * Version 1 is the schema every database had before versions were recorded; its migration
 * is idempotent (`if not exists`, columns added when missing), so a database from before
 * `vid_schema` is brought to version 1 by the same steps as an empty one.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";
import type { Database } from "./types.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

/**
 * Every state of a hosted render, in the order of its life: the values `renders.status` may
 * hold. The moves between them are `queue/renders.ts`'s (`RENDER_TRANSITIONS`); the list is
 * here, below the queue, so the database imports nothing of the server above it.
 */
export const RENDER_STATUSES = ["queued", "rendering", "completed", "failed", "deleted"] as const;

const IDENTIFIER = /^[a-z_][a-z0-9_]*$/;

/**
 * `name` as it may be interpolated into SQL: a plain identifier (table names and aliases come
 * from code, never from requests); anything else is a bug and throws.
 */
export function sqlTableName(name: string): string {
  if (!IDENTIFIER.test(name)) throw new TypeError(`not a table name: ${name}`);
  return name;
}

/**
 * The statements that give `tableName` the lease columns of `queue/leases.ts`, for a schema
 * migration, in PostgreSQL's idempotent form (`add column if not exists`): two instances
 * migrating at once may both run them, since the second's snapshot can predate the first's
 * commit. SQLite migrates under `begin immediate`, one at a time, and takes them without
 * `if not exists` (which it does not parse) through {@linkcode forSqlite}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.match(leaseColumnsSql("renders"), /add column if not exists lease_expires_at bigint/);
 * assert.match(forSqlite(leaseColumnsSql("renders")), /add column lease_expires_at bigint/);
 * ```
 */
export function leaseColumnsSql(tableName: string): string {
  const t = sqlTableName(tableName);
  return `alter table ${t} add column if not exists lease_owner text;
alter table ${t} add column if not exists lease_expires_at bigint;
alter table ${t} add column if not exists attempts integer not null default 0;
create index if not exists ${t}_by_lease on ${t} (lease_expires_at);
`;
}

/**
 * A migration's PostgreSQL text as SQLite takes it: `add column if not exists` becomes
 * `add column` (SQLite migrates one instance at a time, so the column is never there yet).
 */
export function forSqlite(sql: string): string {
  return sql.replaceAll("add column if not exists", "add column");
}

/** The schema version this vid writes; bump it with each migration added below. */
export const SCHEMA_VERSION = 4;

/** The database was migrated by a newer vid than this one. */
export class SchemaTooNewError extends VidError {
  override name = "SchemaTooNewError";
  /** The database's schema version. */
  readonly databaseVersion: number;
  /** The newest schema version this vid knows. */
  readonly knownVersion: number;
  constructor(where: string, databaseVersion: number) {
    super(
      `${where} has schema version ${databaseVersion}, but this vid knows versions up to ${SCHEMA_VERSION}: upgrade vid on this machine to the version the other instances run`,
      { exitCode: EXIT_FAILED, field: "database" },
    );
    this.databaseVersion = databaseVersion;
    this.knownVersion = SCHEMA_VERSION;
  }
}

const SQLITE_V1 = `
create table if not exists accounts (
  id text primary key,
  email text not null unique,
  password_hash text not null,
  credits real not null default 0,
  created_at text not null
);
create table if not exists api_keys (
  id text primary key,
  account_id text not null references accounts(id),
  name text not null,
  key_hash text not null unique,
  created_at text not null,
  revoked_at text
);
create table if not exists tokens (
  token_hash text primary key,
  kind text not null check (kind in ('access', 'refresh', 'code')),
  account_id text not null references accounts(id),
  expires_at integer not null,
  data text,
  used_at integer
);
create table if not exists assets (
  id text primary key,
  account_id text not null references accounts(id),
  status text not null check (status in ('pending_upload', 'ready')),
  size_bytes integer not null,
  sha256 text,
  filename text,
  composition text not null,
  project text,
  created_at text not null,
  ready_at text
);
create table if not exists renders (
  seq integer primary key autoincrement,
  id text not null unique,
  account_id text not null references accounts(id),
  asset_id text,
  status text not null check (status in (${RENDER_STATUSES.map((s) => `'${s}'`).join(", ")})),
  progress real not null default 0,
  error text,
  request text not null,
  width integer,
  height integer,
  duration_seconds real,
  credits real not null default 0,
  warnings text not null default '[]',
  callback_url text,
  callback_id text,
  created_at text not null,
  started_at text,
  completed_at text,
  deleted_at text
);
create index if not exists renders_by_status on renders (status, seq);
create index if not exists renders_by_account on renders (account_id, started_at);
create table if not exists idempotency (
  account_id text not null,
  scope text not null,
  key text not null,
  request_hash text not null,
  object_id text not null,
  created_at text not null,
  primary key (account_id, scope, key)
);
create table if not exists webhook_deliveries (
  id text primary key,
  render_id text not null,
  url text not null,
  status text not null check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  last_status integer,
  last_error text,
  created_at text not null,
  finished_at text
);
`;

/** Columns added before versions were recorded, for databases created before them. */
const ADDED_COLUMNS: readonly { table: string; column: string; type: string }[] = [
  // The distributed backend's workflow execution, so a restart resumes polling it.
  { table: "renders", column: "execution_arn", type: "text" },
  // When the PUT that fills a pending asset began: an upload URL is used once.
  { table: "assets", column: "upload_started_at", type: "integer" },
  // The webhook outbox: how the render ended, and when the next attempt is due (ms).
  { table: "webhook_deliveries", column: "event", type: "text" },
  { table: "webhook_deliveries", column: "next_attempt_at", type: "integer" },
];

/**
 * Version 2, both engines: `settings` holds what every instance must agree on (the signing
 * secret, written once by whichever starts first), `throttle_failures` the failed attempts
 * the sign-in throttles count (so limits hold across instances), and a token's sign-in
 * family is a column rather than a field of its JSON, which the engines read differently.
 */
const V2_TABLES = `
create table if not exists settings (
  name text primary key,
  value text not null
);
create table if not exists throttle_failures (
  key text not null,
  at bigint not null
);
create index if not exists throttle_failures_by_key on throttle_failures (key, at);
`;

/**
 * Version 3, both engines: renders are leased (`leases.ts`), so several instances share the
 * queue and a render whose worker died is taken over when its lease runs out, instead of
 * every start re-queueing every render in flight. Renders a server from before leases left
 * `rendering` get a lease that has already run out, so the first worker takes them over.
 * An idempotency claim names the run that holds it, so a start releases only its dead
 * predecessors' claims rather than every instance's. PostgreSQL's steps must be idempotent
 * (`if not exists`): an instance that waited on the migration lock may still read the version
 * from before the first one's commit and run them again.
 */
const V3 = leaseColumnsSql("renders") +
  `update renders set lease_expires_at = 0 where status = 'rendering';
alter table idempotency add column if not exists owner text;
`;

/**
 * Version 4, both engines: the chunks of a render spread over workers (`chunk_jobs.ts`), one
 * leased row each, `id` = `<render id>:<index>`; `worker` names who rendered it.
 */
const V4 = `
create table if not exists render_chunks (
  id text primary key,
  render_id text not null,
  idx integer not null,
  from_frame integer not null,
  to_frame integer not null,
  frames integer not null,
  status text not null check (status in ('pending', 'running', 'done', 'failed')),
  frames_done integer not null default 0,
  worker text,
  error text,
  created_at text not null,
  completed_at text
);
create index if not exists render_chunks_by_render on render_chunks (render_id, idx);
create index if not exists render_chunks_by_status on render_chunks (status, created_at);
` + leaseColumnsSql("render_chunks");

/** SQLite's migrations, by the version each brings the database to. */
const SQLITE_MIGRATIONS: Readonly<Record<number, (raw: DatabaseSync) => void>> = {
  1: (raw) => {
    raw.exec(SQLITE_V1);
    for (const { table, column, type } of ADDED_COLUMNS) {
      const columns = raw.prepare(`pragma table_info(${table})`).all() as { name: string }[];
      if (!columns.some((c) => c.name === column)) {
        raw.exec(`alter table ${table} add column ${column} ${type}`);
      }
    }
    addDeletedStatus(raw);
    // On an added column, so after it: the webhook sender's look for due deliveries.
    raw.exec(
      "create index if not exists webhook_deliveries_due on webhook_deliveries (status, next_attempt_at)",
    );
  },
  2: (raw) => {
    raw.exec(V2_TABLES);
    raw.exec("alter table tokens add column family text");
    raw.exec("update tokens set family = json_extract(data, '$.family')");
  },
  3: (raw) => raw.exec(forSqlite(V3)),
  4: (raw) => raw.exec(forSqlite(V4)),
};

/**
 * PostgreSQL's version 1: the same tables as SQLite's, in its types (`bigserial` for the
 * queue's order, `bigint` for millisecond times, `double precision` for credits).
 */
const POSTGRES_V1 = SQLITE_V1
  .replace("seq integer primary key autoincrement", "seq bigserial primary key")
  .replace(/ real\b/g, " double precision")
  .replaceAll(" integer", " bigint") +
  `
alter table renders add column if not exists execution_arn text;
alter table assets add column if not exists upload_started_at bigint;
alter table webhook_deliveries add column if not exists event text;
alter table webhook_deliveries add column if not exists next_attempt_at bigint;
create index if not exists webhook_deliveries_due on webhook_deliveries (status, next_attempt_at);
`;

/** PostgreSQL's migrations, by the version each brings the database to. */
const POSTGRES_MIGRATIONS: Readonly<Record<number, string>> = {
  1: POSTGRES_V1,
  2: V2_TABLES + "alter table tokens add column if not exists family text;",
  3: V3,
  4: V4,
};

/** Key of the advisory lock instances migrate under (any fixed number; "vid" in ASCII). */
const MIGRATION_LOCK = 0x766964;

/**
 * Brings a PostgreSQL database to {@linkcode SCHEMA_VERSION} in one transaction that first
 * takes an advisory lock: instances starting together wait for the first to migrate, then
 * find nothing to do.
 *
 * @throws {SchemaTooNewError} The database is newer than this vid.
 */
export async function migratePostgres(db: Database): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.get("select pg_advisory_xact_lock(?)", MIGRATION_LOCK);
    await tx.run("create table if not exists vid_schema (version integer not null)");
    const row = await tx.get<{ version: number }>("select version from vid_schema");
    const version = row?.version ?? 0;
    if (version > SCHEMA_VERSION) throw new SchemaTooNewError("the database", version);
    for (let next = version + 1; next <= SCHEMA_VERSION; next++) {
      for (const statement of POSTGRES_MIGRATIONS[next].split(";")) {
        if (statement.trim() !== "") await tx.run(statement);
      }
    }
    if (row === undefined) {
      await tx.run("insert into vid_schema (version) values (?)", SCHEMA_VERSION);
    } else await tx.run("update vid_schema set version = ?", SCHEMA_VERSION);
  });
}

/**
 * Brings an SQLite database to {@linkcode SCHEMA_VERSION} in one immediate transaction, run
 * synchronously: a transaction that awaited between its statements could let a second
 * connection of the same process begin one, which SQLite's busy wait would block the thread on.
 *
 * @throws {SchemaTooNewError} The database is newer than this vid.
 */
export function migrateSqlite(raw: DatabaseSync): void {
  raw.exec("begin immediate");
  try {
    raw.exec("create table if not exists vid_schema (version integer not null)");
    const row = raw.prepare("select version from vid_schema").get() as
      | { version: number }
      | undefined;
    const version = row?.version ?? 0;
    if (version > SCHEMA_VERSION) throw new SchemaTooNewError("the database", version);
    for (let next = version + 1; next <= SCHEMA_VERSION; next++) SQLITE_MIGRATIONS[next](raw);
    if (row === undefined) {
      raw.prepare("insert into vid_schema (version) values (?)").run(SCHEMA_VERSION);
    } else raw.prepare("update vid_schema set version = ?").run(SCHEMA_VERSION);
    raw.exec("commit");
  } catch (error) {
    raw.exec("rollback");
    throw error;
  }
}

/**
 * Databases made before renders could be `deleted` have a status check without it; SQLite
 * cannot change a check in place, so the table is rebuilt with the same rows. Renders such
 * a server deleted while queued stayed `queued` and kept their credits: they become
 * `deleted` and are refunded. Runs inside the migration's transaction.
 */
function addDeletedStatus(raw: DatabaseSync): void {
  const table = raw.prepare(
    "select sql from sqlite_master where type = 'table' and name = 'renders'",
  ).get() as { sql: string } | undefined;
  if (!table || table.sql.includes("'deleted'")) return;
  const columns = (raw.prepare("pragma table_info(renders)").all() as { name: string }[])
    .map((c) => c.name).join(", ");
  const created = table.sql
    .replace(/^create table (if not exists )?"?renders"?/i, "create table renders_next")
    .replace("'completed', 'failed')", "'completed', 'failed', 'deleted')");
  raw.exec(created);
  raw.exec(`insert into renders_next (${columns}) select ${columns} from renders`);
  raw.exec("drop table renders");
  raw.exec("alter table renders_next rename to renders");
  const stranded = raw.prepare(
    "select id, account_id, credits from renders where deleted_at is not null and status in ('queued', 'rendering')",
  ).all() as { account_id: string; credits: number }[];
  for (const row of stranded) {
    raw.prepare("update accounts set credits = credits + ? where id = ?").run(
      Number(row.credits),
      String(row.account_id),
    );
  }
  // Renders deleted by a server from before the `deleted` state kept theirs.
  raw.exec("update renders set status = 'deleted' where deleted_at is not null");
}
