/**
 * `vid validate [dir]`: checks a composition and the given variables without rendering.
 * Exit 0 valid (warnings allowed), 1 invalid, 2 usage error.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { readComposition } from "../composition/composition.ts";
import { StrictVariablesError, type VariableProblem } from "../composition/errors.ts";
import { checkOverrides, loadOverrides, mergeVariables } from "../composition/variables.ts";
import { EXIT, reportError, VARIABLES_HELP, warn } from "./shared.ts";

/** Registers `vid validate`. */
export function registerValidate(program: Command): void {
  program
    .command("validate")
    .summary("Check a composition and variable overrides against its declarations.")
    .description(
      "Check a composition and variable overrides against its declarations.\n" +
        "Exit status: 0 valid, 1 invalid, 2 usage error.",
    )
    .argument("[target]", "project directory or HTML file", ".")
    .option("--variables <json>", VARIABLES_HELP.variables)
    .option("--variables-file <path>", VARIABLES_HELP.variablesFile)
    .option("--strict-variables", VARIABLES_HELP.strict)
    .option(
      "-c, --composition <file>",
      "entry HTML file inside the project directory",
      "index.html",
    )
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (target, options) => {
      try {
        const c = await readComposition(target, options.composition);
        const overrides = await loadOverrides(options);
        const problems: VariableProblem[] = checkOverrides(c.declarations, overrides);
        const strictFailure = options.strictVariables === true && problems.length > 0;
        const values = mergeVariables(c.declarations, overrides);
        const strictError = strictFailure ? new StrictVariablesError(problems) : undefined;
        if (options.json) {
          console.log(JSON.stringify(
            {
              ok: !strictFailure,
              valid: !strictFailure,
              composition: { id: c.id, file: c.file, width: c.width, height: c.height },
              strict: options.strictVariables === true,
              values,
              problems,
              dropped: c.dropped,
              // The same error shape as every other failing --json command.
              ...(strictError && {
                error: {
                  name: strictError.name,
                  message: strictError.message,
                  field: strictError.field,
                  problems,
                },
              }),
            },
            null,
            2,
          ));
        } else {
          for (const d of c.dropped) {
            warn(`declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} dropped: ${d.reason}`);
          }
          if (strictFailure) {
            console.error(`error: ${strictError!.message}`);
          } else {
            for (const p of problems) warn(p.message);
            console.log(
              `valid: ${c.id} (${c.width}x${c.height}, ${c.duration} s, ` +
                `${c.declarations.length} variables)`,
            );
            for (const [key, value] of Object.entries(values)) {
              console.log(`  ${key} = ${JSON.stringify(value)}`);
            }
          }
        }
        Deno.exitCode = strictFailure ? EXIT.failed : EXIT.ok;
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
