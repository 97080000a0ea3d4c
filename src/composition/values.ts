/**
 * Variable values against a composition's declarations, with no file system: the checks
 * behind `--strict-variables` and the merge over the defaults. `variables.ts` adds the
 * project's image files to the checks; `<vid-player>` runs these as they are, so a bad value
 * in the player reads as it does in the CLI.
 *
 * @module
 */

import { isCssColor } from "./color.ts";
import { typeMismatch, type VariableDeclaration, type Variables } from "./declarations.ts";
import type { VariableProblem } from "./errors.ts";
import { nearestName } from "./names.ts";

/**
 * Why an `image` declaration's `value` does not resolve, or null when it does (or cannot be
 * checked here).
 */
export type ImageProblem = (declaration: VariableDeclaration, value: unknown) => string | null;

/**
 * Checks every override key against the declarations and returns all problems:
 * undeclared keys (including keys whose declaration was dropped, with the nearest
 * declared name as a suggestion), wrong types, and what `imageProblem` says of `image`
 * values (nothing by default: a project not on this disk has only their form checked).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const problems = checkValues([{ id: "n", type: "number", label: "n" }], { n: "5", extra: 1 });
 * assert.deepEqual(problems.map((p) => p.key), ["n", "extra"]);
 * assert.equal(problems[0].expected, "a finite number");
 * assert.equal(problems[0].given, '"5"');
 * ```
 */
export function checkValues(
  declarations: readonly VariableDeclaration[],
  overrides: Variables,
  imageProblem: ImageProblem = () => null,
): VariableProblem[] {
  const byId = new Map(declarations.map((d) => [d.id, d]));
  const problems: VariableProblem[] = [];
  for (const [key, value] of Object.entries(overrides)) {
    const given = JSON.stringify(value) ?? String(value);
    const declaration = byId.get(key);
    if (!declaration) {
      const known = declarations.map((d) => d.id).join(", ") || "none";
      const suggestion = nearestName(key, declarations.map((d) => d.id));
      problems.push({
        key,
        expected: "a declared variable",
        given,
        message: `"${key}" is not declared by the composition (declared: ${known})` +
          (suggestion !== undefined ? `; did you mean "${suggestion}"?` : ""),
        ...(suggestion !== undefined && { suggestion }),
      });
      continue;
    }
    const expected = typeMismatch(declaration, value, isCssColor);
    if (expected !== null) {
      problems.push({
        key,
        expected,
        given,
        message: `"${key}" (${declaration.type}) expects ${expected}, got ${given}`,
      });
      continue;
    }
    const missing = imageProblem(declaration, value);
    if (missing !== null) {
      problems.push({
        key,
        expected: "a file in the project",
        given,
        message: `"${key}" (image) expects a file in the project or an http(s) URL; ` +
          `${given} ${missing}`,
      });
    }
  }
  // An image left at its default must exist too: it is what the page will load.
  for (const declaration of declarations) {
    if (declaration.id in overrides || declaration.default === undefined) continue;
    const missing = imageProblem(declaration, declaration.default);
    if (missing === null) continue;
    const given = JSON.stringify(declaration.default);
    problems.push({
      key: declaration.id,
      expected: "a file in the project",
      given,
      message: `"${declaration.id}" (image) default ${given} ${missing}`,
    });
  }
  return problems;
}

/** Value a declaration without a default starts with. */
export function fallbackValue(declaration: VariableDeclaration): string | number | boolean {
  switch (declaration.type) {
    case "string":
      return "";
    case "number":
      return 0;
    case "boolean":
      return false;
    case "color":
      return "#000000";
    case "enum":
      return declaration.options?.[0]?.value ?? "";
    case "image":
      return "";
  }
}

/**
 * Defaults merged with overrides: what `window.__vid.getVariables()` returns. A
 * declaration without a default starts at `""`, `0`, `false`, `"#000000"` or its first
 * enum option.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(
 *   mergeVariables([{ id: "title", type: "string", label: "Title", default: "Hi" }], {}),
 *   { title: "Hi" },
 * );
 * ```
 */
export function mergeVariables(
  declarations: readonly VariableDeclaration[],
  overrides: Variables,
): Variables {
  const values: Variables = {};
  for (const declaration of declarations) {
    values[declaration.id] = declaration.default ?? fallbackValue(declaration);
  }
  return { ...values, ...overrides };
}
