/**
 * `vid render-batch [target] --batch rows.jsonl|rows.csv`: one local render per row, in
 * parallel (a browser per row in flight), outputs under `--out-dir`, a manifest that a rerun
 * resumes from.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { relative } from "node:path";
import {
  type LocalBatchManifestRow,
  type LocalBatchProgress,
  renderBatchLocal,
  summarizeLocalBatch,
} from "../batch/local.ts";
import { OPTIONS } from "../request/options.ts";
import { checkBeforeSpending, noCheckOption } from "./preflight.ts";
import { cliOption, cliOptionWithDefault, cliSwitch } from "./request_flags.ts";
import { EXIT, reportError, warn, warnIfRoot } from "./shared.ts";

const HELP = "Render one video per row of a batch file on this machine: JSONL (one " +
  '{"outputKey": "ada.mp4", "variables": {...}} per line, the format of `vid lambda ' +
  "render-batch`) or CSV (a header row of variable ids plus outputKey; cells typed by the " +
  "declarations, an empty cell keeps the default). Each output is <out-dir>/<outputKey>; " +
  "its extension picks the format (.mp4, .webm, .mov, .gif, name/%05d.png).\n\n" +
  "Rows render in parallel (--concurrency), each in a browser launched once for the batch. " +
  "A row whose " +
  "render fails is `failed`; a line that is not a valid entry (or repeats an outputKey) is " +
  "`failed-to-start`; blank lines are `skipped`; none of them stops the batch.\n\n" +
  "The manifest (one row per line: line, outputKey, status, error, renderId, output, bytes) " +
  "is rewritten to --manifest as rows finish. Running the same batch again skips rows " +
  "already rendered with the same inputs (project files, variables, format, fps, quality) " +
  "whose output is intact: `already-rendered`. Ctrl-C cancels the renders in flight (no " +
  "partial files), writes the manifest, and exits 130; a rerun resumes.\n\n" +
  "Exit status 1 when any row failed or failed to start.";

function progressLine(p: LocalBatchProgress): string {
  const eta = p.etaSeconds === undefined ? "--" : `${Math.ceil(p.etaSeconds)}s`;
  return `batch: ${p.rowsDone}/${p.rowsTotal} rows (${p.rowsFailed} failed, ${p.active} ` +
    `rendering), ${p.framesDone}/${p.framesKnown} frames of started rows, ETA ${eta}`;
}

function rowLine(row: LocalBatchManifestRow): string {
  const where = row.output ? relative(Deno.cwd(), row.output) : "-";
  const time = row.elapsedMs === undefined ? "" : ` (${(row.elapsedMs / 1000).toFixed(1)} s)`;
  const warned = row.warnings?.length
    ? ` [${row.warnings.length} warning${row.warnings.length === 1 ? "" : "s"}: ${
      row.warnings.join("; ")
    }]`
    : "";
  return `${row.line} ${row.outputKey ?? "-"} ${row.status} ${where}${time}${warned}`;
}

/** Registers `vid render-batch`. */
export function registerRenderBatch(program: Command): void {
  program
    .command("render-batch")
    .summary("Render one video per row of a JSONL or CSV file on this machine.")
    .description(HELP)
    .argument("[target]", "project directory or HTML file", ".")
    .requiredOption("--batch <file>", "JSONL or CSV batch file")
    .option("--out-dir <dir>", "folder the outputKeys are relative to", "renders")
    .option(
      "--manifest <file>",
      "manifest file, rewritten as rows finish (default: <out-dir>/vid-batch-manifest.json)",
    )
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .addOption(cliOption(OPTIONS.format, {
      help: "format of every row",
      defaultText: "from each outputKey's extension",
    }))
    .addOption(cliOption(OPTIONS.fps))
    .addOption(cliOptionWithDefault(OPTIONS.quality))
    .addOption(cliOption(OPTIONS.concurrency))
    .addOption(cliOptionWithDefault(OPTIONS.capture))
    .addOption(cliSwitch(OPTIONS.strictVariables))
    .option("--dry-run", "check the rows only: valid rows become would-invoke; nothing renders")
    .addOption(noCheckOption())
    .option("--json", "print the manifest as a JSON array on stdout")
    .action(async (target, options) => {
      warnIfRoot();
      const controller = new AbortController();
      const stop = () => controller.abort();
      Deno.addSignalListener("SIGINT", stop);
      Deno.addSignalListener("SIGTERM", stop);
      const encoder = new TextEncoder();
      let lastPrint = 0;
      let lastShape = "";
      try {
        await checkBeforeSpending(target, options.composition, {
          enabled: options.check,
          warn,
        });
        const result = await renderBatchLocal({
          target,
          composition: options.composition,
          batchFile: options.batch,
          outDir: options.outDir,
          manifest: options.manifest,
          format: options.format,
          fps: options.fps,
          quality: options.quality,
          concurrency: options.concurrency,
          capture: options.capture,
          strict: options.strictVariables === true,
          dryRun: options.dryRun === true,
          signal: controller.signal,
          onWarning: warn,
          onRow: (row) => {
            if (!options.json && row.status !== "would-invoke") console.error(rowLine(row));
          },
          onProgress: (p) => {
            const now = performance.now();
            // A line when rows start or finish, else at most one every 2 s.
            const shape = `${p.active}/${p.rowsDone}`;
            if (shape === lastShape && now - lastPrint < 2000) return;
            lastPrint = now;
            lastShape = shape;
            Deno.stderr.writeSync(encoder.encode(progressLine(p) + "\n"));
          },
        });
        const s = summarizeLocalBatch(result.rows);
        if (options.json) console.log(JSON.stringify(result.rows, null, 2));
        else {
          const parts = options.dryRun ? [`${s["would-invoke"]} would render`] : [
            `${s.rendered} rendered`,
            `${s["already-rendered"]} already rendered`,
            `${s.failed} failed`,
          ];
          parts.push(`${s["failed-to-start"]} failed to start`, `${s.skipped} skipped`);
          if (s["not-started"] > 0) parts.push(`${s["not-started"]} not started (interrupted)`);
          if (s.warned > 0) parts.push(`${s.warned} with warnings (see the manifest's "warnings")`);
          console.log(parts.join(", "));
          for (const row of result.rows) {
            console.log(rowLine(row));
            if (row.error && row.status !== "skipped") console.error(row.error);
          }
          console.log(`manifest: ${relative(Deno.cwd(), result.manifest)}`);
        }
        if (result.interrupted) Deno.exitCode = EXIT.cancelled;
        else if (s.failed > 0 || s["failed-to-start"] > 0) Deno.exitCode = EXIT.failed;
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      } finally {
        Deno.removeSignalListener("SIGINT", stop);
        Deno.removeSignalListener("SIGTERM", stop);
      }
    });
}
