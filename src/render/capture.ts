/**
 * Moving a page to a frame and taking its picture: `seekFrame` calls the page runtime's
 * `__vid.seek`, and a capturer returns the frame's image with BeginFrame or a screenshot.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { CdpClosedError, type CdpSession } from "./cdp.ts";
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
 * Moves the page to `frame` (t = frame / fps) and waits for the readiness gate. When the
 * page threw, the {@linkcode PageError} says where, from the runtime's record.
 */
export async function seekFrame(page: CdpSession, frame: number): Promise<void> {
  try {
    await evaluate(page, `window.__vid.seek(${frame})`);
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
  capture(): Promise<Uint8Array>;
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
      async capture(): Promise<Uint8Array> {
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
  return {
    async capture(): Promise<Uint8Array> {
      // A new window's first frames may have no surface to read back yet, for longer on a
      // busy machine (5 tries failed renders under load): the first image gets up to
      // FIRST_FRAME_TRIES, a little apart; later frames reuse the previous image.
      for (let attempt = 0; attempt < FIRST_FRAME_TRIES; attempt++) {
        if (attempt >= 5) await new Promise((resolve) => setTimeout(resolve, 25));
        const result = await clock.exclusive(() =>
          page.send<{ hasDamage: boolean; screenshotData?: string }>(
            "HeadlessExperimental.beginFrame",
            { frameTimeTicks: clock.tick(interval), interval, screenshot },
          )
        );
        if (result.screenshotData) {
          previous = Buffer.from(result.screenshotData, "base64");
          return previous;
        }
        if (previous) return previous;
      }
      throw new Error("BeginFrame returned no image for the first frame");
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
