/**
 * The operators' view of `vid server` (issue 33 item 8), through the real server process on
 * loopback: `--log-format json` writes every line as one JSON object with `level`, `time`,
 * `instance`, `msg` and the request, render and account it is about; every response carries an
 * `X-Request-Id` (the caller's when sane, else a new one) that the request's log lines carry;
 * no credential reaches the log; a render handed back on SIGTERM logs one line. Then, on a real
 * PostgreSQL shared by instances in turn: a render whose worker was killed (-9) is taken over
 * with one log line, and a webhook whose sender was killed mid-delivery is sent again by another
 * instance once the lease (3 s) ran out, counted as attempt 2, with one resend line.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { zipSync } from "fflate";
import { compositionHtml, runVid, waitFor } from "../helpers.ts";
import {
  createAccount,
  serverDatabaseRow,
  serverDatabaseUrl,
  serverDataDir,
  type ServerProcess,
  startServerProcess,
  useServerPostgres,
} from "../server_process.ts";

type Json = Record<string, unknown>;

const JSON_LOGS = ["--log-format", "json"];
const LEASE = ["--lease-seconds", "3"];

/** A composition of `duration` seconds, one colour: long enough to be caught rendering. */
function page(duration: number): string {
  return compositionHtml(`<div style="position:absolute;inset:0;background:rgb(0,0,160)"></div>`, {
    duration,
  });
}

/** Every line `text` holds, each parsed as JSON (a line that is not fails the test). */
function jsonLines(text: string): Json[] {
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => {
    try {
      return JSON.parse(line) as Json;
    } catch {
      throw new Error(`not a JSON line: ${line}`);
    }
  });
}

/** Everything `server` logged, stdout and stderr, as JSON lines. */
function logOf(server: ServerProcess): Json[] {
  return [...jsonLines(server.output()), ...jsonLines(server.errors())];
}

/** Calls the API of `base` with `key` and extra headers. */
async function call(
  base: string,
  path: string,
  init: { key?: string; headers?: Record<string, string>; method?: string; body?: unknown } = {},
): Promise<{ status: number; body: Json; requestId: string | null }> {
  const response = await fetch(`${base}${path}`, {
    method: init.method ?? "GET",
    headers: {
      "content-type": "application/json",
      ...(init.key !== undefined && { authorization: `Bearer ${init.key}` }),
      ...init.headers,
    },
    ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? JSON.parse(text) as Json : {},
    requestId: response.headers.get("x-request-id"),
  };
}

/** Uploads `html` as a project; returns its asset id. */
async function asset(base: string, key: string, html: string): Promise<string> {
  const zip = new Uint8Array(zipSync({ "index.html": new TextEncoder().encode(html) }));
  const created = await call(base, "/v3/assets", {
    key,
    method: "POST",
    body: { size_bytes: zip.length },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  const put = await fetch(String(created.body.upload_url), { method: "PUT", body: zip });
  assert.equal(put.status, 200, await put.text());
  return String(created.body.asset_id);
}

/** The lines of `log` about render `renderId` whose message matches `pattern`. */
function linesAbout(log: Json[], renderId: string, pattern: RegExp): Json[] {
  return log.filter((line) => line.renderId === renderId && pattern.test(String(line.msg)));
}

describe("vid server --log-format json (SQLite)", () => {
  let dataDir = "";
  let key = "";
  let server: ServerProcess | undefined;

  before(async () => {
    dataDir = await serverDataDir("vid-logs-test-");
    key = await createAccount(dataDir, "logs@example.com", { credits: 100 });
  });

  after(async () => {
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true });
  });

  it("refuses a --log-format it does not know with exit 2 naming the flag", async () => {
    const result = await runVid(["server", "--log-format", "xml", "--data-dir", dataDir]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--log-format \(env VID_LOG_FORMAT\) must be text or json/);
  });

  it("writes JSON lines with level, time, instance and msg; X-Request-Id is echoed or made on a 200 and a 4xx and carried by the request's lines; a render handed back on SIGTERM logs one line", async () => {
    server = await startServerProcess(dataDir, JSON_LOGS);
    const base = server.url;

    const ok = await call(base, "/v3/me", { key, headers: { "x-request-id": "lb-7f3a.1" } });
    assert.equal(ok.status, 200);
    assert.equal(ok.requestId, "lb-7f3a.1", "a sane incoming id is echoed");
    const accountId = String(ok.body.account_id);

    const refused = await call(base, "/v3/me", { key: "vid_sk_00112233445566778899aabb" });
    assert.equal(refused.status, 401);
    assert.match(refused.requestId ?? "", /^req_[0-9a-f]{16}$/, "no id given: one is made");

    for (const insane of ["a b", "x".repeat(129), "<script>"]) {
      const answer = await call(base, "/nope", { headers: { "x-request-id": insane } });
      assert.equal(answer.status, 404);
      assert.match(answer.requestId ?? "", /^req_[0-9a-f]{16}$/, `replaced: ${insane}`);
    }

    const assetId = await asset(base, key, page(20));
    const submitted = await call(base, "/v3/vid/renders", {
      key,
      method: "POST",
      headers: { "x-request-id": "submit-1" },
      body: { asset_id: assetId, fps: 2, aspect_ratio: "1:1" },
    });
    assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
    assert.equal(submitted.requestId, "submit-1");
    const renderId = String(submitted.body.render_id);
    await waitFor("the render to start", async () => {
      return (await call(base, `/v3/vid/renders/${renderId}`, { key })).body.status ===
        "rendering";
    }, { timeoutMs: 60_000 });
    const stopped = await server.stop("SIGTERM");
    assert.equal(stopped.code, 0);

    const log = logOf(server);
    for (const line of log) {
      assert.ok(["info", "warn", "error"].includes(String(line.level)), JSON.stringify(line));
      assert.equal(new Date(String(line.time)).toISOString(), line.time, "time is ISO 8601");
      // The run's lease owner; lines before the data folder is open: host and pid.
      assert.match(String(line.instance), /^\S+:\d+(:w_[0-9a-f]{12})?$/, JSON.stringify(line));
      assert.equal(typeof line.msg, "string");
    }
    const of = (requestId: string | null) => log.filter((line) => line.requestId === requestId);
    assert.deepEqual(
      of("lb-7f3a.1").map((line) => [line.status, line.accountId]),
      [[200, accountId]],
      "the 200's line carries its id and account",
    );
    assert.deepEqual(of(refused.requestId).map((line) => line.status), [401]);
    const submit = of("submit-1");
    assert.equal(submit.length, 1);
    assert.deepEqual([submit[0].status, submit[0].renderId, submit[0].accountId], [
      201,
      renderId,
      accountId,
    ]);
    const handedBack = linesAbout(log, renderId, /handed back/);
    assert.equal(handedBack.length, 1, JSON.stringify(log));
    assert.equal(handedBack[0].accountId, accountId);
    const everything = server.output() + server.errors();
    assert.ok(!everything.includes(key), "the API key is never logged");
    assert.ok(!everything.includes("vid_sk_00112233"), "nor a refused one");
  });
});

describe("vid server logs and resends on a shared PostgreSQL", () => {
  let stopPostgres: () => Promise<void> = async () => {};
  let home = "";
  let env: Record<string, string> = {};
  let storage = "";
  const folders: string[] = [];
  const running: ServerProcess[] = [];
  const dirOf = new Map<ServerProcess, string>();

  /** Starts an instance with a data folder of its own on the shared database and storage. */
  const instance = async (): Promise<ServerProcess> => {
    const dir = await Deno.makeTempDir({ prefix: "vid-logs-instance-" });
    folders.push(dir);
    const server = await startServerProcess(dir, [
      "--storage",
      storage,
      "--allow-http-callbacks",
      ...LEASE,
      ...JSON_LOGS,
    ], env);
    running.push(server);
    dirOf.set(server, dir);
    return server;
  };

  /** SIGKILL, and the browsers it leaves (each in a process group of its own) too. */
  const kill = async (server: ServerProcess): Promise<void> => {
    await server.stop("SIGKILL");
    const records = `${dirOf.get(server)}/work/browsers`;
    for await (const entry of Deno.readDir(records)) {
      const { pid } = JSON.parse(await Deno.readTextFile(`${records}/${entry.name}`)) as {
        pid: number;
      };
      try {
        process.kill(-pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  };

  before(async () => {
    stopPostgres = await useServerPostgres();
    home = await serverDataDir("vid-logs-home-");
    folders.push(home);
    storage = new URL(`file://${home}/shared-storage`).href;
    env = { VID_DATABASE_URL: serverDatabaseUrl(home) };
  });

  after(async () => {
    await Promise.all(running.map((server) => server.stop()));
    for (const dir of folders) await Deno.remove(dir, { recursive: true }).catch(() => {});
    await stopPostgres();
  });

  it("a render whose worker is killed (-9) is taken over with one line; a webhook whose sender is killed mid-delivery is resent by another instance after the lease, as attempt 2, with one line", async () => {
    const key = await createAccount(home, "cluster-logs@example.com", { credits: 100 });
    /** What the receiver saw; it holds the first delivery open until the test ends. */
    const seen: { id: string | null; attempt: string | null }[] = [];
    const release = Promise.withResolvers<void>();
    const hook = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
      await req.text();
      seen.push({
        id: req.headers.get("vid-delivery-id"),
        attempt: req.headers.get("vid-delivery-attempt"),
      });
      if (seen.length === 1) await release.promise;
      return new Response(null, { status: 200 });
    });
    try {
      const first = await instance();
      const assetId = await asset(first.url, key, page(8));
      const submitted = await call(first.url, "/v3/vid/renders", {
        key,
        method: "POST",
        body: {
          asset_id: assetId,
          fps: 2,
          aspect_ratio: "1:1",
          callback_url: `http://127.0.0.1:${hook.addr.port}/hook`,
        },
      });
      assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
      const renderId = String(submitted.body.render_id);
      const accountId = String(
        (await call(first.url, "/v3/me", { key })).body.account_id,
      );
      await waitFor("the first instance to render it", async () => {
        const row = await serverDatabaseRow(
          home,
          "select status from renders where id = ?",
          renderId,
        );
        return row?.status === "rendering";
      }, { timeoutMs: 60_000 });
      await kill(first);

      // The second takes the render over once the first's lease ran out, renders it and
      // starts its webhook; the receiver holds the delivery, and the sender is killed in it.
      const second = await instance();
      await waitFor("the webhook's first attempt", () => seen.length >= 1, { timeoutMs: 120_000 });
      await kill(second);
      const taken = linesAbout(logOf(second), renderId, /taken over from/);
      assert.equal(taken.length, 1, JSON.stringify(logOf(second)));
      assert.equal(taken[0].accountId, accountId);
      assert.equal(taken[0].level, "warn");
      const cut = await serverDatabaseRow(
        home,
        "select id, status, attempts from webhook_deliveries where render_id = ?",
        renderId,
      );
      assert.deepEqual({ status: cut?.status, attempts: cut?.attempts }, {
        status: "pending",
        attempts: 1,
      }, "the attempt in flight is counted");

      // Another instance resends it once the killed sender's 3 s lease ran out: well within
      // this wait, which the former fixed 60 s hold would not meet.
      const third = await instance();
      await waitFor("the resend", () => seen.length >= 2, { timeoutMs: 30_000 });
      await waitFor("the delivery to be recorded", async () => {
        const row = await serverDatabaseRow(
          home,
          "select status from webhook_deliveries where render_id = ?",
          renderId,
        );
        return row?.status === "delivered";
      });
      assert.deepEqual(seen, [{ id: cut?.id, attempt: "1" }, { id: cut?.id, attempt: "2" }]);
      const delivered = await serverDatabaseRow(
        home,
        "select status, attempts from webhook_deliveries where render_id = ?",
        renderId,
      );
      assert.deepEqual({ ...delivered }, { status: "delivered", attempts: 2 });
      const resent = linesAbout(logOf(third), renderId, /resending/);
      assert.equal(resent.length, 1, JSON.stringify(logOf(third)));
      assert.deepEqual(
        [resent[0].deliveryId, resent[0].attempt, resent[0].accountId],
        [cut?.id, 2, accountId],
      );
      assert.match(String(resent[0].msg), /attempt 1 was cut off/);
      assert.equal(linesAbout(logOf(third), renderId, /taken over from/).length, 0);
    } finally {
      release.resolve();
      await hook.shutdown();
    }
  });
});
