/**
 * `vid validate [dir]`: checks a composition and the given variables without rendering
 * or loading the page: the fast, static part of `vid check` (script syntax, missing
 * files, misspelt attributes) plus the variables. The verdict goes to stdout: `valid`,
 * `valid with N warnings` (each problem listed with its field) or `invalid` (errors in
 * the files, or with `--strict-variables` an undeclared or mistyped override). Exit 0
 * valid (warnings allowed), 1 invalid, 2 usage error.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { formatProblem } from "../check/problems.ts";
import { staticCheck } from "../check/static.ts";
import { readComposition } from "../composition/composition.ts";
import type { DroppedDeclaration } from "../composition/declarations.ts";
import { formatFrameRate } from "../composition/frame_rate.ts";
import { StrictVariablesError, type VariableProblem } from "../composition/errors.ts";
import { checkOverrides, loadOverrides, mergeVariables } from "../composition/variables.ts";
import { OPTIONS } from "../request/options.ts";
import { cliOption, cliOptionWithDefault, cliSwitch } from "./request_flags.ts";
import { EXIT, reportError } from "./shared.ts";

/** The three answers of `vid validate`. */
export type Verdict = "valid" | "valid-with-warnings" | "invalid";

/**
 * The verdict for a composition: `invalid` when its files have errors (a script that does
 * not parse, a missing file: `vid check`'s static part) or, with `strict`, when an
 * override is undeclared or mistyped; `valid with N warnings` for dropped declarations and
 * (without `strict`) override problems; `valid` otherwise. Strict checking is about the
 * overrides' keys, as in `vid render --strict-variables`: a dropped declaration stays a
 * warning (its keys are then undeclared overrides).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const dropped = [{ index: 0, id: "n", reason: "unknown type" }];
 * assert.equal(validationVerdict(dropped, [], true).verdict, "valid-with-warnings");
 * assert.equal(validationVerdict([], [], false, 1).verdict, "invalid");
 * ```
 */
export function validationVerdict(
  dropped: readonly DroppedDeclaration[],
  problems: readonly VariableProblem[],
  strict: boolean,
  fileErrors = 0,
): { verdict: Verdict; count: number; text: string } {
  const count = dropped.length + problems.length + fileErrors;
  if (fileErrors > 0 || (strict && problems.length > 0)) {
    const failing = fileErrors + (strict ? problems.length : 0);
    return { verdict: "invalid", count, text: `invalid (${plural(failing, "problem")})` };
  }
  if (count === 0) return { verdict: "valid", count, text: "valid" };
  return { verdict: "valid-with-warnings", count, text: `valid with ${plural(count, "warning")}` };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** Registers `vid validate`. */
export function registerValidate(program: Command): void {
  program
    .command("validate")
    .summary("Check a composition and variable overrides against its declarations.")
    .description(
      "Check a composition and variable overrides against its declarations. Prints a " +
        "verdict on stdout: `valid`, `valid with N warnings` (each listed with its field: an " +
        "undeclared key, with the nearest declared name; a wrong type or range; a dropped " +
        "declaration) or `invalid`: a script that does not parse, a file the page names that " +
        "the project lacks, a misspelt data-* attribute (the static part of vid check, which " +
        "also loads the page), or with --strict-variables an undeclared or mistyped override.\n" +
        "Exit status: 0 valid (warnings allowed), 1 invalid, 2 usage error.",
    )
    .argument("[target]", "project directory or HTML file", ".")
    .addOption(cliOption(OPTIONS.variables))
    .addOption(cliOption(OPTIONS.variablesFile))
    .addOption(cliSwitch(OPTIONS.strictVariables))
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (target, options) => {
      try {
        const c = await readComposition(target, options.composition);
        const overrides = await loadOverrides(options);
        const problems: VariableProblem[] = checkOverrides(c.declarations, overrides, {
          projectDir: c.projectDir,
        });
        const strict = options.strictVariables === true;
        // The static part of vid check: a page whose scripts do not parse or whose files
        // are missing is not valid. Declarations and overrides are reported below.
        const files = (await staticCheck({ composition: c, overrides })).problems
          .filter((p) => !["dropped-declaration", "variable", "override"].includes(p.kind));
        const fileErrors = files.filter((p) => p.severity === "error");
        const verdict = validationVerdict(c.dropped, problems, strict, fileErrors.length);
        const values = mergeVariables(c.declarations, overrides);
        const strictError = strict && problems.length > 0
          ? new StrictVariablesError(problems)
          : undefined;
        const failed = verdict.verdict === "invalid";
        if (options.json) {
          console.log(JSON.stringify(
            {
              ok: !failed,
              valid: !failed,
              verdict: verdict.verdict,
              warnings: verdict.count,
              composition: {
                id: c.id,
                file: c.file,
                width: c.width,
                height: c.height,
                duration: c.duration,
                fps: c.fps ?? null,
              },
              // Every kept declaration, with its range, description and group.
              variables: c.declarations,
              strict,
              values,
              problems,
              dropped: c.dropped,
              // What vid check's static part found in the project's files.
              files,
              // The same error shape as every other failing --json command.
              ...(strictError && {
                error: {
                  name: strictError.name,
                  message: strictError.message,
                  field: strictError.field,
                  problems: strictError.problems,
                },
              }),
            },
            null,
            2,
          ));
        } else {
          const summary = `${c.id} (${c.width}x${c.height}, ${c.duration} s, ` +
            (c.fps ? `${formatFrameRate(c.fps)} fps, ` : "") +
            `${c.declarations.length} variables)`;
          console.log(`${verdict.text}: ${summary}`);
          const listed = [
            ...c.dropped.map((d) => ({
              field: `data-composition-variables[${d.index}]`,
              message: `declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} dropped: ${d.reason}`,
            })),
            ...problems.map((p) => ({ field: p.key, message: p.message })),
          ];
          for (const p of files) console.log(formatProblem(p));
          if (listed.length > 0) {
            console.log(strictError ? "problems (--strict-variables):" : "warnings:");
            for (const p of listed) console.log(`  - ${p.field}: ${p.message}`);
          }
          if (!failed) {
            if (listed.length > 0) console.log("values:");
            const byId = new Map(c.declarations.map((d) => [d.id, d]));
            for (const [key, value] of Object.entries(values)) {
              // A declaration's group and description, for the author reading the values.
              const d = byId.get(key);
              const notes = [d?.group, d?.description].filter((n) => n !== undefined);
              const note = notes.length > 0 ? `  (${notes.join(": ")})` : "";
              console.log(`  ${key} = ${JSON.stringify(value)}${note}`);
            }
          }
        }
        Deno.exitCode = failed ? EXIT.failed : EXIT.ok;
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
