/**
 * A hosted render in chunks: the parts a render's work splits into when `vid server` spreads
 * one render over several workers. {@linkcode serverChunkPlan} cuts it with the planner of
 * every other path (`chunkPlan`, whole GOP grid cells), {@linkcode renderStoredChunk} renders
 * one chunk on any worker into the shared storage, and {@linkcode assembleStoredRender} joins
 * the stored chunks with `assembleVideo` into the render's video and thumbnail.
 *
 * The result is the bytes the single-process render (`local_backend.ts`, `renderComposition`)
 * of the same request writes, whatever the plan and whichever workers rendered the chunks:
 * each grid cell is its own encoder run, so a cell's bytes do not depend on its chunk; each
 * chunk gets a fresh page as `renderComposition`'s workers give theirs (the same
 * `runWorkers`); the page clock starts at the render's creation ({@linkcode RenderJob.epochMs})
 * on every worker; and the soundtrack is mixed once, for the whole timeline, by the worker of
 * chunk 0, which has the page and its media, with the arguments `renderComposition` mixes
 * with. The assembler needs neither the project nor a browser: it downloads the chunks and
 * that soundtrack, joins and muxes.
 *
 * Stored under the render, beside its video:
 *
 * ```text
 * renders/<id>/chunks/<index>.<format>   the encoded chunk (no audio)
 * renders/<id>/chunks/<index>.json       its StoredChunk: frames, bytes, capture path
 * renders/<id>/chunks/soundtrack.wav     chunk 0's mix of the whole timeline, when audible
 * ```
 *
 * @module
 */

import { mkdtemp, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import {
  frameCountOf,
  frameRateValue,
  frameTime,
  parseFrameRate,
} from "../../composition/frame_rate.ts";
import { assembleVideo, mixSoundtrack } from "../../render/assemble.ts";
import type { BrowserPool } from "../../render/capture_mode.ts";
import { type Chunk, chunkPlan, DEFAULT_CHUNK_SIZE } from "../../render/chunk_plan.ts";
import { requireFfmpeg } from "../../render/system.ts";
import { ChunkFailedError } from "../../render/render.ts";
import { openRenderSession, prepareComposition } from "../../render/session.ts";
import { runWorkers } from "../../render/workers.ts";
import { CONTENT_TYPES } from "../../util/mime.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";
import type { ServerContext } from "../context.ts";
import { unpackProject } from "./unpack_project.ts";
import type { RenderJob } from "./render_backend.ts";
import { thumbnailFromVideo } from "./thumbnail.ts";
import { grantToProcessUser } from "../../render/process_runner.ts";

/** How a render is cut into chunks. */
export interface ServerChunkOptions {
  /** Frames per chunk, rounded to whole GOP grid cells by the planner. @default 240 */
  chunkSize?: number;
  /**
   * Chunks of one render at most. @default as many as `chunkSize` makes: chunk rows cost a
   * server nothing, unlike the distributed path's function invocations (capped at 16)
   */
  maxParallelChunks?: number;
}

/**
 * The chunks of a hosted render: `chunkPlan` over its frames (its duration at its rate,
 * as the API counted them when it was submitted) on the 1-second GOP grid.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { RenderJob } from "./render_backend.ts";
 *
 * const job = { durationSeconds: 20, request: { fps: 30 } } as RenderJob;
 * assert.deepEqual(serverChunkPlan(job).map((c) => c.frames), [210, 210, 180]);
 * assert.equal(serverChunkPlan(job, { chunkSize: 30 }).length, 20);
 * ```
 */
export function serverChunkPlan(job: RenderJob, options: ServerChunkOptions = {}): Chunk[] {
  const rate = parseFrameRate(job.request.fps);
  const frames = frameCountOf(job.durationSeconds, rate);
  const chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE;
  return chunkPlan({
    frames,
    fps: frameRateValue(rate),
    chunkSize,
    maxParallelChunks: options.maxParallelChunks ?? Math.ceil(frames / chunkSize),
  });
}

/** What a worker stored for one chunk (`renders/<id>/chunks/<index>.json`). */
export interface StoredChunk {
  /** The chunk's position in the plan. */
  index: number;
  /** First frame. */
  from: number;
  /** Last frame (inclusive). */
  to: number;
  /** Frames of the chunk. */
  frames: number;
  /** Bytes of the encoded chunk. */
  bytes: number;
  /** The capture path of its browser. */
  capture: string;
  /**
   * Chunk 0 only: whether the page had anything audible, so a soundtrack for the whole
   * timeline is stored beside the chunks.
   */
  soundtrack?: boolean;
}

/** Storage key of a render's encoded chunk `index`. */
export function chunkKey(renderId: string, index: number, format: string): string {
  return `renders/${renderId}/chunks/${index}.${format}`;
}

/** Storage key of what a worker recorded of chunk `index` ({@linkcode StoredChunk}). */
function manifestKey(renderId: string, index: number): string {
  return `renders/${renderId}/chunks/${index}.json`;
}

/** Storage key of a render's soundtrack, mixed by the worker of chunk 0. */
function soundtrackKey(renderId: string): string {
  return `renders/${renderId}/chunks/soundtrack.wav`;
}

/** What a chunk worker renders with. */
export interface ChunkWorkOptions {
  /** Ends the chunk at once (the worker stops, the render is deleted). */
  signal?: AbortSignal;
  /** Warm browsers of this worker. @default a browser launched for the chunk */
  browsers?: BrowserPool;
  /** The host's deadline of one frame, ms (`--frame-timeout`). @default 30000 */
  frameTimeoutMs?: number;
  /** Called after each frame of the chunk is handed to the encoder. */
  onFrame?: () => void;
}

/**
 * Renders chunk `chunk` of a hosted render and stores it (with its {@linkcode StoredChunk},
 * and for chunk 0 the soundtrack of the whole timeline) under `renders/<id>/chunks/`. The
 * page is set up as `renderComposition` sets up the single-process render's: the project
 * from storage, the request's variables, the server's network guard, the output size, and
 * the render's clock.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 * import type { RenderJob } from "./render_backend.ts";
 *
 * async function renderAll(ctx: ServerContext, job: RenderJob): Promise<void> {
 *   for (const chunk of serverChunkPlan(job)) await renderStoredChunk(ctx, job, chunk);
 *   await assembleStoredRender(ctx, job, serverChunkPlan(job));
 * }
 * ```
 */
export async function renderStoredChunk(
  ctx: ServerContext,
  job: RenderJob,
  chunk: Chunk,
  options: ChunkWorkOptions = {},
): Promise<StoredChunk> {
  const { request } = job;
  const rate = parseFrameRate(request.fps);
  const dir = await mkdtemp(join(ctx.workDir, `chunk-${job.id}-${chunk.index}-`));
  try {
    // The render user's ffmpeg reads the project and writes the chunk and soundtrack here.
    await grantToProcessUser(dir);
    const project = await unpackProject(ctx, job, dir);
    const prepared = await prepareComposition({
      target: project,
      composition: request.composition,
      values: request.variables,
      strictVariables: request.strict_variables,
    });
    await using session = await openRenderSession({
      prepared,
      frameRate: rate,
      format: request.format,
      epochMs: job.epochMs,
      outputSize: { width: job.width, height: job.height },
      blockPrivateNetwork: !ctx.allowPrivateUrls,
      browsers: options.browsers,
      frameTimeoutMs: options.frameTimeoutMs,
      signal: options.signal,
    });
    const file = join(dir, `chunk-${chunk.index}.${request.format}`);
    // The workers of `renderComposition`, with one chunk: its fresh page, its retry after a
    // browser crash, its error naming the chunk.
    const abort = new AbortController();
    const stop = () => abort.abort();
    options.signal?.addEventListener("abort", stop);
    try {
      await runWorkers(session, {
        chunks: [chunk],
        workers: 1,
        output: () => ({ chunk, output: file, quality: request.quality, ffmpeg: session.ffmpeg }),
        onFrame: () => options.onFrame?.(),
        onRetry: () => {},
        abort,
        chunkFailed: (failed, cause) => new ChunkFailedError(failed, cause),
      });
    } finally {
      options.signal?.removeEventListener("abort", stop);
    }
    options.signal?.throwIfAborted();
    session.checkMissingAssets();
    let soundtrack: boolean | undefined;
    if (chunk.index === 0) {
      // The whole timeline's mix, with the arguments of renderComposition's join.
      const frames = frameCountOf(job.durationSeconds, rate);
      const mixed = join(dir, "soundtrack.wav");
      soundtrack = await mixSoundtrack({
        ffmpeg: session.ffmpeg,
        ffprobe: session.ffprobe,
        media: session.media,
        duration: frameTime(frames, rate),
        startAt: 0,
        timelineEnd: frameTime(frames, rate),
        loudness: request.loudness,
        input: session.input,
        inputArgs: session.inputArgs,
        signal: options.signal,
      }, mixed);
      if (soundtrack) await ctx.storage.putFile(soundtrackKey(job.id), mixed, "audio/wav");
    }
    await ctx.storage.putFile(
      chunkKey(job.id, chunk.index, request.format),
      file,
      CONTENT_TYPES[request.format],
    );
    const stored: StoredChunk = {
      index: chunk.index,
      from: chunk.from,
      to: chunk.to,
      frames: chunk.frames,
      bytes: (await stat(file)).size,
      capture: session.browser.mode,
      ...(soundtrack === undefined ? {} : { soundtrack }),
    };
    // Written last: a manifest says its chunk (and soundtrack) are stored.
    await ctx.storage.putBytes(
      manifestKey(job.id, chunk.index),
      new TextEncoder().encode(JSON.stringify(stored)),
      "application/json",
    );
    return stored;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A chunk the assembler needs is not in storage (a worker's store was lost, or the plan
 * changed under the render): the render cannot be joined.
 */
export class ChunkMissingError extends VidError {
  /** Always `"ChunkMissingError"`. */
  override name = "ChunkMissingError";
  /** The chunk's position in the plan. */
  readonly index: number;
  /**
   * Creates the error.
   *
   * @param renderId The render.
   * @param chunk The chunk missing.
   * @param why What was found instead.
   */
  constructor(renderId: string, chunk: Chunk, why: string) {
    super(
      `render ${renderId}: chunk ${chunk.index} (frames ${chunk.from}-${chunk.to}) ${why}; ` +
        "render it again",
      { field: "chunk", exitCode: EXIT_FAILED },
    );
    this.index = chunk.index;
  }
}

/** Reads and checks the manifest of `chunk`. */
async function storedChunk(ctx: ServerContext, job: RenderJob, chunk: Chunk): Promise<StoredChunk> {
  const object = await ctx.storage.get(manifestKey(job.id, chunk.index));
  if (!object) throw new ChunkMissingError(job.id, chunk, "is not stored");
  const stored = await new Response(object.body).json() as StoredChunk;
  if (stored.from !== chunk.from || stored.to !== chunk.to) {
    throw new ChunkMissingError(
      job.id,
      chunk,
      `is stored as frames ${stored.from}-${stored.to}, another plan's`,
    );
  }
  return stored;
}

/** What the assembler works with. */
export interface AssembleOptions {
  /** Ends the assembly at once. */
  signal?: AbortSignal;
}

/**
 * Joins the stored chunks of `plan` (with chunk 0's soundtrack) into the render's video and
 * stores it with its thumbnail (`renders/<id>/video.<format>`, `renders/<id>/thumbnail.jpg`),
 * as the single-process render stores them. The chunks stay stored; the caller removes them.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 * import type { RenderJob } from "./render_backend.ts";
 *
 * async function finish(ctx: ServerContext, job: RenderJob): Promise<void> {
 *   await assembleStoredRender(ctx, job, serverChunkPlan(job));
 * }
 * ```
 */
export async function assembleStoredRender(
  ctx: ServerContext,
  job: RenderJob,
  plan: readonly Chunk[],
  options: AssembleOptions = {},
): Promise<void> {
  const { format, fps } = job.request;
  const rate = parseFrameRate(fps);
  const dir = await mkdtemp(join(ctx.workDir, `assemble-${job.id}-`));
  try {
    // The render user's ffmpeg joins the downloaded chunks here.
    await grantToProcessUser(dir);
    // Every manifest read, the first chunk missing in plan order named.
    const read = await Promise.allSettled(plan.map((chunk) => storedChunk(ctx, job, chunk)));
    const missing = read.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (missing) throw missing.reason;
    const stored = read.map((r) => (r as PromiseFulfilledResult<StoredChunk>).value);
    options.signal?.throwIfAborted();
    const files = await Promise.all(plan.map(async (chunk) => {
      const file = join(dir, `chunk-${chunk.index}.${format}`);
      await ctx.storage.download(chunkKey(job.id, chunk.index, format), file);
      await grantToProcessUser(file);
      return file;
    }));
    let soundtrack: string | null = null;
    if (stored[0]?.soundtrack) {
      soundtrack = join(dir, "soundtrack.wav");
      await ctx.storage.download(soundtrackKey(job.id), soundtrack);
      await grantToProcessUser(soundtrack);
    }
    options.signal?.throwIfAborted();
    const frames = plan.reduce((sum, chunk) => sum + chunk.frames, 0);
    const video = join(dir, `video.${format}`);
    const ffmpeg = await requireFfmpeg();
    await assembleVideo({
      ffmpeg,
      // Only the mix probes media, and it ran on chunk 0's worker.
      ffprobe: "ffprobe",
      chunkFiles: files,
      timing: { fps: frameRateValue(rate), frames: plan.map((chunk) => chunk.frames) },
      format,
      media: [],
      soundtrack,
      duration: frameTime(frames, rate),
      workDir: dir,
      output: video,
      signal: options.signal,
    });
    const thumbnail = join(dir, "thumbnail.jpg");
    await thumbnailFromVideo(video, job.durationSeconds, thumbnail, fps, options.signal);
    await ctx.storage.putFile(`renders/${job.id}/video.${format}`, video);
    await ctx.storage.putFile(`renders/${job.id}/thumbnail.jpg`, thumbnail, "image/jpeg");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
