/**
 * Operating `vid server`: stored files on S3 (a real s3rver on loopback) instead of the
 * data folder, a graceful SIGTERM that puts the render in flight back in the queue for the
 * next start, and the probes and metrics an operator's tooling reads (`/healthz`, `/readyz`
 * going 503 when the storage goes away, `/metrics` parsed as Prometheus would).
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { CreateBucketCommand, ListObjectsCommand, S3Client } from "@aws-sdk/client-s3";
import { zipSync } from "fflate";
import { DatabaseSync } from "node:sqlite";
import { compositionHtml, probeVideo, runVid } from "../helpers.ts";
import { startServerProcess } from "../server_process.ts";
import { S3_CREDENTIALS, startS3Server } from "../s3_server.ts";
import { parsePrometheusText, sampleValue } from "../prometheus_text.ts";

/** A metrics token as an operator would generate it. */
const METRICS_TOKEN = "mt_0123456789abcdef0123456789abcdef";

async function scrape(base: string, token = METRICS_TOKEN) {
  const response = await fetch(`${base}/metrics`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  return parsePrometheusText(await response.text());
}

async function readyz(base: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}/readyz`);
  return { status: response.status, body: await response.json() };
}

async function account(dataDir: string): Promise<string> {
  await runVid([
    "server",
    "users",
    "add",
    "ops@example.com",
    "--password",
    "longenough",
    "--data-dir",
    dataDir,
  ]);
  return (await runVid(["server", "keys", "create", "ops@example.com", "--data-dir", dataDir]))
    .stdout.trim();
}

async function submit(base: string, key: string, html: string, fps: number): Promise<string> {
  const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
  const zip = new Uint8Array(zipSync({ "index.html": new TextEncoder().encode(html) }));
  const asset = await (await fetch(`${base}/v3/assets`, {
    method: "POST",
    headers,
    body: JSON.stringify({ size_bytes: zip.length }),
  })).json();
  const put = await fetch(asset.upload_url, { method: "PUT", body: zip });
  assert.equal(put.status, 200, await put.text());
  const render = await (await fetch(`${base}/v3/vid/renders`, {
    method: "POST",
    headers,
    body: JSON.stringify({ asset_id: asset.asset_id, fps, aspect_ratio: "1:1" }),
  })).json();
  return render.render_id;
}

async function poll(base: string, key: string, id: string, until: (status: string) => boolean) {
  const deadline = Date.now() + 90000;
  while (Date.now() < deadline) {
    const render = await (await fetch(`${base}/v3/vid/renders/${id}`, {
      headers: { authorization: `Bearer ${key}` },
    })).json();
    if (until(render.status)) return render;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`render ${id} never reached the state`);
}

const FADE = (seconds: number) =>
  compositionHtml(
    `<div style="position:absolute;inset:0;animation:f ${seconds}s linear both"></div>`,
    {
      duration: seconds,
      head: `<style>@keyframes f { from { background: #000 } to { background: #f00 } }</style>`,
    },
  );

describe("vid server operations", () => {
  it("stores projects, videos and thumbnails on S3 with --storage s3://…", async () => {
    const s3 = await startS3Server();
    const dataDir = await Deno.makeTempDir({ prefix: "vid-server-s3-" });
    let s3Closed = false;
    const client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    try {
      await client.send(new CreateBucketCommand({ Bucket: "renders" }));
      const key = await account(dataDir);
      const server = await startServerProcess(
        dataDir,
        ["--storage", `s3://renders/vid?endpoint=${s3.endpoint}&path_style=1`],
        {
          AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
        },
      );
      try {
        const id = await submit(server.url, key, FADE(0.5), 10);
        const done = await poll(server.url, key, id, (s) => s === "completed" || s === "failed");
        assert.equal(done.status, "completed", done.error);
        const listed = await client.send(
          new ListObjectsCommand({ Bucket: "renders", Prefix: "vid/" }),
        );
        const keys = (listed.Contents ?? []).map((o) => o.Key).sort();
        assert.ok(
          keys.some((k) => /^vid\/assets\/ast_[0-9a-f]+\/project\.zip$/.test(k!)),
          keys.join(),
        );
        assert.ok(keys.includes(`vid/renders/${id}/video.mp4`), keys.join());
        assert.ok(keys.includes(`vid/renders/${id}/thumbnail.jpg`), keys.join());
        const file = await Deno.makeTempFile({ suffix: ".mp4" });
        await Deno.writeFile(
          file,
          new Uint8Array(await (await fetch(done.video_url)).arrayBuffer()),
        );
        assert.equal((await probeVideo(file)).frames, 5);
        await Deno.remove(file);
        assert.deepEqual(await readyz(server.url), {
          status: 200,
          body: { status: "ready", checks: { database: "ok", storage: "ok", disk: "ok" } },
        });
        await s3.close();
        s3Closed = true;
        const away = await readyz(server.url);
        assert.equal(away.status, 503);
        assert.match(
          String((away.body.checks as Record<string, string>).storage),
          /^the bucket renders is not reachable/,
        );
      } finally {
        await server.stop();
      }
    } finally {
      client.destroy();
      if (!s3Closed) await s3.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  });

  it("stops gracefully on SIGTERM: the render in flight is re-queued and finished after restart", async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "vid-server-term-" });
    try {
      const key = await account(dataDir);
      const first = await startServerProcess(dataDir);
      const id = await submit(first.url, key, FADE(4), 10);
      await poll(first.url, key, id, (s) => s === "rendering");
      const stopped = Date.now();
      const status = await first.stop("SIGTERM");
      assert.equal(status.code, 0, "SIGTERM is a clean exit");
      assert.ok(Date.now() - stopped < 15000, "shutdown should not wait for the render to finish");
      assert.match(first.output(), /in-flight renders go back to the queue/);
      const db = new DatabaseSync(`${dataDir}/vid.db`);
      const row = db.prepare("select status, progress from renders where id = ?").get(id);
      db.close();
      assert.deepEqual({ ...row }, { status: "queued", progress: 0 }, "back in the queue");
      const second = await startServerProcess(dataDir);
      try {
        const done = await poll(second.url, key, id, (s) => s === "completed" || s === "failed");
        assert.equal(done.status, "completed", done.error);
      } finally {
        await second.stop();
      }
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  });

  it("answers /healthz, /readyz and /metrics; a render moves the counters; no storage folder is a 503", async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "vid-server-probes-" });
    try {
      const key = await account(dataDir);
      const server = await startServerProcess(dataDir, [], { VID_METRICS_TOKEN: METRICS_TOKEN });
      try {
        const health = await fetch(`${server.url}/healthz`);
        assert.equal(health.status, 200);
        assert.deepEqual(await health.json(), { status: "ok" });
        assert.deepEqual(await readyz(server.url), {
          status: 200,
          body: { status: "ready", checks: { database: "ok", storage: "ok", disk: "ok" } },
        });

        for (const authorization of [undefined, "Bearer wrong-token-0123456789", `Bearer ${key}`]) {
          const refused = await fetch(`${server.url}/metrics`, {
            headers: authorization ? { authorization } : {},
          });
          assert.equal(refused.status, 401, `${authorization}`);
          assert.equal((await refused.json()).error.code, "vid_unauthorized");
        }
        let m = await scrape(server.url);
        assert.equal(sampleValue(m, "vid_workers"), 1);
        assert.equal(sampleValue(m, "vid_renders_total", { status: "completed" }), 0);
        assert.equal(
          sampleValue(m, "vid_render_duration_seconds_count", { status: "completed" }),
          0,
        );

        // 2 s at 10 fps: 20 frames. While it renders, a scrape sees it rendering and busy.
        const id = await submit(server.url, key, FADE(2), 10);
        const deadline = Date.now() + 60000;
        while (sampleValue(m, "vid_workers_busy") === 0) {
          assert.ok(Date.now() < deadline, "never saw the worker busy");
          m = await scrape(server.url);
          assert.equal(
            sampleValue(m, "vid_renders_total", { status: "completed" }),
            0,
            "missed it",
          );
        }
        assert.equal(sampleValue(m, "vid_queue_depth", { state: "rendering" }), 1);
        assert.equal(sampleValue(m, "vid_queue_depth", { state: "queued" }), 0);
        const done = await poll(server.url, key, id, (s) => s === "completed" || s === "failed");
        assert.equal(done.status, "completed", done.error);
        m = await scrape(server.url);
        assert.equal(sampleValue(m, "vid_renders_total", { status: "completed" }), 1);
        assert.equal(sampleValue(m, "vid_renders_total", { status: "failed" }), 0);
        assert.equal(sampleValue(m, "vid_frames_rendered_total"), 20);
        assert.equal(sampleValue(m, "vid_workers_busy"), 0);
        assert.equal(sampleValue(m, "vid_queue_depth", { state: "rendering" }), 0);
        assert.equal(
          sampleValue(m, "vid_render_duration_seconds_count", { status: "completed" }),
          1,
        );
        const seconds = sampleValue(m, "vid_render_duration_seconds_sum", { status: "completed" });
        assert.ok(seconds > 0 && seconds < 60, `render took ${seconds} s`);
        assert.equal(
          sampleValue(m, "vid_render_duration_seconds_bucket", { status: "completed", le: "60" }),
          1,
        );

        // The storage folder goes away (an unmounted share): not ready, with the reason.
        await Deno.rename(`${dataDir}/storage`, `${dataDir}/storage.away`);
        const away = await readyz(server.url);
        assert.equal(away.status, 503);
        assert.deepEqual(away.body, {
          status: "unready",
          checks: { database: "ok", storage: "the storage folder is missing", disk: "ok" },
        });
        const again = await fetch(`${server.url}/readyz`);
        assert.equal(again.headers.get("retry-after"), "5");
        await again.body?.cancel();
        const alive = await fetch(`${server.url}/healthz`);
        assert.equal(alive.status, 200, "still alive");
        await alive.body?.cancel();
        await Deno.rename(`${dataDir}/storage.away`, `${dataDir}/storage`);
        assert.equal((await readyz(server.url)).status, 200, "ready once it is back");
        assert.match(server.errors(), /not ready: storage: the storage folder is missing/);
        assert.match(server.errors(), /ready again/);
      } finally {
        await server.stop();
      }
      assert.ok(!server.output().includes(METRICS_TOKEN), "the token is never printed");
      assert.ok(!server.errors().includes(METRICS_TOKEN), "the token is never printed");
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  });

  it("refuses a short --metrics-token with exit 2, naming the flag and not echoing it", async () => {
    const result = await runVid(["server", "--metrics-token", "hunter2hunter2"]);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /--metrics-token \(env VID_METRICS_TOKEN\) must be at least 16/);
    assert.ok(!result.stderr.includes("hunter2hunter2"));
  });
});
