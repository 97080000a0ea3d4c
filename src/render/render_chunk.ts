/**
 * The chunk renderer: a composition page renders contiguous frame ranges, each into its
 * own encoded segment. A page only seeks forward, so one page can render several chunks
 * in increasing order (local workers pull chunks from a queue); the hosted server and the
 * Lambda worker render one chunk per page with {@linkcode renderChunk}.
 *
 * @module
 */

import type { Variables } from "../composition/declarations.ts";
import { type FrameRate, frameRateValue } from "../composition/frame_rate.ts";
import {
  type PageErrorRecord,
  RUNTIME_SOURCE_URL,
  type RuntimeFontFace,
  runtimeScript,
} from "../runtime/page_runtime.ts";
import { type Browser, closePage, navigate, openPage } from "./browser.ts";
import type { CdpSession } from "./cdp.ts";
import { type Capturer, createCapturer, evaluate, fastForwardSlice, seekFrame } from "./capture.ts";
import { assertTextShown } from "./text_check.ts";
import { pageErrorFrom } from "./page_error.ts";
import { type Chunk, gopFrames } from "./chunk_plan.ts";
import { type RemoteAssets, serveRemoteAssets } from "./remote.ts";
import { type Encoder, hasAlpha, type Quality, type RenderFormat, startEncoder } from "./encode.ts";
import {
  DEFAULT_FRAME_TIMEOUT_MS,
  FrameTimeoutError,
  PAGE_LOAD_TIMEOUT_MS,
  stopHungPage,
  underDeadline,
} from "./watchdog.ts";

/** What a composition page is opened with. */
export interface PageSpec {
  /** URL of the composition entry page. */
  url: string;
  width: number;
  height: number;
  /**
   * The exact rate, parsed once where the request came in; the page runtime, the capturer
   * and the encoder take it as it is.
   */
  frameRate: FrameRate;
  /** Decides the capture image format: PNG with alpha for webm/mov/png, JPEG for mp4/gif. */
  format: RenderFormat;
  /** Merged variables for `window.__vid.getVariables()`. */
  variables: Variables;
  /** Seed of the page's `Math.random`. */
  seed: number;
  /** `Date.now()` at virtual time 0. */
  epochMs: number;
  /** Readiness gate timeout per frame, inside the page. @default 30000 */
  readyTimeoutMs?: number;
  /**
   * The host's deadline of one frame's seek and capture, milliseconds (`--frame-timeout`):
   * past it the page counts as hung (see watchdog.ts). @default 30000
   */
  frameTimeoutMs?: number;
  /** Frame-exact stand-ins of `<video>` sources (see `prepareVideoProxies`). */
  videoProxies?: Record<string, { url: string; fps: number }>;
  /** vid check's page: a missing sub-composition file is no page error. @default false */
  skipMissingSubCompositions?: boolean;
  /** Faces HyperFrames would embed for undeclared families (see `hyperframesFonts`). */
  fonts?: RuntimeFontFace[];
  /** HyperFrames' text rule first in the page's head (see `hyperframesTextRendering`). */
  hyperframesTextRendering?: boolean;
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
  /**
   * Segment file to write (extension matching the format); for an image sequence, a printf
   * pattern whose numbers are the frame indices.
   */
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
  /**
   * Stops a hung page for good: terminates its script and kills its browser (the page's
   * renderer would otherwise spin on). Never throws.
   */
  stop(): Promise<void>;
}

/**
 * Runs `work` on a composition page under the host's deadline of one frame (the spec's
 * `frameTimeoutMs`) and the render's abort signal: when either passes first the page is
 * stopped (see {@linkcode CompositionPage.stop}) and the call rejects with
 * {@linkcode FrameTimeoutError} naming `frame`, or with the signal's reason.
 *
 * @example
 * ```ts no_run
 * import { type FrameVideos, seekFrame } from "./capture.ts";
 *
 * async function seekSafely(composition: CompositionPage): Promise<FrameVideos> {
 *   return await frameUnderDeadline(composition, 10, () => seekFrame(composition.page, 10));
 * }
 * ```
 */
export function frameUnderDeadline<T>(
  composition: CompositionPage,
  frame: number,
  work: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  const timeoutMs = composition.spec.frameTimeoutMs ?? DEFAULT_FRAME_TIMEOUT_MS;
  return underDeadline(signal?.aborted ? Promise.reject(signal.reason) : work(), {
    timeoutMs,
    signal,
    expired: () => new FrameTimeoutError(frame, timeoutMs),
    stop: () => composition.stop(),
  });
}

/** Wall-clock time of one fast-forward slice, at most (a quarter of the frame deadline, if less). */
const FAST_FORWARD_SLICE_MS = 2000;

/**
 * Moves a page's clock to just before `frame` (see {@linkcode fastForwardSlice}) in slices,
 * each under the host's deadline of one frame: the seek to a chunk's first frame or a late
 * still then costs one frame's work, however many frames the page's own animation loop
 * (`requestAnimationFrame`) must be stepped through first. A slice that passes the deadline
 * fails the frame as a seek would ({@linkcode FrameTimeoutError}).
 *
 * @example
 * ```ts no_run
 * import { seekFrame } from "./capture.ts";
 *
 * async function seekLate(composition: CompositionPage): Promise<void> {
 *   await fastForward(composition, 3000);
 *   await frameUnderDeadline(composition, 3000, () => seekFrame(composition.page, 3000));
 * }
 * ```
 */
export async function fastForward(
  composition: CompositionPage,
  frame: number,
  signal?: AbortSignal,
): Promise<void> {
  if (frame <= 0) return; // nothing before it to step through
  const timeoutMs = composition.spec.frameTimeoutMs ?? DEFAULT_FRAME_TIMEOUT_MS;
  const budgetMs = Math.max(1, Math.min(FAST_FORWARD_SLICE_MS, Math.floor(timeoutMs / 4)));
  let reached = -Infinity;
  while (reached < frame - 1) {
    signal?.throwIfAborted();
    const before = reached;
    reached = await frameUnderDeadline(
      composition,
      frame,
      () => fastForwardSlice(composition.page, frame, budgetMs),
      signal,
    );
    // The page stepped nothing (it is past frame - 1 already): the seek says why, if wrong.
    if (reached <= before) break;
  }
}

/** CDP's `Runtime.exceptionThrown` details (lines and columns from 0). */
interface ExceptionDetails {
  text?: string;
  url?: string;
  lineNumber?: number;
  columnNumber?: number;
  exception?: { description?: string; value?: unknown };
  stackTrace?: {
    callFrames: { functionName: string; url: string; lineNumber: number; columnNumber: number }[];
  };
}

/** The runtime's shape of an uncaught exception CDP reported while the page loaded. */
function loadErrorRecord(details: ExceptionDetails): PageErrorRecord {
  const description = details.exception?.description ??
    (details.exception && "value" in details.exception
      ? `Uncaught ${String(details.exception.value)}`
      : details.text ?? "an unknown error");
  // The page's frames: those above the runtime's (see the runtime's own stack reading).
  const callFrames = details.stackTrace?.callFrames ?? [];
  const firstPage = callFrames.findIndex((f) => !f.url.endsWith(RUNTIME_SOURCE_URL));
  const runtimeBelow = callFrames.findIndex((f, i) =>
    i > firstPage && firstPage >= 0 && f.url.endsWith(RUNTIME_SOURCE_URL)
  );
  const stack = callFrames
    .slice(Math.max(0, firstPage), runtimeBelow < 0 ? undefined : runtimeBelow)
    .filter((f) => /^(https?|file|blob):/.test(f.url))
    .map((f) => ({
      functionName: f.functionName,
      url: f.url,
      line: f.lineNumber + 1,
      column: f.columnNumber + 1,
    }));
  return {
    message: description.split("\n    at ")[0],
    phase: "load",
    stack,
    ...(details.url && details.lineNumber !== undefined
      ? { url: details.url, line: details.lineNumber + 1, column: (details.columnNumber ?? 0) + 1 }
      : {}),
  };
}

/**
 * Throws the page's load error when its runtime recorded one (an exception in a frame of
 * another document, which the runtime never sees, fails nothing, as before), with the
 * location details of the matching CDP exception.
 */
async function throwLoadError(
  page: CdpSession,
  pageUrl: string,
  thrown: readonly ExceptionDetails[],
): Promise<void> {
  const errors = await evaluate(page, "window.__vid.errors()") as PageErrorRecord[];
  const first = errors.find((e) => e.phase === "load");
  if (!first) return;
  const records = thrown.map(loadErrorRecord);
  const match = records.find((r) => r.message === first.message) ?? first;
  throw pageErrorFrom(match.stack.length > 0 || match.url ? match : first, pageUrl, null);
}

/**
 * Opens a window with the vid runtime and loads the composition.
 *
 * @example
 * ```ts no_run
 * import type { Browser } from "./browser.ts";
 * import type { Chunk } from "./chunk_plan.ts";
 *
 * async function renderOne(browser: Browser, spec: PageSpec, chunk: Chunk): Promise<void> {
 *   const page = await openComposition(browser, spec);
 *   await renderRange(page, { chunk, output: "chunk-0.mp4", quality: "standard", ffmpeg: "ffmpeg" });
 *   await page.close();
 * }
 * ```
 */
export async function openComposition(
  browser: Browser,
  spec: PageSpec,
  signal?: AbortSignal,
): Promise<CompositionPage> {
  const alpha = hasAlpha(spec.format);
  // Every CDP call of the opening is bounded by one host deadline: a page that busy-loops
  // while loading answers none of them, and the runtime's own timers stop with it.
  let page: CdpSession | undefined;
  const stop = (): Promise<void> =>
    page ? stopHungPage(page, () => browser.close()) : browser.close().catch(() => undefined);
  const timeoutMs = Math.max(PAGE_LOAD_TIMEOUT_MS, spec.frameTimeoutMs ?? 0);
  const opening = (async (): Promise<CdpSession> => {
    page = await openPage(browser, {
      width: spec.width,
      height: spec.height,
      scale: spec.scale,
      transparent: alpha,
      initScript: runtimeScript({
        variables: spec.variables,
        seed: spec.seed,
        epochMs: spec.epochMs,
        fps: frameRateValue(spec.frameRate),
        frameRate: spec.frameRate,
        readyTimeoutMs: spec.readyTimeoutMs ?? 30000,
        videoProxies: spec.videoProxies,
        ...(spec.skipMissingSubCompositions && { skipMissingSubCompositions: true }),
        ...(spec.fonts?.length && { fonts: spec.fonts }),
        ...(spec.hyperframesTextRendering && { hyperframesTextRendering: true }),
      }),
    });
    const opened = page;
    // A throw while the page loads is reported as a load error with CDP's own location
    // details (complete even for a script from another origin).
    const thrown: ExceptionDetails[] = [];
    const stopListening = opened.on("Runtime.exceptionThrown", (params) => {
      thrown.push((params as { exceptionDetails: ExceptionDetails }).exceptionDetails);
    });
    try {
      await serveRemoteAssets(opened, spec.remote ?? {});
      await navigate(opened, spec.url, timeoutMs);
      if (thrown.length > 0) await throwLoadError(opened, spec.url, thrown);
    } catch (error) {
      await closePage(opened);
      throw error;
    } finally {
      stopListening();
    }
    return opened;
  })();
  // The deadline's margin over navigate's own timeout lets that one name the URL.
  const loaded = await underDeadline(opening, {
    timeoutMs: timeoutMs + 5000,
    signal,
    expired: () => new FrameTimeoutError(null, timeoutMs),
    stop,
  });
  return {
    spec,
    page: loaded,
    capturer: createCapturer(loaded, {
      mode: browser.mode,
      format: alpha ? "png" : "jpeg",
      fps: frameRateValue(spec.frameRate),
    }),
    frame: -1,
    close: () => closePage(loaded),
    stop: () => stopHungPage(loaded, () => browser.close()),
  };
}

/**
 * Starts the encoder of one chunk of a composition: ffmpeg takes 100-200 ms to start, which
 * {@linkcode renderChunk} spends while the page loads.
 */
export function startChunkEncoder(spec: PageSpec, out: ChunkOutput): Encoder {
  return startEncoder({
    ffmpeg: out.ffmpeg,
    output: out.output,
    frameRate: spec.frameRate,
    format: spec.format,
    quality: out.quality,
    width: Math.round(spec.width * (spec.scale ?? 1)),
    height: Math.round(spec.height * (spec.scale ?? 1)),
    frameFormat: hasAlpha(spec.format) ? "png" : "jpeg",
    startNumber: out.chunk.from,
    hdr: out.hdr,
    outputSize: spec.outputSize,
    // One encoder run per GOP grid cell: chunks start on the grid (see chunk_plan.ts); a
    // target below a second plans a finer one.
    cellFrames: out.chunk.cellFrames ?? gopFrames(frameRateValue(spec.frameRate)),
    frames: out.chunk.frames,
  });
}

/**
 * Renders one chunk on an open page into `out.output`. `onFrame` is called after each
 * frame is handed to the encoder. Each frame's seek and capture has the host's deadline
 * (`spec.frameTimeoutMs`, see {@linkcode frameUnderDeadline}); `signal` ends the render at
 * once, a frame in flight included (its page's browser is killed). Either way ffmpeg is
 * killed and waited for before the call rejects.
 * `encoder` is one {@linkcode startChunkEncoder} started for this chunk, else one is
 * started here.
 */
export async function renderRange(
  composition: CompositionPage,
  out: ChunkOutput,
  onFrame: (frame: number) => void = () => {},
  signal?: AbortSignal,
  encoder: Encoder = startChunkEncoder(composition.spec, out),
): Promise<void> {
  // One frame in flight to ffmpeg: the next frame is seeked and captured while ffmpeg
  // drains the pipe of the previous one (a 1080p JPEG fills the 64 KB pipe buffer, and an
  // encoder busy with x264's lookahead reads it late); frames still reach it in order.
  let writing: Promise<void> = Promise.resolve();
  // An abort also ends a wait on ffmpeg itself (a full pipe, the join of its cells).
  const abort = (): void => void encoder.abort();
  signal?.addEventListener("abort", abort);
  try {
    await fastForward(composition, out.chunk.from, signal);
    for (let frame = out.chunk.from; frame <= out.chunk.to; frame++) {
      signal?.throwIfAborted();
      // The seek and the capture are one frame's work under the host's deadline: a page
      // that stops answering either one fails the frame, whatever the page's own timers.
      const image = await frameUnderDeadline(composition, frame, async () => {
        const videos = await seekFrame(composition.page, frame);
        composition.frame = frame;
        // Frame 0 is in every video: bad text there is in every frame that follows too.
        if (frame === 0) {
          await assertTextShown(
            composition.page,
            composition.spec.width,
            composition.spec.height,
            frame,
          );
        }
        return await composition.capturer.capture(videos);
      }, signal);
      await writing;
      writing = encoder.write(image).then(() => onFrame(frame));
      // A failed write is thrown by the next `await writing`; until then it is handled.
      writing.catch(() => {});
    }
    await writing;
    await encoder.finish();
  } catch (error) {
    // ffmpeg has exited and its cell files are gone before the failure goes on.
    await encoder.abort();
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
 * ```ts no_run
 * import type { Browser } from "./browser.ts";
 *
 * async function firstSecond(browser: Browser, spec: PageSpec): Promise<void> {
 *   await renderChunk(browser, spec, { chunk: { index: 0, from: 0, to: 29, frames: 30 },
 *     output: "chunk-0.mp4", quality: "standard", ffmpeg: "ffmpeg" });
 * }
 * ```
 */
export async function renderChunk(
  browser: Browser,
  spec: PageSpec,
  out: ChunkOutput,
  onFrame?: (frame: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  const encoder = startChunkEncoder(spec, out);
  let composition: CompositionPage;
  try {
    composition = await openComposition(browser, spec, signal);
  } catch (error) {
    await encoder.abort();
    throw error;
  }
  try {
    await renderRange(composition, out, onFrame, signal, encoder);
  } finally {
    await composition.close();
  }
}
