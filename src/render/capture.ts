/**
 * Moving a page to a frame and taking its picture: `seekFrame` calls the page runtime's
 * `__vid.seek`, and a capturer returns the frame's image with BeginFrame or a screenshot.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { CdpClosedError, type CdpSession } from "./cdp.ts";
import type { CaptureMode } from "./browser.ts";

/** The page threw, or was not ready, at a frame. */
export class PageError extends Error {
  /** Always `"PageError"`. */
  override name = "PageError";
  /** The frame at which it happened. */
  readonly frame: number;
  /** The field at fault: the frame. */
  readonly field = "frame";
  /**
   * Creates the error for one frame.
   *
   * @param frame The frame at which the page failed.
   * @param message What happened; prefixed with `frame <n>: ` unless it already is.
   */
  constructor(frame: number, message: string) {
    super(message.startsWith(`frame ${frame}`) ? message : `frame ${frame}: ${message}`);
    this.frame = frame;
  }
}

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

/** Moves the page to `frame` (t = frame / fps) and waits for the readiness gate. */
export async function seekFrame(page: CdpSession, frame: number): Promise<void> {
  try {
    await evaluate(page, `window.__vid.seek(${frame})`);
  } catch (error) {
    if (error instanceof CdpClosedError) throw error;
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

/**
 * A capturer for one page. BeginFrame may report no damage (nothing changed): the
 * previous image is then reused, which is exactly what the frame shows.
 */
export function createCapturer(page: CdpSession, options: CapturerOptions): Capturer {
  const screenshot = options.format === "jpeg"
    ? { format: "jpeg", quality: options.quality ?? 80 }
    : { format: "png" };
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
      for (let attempt = 0; attempt < 5; attempt++) {
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
