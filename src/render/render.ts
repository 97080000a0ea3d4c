/**
 * Local render orchestration: composition + variables -> chunk plan -> parallel chunk
 * renders (one browser per worker, see workers.ts) -> concat -> the output file, which
 * appears only when complete.
 *
 * @module
 */

import { mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import type { VariableProblem } from "../composition/errors.ts";
import {
  ffmpegRate,
  frameCountOf,
  type FrameRate,
  frameRateValue,
  frameTime,
  parseFrameRate,
} from "../composition/frame_rate.ts";
import type { Browser, CaptureMode } from "./browser.ts";
import type { BrowserPool, CapturePreference } from "./capture_mode.ts";
import { type Chunk, chunkPlan, gopFrames } from "./chunk_plan.ts";
import {
  encodeGif,
  formatOfPath,
  GIF_MAX_FPS,
  hasFramePattern,
  isImageSequence,
  type OutputFormat,
  type Quality,
  type RenderFormat,
} from "./encode.ts";
import type { MediaProgress } from "./media.ts";
import { assembleVideo } from "./assemble.ts";
import type { CaptionCue } from "../runtime/captions.ts";
import { formatCaptions, shiftCues } from "./captions.ts";
import { runWorkers } from "./workers.ts";
import { RenderOptionError } from "../request/errors.ts";
import { checkOption, defaultWorkers, flagOf, OPTIONS } from "../request/options.ts";
import { checkHdrFormat, scaledSize } from "../request/rules.ts";
import {
  type CompositionSource,
  openRenderSession,
  prepareComposition,
  type RenderSession,
} from "./session.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { grantToProcessUser } from "./process_runner.ts";

// The options' error and the worker default are declared with the render request.
export { defaultWorkers, RenderOptionError };

/** A chunk failed (after its retry, for a browser crash). */
export class ChunkFailedError extends VidError {
  /** Always `"ChunkFailedError"`. */
  override name = "ChunkFailedError";
  /** The field at fault: the chunk. */
  override readonly field = "chunk";
  /** The chunk that failed: its index and frame range. */
  readonly chunk: Chunk;
  /**
   * Creates the error, naming the chunk and its frames.
   *
   * @param chunk The chunk that failed.
   * @param cause Why it failed; kept as the error's `cause`.
   */
  constructor(chunk: Chunk, cause: Error) {
    super(`chunk ${chunk.index} (frames ${chunk.from}-${chunk.to}) failed: ${cause.message}`, {
      exitCode: EXIT_FAILED,
      cause,
    });
    this.chunk = chunk;
  }
}

/** The render was cancelled through its abort signal. */
export class RenderCancelledError extends VidError {
  /** Always `"RenderCancelledError"`. */
  override name = "RenderCancelledError";
  /** The option that cancelled the render: its abort signal. */
  override readonly field = "signal";
  constructor() {
    super("render cancelled", { exitCode: EXIT_FAILED });
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
  /** While preparing media: which `<video>` source and how far. */
  media?: MediaProgress;
}

/**
 * A browser launched by vid (`launchForCapture`), shared by the renders of a batch; an
 * internal alias: the browser handle is not part of the public SDK.
 *
 * @internal
 */
type SharedBrowser = Browser;

/**
 * The pool of warm browsers of `createBrowserPool`; an internal alias, for the reason given
 * at {@linkcode SharedBrowser}.
 *
 * @internal
 */
type WarmBrowserPool = BrowserPool;

/** Options of {@linkcode renderComposition}. */
export interface RenderOptions extends CompositionSource {
  /**
   * Output path; its extension picks the format when `format` is unset: `.mp4`, `.webm`,
   * `.mov`, `.gif`, or a PNG sequence named by a frame-number pattern (`frames/%05d.png`).
   * @default "renders/<composition-id>.<format>" ("renders/<composition-id>/%05d.png")
   */
  output?: string;
  /**
   * Frames per second, 1-240: an integer, a decimal (`29.97` = 30000/1001) or a fraction
   * (`"30000/1001"`). Wins over the composition's `data-fps`; a GIF renders at most
   * {@linkcode GIF_MAX_FPS}. @default data-fps, else 30
   */
  fps?: number | string;
  /**
   * Container and codec of the output; must agree with the `output` extension.
   * @default the `output` extension's format, else "mp4"
   */
  format?: RenderFormat;
  /** Encoder preset. @default "standard" */
  quality?: Quality;
  /** Parallel workers, each capturing in its own browser. @default min(cores, 4) */
  workers?: number;
  /**
   * High-dynamic-range mp4: 10-bit HEVC, BT.2020, HLG. In-process only: the distributed
   * path rejects it. @default false
   */
  hdr?: boolean;
  /**
   * Integrated loudness of the soundtrack, LUFS (-70 to -5): the mix is normalised to it by
   * two-pass EBU R128 `loudnorm`. @default the mix as it is
   */
  loudness?: number;
  /**
   * Also write the cues of the composition's `data-captions` file (the first, when several)
   * for the rendered range to this `.vtt` or `.srt` file: shifted so the video starts at 0,
   * clipped to its length.
   */
  captionsOut?: string;
  /**
   * Device pixels per CSS pixel, 1-4: the page keeps its layout and is drawn `scale` times
   * as sharp, so a 1920x1080 composition at 2 gives a 3840x2160 video with text drawn at
   * that size (not upscaled). Scales `outputSize` when both are given. @default 1
   */
  scale?: number;
  /**
   * Final frame size. The page is captured at the device scale that fits it (sharp, not
   * upscaled) and centred on black when the aspect ratios differ. @default the
   * composition's size
   */
  outputSize?: { width: number; height: number };
  /**
   * Frames per chunk; chunks hold whole GOP grid cells of 1 second (see `chunkPlan`),
   * so any chunk size gives the same frames. @default 2 x fps (two cells)
   */
  chunkSize?: number;
  /** Render only frames `from`..`to` (inclusive). */
  frames?: { from: number; to: number };
  /** Capture path. @default "auto" */
  capture?: CapturePreference;
  /** Seed of the page's `Math.random`. @default 1 */
  seed?: number;
  /** `Date.now()` at time 0. @default the render's start time, whole seconds */
  epochMs?: number;
  /**
   * Warm browsers to capture with (see `createBrowserPool`), for a process that renders
   * many: the preview studio, `vid server`. @default a browser launched for this render
   */
  browsers?: WarmBrowserPool;
  /**
   * Keep the render off private networks, for renders of other people's compositions
   * (`vid server`, the Lambda worker): the page, its iframes, fetch/XHR, WebSocket,
   * every redirect hop and all media downloads reach public addresses only, plus the
   * render's own project files. @default false
   */
  blockPrivateNetwork?: boolean;
  /**
   * A running browser to render in, left open (e.g. one warm browser shared by a batch).
   * @default a browser launched for this render
   */
  browser?: SharedBrowser;
  /**
   * The host's deadline of one frame's seek and capture, milliseconds. Past it the page
   * counts as hung (a script busy without end stops the page's own timers too): its
   * script is terminated, its browser and ffmpeg are killed and the render fails with
   * `FrameTimeoutError` naming the frame. @default 30000
   */
  frameTimeoutMs?: number;
  /** Called on progress (every frame). */
  onProgress?: (progress: RenderProgress) => void;
  /**
   * Aborts the render at once, a frame in flight included: its browsers and ffmpeg are
   * killed, temp files are removed, and the render rejects with `RenderCancelledError`.
   */
  signal?: AbortSignal;
}

/** What a finished render produced. */
export interface RenderResult {
  /** Path of the output file. */
  output: string;
  /** The composition's `data-composition-id`. */
  compositionId: string;
  /** Output width in pixels. */
  width: number;
  /** Output height in pixels. */
  height: number;
  /** Frames per second of the output (num / den of `frameRate`, e.g. 29.97002997...). */
  fps: number;
  /** The exact frame rate of the output, e.g. `{ num: 30000, den: 1001 }`. */
  frameRate: FrameRate;
  /** Container and codec of the output. */
  format: RenderFormat;
  /** Encoder preset used. */
  quality: Quality;
  /** Whether the output is HDR (10-bit HEVC, HLG). */
  hdr: boolean;
  /** First and last frame rendered. */
  from: number;
  /** Last frame rendered (inclusive). */
  to: number;
  /** Frames in the output. */
  frames: number;
  /** Seconds of video. */
  durationSeconds: number;
  /** Capture path used: BeginFrame or screenshots. */
  captureMode: CaptureMode;
  /** Parallel workers used (one browser each). */
  workers: number;
  /** Chunks the frames were split into. */
  chunks: number;
  /** Chunks rendered a second time after a browser crash. */
  retries: number;
  /** Wall time of the whole render, milliseconds. */
  elapsedMs: number;
  /** Frames per second achieved, whole command. */
  renderFps: number;
  /** Variable problems reported as warnings. */
  warnings: VariableProblem[];
}

/** GOP grid cells per chunk of a local render (2 seconds); workers pull chunks from a queue. */
export const LOCAL_CHUNK_CELLS = 2;

/** Total frames of a composition: duration x fps rounded to the nearest frame, at least 1. */
export function frameCount(durationSeconds: number, fps: number | FrameRate): number {
  return frameCountOf(durationSeconds, typeof fps === "number" ? parseFrameRate(fps) : fps);
}

/** The rate when neither the caller nor the composition (`data-fps`) gives one. */
export const DEFAULT_FRAME_RATE: FrameRate = { num: 30, den: 1 };

/**
 * The frame rate of a render: the caller's `fps` (`--fps`, SDK `fps`) wins over the
 * composition's `data-fps`, which wins over 30. Throws {@linkcode RenderOptionError}
 * naming `--fps` for a rate that does not parse or is out of range.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(renderFrameRate("29.97", undefined), { num: 30000, den: 1001 });
 * assert.deepEqual(renderFrameRate(undefined, { num: 25, den: 1 }), { num: 25, den: 1 });
 * ```
 */
export function renderFrameRate(
  fps: number | string | undefined,
  declared: FrameRate | undefined,
): FrameRate {
  if (fps === undefined) return declared ?? DEFAULT_FRAME_RATE;
  return parseFrameRate(checkOption(OPTIONS.fps, fps)!, "fps");
}

/**
 * Checks the options the render request declares (fps, format, quality, workers, frames,
 * output size) and the rules between them; throws {@linkcode RenderOptionError}.
 */
export function checkRenderOptions(options: RenderOptions): void {
  for (
    const declaration of [
      OPTIONS.fps,
      OPTIONS.format,
      OPTIONS.quality,
      OPTIONS.workers,
      OPTIONS.capture,
      OPTIONS.loudness,
      OPTIONS.scale,
      OPTIONS.captionsOut,
      OPTIONS.frameTimeoutMs,
    ]
  ) {
    checkOption<unknown>(declaration, options[declaration.key as keyof RenderOptions]);
  }
  checkOption(OPTIONS.frames, options.frames);
  const size = options.outputSize;
  if (size) {
    checkOption(OPTIONS.width, size.width, "outputSize.width");
    checkOption(OPTIONS.height, size.height, "outputSize.height");
  }
  checkHdrFormat(options.hdr, resolveRenderFormat(options.output, options.format));
}

/** Where each format's name comes from, for the messages below. */
const EXTENSIONS = ".mp4, .webm, .mov, .gif or a PNG sequence such as frames/%05d.png";

/**
 * The format of a render: `format` when given, else the one the `output` extension names,
 * else mp4. A `format` that disagrees with the extension, an extension no format writes, and
 * a `.png` output without a frame-number pattern are errors naming the fix.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(resolveRenderFormat("out.webm"), "webm");
 * assert.equal(resolveRenderFormat("frames/%05d.png"), "png");
 * assert.equal(resolveRenderFormat(undefined, "gif"), "gif");
 * assert.throws(() => resolveRenderFormat("out.webm", "mp4"), { field: "format", flag: "--format" });
 * ```
 */
export function resolveRenderFormat(output?: string, format?: RenderFormat): RenderFormat {
  if (output === undefined) return format ?? OPTIONS.format.default!;
  const named = formatOfPath(output);
  if (named === null) {
    const ext = output.slice(output.lastIndexOf("."));
    throw new RenderOptionError(
      "output",
      `no output format writes ${ext} files (${output}); end the path with ${EXTENSIONS}`,
      flagOf(OPTIONS.output),
    );
  }
  if (named === "png" && !hasFramePattern(output)) {
    throw new RenderOptionError(
      "output",
      `${output} is one image: a PNG sequence needs a frame-number pattern in the file name, ` +
        `e.g. ${output.replace(/[^/\\]*$/, "%05d.png")}; for a single frame use \`vid still\``,
      flagOf(OPTIONS.output),
    );
  }
  if (format !== undefined && named !== undefined && named !== format) {
    throw new RenderOptionError(
      "format",
      `--format ${format} conflicts with the output extension of ${output} (${named}); drop ` +
        `--format to render ${named}, or name the output for ${format}` +
        (format === "png" ? " (e.g. frames/%05d.png)" : ` (e.g. out.${format})`),
      flagOf(OPTIONS.format),
    );
  }
  if (format === "png" && named === undefined && !hasFramePattern(output)) {
    // `--format png -o frames`: the folder of the sequence.
    return format;
  }
  return format ?? named ?? OPTIONS.format.default!;
}

/** The output path: a file, or for a PNG sequence a pattern inside its folder. */
function outputPath(output: string | undefined, format: RenderFormat, id: string): string {
  if (format !== "png") return resolve(output ?? join("renders", `${id}.${format}`));
  if (output === undefined) return resolve("renders", id, "%05d.png");
  return hasFramePattern(output) ? resolve(output) : resolve(output, "%05d.png");
}

/**
 * Makes way for a PNG sequence's folder: it may not exist, or hold only frames of the
 * pattern (an earlier render, replaced when this one completes); anything else is kept
 * and the render refused before it starts.
 */
async function checkSequenceFolder(pattern: string): Promise<void> {
  const folder = dirname(pattern);
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return;
  }
  const frame = sequenceMatcher(basename(pattern));
  const other = names.find((n) => !frame.test(n));
  if (other !== undefined) {
    throw new RenderOptionError(
      "output",
      `${folder} holds ${other}, which is not a frame of ${basename(pattern)}; a PNG sequence ` +
        `replaces its whole folder, so choose a new or empty folder`,
      flagOf(OPTIONS.output),
    );
  }
}

/** A regular expression matching the file names of a printf frame pattern. */
function sequenceMatcher(pattern: string): RegExp {
  const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const match = pattern.match(/%0?(\d*)d/)!;
  const head = escape(pattern.slice(0, match.index));
  const tail = escape(pattern.slice(match.index! + match[0].length));
  return new RegExp(`^${head}\\d+${tail}$`);
}

function frameRange(options: RenderOptions, total: number): { from: number; to: number } {
  if (!options.frames) return { from: 0, to: total - 1 };
  const { from, to } = options.frames;
  if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || to < from || to >= total) {
    throw new RenderOptionError(
      "frames",
      `must be <from>-<to> with 0 <= from <= to <= ${total - 1} (the composition has ${total} ` +
        `frames), got ${from}-${to}`,
      flagOf(OPTIONS.frames),
    );
  }
  return { from, to };
}

/**
 * Renders a composition to a video file on this machine. `V` types `values`, e.g. with
 * the type `vid types` generates, so a wrong variable is a compile error.
 *
 * @example
 * ```ts no_run
 * const result = await renderComposition({
 *   target: "examples/hello",
 *   variables: '{"title":"Launch day"}',
 *   output: "renders/launch.mp4",
 * });
 * console.log(result.frames, result.renderFps);
 * ```
 */
export async function renderComposition<V extends object = Record<string, unknown>>(
  typedOptions: Omit<RenderOptions, "values"> & { values?: V } = {},
): Promise<RenderResult> {
  const options = typedOptions as RenderOptions;
  const started = performance.now();
  checkRenderOptions(options);
  const prepared = await prepareComposition(options);
  const plan = planRender(options, prepared.composition);
  const outputSize = frameSize(options, prepared.composition);
  if (plan.format === "png") await checkSequenceFolder(plan.output);
  const signal = options.signal;
  signal?.throwIfAborted();
  // A PNG sequence is written into a temp folder beside its own and renamed when complete.
  const sequenceDir = plan.format === "png"
    ? join(
      dirname(dirname(plan.output)),
      `.${basename(dirname(plan.output))}.partial-${Date.now()}`,
    )
    : undefined;
  const progress = progressReporter(plan.frames, options.onProgress);
  const abortController = new AbortController();
  const onAbort = () => abortController.abort();
  signal?.addEventListener("abort", onAbort);
  let session: RenderSession | undefined;
  try {
    session = await openRenderSession({
      prepared,
      frameRate: plan.frameRate,
      format: plan.format,
      capture: options.capture,
      seed: options.seed,
      epochMs: options.epochMs,
      outputSize,
      blockPrivateNetwork: options.blockPrivateNetwork,
      frameTimeoutMs: options.frameTimeoutMs,
      signal: abortController.signal,
      browser: options.browser,
      onWarning: options.onWarning,
      browsers: options.browsers,
      onStage: progress.stage,
    });
    const live = session;
    if (options.captionsOut !== undefined && live.captions.length === 0) {
      throw new RenderOptionError(
        "captionsOut",
        "the composition has no element with data-captions to write cues from; add " +
          'data-captions="subs.vtt" to the element that shows them',
        flagOf(OPTIONS.captionsOut),
      );
    }
    // Image formats: every chunk writes its numbered frames into one folder.
    const framesDir = sequenceDir ?? join(live.workDir, "frames");
    const framePattern = join(
      framesDir,
      plan.format === "png" ? basename(plan.output) : "%06d.png",
    );
    if (isImageSequence(plan.format)) {
      await mkdir(framesDir, { recursive: true });
      await grantToProcessUser(framesDir);
    }
    const chunkFiles = plan.chunks.map((c) =>
      isImageSequence(plan.format)
        ? framePattern
        : join(live.workDir, `chunk-${c.index}.${plan.format}`)
    );
    progress.startCapture();
    const retries = await runWorkers(live, {
      chunks: plan.chunks,
      workers: plan.workers,
      output: (chunk) => ({
        chunk,
        output: chunkFiles[chunk.index],
        quality: plan.quality,
        ffmpeg: live.ffmpeg,
        hdr: plan.hdr,
      }),
      onFrame: progress.frame,
      onRetry: progress.lost,
      abort: abortController,
      onWarning: options.onWarning,
      chunkFailed: (chunk, cause) => new ChunkFailedError(chunk, cause),
    });
    if (signal?.aborted) throw new RenderCancelledError();
    // The join needs no browser: they go down while ffmpeg joins.
    const browsersClosed = live.closeBrowsers();
    live.checkMissingAssets();
    progress.stage("joining");
    await joinOutput(live, plan, { chunkFiles, framePattern, sequenceDir }, signal);
    if (options.captionsOut !== undefined) {
      await writeCaptionsSidecar(options.captionsOut, live.captions[0].cues, plan);
    }
    await browsersClosed;
    progress.stage("done");
    const elapsedMs = performance.now() - started;
    const { composition } = prepared;
    return {
      output: plan.output,
      compositionId: composition.id,
      width: outputSize?.width ?? composition.width,
      height: outputSize?.height ?? composition.height,
      fps: plan.fps,
      frameRate: plan.frameRate,
      format: plan.format,
      quality: plan.quality,
      hdr: plan.hdr,
      from: plan.range.from,
      to: plan.range.to,
      frames: plan.frames,
      durationSeconds: frameTime(plan.frames, plan.frameRate),
      captureMode: live.browser.mode,
      workers: plan.workers,
      chunks: plan.chunks.length,
      retries,
      elapsedMs,
      renderFps: plan.frames / (elapsedMs / 1000),
      warnings: prepared.problems,
    };
  } catch (error) {
    if (signal?.aborted) throw new RenderCancelledError();
    throw error;
  } finally {
    signal?.removeEventListener("abort", onAbort);
    abortController.abort();
    await session?.close();
    if (sequenceDir) await rm(sequenceDir, { recursive: true, force: true });
  }
}

/** What a render makes, decided before anything starts. */
interface RenderPlan {
  format: RenderFormat;
  quality: Quality;
  hdr: boolean;
  loudness?: number;
  frameRate: FrameRate;
  fps: number;
  range: { from: number; to: number };
  /** Frames of the whole composition at this rate (the range may be part of it). */
  totalFrames: number;
  frames: number;
  chunks: Chunk[];
  workers: number;
  /** The output file, or for a PNG sequence its frame pattern. */
  output: string;
}

/** The format, rate, frame range, chunks and workers of a render of `composition`. */
function planRender(
  options: RenderOptions,
  composition: { id: string; fps?: FrameRate; duration: number },
): RenderPlan {
  const format = resolveRenderFormat(options.output, options.format);
  let frameRate = renderFrameRate(options.fps, composition.fps);
  // GIF delays are whole hundredths of a second: a GIF renders at most GIF_MAX_FPS.
  if (format === "gif" && frameRateValue(frameRate) > GIF_MAX_FPS) {
    frameRate = { num: GIF_MAX_FPS, den: 1 };
  }
  const fps = frameRateValue(frameRate);
  const totalFrames = frameCountOf(composition.duration, frameRate);
  const range = frameRange(options, totalFrames);
  const frames = range.to - range.from + 1;
  // Every GOP grid cell is its own encoder run, so neither --workers nor the chunk size
  // changes a frame.
  const chunkSize = options.chunkSize ?? LOCAL_CHUNK_CELLS * gopFrames(fps);
  const chunks = chunkPlan({
    from: range.from,
    frames,
    fps,
    chunkSize,
    maxParallelChunks: Math.ceil(frames / chunkSize),
  });
  return {
    format,
    quality: options.quality ?? OPTIONS.quality.default!,
    hdr: options.hdr === true,
    loudness: options.loudness,
    frameRate,
    fps,
    range,
    totalFrames,
    frames,
    chunks,
    workers: Math.min(options.workers ?? defaultWorkers(), chunks.length),
    output: outputPath(options.output, format, composition.id),
  };
}

/**
 * The frame size of a render: `outputSize` (else the composition's) times `scale`, checked
 * against the encoders' limit; undefined when that is the composition's own size.
 */
function frameSize(
  options: Pick<RenderOptions, "outputSize" | "scale">,
  composition: { width: number; height: number },
): { width: number; height: number } | undefined {
  if (options.scale === undefined || options.scale === 1) return options.outputSize;
  return scaledSize(options.outputSize ?? composition, options.scale);
}

/** Writes the `--captions-out` file for the plan's range, whole or not at all. */
async function writeCaptionsSidecar(
  file: string,
  cues: readonly CaptionCue[],
  plan: RenderPlan,
): Promise<void> {
  const shifted = shiftCues(
    cues,
    frameTime(plan.range.from, plan.frameRate),
    frameTime(plan.frames, plan.frameRate),
  );
  const target = resolve(file);
  await mkdir(dirname(target), { recursive: true });
  const partial = join(dirname(target), `.${basename(target)}.partial-${Date.now()}`);
  try {
    await writeFile(partial, formatCaptions(shifted, target));
    await rename(partial, target);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}

/** Keeps a render's {@linkcode RenderProgress} and reports each change. */
function progressReporter(
  framesTotal: number,
  report: ((progress: RenderProgress) => void) | undefined,
): {
  stage(stage: RenderProgress["stage"], media?: MediaProgress): void;
  startCapture(): void;
  frame(): void;
  lost(frames: number): void;
} {
  const progress: RenderProgress = { framesDone: 0, framesTotal, fps: 0, stage: "starting" };
  report?.({ ...progress });
  // Timed from the start of capture, not from the first frame: one frame over a few
  // microseconds would read as a rate of 100000 fps.
  let captureStart = performance.now();
  return {
    stage(stage, media) {
      progress.stage = stage;
      report?.({ ...progress, ...(media ? { media } : {}) });
    },
    startCapture() {
      captureStart = performance.now();
    },
    frame() {
      progress.framesDone++;
      progress.stage = "rendering";
      const seconds = (performance.now() - captureStart) / 1000;
      progress.fps = seconds > 0 ? progress.framesDone / seconds : 0;
      progress.etaSeconds = progress.fps > 0
        ? (progress.framesTotal - progress.framesDone) / progress.fps
        : undefined;
      report?.({ ...progress });
    },
    lost(frames) {
      progress.framesDone -= frames;
    },
  };
}

/**
 * Writes the render's output from its chunks: a PNG sequence's folder replaces the old
 * one, a GIF is encoded from the frames, a video is joined with its soundtrack; each is
 * written beside its final name and renamed when complete.
 */
async function joinOutput(
  session: RenderSession,
  plan: RenderPlan,
  parts: { chunkFiles: string[]; framePattern: string; sequenceDir?: string },
  signal?: AbortSignal,
): Promise<void> {
  const { output, format } = plan;
  if (format === "png") {
    await replaceFolder(parts.sequenceDir!, dirname(output));
    return;
  }
  await mkdir(dirname(output), { recursive: true });
  const partial = join(dirname(output), `.${basename(output)}.partial-${Date.now()}.${format}`);
  try {
    if (format === "gif") {
      await encodeGif(session.ffmpeg, {
        pattern: parts.framePattern,
        startNumber: plan.range.from,
        rate: ffmpegRate(plan.frameRate),
        output: partial,
        signal,
      });
    } else {
      // The video formats: chunks join with the concat demuxer, audio muxed once.
      await assembleVideo({
        ffmpeg: session.ffmpeg,
        ffprobe: session.ffprobe,
        chunkFiles: parts.chunkFiles,
        timing: { fps: plan.fps, frames: plan.chunks.map((c) => c.frames) },
        format: format as OutputFormat,
        media: session.media,
        duration: frameTime(plan.frames, plan.frameRate),
        startAt: frameTime(plan.range.from, plan.frameRate),
        timelineEnd: frameTime(plan.totalFrames, plan.frameRate),
        loudness: plan.loudness,
        input: session.input,
        inputArgs: session.inputArgs,
        workDir: session.workDir,
        output: partial,
        signal,
      });
    }
    await rename(partial, output);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}

/**
 * Puts a finished PNG sequence in place: `folder` (absent, or holding only an earlier
 * sequence, see `checkSequenceFolder`) is moved aside, `partial` renamed to it, the old one
 * removed. A reader never sees a half-written sequence.
 */
async function replaceFolder(partial: string, folder: string): Promise<void> {
  const old = `${partial}.old`;
  let moved = false;
  try {
    await rename(folder, old);
    moved = true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  try {
    await rename(partial, folder);
  } catch (error) {
    if (moved) await rename(old, folder);
    throw error;
  }
  if (moved) await rm(old, { recursive: true, force: true });
}
