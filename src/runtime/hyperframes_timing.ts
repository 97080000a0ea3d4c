/**
 * HyperFrames' timing inside the page: when a timed element starts and how long it lasts
 * (`data-start` as seconds or a clip reference, `data-duration`, `data-end`, a
 * sub-composition's timeline), which clips show at a time, where each composition's timeline
 * runs, and a media element's window cut to the clips around it. The DOM-reading functions
 * take the model's {@linkcode HyperframesState}; the arithmetic is pure
 * ({@linkcode parseStart}, {@linkcode inWindow}, {@linkcode narrowMediaWindow}).
 *
 * Runs in the page: part of the HyperFrames model (`hyperframes.ts`), bundled with the
 * runtime by `scripts/build_page_code.ts`.
 *
 * @module
 */

import { MOUNT } from "./hyperframes_css.ts";
import type { HyperframesState } from "./hyperframes_state.ts";

/** A media element's window on the composition timeline, in seconds. */
export interface MediaWindow {
  /** Absolute start on the video's timeline. */
  start: number;
  /** Seconds into the source at that start. */
  mediaStart: number;
  /** How long it plays; null to the end of its source. */
  duration: number | null;
}

/** How far inside a window's edge a time must be to count as in it, in seconds. */
const EPSILON = 1e-6;

/**
 * A seconds attribute's value, or null when absent, blank or not a finite number.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(parseSeconds(" 1.5 "), 1.5);
 * assert.equal(parseSeconds("intro"), null);
 * assert.equal(parseSeconds(""), null);
 * ```
 */
export function parseSeconds(raw: string | null): number | null {
  if (raw === null || raw.trim() === "") return null;
  const value = Number(raw.trim());
  return Number.isFinite(value) ? value : null;
}

/** A parsed `data-start`: seconds, or when the element of id `ref` ends, moved by `offset`. */
export type StartExpression = { seconds: number } | { ref: string; offset: number };

/**
 * `data-start`: seconds, or `<id>`, `<id> + n`, `<id> - n` (when that clip ends); null
 * when it is none of these.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseStart("2"), { seconds: 2 });
 * assert.deepEqual(parseStart("intro - 0.5"), { ref: "intro", offset: -0.5 });
 * assert.equal(parseStart("1 +"), null);
 * ```
 */
export function parseStart(raw: string | null): StartExpression | null {
  if (raw === null || raw.trim() === "") return null;
  const seconds = parseSeconds(raw);
  if (seconds !== null) return { seconds };
  const match = /^\s*([A-Za-z_][\w-]*)\s*(?:([+-])\s*(\d+(?:\.\d+)?|\.\d+))?\s*$/.exec(raw);
  if (!match) return null;
  const offset = match[3] ? Number(match[3]) * (match[2] === "-" ? -1 : 1) : 0;
  return { ref: match[1], offset };
}

/**
 * Whether time `t` is inside the window from `start` lasting `length` seconds (null: to the
 * end). HyperFrames keeps a clip ending at or after the video's end to its last frame; every
 * frame's time is below the video's duration, so the half-open window says that too.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(inWindow(0.5, 0.5, 1), true);
 * assert.equal(inWindow(1.5, 0.5, 1), false);
 * assert.equal(inWindow(9, 0.5, null), true);
 * ```
 */
export function inWindow(t: number, start: number, length: number | null): boolean {
  if (t < start - EPSILON) return false;
  return length === null || t < start + length - EPSILON;
}

/** A timed element's window around a media element: its start and length (null: to the end). */
export interface ClipSpan {
  start: number;
  length: number | null;
}

/**
 * A media element's own window (its `data-start` counting from its composition, which
 * starts at `offset`) cut to the clips around it, innermost first: it starts no earlier than
 * any of them (its source advanced by the difference at `rate`) and ends with the first to end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const own = { start: 0, mediaStart: 0, duration: null };
 * assert.deepEqual(narrowMediaWindow(own, 1, [{ start: 2, length: 3 }], 1), {
 *   start: 2,
 *   mediaStart: 1,
 *   duration: 3,
 * });
 * ```
 */
export function narrowMediaWindow(
  own: MediaWindow,
  offset: number,
  clips: readonly ClipSpan[],
  rate: number,
): MediaWindow {
  let start = own.start + offset;
  let mediaStart = own.mediaStart;
  let end = own.duration === null ? Infinity : start + own.duration;
  for (const clip of clips) {
    if (clip.start > start) {
      mediaStart += (clip.start - start) * rate;
      start = clip.start;
    }
    if (clip.length !== null) end = Math.min(end, clip.start + clip.length);
  }
  return {
    start,
    mediaStart,
    duration: end === Infinity ? null : Math.max(0, end - start),
  };
}

/** The composition `el` belongs to (for a composition's root, the one around it). */
export function compositionOf(el: Element): Element | null {
  return (el.hasAttribute("data-composition-id") ? el.parentElement : el)?.closest(
    "[data-composition-id]",
  ) ?? null;
}

/** Absolute start of a timed element, in seconds (its composition's start added). */
export function startOf(state: HyperframesState, el: Element): number {
  if (state.visiting.has(el)) return 0;
  state.visiting.add(el);
  try {
    const expression = parseStart(el.getAttribute("data-start"));
    if (!expression) {
      // A sub-composition's own root inside its host starts with the host.
      const parent = el.parentElement;
      if (
        el.hasAttribute("data-composition-id") && parent &&
        (parent.hasAttribute(MOUNT) || parent.hasAttribute("data-composition-src"))
      ) {
        return startOf(state, parent);
      }
      const composition = compositionOf(el);
      return composition ? startOf(state, composition) : 0;
    }
    if ("seconds" in expression) {
      const composition = compositionOf(el);
      return Math.max(0, (composition ? startOf(state, composition) : 0) + expression.seconds);
    }
    const target = document.getElementById(expression.ref) ??
      document.querySelector(`[data-composition-id="${CSS.escape(expression.ref)}"]`);
    if (!target) return 0;
    const length = durationOf(state, target);
    return Math.max(0, startOf(state, target) + (length ?? 0) + expression.offset);
  } finally {
    state.visiting.delete(el);
  }
}

/** `data-duration`, else `data-end` − start; null when neither gives a positive length. */
export function durationOf(state: HyperframesState, el: Element): number | null {
  const duration = parseSeconds(el.getAttribute("data-duration"));
  if (duration !== null && duration > 0) return duration;
  const end = parseSeconds(el.getAttribute("data-end"));
  if (end !== null) {
    const composition = compositionOf(el);
    const length = end - (startOf(state, el) - (composition ? startOf(state, composition) : 0));
    if (length > 0) return length;
  }
  if (el instanceof HTMLMediaElement && !el.classList.contains("clip")) return null;
  const id = el.getAttribute("data-composition-id");
  if (id) {
    const timeline = (state.w.__timelines as
      | Record<string, { duration?: () => number }>
      | undefined)?.[id];
    const length = typeof timeline?.duration === "function" ? Number(timeline.duration()) : NaN;
    if (Number.isFinite(length) && length > 0) return length;
  }
  return null;
}

/**
 * Whether a timed element is a clip. A `<video>` or `<audio>` keeps vid's own rule (shown on
 * its first frame before its start and its last after it ends, silent outside its window)
 * unless it is a clip: README compositions rely on it. Any other element with a data-start is
 * a clip.
 */
export function isClip(el: Element): boolean {
  const tag = el.tagName;
  if (tag === "SCRIPT" || tag === "STYLE" || tag === "LINK" || tag === "META") return false;
  if (el instanceof HTMLMediaElement) return el.classList.contains("clip");
  return true;
}

function visibleAt(state: HyperframesState, el: Element, t: number): boolean {
  const start = startOf(state, el);
  if (t < start - EPSILON) return false;
  return inWindow(t, start, durationOf(state, el));
}

/** Whether `el` is, or is inside, a clip hidden at the last {@linkcode applyClips}. */
export function hiddenByClip(state: HyperframesState, el: Element): boolean {
  for (let at: Element | null = el; at; at = at.parentElement) {
    if (state.hidden.has(at)) return true;
  }
  return false;
}

/** Shows every timed clip inside its window at `t` and hides it outside. */
export function applyClips(state: HyperframesState, t: number): void {
  state.hidden = new WeakSet<Element>();
  const timed = Array.from(document.querySelectorAll<HTMLElement>("[data-start]"));
  for (const el of timed) {
    if (!isClip(el)) continue;
    let visible = visibleAt(state, el, t);
    // A clip inside a hidden clip stays hidden, whatever its own window says.
    for (let up = el.parentElement; visible && up; up = up.parentElement) {
      if (up.hasAttribute("data-start") && isClip(up) && !visibleAt(state, up, t)) {
        visible = false;
      }
    }
    if (!state.shown.has(el)) state.shown.set(el, el.style.getPropertyValue("visibility"));
    if (visible) {
      const authored = state.shown.get(el) ?? "";
      if (authored) el.style.setProperty("visibility", authored);
      else el.style.removeProperty("visibility");
    } else {
      state.hidden.add(el);
      el.style.setProperty("visibility", "hidden", "important");
    }
  }
}

/** Where a `window.__timelines` entry starts on the video's timeline: its composition's start. */
export function timelineStart(state: HyperframesState, id: string): number {
  const scope = state.scopes.find((s) => s.timelineId === id);
  const el = scope?.hostEl ??
    document.querySelector(`[data-composition-id="${CSS.escape(id)}"]`);
  return el ? startOf(state, el) : 0;
}

/**
 * The window of a `<video>`/`<audio>` whose `data-start` counts from its composition, cut to
 * the windows of the clips around it.
 */
export function mediaWindow(
  state: HyperframesState,
  el: HTMLMediaElement,
  own: MediaWindow,
  rate: number,
): MediaWindow {
  const composition = compositionOf(el);
  const offset = composition ? startOf(state, composition) : 0;
  const clips: ClipSpan[] = [];
  for (let up = el.parentElement; up; up = up.parentElement) {
    if (!up.hasAttribute("data-start") || !isClip(up)) continue;
    clips.push({ start: startOf(state, up), length: durationOf(state, up) });
  }
  return narrowMediaWindow(own, offset, clips, rate);
}

/** Start (ms) of the sub-composition an animated element belongs to; 0 at the top level. */
export function compositionStartMs(state: HyperframesState, el: Element | null): number {
  const host = el?.closest(`[${MOUNT}]`);
  return host ? startOf(state, host) * 1000 : 0;
}
