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
import type { BatchManifestRow } from "../batch/manifest.ts";
import { renderBatch, summarizeBatch } from "../lambda/batch.ts";
import { BATCH_RERUN_VALUES, type BatchRerun } from "../lambda/batch_rerun.ts";
import {
  type BatchProgress,
  getBatchProgress,
  readBatchManifest,
} from "../lambda/batch_progress.ts";
import { deploySite, type S3Options, type SiteHandle, siteHandleFromId } from "../lambda/sdk.ts";
import { loadSite } from "../lambda/sites.ts";
import {
  type Connection,
  connection,
  type ConnectionFlags,
  ENV_HELP,
  fail,
  LambdaUsageError,
  type RenderConfigFlags,
  renderConfigFrom,
  RESERVED_ENV,
  reservedConcurrencyFromEnv,
  unreachableHint,
} from "./lambda_connection.ts";
import { OPTIONS } from "../request/options.ts";
import { checkBeforeSpending, noCheckOption } from "./preflight.ts";
import { cliOption, cliOptionWithDefault } from "./request_flags.ts";
import { EXIT, warn } from "./shared.ts";
import { abortAwsCalls } from "../aws/deadline.ts";
import { retriesText } from "./lambda_progress.ts";

/** The command's help, built when the command is registered. */
/** How long a Ctrl-C waits for the AWS calls in flight before ending them. */
const IN_FLIGHT_GRACE_MS = 3000;

/** The site of an upload a Ctrl-C cut short: named in no execution (none starts). */
const INTERRUPTED_SITE = "site-interrupted";

const help = (): string =>
  'Start one distributed render per line of a JSONL file ({"outputKey": ..., ' +
  '"variables": {...}}). The site is deployed once (unless --site-id). Prints a summary ' +
  "(started, already started, failed to start, skipped), then one row per line: line, " +
  "outputKey, executionArn, status. Exit status 1 when any row failed to start, 130 when " +
  "interrupted.\n\n" +
  "Rows: one per line of the file. A blank line is `skipped` (never started); a line that " +
  "is not a valid entry, or repeats an earlier outputKey, is `failed-to-start` with its line " +
  "number and reason; neither stops the batch.\n\n" +
  "Resuming and retrying: each row's execution name is derived from its content (site, " +
  "outputKey, options, variables), so running the same batch again finishes the job: rows " +
  "with no execution start; rows whose execution failed, timed out or was aborted start " +
  "again as a new attempt (the name with -a2, -a3, ...; `started`, attempt n); rows running " +
  "or succeeded are `already-started` with their ARN. Once the execution history is gone " +
  "(a restarted local stack, expired history), a row whose output is in the bucket, " +
  "rendered from the same inputs, is `already-rendered`. --rerun all also renders the " +
  "succeeded rows again (not the running ones); --rerun none never starts a second " +
  "attempt.\n\n" +
  "The batch file and the manifest are never uploaded with the site, even inside the " +
  "project, so writing them there does not change the site id.\n\n" +
  "Ctrl-C (even while the site uploads) stops starting new rows, waits for the calls in " +
  "flight, and still prints (and writes, with --manifest) the whole manifest; rows not " +
  "reached are `not-started`.\n\n" +
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
  const retried = s.retried > 0 ? ` (${s.retried} as a new attempt after a failure)` : "";
  const parts = dryRun
    ? [`${s.wouldInvoke} would invoke`]
    : [`${s.started} started${retried}`, `${s.alreadyStarted} already started`];
  if (s.alreadyRendered > 0) parts.push(`${s.alreadyRendered} already rendered`);
  parts.push(`${s.failedToStart} failed to start`, `${s.skipped} skipped`);
  if (s.notStarted > 0) parts.push(`${s.notStarted} not started`);
  if (s.warned > 0) parts.push(`${s.warned} with warnings (see the manifest's "warnings")`);
  return parts.join(", ");
}

/** Registers `vid lambda render-batch` under `vid lambda`. */
export function registerLambdaBatch(lambda: Command): void {
  lambda
    .command("render-batch")
    .summary("Start one distributed render per line of a JSONL file.")
    .description(help())
    .argument("[projectDir]", "project directory (optional with --site-id)")
    .requiredOption("--batch <file>", "JSONL file, one batch entry per line")
    .option("--site-id <id>", "render a site uploaded earlier; skip packaging and upload")
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .option("--state-machine-arn <arn>", "the workflow (env VID_LAMBDA_STATE_MACHINE_ARN)")
    .addOption(cliOption(OPTIONS.width))
    .addOption(cliOption(OPTIONS.height))
    .addOption(cliOption(OPTIONS.fps, { defaultText: "30" }))
    .addOption(cliOption(OPTIONS.videoFormat))
    .addOption(cliOption(OPTIONS.quality))
    .addOption(cliOption(OPTIONS.frameTimeoutMs))
    .addOption(cliOption(OPTIONS.maxParallelChunks, { help: "cap on chunks per render" }))
    .addOption(cliOption(OPTIONS.targetChunkFrames))
    .addOption(cliOption(OPTIONS.chunkSize))
    .addOption(cliOptionWithDefault(OPTIONS.maxConcurrent))
    .addOption(cliOption(OPTIONS.reservedConcurrency, {
      help: "reserved concurrency of the render function, for the large-batch guidance",
    }))
    .addOption(
      new Option(
        "--rerun <rows>",
        "rows with an execution that start again as a new attempt: failed (failed, timed " +
          "out or aborted), all (every row not running), none",
      ).choices(BATCH_RERUN_VALUES).default("failed" as BatchRerun),
    )
    .option("--strict-variables", "a row whose variables do not match fails to start")
    .option("--variables-file <path>", "not accepted: variables are inline per row")
    .option("--dry-run", "lint the file: every valid row would-invoke; nothing is uploaded")
    .addOption(noCheckOption())
    .option(
      "--manifest <file>",
      "also write the manifest (JSON array) to this file; read it with `vid lambda progress " +
        "--manifest`",
    )
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print the manifest as a JSON array on stdout")
    .action((projectDir, options) => runLambdaBatch(projectDir, options));
}

/** The flags of `vid lambda render-batch`, as commander parses them. */
interface LambdaBatchFlags extends ConnectionFlags, RenderConfigFlags {
  batch: string;
  siteId?: string;
  composition: string;
  maxConcurrent: number;
  reservedConcurrency?: number;
  rerun: BatchRerun;
  strictVariables?: true;
  variablesFile?: string;
  dryRun?: true;
  /** False with --no-check. */
  check: boolean;
  manifest?: string;
  json?: true;
}

/**
 * The site the rows render: the uploaded one (`--site-id`, checked in the bucket), a
 * stand-in for a dry run, or the project deployed once; with the declarations to check the
 * rows' variables against (`undefined`: not known, so not checked).
 */
async function batchSite(
  projectDir: string | undefined,
  options: LambdaBatchFlags,
  where: {
    bucketName: string;
    /** Whether `bucketName` names a real bucket (a dry run without one has a stand-in). */
    bucketKnown: boolean;
    siteOptions: { composition: string; s3: S3Options };
    exclude: string[];
  },
): Promise<{ siteHandle: SiteHandle; declarations?: readonly VariableDeclaration[] }> {
  const { bucketName, siteOptions, exclude } = where;
  if (options.siteId && (!options.dryRun || projectDir === undefined)) {
    if (options.dryRun && !where.bucketKnown) {
      // Its declarations are in the bucket: checking against none would call every
      // variable undeclared (and fail every row with --strict-variables).
      warn(
        `variables are not checked: the declarations of ${options.siteId} are in the bucket; ` +
          "pass --bucket (or set VID_LAMBDA_BUCKET), or the project directory",
      );
      return { siteHandle: siteHandleFromId(options.siteId, bucketName, siteOptions) };
    }
    // The uploaded site renders: check it and read its declarations from the bucket (a
    // dry run reads it too, and still starts and uploads nothing).
    const site = await loadSite(options.siteId, bucketName, siteOptions);
    return { siteHandle: site, declarations: site.declarations };
  }
  const declarations = projectDir === undefined
    ? undefined
    : (await readComposition(projectDir, options.composition)).declarations;
  // The dry run uploads nothing: a handle naming the site is enough to lint the rows.
  const siteHandle = options.siteId
    ? siteHandleFromId(options.siteId, bucketName, siteOptions)
    : options.dryRun
    ? siteHandleFromId("site-dry-run", bucketName, siteOptions)
    : await deploySite({ projectDir: projectDir!, bucketName, exclude, ...siteOptions });
  return { siteHandle, declarations };
}

/** Prints the summary and one line per row; one reason for the rows left unstarted. */
function printBatchRows(rows: BatchManifestRow[], dryRun: boolean): void {
  console.log(summaryLine(rows, dryRun));
  const notStarted: string[] = [];
  for (const row of rows) {
    const attempt = (row.attempt ?? 1) > 1 ? ` (attempt ${row.attempt})` : "";
    console.log(
      `${row.line} ${row.outputKey ?? "-"} ${row.executionArn ?? "-"} ${row.status}` +
        attempt,
    );
    if (row.status === "not-started" && row.error) notStarted.push(row.error);
    else if (row.error && row.status !== "skipped") console.error(row.error);
  }
  // One reason for every row left unstarted (interrupted, or the stack went away).
  if (notStarted.length > 0) {
    const reason = notStarted[0].replace(/^line \d+: /, "");
    console.error(
      `${notStarted.length} row(s) not started: ${unreachableHint(reason)}`,
    );
  }
}

/** Runs `vid lambda render-batch`: resolves the site, starts one render per row, reports. */
async function runLambdaBatch(
  projectDir: string | undefined,
  options: LambdaBatchFlags,
): Promise<void> {
  const controller = new AbortController();
  let interrupts = 0;
  let grace: ReturnType<typeof setTimeout> | undefined;
  const onSignal = () => {
    interrupts++;
    if (interrupts > 1) Deno.exit(EXIT.cancelled);
    console.error(
      "interrupted: starting no more rows; waiting at most " +
        `${IN_FLIGHT_GRACE_MS / 1000} s for the calls in flight, then ending them ` +
        "(Ctrl-C again to quit at once, without the manifest)",
    );
    controller.abort();
    // A call to an endpoint that never answers would hold the manifest back until its
    // deadline: past the grace, every AWS call in flight ends with the interruption.
    grace = setTimeout(() => abortAwsCalls(controller.signal.reason), IN_FLIGHT_GRACE_MS);
  };
  // From the start: a Ctrl-C while the site uploads (before the first row) still ends with
  // every row `not-started` in the manifest, as one during the starts does.
  Deno.addSignalListener("SIGINT", onSignal);
  Deno.addSignalListener("SIGTERM", onSignal);
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
    const orDryRun = (get: () => string, standIn: string, onStandIn?: () => void): string => {
      try {
        return get();
      } catch (error) {
        if (!options.dryRun || !(error instanceof LambdaUsageError)) throw error;
        onStandIn?.();
        return standIn;
      }
    };
    let bucketKnown = true;
    const bucketName = orDryRun(() => conn.bucket(), "dry-run-bucket", () => bucketKnown = false);
    const stateMachineArn = orDryRun(
      () => conn.stateMachineArn(),
      `arn:aws:states:${conn.region}:000000000000:stateMachine:dry-run`,
    );
    const reservedConcurrency = options.reservedConcurrency ?? reservedConcurrencyFromEnv();
    if (projectDir === undefined && !options.siteId) {
      throw new LambdaUsageError(
        "pass the project directory, or --site-id <id> to render a site uploaded earlier",
      );
    }
    if (projectDir !== undefined && !options.siteId) {
      await checkBeforeSpending(projectDir, options.composition, {
        enabled: options.check,
        warn,
      });
    }
    const baseConfig = renderConfigFrom(options);
    const siteOptions = { composition: options.composition, s3: conn.s3 };
    // The batch file and the manifest may live in the project: never upload them, or
    // the site id, and so every row's execution name, would change with them.
    const exclude = [options.batch, ...(options.manifest ? [options.manifest] : [])];
    const { siteHandle, declarations } = await batchSite(projectDir, options, {
      bucketName,
      bucketKnown,
      siteOptions,
      exclude,
    }).catch(async (error) => {
      if (!controller.signal.aborted) throw error;
      // Interrupted during the upload: no row starts, so a stand-in handle is enough for
      // the manifest to list every row as not started (bad rows still fail on their own).
      return {
        siteHandle: siteHandleFromId(INTERRUPTED_SITE, bucketName, siteOptions),
        declarations: projectDir === undefined
          ? undefined
          : (await readComposition(projectDir, options.composition)).declarations,
      };
    });
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
      rerun: options.rerun,
      sfn: conn.sfn,
      s3: conn.s3,
      reservedConcurrency,
      signal: controller.signal,
      onRetry: () => retries++,
      onWarning: warn,
    });
    const json = JSON.stringify(rows, null, 2);
    if (options.manifest) await writeAtomically(options.manifest, json + "\n");
    if (options.json) console.log(json);
    else printBatchRows(rows, options.dryRun === true);
    if (retries > 0) {
      console.error(`${retries} throttled start call(s) were retried with backoff`);
    }
    const summary = summarizeBatch(rows);
    if (controller.signal.aborted) Deno.exitCode = EXIT.cancelled;
    else if (summary.failedToStart > 0 || summary.notStarted > 0) {
      Deno.exitCode = EXIT.failed;
    }
  } catch (error) {
    fail(error, options.json);
  } finally {
    clearTimeout(grace);
    Deno.removeSignalListener("SIGINT", onSignal);
    Deno.removeSignalListener("SIGTERM", onSignal);
  }
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
    const attempt = (r.attempt ?? 1) > 1 ? ` (attempt ${r.attempt})` : "";
    out.push(
      `${r.line} ${r.outputKey ?? "-"} ${r.status}${attempt}${chunks}${where}` +
        retriesText(r.retries),
    );
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
  let progress: BatchProgress;
  try {
    progress = await getBatchProgress({
      rows,
      bucketName: options.bucket ?? (Deno.env.get("VID_LAMBDA_BUCKET") || undefined),
      sfn: conn.sfn,
      s3: conn.s3,
    });
  } catch (error) {
    fail(error, options.json);
    Deno.exitCode = BATCH_PROGRESS_EXIT.unreachable;
    return;
  }
  const outcome = batchOutcome(progress);
  const exitCode = BATCH_PROGRESS_EXIT[outcome];
  if (options.json) {
    console.log(JSON.stringify({ ok: exitCode === 0, outcome, exitCode, ...progress }, null, 2));
  } else for (const line of batchProgressText(progress)) console.log(line);
  Deno.exitCode = exitCode;
}

/**
 * Exit status of `vid lambda progress --manifest`, by the batch's outcome: a script polls
 * while it is 3, then 0 means every row succeeded and 1 that a rerun is needed.
 */
export const BATCH_PROGRESS_EXIT = {
  /** Every row succeeded (blank lines aside). */
  succeeded: 0,
  /** Nothing runs, and a row failed, timed out, was aborted, or never started. */
  failed: 1,
  /** A row's execution is still running. */
  running: 3,
  /** The stack could not be reached, or a row's execution could not be read. */
  unreachable: 4,
} as const;

/** Which of {@linkcode BATCH_PROGRESS_EXIT} a batch's progress is. */
function batchOutcome(p: BatchProgress): keyof typeof BATCH_PROGRESS_EXIT {
  if (p.unknown > 0) return "unreachable";
  if (p.running > 0) return "running";
  const open = p.rows.filter((r) => r.status !== "succeeded" && r.status !== "skipped");
  return open.length > 0 ? "failed" : "succeeded";
}
