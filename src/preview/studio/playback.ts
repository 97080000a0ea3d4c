/**
 * Playback shared by the studio and `<vid-player>`: the real-time clock that turns "playing
 * since then, from that frame" into the frame due now, the clamp to the composition's
 * frames, and what a stage page must do to show a frame (seek on, or a fresh page: the
 * runtime only seeks forward). Both hosts run these functions, so the player's playhead is
 * the studio's; both bring a page to a frame with the runtime's `drawFrame`
 * (`src/runtime/frame_drawing.ts`), what a render captures.
 *
 * @module
 */

/** Where playback started: the frame and the `performance.now()` reading at that moment. */
export interface PlaybackClock {
  /** The frame playback started from. */
  fromFrame: number;
  /** `performance.now()` (ms) when it started. */
  startMs: number;
}

/**
 * `frame` rounded and kept within the `frames` of a composition (0 to `frames - 1`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(clampFrame(12.4, 10), 9);
 * assert.equal(clampFrame(-3, 10), 0);
 * assert.equal(clampFrame(4.6, 10), 5);
 * ```
 */
export function clampFrame(frame: number, frames: number): number {
  return Math.max(0, Math.min(Math.max(0, frames - 1), Math.round(frame)));
}

/**
 * The frame due at `nowMs` on `clock` at `fps`: whole frames elapsed since the start, so a
 * frame is shown for its full duration, as in the video. Not clamped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const clock = { fromFrame: 10, startMs: 1000 };
 * assert.equal(clockFrame(clock, 1000, 30), 10);
 * assert.equal(clockFrame(clock, 1999, 30), 39);
 * assert.equal(clockFrame(clock, 2000, 30), 40);
 * ```
 */
export function clockFrame(clock: PlaybackClock, nowMs: number, fps: number): number {
  return clock.fromFrame + Math.floor(((nowMs - clock.startMs) * fps) / 1000);
}

/**
 * Seconds on the composition timeline at `nowMs` on `clock`, played at `rate` times real
 * time (what the sound follows: it moves continuously, not frame by frame).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(clockSeconds({ fromFrame: 30, startMs: 0 }, 500, 30), 1.5);
 * assert.equal(clockSeconds({ fromFrame: 30, startMs: 0 }, 500, 30, 2), 2);
 * ```
 */
export function clockSeconds(clock: PlaybackClock, nowMs: number, fps: number, rate = 1): number {
  return clock.fromFrame / fps + ((nowMs - clock.startMs) * rate) / 1000;
}

/**
 * The clock for playback starting now at `wanted`: from frame 0 when the playhead stands on
 * the last frame (play after the end starts over).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(startClock(5, 60, 100), { fromFrame: 5, startMs: 100 });
 * assert.deepEqual(startClock(59, 60, 100), { fromFrame: 0, startMs: 100 });
 * ```
 */
export function startClock(wanted: number, frames: number, nowMs: number): PlaybackClock {
  const from = clampFrame(wanted, frames);
  return { fromFrame: from >= frames - 1 ? 0 : from, startMs: nowMs };
}

/** A stage page as the plan sees it: the values it was loaded with and the frame it is at. */
export interface StagePage {
  /** The values (and reload count) it was loaded with. */
  key: string;
  /** The frame it is at; -1 before its first seek. */
  frame: number;
}

/**
 * What showing `target` for values `key` takes: `"none"` (the page shows it), `"seek"` (seek
 * the live page forward) or `"fresh"` (another page: none yet, other values, or an earlier
 * frame, which a page that only seeks forward cannot reach).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(framePlan({ key: "a", frame: 5 }, "a", 5), "none");
 * assert.equal(framePlan({ key: "a", frame: 5 }, "a", 9), "seek");
 * assert.equal(framePlan({ key: "a", frame: 5 }, "a", 2), "fresh");
 * assert.equal(framePlan({ key: "a", frame: 5 }, "b", 9), "fresh");
 * assert.equal(framePlan(undefined, "a", 0), "fresh");
 * ```
 */
export function framePlan(
  live: StagePage | undefined,
  key: string,
  target: number,
): "none" | "seek" | "fresh" {
  if (!live || live.key !== key || live.frame > target) return "fresh";
  return live.frame === target ? "none" : "seek";
}
