/**
 * What a composition page threw, as the renderer reports it: {@linkcode PageError} names
 * the project-relative file, line and column and the first frames of the page's stack,
 * built from the runtime's record (`__vid.errors()`) or CDP's `Runtime.exceptionThrown`
 * details. The hosted server, the Lambda worker and `vid render` all report it this way.
 *
 * @module
 */

import type { PageErrorRecord } from "../runtime/page_runtime.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

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
export class PageError extends VidError {
  /** Always `"PageError"`. */
  override name = "PageError";
  /** The frame at which it happened; null when the page threw while loading. */
  readonly frame: number | null;
  /** `"load"` or `"frame"`. */
  readonly phase: "load" | "frame";
  /** The field at fault: `"frame"`, or `"load"` for a throw while loading. */
  override readonly field: "frame" | "load";
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
    super(head + where, { exitCode: EXIT_FAILED });
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
  // A script or stylesheet that did not load says so itself: the page threw nothing.
  if (record.resource !== undefined) {
    return new PageError(
      record.phase === "load" ? null : record.frame ?? seekFrame ?? 0,
      record.message,
    );
  }
  if (record.phase === "load") {
    return new PageError(null, `the page threw while loading: ${record.message}`, stack);
  }
  const frame = record.frame ?? seekFrame ?? 0;
  return new PageError(frame, `the page threw ${record.message}`, stack);
}
