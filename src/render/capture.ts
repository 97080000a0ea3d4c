/**
 * Moving a page to a frame and taking its picture: `seekFrame` calls the page runtime's
 * `__vid.seek`, and a capturer returns the frame's image with BeginFrame or a screenshot.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { CdpClosedError, CdpError, type CdpSession } from "./cdp.ts";
import { sleep } from "../util/async.ts";
import type { CaptureMode } from "./browser.ts";
import type { PageErrorRecord } from "../runtime/page_runtime.ts";
import { PageError, pageErrorFrom } from "./page_error.ts";

export { PageError } from "./page_error.ts";

interface EvaluateResult {
  result?: { value?: unknown };
  exceptionDetails?: {
    text?: string;
    exception?: { description?: string; value?: unknown };
  };
}

/** Evaluates `expression` in the page, awaiting a promise; throws the page's error text. */
export async function evaluate(page: CdpSession, expression: string): Promise<unknown> {
  const response = await page.send<EvaluateResult>("Runtime.evaluate", {
    expression,
    awaitPromise: true,
    returnByValue: true,
  });
  if (response.exceptionDetails) {
    const details = response.exceptionDetails;
    const description = details.exception?.description ?? String(details.exception?.value ?? "");
    throw new Error((description.split("\n    at ")[0] || details.text) ?? "unknown error");
  }
  return response.result?.value;
}

/** What the capture of a frame waits for, as {@linkcode seekFrame} found it. */
export interface FrameVideos {
  /** Seeked `<video>` elements whose new frame is not presented yet. */
  pending: number;
  /** `<video>` elements that came into the picture at this frame (see capture). */
  entering: number;
}

/**
 * Moves the page to `frame` (t = frame / fps) and waits for the readiness gate; returns how
 * many seeked `<video>` elements still wait for their new frame to be presented, and how many
 * came into the picture (pass it to {@linkcode Capturer.capture}). When the
 * page threw, the {@linkcode PageError} says where, from the runtime's record.
 */
export async function seekFrame(page: CdpSession, frame: number): Promise<FrameVideos> {
  try {
    const counts = await evaluate(
      page,
      `window.__vid.seek(${frame}).then(() => ` +
        `[window.__vid.videoFramesPending(), window.__vid.videosEntering()])`,
    );
    const [pending, entering] = Array.isArray(counts) ? counts : [];
    return {
      pending: typeof pending === "number" ? pending : 0,
      entering: typeof entering === "number" ? entering : 0,
    };
  } catch (error) {
    throw await seekFailure(page, frame, error);
  }
}

/**
 * Steps the page's clock towards the frame before `frame` for about `budgetMs` of wall-clock
 * time (the page runtime's `__vid.fastForward`); resolves with the frame reached. Call it in
 * a loop, each call under its own deadline, until it reaches `frame - 1`, then
 * {@linkcode seekFrame}: a page animated by `requestAnimationFrame` redraws once per frame
 * stepped through, so a late frame of a fresh page can take longer than one frame's deadline.
 */
export async function fastForwardSlice(
  page: CdpSession,
  frame: number,
  budgetMs: number,
): Promise<number> {
  try {
    const reached = await evaluate(page, `window.__vid.fastForward(${frame}, ${budgetMs})`);
    if (typeof reached !== "number") throw new Error(`fast-forward returned ${String(reached)}`);
    return reached;
  } catch (error) {
    throw await seekFailure(page, frame, error);
  }
}

/**
 * The error of a seek that failed: the page's first recorded error where it threw (a
 * {@linkcode PageError} saying where), else a PageError with the failure's message; a closed
 * connection as it is.
 */
async function seekFailure(page: CdpSession, frame: number, error: unknown): Promise<Error> {
  if (error instanceof CdpClosedError) return error;
  const thrown = await evaluate(
    page,
    `({ errors: window.__vid.errors(), href: location.href })`,
  ).catch(() => undefined) as { errors: PageErrorRecord[]; href: string } | undefined;
  if (thrown && thrown.errors.length > 0) {
    return pageErrorFrom(thrown.errors[0], thrown.href, frame);
  }
  const message = (error as Error).message.replace(/^Error: /, "");
  return new PageError(frame, message);
}

/** Returns the image of the current frame. */
export interface Capturer {
  /**
   * The image of the current frame. `videos` (from {@linkcode seekFrame}): when some are
   * pending, the image is taken only once the compositor has presented every seeked
   * video's new frame; when some entered the picture, only once the picture has changed.
   * @default { pending: 0, entering: 0 }
   */
  capture(videos?: FrameVideos): Promise<Uint8Array>;
}

/** Options of {@linkcode createCapturer}. */
export interface CapturerOptions {
  mode: CaptureMode;
  /** JPEG for opaque output, PNG keeps the alpha channel. */
  format: "jpeg" | "png";
  /** JPEG quality 0-100. @default 80 */
  quality?: number;
  fps: number;
}

/** BeginFrames tried for a page's first image before giving up. */
const FIRST_FRAME_TRIES = 40;

/**
 * Draws (BeginFrames, or checks between screenshots) spent waiting for seeked videos' new
 * frames to be presented, a little apart after the first few: about 2 s on a busy machine.
 * A video that is still not presented then is one the compositor does not draw, and the
 * page runtime stops waiting for it.
 */
const VIDEO_FRAME_TRIES = 60;

/**
 * Draws spent, at most, for a video that came into the picture (see createCapturer): it
 * showed on the third BeginFrame after the seek in every run measured (1080p, HyperFrames'
 * play-mode example); a little apart after the first few, about 1 s in all. A video that
 * changes nothing in the picture (covered by what is drawn above it) costs them all, on the
 * frame it comes in only.
 */
const ENTERING_TRIES = 30;

/**
 * Whether the seeked videos' new frames have been presented (see seekFrame). Videos still
 * waiting whose re-seek is due are seeked again first (`__vid.reseekVideos`, on the page
 * runtime's schedule: a paused video's seeked frame may show only after another seek, seen
 * on a fresh page under load, where every frame of a chunk came one late).
 */
async function videosPresented(page: CdpSession): Promise<boolean> {
  return await evaluate(
    page,
    "(window.__vid.reseekVideos(), window.__vid.videoFramesPending())",
  ) === 0;
}

/**
 * A capturer for one page. BeginFrame may report no damage (nothing changed): the
 * previous image is then reused, which is exactly what the frame shows.
 *
 * But not on the frame a `<video>` comes into the picture (it was off the viewport, hidden
 * or out of its clip's window at the previous frame): Chromium embeds a video's own
 * compositor surface, which it stops drawing while the video is not seen, and the page's
 * next compositor frame waits for that surface's first frame. The BeginFrames in between
 * draw nothing (no damage) or the picture before the seek: measured on HyperFrames'
 * play-mode example (its video drops in from above the frame), the first BeginFrame after
 * the seek gave no image, the second the previous frame's, the third the new picture,
 * while the video had already reported its frame presented (so the wait for presentation
 * ended after the second, and 2 renders in 3 from frame 0 had a white frame 1). So on such a
 * frame the capturer draws on until a draw has reported damage and the image differs from
 * the previous frame's.
 */
export function createCapturer(page: CdpSession, options: CapturerOptions): Capturer {
  // PNG is lossless, so the fastest compression gives the same pixels: at 1080p Chromium's
  // default PNG compression costs ~500 CPU ms per frame, the fastest ~100 (bench/README).
  // JPEG keeps Chromium's default encoder: its speed option moved nothing measurable.
  const screenshot = options.format === "jpeg"
    ? { format: "jpeg", quality: options.quality ?? 80 }
    : { format: "png", optimizeForSpeed: true };
  if (options.mode === "screenshot") {
    return {
      async capture({ pending: pendingVideos } = NO_VIDEOS): Promise<Uint8Array> {
        // The page draws on its own here: wait until the videos' frames are on screen.
        for (let tries = 0; pendingVideos > 0 && tries < VIDEO_FRAME_TRIES; tries++) {
          if (await videosPresented(page)) break;
          await sleep(tries < 3 ? 5 : 40);
        }
        // The videos' frames are painted in the page: the compositor's own picture of a
        // paused video can stay a seek behind in this mode (video_paint.ts).
        await evaluate(page, "window.__vid.paintVideoFrames()");
        const { data } = await page.send<{ data: string }>("Page.captureScreenshot", {
          ...screenshot,
          optimizeForSpeed: true,
          captureBeyondViewport: false,
        });
        return Buffer.from(data, "base64");
      },
    };
  }
  const interval = 1000 / options.fps;
  const clock = compositorClock(page);
  let previous: Uint8Array | undefined;
  /** Whether a draw reported damage since the capture began. */
  let damaged = false;
  /** One BeginFrame; its image, else (no damage: nothing changed) the previous one. */
  const draw = async (): Promise<Uint8Array | undefined> => {
    const result = await clock.exclusive(() =>
      page.send<{ hasDamage: boolean; screenshotData?: string }>(
        "HeadlessExperimental.beginFrame",
        { frameTimeTicks: clock.tick(interval), interval, screenshot },
      )
    );
    damaged ||= result.hasDamage;
    if (result.screenshotData) previous = Buffer.from(result.screenshotData, "base64");
    return previous;
  };
  return {
    async capture({ pending: pendingVideos, entering } = NO_VIDEOS): Promise<Uint8Array> {
      const before = previous;
      damaged = false;
      // A new window's first frames may have no surface to read back yet, for longer on a
      // busy machine (5 tries failed renders under load): the first image gets up to
      // FIRST_FRAME_TRIES, a little apart; later frames reuse the previous image.
      let image: Uint8Array | undefined;
      for (let attempt = 0; attempt < FIRST_FRAME_TRIES && !image; attempt++) {
        if (attempt >= 5) await sleep(25);
        image = await draw();
      }
      if (!image) {
        throw new CdpError("HeadlessExperimental.beginFrame", "no image for the first frame");
      }
      // A seeked video's frame reaches the compositor on the media thread, so that draw may
      // still show its previous frame (seen on a loaded machine). Its presentation is
      // confirmed in a later draw's frame callbacks: draw until then; the last image shows it.
      // The confirming draw's image is the one returned: its compositor frame comes after
      // the callbacks that confirmed presentation (no damage: the same image, cheaply).
      if (pendingVideos > 0) {
        for (let tries = 0; tries < VIDEO_FRAME_TRIES; tries++) {
          if (await videosPresented(page)) break;
          if (tries >= 3) await sleep(30);
          image = await draw() ?? image;
        }
        image = await draw() ?? image;
      }
      // A video that came into the picture shows a few BeginFrames late (see above).
      for (let tries = 0; entering > 0 && tries < ENTERING_TRIES; tries++) {
        if (damaged && (before === undefined || !sameBytes(image, before))) break;
        if (tries >= 3) await sleep(30);
        image = await draw() ?? image;
      }
      return image;
    },
  };
}

/** What a frame with no videos waits for. */
const NO_VIDEOS: FrameVideos = { pending: 0, entering: 0 };

/** Whether two images are the same bytes. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/**
 * The compositor of one browser accepts one BeginFrame at a time (overlapping ones
 * crash its GPU process) and wants frame times that only increase, so every window of
 * a browser shares this clock and queue.
 */
interface CompositorClock {
  tick(interval: number): number;
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
}

const clocks = new WeakMap<object, CompositorClock>();

function compositorClock(page: CdpSession): CompositorClock {
  let clock = clocks.get(page.connection);
  if (!clock) {
    let ticks = 1000;
    let queue: Promise<unknown> = Promise.resolve();
    clock = {
      tick(interval: number): number {
        ticks += interval;
        return ticks;
      },
      exclusive<T>(fn: () => Promise<T>): Promise<T> {
        const run = queue.then(fn, fn);
        queue = run.catch(() => undefined);
        return run;
      },
    };
    clocks.set(page.connection, clock);
  }
  return clock;
}
