/**
 * Operating `vid server`: stored files on S3 (a real s3rver on loopback) instead of the
 * data folder, and a graceful SIGTERM that puts the render in flight back in the queue
 * for the next start.
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
      } finally {
        await server.stop();
      }
    } finally {
      client.destroy();
      await s3.close();
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
});
