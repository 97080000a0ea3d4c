/**
 * A hosted render in chunks (src/server/queue/chunks.ts) writes the bytes of the single-process
 * server render (the local backend, `renderComposition`) of the same request: its chunks
 * rendered one by one into the server's storage, each on its own page and browser session
 * as separate workers would, then joined by the assembler from storage alone.
 *
 * Through a real server process with two workers, the chunks run on both, and `/metrics`
 * counts the helping worker busy and each chunk's duration.
 *
 * Real Chromium, ffmpeg and file storage, no HTTP server: the render job is built as the
 * queue builds it. Fixture: 320x180 at 5 fps, 12 frames (two 5-frame GOP grid cells and a
 * 2-frame one), a box sliding and changing colour so every frame differs, a tone, and the
 * page's clock printed at load, which would differ between chunks rendered a second apart
 * if each worker started its own clock.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { zipSync } from "fflate";
import { type ServerContext, serverLimits } from "../../src/server/context.ts";
import { openDatabase } from "../../src/server/database/mod.ts";
import type { Database } from "../../src/server/database/mod.ts";
import { FsStorage } from "../../src/server/storage/storage_file.ts";
import { localBackend } from "../../src/server/queue/local_backend.ts";
import type { RenderJob, RenderRequest } from "../../src/server/queue/render_backend.ts";
import {
  assembleStoredRender,
  ChunkMissingError,
  renderStoredChunk,
  serverChunkPlan,
} from "../../src/server/queue/chunks.ts";
import { MissingAssetError } from "../../src/render/session.ts";
import { jobOf } from "../../src/server/queue/queue.ts";
import type { Row } from "../../src/server/database/mod.ts";
import { parsePrometheusText, sampleValue } from "../prometheus_text.ts";
import { compositionHtml, frameHashes, lavfi, probeVideo, waitFor } from "../helpers.ts";
import {
  createAccount,
  serverDatabaseRow,
  serverDataDir,
  type ServerProcess,
  startServerProcess,
} from "../server_process.ts";

const FPS = 5;
const FRAMES = 12;
/** Frames per chunk: one GOP grid cell, so the plan is [0-4], [5-9], [10-11]. */
const CHUNK = 5;
/** The render's creation, as the queue reads it from its row. */
const EPOCH_MS = 1_700_000_000_000;

const HTML = compositionHtml(
  `<div id="box"></div><div id="clock"></div>
<audio src="tone.wav" data-start="0" data-volume="0.5"></audio>
<script>document.getElementById("clock").textContent = String(Date.now());</script>`,
  {
    id: "chunks",
    duration: FRAMES / FPS,
    head: `<style>
#box { position: absolute; left: 0; top: 40px; width: 60px; height: 60px; background: #f00;
  animation: slide 2.4s linear forwards; }
@keyframes slide { 50% { background: #0f0; } to { left: 260px; background: #00f; } }
#clock { position: absolute; left: 10px; top: 130px; color: #fff; font: 20px monospace; }
</style>`,
  },
);

/** framemd5 of a stream's packets as stored (`-c copy`): bytes and timestamps. */
async function packets(file: string, stream: "v" | "a"): Promise<string[]> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-v", "error", "-i", file, "-map", `0:${stream}:0`, "-c", "copy", "-f", "framemd5", "-"],
    stdout: "piped",
  }).output();
  assert.ok(out.success, `ffmpeg read the ${stream} packets of ${file}`);
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l && !l.startsWith("#"));
}

async function sha256(file: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(file));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

describe("a hosted render in chunks = the single-process server render", () => {
  let dir: string;
  let db: Database;
  let ctx: ServerContext;
  const backend = localBackend(1);

  before(async () => {
    dir = await Deno.makeTempDir({ prefix: "vid-server-chunks-" });
    db = await openDatabase(join(dir, "vid.db"));
    ctx = {
      db,
      storage: new FsStorage(join(dir, "storage")),
      secret: "s",
      publicUrl: "http://127.0.0.1",
      workDir: join(dir, "work"),
      allowHttpCallbacks: false,
      allowPrivateUrls: false,
      limits: serverLimits({}, 1),
      wake: () => {},
    };
    await Deno.mkdir(ctx.workDir, { recursive: true });
    const tone = join(dir, "tone.wav");
    await lavfi("sine=frequency=440:duration=3", tone);
    const enc = new TextEncoder();
    const files = { "index.html": enc.encode(HTML), "tone.wav": await Deno.readFile(tone) };
    await ctx.storage.putBytes("assets/ast_chunks/project.zip", zipSync(files));
    const missing = { "index.html": enc.encode(HTML.replace('src="tone.wav"', 'src="gone.wav"')) };
    await ctx.storage.putBytes("assets/ast_missing/project.zip", zipSync(missing));
  });

  after(async () => {
    backend.close();
    await db?.close();
    if (dir) await Deno.remove(dir, { recursive: true });
  });

  function job(id: string, format: RenderRequest["format"], assetId = "ast_chunks"): RenderJob {
    return {
      id,
      assetId,
      request: {
        composition: "index.html",
        fps: FPS,
        quality: "standard",
        format,
        variables: {},
        strict_variables: false,
      },
      width: 320,
      height: 180,
      durationSeconds: FRAMES / FPS,
      epochMs: EPOCH_MS,
      executionArn: null,
      setProgress: () => {},
    };
  }

  /** Downloads what a render stored: its video and thumbnail. */
  async function stored(id: string, format: string): Promise<{ video: string; thumb: string }> {
    const video = join(dir, `${id}.${format}`);
    const thumb = join(dir, `${id}.jpg`);
    await ctx.storage.download(`renders/${id}/video.${format}`, video);
    await ctx.storage.download(`renders/${id}/thumbnail.jpg`, thumb);
    return { video, thumb };
  }

  async function chunked(id: string, format: RenderRequest["format"], chunkSize: number) {
    const render = job(id, format);
    const plan = serverChunkPlan(render, { chunkSize });
    // Last chunk first: the assembler relies on storage alone, not on the order of work.
    for (const chunk of [...plan].reverse()) {
      const result = await renderStoredChunk(ctx, render, chunk);
      assert.equal(result.frames, chunk.frames);
      assert.equal(result.soundtrack, chunk.index === 0 ? true : undefined);
    }
    await assembleStoredRender(ctx, render, plan);
    return { plan, ...(await stored(id, format)) };
  }

  for (const [format, chunkSize] of [["mp4", CHUNK], ["webm", 2 * CHUNK]] as const) {
    it(`${format}: chunks rendered apart and joined from storage give the single-process render's bytes and thumbnail`, async () => {
      await backend.render(ctx, job(`rnd_single_${format}`, format), new AbortController().signal);
      const single = await stored(`rnd_single_${format}`, format);
      const info = await probeVideo(single.video);
      assert.equal(info.frames, FRAMES);
      assert.ok(info.hasAudio, "the fixture has a soundtrack");

      const split = await chunked(`rnd_chunked_${format}`, format, chunkSize);
      assert.deepEqual(
        split.plan.map((c) => [c.from, c.to]),
        chunkSize === CHUNK ? [[0, 4], [5, 9], [10, 11]] : [[0, 9], [10, 11]],
      );
      if (format === "mp4") {
        assert.equal(await sha256(split.video), await sha256(single.video), "video bytes");
      }
      // Matroska writes a random segment id per file: its streams are compared packet by
      // packet, bytes and timestamps.
      for (const stream of ["v", "a"] as const) {
        const expected = await packets(single.video, stream);
        assert.ok(expected.length > 0);
        assert.deepEqual(await packets(split.video, stream), expected, `${stream} packets`);
      }
      assert.deepEqual(await frameHashes(split.video), await frameHashes(single.video));
      assert.equal(await sha256(split.thumb), await sha256(single.thumb), "thumbnail bytes");
    });
  }

  it("the assembler names a chunk that is not stored; a file missing from the project fails the chunk", async () => {
    const render = job("rnd_gap", "mp4");
    const plan = serverChunkPlan(render, { chunkSize: CHUNK });
    // Chunks 0 and 2 of the mp4 step's render (same plan; the assembler leaves chunks
    // stored), not chunk 1: a gap in the middle, and no chunk rendered again for it.
    for (const name of ["0.json", "0.mp4", "2.json", "2.mp4"]) {
      const object = await ctx.storage.get(`renders/rnd_chunked_mp4/chunks/${name}`);
      assert.ok(object, `the mp4 step stored chunks/${name}`);
      const bytes = new Uint8Array(await new Response(object.body).arrayBuffer());
      await ctx.storage.putBytes(`renders/rnd_gap/chunks/${name}`, bytes);
    }
    await assert.rejects(
      assembleStoredRender(ctx, render, plan),
      (error) =>
        error instanceof ChunkMissingError && error.index === 1 &&
        /chunk 1 \(frames 5-9\) is not stored/.test(error.message),
    );
    assert.equal(await ctx.storage.exists("renders/rnd_gap/video.mp4"), false);

    const broken = job("rnd_missing", "mp4", "ast_missing");
    await assert.rejects(
      renderStoredChunk(ctx, broken, serverChunkPlan(broken, { chunkSize: CHUNK })[1]),
      (error) => error instanceof MissingAssetError && /gone\.wav/.test(error.message),
    );
    assert.equal(await ctx.storage.exists("renders/rnd_missing/chunks/1.json"), false);
  });
});

type Json = Record<string, unknown>;

async function until(what: string, check: () => Promise<boolean> | boolean, ms = 120_000) {
  await waitFor(what, check, { timeoutMs: ms });
}

describe("vid server --chunk-size: one render's chunks across the workers", () => {
  let dataDir: string;
  let server: ServerProcess;
  let key: string;
  let tone: Uint8Array;

  before(async () => {
    dataDir = await serverDataDir("vid-chunks-server-");
    key = await createAccount(dataDir, "ana@example.com", { credits: 1000 });
    server = await startServerProcess(dataDir, ["--workers", "2", "--chunk-size", String(CHUNK)]);
    const file = join(dataDir, "tone.wav");
    await lavfi("sine=frequency=440:duration=3", file);
    tone = await Deno.readFile(file);
  });

  after(async () => {
    await server?.stop();
    if (dataDir) await Deno.remove(dataDir, { recursive: true });
  });

  async function api(
    path: string,
    init: RequestInit = {},
  ): Promise<{ status: number; body: Json }> {
    const response = await fetch(`${server.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : {} };
  }

  async function asset(html: string): Promise<string> {
    const zip = zipSync({ "index.html": new TextEncoder().encode(html), "tone.wav": tone });
    const created = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: zip.length }),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const put = await fetch(String(created.body.upload_url), { method: "PUT", body: zip });
    assert.equal(put.status, 200, await put.text());
    return String(created.body.asset_id);
  }

  async function finished(id: string): Promise<Json> {
    let render: Json = {};
    await until(`render ${id}`, async () => {
      render = (await api(`/v3/vid/renders/${id}`)).body;
      return render.status === "completed" || render.status === "failed";
    });
    return render;
  }

  /** This server's `/metrics`, parsed as Prometheus would. */
  async function scrape(): Promise<ReturnType<typeof parsePrometheusText>> {
    const response = await fetch(`${server.url}/metrics`);
    assert.equal(response.status, 200);
    return parsePrometheusText(await response.text());
  }

  const credits = async (): Promise<number> => Number((await api("/v3/me")).body.credits);

  it("renders the chunks on both workers, joins them once, charges once, and writes the single-process render's bytes", async () => {
    const before = await credits();
    const submitted = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: await asset(HTML), fps: FPS, aspect_ratio: "1:1" }),
    });
    assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
    const id = String(submitted.body.render_id);
    // While it renders, the worker helping with a chunk of the other's render counts as busy.
    let busy = 0;
    await until("both workers busy in /metrics", async () => {
      const m = await scrape();
      busy = Math.max(busy, sampleValue(m, "vid_workers_busy"));
      assert.equal(sampleValue(m, "vid_renders_total", { status: "completed" }), 0, "missed it");
      return busy === 2;
    }, 60_000);
    const render = await finished(id);
    assert.equal(render.status, "completed", String(render.error));
    assert.equal(render.progress, 1);
    const m = await scrape();
    assert.equal(sampleValue(m, "vid_workers_busy"), 0);
    assert.equal(sampleValue(m, "vid_renders_total", { status: "completed" }), 1);
    assert.equal(sampleValue(m, "vid_frames_rendered_total"), FRAMES, "frames counted once");
    assert.equal(
      sampleValue(m, "vid_chunk_duration_seconds_count", { status: "completed" }),
      3,
      "one duration per chunk",
    );
    assert.equal(sampleValue(m, "vid_chunk_duration_seconds_count", { status: "failed" }), 0);
    const chunkSeconds = sampleValue(m, "vid_chunk_duration_seconds_sum", { status: "completed" });
    assert.ok(chunkSeconds > 0 && chunkSeconds < 120, `chunks took ${chunkSeconds} s`);
    assert.equal(
      sampleValue(m, "vid_chunk_duration_seconds_bucket", { status: "completed", le: "+Inf" }),
      3,
    );
    const charged = before - await credits();
    assert.ok(charged > 0, "the render is charged");

    const chunks = await serverDatabaseRow(
      dataDir,
      "select count(*) as n, count(distinct worker) as workers, sum(frames) as frames, " +
        "min(status) as lo, max(status) as hi, max(attempts) as attempts " +
        "from render_chunks where render_id = ?",
      id,
    );
    assert.deepEqual(
      { ...chunks },
      { n: 3, workers: 2, frames: FRAMES, lo: "done", hi: "done", attempts: 1 },
      "three chunks, rendered by both workers, each once",
    );
    const log = server.output();
    assert.match(
      log,
      new RegExp(`render ${id}: chunk 0 \\(frames 0-4\\) rendered by \\S+/[12] in`),
    );
    assert.match(log, new RegExp(`render ${id}: chunk 2 \\(frames 10-11\\) rendered by`));
    const storage = new FsStorage(join(dataDir, "storage"));
    assert.equal(await storage.exists(`renders/${id}/chunks/0.mp4`), false, "chunks removed");

    // The same request rendered whole, as a server without --chunk-size renders its row.
    const row = await serverDatabaseRow(dataDir, "select * from renders where id = ?", id);
    const db = await openDatabase(join(dataDir, "reference.db"));
    const ctx: ServerContext = {
      db,
      storage,
      secret: "s",
      publicUrl: "http://127.0.0.1",
      workDir: join(dataDir, "reference-work"),
      allowHttpCallbacks: false,
      allowPrivateUrls: false,
      limits: serverLimits({}, 1),
      wake: () => {},
    };
    await Deno.mkdir(ctx.workDir, { recursive: true });
    const single = localBackend(1);
    try {
      const job = { ...jobOf(ctx, row as Row), id: "rnd_reference" };
      await single.render(ctx, job, new AbortController().signal);
    } finally {
      single.close();
      await db.close();
    }
    const [mine, reference] = [join(dataDir, "chunked.mp4"), join(dataDir, "single.mp4")];
    await storage.download(`renders/${id}/video.mp4`, mine);
    await storage.download("renders/rnd_reference/video.mp4", reference);
    assert.equal((await probeVideo(mine)).frames, FRAMES);
    assert.equal(await sha256(mine), await sha256(reference), "video bytes");
  });

  it("a chunk that fails fails the render once, refunded, naming the chunk and the file", async () => {
    const before = await credits();
    const broken = HTML.replace(
      "</body>",
      `<script>document.body.append(Object.assign(new Image(), { src: "img/" + "gone.png" }));` +
        `</script></body>`,
    );
    const submitted = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: await asset(broken), fps: FPS, aspect_ratio: "1:1" }),
    });
    assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
    const id = String(submitted.body.render_id);
    const render = await finished(id);
    assert.equal(render.status, "failed");
    assert.match(
      String(render.error),
      /chunk \d \(frames \d+-\d+\) failed: index\.html uses a file missing from the project: \/?img\/gone\.png/,
    );
    assert.ok(!String(render.error).includes(dataDir), String(render.error));
    assert.equal(await credits(), before, "refunded once");
    const attempts = await serverDatabaseRow(
      dataDir,
      "select max(attempts) as attempts from render_chunks where render_id = ?",
      id,
    );
    assert.equal(attempts?.attempts, 1, "no chunk is tried again");
  });
});
