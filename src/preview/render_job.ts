/**
 * The studio's render dialog: one local render at a time with the values on screen and
 * the dialog's format, quality, frame range and file name, through the same
 * `renderComposition` as `vid render`, into the project's `renders/` folder (or another
 * folder the caller picks). Progress (with ETA) and the outcome are kept as one status
 * object that the preview server pushes to the studio; cancel stops the browser and
 * ffmpeg and leaves no file.
 *
 * @module
 */

import { mkdir, readdir, rm, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Variables } from "../composition/declarations.ts";
import { createBrowserPool } from "../render/capture_mode.ts";
import {
  RenderCancelledError,
  renderComposition,
  RenderOptionError,
  type RenderProgress,
  type RenderResult,
} from "../render/render.ts";
import type { OutputFormat, Quality } from "../render/encode.ts";
import { checkOption, flagOf, OPTIONS } from "../request/options.ts";
import { frameCountOf, frameRateValue, parseFrameRate } from "../composition/frame_rate.ts";
import { CONTENT_TYPES } from "../util/mime.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { renderStill } from "../render/still.ts";

/** Content type of a finished render, by file extension. */
export const RENDER_EXTENSIONS: Readonly<Record<string, string>> = Object.fromEntries(
  (["mp4", "webm", "mov", "gif", "png"] as const).map((ext) => [ext, CONTENT_TYPES[ext]]),
);

/**
 * The formats the studio renders: every format of `vid render` (`png`, a PNG sequence, is a
 * folder `renders/<name>/` of `%05d.png` frames) and `still`, one frame as `renders/<name>.png`
 * through the same `renderStill` as `vid still`.
 */
export const STUDIO_FORMATS: readonly StudioFormat[] = [
  "mp4",
  "webm",
  "mov",
  "gif",
  "png",
  "still",
];

/** A format the studio renders. */
export type StudioFormat = OutputFormat | "gif" | "png" | "still";

/** Where a studio render is. */
export type PreviewRenderState = "idle" | "rendering" | "done" | "failed" | "cancelled";

/** What the studio shows of the current (or last) render. */
export interface PreviewRenderStatus {
  state: PreviewRenderState;
  /** Increases by one per render started. 0 before the first. */
  id: number;
  /** Progress while rendering (and the last progress after). */
  progress?: RenderProgress;
  /**
   * File name inside the render folder, once done; of a PNG sequence, its first frame
   * (`clip/00003.png`).
   */
  file?: string;
  /** A PNG sequence's folder inside the render folder (`clip/`), once done. */
  folder?: string;
  /** Absolute path of the finished file. */
  output?: string;
  /** Size of the finished file in bytes. */
  bytes?: number;
  /** Frames in the finished file. */
  frames?: number;
  /** Wall time of the finished render in ms. */
  elapsedMs?: number;
  /** Why the render failed. */
  error?: { name: string; message: string; field?: string };
}

/** A render was asked for while another one is running. */
export class RenderBusyError extends VidError {
  override name = "RenderBusyError";
  /** The field at fault: the render request. */
  override readonly field = "render";
  constructor(progress: RenderProgress | undefined) {
    const where = progress && progress.framesTotal > 0
      ? ` (${progress.framesDone} / ${progress.framesTotal} frames)`
      : "";
    super(
      `a render is already running${where}; wait for it to finish, then click Render again`,
      { exitCode: EXIT_FAILED },
    );
  }
}

/** Options of {@linkcode createRenderJobs}. */
export interface RenderJobsOptions {
  /** Project directory or HTML file, as `vid render` takes it. */
  target: string;
  /** Entry HTML file inside the project directory. @default "index.html" */
  composition?: string;
  /** The project directory, for a request naming another composition. @default target */
  projectDir?: string;
  /** Folder the files are written to. */
  rendersDir: string;
  /** Called on every status change (every frame while rendering). */
  onStatus?: (status: PreviewRenderStatus) => void;
  /** Parallel workers, each a browser of its own. @default as `vid render` */
  workers?: number;
  /** The host's deadline of one frame's seek and capture, ms. @default as `vid render` */
  frameTimeoutMs?: number;
}

/** What one render is started with. */
export interface RenderRequest {
  /** The values on screen; strict: a render never starts with a marked value. */
  values: Variables;
  /** Frames per second, integer 1-240. */
  fps: number;
  /** Used to name the file: `<compositionId>-<date>-<time>.<format>`. */
  compositionId: string;
  /** Entry HTML file inside the project, when not the one the jobs were created with. */
  composition?: string;
  /** @default "mp4" */
  format?: StudioFormat;
  /** @default "standard" */
  quality?: Quality;
  /** Device pixels per CSS pixel (`--scale`). @default 1 */
  scale?: number;
  /** Only frames `from`..`to` (inclusive); a still is frame `from`. @default every frame */
  frames?: { from: number; to: number };
  /** File name without extension; `-2`, `-3`… are added when it exists. @default dated */
  name?: string;
}

/**
 * The dialog's choices from a request body, checked: `format`, `quality`, `from`/`to`
 * (inclusive frames within `base.frames`, checked as the `frames` option), `scale` and `name`
 * (letters, digits, `.`, `_`, `-`). Throws {@linkcode RenderOptionError} naming the field
 * (`format`, `quality`, `frames`, `name`) with the declaration's words.
 */
export function renderRequestFrom(
  body: Record<string, unknown>,
  base: Omit<RenderRequest, "frames"> & { frames: number; duration?: number },
): RenderRequest {
  const { frames: composed, duration, ...request } = base;
  const result: RenderRequest = { ...request };
  // Another rate than the composition's: the range is in frames of that rate.
  let total = composed;
  if (body.fps !== undefined && body.fps !== "") {
    const rate = parseFrameRate(checkOption(OPTIONS.fps, body.fps)!, "fps");
    result.fps = frameRateValue(rate);
    if (duration !== undefined) total = frameCountOf(duration, rate);
  }
  // Format, quality and range through the render request's declarations: the same words
  // as `vid render --format/--quality/--frames`.
  // `still` is the studio's word for `vid still`; every other word is `vid render --format`'s.
  const format = body.format === "still" ? "still" : checkOption(OPTIONS.format, body.format);
  if (format !== undefined) result.format = format;
  const quality = checkOption(OPTIONS.quality, body.quality);
  if (quality !== undefined) result.quality = quality;
  const scale = checkOption(OPTIONS.scale, body.scale);
  if (scale !== undefined) result.scale = scale;
  if (body.from !== undefined || body.to !== undefined) {
    const frames = checkOption(OPTIONS.frames, {
      from: body.from ?? 0,
      to: body.to ?? total - 1,
    })!;
    // The range must also lie inside this composition, which the declaration cannot know.
    if (frames.to >= total) {
      throw new RenderOptionError(
        "frames",
        `must end at or before the last frame, ${total - 1}, got ${frames.from}-${frames.to}`,
        flagOf(OPTIONS.frames),
      );
    }
    result.frames = frames;
  }
  if (body.name !== undefined && body.name !== "") {
    const name = String(body.name).replace(/\.(mp4|webm|mov|gif|png)$/i, "");
    if (!/^[A-Za-z0-9_][A-Za-z0-9._-]{0,99}$/.test(name)) {
      throw new RenderOptionError(
        "name",
        `use letters, digits, ".", "_" and "-" (at most 100, not starting with "." or "-"), ` +
          `got ${JSON.stringify(body.name)}`,
      );
    }
    result.name = name;
  }
  return result;
}

/** The one-at-a-time renderer of a preview server. */
export interface RenderJobs {
  /** The current or last render. */
  status(): PreviewRenderStatus;
  /** Starts a render; throws {@linkcode RenderBusyError} while one runs. */
  start(request: RenderRequest): PreviewRenderStatus;
  /** Resolves when no render is running. */
  idle(): Promise<void>;
  /**
   * Cancels the running render (browser and ffmpeg stop, its partial file is removed)
   * and waits for it to stop; false when none was running.
   */
  cancel(): Promise<boolean>;
  /** Cancels a running render (its partial file is removed) and waits for it to stop. */
  close(): Promise<void>;
}

/**
 * `hello-20260126-101502.mp4` (or the name asked for), with `-2`, `-3`… when it exists; a
 * PNG sequence is a folder (no extension), a still a `.png`.
 */
async function outputName(
  dir: string,
  id: string,
  now: Date,
  format: StudioFormat,
  asked?: string,
): Promise<string> {
  const extension = format === "png" ? "" : format === "still" ? ".png" : `.${format}`;
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const safeId = id.replace(/[^A-Za-z0-9._-]/g, "_") || "render";
  const stem = asked ?? `${safeId}-${stamp}`;
  for (let n = 1;; n++) {
    const name = `${stem}${n > 1 ? `-${n}` : ""}${extension}`;
    const taken = await stat(join(dir, name)).then(() => true, () => false);
    if (!taken) return name;
  }
}

/** Bytes of the files in a PNG sequence's folder. */
async function folderBytes(dir: string, names: string[]): Promise<number> {
  let total = 0;
  for (const name of names) total += (await stat(join(dir, name))).size;
  return total;
}

function describeError(error: unknown): NonNullable<PreviewRenderStatus["error"]> {
  const err = error instanceof Error ? error : new Error(String(error));
  const field = err instanceof VidError ? err.field : undefined;
  return {
    name: err.name,
    message: err.message,
    ...(field !== undefined ? { field } : {}),
  };
}

/**
 * Creates the renderer behind the studio's render dialog.
 *
 * @example
 * ```ts no_run
 * const jobs = createRenderJobs({ target: "examples/hello", rendersDir: "examples/hello/renders" });
 * jobs.start({ values: { title: "Hi" }, fps: 30, compositionId: "hello" });
 * await jobs.idle();
 * console.log(jobs.status().output);
 * ```
 */
export function createRenderJobs(options: RenderJobsOptions): RenderJobs {
  const rendersDir = resolve(options.rendersDir);
  let current: PreviewRenderStatus = { state: "idle", id: 0 };
  let running: Promise<void> | undefined;
  let controller: AbortController | undefined;
  // The studio renders again and again: its capture browser stays warm between renders.
  // Cancel takes it down too (stop means nothing of the render keeps running); the next
  // render launches a fresh one.
  let browsers = createBrowserPool();

  /** Closes the warm browser; the next render gets a fresh pool. */
  const closeBrowsers = async (): Promise<void> => {
    const closing = browsers;
    browsers = createBrowserPool();
    await closing.close();
  };

  const publish = (status: PreviewRenderStatus): void => {
    current = status;
    options.onStatus?.({ ...status });
  };

  const run = async (id: number, request: RenderRequest, signal: AbortSignal): Promise<void> => {
    const started = performance.now();
    try {
      await mkdir(rendersDir, { recursive: true });
      const format = request.format ?? OPTIONS.videoFormat.default!;
      const file = await outputName(
        rendersDir,
        request.compositionId,
        new Date(),
        format,
        request.name,
      );
      if (format === "still") {
        // One frame through `vid still`'s function (a PNG keeps the page's transparency).
        // It has no abort signal: cancel waits for the one frame (under the frame deadline)
        // and then removes it, so a cancelled still leaves no file either.
        const still = await renderStill({
          target: request.composition === undefined
            ? options.target
            : options.projectDir ?? options.target,
          composition: request.composition ?? options.composition,
          values: request.values,
          strictVariables: true,
          fps: request.fps,
          frame: request.frames?.from ?? 0,
          scale: request.scale,
          frameTimeoutMs: options.frameTimeoutMs,
          output: join(rendersDir, file),
        });
        if (signal.aborted) {
          await rm(still.output, { force: true });
          throw new RenderCancelledError();
        }
        publish({
          state: "done",
          id,
          file,
          output: still.output,
          bytes: still.bytes,
          frames: 1,
          elapsedMs: Math.round(performance.now() - started),
        });
        return;
      }
      // A PNG sequence: the folder `renders/<name>/`, frames named as `vid render` names them.
      const sequence = format === "png";
      const result: RenderResult = await renderComposition({
        target: request.composition === undefined
          ? options.target
          : options.projectDir ?? options.target,
        composition: request.composition ?? options.composition,
        values: request.values,
        strictVariables: true,
        fps: request.fps,
        format,
        quality: request.quality,
        scale: request.scale,
        frames: request.frames,
        workers: options.workers,
        frameTimeoutMs: options.frameTimeoutMs,
        output: sequence ? join(rendersDir, file, "%05d.png") : join(rendersDir, file),
        signal,
        browsers,
        onProgress: (progress) => {
          if (current.id === id) publish({ state: "rendering", id, progress });
        },
      });
      const frames = sequence ? (await readdir(join(rendersDir, file))).sort() : [];
      const bytes = sequence
        ? await folderBytes(join(rendersDir, file), frames)
        : (await stat(result.output)).size;
      publish({
        state: "done",
        id,
        progress: current.progress,
        ...(sequence ? { file: `${file}/${frames[0]}`, folder: `${file}/` } : { file }),
        output: sequence ? join(rendersDir, file) : result.output,
        bytes,
        frames: result.frames,
        elapsedMs: Math.round(result.elapsedMs),
      });
    } catch (error) {
      // The studio says "cancelled" only once nothing of the render runs: the warm browser
      // goes down first (before, it was still closing when the status went out).
      if (signal.aborted) await closeBrowsers().catch(() => undefined);
      publish({
        state: signal.aborted ? "cancelled" : "failed",
        id,
        progress: current.progress,
        error: describeError(error),
      });
    }
  };

  return {
    status: () => ({ ...current }),
    start(request: RenderRequest): PreviewRenderStatus {
      if (current.state === "rendering") throw new RenderBusyError(current.progress);
      const id = current.id + 1;
      controller = new AbortController();
      publish({ state: "rendering", id });
      running = run(id, request, controller.signal).finally(() => {
        running = undefined;
      });
      return { ...current };
    },
    async idle(): Promise<void> {
      await running;
    },
    async cancel(): Promise<boolean> {
      if (current.state !== "rendering" || !controller) return false;
      controller.abort();
      await running;
      return true;
    },
    async close(): Promise<void> {
      controller?.abort();
      await running;
      await browsers.close();
    },
  };
}
