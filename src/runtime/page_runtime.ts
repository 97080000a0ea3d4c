/**
 * The code that runs inside the composition page, installed before any page script:
 * `window.__vid` (variables, seek hooks, delay handles), a virtual clock, seeded
 * randomness, seek adapters and the readiness gate.
 *
 * {@linkcode vidPageRuntime} is serialised with `Function.prototype.toString` and
 * evaluated in the page, so it must not reference anything outside its own body. Its DOM
 * types come from the `dom` lib of deno.json's `compilerOptions` (JSR rejects a
 * `/// <reference lib="dom" />` in a published module).
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

import { createVideoFramePainter, type VideoFramePainter } from "./video_paint.ts";
import {
  createHyperframesModel,
  type HyperframesHost,
  type HyperframesModel,
  type TimedWindow,
} from "./hyperframes.ts";
import { type CaptionCue, type CaptionTrack, parseCaptions } from "./captions.ts";

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
}

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
   * behind); resolves to how many were painted, 0 where no painter was installed.
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
 * Installs `window.__vid` and the deterministic environment. Runs in the page.
 */
export function vidPageRuntime(
  config: RuntimeConfig,
  createPainter?: (sleep: (ms: number) => Promise<void>) => VideoFramePainter,
  createHyperframes?: (host: HyperframesHost) => HyperframesModel,
  parseCaptionFile?: (text: string, name: string) => CaptionCue[],
): void {
  const w = globalThis as unknown as Record<string, unknown> & Window;
  if (w.__vid) return;

  const realSetTimeout = globalThis.setTimeout.bind(globalThis);
  const clearTimer = globalThis.clearTimeout.bind(globalThis);
  const RealDate = Date;
  const fps = config.fps;
  const rate = config.frameRate;
  const frameSeconds = (n: number): number => rate ? (n * rate.den) / rate.num : n / fps;
  const frameMs = (n: number): number => rate ? (n * rate.den * 1000) / rate.num : (n * 1000) / fps;
  let nowMs = 0;
  let currentFrame = -1;
  /** The frame a seek is computing; null before the first seek (the page is loading). */
  let seekingFrame: number | null = null;
  const pageErrors: PageErrorRecord[] = [];

  // --- seeded randomness (mulberry32) ---
  let state = config.seed >>> 0;
  const random = (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  Math.random = random;
  const fillRandom = <T extends ArrayBufferView | null>(array: T): T => {
    if (array) {
      const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
    }
    return array;
  };
  Object.defineProperty(crypto, "getRandomValues", { value: fillRandom, configurable: true });
  Object.defineProperty(crypto, "randomUUID", {
    configurable: true,
    value: () => {
      const b = fillRandom(new Uint8Array(16));
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      const h = Array.from(b, (v) => v.toString(16).padStart(2, "0")).join("");
      return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${
        h.slice(20)
      }`;
    },
  });

  // --- virtual clock ---
  function VirtualDate(this: unknown, ...args: unknown[]): unknown {
    if (!new.target) return new RealDate(config.epochMs + nowMs).toString();
    const date = args.length === 0
      ? new RealDate(config.epochMs + nowMs)
      : new (RealDate as unknown as new (...a: unknown[]) => Date)(...args);
    Object.setPrototypeOf(date, new.target.prototype);
    return date;
  }
  VirtualDate.prototype = RealDate.prototype;
  Object.assign(VirtualDate, {
    now: () => config.epochMs + nowMs,
    parse: RealDate.parse,
    UTC: RealDate.UTC,
  });
  w.Date = VirtualDate as unknown as DateConstructor;
  Object.defineProperty(performance, "now", { value: () => nowMs, configurable: true });

  interface Timer {
    id: number;
    due: number;
    seq: number;
    fn: (...args: unknown[]) => void;
    args: unknown[];
    interval?: number;
  }
  const timers = new Map<number, Timer>();
  let nextTimerId = 1;
  let seq = 0;
  const toCallback = (handler: unknown): (...args: unknown[]) => void =>
    typeof handler === "function"
      ? handler as (...args: unknown[]) => void
      : () => (0, eval)(String(handler));
  const addTimer = (handler: unknown, delay: unknown, args: unknown[], repeat: boolean) => {
    const ms = Math.max(0, Number(delay) || 0);
    const id = nextTimerId++;
    timers.set(id, {
      id,
      due: nowMs + ms,
      seq: seq++,
      fn: toCallback(handler),
      args,
      interval: repeat ? Math.max(1, ms) : undefined,
    });
    return id;
  };
  w.setTimeout =
    ((handler: unknown, delay?: unknown, ...args: unknown[]) =>
      addTimer(handler, delay, args, false)) as unknown as typeof setTimeout;
  w.setInterval =
    ((handler: unknown, delay?: unknown, ...args: unknown[]) =>
      addTimer(handler, delay, args, true)) as unknown as typeof setInterval;
  w.clearTimeout = ((id?: number) => {
    if (id !== undefined) timers.delete(id);
  }) as typeof clearTimeout;
  w.clearInterval = w.clearTimeout as unknown as typeof clearInterval;

  let frameCallbacks = new Map<number, FrameRequestCallback>();
  let nextFrameId = 1;
  w.requestAnimationFrame = (callback: FrameRequestCallback): number => {
    const id = nextFrameId++;
    frameCallbacks.set(id, callback);
    return id;
  };
  w.cancelAnimationFrame = (id: number): void => {
    frameCallbacks.delete(id);
  };

  // Chromium stack lines: "    at fn (url:line:col)" or "    at url:line:col". The page's
  // own frames are those above the runtime's: below it is whoever called the runtime (the
  // renderer's evaluate, the studio), which is not the composition's code.
  const parseStack = (stack: string): PageStackFrame[] => {
    const frames: PageStackFrame[] = [];
    for (const line of stack.split("\n")) {
      const match = /^\s*at (?:(.*?) \()?(\S+?):(\d+):(\d+)\)?$/.exec(line);
      if (!match) continue;
      if (match[2].endsWith("vid-runtime.js")) {
        if (frames.length > 0) break;
        continue;
      }
      if (!/^(https?|file|blob):/.test(match[2])) continue;
      frames.push({
        functionName: match[1] ?? "",
        url: match[2],
        line: Number(match[3]),
        column: Number(match[4]),
      });
    }
    return frames;
  };
  const recordError = (error: unknown, event?: ErrorEvent): void => {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const stack = error instanceof Error && typeof error.stack === "string"
      ? parseStack(error.stack)
      : [];
    pageErrors.push({
      message,
      phase: seekingFrame === null ? "load" : "frame",
      ...(seekingFrame === null ? {} : { frame: seekingFrame }),
      stack,
      ...(stack.length === 0 && event?.filename
        ? { url: event.filename, line: event.lineno, column: event.colno }
        : {}),
    });
  };
  globalThis.addEventListener("error", (event) => {
    // A resource that failed to load also fires "error" (not an ErrorEvent): not a throw.
    if (!(event instanceof ErrorEvent)) return;
    recordError(event.error ?? event.message, event);
  });
  globalThis.addEventListener("unhandledrejection", (event) => {
    recordError(event.reason);
  });

  // --- HyperFrames' model: window.__hyperframes, clips, sub-compositions (hyperframes.ts) ---
  const hyperframes = createHyperframes?.({
    getVariables: () => Object.freeze(structuredClone(config.variables)),
    report: recordError,
    skipMissing: config.skipMissingSubCompositions === true,
  });
  if (hyperframes) {
    // Mounted once the document is parsed, before `load`: the renderer's first look at the
    // page (its media list) and the first seek see the sub-compositions.
    if (document.readyState === "loading") {
      document.addEventListener("DOMContentLoaded", () => hyperframes.mount(), { once: true });
    } else {
      hyperframes.mount();
    }
  }

  // --- animations (CSS animations, CSS transitions, WAAPI) ---
  // Each animation is driven from the virtual time at which it first appeared. An
  // animation the page paused itself is left to the page.
  const births = new Map<Animation, number>();
  const scanAnimations = (): void => {
    if (!document.getAnimations) return;
    for (const animation of document.getAnimations()) {
      if (births.has(animation)) continue;
      if (animation.playState === "paused") {
        births.set(animation, Number.NaN);
        continue;
      }
      // An animation inside a sub-composition runs on that composition's clock.
      const target = (animation.effect as KeyframeEffect | null)?.target ?? null;
      births.set(animation, Math.max(nowMs, hyperframes?.compositionStartMs(target) ?? 0));
      animation.pause();
    }
  };
  const applyAnimations = (): void => {
    for (const [animation, birth] of births) {
      // Cancelled (its class or element went away, or the page called cancel()): setting
      // its time would bring it back, above the page's current animations.
      if (animation.playState === "idle") {
        births.delete(animation);
        continue;
      }
      if (Number.isNaN(birth)) continue;
      animation.currentTime = (nowMs - birth) * animation.playbackRate;
    }
  };

  const runTimersUntil = async (targetMs: number): Promise<void> => {
    let fired = 0;
    while (true) {
      let next: Timer | undefined;
      for (const timer of timers.values()) {
        if (timer.due > targetMs) continue;
        if (!next || timer.due < next.due || (timer.due === next.due && timer.seq < next.seq)) {
          next = timer;
        }
      }
      if (!next) break;
      if (++fired > 100000) {
        throw new Error("more than 100000 timer callbacks in one frame: a timer loop?");
      }
      nowMs = Math.max(nowMs, next.due);
      if (next.interval !== undefined) {
        next.due += next.interval;
        next.seq = seq++;
      } else {
        timers.delete(next.id);
      }
      try {
        // Called as a plain function: its stack frame then names no receiver object.
        Reflect.apply(next.fn, globalThis, next.args);
      } catch (error) {
        recordError(error);
      }
      await Promise.resolve();
      scanAnimations();
    }
    nowMs = targetMs;
  };

  const runFrameCallbacks = (): void => {
    const callbacks = frameCallbacks;
    frameCallbacks = new Map();
    for (const callback of callbacks.values()) {
      try {
        callback(nowMs);
      } catch (error) {
        recordError(error);
      }
    }
    scanAnimations();
  };

  const seekHooks = new Set<(t: number) => void | Promise<void>>();
  const delays = new Map<number, string>();
  let nextDelayId = 1;

  const seekTimelines = (t: number): void => {
    const registry = w.__timelines as unknown;
    if (!registry || typeof registry !== "object") return;
    // A timeline keyed by a composition's id runs on that composition's clock (HyperFrames).
    const entries: [string | null, unknown][] = Array.isArray(registry)
      ? registry.map((timeline) => [null, timeline])
      : Object.entries(registry);
    for (const [id, timeline] of entries) {
      const tl = timeline as { pause?: () => void; seek?: (t: number, s: boolean) => void };
      if (typeof tl?.seek !== "function") continue;
      tl.pause?.();
      tl.seek(id !== null && hyperframes ? hyperframes.timelineTime(id, t) : t, false);
    }
  };

  const sleep = (ms: number) => new Promise<void>((resolve) => realSetTimeout(resolve, ms));

  const waitReady = async (frame: number): Promise<void> => {
    const deadline = RealDate.now() + config.readyTimeoutMs;
    const timeout = (what: string) =>
      new Error(
        `frame ${frame}: ${what} not ready after ${config.readyTimeoutMs} ms`,
      );
    if (document.fonts && document.fonts.status !== "loaded") {
      await Promise.race([
        document.fonts.ready,
        sleep(config.readyTimeoutMs).then(() => {
          throw timeout("fonts");
        }),
      ]);
    }
    for (const image of Array.from(document.images)) {
      if (image.complete || !image.src) continue;
      const left = deadline - RealDate.now();
      await Promise.race([
        image.decode().catch(() => undefined),
        sleep(Math.max(0, left)).then(() => {
          throw timeout(`image ${image.currentSrc || image.src}`);
        }),
      ]);
    }
    while (delays.size > 0) {
      if (RealDate.now() > deadline) {
        const labels = Array.from(delays.values()).map((l) => `"${l}"`).join(", ");
        throw new Error(
          `frame ${frame}: __vid.delay(${labels}) was not released within ` +
            `${config.readyTimeoutMs} ms`,
        );
      }
      await sleep(2);
    }
  };

  // --- <video> and <audio>: never play on their own; videos are seeked frame-exactly ---
  const numberAttribute = (el: Element, name: string, fallback: number): number => {
    const raw = el.getAttribute(name);
    const value = raw === null || raw.trim() === "" ? Number.NaN : Number(raw);
    return Number.isFinite(value) ? value : fallback;
  };
  const originalSource = new WeakMap<HTMLMediaElement, string>();
  const sourceOf = (el: HTMLMediaElement): string => {
    const known = originalSource.get(el);
    if (known) return known;
    const src = el.currentSrc || el.src || el.querySelector("source")?.src || "";
    if (src) originalSource.set(el, src);
    return src;
  };
  // Audio automation travels as written: the renderer parses it (and names a bad one), so
  // the page never guesses at what a malformed attribute meant.
  const audioAttributes = (
    el: HTMLMediaElement,
  ): Pick<MediaDescriptor, "element" | "audio"> => {
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
  };
  const describe = (el: HTMLMediaElement): MediaDescriptor => {
    const duration = numberAttribute(el, "data-duration", Number.NaN);
    const playbackRate = numberAttribute(el, "data-playback-rate", 1) || 1;
    const own = {
      start: numberAttribute(el, "data-start", 0),
      mediaStart: numberAttribute(el, "data-media-start", 0),
      duration: Number.isFinite(duration) && duration > 0 ? duration : null,
    };
    // Inside a sub-composition or a timed clip, its window moves and ends with theirs.
    const timing = hyperframes ? hyperframes.mediaWindow(el, own, playbackRate) : own;
    return {
      kind: el instanceof HTMLVideoElement ? "video" : "audio",
      src: sourceOf(el),
      ...timing,
      volume: Math.max(0, numberAttribute(el, "data-volume", 1)),
      muted: el.hasAttribute("muted") || el.muted,
      loop: el.loop,
      playbackRate,
      ...audioAttributes(el),
    };
  };
  const mediaElements = (): HTMLMediaElement[] =>
    Array.from(document.querySelectorAll<HTMLMediaElement>("video, audio"));
  const untilEvent = (el: EventTarget, name: string, what: string): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      const timer = realSetTimeout(
        () => reject(new Error(`${what} timed out after ${config.readyTimeoutMs} ms`)),
        config.readyTimeoutMs,
      );
      el.addEventListener(name, () => {
        clearTimer(timer);
        resolve();
      }, { once: true });
      el.addEventListener("error", () => {
        clearTimer(timer);
        reject(new Error(`${what} failed: cannot load ${sourceOf(el as HTMLMediaElement)}`));
      }, { once: true });
    });
  // Videos seeked for the current frame whose new frame the compositor has not presented
  // yet. Under BeginFrame control a video's frame reaches the compositor on its own thread,
  // so 'seeked' alone does not mean the next BeginFrame shows it: the capturer draws again
  // until requestVideoFrameCallback has confirmed every seeked video.
  // A video still unpresented when the next frame seeks is one the compositor does not draw
  // (display: none, no box): it is not waited for again.
  const unpresented = new Map<
    HTMLVideoElement,
    { target: number; fps: number; since: number; nudges: number }
  >();
  const neverPresented = new WeakSet<HTMLVideoElement>();
  let seekGeneration = 0;
  // Only the sought frame counts: a video that has just loaded may present its first frame
  // after the seek began, and that callback must not pass for the seek's.
  const awaitPresentation = (el: HTMLVideoElement, target: number, fps: number): void => {
    if (typeof el.requestVideoFrameCallback !== "function" || neverPresented.has(el)) return;
    const generation = seekGeneration;
    unpresented.set(el, { target, fps, since: RealDate.now(), nudges: 0 });
    const onFrame = (_now: number, frame: VideoFrameCallbackMetadata): void => {
      if (generation !== seekGeneration) return;
      // The frame's timestamp is its start, index / fps; the target is that frame's middle.
      if (fps > 0 && Math.round(frame.mediaTime * fps) !== Math.floor(target * fps)) {
        el.requestVideoFrameCallback(onFrame);
        return;
      }
      unpresented.delete(el);
    };
    el.requestVideoFrameCallback(onFrame);
  };
  // A video still waiting this long (ms) after its seek is seeked again, once per mark: seen
  // on a fresh page under load, a paused video's seeked frame showed only after the next seek.
  const RESEEK_AFTER_MS = [200, 700, 1300, 1900];
  // Seeking to the very time a paused video is at may skip the decode, so every other
  // re-seek aims a tenth of a source frame later: the same source frame, a real seek.
  const nudged = new WeakMap<HTMLVideoElement, number>();
  const reseekVideos = (): number => {
    const now = RealDate.now();
    let reseeked = 0;
    for (const [el, wait] of unpresented) {
      const due = RESEEK_AFTER_MS[wait.nudges];
      if (due === undefined || now - wait.since < due) continue;
      wait.nudges++;
      nudged.set(el, wait.target);
      el.currentTime = wait.target + (wait.fps > 0 && wait.nudges % 2 === 1 ? 0.1 / wait.fps : 0);
      reseeked++;
    }
    return reseeked;
  };
  const untilVideosPresented = async (maxMs = 2000): Promise<number> => {
    const deadline = RealDate.now() + maxMs;
    while (unpresented.size > 0 && RealDate.now() < deadline) {
      reseekVideos();
      await sleep(8);
    }
    return unpresented.size;
  };
  let painter: VideoFramePainter | undefined;
  const seekVideos = async (t: number): Promise<void> => {
    seekGeneration++;
    for (const el of unpresented.keys()) neverPresented.add(el);
    unpresented.clear();
    for (const el of mediaElements()) {
      el.autoplay = false;
      if (!el.paused) el.pause();
      el.muted = true;
      if (!(el instanceof HTMLVideoElement)) continue;
      // A clip outside its window is not drawn, so its frame would never be presented: it is
      // seeked (and waited for) once it shows.
      if (hyperframes?.hiddenByClip(el)) continue;
      const d = describe(el);
      if (!d.src) continue;
      const proxy = config.videoProxies?.[d.src];
      if (proxy && el.src !== proxy.url) {
        const loaded = untilEvent(el, "loadeddata", `video ${d.src}`);
        el.src = proxy.url;
        el.load();
        await loaded;
      } else if (el.readyState < 2) {
        await untilEvent(el, "loadeddata", `video ${d.src}`);
      }
      const local = Math.max(0, t - d.start);
      const played = d.duration === null ? local : Math.min(local, d.duration);
      let mediaTime = d.mediaStart + played * d.playbackRate;
      const length = el.duration;
      if (Number.isFinite(length) && length > 0) {
        if (d.loop && mediaTime >= length) {
          const span = length - d.mediaStart;
          mediaTime = span > 0 ? d.mediaStart + ((mediaTime - d.mediaStart) % span) : 0;
        }
        mediaTime = Math.min(mediaTime, length);
      }
      // Aim at the middle of the source frame that covers mediaTime, so rounding in the
      // decoder's timestamps can never pick its neighbour.
      const fps = proxy?.fps ?? 0;
      let target = mediaTime;
      if (fps > 0) {
        const last = Number.isFinite(length)
          ? Math.max(0, Math.ceil(length * fps - 1e-6) - 1)
          : Infinity;
        const index = Math.min(Math.floor(mediaTime * fps + 1e-6), last);
        target = (index + 0.5) / fps;
      }
      // There already; or a re-seek left it a tenth of a frame past this target.
      const there = Math.abs(el.currentTime - target) <= 1e-6 ||
        (nudged.get(el) === target && Math.abs(el.currentTime - target) < 0.2 / fps);
      if (!there) {
        nudged.delete(el);
        const seeked = untilEvent(el, "seeked", `video ${d.src} seek`);
        awaitPresentation(el, target, fps);
        el.currentTime = target;
        await seeked;
      }
    }
  };

  // --- captions: each [data-captions] element shows the cue active at the frame's time ---
  const captionFiles = new Map<string, Promise<CaptionCue[]>>();
  const captionTracks: CaptionTrack[] = [];
  const shownCaption = new WeakMap<Element, string>();
  const loadCaptions = (src: string): Promise<CaptionCue[]> => {
    const url = new URL(src, document.baseURI).href;
    let loading = captionFiles.get(url);
    if (!loading) {
      loading = (async () => {
        const response = await fetch(url);
        if (!response.ok) {
          throw new Error(`data-captions="${src}": cannot load it (HTTP ${response.status})`);
        }
        if (!parseCaptionFile) return [];
        const cues = parseCaptionFile(await response.text(), src);
        captionTracks.push({ src, cues });
        return cues;
      })();
      captionFiles.set(url, loading);
    }
    return loading;
  };
  const captionElements = (): Element[] =>
    Array.from(document.querySelectorAll("[data-captions]"))
      .filter((el) => (el.getAttribute("data-captions") ?? "").trim() !== "");
  // Loading starts with the page, so scripts can read __vid.captions once it is in.
  document.addEventListener("DOMContentLoaded", () => {
    for (const el of captionElements()) {
      loadCaptions(el.getAttribute("data-captions")!).catch(() => undefined);
    }
  });
  const showCaptions = async (t: number): Promise<void> => {
    for (const el of captionElements()) {
      const cues = await loadCaptions(el.getAttribute("data-captions")!);
      const active = cues.filter((cue) => cue.start <= t && t < cue.end);
      const word = (cue: CaptionCue): number =>
        cue.words ? cue.words.filter((w) => w.start <= t).length - 1 : -1;
      const key = active.map((cue) => `${cue.start}|${cue.end}|${cue.text}|${word(cue)}`).join(
        "\n",
      );
      if (shownCaption.get(el) === key) continue;
      shownCaption.set(el, key);
      const nodes: Node[] = [];
      const addText = (parent: Node[] | Element, text: string): void => {
        text.split("\n").forEach((line, n) => {
          const pieces: Node[] = n > 0 ? [document.createElement("br")] : [];
          if (line !== "") pieces.push(document.createTextNode(line));
          for (const piece of pieces) {
            if (Array.isArray(parent)) parent.push(piece);
            else parent.appendChild(piece);
          }
        });
      };
      active.forEach((cue, c) => {
        if (c > 0) nodes.push(document.createElement("br"));
        if (!cue.words) {
          addText(nodes, cue.text);
          return;
        }
        const current = word(cue);
        cue.words.forEach((w, n) => {
          const span = document.createElement("span");
          span.className = "vid-caption-word" +
            (n === current
              ? " vid-caption-word-active"
              : n < current
              ? " vid-caption-word-spoken"
              : "");
          addText(span, w.text);
          nodes.push(span);
        });
      });
      el.replaceChildren(...nodes);
    }
  };

  const api: VidPageApi = {
    get captions() {
      return structuredClone(captionTracks);
    },
    getVariables: () => Object.freeze(structuredClone(config.variables)),
    onSeek(fn) {
      seekHooks.add(fn);
      return () => seekHooks.delete(fn);
    },
    delay(label = "delay") {
      const id = nextDelayId++;
      delays.set(id, label);
      return () => {
        delays.delete(id);
      };
    },
    get time() {
      return nowMs / 1000;
    },
    media: () => mediaElements().map(describe).filter((d) => d.src !== ""),
    errors: () => structuredClone(pageErrors),
    videoFramesPending: () => unpresented.size,
    reseekVideos,
    untilVideosPresented,
    paintVideoFrames() {
      painter ??= createPainter?.(sleep);
      const videos = mediaElements().filter((el): el is HTMLVideoElement =>
        el instanceof HTMLVideoElement
      );
      return painter ? painter.paint(videos) : Promise.resolve(0);
    },
    clearVideoFrames: () => painter?.clear() ?? 0,
    timedWindows() {
      const registry = w.__timelines;
      const keys = registry && typeof registry === "object" && !Array.isArray(registry)
        ? Object.keys(registry)
        : [];
      return {
        windows: hyperframes?.windows() ?? [],
        timelineStarts: Object.fromEntries(
          keys.map((id) => [id, hyperframes?.timelineStart(id) ?? 0]),
        ),
      };
    },
    async seek(frame: number): Promise<void> {
      if (frame < currentFrame) {
        throw new Error(
          `frame ${frame}: the page is already at frame ${currentFrame}; seeks only move forward`,
        );
      }
      if (pageErrors.length > 0 && pageErrors[0].phase === "load") {
        throw new Error(`the page threw while loading: ${pageErrors[0].message}`);
      }
      scanAnimations();
      for (let step = currentFrame + 1; step <= frame; step++) {
        seekingFrame = step;
        await runTimersUntil(frameMs(step));
        runFrameCallbacks();
      }
      seekingFrame = frame;
      currentFrame = frame;
      const t = frameSeconds(frame);
      nowMs = t * 1000;
      // Caption files are in before the page's handlers run, so they can read __vid.captions.
      try {
        await Promise.all(
          captionElements().map((el) => loadCaptions(el.getAttribute("data-captions")!)),
        );
      } catch (error) {
        recordError(error);
      }
      for (const hook of seekHooks) {
        // A handler's promise that never settles (say, one awaiting a timer: timers run on
        // the frame clock, which stands still during a seek) fails the frame after the
        // readiness timeout instead of holding the render forever.
        let timer: ReturnType<typeof realSetTimeout> | undefined;
        const stalled = new Promise<"stalled">((resolve) => {
          timer = realSetTimeout(() => resolve("stalled"), config.readyTimeoutMs);
        });
        let outcome: unknown;
        try {
          outcome = await Promise.race([hook(t), stalled]);
        } catch (error) {
          recordError(error);
        } finally {
          clearTimer(timer);
        }
        if (outcome === "stalled") {
          throw new Error(
            `frame ${frame}: an onSeek handler did not settle within ${config.readyTimeoutMs} ms ` +
              `(timers inside it wait for the next frame; use __vid.delay() to hold a frame)`,
          );
        }
      }
      // A throw from timeline code (a GSAP callback, an onUpdate) or an animation's handler
      // is recorded with its stack like any other, so the error says where it came from.
      try {
        seekTimelines(t);
      } catch (error) {
        recordError(error);
      }
      hyperframes?.applyClips(t);
      try {
        scanAnimations();
        applyAnimations();
      } catch (error) {
        recordError(error);
      }
      try {
        await seekVideos(t);
      } catch (error) {
        recordError(error);
      }
      try {
        await showCaptions(t);
      } catch (error) {
        recordError(error);
      }
      if (pageErrors.length > 0) {
        const first = pageErrors[0];
        throw new Error(`frame ${first.frame ?? frame}: the page threw ${first.message}`);
      }
      await waitReady(frame);
    },
  };
  Object.defineProperty(w, "__vid", { value: Object.freeze(api), enumerable: false });
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
 * The expression that runs the runtime, with its video frame painter, on the config that
 * `configExpression` evaluates to in the page: one place for what the runtime is given.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.ok(runtimeCall("config").includes("(config, "));
 * ```
 */
export function runtimeCall(configExpression: string): string {
  return `(${vidPageRuntime.toString()})(${configExpression}, ${createVideoFramePainter.toString()}, ${createHyperframesModel.toString()}, ${parseCaptions.toString()})`;
}
