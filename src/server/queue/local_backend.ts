/**
 * The `local` render backend of `vid server`: renders on this machine with the same
 * `renderComposition` as `vid render`; the thumbnail is a frame of the finished video.
 * Each render runs under the host's frame deadline (`--frame-timeout`) and a wall-clock
 * budget (`--max-render-seconds`, by default from its frames): a page that stalls or
 * crawls cannot hold a render slot, and the failure is refunded by the queue.
 *
 * @module
 */

import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { type BrowserPool, createBrowserPool } from "../../render/capture_mode.ts";
import { renderComposition } from "../../render/render.ts";
import { BUDGET_BASE_SECONDS, BUDGET_SECONDS_PER_FRAME, type ServerContext } from "../context.ts";
import type { RenderBackend, RenderJob } from "./render_backend.ts";
import { thumbnailFromVideo } from "./thumbnail.ts";
import { grantToProcessUser } from "../../render/process_runner.ts";
import { unpackProject } from "./unpack_project.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";
import { linkSignals } from "../../util/async.ts";
import {
  type ChunkFanOutOptions,
  chunkWorkers,
  fanOut,
  spreads,
  workOnChunk,
} from "./chunk_jobs.ts";

export { BUDGET_BASE_SECONDS, BUDGET_SECONDS_PER_FRAME };

/**
 * The wall-clock budget of a server render, seconds: `maxRenderSeconds` when the operator
 * set one (`--max-render-seconds`), else 120 s plus 1 s per frame (duration x fps, rounded
 * up), about ten times what a 1080p frame takes on a loaded 2-core machine.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(renderBudgetSeconds(3, 30), 210); // 120 + 90 frames
 * assert.equal(renderBudgetSeconds(3, 30, 45), 45);
 * ```
 */
export function renderBudgetSeconds(
  durationSeconds: number,
  fps: number,
  maxRenderSeconds?: number,
): number {
  if (maxRenderSeconds !== undefined) return maxRenderSeconds;
  return BUDGET_BASE_SECONDS + BUDGET_SECONDS_PER_FRAME * Math.ceil(durationSeconds * fps);
}

/** A server render ran past its wall-clock budget and was stopped. */
export class RenderBudgetError extends VidError {
  /** Always `"RenderBudgetError"`. */
  override name = "RenderBudgetError";
  /** The budget that passed, seconds. */
  readonly seconds: number;
  /**
   * Creates the error.
   *
   * @param seconds The budget that passed, seconds.
   * @param explicit Whether the operator set it (`--max-render-seconds`).
   */
  constructor(seconds: number, explicit: boolean) {
    super(
      `the render took longer than its ${seconds} s budget and was stopped ` +
        (explicit
          ? "(the server's --max-render-seconds)"
          : `(${BUDGET_BASE_SECONDS} s + ${BUDGET_SECONDS_PER_FRAME} s per frame)`) +
        "; make its frames cheaper to draw, or render it in shorter parts",
      { field: "maxRenderSeconds", flag: "--max-render-seconds", exitCode: EXIT_FAILED },
    );
    this.seconds = seconds;
  }
}

/** Limits of the local backend's renders. */
export interface LocalBackendLimits {
  /** The host's deadline of one frame's seek and capture, ms. @default 30000 */
  frameTimeoutMs?: number;
  /** Wall-clock budget of one render, seconds. @default see {@linkcode renderBudgetSeconds} */
  maxRenderSeconds?: number;
  /**
   * Spread a render longer than `chunks.chunkSize` frames over the workers of every instance
   * sharing the database, in chunks (`vid server --chunk-size`, see chunk_jobs.ts).
   * @default each render renders whole on the worker that claimed it
   */
  chunks?: ChunkFanOutOptions;
}

/**
 * Runs a render's `work` under its wall-clock budget, counted from the claim's start of
 * work, set-up and media included.
 */
async function underBudget(
  job: RenderJob,
  queueSignal: AbortSignal,
  limits: LocalBackendLimits,
  work: (signal: AbortSignal) => Promise<void>,
): Promise<void> {
  const seconds = renderBudgetSeconds(
    job.durationSeconds,
    job.request.fps,
    limits.maxRenderSeconds,
  );
  const budget = new AbortController();
  const timer = setTimeout(
    () => budget.abort(new RenderBudgetError(seconds, limits.maxRenderSeconds !== undefined)),
    seconds * 1000,
  );
  const linked = linkSignals(queueSignal, budget.signal);
  try {
    await work(linked.signal);
  } catch (error) {
    // Over budget, the render failed (and is refunded); a delete or a stop is the queue's.
    if (budget.signal.aborted && !queueSignal.aborted) throw budget.signal.reason;
    throw error;
  } finally {
    linked.dispose();
    clearTimeout(timer);
  }
}

async function renderLocally(
  ctx: ServerContext,
  job: RenderJob,
  signal: AbortSignal,
  limits: LocalBackendLimits,
  browsers?: BrowserPool,
) {
  const { request } = job;
  const dir = await mkdtemp(join(ctx.workDir, `render-${job.id}-`));
  try {
    // The render user's ffmpeg reads the project and writes the video here.
    await grantToProcessUser(dir);
    const project = await unpackProject(ctx, job, dir);
    const video = join(dir, `video.${request.format}`);
    await renderComposition({
      target: project,
      composition: request.composition,
      output: video,
      fps: request.fps,
      format: request.format,
      quality: request.quality,
      values: request.variables,
      strictVariables: request.strict_variables,
      loudness: request.loudness,
      epochMs: job.epochMs,
      outputSize: { width: job.width, height: job.height },
      // Tenants' compositions never reach the server's own network.
      blockPrivateNetwork: !ctx.allowPrivateUrls,
      signal,
      browsers,
      frameTimeoutMs: limits.frameTimeoutMs,
      onProgress: (p) => job.setProgress(p.framesTotal > 0 ? p.framesDone / p.framesTotal : 0),
    });
    const thumbnail = join(dir, "thumbnail.jpg");
    await thumbnailFromVideo(video, job.durationSeconds, thumbnail, job.request.fps, signal);
    await ctx.storage.putFile(`renders/${job.id}/video.${request.format}`, video);
    await ctx.storage.putFile(`renders/${job.id}/thumbnail.jpg`, thumbnail, "image/jpeg");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The local backend with `workers` renders in parallel, each under `limits`.
 *
 * @example
 * ```ts no_run
 * import { localBackend } from "./local_backend.ts";
 * import { startQueue } from "./queue.ts";
 * import type { ServerContext } from "../context.ts";
 *
 * function startLocalQueue(ctx: ServerContext) {
 *   return startQueue(ctx, localBackend(2));
 * }
 * ```
 */
export function localBackend(workers: number, limits: LocalBackendLimits = {}): RenderBackend {
  // Browsers stay warm between renders: a render skips the browser launch and probe.
  const browsers = createBrowserPool();
  const chunked = limits.chunks &&
    chunkWorkers(limits.chunks, { browsers, frameTimeoutMs: limits.frameTimeoutMs });
  return {
    kind: "local",
    slots: workers,
    render: (ctx, job, queueSignal) =>
      underBudget(
        job,
        queueSignal,
        limits,
        (signal) =>
          chunked && spreads(job, chunked.options)
            ? fanOut(ctx, chunked, job, signal)
            : renderLocally(ctx, job, signal, limits, browsers),
      ),
    ...(chunked && { work: (ctx, signal) => workOnChunk(ctx, chunked, signal) }),
    close: () => void browsers.close(),
  };
}
