/**
 * `vid server`'s queue under load from several tenants, through the real server process on
 * loopback with real renders: round-robin across accounts (a tenant with ten renders
 * queued does not hold another's back), the per-account queue limit (429
 * `vid_too_many_renders` with `Retry-After`), the duration and frame limits (422 before any
 * charge), a render state move the table forbids (refused and logged), a database locked
 * by another connection past the busy timeout (/healthz answers at once and /readyz says
 * not ready within a second meanwhile, a write answers 503; the server logs, carries on and
 * finishes the render), and webhooks that survive a `kill -9` during their retry backoff (sent again
 * after the restart, with one delivery id).
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { zipSync } from "fflate";
import { compositionHtml, runVid, waitFor } from "../helpers.ts";
import {
  createAccount,
  serverDatabaseRow,
  serverDataDir,
  serverEngine,
  type ServerProcess,
  startServerProcess,
} from "../server_process.ts";
import { verifyWebhook } from "../../src/webhooks/webhooks.ts";

type Json = Record<string, unknown>;

const encoder = new TextEncoder();

/** A composition of `duration` seconds, one colour. */
function page(duration: number, id: string): string {
  return compositionHtml(
    `<div style="position:absolute;inset:0;background:rgb(0,128,0)"></div>`,
    { id, duration },
  );
}

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 90000) {
  await waitFor(what, check, { timeoutMs: ms });
}

/** Whether the server process is still running. */
async function isRunning(server: ServerProcess): Promise<boolean> {
  const exited = await Promise.race([
    server.child.status.then(() => true),
    new Promise<false>((resolve) => setTimeout(() => resolve(false), 100)),
  ]);
  return !exited;
}

/** A client of one account on one server. */
function client(server: () => ServerProcess, key: string) {
  const api = async (
    path: string,
    init: RequestInit = {},
  ): Promise<{ status: number; body: Json; headers: Headers }> => {
    const response = await fetch(`${server().url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? JSON.parse(text) : {},
      headers: response.headers,
    };
  };
  return {
    api,
    async asset(html: string): Promise<string> {
      const zip = new Uint8Array(zipSync({ "index.html": encoder.encode(html) }));
      const created = await api("/v3/assets", {
        method: "POST",
        body: JSON.stringify({ size_bytes: zip.length }),
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const put = await fetch(String(created.body.upload_url), { method: "PUT", body: zip });
      assert.equal(put.status, 200, await put.text());
      return String(created.body.asset_id);
    },
    render: (body: Json) => api("/v3/vid/renders", { method: "POST", body: JSON.stringify(body) }),
    get: async (id: string): Promise<Json> => (await api(`/v3/vid/renders/${id}`)).body,
    credits: async (): Promise<number> => Number((await api("/v3/me")).body.credits),
  };
}

describe("vid server queue: fairness and limits", () => {
  let dataDir: string;
  let server: ServerProcess;
  let ana: ReturnType<typeof client>;
  let bo: ReturnType<typeof client>;

  before(async () => {
    dataDir = await serverDataDir("vid-queue-test-");
    const anaKey = await createAccount(dataDir, "ana@example.com", { credits: 1000 });
    const boKey = await createAccount(dataDir, "bo@example.com", { credits: 1000 });
    server = await startServerProcess(dataDir, [
      "--max-queued-per-account",
      "10",
      "--max-frames",
      "100",
    ]);
    ana = client(() => server, anaKey);
    bo = client(() => server, boKey);
  });

  after(async () => {
    await server?.stop();
    if (dataDir) await Deno.remove(dataDir, { recursive: true });
  });

  it("refuses bad limit flags with exit 2 naming the flag", async () => {
    for (const flag of ["--max-duration", "--max-frames", "--max-queued-per-account"]) {
      const result = await runVid(["server", flag, "0", "--data-dir", `${dataDir}/unused`]);
      assert.equal(result.code, 2, `${flag}: ${result.stderr}`);
      assert.match(result.stderr, new RegExp(`${flag} must be an integer from 1`));
    }
  });

  it("refuses a render over --max-duration or --max-frames with 422 naming the flag, before any charge", async () => {
    const day = await ana.asset(page(86400, "day"));
    const before = await ana.credits();
    const long = await ana.render({ asset_id: day, fps: 1 });
    assert.equal(long.status, 422, JSON.stringify(long.body));
    const error = long.body.error as Json;
    assert.equal(error.code, "vid_limit_exceeded");
    assert.equal(error.field, "composition");
    assert.match(String(error.message), /86400 s long; this server renders at most 600 s/);
    assert.match(String(error.message), /vid server --max-duration/);

    const five = await ana.asset(page(5, "five"));
    const many = await ana.render({ asset_id: five, fps: 30 });
    assert.equal(many.status, 422, JSON.stringify(many.body));
    assert.equal((many.body.error as Json).field, "fps");
    assert.match(
      String((many.body.error as Json).message),
      /150 frames \(5 s at 30 fps\); this server renders at most 100 frames \(vid server --max-frames\)/,
    );
    assert.equal(await ana.credits(), before, "a refused render is not charged");
    const listed = await ana.api("/v3/vid/renders?limit=100");
    assert.deepEqual(listed.body.data, [], "nothing was recorded");
  });

  it("takes accounts in turn: B's render finishes before A's third of ten; A's eleventh queued is a 429", async () => {
    const a = await ana.asset(page(1, "busy"));
    const b = await bo.asset(page(1, "other"));
    const before = await ana.credits();
    const accepted: string[] = [];
    let refused: Awaited<ReturnType<typeof ana.render>> | undefined;
    for (let i = 0; i < 14 && !refused; i++) {
      const result = await ana.render({ asset_id: a, fps: 1, aspect_ratio: "1:1" });
      if (result.status === 429) refused = result;
      else {
        assert.equal(result.status, 201, JSON.stringify(result.body));
        accepted.push(String(result.body.render_id));
      }
    }
    assert.ok(refused, "no 429 after 14 renders with --max-queued-per-account 10");
    // 10 queued at most; one or two may have started meanwhile.
    assert.ok(accepted.length >= 10 && accepted.length <= 12, `${accepted.length} accepted`);
    const error = refused.body.error as Json;
    assert.equal(error.code, "vid_too_many_renders");
    assert.match(String(error.message), /10 renders queued.*--max-queued-per-account 10/);
    assert.equal(refused.headers.get("retry-after"), "10");
    assert.equal(await ana.credits(), before - accepted.length, "the refused one is not charged");

    const other = await bo.render({ asset_id: b, fps: 1, aspect_ratio: "1:1" });
    assert.equal(other.status, 201, JSON.stringify(other.body));
    let done: Json = {};
    await until("B's render", async () => {
      done = await bo.get(String(other.body.render_id));
      return done.status === "completed" || done.status === "failed";
    });
    assert.equal(done.status, "completed", String(done.error));
    const finishedBefore = (await Promise.all(accepted.map((id) => ana.get(id))))
      .filter((r) =>
        r.status === "completed" && String(r.completed_at) <= String(done.completed_at)
      );
    assert.ok(
      finishedBefore.length <= 2,
      `${finishedBefore.length} of A's renders finished before B's`,
    );
    for (const id of accepted) await ana.api(`/v3/vid/renders/${id}`, { method: "DELETE" });
  });

  // SQLite's whole-file write lock; PostgreSQL locks rows, and its outage is tested apart.
  (serverEngine() === "sqlite" ? it : it.skip)(
    "stays up and finishes the render while another connection holds the write lock past the busy timeout",
    async () => {
      const asset = await ana.asset(page(2, "locked"));
      const started = await ana.render({ asset_id: asset, fps: 10, aspect_ratio: "1:1" });
      assert.equal(started.status, 201, JSON.stringify(started.body));
      const id = String(started.body.render_id);
      await until("the render to start", async () => (await ana.get(id)).status === "rendering");
      // The server's statements wait 5 s for the lock (BUSY_WAIT_MS, asynchronously), then
      // fail: its progress writes, and its outcome if the render ends meanwhile. The lock is
      // held that long, then until the server has said a write failed so.
      const lock = new DatabaseSync(`${dataDir}/vid.db`);
      /** A probe's status and how long it took, ms. */
      const probe = async (path: string): Promise<{ status: number; ms: number }> => {
        const started = performance.now();
        const response = await fetch(`${server.url}${path}`);
        await response.body?.cancel();
        return { status: response.status, ms: performance.now() - started };
      };
      try {
        lock.exec("begin immediate");
        // A request that writes waits for the lock, and nothing else waits with it: the
        // wait was SQLite's busy timeout, asleep inside the call, and /healthz took 5 s.
        const writing = ana.api("/v3/assets", {
          method: "POST",
          body: JSON.stringify({ size_bytes: 100 }),
        });
        await new Promise((resolve) => setTimeout(resolve, 300));
        const health = await probe("/healthz");
        assert.equal(health.status, 200);
        assert.ok(health.ms < 2000, `/healthz took ${Math.round(health.ms)} ms under the lock`);
        // Past READY_LOCKED_MS of waiting the database is not ready, and /readyz says so at
        // once rather than after the wait.
        await new Promise((resolve) => setTimeout(resolve, 1200));
        const ready = await probe("/readyz");
        assert.equal(ready.status, 503);
        assert.ok(ready.ms < 2000, `/readyz took ${Math.round(ready.ms)} ms under the lock`);
        // The write gives up after BUSY_WAIT_MS: a 503 with Retry-After, never a 500.
        const written = await writing;
        assert.equal(written.status, 503, JSON.stringify(written.body));
        assert.ok(Number(written.headers.get("retry-after")) > 0);
        await new Promise((resolve) => setTimeout(resolve, 3500));
        await until(
          "a write of the server to fail on the lock",
          () => /database is locked/.test(server.errors()),
          30000,
        );
        lock.exec("commit");
      } finally {
        lock.close();
      }
      let done: Json = {};
      await until("the render to end", async () => {
        done = await ana.get(id);
        return done.status === "completed" || done.status === "failed";
      });
      assert.equal(done.status, "completed", String(done.error));
      assert.match(server.errors(), /database is locked/, "the busy database was not hit");
      assert.equal((await ana.api("/v3/me")).status, 200);
      assert.equal(server.child.pid > 0 && await isRunning(server), true, "the server exited");
    },
  );

  it("refuses and logs a state move outside the table: a render deleted mid-flight stays deleted", async () => {
    const slow = await ana.asset(page(3, "slow"));
    const started = await ana.render({ asset_id: slow, fps: 10, aspect_ratio: "1:1" });
    assert.equal(started.status, 201, JSON.stringify(started.body));
    const id = String(started.body.render_id);
    await until("the render to start", async () => (await ana.get(id)).status === "rendering");
    const deleted = await ana.api(`/v3/vid/renders/${id}`, { method: "DELETE" });
    assert.equal(deleted.body.refunded_credits, 3);
    await until(
      "the queue's refused move",
      () => new RegExp(`render ${id}: deleted -> (failed|completed) refused`).test(server.errors()),
      30000,
    );
    const all = await ana.api("/v3/vid/renders?all=1&limit=100");
    const row = (all.body.data as Json[]).find((r) => r.render_id === id);
    assert.equal(row?.status, "deleted");
  });
});

describe("vid server webhooks: a transactional outbox", () => {
  it("resends a delivery killed (-9) in its retry backoff after the restart, under one delivery id, and finishes one in flight on SIGTERM", async () => {
    const dataDir = await serverDataDir("vid-outbox-test-");
    const key = await createAccount(dataDir, "hooks@example.com", { credits: 100 });
    /** What the receiver saw: each request, and how it answered. */
    const received: {
      id: string | null;
      attempt: string | null;
      body: string;
      sig: string;
      answer: number;
    }[] = [];
    const answers: (number | "slow")[] = [503];
    const arrived: (() => void)[] = [];
    const hook = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      async (request) => {
        const body = await request.text();
        const next = answers.shift() ?? 200;
        const answer = next === "slow" ? 200 : next;
        received.push({
          id: request.headers.get("vid-delivery-id"),
          attempt: request.headers.get("vid-delivery-attempt"),
          body,
          sig: request.headers.get("vid-signature") ?? "",
          answer,
        });
        arrived.shift()?.();
        if (next === "slow") await new Promise((resolve) => setTimeout(resolve, 1500));
        return new Response(null, { status: answer });
      },
    );
    const nextArrival = (): Promise<void> => new Promise((resolve) => arrived.push(resolve));
    const delivery = async (renderId: string) => ({
      ...await serverDatabaseRow(
        dataDir,
        "select id, status, attempts from webhook_deliveries where render_id = ?",
        renderId,
      ),
    });

    let server = await startServerProcess(dataDir, ["--allow-http-callbacks"]);
    try {
      const c = client(() => server, key);
      const asset = await c.asset(page(1, "hooked"));
      const callback = `http://127.0.0.1:${hook.addr.port}/hook`;
      const first = nextArrival();
      const render = await c.render({
        asset_id: asset,
        fps: 1,
        aspect_ratio: "1:1",
        callback_url: callback,
        callback_id: "order-7",
      });
      assert.equal(render.status, 201, JSON.stringify(render.body));
      const renderId = String(render.body.render_id);
      await first;
      // Attempt 1 got a 503; the retry is due 1 s (±20 %) later. Kill the server before.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await server.stop("SIGKILL");
      assert.equal(received.length, 1);
      const pending = await delivery(renderId);
      assert.deepEqual({ status: pending.status, attempts: pending.attempts }, {
        status: "pending",
        attempts: 1,
      });

      server = await startServerProcess(dataDir, ["--allow-http-callbacks"]);
      await until("the resent delivery", () => received.some((r) => r.answer === 200), 30000);
      // Long enough for a duplicate to show up, were one sent.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.deepEqual(received.map((r) => [r.attempt, r.answer]), [["1", 503], ["2", 200]]);
      const secret = (await Deno.readTextFile(`${dataDir}/secret`)).trim();
      for (const request of received) {
        assert.equal(request.id, pending.id, "one delivery id on every attempt");
        const payload = JSON.parse(request.body);
        assert.equal(payload.delivery_id, request.id, "the signed body carries the id");
        assert.ok(await verifyWebhook(secret, request.sig, request.body));
        assert.equal(payload.render_id, renderId);
        assert.equal(payload.status, "completed");
        assert.equal(payload.callback_id, "order-7");
      }
      const video = await fetch(JSON.parse(received[1].body).video_url);
      assert.equal(video.status, 200, "the resent video_url is minted by the new server");
      await video.body?.cancel();
      assert.equal((await delivery(renderId)).status, "delivered");

      // SIGTERM while a delivery is in flight: the server waits for its answer.
      answers.push("slow");
      const inFlight = nextArrival();
      const second = await c.render({
        asset_id: asset,
        fps: 1,
        aspect_ratio: "1:1",
        callback_url: callback,
      });
      const secondId = String(second.body.render_id);
      await inFlight;
      const status = await server.stop("SIGTERM");
      assert.equal(status.code, 0);
      assert.deepEqual({ ...await delivery(secondId), id: undefined }, {
        id: undefined,
        status: "delivered",
        attempts: 1,
      });
      assert.equal(received.length, 3);
    } finally {
      await server.stop();
      await hook.shutdown();
      await Deno.remove(dataDir, { recursive: true });
    }
  });
});
