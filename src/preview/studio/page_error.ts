/**
 * What the stage says when its page throws: the error with the file (relative to the
 * composition's folder), line and column, the first stack frames, and the offending source
 * line with a caret, from the runtime's `__vid.errors()`.
 *
 * @module
 */

import type {
  PageErrorRecord as ErrorRecord,
  PageStackFrame as StackFrame,
} from "../../runtime/page_runtime.ts";

/**
 * A script URL as the project names it: relative to the folder of the composition `entry`
 * (served from the studio's origin, `studioHref`); another origin's URL as it is.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const studio = "http://127.0.0.1:3000/?frame=2";
 * assert.equal(projectFile("http://127.0.0.1:3000/scenes/a%20b.js", studio, "scenes/x.html"), "a b.js");
 * assert.equal(projectFile("http://127.0.0.1:3000/lib/g.js", studio, "scenes/x.html"), "lib/g.js");
 * assert.equal(projectFile("https://cdn.example/g.js", studio, "x.html"), "https://cdn.example/g.js");
 * ```
 */
export function projectFile(url: string, studioHref: string, entry: string): string {
  try {
    const parsed = new URL(url, studioHref);
    if (parsed.origin !== new URL(studioHref).origin) return url;
    const page = new URL(`/${encodeURI(entry)}`, studioHref).pathname;
    const folder = page.slice(0, page.lastIndexOf("/") + 1);
    const path = parsed.pathname.startsWith(folder)
      ? parsed.pathname.slice(folder.length)
      : parsed.pathname.slice(1);
    return decodeURIComponent(path);
  } catch {
    return url;
  }
}

/**
 * Where the error was thrown: its innermost stack frame, else the error event's location;
 * undefined when neither is known.
 */
export function errorLocation(record: ErrorRecord): StackFrame | undefined {
  return record.stack[0] ??
    (record.url && record.line !== undefined
      ? { functionName: "", url: record.url, line: record.line, column: record.column ?? 0 }
      : undefined);
}

/**
 * The stage's message for `record`: what was thrown (while loading, or at which frame;
 * `fallbackFrame` when the record names none), then up to three stack frames, their files
 * named by `fileOf`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const record = {
 *   message: "TypeError: x is undefined",
 *   phase: "frame" as const,
 *   frame: 4,
 *   stack: [{ functionName: "draw", url: "http://h/a.js", line: 3, column: 9 }],
 * };
 * assert.equal(
 *   pageErrorMessage(record, 0, (url) => url.slice("http://h/".length)),
 *   "frame 4: the page threw TypeError: x is undefined\n    at draw (a.js:3:9)",
 * );
 * ```
 */
export function pageErrorMessage(
  record: ErrorRecord,
  fallbackFrame: number,
  fileOf: (url: string) => string,
): string {
  const top = errorLocation(record);
  const head = record.phase === "load"
    ? `the page threw while loading: ${record.message}`
    : `frame ${record.frame ?? fallbackFrame}: the page threw ${record.message}`;
  const frames = (record.stack.length > 0 ? record.stack : top ? [top] : []).slice(0, 3)
    .map((f) => {
      const where = `${fileOf(f.url)}:${f.line}:${f.column}`;
      return `    at ${f.functionName ? `${f.functionName} (${where})` : where}`;
    });
  return [head, ...frames].join("\n");
}

/**
 * The lines around `line` of `source` (one before, one after), numbered, the line itself
 * marked with `>` and a caret under `column` (from 1; none for 0); tabs as two spaces, lines
 * cut at 200 characters.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   sourceExcerpt("a\nbad();\nc", 2, 1),
 *   "  1 | a\n> 2 | bad();\n    | ^\n  3 | c",
 * );
 * ```
 */
export function sourceExcerpt(source: string, line: number, column: number): string {
  const lines = source.split(/\r\n|\r|\n|\u2028|\u2029/);
  const from = Math.max(1, line - 1);
  const to = Math.min(lines.length, line + 1);
  const width = String(to).length;
  const excerpt: string[] = [];
  for (let n = from; n <= to; n++) {
    const text = (lines[n - 1] ?? "").replace(/\t/g, "  ").slice(0, 200);
    excerpt.push(`${n === line ? ">" : " "} ${String(n).padStart(width)} | ${text}`);
    if (n === line && column > 0) {
      excerpt.push(`  ${" ".repeat(width)} | ${" ".repeat(column - 1)}^`);
    }
  }
  return excerpt.join("\n");
}
