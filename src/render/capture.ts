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

/** Where in the project a page error was thrown. Lines and columns count from 1. */
export interface PageErrorSource {
  /**
   * The script, relative to the project (`js/scene.js`; the entry HTML for an inline
   * script); a script from another origin keeps its full URL.
   */
  file: string;
  /** Line in the file, from 1. */
  line: number;
  /** Column in the line, from 1. */
  column: number;
  /** The function's name, "" for top-level code. */
  functionName: string;
}

/** How many frames of a page error's stack its message shows. */
const MESSAGE_STACK_FRAMES = 3;

/** What {@linkcode PageError} adds to an error report (`--json`, API error bodies). */
export interface PageErrorDetails {
  /** `"load"`: thrown while the page loaded; `"frame"`: while computing a frame. */
  phase: "load" | "frame";
  /** The frame, for phase `"frame"`. */
  frame: number | null;
  /** Where it was thrown, when the page said. */
  location?: { file: string; line: number; column: number };
  /** The page's own stack frames, innermost first (up to 10). */
  stack: PageErrorSource[];
}

/**
 * The page threw (while loading, or at a frame), or was not ready at a frame. The
 * message names the source file, line and column and the first frames of the stack, on
 * one line (it travels through logs, webhooks and Step Functions causes unchanged):
 *
 * ```text
 * frame 4: the page threw TypeError: Cannot read properties of null (reading 'explode') at step (js/anim.js:5:10), called from tick (js/anim.js:9:3)
 * ```
 */
export class PageError extends Error {
  /** Always `"PageError"`. */
  override name = "PageError";
  /** The frame at which it happened; null when the page threw while loading. */
  readonly frame: number | null;
  /** `"load"` or `"frame"`. */
  readonly phase: "load" | "frame";
  /** The field at fault: `"frame"`, or `"load"` for a throw while loading. */
  readonly field: "frame" | "load";
  /** Where it was thrown, when known. */
  readonly location?: PageErrorSource;
  /** The page's own stack frames, innermost first. */
  readonly callStack: PageErrorSource[];
  /**
   * Creates the error for one frame, or for the page's load (`frame` null).
   *
   * @param frame The frame at which the page failed; null while loading.
   * @param message What happened; prefixed with `frame <n>: ` unless it already is.
   * @param callStack The page's stack frames, innermost first.
   */
  constructor(frame: number | null, message: string, callStack: PageErrorSource[] = []) {
    const head = frame === null || message.startsWith(`frame ${frame}`)
      ? message
      : `frame ${frame}: ${message}`;
    const [top, ...callers] = callStack.slice(0, MESSAGE_STACK_FRAMES).map((f) =>
      f.functionName
        ? `${f.functionName} (${f.file}:${f.line}:${f.column})`
        : `${f.file}:${f.line}:${f.column}`
    );
    const where = top === undefined
      ? ""
      : ` at ${top}${callers.length > 0 ? `, called from ${callers.join(", ")}` : ""}`;
    super(head + where);
    this.frame = frame;
    this.phase = frame === null ? "load" : "frame";
    this.field = frame === null ? "load" : "frame";
    this.callStack = callStack.slice(0, 10);
    this.location = callStack[0];
  }

  /** The phase, frame, location and stack, for JSON error reports. */
  details(): PageErrorDetails {
    return {
      phase: this.phase,
      frame: this.frame,
      ...(this.location
        ? {
          location: {
            file: this.location.file,
            line: this.location.line,
            column: this.location.column,
          },
        }
        : {}),
      stack: this.callStack,
    };
  }
}

/**
 * A script URL as the project names it: relative to the folder of the composition page
 * when it lies inside it (a local render, the hosted server and Lambda serve the project
 * there), else its path on the same origin; another origin's script keeps its URL. Never
 * a path of the machine that rendered.
 */
export function projectFile(url: string, pageUrl: string): string {
  let script: URL;
  let page: URL;
  try {
    script = new URL(url);
    page = new URL(pageUrl);
  } catch {
    return url || "(unknown script)";
  }
  if (script.origin !== page.origin || !/^https?:$/.test(script.protocol)) return url;
  const folder = page.pathname.slice(0, page.pathname.lastIndexOf("/") + 1);
  const path = script.pathname.startsWith(folder)
    ? script.pathname.slice(folder.length)
    : script.pathname.replace(/^\//, "");
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** A {@linkcode PageError} from the runtime's record of what the page threw. */
export function pageErrorFrom(
  record: PageErrorRecord,
  pageUrl: string,
  seekFrame: number | null,
): PageError {
  const stack: PageErrorSource[] = record.stack.map((f) => ({
    file: projectFile(f.url, pageUrl),
    line: f.line,
    column: f.column,
    functionName: f.functionName,
  }));
  if (stack.length === 0 && record.url && record.line !== undefined) {
    stack.push({
      file: projectFile(record.url, pageUrl),
      line: record.line,
      column: record.column ?? 0,
      functionName: "",
    });
  }
  if (record.phase === "load") {
    return new PageError(null, `the page threw while loading: ${record.message}`, stack);
  }
  const frame = record.frame ?? seekFrame ?? 0;
  return new PageError(frame, `the page threw ${record.message}`, stack);
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
