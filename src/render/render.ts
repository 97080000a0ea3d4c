/**
 * Local render orchestration: composition + variables -> chunk plan -> parallel chunk
 * renders in one browser (one window per worker) -> concat -> the output file, which
 * appears only when complete.
 *
 * @module
 */

import { mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import process from "node:process";
import { type Composition, readComposition } from "../composition/composition.ts";
import type { Variables } from "../composition/declarations.ts";
import type { VariableProblem } from "../composition/errors.ts";
import { checkOverrides, mergeVariables, resolveVariables } from "../composition/variables.ts";
import { StrictVariablesError } from "../composition/errors.ts";
import { type Browser, type CaptureMode, launchBrowser } from "./browser.ts";
import { CdpClosedError } from "./cdp.ts";
import { type CapturePreference, launchForCapture } from "./capture_mode.ts";
import { type Chunk, chunkPlan } from "./chunk_plan.ts";
import {
  concatChunks,
  OUTPUT_FORMATS,
  type OutputFormat,
  QUALITIES,
  type Quality,
} from "./encode.ts";
import { type PageSpec, renderChunk } from "./render_chunk.ts";
import { serveProject } from "./serve.ts";
import { requireFfmpeg, requireFfprobe } from "./system.ts";
import { discoverMedia, mixAudio, muxAudio, prepareVideoProxies } from "./media.ts";

/** An option of a render is out of range; names the option. */
export class RenderOptionError extends Error {
  override name = "RenderOptionError";
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/** A chunk failed (after its retry, for a browser crash). */
export class ChunkFailedError extends Error {
  override name = "ChunkFailedError";
  readonly field = "chunk";
  readonly chunk: Chunk;
  constructor(chunk: Chunk, cause: Error) {
    super(`chunk ${chunk.index} (frames ${chunk.from}-${chunk.to}) failed: ${cause.message}`, {
      cause,
    });
    this.chunk = chunk;
  }
}

/** The render was cancelled through its abort signal. */
export class RenderCancelledError extends Error {
  override name = "RenderCancelledError";
  readonly field = "signal";
  constructor() {
    super("render cancelled");
  }
}

/** Progress of a running render. */
export interface RenderProgress {
  /** Frames captured and encoded so far. */
  framesDone: number;
  /** Frames to render. */
  framesTotal: number;
  /** Average frames per second since capture started. */
  fps: number;
  /** Seconds left at the current rate; undefined before the first frame. */
  etaSeconds?: number;
  /** What the renderer is doing. */
  stage: "starting" | "preparing media" | "rendering" | "joining" | "done";
}

/** Options of {@linkcode renderComposition}. */
export interface RenderOptions {
  /** Project directory or HTML file. @default "." */
  target?: string;
  /** Entry HTML file inside the project directory. @default "index.html" */
  composition?: string;
  /** Output path. @default "renders/<composition-id>.<format>" */
  output?: string;
  /** Frames per second, integer 1-240. @default 30 */
  fps?: number;
  /** @default "mp4" */
  format?: OutputFormat;
  /** @default "standard" */
  quality?: Quality;
  /** Parallel windows. @default min(cores, 4) */
  workers?: number;
  /** Frames per chunk (each chunk is one closed-GOP segment). @default 60 */
  chunkSize?: number;
  /** Render only frames `from`..`to` (inclusive). */
  frames?: { from: number; to: number };
  /** Inline JSON overrides (`--variables`). */
  variables?: string;
  /** JSON/JSONC overrides file (`--variables-file`). */
  variablesFile?: string;
  /** Overrides as an object (SDK); merged over the file and inline ones. */
  values?: Variables;
  /** Fail on undeclared keys or wrong types. */
  strictVariables?: boolean;
  /** Capture path. @default "auto" */
  capture?: CapturePreference;
  /** Seed of the page's `Math.random`. @default 1 */
  seed?: number;
  /** `Date.now()` at time 0. @default the render's start time, whole seconds */
  epochMs?: number;
  /** Called on progress (every frame). */
  onProgress?: (progress: RenderProgress) => void;
  /** Called once per variable problem in warn mode and per dropped declaration. */
  onWarning?: (message: string) => void;
  /** Aborts the render: workers and ffmpeg stop, temp files are removed. */
  signal?: AbortSignal;
}

/** What a finished render produced. */
export interface RenderResult {
  output: string;
  compositionId: string;
  width: number;
  height: number;
  fps: number;
  format: OutputFormat;
  quality: Quality;
  /** First and last frame rendered. */
  from: number;
  to: number;
  /** Frames in the output. */
  frames: number;
  /** Seconds of video. */
  durationSeconds: number;
  captureMode: CaptureMode;
  workers: number;
  chunks: number;
  /** Chunks rendered a second time after a browser crash. */
  retries: number;
  elapsedMs: number;
  /** Frames per second achieved, whole command. */
  renderFps: number;
  /** Variable problems reported as warnings. */
  warnings: VariableProblem[];
}

/**
 * Readiness gate timeout per frame: `VID_READY_TIMEOUT_MS` when it is a positive number
 * (tests use a short one), else 30 s.
 */
function readyTimeoutMs(): number {
  const ms = Number(process.env.VID_READY_TIMEOUT_MS);
  return Number.isFinite(ms) && ms > 0 ? ms : 30000;
}

/** Frames per chunk of a local render; workers pull chunks from a queue. */
export const LOCAL_CHUNK_FRAMES = 60;

/** Default worker count for this machine. */
export function defaultWorkers(): number {
  return Math.max(1, Math.min(availableParallelism(), 4));
}

/** Total frames of a composition: round(duration x fps). */
export function frameCount(durationSeconds: number, fps: number): number {
  return Math.max(1, Math.round(durationSeconds * fps));
}

/** Checks fps, format, quality, workers; throws {@linkcode RenderOptionError}. */
export function checkRenderOptions(options: RenderOptions): void {
  const fps = options.fps ?? 30;
  if (!Number.isInteger(fps) || fps < 1 || fps > 240) {
    throw new RenderOptionError("--fps", `must be an integer from 1 to 240, got ${fps}`);
  }
  if (options.format !== undefined && !OUTPUT_FORMATS.includes(options.format)) {
    throw new RenderOptionError(
      "--format",
      `must be one of ${OUTPUT_FORMATS.join(", ")}, got ${options.format}`,
    );
  }
  if (options.quality !== undefined && !QUALITIES.includes(options.quality)) {
    throw new RenderOptionError(
      "--quality",
      `must be one of ${QUALITIES.join(", ")}, got ${options.quality}`,
    );
  }
  if (
    options.workers !== undefined && (!Number.isInteger(options.workers) || options.workers < 1)
  ) {
    throw new RenderOptionError("--workers", `must be a positive integer, got ${options.workers}`);
  }
}

function frameRange(options: RenderOptions, total: number): { from: number; to: number } {
  if (!options.frames) return { from: 0, to: total - 1 };
  const { from, to } = options.frames;
  if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from || to >= total) {
    throw new RenderOptionError(
      "--frames",
      `must be <from>-<to> with 0 <= from <= to <= ${total - 1} (the composition has ${total} ` +
        `frames), got ${from}-${to}`,
    );
  }
  return { from, to };
}

async function mergedValues(
  composition: Composition,
  options: RenderOptions,
): Promise<{ values: Variables; problems: VariableProblem[] }> {
  const resolved = await resolveVariables(composition.declarations, {
    variables: options.variables,
    variablesFile: options.variablesFile,
    strict: options.strictVariables,
  });
  if (!options.values) return resolved;
  const overrides = { ...resolved.overrides, ...options.values };
  const problems = checkOverrides(composition.declarations, overrides);
  if (options.strictVariables && problems.length > 0) throw new StrictVariablesError(problems);
  return { values: mergeVariables(composition.declarations, overrides), problems };
}

/**
 * Renders a composition to a video file on this machine.
 *
 * @example
 * ```ts
 * const result = await renderComposition({
 *   target: "examples/hello",
 *   variables: '{"title":"Launch day"}',
 *   output: "renders/launch.mp4",
 * });
 * console.log(result.frames, result.renderFps);
 * ```
 */
export async function renderComposition(options: RenderOptions = {}): Promise<RenderResult> {
  const started = performance.now();
  checkRenderOptions(options);
  const fps = options.fps ?? 30;
  const format = options.format ?? "mp4";
  const quality = options.quality ?? "standard";
  const composition = await readComposition(options.target ?? ".", options.composition);
  for (const dropped of composition.dropped) {
    options.onWarning?.(
      `declaration ${dropped.index}${
        dropped.id ? ` ("${dropped.id}")` : ""
      } dropped: ${dropped.reason}`,
    );
  }
  const { values, problems } = await mergedValues(composition, options);
  for (const problem of problems) options.onWarning?.(problem.message);
  const total = frameCount(composition.duration, fps);
  const range = frameRange(options, total);
  const frames = range.to - range.from + 1;
  // Chunks do not depend on the worker count, so any --workers gives identical frames.
  const chunkSize = options.chunkSize ?? LOCAL_CHUNK_FRAMES;
  const chunks = chunkPlan({
    from: range.from,
    frames,
    chunkSize,
    maxParallelChunks: Math.ceil(frames / chunkSize),
  });
  const workers = Math.min(options.workers ?? defaultWorkers(), chunks.length);
  const ffmpeg = await requireFfmpeg();
  const output = resolve(options.output ?? join("renders", `${composition.id}.${format}`));
  const signal = options.signal;
  signal?.throwIfAborted();

  const progress: RenderProgress = {
    framesDone: 0,
    framesTotal: frames,
    fps: 0,
    stage: "starting",
  };
  options.onProgress?.({ ...progress });
  const work = await mkdtemp(join(tmpdir(), "vid-render-"));
  const server = await serveProject(composition.projectDir);
  let browser: Browser | undefined;
  const abortController = new AbortController();
  const onAbort = () => abortController.abort();
  signal?.addEventListener("abort", onAbort);
  try {
    browser = await launchForCapture(options.capture ?? "auto");
    const epochMs = options.epochMs ?? Math.floor(Date.now() / 1000) * 1000;
    // Timed from here, not from the first frame: one frame over a few microseconds
    // would read as a rate of 100000 fps.
    const captureStart = performance.now();
    let retries = 0;
    const onFrame = () => {
      progress.framesDone++;
      progress.stage = "rendering";
      const seconds = (performance.now() - captureStart) / 1000;
      progress.fps = seconds > 0 ? progress.framesDone / seconds : 0;
      progress.etaSeconds = progress.fps > 0
        ? (progress.framesTotal - progress.framesDone) / progress.fps
        : undefined;
      options.onProgress?.({ ...progress });
    };
    const chunkFiles = chunks.map((c) => join(work, `chunk-${c.index}.${format}`));
    const spec: PageSpec = {
      url: server.url + encodeURI(composition.entry),
      width: composition.width,
      height: composition.height,
      fps,
      format,
      variables: values,
      seed: options.seed ?? 1,
      epochMs,
      readyTimeoutMs: readyTimeoutMs(),
    };
    progress.stage = "preparing media";
    options.onProgress?.({ ...progress });
    const media = await discoverMedia(browser, spec);
    const ffprobe = media.length > 0 ? await requireFfprobe() : "ffprobe";
    spec.videoProxies = await prepareVideoProxies(media, {
      ffmpeg,
      ffprobe,
      workDir: work,
      serve: (name, file) => server.mount(name, file),
    });
    const relaunches = new WeakMap<Browser, Promise<Browser>>();
    const replaceBrowser = async (crashed: Browser): Promise<Browser> => {
      let next = relaunches.get(crashed);
      if (!next) {
        next = crashed.close().then(() => launchBrowser({ mode: crashed.mode }));
        relaunches.set(crashed, next);
      }
      browser = await next;
      return browser;
    };
    let nextChunk = 0;
    // Every chunk gets a fresh page fast-forwarded to its first frame, whatever the worker
    // count: Chromium keeps raster state between frames (layer raster scales, tiles), so a
    // page's history would otherwise show in the pixels and --workers would change them.
    const worker = async (): Promise<void> => {
      try {
        while (nextChunk < chunks.length) {
          const chunk = chunks[nextChunk++];
          const out = { chunk, output: chunkFiles[chunk.index], quality, ffmpeg };
          let done = 0;
          const countFrame = () => {
            done++;
            onFrame();
          };
          const used = browser!;
          try {
            await renderChunk(used, spec, out, countFrame, abortController.signal);
          } catch (error) {
            if (!(error instanceof CdpClosedError) || abortController.signal.aborted) throw error;
            // The browser crashed: relaunch it (once for all workers), retry this chunk once.
            retries++;
            progress.framesDone -= done;
            try {
              const relaunched = await replaceBrowser(used);
              await renderChunk(relaunched, spec, out, onFrame, abortController.signal);
            } catch (retryError) {
              if (abortController.signal.aborted) throw retryError;
              throw new ChunkFailedError(chunk, retryError as Error);
            }
          }
        }
      } catch (error) {
        abortController.abort();
        throw error;
      }
    };
    const results = await Promise.allSettled(
      Array.from({ length: workers }, worker),
    );
    if (signal?.aborted) throw new RenderCancelledError();
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;

    progress.stage = "joining";
    options.onProgress?.({ ...progress });
    await mkdir(dirname(output), { recursive: true });
    const partial = join(dirname(output), `.${basename(output)}.partial-${Date.now()}.${format}`);
    try {
      const soundtrack = join(work, "soundtrack.wav");
      const audible = await mixAudio(media, {
        ffmpeg,
        ffprobe,
        duration: frames / fps,
        startAt: range.from / fps,
        output: soundtrack,
      });
      const joined = audible ? join(work, `joined.${format}`) : partial;
      if (chunkFiles.length === 1) {
        await rename(chunkFiles[0], joined).catch(async () => {
          await concatChunks(ffmpeg, chunkFiles, join(work, "chunks.txt"), joined, format);
        });
      } else {
        await concatChunks(ffmpeg, chunkFiles, join(work, "chunks.txt"), joined, format);
      }
      if (audible) await muxAudio(ffmpeg, joined, soundtrack, partial, format);
      await rename(partial, output);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    progress.stage = "done";
    options.onProgress?.({ ...progress });
    const elapsedMs = performance.now() - started;
    return {
      output,
      compositionId: composition.id,
      width: composition.width,
      height: composition.height,
      fps,
      format,
      quality,
      from: range.from,
      to: range.to,
      frames,
      durationSeconds: frames / fps,
      captureMode: browser.mode,
      workers,
      chunks: chunks.length,
      retries,
      elapsedMs,
      renderFps: frames / (elapsedMs / 1000),
      warnings: problems,
    };
  } catch (error) {
    if (signal?.aborted) throw new RenderCancelledError();
    throw error;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    abortController.abort();
    // Each step runs even when an earlier one fails, so nothing is left behind.
    await Promise.allSettled([browser?.close(), server.close()]);
    await rm(work, { recursive: true, force: true });
  }
}
