/**
 * The errors a composition page throws, recorded with where they came from: the page's own
 * frames of the stack (the runtime's frames left out), whether it was thrown while the page
 * loaded or while a frame was computed, and which frame. The renderer fails the render with
 * the first one (`__vid.errors()`), naming the file and line.
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`).
 *
 * @module
 */

import type { PageErrorRecord, PageStackFrame } from "./page_runtime.ts";
import { resourceFailure } from "./resource_errors.ts";

/** The name the runtime's own code carries in stacks (its `//# sourceURL`). */
const RUNTIME_URL_SUFFIX = "vid-runtime.js";

/**
 * The page's own frames of a Chromium stack, innermost first. Lines read
 * `    at fn (url:line:col)` or `    at url:line:col`. The page's frames are those above the
 * runtime's: below it is whoever called the runtime (the renderer's evaluate, the studio),
 * which is not the composition's code; frames of no http, file or blob URL are left out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const stack = "TypeError: x\n    at tick (http://127.0.0.1:1/index.html:12:5)\n" +
 *   "    at vid-runtime.js:40:3\n    at http://127.0.0.1:1/other.js:1:1";
 * assert.deepEqual(parseStack(stack), [
 *   { functionName: "tick", url: "http://127.0.0.1:1/index.html", line: 12, column: 5 },
 * ]);
 * ```
 */
export function parseStack(stack: string): PageStackFrame[] {
  const frames: PageStackFrame[] = [];
  for (const line of stack.split("\n")) {
    const match = /^\s*at (?:(.*?) \()?(\S+?):(\d+):(\d+)\)?$/.exec(line);
    if (!match) continue;
    if (match[2].endsWith(RUNTIME_URL_SUFFIX)) {
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
}

/** The page's errors, oldest first, and the frame being computed. */
export interface PageErrorLog {
  /** Every error recorded so far, oldest first. */
  readonly records: PageErrorRecord[];
  /** The frame a seek is computing; null before the first seek (the page is loading). */
  seekingFrame: number | null;
  /** Records `error` (with the error event that reported it, when one did). */
  record(error: unknown, event?: ErrorEvent): void;
}

/**
 * Creates the page's error log and listens for uncaught errors and rejections.
 *
 * @example
 * ```ts no_run
 * const errors = listenForPageErrors();
 * errors.seekingFrame = 12;
 * errors.record(new Error("x")); // { message: "Error: x", phase: "frame", frame: 12, … }
 * ```
 */
export function listenForPageErrors(): PageErrorLog {
  const log: PageErrorLog = {
    records: [],
    seekingFrame: null,
    record(error: unknown, event?: ErrorEvent): void {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      const stack = error instanceof Error && typeof error.stack === "string"
        ? parseStack(error.stack)
        : [];
      const frame = log.seekingFrame;
      log.records.push({
        message,
        phase: frame === null ? "load" : "frame",
        ...(frame === null ? {} : { frame }),
        stack,
        ...(stack.length === 0 && event?.filename
          ? { url: event.filename, line: event.lineno, column: event.colno }
          : {}),
      });
    },
  };
  globalThis.addEventListener("error", (event) => {
    // A resource that failed to load also fires "error" (not an ErrorEvent): not a throw.
    if (!(event instanceof ErrorEvent)) return;
    log.record(event.error ?? event.message, event);
  });
  // A script or stylesheet that did not load: its element's "error" does not bubble, so it is
  // caught on the way down. Recorded like a throw, it fails the render before frame 0 by its
  // URL, not later by what the next script misses.
  globalThis.addEventListener("error", (event) => {
    const failure = resourceFailure(event.target);
    if (!failure) return;
    const frame = log.seekingFrame;
    log.records.push({
      message: failure.message,
      phase: frame === null ? "load" : "frame",
      ...(frame === null ? {} : { frame }),
      stack: [],
      resource: failure.url,
    });
  }, true);
  globalThis.addEventListener("unhandledrejection", (event) => {
    log.record(event.reason);
  });
  return log;
}
