/**
 * The PostgreSQL test harness (tests/postgres_server.ts) against the real server from the OS
 * package: it starts one on a free loopback port, the npm client (`postgres`) connects with the
 * password in the URL and runs `select 1`, a restart keeps the data and the port while
 * dropping connections (what "Postgres restarted mid-render" needs), and no PostgreSQL
 * process is left after a stop, nor after the test process itself is killed with SIGKILL.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { dirname } from "node:path";
import postgresClient from "postgres";
import { ROOT } from "../helpers.ts";
import { processesIn, startPostgres } from "../postgres_server.ts";

/** A client of one connection that has connected (so a bad password fails here). */
async function connect(url: string): Promise<postgresClient.Sql> {
  const sql = postgresClient(url, { max: 1, connect_timeout: 10, onnotice: () => {} });
  try {
    await sql`select 1`;
  } catch (error) {
    await sql.end({ timeout: 1 });
    throw error;
  }
  return sql;
}

async function refused(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return false;
  } catch {
    return true;
  }
}

describe("the PostgreSQL test harness", () => {
  it("starts PostgreSQL 15 on loopback; the client connects and runs select 1; a stop leaves no process", async () => {
    const postgres = await startPostgres();
    try {
      assert.match(postgres.url, /^postgres:\/\/postgres:[0-9a-f]{32}@127\.0\.0\.1:\d+\/vid$/);
      const sql = await connect(postgres.url);
      try {
        assert.deepEqual([...await sql`select 1 as one`], [{ one: 1 }]);
        const [version] = await sql`show server_version_num`;
        assert.match(String(version.server_version_num), /^15\d{4}$/);
        assert.equal((await sql`select current_database() as db`)[0].db, "vid");
      } finally {
        await sql.end();
      }
      // The password is checked (scram-sha-256 on TCP), so URLs in tests carry a real one.
      await assert.rejects(
        connect(postgres.url.replace(postgres.password, "wrong")),
        /password authentication failed/,
      );
      assert.ok((await processesIn(postgres.dataDir)).length > 0, "running in its folder");
    } finally {
      await postgres.close();
    }
    assert.deepEqual(await processesIn(postgres.dataDir), []);
    assert.ok(await refused(postgres.port), "nothing listens on its port");
  });

  it("restarts on the same folder and port: connections drop, data stays", async () => {
    await using postgres = await startPostgres();
    const before = await connect(postgres.url);
    await before`create table kept (n int)`;
    await before`insert into kept values (42)`;
    const firstPid = postgres.pid();
    await postgres.restart();
    assert.notEqual(postgres.pid(), firstPid);
    // The client reconnects by itself: its next query reaches the restarted server.
    assert.deepEqual([...await before`select n from kept`], [{ n: 42 }]);
    await before.end();
    const after = await connect(postgres.url);
    try {
      assert.deepEqual([...await after`select n from kept`], [{ n: 42 }]);
    } finally {
      await after.end();
    }
    await postgres.stop();
    assert.ok(await refused(postgres.port), "stopped means stopped");
    assert.equal(postgres.pid(), undefined);
    await postgres.start();
    const again = await connect(postgres.url);
    await again.end();
  });

  it("leaves no PostgreSQL running when the test process is killed with SIGKILL", async () => {
    const script = await Deno.makeTempFile({ suffix: ".ts" });
    await Deno.writeTextFile(
      script,
      `import { startPostgres } from ${JSON.stringify(`${ROOT}tests/postgres_server.ts`)};
       const postgres = await startPostgres();
       console.log(postgres.dataDir);
       await new Promise(() => setInterval(() => {}, 1000));`,
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", script],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    let dataDir = "";
    try {
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let out = "";
      while (!out.includes("\n")) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`the harness script ended: ${out}`);
        out += value;
      }
      dataDir = out.trim();
      assert.ok((await processesIn(dataDir)).length > 0, "its server runs");
      child.kill("SIGKILL");
      await child.status;
      reader.releaseLock();
      await child.stdout.cancel().catch(() => {});
      const deadline = Date.now() + 30_000;
      while ((await processesIn(dataDir)).length > 0) {
        assert.ok(Date.now() < deadline, "postgres outlived its killed parent");
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await Deno.remove(script);
      if (dataDir) await Deno.remove(dirname(dataDir), { recursive: true });
    }
  });
});
