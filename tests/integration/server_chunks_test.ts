/**
 * A hosted render in chunks (src/server/chunks.ts) writes the bytes of the single-process
 * server render (the local backend, `renderComposition`) of the same request: its chunks
 * rendered one by one into the server's storage, each on its own page and browser session
 * as separate workers would, then joined by the assembler from storage alone.
 *
 * Real Chromium, ffmpeg and file storage, no HTTP server: the render job is built as the
 * queue builds it. Fixture: 320x180 at 10 fps, 23 frames (two 10-frame GOP grid cells and a
 * 3-frame one), a box sliding and changing colour so every frame differs, a tone, and the
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
import { openDatabase } from "../../src/server/db.ts";
import type { Database } from "../../src/server/database/mod.ts";
import { FsStorage } from "../../src/server/storage.ts";
import { localBackend } from "../../src/server/local_backend.ts";
import type { RenderJob, RenderRequest } from "../../src/server/render_backend.ts";
import {
  assembleStoredRender,
  ChunkMissingError,
  renderStoredChunk,
  serverChunkPlan,
} from "../../src/server/chunks.ts";
import { MissingAssetError } from "../../src/render/session.ts";
import { compositionHtml, frameHashes, lavfi, probeVideo } from "../helpers.ts";

const FPS = 10;
const FRAMES = 23;
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
  animation: slide 2.3s linear forwards; }
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

  for (const [format, chunkSize] of [["mp4", 10], ["webm", 20]] as const) {
    it(`${format}: chunks rendered apart and joined from storage give the single-process render's bytes and thumbnail`, async () => {
      await backend.render(ctx, job(`rnd_single_${format}`, format), new AbortController().signal);
      const single = await stored(`rnd_single_${format}`, format);
      const info = await probeVideo(single.video);
      assert.equal(info.frames, FRAMES);
      assert.ok(info.hasAudio, "the fixture has a soundtrack");

      const split = await chunked(`rnd_chunked_${format}`, format, chunkSize);
      assert.deepEqual(
        split.plan.map((c) => [c.from, c.to]),
        chunkSize === 10 ? [[0, 9], [10, 19], [20, 22]] : [[0, 19], [20, 22]],
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
    const plan = serverChunkPlan(render, { chunkSize: 10 });
    await renderStoredChunk(ctx, render, plan[0]);
    await assert.rejects(
      assembleStoredRender(ctx, render, plan),
      (error) =>
        error instanceof ChunkMissingError && error.index === 1 &&
        /chunk 1 \(frames 10-19\) is not stored/.test(error.message),
    );
    assert.equal(await ctx.storage.exists("renders/rnd_gap/video.mp4"), false);

    const broken = job("rnd_missing", "mp4", "ast_missing");
    await assert.rejects(
      renderStoredChunk(ctx, broken, serverChunkPlan(broken, { chunkSize: 10 })[1]),
      (error) => error instanceof MissingAssetError && /gone\.wav/.test(error.message),
    );
    assert.equal(await ctx.storage.exists("renders/rnd_missing/chunks/1.json"), false);
  });
});
