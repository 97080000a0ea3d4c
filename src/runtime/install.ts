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

import { createAnimationDriver, seekTimelines } from "./animations.ts";
import { createCaptionDisplay } from "./caption_display.ts";
import { captureRealTime, frameTimeMs, frameTimeSeconds, installVirtualClock } from "./clock.ts";
import { createHyperframesModel } from "./hyperframes.ts";
import { createMediaSeeker } from "./media_elements.ts";
import { listenForPageErrors } from "./page_errors.ts";
import { listenForPlayer } from "./player_bridge.ts";
import type { RuntimeConfig, VidPageApi } from "./page_runtime.ts";
import { installSeededRandom } from "./random.ts";
import { createReadinessGate } from "./readiness.ts";
import { trackedVariables } from "./variable_reads.ts";
import { createVideoFramePainter, type VideoFramePainter } from "./video_paint.ts";

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
  const w = globalThis as unknown as Record<string, unknown> & Window;
  if (w.__vid) return;

  const real = captureRealTime();
  const rate = config.frameRate;
  let currentFrame = -1;

  installSeededRandom(config.seed);
  const clock = installVirtualClock(config.epochMs, real, {
    report: (error) => errors.record(error),
    settle: () => animations.scan(),
  });
  const errors = listenForPageErrors();
  const pageErrors = errors.records;
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
  const seekHooks = new Set<(t: number) => void | Promise<void>>();
  const gate = createReadinessGate(config.readyTimeoutMs, real);
  const media = createMediaSeeker(config, real, hyperframes);
  const captions = createCaptionDisplay();
  let painter: VideoFramePainter | undefined;

  const api: VidPageApi = {
    get captions() {
      return structuredClone(captions.tracks);
    },
    getVariables,
    onSeek(fn) {
      seekHooks.add(fn);
      return () => seekHooks.delete(fn);
    },
    delay: gate.delay,
    get time() {
      return clock.nowMs / 1000;
    },
    media: () => media.elements().map(media.describe).filter((d) => d.src !== ""),
    errors: () => structuredClone(pageErrors),
    videoFramesPending: media.pending,
    reseekVideos: media.reseekVideos,
    untilVideosPresented: media.untilVideosPresented,
    paintVideoFrames() {
      painter ??= createVideoFramePainter(real.sleep);
      const videos = media.elements().filter((el): el is HTMLVideoElement =>
        el instanceof HTMLVideoElement
      );
      return painter.paint(videos);
    },
    clearVideoFrames: () => painter?.clear() ?? 0,
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
    async seek(frame: number): Promise<void> {
      if (frame < currentFrame) {
        throw new Error(
          `frame ${frame}: the page is already at frame ${currentFrame}; seeks only move forward`,
        );
      }
      if (pageErrors.length > 0 && pageErrors[0].phase === "load") {
        throw new Error(`the page threw while loading: ${pageErrors[0].message}`);
      }
      animations.scan();
      for (let step = currentFrame + 1; step <= frame; step++) {
        errors.seekingFrame = step;
        await clock.runTimersUntil(frameTimeMs(step, config.fps, rate));
        clock.runFrameCallbacks();
      }
      errors.seekingFrame = frame;
      currentFrame = frame;
      const t = frameTimeSeconds(frame, config.fps, rate);
      clock.nowMs = t * 1000;
      // Caption files are in before the page's handlers run, so they can read __vid.captions.
      try {
        await captions.loadAll();
      } catch (error) {
        errors.record(error);
      }
      for (const hook of seekHooks) {
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
        seekTimelines(w.__timelines, t, hyperframes);
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
        await media.seekVideos(t);
      } catch (error) {
        errors.record(error);
      }
      try {
        await captions.show(t);
      } catch (error) {
        errors.record(error);
      }
      if (pageErrors.length > 0) {
        const first = pageErrors[0];
        throw new Error(`frame ${first.frame ?? frame}: the page threw ${first.message}`);
      }
      await gate.wait(frame);
    },
  };
  Object.defineProperty(w, "__vid", { value: Object.freeze(api), enumerable: false });
  // In `<vid-player>`'s iframe, the player reaches this API over postMessage.
  listenForPlayer(api);
}
