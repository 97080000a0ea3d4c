/**
 * The page runtime as the renderer and the studio see it: the config they hand it, what
 * `window.__vid` offers ({@linkcode VidPageApi}) and the script text that installs it before
 * any page script ({@linkcode runtimeScript}).
 *
 * The runtime itself is ordinary modules beside this one (entry `install.ts`: the virtual
 * clock, seeded randomness, seek adapters, media, captions, HyperFrames, errors, readiness),
 * bundled by esbuild into `page_bundle.ts` at build time (`deno task build:page`), so no
 * esbuild runs when vid renders. Their DOM types come from the `dom` lib of deno.json's
 * `compilerOptions` (JSR rejects a `/// <reference lib="dom" />` in a published module).
 *
 * Time model: the page starts at virtual time 0 and time only moves when the renderer
 * seeks to a frame. Seeking to frame n steps through every frame between the current one
 * and n (firing due timers in order, then one requestAnimationFrame round per frame),
 * so a chunk that starts at frame 120 sees exactly the state a render from frame 0 sees.
 * Then custom `onSeek` hooks, GSAP timelines and CSS/WAAPI animations are set to
 * t = n / fps, and the readiness gate waits for fonts, images and delay handles.
 *
 * @module
 */

import { PAGE_RUNTIME_BUNDLE } from "./page_bundle.ts";
import type { TimedWindow } from "./timed_window.ts";
import type { RuntimeFontFace } from "../composition/font_face.ts";
import type { CaptionTrack } from "./captions.ts";

/** What the renderer passes to the page runtime. */
export interface RuntimeConfig {
  /** Merged variables returned by `window.__vid.getVariables()`. */
  variables: Record<string, unknown>;
  /** Seed of `Math.random` and `crypto.getRandomValues`. */
  seed: number;
  /** What `Date.now()` returns at virtual time 0 (ms since the Unix epoch). */
  epochMs: number;
  /** Frames per second; frame n is shown at t = n / fps. */
  fps: number;
  /**
   * The exact rate as a fraction, when the renderer knows it: frame n is then shown at
   * t = n × den / num, so 29.97 fps (30000/1001) timestamps carry no rounding of fps.
   */
  frameRate?: { num: number; den: number };
  /** How long the readiness gate waits for fonts, images and delay handles. */
  readyTimeoutMs: number;
  /**
   * Frame-exact stand-ins for `<video>` sources, keyed by the source's absolute URL: an
   * intra-coded copy at the source's frame rate, prepared by the renderer with ffmpeg.
   */
  videoProxies?: Record<string, { url: string; fps: number }>;
  /**
   * vid check's page: a sub-composition whose file is missing is left out without a page
   * error (the check's static part names it). @default false
   */
  skipMissingSubCompositions?: boolean;
  /**
   * Faces HyperFrames embeds for families the page uses without an `@font-face`
   * (`src/composition/fonts.ts`), added to `document.fonts` before any page script.
   */
  fonts?: RuntimeFontFace[];
  /**
   * A HyperFrames project's page: the runtime puts HyperFrames' text rule
   * (`html,body,*{text-rendering:geometricPrecision}`, `text_rendering.ts`) first in its
   * `<head>` before any page script or paint, as HyperFrames' compiler does. @default false
   */
  hyperframesTextRendering?: boolean;
}

export type { RuntimeFontFace };

/**
 * A `<video>` or `<audio>` element as the renderer sees it. Timing attributes (seconds):
 * `data-start` (when it starts on the composition timeline, default 0),
 * `data-media-start` (where in the source it starts, default 0), `data-duration` (how
 * long it plays, default to the end of the source), `data-volume` (gain, default 1),
 * `data-playback-rate` (default 1); plus the standard `muted` and `loop` attributes.
 */
export interface MediaDescriptor {
  /** The element's tag. */
  kind: "video" | "audio";
  /** Absolute URL of the source. */
  src: string;
  /** Seconds on the composition timeline when it starts (`data-start`). */
  start: number;
  /** Seconds into the source where it starts (`data-media-start`). */
  mediaStart: number;
  /** Null when it plays to the end of its source (or of the composition). */
  duration: number | null;
  /** Gain (`data-volume`). */
  volume: number;
  /** The element's `muted` attribute. */
  muted: boolean;
  /** The element's `loop` attribute. */
  loop: boolean;
  /** Speed of the source (`data-playback-rate`). */
  playbackRate: number;
  /** The element as messages name it: `<audio id="music">`, else with its `src` attribute. */
  element?: string;
  /**
   * The audio automation attributes present on the element, as written; the renderer
   * parses and checks them (`src/render/audio_automation.ts`).
   */
  audio?: MediaAudioAttributes;
}

/** The audio automation attributes of a media element, as written (absent ones left out). */
export interface MediaAudioAttributes {
  /** `data-volume` when it is set: a gain, or `time:gain` keyframes. */
  volume?: string;
  /** `data-fade-in`, seconds. */
  fadeIn?: string;
  /** `data-fade-out`, seconds. */
  fadeOut?: string;
  /** `data-duck`: the gain while a voice plays, 0-1. */
  duck?: string;
  /** `data-voice` is present. */
  voice?: boolean;
}

/** One frame of a page error's stack: where the page's own code was. Lines and columns from 1. */
export interface PageStackFrame {
  /** The function's name, "" for top-level code. */
  functionName: string;
  /** Absolute URL of the script (the HTML page itself for an inline script). */
  url: string;
  /** Line in the script, from 1. */
  line: number;
  /** Column in the line, from 1. */
  column: number;
}

/** An error the composition page threw, as the runtime recorded it. */
export interface PageErrorRecord {
  /** `TypeError: …`: the error's name and message. */
  message: string;
  /** `"load"` when thrown before the first seek (while the page loaded), else `"frame"`. */
  phase: "load" | "frame";
  /** The frame being computed when it was thrown (phase `"frame"`). */
  frame?: number;
  /** The page's own frames of its stack, innermost first (the runtime's frames left out). */
  stack: PageStackFrame[];
  /** Where it was thrown when the stack has no frame (from the error event). */
  url?: string;
  /** Line of `url`, from 1. */
  line?: number;
  /** Column of that line, from 1. */
  column?: number;
  /** The URL of the script or stylesheet that did not load, when that is the error. */
  resource?: string;
}

/** The name the runtime's own code carries in stacks, so its frames can be left out. */
export const RUNTIME_SOURCE_URL = "vid-runtime.js";

/** The page-side API, `window.__vid`. */
export interface VidPageApi {
  /** Declared defaults merged with caller overrides, as a fresh frozen object. */
  getVariables(): Readonly<Record<string, unknown>>;
  /** Registers `fn(t)` to run on every seek with the frame time in seconds; returns an unsubscribe function. */
  onSeek(fn: (t: number) => void | Promise<void>): () => void;
  /** Holds the capture of the current frame until the returned function is called. */
  delay(label?: string): () => void;
  /** Current virtual time in seconds. */
  readonly time: number;
  /** Renderer entry point: moves the page to `frame` and resolves when it is ready to capture. */
  seek(frame: number): Promise<void>;
  /**
   * Renderer entry point: steps the virtual clock (timers, then one animation frame round per
   * frame) towards the frame before `frame` for about `budgetMs` of wall-clock time, and
   * resolves with the frame reached. The host calls it in slices, each under its own
   * deadline, before the seek to a frame far ahead (a chunk's first, a late still): a page
   * animated by `requestAnimationFrame` redraws once per frame stepped through.
   */
  fastForward(frame: number, budgetMs: number): Promise<number>;
  /** Renderer entry point: the page's `<video>` and `<audio>` elements. */
  media(): MediaDescriptor[];
  /**
   * The cues of every `data-captions` file loaded so far (loading starts with the page and
   * is complete by the first frame), for scripts that draw captions their own way.
   */
  readonly captions: CaptionTrack[];
  /** Renderer entry point: every error the page threw so far, oldest first. */
  errors(): PageErrorRecord[];
  /**
   * Renderer entry point: how many `<video>` elements seeked for the current frame have not
   * yet had their new frame presented by the compositor (`requestVideoFrameCallback`).
   */
  videoFramesPending(): number;
  /**
   * Renderer entry point: how many `<video>` elements came into the picture at the current
   * frame (drawn now, not at the previous seek: off the viewport, hidden or out of their
   * clip's window then). The compositor shows such a video a few BeginFrames late, with the
   * picture before it until then, so the renderer draws on until the picture has changed.
   */
  videosEntering(): number;
  /**
   * Renderer entry point, called while waiting for presentation: seeks again each video still
   * waiting whose re-seek is due (0.2, 0.7, 1.3 and 1.9 s after its seek: a paused video's
   * seeked frame can stay off screen until it is seeked once more); returns how many were.
   */
  reseekVideos(): number;
  /**
   * For a page that draws on its own (the preview studio's stage): resolves once every video
   * seeked for the current frame has its new frame presented, re-seeking as
   * {@linkcode reseekVideos} does, or after `maxMs` (2 s by default: a video never shown
   * by then is not waited for again); resolves to how many still wait.
   */
  untilVideosPresented(maxMs?: number): Promise<number>;
  /**
   * Screenshot capture's and the paused studio's entry point, once the seeked videos are
   * presented: paints each loaded video's current frame in the page itself
   * (`video_paint.ts`: the compositor's own picture of a paused video can stay a seek
   * behind); resolves to how many were painted.
   */
  paintVideoFrames(): Promise<number>;
  /**
   * The preview studio's entry point while playing: gives every painted video its own
   * picture back (it moves on by itself then); returns how many were painted.
   */
  clearVideoFrames(): number;
  /**
   * The preview studio's entry point for its timeline: HyperFrames sub-compositions and clips
   * with their windows, and the time each registered timeline starts at (its composition's
   * start; 0 for a timeline of the top level).
   */
  timedWindows(): { windows: TimedWindow[]; timelineStarts: Record<string, number> };
}

/**
 * The script text that installs the runtime with `config`, for
 * `Page.addScriptToEvaluateOnNewDocument`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const source = runtimeScript({ variables: { title: "Hi" }, seed: 1, epochMs: 0, fps: 30, readyTimeoutMs: 30000 });
 * assert.ok(source.includes('"title":"Hi"'));
 * ```
 */
export function runtimeScript(config: RuntimeConfig): string {
  return `${runtimeCall(JSON.stringify(config))};\n//# sourceURL=${RUNTIME_SOURCE_URL}\n`;
}

/**
 * The expression that runs the runtime on the config that `configExpression` evaluates to in
 * the page: one place for what the runtime is given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.ok(runtimeCall("config").endsWith("(config)"));
 * ```
 */
export function runtimeCall(configExpression: string): string {
  return `${PAGE_RUNTIME_BUNDLE}(${configExpression})`;
}
