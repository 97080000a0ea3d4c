/**
 * The chunk renderer: a composition page renders contiguous frame ranges, each into its
 * own encoded segment. A page only seeks forward, so one page can render several chunks
 * in increasing order (local workers pull chunks from a queue); the hosted server and the
 * Lambda worker render one chunk per page with {@linkcode renderChunk}.
 *
 * @module
 */

import type { Variables } from "../composition/declarations.ts";
import { runtimeScript } from "../runtime/page_runtime.ts";
import { type Browser, closePage, navigate, openPage } from "./browser.ts";
import type { CdpSession } from "./cdp.ts";
import { type Capturer, createCapturer, seekFrame } from "./capture.ts";
import { type Chunk, gopFrames } from "./chunk_plan.ts";
import { type RemoteAssets, serveRemoteAssets } from "./remote.ts";
import { type Encoder, hasAlpha, type OutputFormat, type Quality, startEncoder } from "./encode.ts";

/** What a composition page is opened with. */
export interface PageSpec {
  /** URL of the composition entry page. */
  url: string;
  width: number;
  height: number;
  fps: number;
  /** Decides the capture image format: PNG with alpha for webm/mov, JPEG for mp4. */
  format: OutputFormat;
  /** Merged variables for `window.__vid.getVariables()`. */
  variables: Variables;
  /** Seed of the page's `Math.random`. */
  seed: number;
  /** `Date.now()` at virtual time 0. */
  epochMs: number;
  /** Readiness gate timeout per frame. @default 30000 */
  readyTimeoutMs?: number;
  /** Frame-exact stand-ins of `<video>` sources (see `prepareVideoProxies`). */
  videoProxies?: Record<string, { url: string; fps: number }>;
  /** Remote URLs from variables, answered from local copies (see `fetchRemoteMedia`). */
  remote?: RemoteAssets;
  /** Device pixels per CSS pixel: frames are captured at width x scale. @default 1 */
  scale?: number;
  /** Final frame size; captured frames are fitted into it (see `EncoderOptions`). */
  outputSize?: { width: number; height: number };
}

/** How one chunk is encoded. */
export interface ChunkOutput {
  chunk: Chunk;
  /** Segment file to write (extension matching the format). */
  output: string;
  quality: Quality;
  /** Path of ffmpeg. */
  ffmpeg: string;
  /** 10-bit HLG HEVC (mp4 only). */
  hdr?: boolean;
}

/** A composition loaded in a browser window, ready to render frames in order. */
export interface CompositionPage {
  readonly spec: PageSpec;
  readonly page: CdpSession;
  readonly capturer: Capturer;
  /** Last frame rendered on this page, -1 before the first; pages only seek forward. */
  frame: number;
  close(): Promise<void>;
}

/**
 * Opens a window with the vid runtime and loads the composition.
 *
 * @example
 * ```ts
 * const page = await openComposition(browser, spec);
 * await renderRange(page, { chunk, output: "chunk-0.mp4", quality: "standard", ffmpeg });
 * await page.close();
 * ```
 */
export async function openComposition(browser: Browser, spec: PageSpec): Promise<CompositionPage> {
  const alpha = hasAlpha(spec.format);
  const page = await openPage(browser, {
    width: spec.width,
    height: spec.height,
    scale: spec.scale,
    transparent: alpha,
    initScript: runtimeScript({
      variables: spec.variables,
      seed: spec.seed,
      epochMs: spec.epochMs,
      fps: spec.fps,
      readyTimeoutMs: spec.readyTimeoutMs ?? 30000,
      videoProxies: spec.videoProxies,
    }),
  });
  try {
    await serveRemoteAssets(page, spec.remote ?? {});
    await navigate(page, spec.url);
  } catch (error) {
    await closePage(page);
    throw error;
  }
  return {
    spec,
    page,
    capturer: createCapturer(page, {
      mode: browser.mode,
      format: alpha ? "png" : "jpeg",
      fps: spec.fps,
    }),
    frame: -1,
    close: () => closePage(page),
  };
}

/**
 * Renders one chunk on an open page into `out.output`. `onFrame` is called after each
 * frame is handed to the encoder; `signal` aborts between frames and kills ffmpeg.
 */
export async function renderRange(
  composition: CompositionPage,
  out: ChunkOutput,
  onFrame: (frame: number) => void = () => {},
  signal?: AbortSignal,
): Promise<void> {
  const { spec } = composition;
  const alpha = hasAlpha(spec.format);
  const encoder: Encoder = startEncoder({
    ffmpeg: out.ffmpeg,
    output: out.output,
    fps: spec.fps,
    format: spec.format,
    quality: out.quality,
    width: Math.round(spec.width * (spec.scale ?? 1)),
    height: Math.round(spec.height * (spec.scale ?? 1)),
    frameFormat: alpha ? "png" : "jpeg",
    hdr: out.hdr,
    outputSize: spec.outputSize,
    // One encoder run per GOP grid cell: chunks start on the grid (see chunk_plan.ts).
    cellFrames: gopFrames(spec.fps),
  });
  const abort = () => encoder.abort();
  signal?.addEventListener("abort", abort);
  try {
    for (let frame = out.chunk.from; frame <= out.chunk.to; frame++) {
      signal?.throwIfAborted();
      await seekFrame(composition.page, frame);
      composition.frame = frame;
      await encoder.write(await composition.capturer.capture());
      onFrame(frame);
    }
    await encoder.finish();
  } catch (error) {
    encoder.abort();
    throw error;
  } finally {
    signal?.removeEventListener("abort", abort);
  }
}

/**
 * Opens the composition, renders one chunk and closes the page: the unit of work of
 * the hosted server and the Lambda worker.
 *
 * @example
 * ```ts
 * await renderChunk(browser, spec, { chunk: { index: 0, from: 0, to: 29, frames: 30 },
 *   output: "chunk-0.mp4", quality: "standard", ffmpeg: "ffmpeg" });
 * ```
 */
export async function renderChunk(
  browser: Browser,
  spec: PageSpec,
  out: ChunkOutput,
  onFrame?: (frame: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  const composition = await openComposition(browser, spec);
  try {
    await renderRange(composition, out, onFrame, signal);
  } finally {
    await composition.close();
  }
}
