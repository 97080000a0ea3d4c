/**
 * The studio's state as one explicit object, and the pure functions that read and change
 * it: which frame is the last, where a frame clamps to, the key that says which values a
 * stage page was loaded with, what the readouts and the URL say, which page a step takes,
 * and how the state changes when the composition is read again or another one is picked.
 * `client.ts` holds one {@linkcode StudioState} and hands it to the modules that act on it
 * (`stage.ts`, `compositions.ts`); the unit tests reach these functions without a page.
 *
 * @module
 */

import type { Info, Live } from "./types.ts";
import { changedValues, type UrlState } from "./url_state.ts";
import { clampFrame, type PlaybackClock } from "./playback.ts";
import { keptValues } from "./variables_form.ts";

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

/**
 * What the URL says of the studio: the entry, the frame on stage (the one wanted before the
 * first is shown), the values that differ from the defaults, mute and volume; undefined
 * before the composition is known.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const state = createStudioState({ entry: "", frame: 3, muted: false, volume: 1 });
 * assert.equal(studioUrlState(state, { muted: true, volume: 0.5 }), undefined);
 * ```
 */
export function studioUrlState(
  state: Pick<StudioState, "info" | "entry" | "shown" | "wanted" | "values">,
  sound: { muted: boolean; volume: number },
): UrlState | undefined {
  if (!state.info) return undefined;
  return {
    entry: state.entry,
    frame: state.shown >= 0 ? state.shown : studioFrame(state, state.wanted),
    values: changedValues(state.values, state.info.defaults),
    muted: sound.muted,
    volume: sound.volume,
  };
}

/**
 * The frame and time readouts of `frame` (`frame 12 / 59`, `0.400 s / 2.000 s`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Info } from "./types.ts";
 *
 * const info = { fps: 30, frames: 60, duration: 2 } as Info;
 * assert.deepEqual(readouts(info, 12), { frame: "frame 12 / 59", time: "0.400 s / 2.000 s" });
 * ```
 */
export function readouts(
  info: Pick<Info, "fps" | "frames" | "duration">,
  frame: number,
): { frame: string; time: string } {
  return {
    frame: `frame ${frame} / ${info.frames - 1}`,
    time: `${(frame / info.fps).toFixed(3)} s / ${info.duration.toFixed(3)} s`,
  };
}

/**
 * Takes the standby page when it was loaded for `key` (the state keeps none after), else
 * undefined: the step loads a page of its own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const state = createStudioState({ entry: "", frame: 0, muted: false, volume: 1 });
 * assert.equal(takeStandby(state, "k"), undefined);
 * ```
 */
export function takeStandby(state: Pick<StudioState, "standby">, key: string): Live | undefined {
  const page = state.standby;
  if (!page || page.key !== key) return undefined;
  state.standby = undefined;
  return page;
}

/**
 * Whether a composition read again declares the same variables (and drops the same
 * declarations) as before: then the variables panel is kept as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Info } from "./types.ts";
 *
 * const info = { declarations: [], dropped: [] } as unknown as Info;
 * assert.equal(sameDeclarations(undefined, info), false);
 * assert.equal(sameDeclarations(info, { ...info }), true);
 * ```
 */
export function sameDeclarations(
  before: Pick<Info, "declarations" | "dropped"> | undefined,
  next: Pick<Info, "declarations" | "dropped">,
): boolean {
  return before !== undefined &&
    JSON.stringify(before.declarations) === JSON.stringify(next.declarations) &&
    JSON.stringify(before.dropped) === JSON.stringify(next.dropped);
}

/**
 * Takes a composition the server described (at start, or read again after an edit): the
 * values kept across the reload ({@linkcode keptValues}; the URL's apply once), and a fresh
 * page for a composition read again. Returns whether the panel's fields can stay.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Info } from "./types.ts";
 *
 * const state = createStudioState({ entry: "", frame: 0, muted: false, volume: 1 });
 * const info = { declarations: [], dropped: [], defaults: {} } as unknown as Info;
 * assert.equal(acceptComposition(state, info), false);
 * assert.equal(acceptComposition(state, info), true);
 * assert.equal(state.reloads, 1);
 * ```
 */
export function acceptComposition(state: StudioState, next: Info): boolean {
  const before = state.info;
  const same = sameDeclarations(before, next);
  const kept = keptValues(
    next.declarations,
    next.defaults,
    before?.declarations,
    state.values,
    state.urlValues,
  );
  state.urlValues = undefined;
  state.info = next;
  state.values = kept;
  if (before) state.reloads++;
  return same;
}

/**
 * Drops the stage pages (another composition, or its declarations changed shape): the
 * live and the standby page leave the stage, and no frame is shown.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const state = createStudioState({ entry: "", frame: 0, muted: false, volume: 1 });
 * state.shown = 4;
 * dropPages(state);
 * assert.equal(state.shown, -1);
 * ```
 */
export function dropPages(state: Pick<StudioState, "live" | "standby" | "shown">): void {
  state.live?.iframe.remove();
  state.standby?.iframe.remove();
  state.live = undefined;
  state.standby = undefined;
  state.shown = -1;
}

/**
 * Another composition was picked: its pages, values and playhead start afresh (the
 * composition itself is read next).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const state = createStudioState({ entry: "a.html", frame: 9, muted: false, volume: 1 });
 * switchEntry(state, "b.html");
 * assert.equal(state.entry, "b.html");
 * assert.equal(state.wanted, 0);
 * ```
 */
export function switchEntry(state: StudioState, entry: string): void {
  state.entry = entry;
  dropPages(state);
  state.info = undefined;
  state.values = {};
  state.wanted = 0;
  state.reloads++;
}

/**
 * The query naming a composition in the studio's API: none for the server's own ("").
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(entryQuery(""), "");
 * assert.equal(entryQuery("a b.html"), "?entry=a%20b.html");
 * ```
 */
export function entryQuery(entry: string): string {
  return entry ? `?entry=${encodeURIComponent(entry)}` : "";
}

/** One composition of the project, as `GET /__preview/compositions` lists it. */
export interface CompositionListing {
  entry: string;
  id: string | null;
  error?: string;
}

/**
 * The switcher's options: each composition by id and file, one that cannot be read named so
 * (with why as its title).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(compositionOptions([{ entry: "b.html", id: null, error: "bad" }]), [
 *   { value: "b.html", text: "b.html (cannot be read)", title: "bad" },
 * ]);
 * ```
 */
export function compositionOptions(
  compositions: readonly CompositionListing[],
): { value: string; text: string; title?: string }[] {
  return compositions.map((c) => ({
    value: c.entry,
    text: c.id ? `${c.id} (${c.entry})` : `${c.entry} (cannot be read)`,
    ...(c.error ? { title: c.error } : {}),
  }));
}

/**
 * The frame under a click on the timeline: `clientX` across a track `width` wide starting
 * at `left`, of a composition of `frames` frames (not yet clamped).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(timelineClickFrame(150, 100, 200, 60), 15);
 * ```
 */
export function timelineClickFrame(
  clientX: number,
  left: number,
  width: number,
  frames: number,
): number {
  return Math.floor(((clientX - left) / width) * frames);
}
