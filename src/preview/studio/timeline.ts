/**
 * The studio's timeline: one row per media clip, CSS/WAAPI animation, GSAP timeline (and
 * its direct tweens) and HyperFrames sub-composition or clip, each at its window on the
 * composition's timeline, under a time ruler. Windows are read from the live stage page;
 * the maths of each window is here as pure functions.
 *
 * @module
 */

import type { MediaClip, TimelineItem, VidApi } from "./types.ts";

/** The most rows the timeline shows. */
export const MAX_TIMELINE_ROWS = 40;

/**
 * A media source as a row names it: its file name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(sourceName("http://127.0.0.1:1/media/my%20clip.mp4"), "my clip.mp4");
 * ```
 */
export function sourceName(src: string): string {
  try {
    return decodeURIComponent(new URL(src).pathname.split("/").pop() ?? src);
  } catch {
    return src;
  }
}

/** The part of an element a selector is made of (elements of another frame too). */
export interface SelectorParts {
  /** `id`. */
  id: string;
  /** `tagName`. */
  tagName: string;
  /** `classList`. */
  classList?: ArrayLike<string>;
}

/**
 * `#id`, else `tag.first-class`, else the tag: how a person finds the element.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(selectorOf({ id: "", tagName: "DIV", classList: ["card", "big"] }), "div.card");
 * assert.equal(selectorOf({ id: "logo", tagName: "IMG" }), "#logo");
 * ```
 */
export function selectorOf(el: SelectorParts): string {
  if (el.id) return `#${el.id}`;
  const tag = el.tagName.toLowerCase();
  const first = el.classList?.[0];
  return first ? `${tag}.${first}` : tag;
}

/**
 * The window of a media clip, cut at the composition's `end`: its `duration`, else the rest
 * of its source (`sourceDuration` seconds, when known) at its playback rate, else to the end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const clip = { start: 1, mediaStart: 2, duration: null, playbackRate: 2 };
 * assert.deepEqual(mediaClipWindow(clip, 10, 20), { start: 1, end: 5 });
 * assert.deepEqual(mediaClipWindow(clip, undefined, 20), { start: 1, end: 20 });
 * ```
 */
export function mediaClipWindow(
  clip: Pick<MediaClip, "start" | "mediaStart" | "duration" | "playbackRate">,
  sourceDuration: number | undefined,
  end: number,
): { start: number; end: number } {
  const length = clip.duration ??
    Math.max(0, (sourceDuration ?? Infinity) - clip.mediaStart) / clip.playbackRate;
  return {
    start: clip.start,
    end: Math.min(end, clip.start + (Number.isFinite(length) ? length : end)),
  };
}

/**
 * The window (seconds) of an animation the runtime drives: it sets each one to
 * (now - birth) x rate, so its birth follows from its `currentTime` (ms) at the frame on stage
 * (`nowMs`); `delay` and `endTime` are its computed timing (ms); cut at the composition's `end`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * // At 2 s, 500 ms into an animation with a 250 ms delay that ends at 1250 ms:
 * assert.deepEqual(
 *   animationWindow({ nowMs: 2000, currentTime: 500, rate: 1, delay: 250, endTime: 1250 }, 10),
 *   { start: 1.75, end: 2.75 },
 * );
 * ```
 */
export function animationWindow(
  timing: { nowMs: number; currentTime: number; rate: number; delay: number; endTime: number },
  end: number,
): { start: number; end: number } {
  const birth = timing.nowMs - timing.currentTime / timing.rate;
  return {
    start: Math.max(0, (birth + timing.delay / timing.rate) / 1000),
    end: Math.min(
      end,
      Number.isFinite(timing.endTime) ? (birth + timing.endTime / timing.rate) / 1000 : end,
    ),
  };
}

/**
 * The ruler's step: the first of 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60 s that puts at most 8
 * steps in `span` seconds, else whole minutes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(rulerStep(0.5), 0.1);
 * assert.equal(rulerStep(5), 1);
 * assert.equal(rulerStep(3600), 480);
 * ```
 */
export function rulerStep(span: number): number {
  return [0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60].find((s) => span / s <= 8) ??
    Math.ceil(span / 8 / 60) * 60;
}

/**
 * The ruler's ticks over `span` seconds: each tick's time and label (`1.5s`, `2:30`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(rulerTicks(1).map((t) => t.label), ["0s", "0.25s", "0.5s", "0.75s", "1s"]);
 * assert.equal(rulerTicks(300).at(-1)?.label, "5:00");
 * ```
 */
export function rulerTicks(span: number): { time: number; label: string }[] {
  const step = rulerStep(span);
  const ticks: { time: number; label: string }[] = [];
  for (let n = 0; n * step <= span + 1e-9; n++) {
    const t = +(n * step).toFixed(3);
    ticks.push({
      time: t,
      label: t >= 60 ? `${Math.floor(t / 60)}:${String(t % 60).padStart(2, "0")}` : `${t}s`,
    });
  }
  return ticks;
}

/** What the timeline is read from: the live stage page and the studio's view of it. */
export interface TimelineSource {
  /** The stage page's window. */
  win: Window & { __vid?: VidApi; __timelines?: unknown };
  /** The stage page's document. */
  doc: Document;
  /** The composition's duration, seconds: every window ends by then. */
  duration: number;
  /** The composition's frame rate. */
  fps: number;
  /** The frame on stage (-1 before the first). */
  shown: number;
  /** The page's media as listed before its first seek. */
  media: MediaClip[];
  /** The duration (seconds) of a media source, when the studio has loaded it. */
  sourceDuration(src: string): number | undefined;
}

/** What the live page knows of its timed elements, in composition seconds. */
export function timelineItems(source: TimelineSource): TimelineItem[] {
  const { win, doc } = source;
  if (!win.__vid) return [];
  const end = source.duration;
  const items: TimelineItem[] = [];
  // HyperFrames sub-compositions and clips, each in its window; their timelines start with them.
  const timed = win.__vid.timedWindows();
  for (const timedWindow of timed.windows) {
    items.push({
      kind: timedWindow.kind,
      label: timedWindow.label,
      start: timedWindow.start,
      end: Math.min(end, timedWindow.end ?? end),
    });
  }
  for (const clip of source.media) {
    items.push({
      kind: clip.kind,
      label: sourceName(clip.src),
      ...mediaClipWindow(clip, source.sourceDuration(clip.src), end),
    });
  }
  const nowMs = Math.max(0, source.shown) / source.fps * 1000;
  for (const animation of doc.getAnimations?.() ?? []) {
    const timing = animation.effect?.getComputedTiming();
    if (!timing) continue;
    const target = (animation.effect as KeyframeEffect | null)?.target as Element | null;
    const who = target ? selectorOf(target) : "";
    const name = "animationName" in animation
      ? String((animation as CSSAnimation).animationName)
      : "transitionProperty" in animation
      ? String((animation as CSSTransition).transitionProperty)
      : animation.id || "animation";
    items.push({
      kind: "animation",
      label: `${name} ${who}`.trim(),
      ...animationWindow({
        nowMs,
        currentTime: Number(animation.currentTime ?? 0),
        rate: animation.playbackRate || 1,
        delay: Number(timing.delay ?? 0),
        endTime: Number(timing.endTime ?? 0),
      }, end),
    });
  }
  const registry = win.__timelines;
  if (registry && typeof registry === "object") {
    const entries = Array.isArray(registry)
      ? registry.map((tl, i) => [String(i), tl] as const)
      : Object.entries(registry as Record<string, unknown>);
    // The runtime seeks each registered timeline to its composition's time (a
    // sub-composition's from its host's start), so its own times plus that start are
    // video times; its direct tweens show where they sit inside it.
    interface GsapAnimation {
      duration?: () => number;
      startTime?: () => number;
      targets?: () => unknown[];
      getChildren?: (nested: boolean, tweens: boolean, timelines: boolean) => GsapAnimation[];
    }
    for (const [key, value] of entries) {
      const tl = value as GsapAnimation | null;
      if (typeof tl?.duration !== "function") continue;
      // An array registry has no names: its timelines are counted from 1, as a person does.
      const name = Array.isArray(registry) ? `timeline ${Number(key) + 1}` : key;
      const offset = timed.timelineStarts[key] ?? 0;
      items.push({
        kind: "timeline",
        label: `GSAP ${name}`,
        start: offset,
        end: Math.min(end, offset + tl.duration()),
      });
      for (const child of tl.getChildren?.(false, true, true) ?? []) {
        const start = offset + (child.startTime?.() ?? 0);
        const target = child.targets?.()[0] as Element | undefined;
        // Another document's element: no instanceof across frames.
        const who = typeof target?.tagName === "string" ? selectorOf(target) : "tween";
        // The tween's row sits under its timeline's: its label is what it moves, with no
        // registry key or index in front (the tooltip names the timeline).
        items.push({
          kind: "timeline",
          label: who,
          parent: name,
          start,
          end: Math.min(end, start + (child.duration?.() ?? 0)),
        });
      }
    }
  }
  return items.slice(0, MAX_TIMELINE_ROWS);
}

/** The time ruler over the tracks: a tick and its time every step. */
export function timeRuler(span: number): HTMLElement {
  const ruler = document.createElement("div");
  ruler.id = "ruler";
  for (const { time, label } of rulerTicks(span)) {
    const tick = document.createElement("span");
    tick.className = "tick";
    tick.dataset.time = String(time);
    tick.style.left = `${(time / span) * 100}%`;
    tick.textContent = label;
    ruler.append(tick);
  }
  return ruler;
}

/** One track per item: its name (the tooltip gives its window) and its clip, placed in `span`. */
export function timelineTracks(items: TimelineItem[], span: number): HTMLElement[] {
  return items.map((item) => {
    const track = document.createElement("div");
    track.className = "track";
    track.dataset.kind = item.kind;
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = item.label;
    const whose = item.parent === undefined ? item.label : `${item.parent} › ${item.label}`;
    name.title = `${whose}: ${item.start.toFixed(3)} s – ${item.end.toFixed(3)} s`;
    if (item.parent !== undefined) track.dataset.parent = item.parent;
    const clip = document.createElement("div");
    clip.className = "clip";
    clip.dataset.kind = item.kind;
    clip.dataset.label = item.label;
    clip.dataset.start = item.start.toFixed(3);
    clip.dataset.end = item.end.toFixed(3);
    clip.style.left = `${(item.start / span) * 100}%`;
    clip.style.width = `${(Math.max(0, item.end - item.start) / span) * 100}%`;
    clip.title = name.title;
    track.append(name, clip);
    return track;
  });
}
