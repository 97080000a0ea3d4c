/**
 * The HyperFrames composition model inside the page, so a HyperFrames project renders in vid
 * as it is: timed clips (`data-start`, `data-duration`, `data-end`), sub-compositions loaded
 * from `data-composition-src` hosts (their `<template>`, scoped styles and scripts, per-instance
 * `data-variable-values`, nested), and the clock each composition's timeline runs on.
 *
 * The semantics follow HyperFrames' runtime and its documentation
 * (`skills/hyperframes-core/references/*.md`): a clip is visible while
 * `start <= t < start + duration` (a clip that runs to the end of the video stays to its last
 * frame); `data-start` counts from the start of the composition the element belongs to (the
 * closest `[data-composition-id]`), so a sub-composition's clips move with its host;
 * `data-track-index` is a timeline lane only and never changes what is drawn on top (CSS
 * `z-index` does); a hidden clip hides everything inside it.
 *
 * Sub-compositions are mounted synchronously when the document has been parsed (before the
 * `load` event, so the renderer's first look at the page, `__vid.media()` included, sees
 * them): each file is read with a synchronous request, only its `<template>`'s content is
 * mounted into the host (as HyperFrames does: the rest of the file is its own preview), its
 * styles are scoped to the instance and its scripts run in order, before `load`, with a
 * `document`, `window.__timelines`, `gsap` and `__hyperframes.getVariables()` of the instance.
 * Each composition's variables are bound as HyperFrames binds them: a `--<id>` CSS property of
 * its root, `data-var-text` and `data-var-src`.
 *
 * The model is one `HyperframesState` (`hyperframes_state.ts`) and module-level functions over it: timing and
 * clips in `hyperframes_timing.ts`, mounting in `hyperframes_mount.ts`, what a mounted
 * instance's scripts see in `hyperframes_scope.ts`, the CSS and URL rules in
 * `hyperframes_css.ts`.
 *
 * Runs in the page: the runtime (`install.ts`) creates the model, and is bundled with it by
 * `scripts/build_page_code.ts`.
 *
 * @module
 */

import type { TimedWindow } from "./timed_window.ts";
import type { RuntimeFontFace } from "./page_runtime.ts";
import { mountAll } from "./hyperframes_mount.ts";
import type { PageGlobal } from "./hyperframes_scope.ts";
import type { HyperframesState } from "./hyperframes_state.ts";
import {
  applyClips,
  compositionStartMs,
  durationOf,
  hiddenByClip,
  type MediaWindow,
  mediaWindow,
  startOf,
  timelineStart,
} from "./hyperframes_timing.ts";

export type { MediaWindow };

/** What the page runtime gives the model. */
export interface HyperframesHost {
  /** The top-level variables (`__vid.getVariables()`). */
  getVariables(): Readonly<Record<string, unknown>>;
  /** Records an error that fails the render with its message. */
  report(error: Error): void;
  /**
   * Leave a sub-composition whose file cannot be loaded out without an error (vid check,
   * whose static part names the file, so the other frames are still looked at).
   * @default false
   */
  skipMissing?: boolean;
  /** The faces HyperFrames would embed for families the page does not declare. */
  fonts?: readonly RuntimeFontFace[];
}

/** The HyperFrames model of one page. */
export interface HyperframesModel {
  /** Mounts every `data-composition-src` host (nested ones too); called once the DOM is parsed. */
  mount(): void;
  /** Absolute start of a timed element, in seconds (its composition's start added). */
  startOf(el: Element): number;
  /**
   * The time a `window.__timelines` entry is seeked to at video time `t`: the composition of
   * that id runs on its own clock from its start; a key naming no composition runs on `t`.
   */
  timelineTime(id: string, t: number): number;
  /** Where a `window.__timelines` entry starts on the video's timeline: its composition's start. */
  timelineStart(id: string): number;
  /** Shows every timed clip inside its window at `t` and hides it outside. */
  applyClips(t: number): void;
  /** Whether `el` is, or is inside, a clip hidden at the last {@linkcode applyClips}. */
  hiddenByClip(el: Element): boolean;
  /**
   * The window of a `<video>`/`<audio>` whose `data-start` counts from its composition, cut
   * to the windows of the clips and compositions around it.
   */
  mediaWindow(el: HTMLMediaElement, own: MediaWindow, rate: number): MediaWindow;
  /** Start (ms) of the sub-composition an animated element belongs to; 0 at the top level. */
  compositionStartMs(el: Element | null): number;
  /** The sub-compositions and clips with their windows, for the studio's timeline. */
  windows(): TimedWindow[];
}

export type { TimedWindow };

/**
 * Adds the faces HyperFrames' renderer would inject to `document.fonts` (no DOM needed, so
 * before any page script) and starts loading them: the readiness gate waits for
 * `document.fonts.ready`, so frame 0 is drawn in them. A face that cannot be decoded is a
 * page error, as a broken font file of the project would be a warning: the family's files
 * came from vid's verified cache, so it means the cache is damaged.
 */
function embedFonts(host: HyperframesHost): void {
  for (const face of host.fonts ?? []) {
    const font = new FontFace(face.family, `url(${face.url})`, {
      weight: face.weight,
      style: "normal",
      display: "block",
    });
    document.fonts.add(font);
    font.load().catch((error) =>
      host.report(
        new Error(`the embedded font "${face.family}" ${face.weight} does not load: ${error}`),
      )
    );
  }
}

/** The sub-compositions and clips with their windows, for the studio's timeline. */
function timedWindows(state: HyperframesState): TimedWindow[] {
  return Array.from(document.querySelectorAll("[data-composition-src], .clip[data-start]")).map(
    (el) => {
      const start = startOf(state, el);
      const length = durationOf(state, el);
      const composition = el.hasAttribute("data-composition-src");
      return {
        kind: composition ? "composition" : "clip",
        label: composition
          ? el.getAttribute("data-composition-id") || el.getAttribute("data-composition-src")!
          : el.id
          ? `#${el.id}`
          : `${el.tagName.toLowerCase()}.clip`,
        start,
        end: length === null ? null : start + length,
      };
    },
  );
}

/**
 * Creates the model of one page and installs `window.__hyperframes`.
 *
 * @example
 * ```ts no_run
 * // In the page, from the runtime:
 * const model = createHyperframesModel({ getVariables: () => ({}), report: console.error });
 * document.addEventListener("DOMContentLoaded", () => model.mount());
 * ```
 */
export function createHyperframesModel(host: HyperframesHost): HyperframesModel {
  const w = globalThis as unknown as PageGlobal;
  const state: HyperframesState = {
    host,
    w,
    scopes: [],
    mounts: 0,
    scripts: [],
    visiting: new Set<Element>(),
    shown: new WeakMap<HTMLElement, string>(),
    hidden: new WeakSet<Element>(),
  };
  // Where a sub-composition's script finds its instance (its wrapper reads it by index).
  Object.defineProperty(w, "__vidHyperframesScopes", { value: state.scopes, enumerable: false });

  const base = Object.freeze({
    getVariables: () => host.getVariables(),
  });
  Object.defineProperty(w, "__hyperframes", { value: base, configurable: true });
  // HyperFrames' runtime makes the registry before any page script, and its starters end with
  // a top-level `window.__timelines["main"] = tl;` that relies on it. A page may still replace
  // it (`window.__timelines = [tl]`, `= window.__timelines || {}`): the seek reads it each frame.
  w.__timelines ??= {};
  embedFonts(host);

  return {
    windows: () => timedWindows(state),
    timelineStart: (id) => timelineStart(state, id),
    mount: () => mountAll(state),
    startOf: (el) => startOf(state, el),
    timelineTime: (id, t) => Math.max(0, t - timelineStart(state, id)),
    applyClips: (t) => applyClips(state, t),
    hiddenByClip: (el) => hiddenByClip(state, el),
    mediaWindow: (el, own, rate) => mediaWindow(state, el, own, rate),
    compositionStartMs: (el) => compositionStartMs(state, el),
  };
}
