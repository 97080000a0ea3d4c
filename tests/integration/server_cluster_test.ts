/**
 * `vid server` as a cluster: several instances on one real PostgreSQL (the OS package, from
 * `tests/postgres_server.ts`) and one shared S3 storage (a real s3rver on loopback, as the
 * machines of a cluster would share a bucket), each with a role.
 *
 * Issue 26's acceptance scenario is one test: two API instances and two `--chunk-size`
 * workers; a 20 s render (1080x1080, the server's smallest output, at 5 fps: 100 frames in
 * five chunks) submitted through the first API with a `callback_url`, which is then killed
 * with SIGKILL, as is a worker inside a chunk; polled through the second API, it completes
 * once, is charged once, its webhook arrives under one delivery id (its retry after a 503
 * too), its bytes equal a single-process server's render of the same request, and its chunk
 * rows name both workers. Besides: failed sign-ins spread over both API instances lock at
 * the documented count, a worker stopped with SIGTERM hands its render back, and a
 * PostgreSQL restarted mid-render leaves every instance reconnected and the render
 * completed. Leases are 3 s, so a take-over costs seconds.
 *
 * @module
 */

import { after, afterEach, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import { zipSync } from "fflate";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { compositionHtml, probeVideo, ROOT } from "../helpers.ts";
import { S3_CREDENTIALS, type S3Server, startS3Server } from "../s3_server.ts";
import {
  createAccount,
  serverDatabaseRow,
  serverDatabaseRows,
  serverDatabaseUrl,
  serverDataDir,
  serverPostgres,
  type ServerProcess,
  startServerProcess,
  useServerPostgres,
} from "../server_process.ts";

type Json = Record<string, unknown>;

const LEASE = ["--lease-seconds", "3"];
/** How long any wait of this file may take before it fails (host-enforced). */
const WAIT_MS = 120_000;

/** 3 s fading from black to red: 30 frames at 10 fps, each a different colour. */
const FADE = compositionHtml(
  `<div style="position:absolute;inset:0;animation:f 3s linear both"></div>`,
  {
    duration: 3,
    head: `<style>@keyframes f { from { background: #000 } to { background: #f00 } }</style>`,
  },
);

/**
 * The acceptance scenario's render: 20 s fading from black to red at 5 fps, 100 frames
 * (every one a different colour) in chunks of 20.
 */
const LONG_SECONDS = 20;
const LONG_FPS = 5;
const CHUNK_FRAMES = 20;
const LONG = compositionHtml(
  `<div style="position:absolute;inset:0;animation:f ${LONG_SECONDS}s linear both"></div>`,
  {
    duration: LONG_SECONDS,
    head: `<style>@keyframes f { from { background: #000 } to { background: #f00 } }</style>`,
  },
);

async function until<T>(what: string, check: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  while (Date.now() < deadline) {
    const value = await check().catch(() => undefined);
    if (value !== undefined && value !== false) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

async function api(base: string, key: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${base}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
  });
  return { status: response.status, body: await response.json() as Json };
}

/** Uploads `html` and submits its render with `extra` fields; returns the render's id. */
async function submit(base: string, key: string, extra: Json = {}, html = FADE): Promise<string> {
  const zip = new Uint8Array(zipSync({ "index.html": new TextEncoder().encode(html) }));
  const asset = await api(base, key, "/v3/assets", {
    method: "POST",
    body: JSON.stringify({ size_bytes: zip.length }),
  });
  assert.equal(asset.status, 201, JSON.stringify(asset.body));
  const put = await fetch(String(asset.body.upload_url), { method: "PUT", body: zip });
  assert.equal(put.status, 200, await put.text());
  const render = await api(base, key, "/v3/vid/renders", {
    method: "POST",
    body: JSON.stringify({ asset_id: asset.body.asset_id, fps: 10, aspect_ratio: "1:1", ...extra }),
  });
  assert.equal(render.status, 201, JSON.stringify(render.body));
  return String(render.body.render_id);
}

/** Polls render `id` through `base` until it has ended. */
function finished(base: string, key: string, id: string): Promise<Json> {
  return until(`render ${id} to end`, async () => {
    const { body } = await api(base, key, `/v3/vid/renders/${id}`);
    return body.status === "completed" || body.status === "failed" ? body : undefined;
  });
}

/** The bytes of a finished render's video. */
async function videoOf(render: Json): Promise<Uint8Array> {
  const video = await fetch(String(render.video_url));
  assert.equal(video.status, 200);
  return new Uint8Array(await video.arrayBuffer());
}

/**
 * A webhook receiver on loopback that records every delivery and what it answered: 503 to
 * the first `refuse`, so the sender retries, then 200.
 */
function receiver(refuse = 0): { url: string; deliveries: Json[]; close(): Promise<void> } {
  const deliveries: Json[] = [];
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async (req) => {
    const answered = deliveries.length < refuse ? 503 : 200;
    deliveries.push({
      ...(await req.json()) as Json,
      header_id: req.headers.get("vid-delivery-id"),
      answered,
    });
    return new Response(answered === 200 ? "ok" : "try later", { status: answered });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/hook`,
    deliveries,
    close: () => server.shutdown(),
  };
}

await useServerPostgres().then((stop) => after(stop));

describe("vid server --role on one PostgreSQL", () => {
  /** The first instance's data folder: it owns the database the others are pointed at. */
  let home = "";
  let env: Record<string, string> = {};
  /** The shared bucket every instance stores projects, chunks and videos in. */
  let s3: S3Server | undefined;
  let storage = "";
  const folders: string[] = [];
  const running: ServerProcess[] = [];
  /** Each instance's data folder, where its browsers are recorded. */
  const dirOf = new Map<ServerProcess, string>();
  let key = "";

  /** Starts an instance with its own data folder on the shared database and storage. */
  const instance = async (role: string, extra: string[] = []): Promise<ServerProcess> => {
    const dir = await Deno.makeTempDir({ prefix: `vid-cluster-${role}-` });
    folders.push(dir);
    const server = await startServerProcess(dir, [
      "--role",
      role,
      "--storage",
      storage,
      "--allow-http-callbacks",
      ...LEASE,
      ...extra,
    ], env);
    running.push(server);
    dirOf.set(server, dir);
    return server;
  };

  /**
   * Kills the browsers a worker killed with SIGKILL left: each runs in a process group of its
   * own, which outlives the server (a restart on its data folder would reap them).
   */
  const reapBrowsers = async (server: ServerProcess): Promise<void> => {
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
    home = await serverDataDir("vid-cluster-home-");
    folders.push(home);
    s3 = await startS3Server();
    const client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    await client.send(new CreateBucketCommand({ Bucket: "cluster" }));
    client.destroy();
    storage = `s3://cluster/vid?endpoint=${s3.endpoint}&path_style=1`;
    env = {
      VID_DATABASE_URL: serverDatabaseUrl(home),
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    };
    key = await createAccount(home, "cluster@example.com", {
      password: "correct horse",
      credits: 100,
    });
  });

  // Each test starts the instances it needs: a worker left from another test would take its
  // renders. SIGTERM, so their browsers close with them.
  afterEach(async () => {
    await Promise.all(running.splice(0).map((server) => server.stop()));
  });

  after(async () => {
    await s3?.close();
    for (const dir of folders) await Deno.remove(dir, { recursive: true }).catch(() => {});
  });

  it("refuses a bad --role or VID_SERVER_ROLE with exit 2 naming the flag", async () => {
    for (
      const [args, variables] of [
        [["--role", "both"], {}],
        [[], { VID_SERVER_ROLE: "both" }],
      ] as [string[], Record<string, string>][]
    ) {
      // Were it to start, it would serve until killed: the deadline ends it.
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", `${ROOT}cli.ts`, "server", "--port", "0", "--data-dir", home, ...args],
        env: { ...env, ...variables },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
        signal: AbortSignal.timeout(60_000),
      }).output();
      const result = { code: output.code, stderr: new TextDecoder().decode(output.stderr) };
      assert.equal(result.code, 2, result.stderr);
      assert.match(
        result.stderr,
        /--role \(env VID_SERVER_ROLE\) must be api, worker, all, not "both"/,
      );
    }
  });

  it("the acceptance scenario: 2 API + 2 --chunk-size workers; kill -9 of the API that took a 20 s render and of a worker inside a chunk; through the other API it completes once, charged once, one webhook id across a retry, the single-process render's bytes, its chunks on both workers", async () => {
    // The single-process server's render of the same request: SQLite, one process, whole.
    const alone = await Deno.makeTempDir({ prefix: "vid-cluster-alone-" });
    folders.push(alone);
    const aloneKey = await createAccount(alone, "alone@example.com");
    const single = await startServerProcess(alone);
    running.push(single);
    const reference = await finished(
      single.url,
      aloneKey,
      await submit(single.url, aloneKey, { fps: LONG_FPS }, LONG),
    );
    assert.equal(reference.status, "completed", String(reference.error));
    const expected = await videoOf(reference);
    await single.stop();

    // The receiver answers the first delivery 503, so the outbox retries it.
    const hooks = receiver(1);
    try {
      const chunked = ["--chunk-size", String(CHUNK_FRAMES)];
      const [api1, api2, ...workers] = await Promise.all([
        instance("api"),
        instance("api"),
        instance("worker", chunked),
        instance("worker", chunked),
      ]);
      // Each prints its role on the line after the one its start waited for.
      await until("the role lines", () =>
        Promise.resolve(
          /role: api/.test(api1.output()) && /role: worker/.test(workers[0].output()) ||
            undefined,
        ));
      assert.match(api1.output(), /role: api/);
      assert.match(workers[0].output(), /role: worker/);
      // A worker serves the probes and metrics only; an API instance renders nothing.
      const notHere = await fetch(`${workers[0].url}/v3/me`, {
        headers: { authorization: `Bearer ${key}` },
      });
      assert.equal(notHere.status, 404);
      assert.match(
        ((await notHere.json()) as Json & { error: Json }).error.message as string,
        /--role worker/,
      );
      assert.equal((await fetch(`${workers[0].url}/readyz`)).status, 200);
      const metrics = await (await fetch(`${api1.url}/metrics`)).text();
      assert.match(metrics, /^vid_workers 0$/m);

      const before = Number((await api(api2.url, key, "/v3/me")).body.credits);
      const id = await submit(api1.url, key, { fps: LONG_FPS, callback_url: hooks.url }, LONG);
      await api1.stop("SIGKILL");

      const pidOf = (worker: unknown): number => Number(String(worker).split(":")[1]);
      // A worker inside a chunk after it stored one, so its work stays in the chunk rows
      // after it is killed: the chunk it holds and whether it coordinates the render.
      const held = await until("a worker inside its second chunk", async () => {
        const rows = await serverDatabaseRows(
          home,
          "select id, status, worker, frames_done from render_chunks where render_id = ?",
          id,
        );
        const stored = new Set(rows.filter((r) => r.status === "done").map((r) => pidOf(r.worker)));
        const inside = rows.find((r) =>
          r.status === "running" && Number(r.frames_done) > 0 && stored.has(pidOf(r.worker))
        );
        if (!inside) return undefined;
        const render = await serverDatabaseRow(
          home,
          "select lease_owner from renders where id = ?",
          id,
        );
        return {
          chunk: String(inside.id),
          worker: String(inside.worker),
          coordinator: String(render?.lease_owner),
        };
      }).catch((error) => {
        for (const worker of workers) console.error(worker.output(), worker.errors());
        throw error;
      });
      const victim = workers.find((worker) => worker.child.pid === pidOf(held.worker));
      assert.ok(victim, `the chunk row names a worker: ${held.worker}`);
      const survivor = workers.find((worker) => worker !== victim)!;
      assert.equal((await victim.stop("SIGKILL")).signal, "SIGKILL");
      await reapBrowsers(victim);

      const done = await finished(api2.url, key, id);
      assert.equal(done.status, "completed", String(done.error));
      const render = await serverDatabaseRow(
        home,
        "select attempts, lease_owner from renders where id = ?",
        id,
      );
      // The render itself is taken over only when the killed worker coordinated it.
      const coordinated = pidOf(held.coordinator) === victim.child.pid;
      assert.deepEqual(
        render,
        { attempts: coordinated ? 2 : 1, lease_owner: null },
        "completed once",
      );
      const after = Number((await api(api2.url, key, "/v3/me")).body.credits);
      assert.equal(Number(done.credits), LONG_SECONDS, "20 s at 1080p");
      assert.equal(before - after, Number(done.credits), "charged once");

      const video = await videoOf(done);
      assert.deepEqual(video, expected, "the single-process render's bytes");
      const file = await Deno.makeTempFile({ suffix: ".mp4" });
      try {
        await Deno.writeFile(file, video);
        assert.equal((await probeVideo(file)).frames, LONG_SECONDS * LONG_FPS);
      } finally {
        await Deno.remove(file);
      }

      // The chunk rows: every chunk stored once, the killed one taken over by the survivor,
      // and chunks stored by both workers.
      const chunks = await serverDatabaseRows(
        home,
        "select id, status, attempts, worker from render_chunks where render_id = ? order by idx",
        id,
      );
      assert.equal(chunks.length, LONG_SECONDS * LONG_FPS / CHUNK_FRAMES);
      assert.ok(chunks.every((c) => c.status === "done"), JSON.stringify(chunks));
      const taken = chunks.find((c) => c.id === held.chunk);
      assert.equal(taken?.attempts, 2, "the killed worker's chunk was taken over once");
      assert.equal(pidOf(taken?.worker), survivor.child.pid, "by the other worker");
      assert.deepEqual(
        chunks.filter((c) => c.id !== held.chunk).map((c) => c.attempts),
        chunks.slice(1).map(() => 1),
        "every other chunk rendered once",
      );
      assert.deepEqual(
        new Set(chunks.map((c) => pidOf(c.worker))),
        new Set(workers.map((worker) => worker.child.pid)),
        "chunks on both workers",
      );

      await until("the webhook", () => Promise.resolve(hooks.deliveries.length >= 2));
      // Anything sent twice (by the other instances' senders) lands within a few of their polls.
      await new Promise((resolve) => setTimeout(resolve, 2500));
      const first = hooks.deliveries[0];
      assert.equal(first.render_id, id);
      assert.equal(first.status, "completed");
      assert.match(String(first.delivery_id), /^whd_/);
      assert.deepEqual(
        hooks.deliveries.map((d) => [d.delivery_id, d.header_id, d.answered]),
        [
          [first.delivery_id, first.delivery_id, 503],
          [first.delivery_id, first.delivery_id, 200],
        ],
        "one delivery, its retry under the same id, accepted once",
      );
    } finally {
      await hooks.close();
    }
  });

  it("failed sign-ins spread over two API instances lock the account at the documented 5", async () => {
    const apis = await Promise.all([instance("api"), instance("api")]);
    const signIn = async (server: ServerProcess, password: string) => {
      const params = new URLSearchParams({
        response_type: "code",
        client_id: "vid-cli",
        redirect_uri: "http://127.0.0.1:53682/callback",
        code_challenge: "x".repeat(43),
        code_challenge_method: "S256",
        state: "st",
      });
      const page = await fetch(`${server.url}/oauth/authorize?${params}`);
      const html = await page.text();
      assert.equal(page.status, 200, html);
      const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
      const fields = Object.fromEntries(
        [...html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)].map((m) => [
          m[1],
          m[2].replaceAll("&amp;", "&"),
        ]),
      );
      const response = await fetch(`${server.url}/oauth/authorize`, {
        method: "POST",
        redirect: "manual",
        headers: { cookie },
        body: new URLSearchParams({ ...fields, email: "cluster@example.com", password }),
      });
      await response.body?.cancel();
      return response.status;
    };
    for (let i = 0; i < 5; i++) {
      assert.equal(await signIn(apis[i % 2], `wrong ${i}`), 401, `failure ${i + 1}`);
    }
    // Locked on both, the right password included.
    assert.equal(await signIn(apis[0], "correct horse"), 429);
    assert.equal(await signIn(apis[1], "correct horse"), 429);
  });

  it("a worker stopped with SIGTERM hands its render back at once; another worker finishes it", async () => {
    const [apiServer, leaving] = await Promise.all([instance("api"), instance("worker")]);
    const id = await submit(apiServer.url, key);
    await until("the render to be under way", async () => {
      const row = await serverDatabaseRow(home, "select lease_owner from renders where id = ?", id);
      return row?.lease_owner ? true : undefined;
    });
    const stopped = Date.now();
    const status = await leaving.stop("SIGTERM");
    assert.equal(status.code, 0, leaving.errors());
    assert.ok(Date.now() - stopped < 20_000, "within --shutdown-timeout");
    assert.deepEqual(
      await serverDatabaseRow(
        home,
        "select status, lease_owner, attempts from renders where id = ?",
        id,
      ),
      { status: "queued", lease_owner: null, attempts: 0 },
      "handed back, no attempt counted",
    );
    await instance("worker");
    const done = await finished(apiServer.url, key, id);
    assert.equal(done.status, "completed", String(done.error));
  });

  it("PostgreSQL restarted mid-render: every instance reconnects and the render completes", async () => {
    const pg = serverPostgres()!;
    const [apiServer, worker] = await Promise.all([instance("api"), instance("worker")]);
    const id = await submit(apiServer.url, key);
    await until("the render to be under way", async () => {
      const { body } = await api(apiServer.url, key, `/v3/vid/renders/${id}`);
      return body.status === "rendering" && Number(body.progress) > 0 ? true : undefined;
    });
    await pg.restart();
    for (const server of [apiServer, worker]) {
      await until(`${server.url} ready again`, async () => {
        const response = await fetch(`${server.url}/readyz`);
        await response.body?.cancel();
        return response.status === 200 ? true : undefined;
      });
    }
    const done = await finished(apiServer.url, key, id);
    assert.equal(done.status, "completed", String(done.error));
  });
});
