/**
 * `vid check --batch rows.jsonl`: every row of a batch file (JSONL or CSV, as
 * `vid render-batch` reads it) checked against the composition's declarations without
 * rendering, one problem per finding, placed by the batch file's line: a row that would
 * fail to start is an error; an undeclared key (with a did-you-mean), a key whose
 * declaration is dropped, a value of another type are the warnings `render-batch` records in
 * its manifest; an image value the project lacks is an error, as for one render.
 *
 * @module
 */

import { basename } from "node:path";
import type { Composition } from "../composition/composition.ts";
import { checkOverrides } from "../composition/variables.ts";
import { readBatchFile } from "../batch/entries.ts";
import { type CheckProblem, SEVERITY } from "./problems.ts";

/** What {@linkcode checkBatchRows} found: the problems, and how many rows it read. */
export interface BatchCheck {
  problems: CheckProblem[];
  /** Rows that are entries (blank lines left out). */
  rows: number;
}

/**
 * Checks each row of `batchFile` against `composition`'s declarations.
 *
 * @example
 * ```ts no_run
 * import { readComposition } from "../composition/composition.ts";
 *
 * const { problems } = await checkBatchRows(await readComposition("examples/hello"), "rows.jsonl");
 * ```
 */
export async function checkBatchRows(
  composition: Composition,
  batchFile: string,
): Promise<BatchCheck> {
  const file = basename(batchFile);
  const problems: CheckProblem[] = [];
  let rows = 0;
  const dropped = new Map(composition.dropped.flatMap((d) => d.id ? [[d.id, d]] : []));
  for await (const { line, parsed } of readBatchFile(batchFile, composition.declarations)) {
    if (parsed.kind === "blank") continue;
    rows++;
    if (parsed.kind === "invalid") {
      problems.push({
        severity: SEVERITY["batch-row"],
        part: "static",
        kind: "batch-row",
        message: `${parsed.error.replace(/^line \d+: /, "")}; the row would fail to start`,
        file,
        line,
        ...(parsed.outputKey !== null && { field: parsed.outputKey }),
      });
      continue;
    }
    const found = checkOverrides(composition.declarations, parsed.variables, {
      projectDir: composition.projectDir,
    });
    for (const p of found) {
      const kind = p.expected === "a file in the project" ? "variable" : "override";
      const gone = dropped.get(p.key);
      problems.push({
        severity: SEVERITY[kind],
        part: "static",
        kind,
        message: `row "${parsed.outputKey}": ` +
          (gone
            ? `"${p.key}" is set, but its declaration is dropped (declaration ${gone.index}: ` +
              `${gone.reason}); the page never gets it`
            : p.message),
        file,
        line,
        field: p.key,
      });
    }
  }
  return { problems, rows };
}
