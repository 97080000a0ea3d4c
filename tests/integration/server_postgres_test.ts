/**
 * The server suite again, on PostgreSQL: `server_test.ts` and `server_queue_test.ts` run
 * unchanged with every data folder given a database of its own on one PostgreSQL from the
 * OS package (`VID_DATABASE_URL`, as an operator would set it), so the two engines behind
 * `src/server/database/` cannot drift apart. Tests that are about SQLite's file lock are
 * skipped here. Then what only PostgreSQL has: URLs, a database that does not answer or
 * refuses the password, a schema newer than this vid, and instances starting together.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import postgresClient from "postgres";
import { zipSync } from "fflate";
import {
  createAccount,
  serverDatabaseRow,
  serverDatabaseUrl,
  serverDataDir,
  serverEngine,
  serverPostgres,
  startServerProcess,
  useServerPostgres,
} from "../server_process.ts";
import { ROOT, runVid } from "../helpers.ts";
import { SCHEMA_VERSION } from "../../src/server/database/mod.ts";

type Json = Record<string, unknown>;

const stop = await useServerPostgres();
await import("./server_test.ts");
await import("./server_queue_test.ts");

describe("the postgres client's write-after-close crash (thrown by hand: the race cannot be made on demand)", () => {
  const run = async (dataDir: string, which: string) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}tests/fixtures/postgres/client_crash.ts`,
        serverDatabaseUrl(dataDir),
        which,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
  };

  it("keeps the process alive, fails the statement the old pool held as 'away' at once, and serves the next from a fresh pool", async () => {
    const dataDir = await serverDataDir("vid-database-crash-");
    try {
      const result = await run(dataDir, "client");
      assert.equal(result.code, 0, result.stderr);
      const held = /held statement: (.*) after (\d+) ms/.exec(result.stdout);
      assert.ok(held, result.stdout);
      assert.match(held[1], /^failed: DatabaseUnavailableError: /, result.stdout);
      assert.ok(Number(held[2]) < 10000, `failed within the 20 s sleep: ${held[2]} ms`);
      assert.match(result.stdout, /next statement: 2/);
      assert.match(result.stderr, /a connection closed while the postgres client was writing/);
      // Any other uncaught error still ends the process.
      const other = await run(dataDir, "other");
      assert.equal(other.code, 1, other.stdout);
      assert.match(other.stderr, /Uncaught TypeError: Cannot read properties of null/);
      assert.doesNotMatch(other.stdout, /next statement/);
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  });
});

describe("vid server --database", () => {
  it("refuses a URL that is not postgres:// with exit 2, and an unreachable one with exit 1, never printing the password", async () => {
    const dataDir = await serverDataDir("vid-database-url-");
    try {
      const list = (database: string) =>
        runVid(["server", "keys", "list", "--data-dir", dataDir, "--database", database]);
      const other = await list("mysql://vid:hunter2-pass@db.internal/vid");
      assert.equal(other.code, 2, other.stderr);
      assert.match(
        other.stderr,
        /--database mysql:\/\/vid:\*\*\*@db\.internal\/vid: mysql:\/\/ is not supported/,
      );
      const unreachable = await list("postgres://vid:hunter2-pass@127.0.0.1:1/vid");
      assert.equal(unreachable.code, 1, unreachable.stderr);
      assert.match(
        unreachable.stderr,
        /could not use the database at postgres:\/\/vid:\*\*\*@127\.0\.0\.1:1\/vid \(.*ECONNREFUSED.*\): check that PostgreSQL runs there/,
      );
      const url = new URL(serverDatabaseUrl(dataDir));
      url.password = "hunter2-pass";
      const refused = await list(url.href);
      assert.equal(refused.code, 1, refused.stderr);
      assert.match(refused.stderr, /password authentication failed/);
      for (const result of [other, unreachable, refused]) {
        assert.ok(!`${result.stdout}${result.stderr}`.includes("hunter2"), result.stderr);
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  });

  it("two instances starting at once on an empty database agree on the schema and the signing secret", async () => {
    const first = await serverDataDir("vid-database-race-");
    const second = await Deno.makeTempDir({ prefix: "vid-database-race-" });
    const url = serverDatabaseUrl(first);
    const servers = await Promise.all([
      startServerProcess(first),
      startServerProcess(second, [], { VID_DATABASE_URL: url }),
    ]);
    try {
      const [a, b] = await Promise.all(
        [first, second].map(async (dir) => (await Deno.readTextFile(`${dir}/secret`)).trim()),
      );
      assert.equal(a, b, "one signing secret");
      assert.match(a, /^sec_/);
      assert.deepEqual(
        await serverDatabaseRow(first, "select count(*) as n, max(version) as v from vid_schema"),
        { n: 1, v: SCHEMA_VERSION },
      );
      assert.deepEqual(
        await serverDatabaseRow(first, "select value from settings where name = 'secret'"),
        { value: a },
      );
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
      await Deno.remove(first, { recursive: true });
      await Deno.remove(second, { recursive: true });
    }
  });

  it("a burst of 100 submissions over two API instances: every one a 201, none a 500", async () => {
    const first = await serverDataDir("vid-database-burst-");
    const second = await Deno.makeTempDir({ prefix: "vid-database-burst-" });
    const url = serverDatabaseUrl(first);
    const key = await createAccount(first, "ana@example.com", { credits: 1000 });
    // API instances only: the submissions conflict on the account's credits and queue, and
    // nothing renders meanwhile.
    const flags = ["--role", "api", "--max-queued-per-account", "1000"];
    const servers = await Promise.all([
      startServerProcess(first, flags),
      startServerProcess(second, flags, { VID_DATABASE_URL: url }),
    ]);
    try {
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      const zip = new Uint8Array(zipSync({
        "index.html": new TextEncoder().encode(
          '<div id="root" data-composition-id="b" data-width="320" data-height="180" ' +
            'data-duration="1"></div>',
        ),
      }));
      const asset = await (await fetch(`${servers[0].url}/v3/assets`, {
        method: "POST",
        headers,
        body: JSON.stringify({ size_bytes: zip.length }),
      })).json();
      const put = await fetch(asset.upload_url, { method: "PUT", body: zip });
      assert.equal(put.status, 200, await put.text());
      const statuses = await Promise.all(
        Array.from({ length: 100 }, async (_, i) => {
          const response = await fetch(`${servers[i % 2].url}/v3/vid/renders`, {
            method: "POST",
            headers,
            body: JSON.stringify({ asset_id: asset.asset_id, fps: 1 }),
          });
          const text = await response.text();
          return response.status === 201 ? 201 : `${response.status} ${text}`;
        }),
      );
      assert.deepEqual(statuses.filter((s) => s !== 201), []);
      assert.deepEqual(
        await serverDatabaseRow(first, "select count(*) as n from renders"),
        { n: 100 },
      );
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
      await Deno.remove(first, { recursive: true });
      await Deno.remove(second, { recursive: true });
    }
  });

  it("refuses to start on a database a newer vid migrated, naming both versions", async () => {
    const dataDir = await serverDataDir("vid-database-newer-");
    try {
      const made = await runVid(["server", "keys", "list", "--data-dir", dataDir]);
      assert.equal(made.code, 0, made.stderr);
      await serverDatabaseRow(dataDir, "update vid_schema set version = ? returning version", 99);
      // Were it to start, it would serve until killed: the deadline ends it.
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", `${ROOT}cli.ts`, "server", "--port", "0", "--data-dir", dataDir],
        env: { VID_DATABASE_URL: serverDatabaseUrl(dataDir) },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(60_000),
      }).output();
      const stderr = new TextDecoder().decode(output.stderr);
      assert.equal(output.code, 1, stderr);
      assert.match(
        stderr,
        new RegExp(`schema version 99, but this vid knows versions up to ${SCHEMA_VERSION}`),
      );
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  });
});

describe("vid server while PostgreSQL is away", () => {
  it("answers 503 with Retry-After and /readyz says why, then serves again once it is back", async () => {
    const dataDir = await serverDataDir("vid-database-away-");
    const key = await createAccount(dataDir, "away@example.com");
    const server = await startServerProcess(dataDir);
    const me = async (): Promise<{ status: number; retry: string | null; body: Json }> => {
      const response = await fetch(`${server.url}/v3/me`, {
        headers: { authorization: `Bearer ${key}` },
      });
      return {
        status: response.status,
        retry: response.headers.get("retry-after"),
        body: await response.json(),
      };
    };
    try {
      assert.equal((await me()).status, 200);
      await serverPostgres()!.stop();
      const away = await me();
      assert.deepEqual(
        { status: away.status, retry: away.retry, code: (away.body.error as Json).code },
        { status: 503, retry: "5", code: "vid_unavailable" },
      );
      const ready = await fetch(`${server.url}/readyz`);
      const readyBody = await ready.json();
      assert.equal(ready.status, 503);
      assert.notEqual(readyBody.checks.database, "ok", JSON.stringify(readyBody));
      assert.equal(readyBody.checks.storage, "ok");
      await serverPostgres()!.start();
      const deadline = Date.now() + 30_000;
      let back = await me();
      while (back.status !== 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        back = await me();
      }
      assert.equal(back.status, 200, JSON.stringify(back.body));
      assert.equal(back.body.email, "away@example.com");
    } catch (error) {
      // Whatever failed, the server's own account of it says why (a crash prints its error).
      const status = await server.stop();
      throw new Error(
        `${error}\nvid server exited ${status.code}; it printed:\n${server.output()}${server.errors()}`,
        { cause: error },
      );
    } finally {
      await server.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  });
  it("carries on when its connections are terminated while they start up (57P01 before the first query)", async () => {
    // Deterministic form of a crash seen under load: PostgreSQL shutting down just as the
    // server opened a connection. A lock on pg_type holds each new connection of the server
    // in its set-up (a fresh backend reads pg_type), where it is terminated as a shutdown
    // terminates it. The client once fetched array types there, in a promise nobody awaited:
    // its rejection ended the process.
    const dataDir = await serverDataDir("vid-database-setup-");
    const key = await createAccount(dataDir, "setup@example.com");
    const server = await startServerProcess(dataDir);
    // Ours fetch no types, and their statements are planned before the lock is taken.
    const admin = postgresClient(serverDatabaseUrl(dataDir), {
      max: 1,
      fetch_types: false,
      onnotice: () => {},
    });
    const locker = postgresClient(serverDatabaseUrl(dataDir), {
      max: 1,
      fetch_types: false,
      onnotice: () => {},
    });
    const waiting =
      "select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'";
    // Every client connection to the database but ours and the lock's.
    const terminate = (spare: number) =>
      admin.unsafe(
        "select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid() and pid <> $1",
        [spare],
      );
    const release = Promise.withResolvers<void>();
    let holding: Promise<unknown> | undefined;
    const me = async (): Promise<number> => {
      const response = await fetch(`${server.url}/v3/me`, {
        headers: { authorization: `Bearer ${key}` },
      });
      await response.body?.cancel();
      return response.status;
    };
    try {
      assert.equal(await me(), 200);
      const [{ pid: lockPid }] = await locker.unsafe("select pg_backend_pid() as pid");
      await admin.unsafe(waiting);
      await terminate(lockPid);
      const locked = Promise.withResolvers<void>();
      holding = locker.begin(async (tx) => {
        await tx.unsafe("lock table pg_catalog.pg_type in access exclusive mode");
        locked.resolve();
        await release.promise;
      });
      await locked.promise;
      // The server's connections end: its next queries need new ones, which stop in set-up.
      await terminate(lockPid);
      const asked = me().catch((error) => `${error}`);
      const deadline = Date.now() + 30_000;
      while ((await admin.unsafe(waiting)).length === 0) {
        if (Date.now() > deadline) throw new Error("no connection of the server waited on pg_type");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await terminate(lockPid);
      release.resolve();
      await holding;
      const answered = await asked;
      assert.ok(answered === 200 || answered === 503, `GET /v3/me: ${answered}`);
      let status = await me();
      while (status !== 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        status = await me();
      }
      assert.equal(status, 200);
    } catch (error) {
      release.resolve();
      await holding?.catch(() => {});
      const status = await server.stop();
      throw new Error(
        `${error}\nvid server exited ${status.code}; it printed:\n${server.output()}${server.errors()}`,
        { cause: error },
      );
    } finally {
      await Promise.all([admin.end(), locker.end()]);
      await server.stop();
      await Deno.remove(dataDir, { recursive: true });
    }
  });
});

describe("the server suite on PostgreSQL", () => {
  it("ran on PostgreSQL, and its database server stops with nothing left running", async () => {
    assert.equal(serverEngine(), "postgres");
    await stop();
    assert.equal(serverEngine(), "sqlite");
  });
});
