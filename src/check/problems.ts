/**
 * What `vid check` reports: one {@linkcode CheckProblem} per finding, each with the part
 * of the check that found it, where it is (file, line, column, the source line, a frame)
 * and how bad it is, by the one table {@linkcode SEVERITY}. Errors are what a render would
 * get wrong; warnings are likely mistakes (`--strict` fails on them too). Every command that
 * renders refuses a project whose static or media part found errors with
 * {@linkcode CheckFailedError}.
 *
 * @module
 */

import { EXIT_FAILED, VidError } from "../errors.ts";
import type { PageErrorSource } from "../render/page_error.ts";

/** The part of the check that found a problem. */
export type CheckPart = "static" | "media" | "fonts" | "runtime";

/** What kind of mistake a problem is, for programs reading `--json`. */
export type CheckKind =
  | "syntax"
  | "missing-file"
  | "unknown-attribute"
  | "dropped-declaration"
  | "variable"
  | "undeclared-read"
  | "override"
  | "unrendered"
  | "media"
  | "font"
  | "font-unresolved"
  | "page-error"
  | "bad-text"
  | "text-overflow"
  | "paused-animation"
  | "wall-clock"
  | "batch-row"
  | "checker";

/**
 * The one severity table: how bad each kind of problem is, the same in `vid check`,
 * `vid validate`, the check every render runs first, the studio's Check panel and the
 * server. An error is what a render would get wrong (every paying command refuses it
 * unless `--no-check`); a warning is a likely mistake (`vid check --strict` fails on it).
 * docs/check.md lists this table.
 */
export const SEVERITY: Readonly<Record<CheckKind, "error" | "warning">> = {
  "syntax": "error",
  "missing-file": "error",
  "unknown-attribute": "error",
  // The spec drops a malformed declaration with a warning; what then reads it is an error.
  "dropped-declaration": "warning",
  "variable": "error",
  "undeclared-read": "error",
  // An override the declarations do not take: the render's own warning
  // (`--strict-variables` makes it an error there).
  "override": "warning",
  "unrendered": "error",
  "media": "error",
  "font": "error",
  "font-unresolved": "warning",
  "page-error": "error",
  "bad-text": "error",
  "text-overflow": "warning",
  // Each has a right use (resumed from a script; a clock shown on purpose): likely mistakes.
  "paused-animation": "warning",
  "wall-clock": "warning",
  // The checker itself could not run a part (esbuild unavailable): the render still reports.
  "checker": "warning",
  // A batch row `render-batch` would not start (`vid check --batch`).
  "batch-row": "error",
};

/** One finding of `vid check`. */
export interface CheckProblem {
  /** `error`: the render would be wrong; `warning`: likely wrong (`--strict` fails on it). */
  severity: "error" | "warning";
  /** The part of the check that found it. */
  part: CheckPart;
  /** What kind of mistake it is. */
  kind: CheckKind;
  /** The whole sentence, naming the fix where there is one. */
  message: string;
  /** The project file at fault, relative to the project (`index.html`, `js/scene.js`). */
  file?: string;
  /** Line in `file`, from 1. */
  line?: number;
  /** Column in the line, from 1. */
  column?: number;
  /** The source line, as written. */
  source?: string;
  /** The attribute, variable or declaration at fault. */
  field?: string;
  /** The frame it was seen at (runtime findings). */
  frame?: number;
  /** The page's stack, innermost first (page errors). */
  stack?: PageErrorSource[];
}

/** How many errors and warnings a list holds. */
export function countProblems(
  problems: readonly CheckProblem[],
): { errors: number; warnings: number } {
  const errors = problems.filter((p) => p.severity === "error").length;
  return { errors, warnings: problems.length - errors };
}

/**
 * One problem as a line of text: `file:line:column: error: message`, with the source line
 * and the stack below it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const text = formatProblem({
 *   severity: "error", part: "static", kind: "syntax", message: "Unexpected token",
 *   file: "js/scene.js", line: 3, column: 9, source: "  return 2;",
 * });
 * assert.equal(text, "js/scene.js:3:9: error: Unexpected token\n    |   return 2;\n    |         ^");
 * ```
 */
export function formatProblem(problem: CheckProblem): string {
  const where = problem.file === undefined
    ? ""
    : `${problem.file}${problem.line !== undefined ? `:${problem.line}` : ""}${
      problem.line !== undefined && problem.column !== undefined ? `:${problem.column}` : ""
    }: `;
  const frame = problem.frame !== undefined && !problem.message.startsWith("frame ")
    ? `frame ${problem.frame}: `
    : "";
  const lines = [`${where}${problem.severity}: ${frame}${problem.message}`];
  if (problem.source !== undefined) {
    lines.push(`    | ${problem.source}`);
    if (problem.column !== undefined) lines.push(`    | ${" ".repeat(problem.column - 1)}^`);
  }
  return lines.join("\n");
}

/**
 * A project failed the check every command that renders runs first (`vid render`,
 * `vid still`, `vid render-batch`, `vid cloud render`, `vid lambda render` and
 * `render-batch`): nothing was rendered or uploaded. `--no-check` skips that check.
 */
export class CheckFailedError extends VidError {
  /** Always `"CheckFailedError"`. */
  override name = "CheckFailedError";
  /** Every error found (warnings are not carried). */
  readonly problems: CheckProblem[];

  /**
   * Creates the error, listing every problem in its message.
   *
   * @param problems The errors found (at least one).
   */
  constructor(problems: CheckProblem[]) {
    super(
      `the project fails vid check (${problems.length} error${
        problems.length === 1 ? "" : "s"
      }); nothing was rendered (run vid check for details, --no-check to skip):\n` +
        problems.map((p) => `  - ${formatProblem(p).split("\n")[0]}`).join("\n"),
      { field: problems[0]?.field ?? problems[0]?.file ?? "composition", exitCode: EXIT_FAILED },
    );
    this.problems = problems;
  }
}
