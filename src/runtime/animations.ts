/**
 * Seek adapters for what animates on its own: CSS animations, CSS transitions and WAAPI
 * animations (`document.getAnimations()`), and GSAP-style timelines registered on
 * `window.__timelines`. Each is paused and set to the frame's time.
 *
 * An animation is driven from the virtual time at which it first appeared (inside a
 * HyperFrames sub-composition, from that composition's start); one the page paused itself is
 * left to the page.
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`).
 *
 * @module
 */

import type { HyperframesModel } from "./hyperframes.ts";

/** The page's CSS and WAAPI animations, driven by the virtual clock. */
export interface AnimationDriver {
  /** Pauses the animations that appeared since the last scan, born at the current time. */
  scan(): void;
  /** Sets every driven animation to the current time; forgets cancelled ones. */
  apply(): void;
}

/**
 * Creates the driver; `nowMs` reads the virtual clock.
 *
 * @example
 * ```ts no_run
 * let now = 0;
 * const animations = createAnimationDriver(() => now, undefined);
 * animations.scan(); // pauses what runs now, born at 0
 * now = 500;
 * animations.apply(); // each is 500 ms in
 * ```
 */
export function createAnimationDriver(
  nowMs: () => number,
  hyperframes: HyperframesModel | undefined,
): AnimationDriver {
  const births = new Map<Animation, number>();
  return {
    scan(): void {
      if (!document.getAnimations) return;
      for (const animation of document.getAnimations()) {
        if (births.has(animation)) continue;
        if (animation.playState === "paused") {
          births.set(animation, Number.NaN);
          continue;
        }
        // An animation inside a sub-composition runs on that composition's clock.
        const target = (animation.effect as KeyframeEffect | null)?.target ?? null;
        births.set(animation, Math.max(nowMs(), hyperframes?.compositionStartMs(target) ?? 0));
        animation.pause();
      }
    },
    apply(): void {
      for (const [animation, birth] of births) {
        // Cancelled (its class or element went away, or the page called cancel()): setting
        // its time would bring it back, above the page's current animations.
        if (animation.playState === "idle") {
          births.delete(animation);
          continue;
        }
        if (Number.isNaN(birth)) continue;
        animation.currentTime = (nowMs() - birth) * animation.playbackRate;
      }
    },
  };
}

/**
 * Pauses every timeline of `registry` (`window.__timelines`: an array, or an object keyed by
 * composition id) and seeks it to `t`; a timeline keyed by a composition's id runs on that
 * composition's clock (HyperFrames).
 *
 * @example
 * ```ts no_run
 * seekTimelines((globalThis as { __timelines?: unknown }).__timelines, 1.5, undefined);
 * ```
 */
export function seekTimelines(
  registry: unknown,
  t: number,
  hyperframes: HyperframesModel | undefined,
): void {
  if (!registry || typeof registry !== "object") return;
  const entries: [string | null, unknown][] = Array.isArray(registry)
    ? registry.map((timeline) => [null, timeline])
    : Object.entries(registry);
  for (const [id, timeline] of entries) {
    const tl = timeline as { pause?: () => void; seek?: (t: number, s: boolean) => void };
    if (typeof tl?.seek !== "function") continue;
    tl.pause?.();
    tl.seek(id !== null && hyperframes ? hyperframes.timelineTime(id, t) : t, false);
  }
}
