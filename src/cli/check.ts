/**
 * `vid check [dir]`: looks at a composition the way a render would, without rendering
 * it, and says what the render would get wrong (`src/check/`). One line per problem on
 * stdout, `file:line:column: error: …` with the source line under it, then a verdict.
 * Exit 0 clean (warnings allowed unless `--strict`), 1 errors, 2 usage error.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { checkProject } from "../check/check.ts";
import { countProblems, formatProblem } from "../check/problems.ts";
import { OPTIONS } from "../request/options.ts";
import { cliOption, cliOptionWithDefault } from "./request_flags.ts";
import { EXIT, reportError, warn } from "./shared.ts";

/** Registers `vid check`. */
export function registerCheck(program: Command): void {
  program
    .command("check")
    .summary("Find what a render would get wrong, without rendering.")
    .description(
      "Find what a render would get wrong, without rendering: script syntax errors, files " +
        "missing from the project (letter case included), misspelt data-* attributes on any " +
        "element, variables read but not declared (scripts, data-var-text, data-var-src, " +
        "var(--id)), dropped declarations, image variables that do not resolve, undecodable " +
        "media, fonts that are not fonts or fail to load, and, loading the page once and " +
        "seeking it to sampled frames (every second, the first and last, each clip's start " +
        "and end), what the page throws and text that reads NaN, undefined, null or " +
        "[object Object] (data-text-ok allows it) or runs off the canvas. Every render runs " +
        "the static and media parts first (--no-browser here).\n" +
        "Exit status: 0 no errors (warnings allowed unless --strict), 1 errors, 2 usage error.",
    )
    .argument("[target]", "project directory or HTML file", ".")
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .addOption(cliOption(OPTIONS.variables))
    .addOption(cliOption(OPTIONS.variablesFile))
    .addOption(cliOption(OPTIONS.fps, { help: "frame rate the sampled frames are counted in" }))
    .addOption(cliOption(OPTIONS.frameTimeoutMs))
    .option("--strict", "fail (exit 1) on warnings too")
    .option(
      "--no-browser",
      "only the static and media parts (no browser, about a second): the check every render runs first",
    )
    .option("--snapshots <dir>", "write each sampled frame as a PNG named by frame")
    .option(
      "--batch <file>",
      "check every row of a JSONL or CSV batch file against the declarations, by line, " +
        "without rendering or loading the page",
    )
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (target, options) => {
      try {
        if (options.batch !== undefined) {
          Deno.exitCode = await checkBatch(target, options.composition, options.batch, options);
          return;
        }
        const report = await checkProject({
          target,
          composition: options.composition,
          variables: options.variables,
          variablesFile: options.variablesFile,
          fps: options.fps,
          snapshots: options.snapshots,
          browser: options.browser,
          frameTimeoutMs: options.frameTimeout,
          onWarning: options.json ? undefined : warn,
        });
        const strict = options.strict === true;
        const ok = report.errors === 0 && (!strict || report.warnings === 0);
        if (options.json) {
          console.log(JSON.stringify({ ok, strict, ...report }, null, 2));
        } else {
          for (const problem of report.problems) console.log(formatProblem(problem));
          const c = report.composition;
          const counts = `${report.errors} error${report.errors === 1 ? "" : "s"}, ` +
            `${report.warnings} warning${report.warnings === 1 ? "" : "s"}`;
          console.log(
            `${ok ? "ok" : "failed"}: ${c.id} (${c.width}x${c.height}, ${c.duration} s at ` +
              `${report.fps} fps): ${counts}${!ok && report.errors === 0 ? " (--strict)" : ""}`,
          );
        }
        Deno.exitCode = ok ? EXIT.ok : EXIT.failed;
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}

/** `vid check --batch`: each row against the declarations; returns the exit code. */
async function checkBatch(
  target: string,
  entry: string,
  batchFile: string,
  options: { strict?: true; json?: true },
): Promise<number> {
  const [{ readComposition }, { checkBatchRows }] = await Promise.all([
    import("../composition/composition.ts"),
    import("../check/batch.ts"),
  ]);
  const composition = await readComposition(target, entry);
  const { problems, rows } = await checkBatchRows(composition, batchFile);
  const { errors, warnings } = countProblems(problems);
  const strict = options.strict === true;
  const ok = errors === 0 && (!strict || warnings === 0);
  if (options.json) {
    console.log(JSON.stringify({ ok, strict, rows, problems, errors, warnings }, null, 2));
  } else {
    for (const problem of problems) console.log(formatProblem(problem));
    console.log(
      `${ok ? "ok" : "failed"}: ${rows} row${rows === 1 ? "" : "s"} of ${batchFile} against ` +
        `${composition.id}: ${errors} error${errors === 1 ? "" : "s"}, ${warnings} warning${
          warnings === 1 ? "" : "s"
        }${!ok && errors === 0 ? " (--strict)" : ""}`,
    );
  }
  return ok ? EXIT.ok : EXIT.failed;
}
