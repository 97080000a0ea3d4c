/**
 * The page runtime's entry: {@linkcode installVidRuntime} installs the deterministic
 * environment and `window.__vid` before any page script runs. `scripts/build_page_code.ts`
 * bundles this module and everything it imports into one script (`page_bundle.ts`);
 * `runtimeScript` and `runtimeCall` (`page_runtime.ts`) hand it the config.
 *
 * A seek to frame n steps the virtual clock through every frame up to n (timers, then one
 * animation frame round per frame), then runs, in order: the `onSeek` hooks, GSAP
 * timelines, HyperFrames clips, CSS/WAAPI animations, videos, captions; then the readiness
 * gate. The order of installation matters too: the clock and the error listeners are in
 * place before HyperFrames mounts its sub-compositions, whose scripts use both.
 *
 * @module
 */

import { type AnimationDriver, createAnimationDriver, seekTimelines } from "./animations.ts";
import { type CaptionDisplay, createCaptionDisplay } from "./caption_display.ts";
import {
  captureRealTime,
  frameTimeMs,
  frameTimeSeconds,
  installVirtualClock,
  type RealTime,
  type VirtualClock,
} from "./clock.ts";
import { createHyperframesModel, type HyperframesModel } from "./hyperframes.ts";
import { createMediaSeeker, type MediaSeeker } from "./media_elements.ts";
import { listenForPageErrors, type PageErrorLog } from "./page_errors.ts";
import { listenForPlayer } from "./player_bridge.ts";
import type { RuntimeConfig, VidPageApi } from "./page_runtime.ts";
import { installSeededRandom } from "./random.ts";
import { insertTextRenderingRule } from "./text_rendering.ts";
import { createReadinessGate, type ReadinessGate } from "./readiness.ts";
import { trackedVariables } from "./variable_reads.ts";
import { createVideoFramePainter, type VideoFramePainter } from "./video_paint.ts";

/** The page's global object as the runtime reads it. */
type PageGlobal = Record<string, unknown> & Window;

/** The runtime's parts for one page and the frame it is at: what a seek drives. */
interface PageRuntime {
  config: RuntimeConfig;
  w: PageGlobal;
  real: RealTime;
  clock: VirtualClock;
  errors: PageErrorLog;
  hyperframes: HyperframesModel;
  animations: AnimationDriver;
  seekHooks: Set<(t: number) => void | Promise<void>>;
  gate: ReadinessGate;
  media: MediaSeeker;
  captions: CaptionDisplay;
  /** Created on the first `paintVideoFrames` (screenshot capture). */
  painter: VideoFramePainter | undefined;
  /** The frame of the last seek; -1 before the first. */
  currentFrame: number;
  /** The last frame the clock stepped through (a seek's, or a fast-forward's); -1 before. */
  steppedFrame: number;
}

/**
 * Steps the virtual clock through each frame after the current one up to `to`: its timers,
 * then one animation frame round. With `budgetMs`, stops after the first step that ends past
 * that much wall-clock time; resolves with the last frame stepped through.
 */
async function stepFrames(runtime: PageRuntime, to: number, budgetMs?: number): Promise<number> {
  const { config, clock, errors, real } = runtime;
  const started = real.Date.now();
  for (let step = runtime.steppedFrame + 1; step <= to; step++) {
    errors.seekingFrame = step;
    await clock.runTimersUntil(frameTimeMs(step, config.fps, config.frameRate));
    clock.runFrameCallbacks();
    runtime.steppedFrame = step;
    if (budgetMs !== undefined && real.Date.now() - started >= budgetMs) break;
  }
  return runtime.steppedFrame;
}

/**
 * `__vid.fastForward(frame, budgetMs)`: steps the clock towards the frame before `frame`
 * (see {@linkcode stepFrames}) for about `budgetMs` of wall-clock time, so the host can move a
 * page far ahead (a chunk's first frame, a late still) in slices, each under its own
 * deadline, instead of one seek no deadline fits; resolves with the frame reached.
 */
async function fastForward(runtime: PageRuntime, frame: number, budgetMs: number): Promise<number> {
  checkSeekable(runtime, frame);
  // As a seek does first: CSS/WAAPI animations are the clock's, not the page's wall clock.
  runtime.animations.scan();
  return await stepFrames(runtime, frame - 1, budgetMs);
}

/** Throws when the page cannot be seeked to `frame`: it is past it, or threw while loading. */
function checkSeekable(runtime: PageRuntime, frame: number): void {
  if (frame < runtime.steppedFrame) {
    throw new Error(
      `frame ${frame}: the page is already at frame ${runtime.steppedFrame}; seeks only move forward`,
    );
  }
  const pageErrors = runtime.errors.records;
  if (pageErrors.length > 0 && pageErrors[0].phase === "load") {
    throw new Error(`the page threw while loading: ${pageErrors[0].message}`);
  }
}

/**
 * `__vid.seek(frame)`: steps the virtual clock through every frame up to `frame`, then runs
 * the `onSeek` hooks, GSAP timelines, HyperFrames clips, CSS/WAAPI animations, videos and
 * captions at its time, and waits for the readiness gate.
 */
async function seekFrame(runtime: PageRuntime, frame: number): Promise<void> {
  const { config, real, clock, errors, animations, hyperframes } = runtime;
  checkSeekable(runtime, frame);
  animations.scan();
  await stepFrames(runtime, frame);
  errors.seekingFrame = frame;
  runtime.currentFrame = frame;
  const t = frameTimeSeconds(frame, config.fps, config.frameRate);
  clock.nowMs = t * 1000;
  // Caption files are in before the page's handlers run, so they can read __vid.captions.
  try {
    await runtime.captions.loadAll();
  } catch (error) {
    errors.record(error);
  }
  for (const hook of runtime.seekHooks) {
    // A handler's promise that never settles (say, one awaiting a timer: timers run on
    // the frame clock, which stands still during a seek) fails the frame after the
    // readiness timeout instead of holding the render forever.
    let timer: ReturnType<typeof real.setTimeout> | undefined;
    const stalled = new Promise<"stalled">((resolve) => {
      timer = real.setTimeout(() => resolve("stalled"), config.readyTimeoutMs);
    });
    let outcome: unknown;
    try {
      outcome = await Promise.race([hook(t), stalled]);
    } catch (error) {
      errors.record(error);
    } finally {
      real.clearTimeout(timer);
    }
    if (outcome === "stalled") {
      throw new Error(
        `frame ${frame}: an onSeek handler did not settle within ${config.readyTimeoutMs} ms ` +
          `(timers inside it wait for the next frame; use __vid.delay() to hold a frame)`,
      );
    }
  }
  // A throw from timeline code (a GSAP callback, an onUpdate) or an animation's handler
  // is recorded with its stack like any other, so the error says where it came from.
  try {
    seekTimelines(runtime.w.__timelines, t, hyperframes);
  } catch (error) {
    errors.record(error);
  }
  hyperframes.applyClips(t);
  try {
    animations.scan();
    animations.apply();
  } catch (error) {
    errors.record(error);
  }
  try {
    await runtime.media.seekVideos(t);
  } catch (error) {
    errors.record(error);
  }
  try {
    await runtime.captions.show(t);
  } catch (error) {
    errors.record(error);
  }
  if (errors.records.length > 0) {
    const first = errors.records[0];
    throw new Error(`frame ${first.frame ?? frame}: the page threw ${first.message}`);
  }
  await runtime.gate.wait(frame);
}

/** `window.__vid`'s API over the page's runtime. */
function pageApi(runtime: PageRuntime, getVariables: VidPageApi["getVariables"]): VidPageApi {
  const { w, clock, errors, hyperframes, media, captions, gate } = runtime;
  return {
    get captions() {
      return structuredClone(captions.tracks);
    },
    getVariables,
    onSeek(fn) {
      runtime.seekHooks.add(fn);
      return () => runtime.seekHooks.delete(fn);
    },
    delay: gate.delay,
    get time() {
      return clock.nowMs / 1000;
    },
    media: () => media.elements().map(media.describe).filter((d) => d.src !== ""),
    errors: () => structuredClone(errors.records),
    videoFramesPending: media.pending,
    videosEntering: media.entering,
    reseekVideos: media.reseekVideos,
    untilVideosPresented: media.untilVideosPresented,
    paintVideoFrames() {
      runtime.painter ??= createVideoFramePainter(runtime.real.sleep);
      const videos = media.elements().filter((el): el is HTMLVideoElement =>
        el instanceof HTMLVideoElement
      );
      return runtime.painter.paint(videos);
    },
    clearVideoFrames: () => runtime.painter?.clear() ?? 0,
    timedWindows() {
      const registry = w.__timelines;
      const keys = registry && typeof registry === "object" && !Array.isArray(registry)
        ? Object.keys(registry)
        : [];
      return {
        windows: hyperframes.windows(),
        timelineStarts: Object.fromEntries(
          keys.map((id) => [id, hyperframes.timelineStart(id)]),
        ),
      };
    },
    seek: (frame: number): Promise<void> => seekFrame(runtime, frame),
    fastForward: (frame: number, budgetMs: number): Promise<number> =>
      fastForward(runtime, frame, budgetMs),
  };
}

/**
 * Installs `window.__vid` and the deterministic environment. Runs in the page; a second call
 * in the same page does nothing.
 *
 * @example
 * ```ts no_run
 * // What runtimeScript(config) runs in the page, before any page script:
 * installVidRuntime({ variables: { title: "Hi" }, seed: 1, epochMs: 0, fps: 30, readyTimeoutMs: 30000 });
 * ```
 */
export function installVidRuntime(config: RuntimeConfig): void {
  const w = globalThis as unknown as PageGlobal;
  if (w.__vid) return;

  const real = captureRealTime();

  if (config.hyperframesTextRendering) insertTextRenderingRule();
  installSeededRandom(config.seed);
  const clock = installVirtualClock(config.epochMs, real, {
    report: (error) => errors.record(error),
    settle: () => animations.scan(),
  });
  const errors = listenForPageErrors();
  // One tracker for both getVariables: an undeclared id read through either is recorded once.
  const getVariables = trackedVariables(config.variables, (error) => errors.record(error));

  // HyperFrames' model: window.__hyperframes, clips, sub-compositions (hyperframes.ts).
  const hyperframes = createHyperframesModel({
    getVariables,
    report: errors.record,
    skipMissing: config.skipMissingSubCompositions === true,
    fonts: config.fonts,
  });
  // Mounted once the document is parsed, before `load`: the renderer's first look at the
  // page (its media list) and the first seek see the sub-compositions.
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", () => hyperframes.mount(), { once: true });
  } else {
    hyperframes.mount();
  }

  const animations = createAnimationDriver(() => clock.nowMs, hyperframes);
  const runtime: PageRuntime = {
    config,
    w,
    real,
    clock,
    errors,
    hyperframes,
    animations,
    seekHooks: new Set(),
    gate: createReadinessGate(config.readyTimeoutMs, real),
    media: createMediaSeeker(config, real, hyperframes),
    captions: createCaptionDisplay(),
    painter: undefined,
    currentFrame: -1,
    steppedFrame: -1,
  };
  const api = pageApi(runtime, getVariables);
  Object.defineProperty(w, "__vid", { value: Object.freeze(api), enumerable: false });
  // In `<vid-player>`'s iframe, the player reaches this API over postMessage.
  listenForPlayer(api);
}
