/**
 * `vid lambda render-batch`: one distributed render per line of a JSONL file, and
 * `vid lambda progress --manifest`: where a whole batch is.
 *
 * @module
 */

import { type Command, Option } from "@commander-js/extra-typings";
import { dirname, join } from "node:path";
import { readComposition } from "../composition/composition.ts";
import type { VariableDeclaration } from "../composition/declarations.ts";
import {
  type BatchManifestRow,
  type BatchProgress,
  getBatchProgress,
  readBatchManifest,
  renderBatch,
  summarizeBatch,
} from "../lambda/batch.ts";
import { LAMBDA_FORMATS, LAMBDA_QUALITIES } from "../lambda/config.ts";
import { deploySite, type SiteHandle, siteHandleFromId } from "../lambda/sdk.ts";
import {
  type Connection,
  connection,
  ENV_HELP,
  fail,
  LambdaUsageError,
  renderConfigFrom,
} from "./lambda.ts";
import { EXIT, frameRateArg, positiveInteger, warn } from "./shared.ts";

const RESERVED_ENV = "VID_LAMBDA_RESERVED_CONCURRENCY";

/** The command's help; a function because `ENV_HELP` comes from the module importing this one. */
const help = (): string =>
  'Start one distributed render per line of a JSONL file ({"outputKey": ..., ' +
  '"variables": {...}}). The site is deployed once (unless --site-id). Prints a summary ' +
  "(started, already started, failed to start, skipped), then one row per line: line, " +
  "outputKey, executionArn, status. Exit status 1 when any row failed to start, 130 when " +
  "interrupted.\n\n" +
  "Rows: one per line of the file. A blank line is `skipped` (never started); a line that " +
  "is not a valid entry, or repeats an earlier outputKey, is `failed-to-start` with its line " +
  "number and reason; neither stops the batch.\n\n" +
  "Resuming: each row's execution name is derived from its content (site, outputKey, " +
  "options, variables), so running the same batch again starts only the rows that have no " +
  "execution yet; the others are `already-started` with their ARN.\n\n" +
  "Ctrl-C stops starting new rows, waits for the start calls in flight, and still prints " +
  "(and writes, with --manifest) the whole manifest; rows not reached are `not-started`.\n\n" +
  "Throttled start calls are retried with exponential backoff (8 attempts per row). " +
  "Large batches (more than 1000 entries): keep --max-concurrent near " +
  "floor(reservedConcurrency / maxParallelChunks). With --reserved-concurrency (or env " +
  `${RESERVED_ENV}; the value given to \`vid lambda deploy --concurrency\`) a warning says ` +
  "when --max-concurrent is above that; not enforced." + ENV_HELP;

/** Writes `text` to `path` through a temporary file in the same folder and a rename. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${crypto.randomUUID()}.tmp`);
  try {
    await Deno.writeTextFile(temp, text);
    await Deno.rename(temp, path);
  } catch (error) {
    await Deno.remove(temp).catch(() => {});
    throw error;
  }
}

function summaryLine(rows: readonly BatchManifestRow[], dryRun: boolean): string {
  const s = summarizeBatch(rows);
  const parts = dryRun
    ? [`${s.wouldInvoke} would invoke`]
    : [`${s.started} started`, `${s.alreadyStarted} already started`];
  parts.push(`${s.failedToStart} failed to start`, `${s.skipped} skipped`);
  if (s.notStarted > 0) parts.push(`${s.notStarted} not started (interrupted)`);
  return parts.join(", ");
}

function reservedFromEnv(): number | undefined {
  const raw = Deno.env.get(RESERVED_ENV);
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new LambdaUsageError(`${RESERVED_ENV} must be a positive integer, got ${raw}`);
  }
  return value;
}

/** Registers `vid lambda render-batch` under `vid lambda`. */
export function registerLambdaBatch(lambda: Command): void {
  lambda
    .command("render-batch")
    .summary("Start one distributed render per line of a JSONL file.")
    .description(help())
    .argument("<projectDir>", "project directory")
    .requiredOption("--batch <file>", "JSONL file, one batch entry per line")
    .option("--site-id <id>", "render a site uploaded earlier; skip packaging and upload")
    .option("-c, --composition <file>", "entry HTML file", "index.html")
    .option("--state-machine-arn <arn>", "the workflow (env VID_LAMBDA_STATE_MACHINE_ARN)")
    .option(
      "--width <px>",
      "output width in pixels (default: data-width)",
      positiveInteger("--width"),
    )
    .option(
      "--height <px>",
      "output height in pixels (default: data-height)",
      positiveInteger("--height"),
    )
    .option(
      "--fps <rate>",
      "frames per second, 1-240: 30, 29.97 or 30000/1001 (default: 30)",
      frameRateArg("--fps"),
    )
    .addOption(
      new Option("--format <format>", "output format (default: mp4)").choices(LAMBDA_FORMATS),
    )
    .addOption(
      new Option("--quality <preset>", "encoder preset (default: standard)")
        .choices(LAMBDA_QUALITIES),
    )
    .option(
      "--max-parallel-chunks <n>",
      "cap on chunks per render (default: 16)",
      positiveInteger("--max-parallel-chunks"),
    )
    .option(
      "--target-chunk-frames <n>",
      "ceiling on frames per chunk; ignored when --chunk-size is set",
      positiveInteger("--target-chunk-frames"),
    )
    .option(
      "--chunk-size <n>",
      "frames per chunk (default: 240)",
      positiveInteger("--chunk-size"),
    )
    .option(
      "--max-concurrent <n>",
      "cap on simultaneous workflow start calls (not on function concurrency)",
      positiveInteger("--max-concurrent"),
      50,
    )
    .option(
      "--reserved-concurrency <n>",
      `reserved concurrency of the render function (env ${RESERVED_ENV}), for the ` +
        "large-batch guidance",
      positiveInteger("--reserved-concurrency"),
    )
    .option("--strict-variables", "a row whose variables do not match fails to start")
    .option("--variables-file <path>", "not accepted: variables are inline per row")
    .option("--dry-run", "lint the file: every valid row would-invoke; nothing is uploaded")
    .option(
      "--manifest <file>",
      "also write the manifest (JSON array) to this file; read it with `vid lambda progress " +
        "--manifest`",
    )
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print the manifest as a JSON array on stdout")
    .action(async (projectDir, options) => {
      const controller = new AbortController();
      let interrupts = 0;
      const onSignal = () => {
        interrupts++;
        if (interrupts > 1) Deno.exit(EXIT.cancelled);
        console.error(
          "interrupted: starting no more rows; waiting for the start calls in flight " +
            "(Ctrl-C again to quit at once, without the manifest)",
        );
        controller.abort();
      };
      try {
        if (options.variablesFile !== undefined) {
          throw new LambdaUsageError(
            "--variables-file is not accepted by render-batch: variables are inline per row " +
              '(the "variables" object of each JSONL line)',
          );
        }
        const conn = connection(options);
        // A dry run calls nothing: without a stack configured, stand-in names are enough to
        // lint the rows (they only count toward each execution input's size).
        const orDryRun = (get: () => string, standIn: string): string => {
          try {
            return get();
          } catch (error) {
            if (options.dryRun && error instanceof LambdaUsageError) return standIn;
            throw error;
          }
        };
        const bucketName = orDryRun(() => conn.bucket(), "dry-run-bucket");
        const stateMachineArn = orDryRun(
          () => conn.stateMachineArn(),
          `arn:aws:states:${conn.region}:000000000000:stateMachine:dry-run`,
        );
        const reservedConcurrency = options.reservedConcurrency ?? reservedFromEnv();
        let declarations: readonly VariableDeclaration[] = [];
        try {
          declarations = (await readComposition(projectDir, options.composition)).declarations;
        } catch (error) {
          if (!options.siteId) throw error;
          warn(`cannot read ${projectDir} to check variables: ${(error as Error).message}`);
        }
        const baseConfig = renderConfigFrom(options);
        const siteOptions = { composition: options.composition, s3: conn.s3 };
        // The dry run uploads nothing: a handle naming the site is enough to lint the rows.
        const siteHandle: SiteHandle = options.siteId
          ? siteHandleFromId(options.siteId, bucketName, siteOptions)
          : options.dryRun
          ? siteHandleFromId("site-dry-run", bucketName, siteOptions)
          : await deploySite({ projectDir, bucketName, ...siteOptions });
        Deno.addSignalListener("SIGINT", onSignal);
        Deno.addSignalListener("SIGTERM", onSignal);
        let retries = 0;
        const rows: BatchManifestRow[] = await renderBatch({
          batchFile: options.batch,
          siteHandle,
          bucketName,
          stateMachineArn,
          declarations,
          strict: options.strictVariables === true,
          baseConfig,
          maxConcurrent: options.maxConcurrent,
          dryRun: options.dryRun === true,
          sfn: conn.sfn,
          reservedConcurrency,
          signal: controller.signal,
          onRetry: () => retries++,
          onWarning: warn,
        });
        const json = JSON.stringify(rows, null, 2);
        if (options.manifest) await writeAtomically(options.manifest, json + "\n");
        if (options.json) {
          console.log(json);
        } else {
          console.log(summaryLine(rows, options.dryRun === true));
          for (const row of rows) {
            console.log(
              `${row.line} ${row.outputKey ?? "-"} ${row.executionArn ?? "-"} ${row.status}`,
            );
            if (row.error && row.status !== "skipped") console.error(row.error);
          }
        }
        if (retries > 0) {
          console.error(`${retries} throttled start call(s) were retried with backoff`);
        }
        const summary = summarizeBatch(rows);
        if (controller.signal.aborted) Deno.exitCode = EXIT.cancelled;
        else if (summary.failedToStart > 0) Deno.exitCode = EXIT.failed;
      } catch (error) {
        fail(error, options.json);
      } finally {
        Deno.removeSignalListener("SIGINT", onSignal);
        Deno.removeSignalListener("SIGTERM", onSignal);
      }
    });
}

function batchProgressText(p: BatchProgress): string[] {
  const out = [
    `batch: ${p.total} rows, ${p.executions} executions: ${p.succeeded} succeeded, ` +
    `${p.running} running, ${p.failed} failed` + (p.unknown ? `, ${p.unknown} unknown` : "") +
    `; ${p.notStarted} rows not started; chunks ${p.chunksDone}/${p.chunksTotal}, ` +
    `~$${p.usd.toFixed(4)}${p.done ? "; done" : ""}`,
  ];
  for (const r of p.rows) {
    const chunks = r.executionArn ? ` chunks ${r.chunksDone}/${r.chunksTotal}` : "";
    const where = r.outputLocation ? ` ${r.outputLocation}` : "";
    out.push(`${r.line} ${r.outputKey ?? "-"} ${r.status}${chunks}${where}`);
    for (const e of r.errors) out.push(`  ${e}`);
  }
  return out;
}

/**
 * `vid lambda progress --manifest <file>`: where every row of a batch is, and the totals.
 * Called by the `progress` command of `src/cli/lambda.ts`.
 */
export async function printBatchProgress(
  manifest: string,
  conn: Connection,
  options: { bucket?: string; json?: boolean },
): Promise<void> {
  const rows = await readBatchManifest(manifest);
  const progress = await getBatchProgress({
    rows,
    bucketName: options.bucket ?? (Deno.env.get("VID_LAMBDA_BUCKET") || undefined),
    sfn: conn.sfn,
    s3: conn.s3,
  });
  if (options.json) console.log(JSON.stringify({ ok: true, ...progress }, null, 2));
  else for (const line of batchProgressText(progress)) console.log(line);
}
