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

/** The GSAP timeline methods a seek uses; a registry entry without `seek` is left alone. */
interface SeekableTimeline {
  pause?: () => void;
  seek?: (t: number, suppressEvents: boolean) => void;
  totalTime?: ((t: number, suppressEvents: boolean) => void) & (() => number);
  getChildren?: (nested: boolean, tweens: boolean, timelines: boolean) => unknown[];
}

/** GSAP's callbacks; a zero-length child with one of them is a `call()` or a `set()` that calls. */
const CALLBACKS = ["onStart", "onUpdate", "onComplete", "onReverseComplete", "onRepeat"];

/**
 * Whether `timeline` holds a zero-length child with a callback: the refresh of
 * {@linkcode seekTimeline} is left out for it, as HyperFrames leaves it out, since moving the
 * playhead back onto such a child re-arms it.
 */
function hasInstantCallback(timeline: SeekableTimeline): boolean {
  if (typeof timeline.getChildren !== "function") return false;
  for (const child of timeline.getChildren(true, true, true)) {
    const tween = child as { vars?: Record<string, unknown>; totalDuration?: () => number };
    if (!CALLBACKS.some((name) => typeof tween.vars?.[name] === "function")) continue;
    if (typeof tween.totalDuration === "function" && tween.totalDuration() <= 1e-6) return true;
  }
  return false;
}

/**
 * Seeks one paused timeline to `t` as HyperFrames' renderer does: one seek that fires the
 * callbacks it passes; then, only when the playhead was already at `t` (a fresh timeline at
 * 0), a silent step 1 ms before `t` and forward onto it (1 ms on and back at 0). GSAP renders
 * nothing when the playhead is already at the time asked, so without the step the `set()`
 * calls and `from()` start states at 0 would not be drawn on frame 0. The last move is
 * forward wherever it can be, as in HyperFrames: GSAP renders the children of a timeline
 * moving back in reverse order, so where two tweens of one property overlap (an exit `to()`
 * starting while the entrance `fromTo()` still runs) the earlier one would win.
 */
function seekTimeline(timeline: SeekableTimeline, t: number): void {
  timeline.pause?.();
  if (typeof timeline.totalTime !== "function") {
    timeline.seek?.(t, false);
    return;
  }
  const before = Number(timeline.totalTime());
  timeline.totalTime(t, false);
  if (before !== t || hasInstantCallback(timeline)) return;
  timeline.totalTime(t >= 0.001 ? t - 0.001 : t + 0.001, true);
  timeline.totalTime(t, true);
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
    const tl = timeline as SeekableTimeline | null;
    if (typeof tl?.seek !== "function") continue;
    seekTimeline(tl, id !== null && hyperframes ? hyperframes.timelineTime(id, t) : t);
  }
}
