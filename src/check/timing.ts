/**
 * Two timing mistakes the static part can see in a project's text: an animation paused in
 * CSS (`animation-play-state: paused`, or `paused` in the `animation` shorthand), which the
 * renderer leaves to the page, so it stands still in every frame unless a script resumes it;
 * and a script reading the wall clock (`Date.now()`, `new Date()`), which in a render is the
 * virtual clock: the render's start plus t, the same instant in preview and render only by
 * accident, and never "today". Both are warnings (SEVERITY): each has uses that are right.
 * A vendored library's scripts (`*.min.js`, `lib/`, `vendor/`) are the library's business.
 *
 * @module
 */

import { type CheckProblem, SEVERITY } from "./problems.ts";
import type { ScriptSource } from "./syntax.ts";
import type { PlacedText } from "./variable_reads.ts";

/** The place of `offset` in `text`, which starts at `start`. */
function placeAt(
  text: string,
  offset: number,
  start: { line: number; column: number },
): { line: number; column: number } {
  const lines = text.slice(0, offset).split("\n");
  return lines.length === 1
    ? { line: start.line, column: start.column + offset }
    : { line: start.line + lines.length - 1, column: lines.at(-1)!.length + 1 };
}

/**
 * The paused animations of the CSS texts and the wall-clock reads of the scripts.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const problems = timingProblems(
 *   [{ file: "a.js", module: false, start: { line: 1, column: 1 }, text: "const t0 = Date.now();" }],
 *   [{ file: "a.css", start: { line: 1, column: 1 }, text: ".s { animation-play-state: paused }" }],
 *   [],
 *   "index.html",
 * );
 * assert.deepEqual(problems.map((p) => [p.kind, p.file, p.column]), [
 *   ["paused-animation", "a.css", 6],
 *   ["wall-clock", "a.js", 12],
 * ]);
 * ```
 */
export function timingProblems(
  scripts: readonly ScriptSource[],
  css: readonly PlacedText[],
  htmlLines: readonly string[],
  entry: string,
): CheckProblem[] {
  const problems: CheckProblem[] = [];
  const source = (file: string, line: number) =>
    file === entry ? { source: htmlLines[line - 1] } : {};
  for (const style of css) {
    const text = style.text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " "));
    const pattern = /animation-play-state\s*:\s*paused\b|\banimation\s*:[^;}]*\bpaused\b/g;
    for (const m of text.matchAll(pattern)) {
      const at = placeAt(text, m.index, style.start);
      problems.push({
        severity: SEVERITY["paused-animation"],
        part: "static",
        kind: "paused-animation",
        message: "an animation paused in CSS stands still in every frame: the render drives " +
          "running animations and leaves one the page paused to the page; drop " +
          "animation-play-state: paused, or resume it from a script",
        file: style.file,
        ...at,
        ...source(style.file, at.line),
        field: "animation-play-state",
      });
    }
  }
  for (const script of scripts) {
    // A library the project vendors (`vid add` puts it in lib/) keeps its clock for itself.
    if (/\.min\.js$|(^|\/)(lib|vendor|node_modules)\//.test(script.file)) continue;
    const text = script.text.replace(
      /\/\*[\s\S]*?\*\/|(?<![:"'\\])\/\/[^\n]*/g,
      (c) => c.replace(/[^\n]/g, " "),
    );
    for (const m of text.matchAll(/\bDate\.now\s*\(\s*\)|\bnew\s+Date\s*\(\s*\)/g)) {
      const at = placeAt(text, m.index, script.start);
      problems.push({
        severity: SEVERITY["wall-clock"],
        part: "static",
        kind: "wall-clock",
        message: `${m[0].replace(/\s+/g, " ")} reads the render's virtual clock (the render's ` +
          "start plus t), not the time a viewer sees: animate from the seek's t " +
          "(__vid.onSeek((t) => …) or a timeline) and pass a date as a variable",
        file: script.file,
        ...at,
        ...source(script.file, at.line),
        field: m[0].startsWith("new") ? "new Date()" : "Date.now()",
      });
    }
  }
  return problems;
}
