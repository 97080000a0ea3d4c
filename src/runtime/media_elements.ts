/**
 * `<video>` and `<audio>` in the page: they never play on their own. Each is described to the
 * renderer (its window on the timeline and its audio attributes, for the mix) and each video
 * is seeked frame-exactly on every frame, to the middle of the source frame that covers the
 * frame's time, through the renderer's intra-coded proxy when there is one.
 *
 * Under BeginFrame control a video's frame reaches the compositor on its own thread, so
 * `seeked` alone does not mean the next BeginFrame shows it: the renderer draws again until
 * `requestVideoFrameCallback` has confirmed every seeked video, and seeks a video again when
 * its frame is slow to show ({@linkcode MediaSeeker.reseekVideos}). A video that comes into
 * the picture (it was not drawn at the previous seek: off the viewport, `display: none`,
 * hidden, transparent or outside its clip's window) is counted too
 * ({@linkcode MediaSeeker.entering}): the compositor shows its surface a few BeginFrames
 * late, so the renderer draws on until the picture has changed.
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`).
 *
 * @module
 */

import type { RealTime } from "./clock.ts";
import type { HyperframesModel } from "./hyperframes.ts";
import type { MediaAudioAttributes, MediaDescriptor, RuntimeConfig } from "./page_runtime.ts";

/**
 * Where in its source a video is seeked to at composition time `t`: its window
 * (`start`, `mediaStart`, `duration`, `playbackRate`) and `loop` applied, clamped to the
 * source's `length` (seconds, when known); with the source's frame rate `fps` (> 0), the
 * middle of the source frame that covers that time, so rounding in the decoder's
 * timestamps can never pick its neighbour.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const clip = { start: 1, mediaStart: 0, duration: null, playbackRate: 1, loop: false };
 * assert.equal(videoSeekTarget(clip, 0.5, 10, 0), 0); // before its start: its first frame
 * assert.equal(videoSeekTarget(clip, 1.51, 10, 25), 0.5); // the middle of source frame 12
 * const looped = { ...clip, start: 0, loop: true };
 * assert.equal(videoSeekTarget(looped, 2.5, 2, 0), 0.5);
 * ```
 */
export function videoSeekTarget(
  d: Pick<MediaDescriptor, "start" | "mediaStart" | "duration" | "playbackRate" | "loop">,
  t: number,
  length: number,
  fps: number,
): number {
  const local = Math.max(0, t - d.start);
  const played = d.duration === null ? local : Math.min(local, d.duration);
  let mediaTime = d.mediaStart + played * d.playbackRate;
  if (Number.isFinite(length) && length > 0) {
    if (d.loop && mediaTime >= length) {
      const span = length - d.mediaStart;
      mediaTime = span > 0 ? d.mediaStart + ((mediaTime - d.mediaStart) % span) : 0;
    }
    mediaTime = Math.min(mediaTime, length);
  }
  let target = mediaTime;
  if (fps > 0) {
    const last = Number.isFinite(length)
      ? Math.max(0, Math.ceil(length * fps - 1e-6) - 1)
      : Infinity;
    const index = Math.min(Math.floor(mediaTime * fps + 1e-6), last);
    target = (index + 0.5) / fps;
  }
  return target;
}

/**
 * A numeric attribute of `el`, or `fallback` when it is absent, blank or not a finite number.
 *
 * @example
 * ```ts no_run
 * const start = numberAttribute(document.querySelector("video")!, "data-start", 0);
 * ```
 */
export function numberAttribute(el: Element, name: string, fallback: number): number {
  const raw = el.getAttribute(name);
  const value = raw === null || raw.trim() === "" ? Number.NaN : Number(raw);
  return Number.isFinite(value) ? value : fallback;
}

// Audio automation travels as written: the renderer parses it (and names a bad one), so
// the page never guesses at what a malformed attribute meant.
function audioAttributes(el: HTMLMediaElement): Pick<MediaDescriptor, "element" | "audio"> {
  const tag = el.localName;
  const name = el.id
    ? `<${tag} id="${el.id}">`
    : `<${tag} src="${
      el.getAttribute("src") ?? el.querySelector("source")?.getAttribute("src") ?? ""
    }">`;
  const audio: MediaAudioAttributes = {};
  const read = (key: "volume" | "fadeIn" | "fadeOut" | "duck", attribute: string): void => {
    const text = el.getAttribute(attribute);
    if (text !== null && text.trim() !== "") audio[key] = text;
  };
  read("volume", "data-volume");
  read("fadeIn", "data-fade-in");
  read("fadeOut", "data-fade-out");
  read("duck", "data-duck");
  if (el.hasAttribute("data-voice")) audio.voice = true;
  return { element: name, audio };
}

/** The page's media elements as the runtime drives them. */
export interface MediaSeeker {
  /** The page's `<video>` and `<audio>` elements, in document order. */
  elements(): HTMLMediaElement[];
  /** How the renderer sees `el`: its source, window on the timeline and audio attributes. */
  describe(el: HTMLMediaElement): MediaDescriptor;
  /** Pauses and mutes every element and seeks each shown video to its frame at `t`. */
  seekVideos(t: number): Promise<void>;
  /** How many videos seeked for the current frame wait for their frame to be presented. */
  pending(): number;
  /** Seeks again each waiting video whose re-seek is due; returns how many were. */
  reseekVideos(): number;
  /** Resolves once no seeked video waits, or after `maxMs`; resolves to how many still wait. */
  untilVideosPresented(maxMs?: number): Promise<number>;
  /**
   * How many videos came into the picture at the current frame: drawn now, not drawn at the
   * page's previous seek (never at its first).
   */
  entering(): number;
}

/** A seeked video waiting for its frame to be presented. */
interface Unpresented {
  /** The time it was seeked to. */
  target: number;
  /** Its proxy's frame rate, or 0. */
  fps: number;
  /** When it was seeked (real ms). */
  since: number;
  /** How many times it was seeked again. */
  nudges: number;
}

/**
 * The media side's state for one page: what it was given, each element's original source,
 * and the videos seeked for the current frame that wait for their frame to be presented.
 */
interface SeekerState {
  config: RuntimeConfig;
  real: RealTime;
  hyperframes: HyperframesModel | undefined;
  /** Each element's source before a proxy replaced it. */
  originalSource: WeakMap<HTMLMediaElement, string>;
  /**
   * Videos seeked for the current frame whose new frame the compositor has not presented
   * yet. A video still unpresented when the next frame seeks is one the compositor does not
   * draw (display: none, no box): it is not waited for again.
   */
  unpresented: Map<HTMLVideoElement, Unpresented>;
  neverPresented: WeakSet<HTMLVideoElement>;
  /** Counts seeks, so a frame callback of an older seek is ignored. */
  seekGeneration: number;
  /** The target each video was last re-seeked for (a tenth of a frame past it, maybe). */
  nudged: WeakMap<HTMLVideoElement, number>;
  /** Whether each video was in the picture at the previous seek (see {@linkcode inPicture}). */
  drawn: WeakMap<HTMLVideoElement, boolean>;
  /** How many videos came into the picture at the current frame. */
  entering: number;
}

/**
 * A video still waiting this long (ms) after its seek is seeked again, once per mark: seen
 * on a fresh page under load, a paused video's seeked frame showed only after the next seek.
 */
const RESEEK_AFTER_MS = [200, 700, 1300, 1900];

/**
 * Where a waiting video is seeked again, or null when no re-seek is due `elapsed` ms after its
 * seek with `nudges` re-seeks done. Seeking to the very time a paused video is at may skip
 * the decode, so every other re-seek aims a tenth of a source frame later: the same source
 * frame, a real seek.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(reseekTarget(1.5, 10, 100, 0), null); // not yet
 * assert.equal(reseekTarget(1.5, 10, 250, 0), 1.51); // the first: nudged
 * assert.equal(reseekTarget(1.5, 10, 800, 1), 1.5); // the second: the target itself
 * assert.equal(reseekTarget(1.5, 10, 9999, 4), null); // no more
 * ```
 */
export function reseekTarget(
  target: number,
  fps: number,
  elapsed: number,
  nudges: number,
): number | null {
  const due = RESEEK_AFTER_MS[nudges];
  if (due === undefined || elapsed < due) return null;
  return target + (fps > 0 && (nudges + 1) % 2 === 1 ? 0.1 / fps : 0);
}

/**
 * Whether a video at `current` need not be seeked to `target`: it is there, or a re-seek
 * for this same target (`nudgedFor`) left it a tenth of a frame past it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(atSeekTarget(1.5, 1.5, undefined, 10), true);
 * assert.equal(atSeekTarget(1.51, 1.5, 1.5, 10), true);
 * assert.equal(atSeekTarget(1.51, 1.5, undefined, 10), false);
 * ```
 */
export function atSeekTarget(
  current: number,
  target: number,
  nudgedFor: number | undefined,
  fps: number,
): boolean {
  return Math.abs(current - target) <= 1e-6 ||
    (nudgedFor === target && Math.abs(current - target) < 0.2 / fps);
}

function sourceOf(state: SeekerState, el: HTMLMediaElement): string {
  const known = state.originalSource.get(el);
  if (known) return known;
  const src = el.currentSrc || el.src || el.querySelector("source")?.src || "";
  if (src) state.originalSource.set(el, src);
  return src;
}

function describeMedia(state: SeekerState, el: HTMLMediaElement): MediaDescriptor {
  const duration = numberAttribute(el, "data-duration", Number.NaN);
  const playbackRate = numberAttribute(el, "data-playback-rate", 1) || 1;
  const own = {
    start: numberAttribute(el, "data-start", 0),
    mediaStart: numberAttribute(el, "data-media-start", 0),
    duration: Number.isFinite(duration) && duration > 0 ? duration : null,
  };
  // Inside a sub-composition or a timed clip, its window moves and ends with theirs.
  const timing = state.hyperframes ? state.hyperframes.mediaWindow(el, own, playbackRate) : own;
  return {
    kind: el instanceof HTMLVideoElement ? "video" : "audio",
    src: sourceOf(state, el),
    ...timing,
    volume: Math.max(0, numberAttribute(el, "data-volume", 1)),
    muted: el.hasAttribute("muted") || el.muted,
    loop: el.loop,
    playbackRate,
    ...audioAttributes(el),
  };
}

function mediaElements(): HTMLMediaElement[] {
  return Array.from(document.querySelectorAll<HTMLMediaElement>("video, audio"));
}

/** Resolves on `el`'s event `name`; rejects on its `error` or after the readiness timeout. */
function untilEvent(
  state: SeekerState,
  el: EventTarget,
  name: string,
  what: string,
): Promise<void> {
  const { real, config } = state;
  return new Promise<void>((resolve, reject) => {
    const timer = real.setTimeout(
      () => reject(new Error(`${what} timed out after ${config.readyTimeoutMs} ms`)),
      config.readyTimeoutMs,
    );
    el.addEventListener(name, () => {
      real.clearTimeout(timer);
      resolve();
    }, { once: true });
    el.addEventListener("error", () => {
      real.clearTimeout(timer);
      reject(new Error(`${what} failed: cannot load ${sourceOf(state, el as HTMLMediaElement)}`));
    }, { once: true });
  });
}

/**
 * Waits for `el`'s seeked frame to be presented. Only the sought frame counts: a video that
 * has just loaded may present its first frame after the seek began, and that callback must
 * not pass for the seek's.
 */
function awaitPresentation(
  state: SeekerState,
  el: HTMLVideoElement,
  target: number,
  fps: number,
): void {
  if (typeof el.requestVideoFrameCallback !== "function" || state.neverPresented.has(el)) return;
  const generation = state.seekGeneration;
  state.unpresented.set(el, { target, fps, since: state.real.Date.now(), nudges: 0 });
  const onFrame = (_now: number, frame: VideoFrameCallbackMetadata): void => {
    if (generation !== state.seekGeneration) return;
    // The frame's timestamp is its start, index / fps; the target is that frame's middle.
    if (fps > 0 && Math.round(frame.mediaTime * fps) !== Math.floor(target * fps)) {
      el.requestVideoFrameCallback(onFrame);
      return;
    }
    state.unpresented.delete(el);
  };
  el.requestVideoFrameCallback(onFrame);
}

function reseekVideos(state: SeekerState): number {
  const now = state.real.Date.now();
  let reseeked = 0;
  for (const [el, wait] of state.unpresented) {
    const time = reseekTarget(wait.target, wait.fps, now - wait.since, wait.nudges);
    if (time === null) continue;
    wait.nudges++;
    state.nudged.set(el, wait.target);
    el.currentTime = time;
    reseeked++;
  }
  return reseeked;
}

async function untilVideosPresented(state: SeekerState, maxMs = 2000): Promise<number> {
  const { real, unpresented } = state;
  const deadline = real.Date.now() + maxMs;
  while (unpresented.size > 0 && real.Date.now() < deadline) {
    reseekVideos(state);
    await real.sleep(8);
  }
  return unpresented.size;
}

/**
 * Whether `el` is in the picture: it has a box, is visible and not fully transparent (nor is
 * any ancestor), and its box meets the viewport. What the compositor draws of it is not
 * asked: only whether it could be on screen at all.
 */
function inPicture(el: HTMLVideoElement): boolean {
  if (el.getClientRects().length === 0) return false;
  if (getComputedStyle(el).visibility !== "visible") return false;
  for (let node: Element | null = el; node; node = node.parentElement) {
    if (Number(getComputedStyle(node).opacity) === 0) return false;
  }
  const box = el.getBoundingClientRect();
  return box.right > 0 && box.bottom > 0 && box.left < innerWidth && box.top < innerHeight &&
    box.width > 0 && box.height > 0;
}

/** Records whether `el` is in the picture now (`shown`); counts it when it was not before. */
function noteDrawn(state: SeekerState, el: HTMLVideoElement, shown: boolean): void {
  if (shown && state.drawn.get(el) === false) state.entering++;
  state.drawn.set(el, shown);
}

async function seekVideos(state: SeekerState, t: number): Promise<void> {
  const { config, hyperframes, unpresented, nudged } = state;
  state.seekGeneration++;
  state.entering = 0;
  for (const el of unpresented.keys()) state.neverPresented.add(el);
  unpresented.clear();
  for (const el of mediaElements()) {
    el.autoplay = false;
    if (!el.paused) el.pause();
    el.muted = true;
    if (!(el instanceof HTMLVideoElement)) continue;
    // A clip outside its window is not drawn, so its frame would never be presented: it is
    // seeked (and waited for) once it shows.
    if (hyperframes?.hiddenByClip(el)) {
      noteDrawn(state, el, false);
      continue;
    }
    const d = describeMedia(state, el);
    if (!d.src) continue;
    noteDrawn(state, el, inPicture(el));
    const proxy = config.videoProxies?.[d.src];
    if (proxy && el.src !== proxy.url) {
      const loaded = untilEvent(state, el, "loadeddata", `video ${d.src}`);
      el.src = proxy.url;
      el.load();
      await loaded;
    } else if (el.readyState < 2) {
      await untilEvent(state, el, "loadeddata", `video ${d.src}`);
    }
    const fps = proxy?.fps ?? 0;
    const target = videoSeekTarget(d, t, el.duration, fps);
    if (!atSeekTarget(el.currentTime, target, nudged.get(el), fps)) {
      nudged.delete(el);
      const seeked = untilEvent(state, el, "seeked", `video ${d.src} seek`);
      awaitPresentation(state, el, target, fps);
      el.currentTime = target;
      await seeked;
    }
  }
}

/**
 * Creates the media side of the runtime for one page.
 *
 * @example
 * ```ts no_run
 * import { captureRealTime } from "./clock.ts";
 *
 * const config = { variables: {}, seed: 1, epochMs: 0, fps: 30, readyTimeoutMs: 30000 };
 * const media = createMediaSeeker(config, captureRealTime(), undefined);
 * await media.seekVideos(1.5);
 * await media.untilVideosPresented();
 * ```
 */
export function createMediaSeeker(
  config: RuntimeConfig,
  real: RealTime,
  hyperframes: HyperframesModel | undefined,
): MediaSeeker {
  const state: SeekerState = {
    config,
    real,
    hyperframes,
    originalSource: new WeakMap(),
    unpresented: new Map(),
    neverPresented: new WeakSet(),
    seekGeneration: 0,
    nudged: new WeakMap(),
    drawn: new WeakMap(),
    entering: 0,
  };
  return {
    elements: mediaElements,
    describe: (el) => describeMedia(state, el),
    seekVideos: (t) => seekVideos(state, t),
    pending: () => state.unpresented.size,
    reseekVideos: () => reseekVideos(state),
    untilVideosPresented: (maxMs) => untilVideosPresented(state, maxMs),
    entering: () => state.entering,
  };
}
