/**
 * Caller overrides of template variables: reading `--variables` / `--variables-file`,
 * checking them against the declarations (warnings, or errors with
 * `--strict-variables`) and merging them over the defaults.
 *
 * Precedence, lowest first: declared defaults < `--variables-file` < `--variables`.
 * In warn mode every override is passed to the page as given, even when it does not
 * match its declaration; the composition decides what to do with it.
 *
 * @module
 */

import { statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { parse as parseJsonc, type ParseError, printParseErrorCode } from "jsonc-parser";
import type { VariableDeclaration, Variables } from "./declarations.ts";
import { StrictVariablesError, type VariableProblem, VariablesInputError } from "./errors.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { checkValues, mergeVariables } from "./values.ts";

export { editDistance, nearestName } from "./names.ts";
export { fallbackValue, mergeVariables } from "./values.ts";

/** Where overrides come from; both optional. */
export interface OverrideSources {
  /** Inline JSON object text (`--variables`). */
  variables?: string;
  /** Path of a JSON or JSONC file holding an object (`--variables-file`). */
  variablesFile?: string;
}

/**
 * Parses inline `--variables` JSON. Throws {@linkcode VariablesInputError} when it is
 * not a JSON object.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseInlineVariables('{"title":"Hi"}'), { title: "Hi" });
 * ```
 */
export function parseInlineVariables(text: string): Variables {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new VariablesInputError(
      `--variables is not valid JSON (${(error as Error).message}); ` +
        `pass an object such as '{"title":"Hello"}'`,
      "--variables",
    );
  }
  if (!isPlainObject(value)) {
    throw new VariablesInputError(
      `--variables must be a JSON object such as '{"title":"Hello"}', got ${
        Array.isArray(value) ? "an array" : JSON.stringify(value)
      }`,
      "--variables",
    );
  }
  return value;
}

/**
 * Reads a `--variables-file` (JSON, or JSONC with comments and trailing commas).
 *
 * @example
 * ```ts no_run
 * const values = await readVariablesFile("vars.jsonc");
 * ```
 */
export async function readVariablesFile(path: string): Promise<Variables> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    throw new VariablesInputError(
      `--variables-file ${path}: cannot read it (${(error as Error).message})`,
      "--variables-file",
    );
  }
  // Editors on Windows often save a byte-order mark, which the JSON grammar rejects.
  if (text.startsWith("\uFEFF")) text = text.slice(1);
  const errors: ParseError[] = [];
  const value: unknown = parseJsonc(text, errors, { allowTrailingComma: true });
  if (errors.length > 0) {
    const first = errors[0];
    const before = text.slice(0, first.offset);
    const line = before.split("\n").length;
    const column = first.offset - before.lastIndexOf("\n");
    throw new VariablesInputError(
      `--variables-file ${path}:${line}:${column}: ${printParseErrorCode(first.error)}; ` +
        `the file must hold one JSON object`,
      "--variables-file",
    );
  }
  if (!isPlainObject(value)) {
    throw new VariablesInputError(
      `--variables-file ${path}: must hold a JSON object of variable values`,
      "--variables-file",
    );
  }
  return value;
}

/**
 * Loads both override sources and merges them (inline wins over the file).
 *
 * @example
 * ```ts no_run
 * await loadOverrides({ variables: '{"title":"Hi"}', variablesFile: "base.json" });
 * ```
 */
export async function loadOverrides(sources: OverrideSources): Promise<Variables> {
  const fromFile = sources.variablesFile !== undefined
    ? await readVariablesFile(sources.variablesFile)
    : {};
  const inline = sources.variables !== undefined ? parseInlineVariables(sources.variables) : {};
  return { ...fromFile, ...inline };
}

/**
 * Checks every override key against the declarations and returns all problems:
 * undeclared keys (including keys whose declaration was dropped, with the nearest
 * declared name as a suggestion), wrong types, and `image` paths that are not files of
 * `options.projectDir`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const problems = checkOverrides([{ id: "n", type: "number", label: "n" }], { n: "5", extra: 1 });
 * assert.deepEqual(problems.map((p) => p.key), ["n", "extra"]);
 * assert.equal(problems[0].expected, "a finite number");
 * assert.equal(problems[0].given, '"5"');
 * ```
 */
export function checkOverrides(
  declarations: readonly VariableDeclaration[],
  overrides: Variables,
  options: CheckOptions = {},
): VariableProblem[] {
  return checkValues(
    declarations,
    overrides,
    (declaration, value) => missingImage(declaration, value, options.projectDir),
  );
}

/** Options of {@linkcode checkOverrides}. */
export interface CheckOptions {
  /**
   * The project directory: `image` values that are paths must name a file in it. Without
   * it (a project that is not on this disk) only their form is checked.
   */
  projectDir?: string;
}

/**
 * Why an `image` value that is a project path does not resolve, or null when it does
 * (or is empty, a URL, not an image declaration, or there is no project to look in).
 */
function missingImage(
  declaration: VariableDeclaration,
  value: unknown,
  projectDir: string | undefined,
): string | null {
  if (declaration.type !== "image" || projectDir === undefined) return null;
  if (typeof value !== "string" || value === "" || /^https?:\/\//i.test(value)) return null;
  const path = value.split(/[?#]/)[0];
  let decoded = path;
  try {
    decoded = decodeURI(path);
  } catch {
    // keep the path as written
  }
  try {
    if (statSync(join(projectDir, decoded)).isFile()) return null;
    return `is not a file in the project (${projectDir})`;
  } catch {
    return `does not exist in the project (${projectDir}); check the path and letter case`;
  }
}

/** Result of {@linkcode resolveVariables}. */
export interface ResolvedVariables {
  /** The merged values for the page. */
  values: Variables;
  /** The raw overrides after merging file and inline. */
  overrides: Variables;
  /** Problems found; warnings unless strict (strict throws instead). */
  problems: VariableProblem[];
}

/**
 * Loads, checks and merges overrides in one go. With `strict`, any problem throws a
 * {@linkcode StrictVariablesError} listing all of them.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readComposition } from "./composition.ts";
 *
 * const composition = await readComposition("examples/hello");
 * const { values, problems } = await resolveVariables(composition.declarations, {
 *   variables: '{"title":"Launch day"}',
 * });
 * assert.equal(values.title, "Launch day");
 * assert.deepEqual(problems, []);
 * ```
 */
export async function resolveVariables(
  declarations: readonly VariableDeclaration[],
  sources: OverrideSources & CheckOptions & { strict?: boolean },
): Promise<ResolvedVariables> {
  const overrides = await loadOverrides(sources);
  const problems = checkOverrides(declarations, overrides, { projectDir: sources.projectDir });
  if (sources.strict && problems.length > 0) throw new StrictVariablesError(problems);
  return { values: mergeVariables(declarations, overrides), overrides, problems };
}
