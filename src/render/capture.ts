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

/**
 * Moves the page to `frame` (t = frame / fps) and waits for the readiness gate; returns how
 * many seeked `<video>` elements still wait for their new frame to be presented (pass it to
 * {@linkcode Capturer.capture}). When the
 * page threw, the {@linkcode PageError} says where, from the runtime's record.
 */
export async function seekFrame(page: CdpSession, frame: number): Promise<number> {
  try {
    const pending = await evaluate(
      page,
      `window.__vid.seek(${frame}).then(() => window.__vid.videoFramesPending())`,
    );
    return typeof pending === "number" ? pending : 0;
  } catch (error) {
    if (error instanceof CdpClosedError) throw error;
    const thrown = await evaluate(
      page,
      `({ errors: window.__vid.errors(), href: location.href })`,
    ).catch(() => undefined) as { errors: PageErrorRecord[]; href: string } | undefined;
    if (thrown && thrown.errors.length > 0) {
      throw pageErrorFrom(thrown.errors[0], thrown.href, frame);
    }
    const message = (error as Error).message.replace(/^Error: /, "");
    throw new PageError(frame, message);
  }
}

/** Returns the image of the current frame. */
export interface Capturer {
  /**
   * The image of the current frame. `pendingVideos` (from {@linkcode seekFrame}): when
   * above 0, the image is taken only once the compositor has presented every seeked
   * video's new frame. @default 0
   */
  capture(pendingVideos?: number): Promise<Uint8Array>;
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
      async capture(pendingVideos = 0): Promise<Uint8Array> {
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
  /** One BeginFrame; its image, else (no damage: nothing changed) the previous one. */
  const draw = async (): Promise<Uint8Array | undefined> => {
    const result = await clock.exclusive(() =>
      page.send<{ hasDamage: boolean; screenshotData?: string }>(
        "HeadlessExperimental.beginFrame",
        { frameTimeTicks: clock.tick(interval), interval, screenshot },
      )
    );
    if (result.screenshotData) previous = Buffer.from(result.screenshotData, "base64");
    return previous;
  };
  return {
    async capture(pendingVideos = 0): Promise<Uint8Array> {
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
      return image;
    },
  };
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
