/**
 * The server's state in SQLite (`node:sqlite`): accounts, API keys, tokens, assets,
 * renders, idempotency keys and webhook deliveries. Everything a restart needs is here,
 * so a server killed mid-render re-queues the work and loses nothing.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import { chmodSync, closeSync, openSync } from "node:fs";
import { markDeletedRenders, RENDER_STATUSES } from "./renders.ts";

const SCHEMA = `
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

/**
 * Opens (and migrates) the database file. It holds password and credential hashes, so it
 * is created mode 0600 before SQLite opens it (SQLite gives its `-wal` and `-shm` files the
 * database file's mode), and an existing one is tightened to 0600 with them.
 */
export function openDatabase(file: string): DatabaseSync {
  closeSync(openSync(file, "a", 0o600));
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      chmodSync(path, 0o600);
    } catch {
      // -wal and -shm exist only while a connection is open
    }
  }
  const db = new DatabaseSync(file);
  db.exec("pragma journal_mode = wal; pragma foreign_keys = on; pragma busy_timeout = 5000;");
  db.exec(SCHEMA);
  migrate(db);
  return db;
}

/** Columns added after the first release, for databases created before them. */
const ADDED_COLUMNS: readonly { table: string; column: string; type: string }[] = [
  // The distributed backend's workflow execution, so a restart resumes polling it.
  { table: "renders", column: "execution_arn", type: "text" },
  // When the PUT that fills a pending asset began: an upload URL is used once.
  { table: "assets", column: "upload_started_at", type: "integer" },
  // The webhook outbox: how the render ended, and when the next attempt is due (ms).
  { table: "webhook_deliveries", column: "event", type: "text" },
  { table: "webhook_deliveries", column: "next_attempt_at", type: "integer" },
];

function migrate(db: DatabaseSync): void {
  for (const { table, column, type } of ADDED_COLUMNS) {
    const columns = db.prepare(`pragma table_info(${table})`).all() as { name: string }[];
    if (!columns.some((c) => c.name === column)) {
      db.exec(`alter table ${table} add column ${column} ${type}`);
    }
  }
  addDeletedStatus(db);
  // On an added column, so after it: the webhook sender's look for due deliveries.
  db.exec(
    "create index if not exists webhook_deliveries_due on webhook_deliveries (status, next_attempt_at)",
  );
}

/**
 * Databases made before renders could be `deleted` have a status check without it; SQLite
 * cannot change a check in place, so the table is rebuilt with the same rows. Renders such
 * a server deleted while queued stayed `queued` and kept their credits: they become
 * `deleted` and are refunded.
 */
function addDeletedStatus(db: DatabaseSync): void {
  const table = db.prepare(
    "select sql from sqlite_master where type = 'table' and name = 'renders'",
  )
    .get() as { sql: string } | undefined;
  if (!table || table.sql.includes("'deleted'")) return;
  const columns = (db.prepare("pragma table_info(renders)").all() as { name: string }[])
    .map((c) => c.name).join(", ");
  const created = table.sql
    .replace(/^create table (if not exists )?"?renders"?/i, "create table renders_next")
    .replace("'completed', 'failed')", "'completed', 'failed', 'deleted')");
  transaction(db, () => {
    db.exec(created);
    db.exec(`insert into renders_next (${columns}) select ${columns} from renders`);
    db.exec("drop table renders");
    db.exec("alter table renders_next rename to renders");
    const stranded = db.prepare(
      "select id, account_id, credits from renders where deleted_at is not null and status in ('queued', 'rendering')",
    ).all() as Row[];
    for (const row of stranded) {
      db.prepare("update accounts set credits = credits + ? where id = ?").run(
        Number(row.credits),
        String(row.account_id),
      );
    }
    markDeletedRenders(db);
  });
}

/** The current time as ISO 8601. */
export function now(): string {
  return new Date().toISOString();
}

/** A row as SQLite returns it. */
export type Row = Record<string, string | number | null>;

/** Runs `fn` in a transaction (immediate, so concurrent writers wait). */
export function transaction<T>(db: DatabaseSync, fn: () => T): T {
  db.exec("begin immediate");
  try {
    const result = fn();
    db.exec("commit");
    return result;
  } catch (error) {
    db.exec("rollback");
    throw error;
  }
}
