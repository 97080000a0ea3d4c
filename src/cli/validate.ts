/**
 * `vid validate [dir]`: checks a composition and the given variables without rendering.
 * The verdict goes to stdout: `valid`, `valid with N warnings` (each problem listed with
 * its field) or, with `--strict-variables`, `invalid`. Exit 0 valid (warnings allowed),
 * 1 invalid, 2 usage error.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { type Composition, readComposition } from "../composition/composition.ts";
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
 * The verdict for a composition's dropped declarations and override problems: `valid`
 * with none, `valid with N warnings` otherwise, `invalid` when `strict` turns every
 * warning into a failure.
 */
export function validationVerdict(
  dropped: readonly DroppedDeclaration[],
  problems: readonly VariableProblem[],
  strict: boolean,
): { verdict: Verdict; count: number; text: string } {
  const count = dropped.length + problems.length;
  if (count === 0) return { verdict: "valid", count, text: "valid" };
  if (strict) {
    return { verdict: "invalid", count, text: `invalid (${plural(count, "problem")})` };
  }
  return { verdict: "valid-with-warnings", count, text: `valid with ${plural(count, "warning")}` };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** Dropped declarations in the shape of override problems, for the strict error. */
function droppedAsProblems(c: Composition): VariableProblem[] {
  return c.dropped.map((d) => ({
    key: d.id ?? `data-composition-variables[${d.index}]`,
    expected: "a valid declaration",
    given: d.id !== undefined ? JSON.stringify(d.id) : `declaration ${d.index}`,
    message: `declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} dropped: ${d.reason}`,
  }));
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
        "declaration) or, with --strict-variables, `invalid`.\n" +
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
        const verdict = validationVerdict(c.dropped, problems, strict);
        const values = mergeVariables(c.declarations, overrides);
        const strictError = verdict.verdict === "invalid"
          ? new StrictVariablesError([...problems, ...droppedAsProblems(c)])
          : undefined;
        if (options.json) {
          console.log(JSON.stringify(
            {
              ok: strictError === undefined,
              valid: strictError === undefined,
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
          if (listed.length > 0) {
            console.log(strictError ? "problems (--strict-variables):" : "warnings:");
            for (const p of listed) console.log(`  - ${p.field}: ${p.message}`);
          }
          if (!strictError) {
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
        Deno.exitCode = strictError ? EXIT.failed : EXIT.ok;
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
