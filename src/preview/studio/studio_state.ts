/**
 * The studio's state as one explicit object, and the pure functions that read it: which
 * frame is the last, where a frame clamps to, and the key that says which values a stage
 * page was loaded with. `client.ts` holds one {@linkcode StudioState} and hands it to the
 * modules that act on it; the unit tests reach these functions without a page.
 *
 * @module
 */

import type { Info, Live } from "./types.ts";
import type { UrlState } from "./url_state.ts";
import { clampFrame, type PlaybackClock } from "./playback.ts";

/** Everything the studio tracks between events. */
export interface StudioState {
  /** The composition's entry file; "" until the server said which one it started with. */
  entry: string;
  /** The entry the server started with. */
  defaultEntry: string;
  /** Variables from the URL, applied once the declarations are known. */
  urlValues: Record<string, unknown> | undefined;
  /** The composition on stage, once the server described it. */
  info: Info | undefined;
  /** The variables' current values. */
  values: Record<string, unknown>;
  /** Bumped to load fresh pages of the same values (the files changed). */
  reloads: number;
  /** Bumped at every swap of the live page. */
  generation: number;
  /** The page on stage. */
  live: Live | undefined;
  /** A page loaded hidden with the current values, not yet seeked, for a step back. */
  standby: Live | undefined;
  /** The standby page on its way. */
  standbyLoading: Promise<void> | undefined;
  /** The stage key the standby page being loaded is for. */
  standbyLoadingKey: string;
  /** The frame the playhead wants. */
  wanted: number;
  /** The frame on stage; -1 before the first. */
  shown: number;
  /** The stage is loading or seeking. */
  busy: boolean;
  /** Asked for another frame while busy: look again when done. */
  pumpAgain: boolean;
  /** Playing in real time. */
  playing: boolean;
  /** Where playback started. */
  clock: PlaybackClock;
  /** The latest variables check sent (older answers are dropped). */
  checkSeq: number;
  /** The debounce of variable edits. */
  changeTimer: ReturnType<typeof setTimeout> | undefined;
  /** The debounce of URL writes. */
  urlTimer: ReturnType<typeof setTimeout> | undefined;
}

/**
 * The studio's state on opening, from its URL's state.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const state = createStudioState({ entry: "b.html", frame: 12, muted: false, volume: 1 });
 * assert.equal(state.wanted, 12);
 * assert.equal(state.shown, -1);
 * ```
 */
export function createStudioState(fromUrl: UrlState): StudioState {
  return {
    entry: fromUrl.entry,
    defaultEntry: "",
    urlValues: fromUrl.values,
    info: undefined,
    values: {},
    reloads: 0,
    generation: 0,
    live: undefined,
    standby: undefined,
    standbyLoading: undefined,
    standbyLoadingKey: "",
    wanted: fromUrl.frame,
    shown: -1,
    busy: false,
    pumpAgain: false,
    playing: false,
    clock: { fromFrame: 0, startMs: 0 },
    checkSeq: 0,
    changeTimer: undefined,
    urlTimer: undefined,
  };
}

/**
 * The composition's last frame (0 before it is known).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const state = createStudioState({ entry: "", frame: 0, muted: false, volume: 1 });
 * assert.equal(lastFrame(state), 0);
 * ```
 */
export function lastFrame(state: Pick<StudioState, "info">): number {
  return state.info ? state.info.frames - 1 : 0;
}

/**
 * `frame` rounded and clamped to the composition's frames.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(studioFrame({ info: undefined }, 7), 0);
 * ```
 */
export function studioFrame(state: Pick<StudioState, "info">, frame: number): number {
  return clampFrame(frame, state.info?.frames ?? 1);
}

/**
 * Which page a frame needs: the entry, the reload count, the frame rate and the values. A
 * stage page loaded under another key is stale.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const a = stageKey({ entry: "a.html", reloads: 0, info: undefined, values: { t: 1 } });
 * const b = stageKey({ entry: "a.html", reloads: 0, info: undefined, values: { t: 2 } });
 * assert.notEqual(a, b);
 * ```
 */
export function stageKey(
  state: Pick<StudioState, "entry" | "reloads" | "info" | "values">,
): string {
  return JSON.stringify([state.entry, state.reloads, state.info?.fps, state.values]);
}

/**
 * The studio's title line for a composition: id, size, aspect ratio, duration, rate, frames.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Info } from "./types.ts";
 *
 * const info = { id: "intro", width: 320, height: 180, duration: 2, fps: 29.97002997,
 *   frames: 60 } as Info;
 * assert.equal(compositionTitle(info), "intro · 320×180 · 2 s · 29.97 fps · 60 frames");
 * ```
 */
export function compositionTitle(info: Info): string {
  return `${info.id} · ${info.width}×${info.height}${
    info.aspectRatio ? ` (${info.aspectRatio})` : ""
  } · ${info.duration} s · ${Number(info.fps.toFixed(3))} fps · ${info.frames} frames`;
}

/**
 * The stage's scale: the zoom chosen, or with `"fit"` the largest that fits the composition
 * in an area of `areaWidth` x `areaHeight` with a 16 px margin (at least 0.01).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(stageScale(672, 392, 320, 180, "fit"), 2);
 * assert.equal(stageScale(672, 392, 320, 180, "0.5"), 0.5);
 * ```
 */
export function stageScale(
  areaWidth: number,
  areaHeight: number,
  width: number,
  height: number,
  zoom: string,
): number {
  const fit = Math.min((areaWidth - 32) / width, (areaHeight - 32) / height);
  return zoom === "fit" ? Math.max(0.01, fit) : Number(zoom);
}
