/**
 * The chunk renderer: one page renders one contiguous frame range into one encoded
 * segment. Local parallel rendering, the hosted server and the Lambda worker all call it.
 *
 * @module
 */

import type { Variables } from "../composition/declarations.ts";
import { runtimeScript } from "../runtime/page_runtime.ts";
import { type Browser, closePage, navigate, openPage } from "./browser.ts";
import { createCapturer, seekFrame } from "./capture.ts";
import type { Chunk } from "./chunk_plan.ts";
import { type Encoder, hasAlpha, type OutputFormat, type Quality, startEncoder } from "./encode.ts";

/** Everything a chunk render needs besides the browser. */
export interface ChunkJob {
  /** URL of the composition entry page. */
  url: string;
  width: number;
  height: number;
  fps: number;
  format: OutputFormat;
  quality: Quality;
  /** Merged variables for `window.__vid.getVariables()`. */
  variables: Variables;
  /** Seed of the page's `Math.random`. */
  seed: number;
  /** `Date.now()` at virtual time 0. */
  epochMs: number;
  /** Frames to render. */
  chunk: Chunk;
  /** Segment file to write (extension matching `format`). */
  output: string;
  /** Path of ffmpeg. */
  ffmpeg: string;
  /** Readiness gate timeout per frame. @default 30000 */
  readyTimeoutMs?: number;
}

/**
 * Renders `job.chunk` of the composition into `job.output`. `onFrame` is called after
 * each frame is handed to the encoder. `signal` aborts between frames.
 *
 * @example
 * ```ts
 * await renderChunk(browser, { ...job, chunk: { index: 0, from: 0, to: 29, frames: 30 } });
 * ```
 */
export async function renderChunk(
  browser: Browser,
  job: ChunkJob,
  onFrame: (frame: number) => void = () => {},
  signal?: AbortSignal,
): Promise<void> {
  const alpha = hasAlpha(job.format);
  const page = await openPage(browser, {
    width: job.width,
    height: job.height,
    transparent: alpha,
    initScript: runtimeScript({
      variables: job.variables,
      seed: job.seed,
      epochMs: job.epochMs,
      fps: job.fps,
      readyTimeoutMs: job.readyTimeoutMs ?? 30000,
    }),
  });
  let encoder: Encoder | undefined;
  const abort = () => encoder?.abort();
  signal?.addEventListener("abort", abort);
  try {
    await navigate(page, job.url);
    const capturer = createCapturer(page, {
      mode: browser.mode,
      format: alpha ? "png" : "jpeg",
      fps: job.fps,
    });
    encoder = startEncoder({
      ffmpeg: job.ffmpeg,
      output: job.output,
      fps: job.fps,
      format: job.format,
      quality: job.quality,
      width: job.width,
      height: job.height,
      frameFormat: alpha ? "png" : "jpeg",
    });
    for (let frame = job.chunk.from; frame <= job.chunk.to; frame++) {
      signal?.throwIfAborted();
      await seekFrame(page, frame);
      const image = await capturer.capture();
      await encoder.write(image);
      onFrame(frame);
    }
    await encoder.finish();
  } catch (error) {
    encoder?.abort();
    throw error;
  } finally {
    signal?.removeEventListener("abort", abort);
    await closePage(page);
  }
}
