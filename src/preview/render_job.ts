/**
 * The studio's Render button: one local render at a time with the values on screen,
 * through the same `renderComposition` as `vid render`, into the project's `renders/`
 * folder (or another folder the caller picks). Progress and the outcome are kept as one
 * status object that the preview server pushes to the studio.
 *
 * @module
 */

import { mkdir, stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Variables } from "../composition/declarations.ts";
import { createBrowserPool } from "../render/capture_mode.ts";
import { renderComposition, type RenderProgress, type RenderResult } from "../render/render.ts";

/** Where a studio render is. */
export type PreviewRenderState = "idle" | "rendering" | "done" | "failed";

/** What the studio shows of the current (or last) render. */
export interface PreviewRenderStatus {
  state: PreviewRenderState;
  /** Increases by one per render started. 0 before the first. */
  id: number;
  /** Progress while rendering (and the last progress after). */
  progress?: RenderProgress;
  /** File name inside the render folder, once done. */
  file?: string;
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
export class RenderBusyError extends Error {
  override name = "RenderBusyError";
  /** The field at fault: the render request. */
  readonly field = "render";
  constructor(progress: RenderProgress | undefined) {
    const where = progress && progress.framesTotal > 0
      ? ` (${progress.framesDone} / ${progress.framesTotal} frames)`
      : "";
    super(
      `a render is already running${where}; wait for it to finish, then click Render again`,
    );
  }
}

/** Options of {@linkcode createRenderJobs}. */
export interface RenderJobsOptions {
  /** Project directory or HTML file, as `vid render` takes it. */
  target: string;
  /** Entry HTML file inside the project directory. @default "index.html" */
  composition?: string;
  /** Folder the files are written to. */
  rendersDir: string;
  /** Called on every status change (every frame while rendering). */
  onStatus?: (status: PreviewRenderStatus) => void;
  /** Parallel browser windows. @default as `vid render` */
  workers?: number;
}

/** What one render is started with. */
export interface RenderRequest {
  /** The values on screen; strict: a render never starts with a marked value. */
  values: Variables;
  /** Frames per second, integer 1-240. */
  fps: number;
  /** Used to name the file: `<compositionId>-<date>-<time>.mp4`. */
  compositionId: string;
}

/** The one-at-a-time renderer of a preview server. */
export interface RenderJobs {
  /** The current or last render. */
  status(): PreviewRenderStatus;
  /** Starts a render; throws {@linkcode RenderBusyError} while one runs. */
  start(request: RenderRequest): PreviewRenderStatus;
  /** Resolves when no render is running. */
  idle(): Promise<void>;
  /** Cancels a running render (its partial file is removed) and waits for it to stop. */
  close(): Promise<void>;
}

/** `hello-20260126-101502.mp4`, with `-2`, `-3`… when that name exists. */
async function outputName(dir: string, id: string, now: Date): Promise<string> {
  const stamp = now.toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  const safeId = id.replace(/[^A-Za-z0-9._-]/g, "_") || "render";
  for (let n = 1;; n++) {
    const name = `${safeId}-${stamp}${n > 1 ? `-${n}` : ""}.mp4`;
    const taken = await stat(join(dir, name)).then(() => true, () => false);
    if (!taken) return name;
  }
}

function describeError(error: unknown): NonNullable<PreviewRenderStatus["error"]> {
  const err = error instanceof Error ? error : new Error(String(error));
  const field = (err as { field?: unknown }).field;
  return {
    name: err.name,
    message: err.message,
    ...(typeof field === "string" ? { field } : {}),
  };
}

/**
 * Creates the renderer behind the studio's Render button.
 *
 * @example
 * ```ts
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
  const browsers = createBrowserPool();

  const publish = (status: PreviewRenderStatus): void => {
    current = status;
    options.onStatus?.({ ...status });
  };

  const run = async (id: number, request: RenderRequest, signal: AbortSignal): Promise<void> => {
    try {
      await mkdir(rendersDir, { recursive: true });
      const file = await outputName(rendersDir, request.compositionId, new Date());
      const result: RenderResult = await renderComposition({
        target: options.target,
        composition: options.composition,
        values: request.values,
        strictVariables: true,
        fps: request.fps,
        format: "mp4",
        workers: options.workers,
        output: join(rendersDir, file),
        signal,
        browsers,
        onProgress: (progress) => {
          if (current.id === id) publish({ state: "rendering", id, progress });
        },
      });
      const info = await stat(result.output);
      publish({
        state: "done",
        id,
        progress: current.progress,
        file,
        output: result.output,
        bytes: info.size,
        frames: result.frames,
        elapsedMs: Math.round(result.elapsedMs),
      });
    } catch (error) {
      publish({ state: "failed", id, progress: current.progress, error: describeError(error) });
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
    async close(): Promise<void> {
      controller?.abort();
      await running;
      await browsers.close();
    },
  };
}
