/**
 * Test helper: the real `vid server` process on loopback, as tests of the server, the
 * OAuth flow, the contract and the cloud client start it.
 *
 * @module
 */

import { DatabaseSync } from "node:sqlite";
import postgresClient from "postgres";
import { ROOT, runVid, SERVER_DATABASES } from "./helpers.ts";
import { type PostgresServer, startPostgres } from "./postgres_server.ts";
import { INT8_AS_NUMBER } from "../src/server/database/postgres.ts";

/** The PostgreSQL the server tests run against, when a `*_postgres_test.ts` started one. */
let postgres: PostgresServer | undefined;

/** The PostgreSQL the server tests run against, to stop and start it; none on SQLite. */
export function serverPostgres(): PostgresServer | undefined {
  return postgres;
}

/** Which engine the server tests of this run use. */
export function serverEngine(): "sqlite" | "postgres" {
  return postgres === undefined ? "sqlite" : "postgres";
}

/**
 * Runs the server tests imported after this call against PostgreSQL: each data folder made
 * by {@linkcode serverDataDir} gets a database of its own on one server from the OS package.
 *
 * @returns Stops the server and removes its folder.
 */
export async function useServerPostgres(): Promise<() => Promise<void>> {
  postgres = await startPostgres();
  const running = postgres;
  return async () => {
    postgres = undefined;
    await running.close();
  };
}

/**
 * A new temporary server data folder; on PostgreSQL, with a new empty database that every
 * `vid server …` started on the folder uses (`VID_DATABASE_URL`).
 */
export async function serverDataDir(prefix: string): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix });
  if (postgres !== undefined) {
    const name = `vid_${SERVER_DATABASES.size + 1}`;
    const sql = postgresClient(postgres.url, { max: 1, onnotice: () => {} });
    try {
      await sql.unsafe(`create database ${name}`);
    } finally {
      await sql.end();
    }
    const url = new URL(postgres.url);
    url.pathname = `/${name}`;
    SERVER_DATABASES.set(dir, url.href);
  }
  return dir;
}

/** The PostgreSQL URL of a data folder made by {@linkcode serverDataDir} on PostgreSQL. */
export function serverDatabaseUrl(dataDir: string): string {
  const url = SERVER_DATABASES.get(dataDir);
  if (url === undefined) throw new Error(`${dataDir} has no PostgreSQL database`);
  return url;
}

/**
 * The first row `query` (with `?` placeholders) selects from the server's database of
 * `dataDir`, read the way the engine allows while the server runs.
 */
export async function serverDatabaseRow(
  dataDir: string,
  query: string,
  ...params: (string | number)[]
): Promise<Record<string, unknown> | undefined> {
  return (await serverDatabaseRows(dataDir, query, ...params))[0];
}

/** Every row `query` selects, as {@linkcode serverDatabaseRow} reads the first. */
export async function serverDatabaseRows(
  dataDir: string,
  query: string,
  ...params: (string | number)[]
): Promise<Record<string, unknown>[]> {
  const url = SERVER_DATABASES.get(dataDir);
  if (url === undefined) {
    const db = new DatabaseSync(`${dataDir}/vid.db`, { readOnly: true });
    try {
      return db.prepare(query).all(...params).map((row) => ({ ...row }));
    } finally {
      db.close();
    }
  }
  const sql = postgresClient(url, {
    max: 1,
    onnotice: () => {},
    // bigint columns as numbers, as the server reads them and SQLite gives them.
    types: { int8: INT8_AS_NUMBER },
  });
  try {
    let n = 0;
    const rows = await sql.unsafe(query.replace(/\?/g, () => `$${++n}`), params);
    return rows.map((row) => ({ ...row }));
  } finally {
    await sql.end();
  }
}

/** A running `vid server` child process. */
export interface ServerProcess {
  /** Base URL it listens at. */
  url: string;
  child: Deno.ChildProcess;
  /** Everything it printed on stdout so far. */
  output(): string;
  /** Everything it printed on stderr so far (warnings and logged errors). */
  errors(): string;
  /** Resolves when stdout closed (the process is ending). */
  closed: Promise<void>;
  /** Sends `signal` (SIGTERM by default) and waits for the exit status. */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** Starts `vid server --port 0 --data-dir <dataDir> …args` and waits until it listens. */
export async function startServerProcess(
  dataDir: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const database = SERVER_DATABASES.get(dataDir);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, "server", "--port", "0", "--data-dir", dataDir, ...args],
    env: { ...(database !== undefined && { VID_DATABASE_URL: database }), ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let err = "";
  const errDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (err += text) }),
  ).catch(() => {});
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!/listening on (\S+)/.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`vid server exited before listening: ${out}`);
    out += value;
  }
  const closed = (async () => {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      out += value;
    }
  })();
  return {
    url: out.match(/listening on (\S+)/)![1],
    child,
    output: () => out,
    errors: () => err,
    closed,
    async stop(signal: Deno.Signal = "SIGTERM"): Promise<Deno.CommandStatus> {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
      const status = await child.status;
      await closed;
      await errDone;
      return status;
    },
  };
}

/** Adds an account with `vid server users add` and returns a new API key for it. */
export async function createAccount(
  dataDir: string,
  email: string,
  options: { password?: string; credits?: number } = {},
): Promise<string> {
  const added = await runVid([
    "server",
    "users",
    "add",
    email,
    "--password",
    options.password ?? "a long enough password",
    "--data-dir",
    dataDir,
    ...(options.credits !== undefined ? ["--credits", String(options.credits)] : []),
  ]);
  if (added.code !== 0) throw new Error(`users add failed: ${added.stderr}`);
  const key = await runVid(["server", "keys", "create", email, "--data-dir", dataDir]);
  if (key.code !== 0) throw new Error(`keys create failed: ${key.stderr}`);
  return key.stdout.trim();
}
