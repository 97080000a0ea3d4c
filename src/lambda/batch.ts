/**
 * Batch distributed rendering: one workflow execution per line of a JSONL file. Which
 * attempt of a row a rerun starts is batch_rerun.ts; where a started batch is, from its
 * manifest, is batch_progress.ts; the attempts' names, which all three use, are
 * batch_attempts.ts.
 *
 * The file is streamed (`node:fs` `createReadStream` + `readline`), never loaded whole,
 * and each line is parsed and validated on its own; a bad line becomes a
 * `failed-to-start` manifest row and never stops the batch.
 *
 * Decisions:
 * - One manifest row per physical line (1-based). A blank (whitespace-only) line is not a
 *   batch entry: its row is `skipped` with the reason `blank line`, and nothing starts.
 *   The newline that ends the file does not begin another line.
 * - A row that could not be started has `status: "failed-to-start"`, `executionArn: null`
 *   and an `error` message naming the line and the reason.
 * - A second row with an `outputKey` already used by an earlier accepted row fails to
 *   start, naming the earlier line.
 * - Resumable: a row's execution is named by its content, and which attempt of a row starts
 *   on a rerun (or none) is batch_rerun.ts's decision.
 * - A failure that no row can get past (stack unreachable, no or rejected credentials, no
 *   such workflow) stops the batch: the rows not yet started become `not-started` with the
 *   reason, and the batch's other rows are left as they were. Before the first row, the
 *   workflow is looked up once (`DescribeStateMachine`), so a wrong stack fails at once.
 * - Throttling (`ThrottlingException` and kin, HTTP 429), server errors (5xx) and dropped
 *   connections (`ECONNRESET`, `EPIPE`, `ETIMEDOUT`) from the look-up or the start call are
 *   retried with exponential backoff and full jitter, up to `startAttempts` attempts per
 *   row; past that the row fails to start with a reason naming throttling (or the last
 *   error). A start call that failed without an answer may have started the execution:
 *   the retry's look-up then finds it, and the row is `started`, not `already-started`.
 *   The batch's own Step Functions client is built with `maxAttempts: 1`, so this is the
 *   only retry policy and every attempt is counted.
 * - `signal` (Ctrl-C in the CLI) stops starting rows: calls in flight finish, the rest of
 *   the file is still read and validated, and the rows that would have started become
 *   `not-started` (a rerun starts them).
 *
 * @module
 */

import { stat } from "node:fs/promises";
import { S3Client } from "@aws-sdk/client-s3";
import { DescribeStateMachineCommand, SFNClient } from "@aws-sdk/client-sfn";
import { batchFileLines as lines, parseBatchLine } from "../batch/entries.ts";
import type { VariableDeclaration } from "../composition/declarations.ts";
import { type ExecutionInput, type RenderConfig, validateConfig } from "./config.ts";
import {
  BatchInputError,
  type BatchManifestRow,
  batchRenderId,
  type BatchRowStatus,
} from "../batch/manifest.ts";
import { attemptRenderId, batchExecutionArn } from "./batch_attempts.ts";
import { BATCH_RERUN_VALUES, type BatchRerun, latestAttempt, renderedFrom } from "./batch_rerun.ts";
import { s3ClientFor, sfnClientFor } from "../aws/clients.ts";
import {
  renderToLambda,
  type S3Options,
  type SfnOptions,
  type SiteHandle,
  withSiteFrameRate,
} from "./sdk.ts";
import { explainStackError, isStackFatal } from "./stack_error.ts";
import { pool, retry } from "../util/async.ts";

/**
 * A ready `SFNClient` of `@aws-sdk/client-sfn`, kept by the caller. An internal alias, not a
 * re-export: `deno doc --lint` reports any npm package's type in a public signature as
 * private (denoland/deno#27364); see `ReadyS3Client` in sdk.ts.
 *
 * @internal
 */
type ReadySfnClient = SFNClient;

/**
 * A ready `S3Client` of `@aws-sdk/client-s3`, kept by the caller; an internal alias for the
 * reason given at {@linkcode ReadySfnClient}.
 *
 * @internal
 */
type ReadyS3Client = S3Client;

/** Counts of a manifest's rows by status. */
export interface BatchSummary {
  /** Rows in the manifest (= lines of the file). */
  rows: number;
  /** Rows whose execution this run started. */
  started: number;
  /** Of `started`, rows whose earlier attempt had failed (a new attempt; `attempt` > 1). */
  retried: number;
  /** Rows whose execution an earlier run had started. */
  alreadyStarted: number;
  /** Rows with no known execution whose output a render of the same inputs wrote. */
  alreadyRendered: number;
  /** Valid rows of a dry run. */
  wouldInvoke: number;
  /** Invalid rows, and rows whose start call failed. */
  failedToStart: number;
  /** Blank lines. */
  skipped: number;
  /** Valid rows left unstarted by an interruption. */
  notStarted: number;
  /** Rows whose variables drew warnings (the manifest's `warnings`). */
  warned: number;
}

/**
 * One batch entry: one line of the JSONL file (`outputKey` and inline `variables`). `V` types
 * `variables`, e.g. with the type `vid types` generates, so entries built in code are
 * checked at compile time before they are written as lines.
 */
export interface BatchEntry<
  V extends { [K in keyof V]?: string | number | boolean } = Record<
    string,
    string | number | boolean
  >,
> {
  /** Object key of the rendered video. */
  outputKey: string;
  /** Per-entry overrides, inline. */
  variables?: V;
}

/** Options of {@linkcode renderBatch}. `V` types `baseConfig.variables`. */
export interface RenderBatchOptions<
  V extends { [K in keyof V]?: string | number | boolean } = Record<
    string,
    string | number | boolean
  >,
> {
  /** Path of the JSONL file: one `{ "outputKey": ..., "variables": {...} }` per line. */
  batchFile: string;
  /** The site every row renders. */
  siteHandle: SiteHandle;
  /** The render bucket (`RenderBucketName`). */
  bucketName: string;
  /** The workflow (`RenderStateMachineArn`). */
  stateMachineArn: string;
  /**
   * Declarations of the composition, to check each row's variables against (`[]`: it
   * declares none). @default not checked
   */
  declarations?: readonly VariableDeclaration[];
  /** Fail a row whose variables do not match the declarations (else warn). */
  strict?: boolean;
  /** Configuration shared by every row; the row's `variables` replace `variables`. */
  baseConfig?: RenderConfig<V>;
  /** Cap on simultaneous `StartExecution` calls. @default 50 */
  maxConcurrent?: number;
  /** Validate only: every valid row becomes `would-invoke`; nothing is started. */
  dryRun?: boolean;
  /** Which rows whose execution exists start a new attempt. @default "failed" */
  rerun?: BatchRerun;
  /**
   * Step Functions connection options, or a ready client (kept by the caller; its own
   * retry policy then applies on top of this batch's).
   */
  sfn?: SfnOptions | ReadySfnClient;
  /**
   * S3 connection options or a ready client, to find the outputs already rendered once a
   * row's execution history is gone (a restarted local stack, expired history on AWS): a
   * row with no known execution whose output object carries the row's render id (written
   * from the same inputs) is `already-rendered`, not rendered again. Not with
   * `rerun: "all"`. @default not looked up: such a row renders again
   */
  s3?: S3Options | ReadyS3Client;
  /**
   * Reserved concurrency of the render function (`vid lambda deploy --concurrency`), for
   * the large-batch guidance. @default unknown
   */
  reservedConcurrency?: number;
  /** Attempts per row when the start call is throttled, fails with a 5xx or drops. @default 8 */
  startAttempts?: number;
  /** First backoff ceiling, ms; doubles per attempt up to 5000 (full jitter). @default 200 */
  retryBaseMs?: number;
  /** Stops starting new rows when aborted; calls in flight finish. */
  signal?: AbortSignal;
  /** Called with each row once its outcome is known (in completion order). */
  onRow?(row: BatchManifestRow): void;
  /** Called before each retry of a throttled (or 5xx) call. */
  onRetry?(line: number, attempt: number, error: Error): void;
  /** Receives warnings, each distinct message once. @default console.warn */
  onWarning?(message: string): void;
}

/** Entries (non-blank lines) above which the large-batch concurrency guidance applies. */
export const LARGE_BATCH_ROWS = 1000;

/** Default of `maxParallelChunks`, used by the guidance when the config leaves it unset. */
const DEFAULT_MAX_PARALLEL_CHUNKS = 16;

const DEFAULT_START_ATTEMPTS = 8;

const DEFAULT_RETRY_BASE_MS = 200;

const RETRY_CAP_MS = 5000;

const INTERRUPTED = "interrupted before this row was started; run the batch again to start it";

interface AwsError {
  name?: string;
  message?: string;
  code?: string;
  $metadata?: { httpStatusCode?: number };
}

/** Connection failures after the request may have been sent: worth another attempt. */
const NETWORK_ERROR_CODES = ["ECONNRESET", "EPIPE", "ETIMEDOUT"];

function isThrottle(error: unknown): boolean {
  const e = error as AwsError;
  return e?.name === "ThrottlingException" || e?.name === "TooManyRequestsException" ||
    e?.name === "Throttling" || e?.name === "RequestLimitExceeded" ||
    e?.$metadata?.httpStatusCode === 429;
}

/** A server error or a dropped connection: the call may or may not have been carried out. */
function isTransient(error: unknown): boolean {
  const e = error as AwsError;
  const status = e?.$metadata?.httpStatusCode;
  return (status !== undefined && status >= 500) ||
    NETWORK_ERROR_CODES.includes(e?.code ?? "") || e?.name === "TimeoutError" ||
    e?.message === "socket hang up";
}

function isRetryable(error: unknown): boolean {
  return isThrottle(error) || isTransient(error);
}

/**
 * The spec's guidance for large batches, or `undefined` when it does not apply: above
 * {@linkcode LARGE_BATCH_ROWS} entries, `--max-concurrent` should be near
 * floor(reservedConcurrency / maxParallelChunks). With the reserved concurrency known, a
 * message only when `maxConcurrent` exceeds that; unknown, a reminder of the rule.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { largeBatchGuidance } from "./batch.ts";
 *
 * const guidance = largeBatchGuidance({ entries: 5000, maxConcurrent: 50, reservedConcurrency: 320 });
 * assert.match(guidance!, /^batch of 5000 entries \(more than 1000\): --max-concurrent 50 is above .* = 20;/);
 * ```
 */
export function largeBatchGuidance(options: {
  /** Entries (non-blank lines) of the batch. */
  entries: number;
  /** The batch's `maxConcurrent`. */
  maxConcurrent: number;
  /** `maxParallelChunks` of the renders. @default 16 */
  maxParallelChunks?: number;
  /** Reserved concurrency of the render function, when known. */
  reservedConcurrency?: number;
}): string | undefined {
  if (options.entries <= LARGE_BATCH_ROWS) return undefined;
  const chunks = options.maxParallelChunks ?? DEFAULT_MAX_PARALLEL_CHUNKS;
  const head = `batch of ${options.entries} entries (more than ${LARGE_BATCH_ROWS})`;
  if (options.reservedConcurrency === undefined) {
    return `${head}: keep --max-concurrent near floor(reservedConcurrency / maxParallelChunks ` +
      `${chunks}) so renders do not compete for function instances (guidance, not enforced); ` +
      `pass --reserved-concurrency or set VID_LAMBDA_RESERVED_CONCURRENCY to have it checked`;
  }
  const advised = Math.max(1, Math.floor(options.reservedConcurrency / chunks));
  if (options.maxConcurrent <= advised) return undefined;
  return `${head}: --max-concurrent ${options.maxConcurrent} is above floor(reservedConcurrency ` +
    `${options.reservedConcurrency} / maxParallelChunks ${chunks}) = ${advised}; renders will ` +
    `compete for function instances and be throttled. Use --max-concurrent near ${advised} ` +
    `(guidance, not enforced)`;
}

/**
 * Counts a manifest's rows by status.
 *
 * @example
 * ```ts no_run
 * import { summarizeBatch } from "./batch.ts";
 *
 * import { readBatchManifest } from "./batch_progress.ts";
 *
 * const rows = await readBatchManifest("manifest.json");
 * const s = summarizeBatch(rows);
 * console.log(`${s.started} started, ${s.failedToStart} failed to start, ${s.skipped} skipped`);
 * ```
 */
export function summarizeBatch(rows: readonly BatchManifestRow[]): BatchSummary {
  const count = (status: BatchRowStatus) => rows.filter((r) => r.status === status).length;
  return {
    rows: rows.length,
    started: count("started"),
    retried: rows.filter((r) => r.status === "started" && (r.attempt ?? 1) > 1).length,
    alreadyStarted: count("already-started"),
    alreadyRendered: count("already-rendered"),
    wouldInvoke: count("would-invoke"),
    failedToStart: count("failed-to-start"),
    skipped: count("skipped"),
    notStarted: count("not-started"),
    warned: rows.filter((r) => (r.warnings?.length ?? 0) > 0).length,
  };
}

async function countEntries(path: string): Promise<number> {
  let entries = 0;
  for await (const text of lines(path)) if (text.trim() !== "") entries++;
  return entries;
}

/** The checked numbers and choices of {@linkcode RenderBatchOptions}. */
interface BatchSettings {
  maxConcurrent: number;
  startAttempts: number;
  retryBaseMs: number;
  rerun: BatchRerun;
}

/** Checks the options and that the batch file is a readable file; throws `BatchInputError`. */
async function checkBatchOptions(options: RenderBatchOptions): Promise<BatchSettings> {
  const maxConcurrent = options.maxConcurrent ?? 50;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new BatchInputError(
      "maxConcurrent",
      `maxConcurrent must be a positive integer, got ${maxConcurrent}`,
    );
  }
  const startAttempts = options.startAttempts ?? DEFAULT_START_ATTEMPTS;
  if (!Number.isInteger(startAttempts) || startAttempts < 1) {
    throw new BatchInputError(
      "startAttempts",
      `startAttempts must be a positive integer, got ${startAttempts}`,
    );
  }
  const rerun = options.rerun ?? "failed";
  if (!BATCH_RERUN_VALUES.includes(rerun)) {
    throw new BatchInputError(
      "rerun",
      `rerun must be one of ${BATCH_RERUN_VALUES.join(", ")}, got ${JSON.stringify(rerun)}`,
    );
  }
  try {
    if (!(await stat(options.batchFile)).isFile()) throw new Error("not a file");
  } catch (error) {
    throw new BatchInputError(
      "batchFile",
      `cannot read the batch file ${options.batchFile}: ${(error as Error).message}; pass a ` +
        `JSONL file, one {"outputKey": ..., "variables": {...}} per line`,
    );
  }
  if (!options.dryRun) batchExecutionArn(options.stateMachineArn, "check");
  return {
    maxConcurrent,
    startAttempts,
    retryBaseMs: options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS,
    rerun,
  };
}

/** One batch run: its settings, client, and what every row shares. */
interface BatchRun extends BatchSettings {
  options: RenderBatchOptions;
  /** Absent on a dry run. */
  client?: SFNClient;
  /** For outputs already rendered; absent when not looked up (see `RenderBatchOptions.s3`). */
  s3?: S3Client;
  /** Aborts when the user's signal does, or when a failure stops the whole batch. */
  stopped: AbortSignal;
  /** Why no more rows can start (stack unreachable, credentials), once known. */
  fatal?: string;
  /** Ends the run early for every row, with the reason. */
  stop(reason: string): void;
  warnOnce(message: string): void;
  /** Each line's variable warnings, added to its manifest row when it finishes. */
  rowWarnings: Map<number, string[]>;
  finish(row: BatchManifestRow): void;
}

/** A valid row waiting for a start slot. */
interface PendingRow {
  line: number;
  outputKey: string;
  config: RenderConfig;
  /** The render id of the row's first attempt. */
  baseId: string;
}

/**
 * The batch's Step Functions client (the caller's, or one with `maxAttempts: 1`: retries are
 * this batch's, counted per row), after one `DescribeStateMachine` so a wrong stack fails at
 * once. `undefined` on a dry run.
 */
async function batchClient(
  options: RenderBatchOptions,
): Promise<{ client?: SFNClient; owned: boolean }> {
  if (options.dryRun) return { owned: false };
  const given = options.sfn instanceof SFNClient ? options.sfn : undefined;
  const client = given ??
    sfnClientFor(options.sfn as SfnOptions | undefined, options.stateMachineArn, {
      maxAttempts: 1,
    });
  try {
    await client.send(
      new DescribeStateMachineCommand({ stateMachineArn: options.stateMachineArn }),
    );
  } catch (error) {
    if (!given) client.destroy();
    throw explainStackError(error, { stateMachineArn: options.stateMachineArn });
  }
  return { client, owned: !given };
}

/**
 * Reads the batch file line by line and yields the rows to start; the other rows (blank,
 * invalid, duplicate `outputKey`, every valid row of a dry run) are finished here. Read only
 * as fast as rows start (the pool pulls), so a large file is never held whole.
 */
async function* pendingRows(run: BatchRun): AsyncGenerator<PendingRow> {
  const { options } = run;
  const declarations = options.declarations;
  const baseConfig = (options.baseConfig ?? {}) as RenderConfig;
  const seen = new Map<string, number>();
  let line = 0;
  for await (const text of lines(options.batchFile)) {
    line++;
    const fail = (outputKey: string | null, error: string) =>
      run.finish({ line, outputKey, status: "failed-to-start", executionArn: null, error });
    const parsed = parseBatchLine(text, line, declarations, options.strict);
    if (parsed.kind === "blank") {
      run.finish({
        line,
        outputKey: null,
        status: "skipped",
        executionArn: null,
        error: "blank line",
      });
      continue;
    }
    if (parsed.kind === "invalid") {
      fail(parsed.outputKey, parsed.error);
      continue;
    }
    const { outputKey, variables } = parsed;
    if (parsed.warning) run.warnOnce(parsed.warning);
    if (parsed.problems?.length) {
      run.rowWarnings.set(line, parsed.problems.map((p) => p.message));
    }
    const config: RenderConfig = withSiteFrameRate({
      ...baseConfig,
      variables: variables as RenderConfig["variables"],
    }, options.siteHandle);
    const input: Omit<ExecutionInput, "renderId"> = {
      bucketName: options.bucketName,
      siteId: options.siteHandle.siteId,
      serveUrl: options.siteHandle.serveUrl,
      composition: options.siteHandle.composition,
      outputKey,
      config,
    };
    const baseId = await batchRenderId(input);
    try {
      validateConfig({ renderId: baseId, ...input });
    } catch (error) {
      fail(outputKey, `line ${line}: ${(error as Error).message}`);
      continue;
    }
    const first = seen.get(outputKey);
    if (first !== undefined) {
      fail(outputKey, `line ${line}: duplicate outputKey ${outputKey} (first on line ${first})`);
      continue;
    }
    seen.set(outputKey, line);
    if (options.dryRun) {
      run.finish({ line, outputKey, status: "would-invoke", executionArn: null, error: null });
      continue;
    }
    yield { line, outputKey, config, baseId };
  }
}

/**
 * Starts one row: looks up its attempts, starts the next one when the rerun rule says so,
 * and retries throttled, 5xx and dropped calls with full-jitter backoff. Always finishes the
 * row: `started`, `already-started`, `not-started` (interrupted, or the batch stopped) or
 * `failed-to-start`.
 */
async function startRow(run: BatchRun, row: PendingRow): Promise<void> {
  const { line, outputKey, baseId } = row;
  const { options } = run;
  const notStarted = (reason: string): BatchManifestRow => ({
    line,
    outputKey,
    status: "not-started",
    executionArn: null,
    error: `line ${line}: ${reason}`,
  });
  if (run.stopped.aborted) {
    run.finish(notStarted(run.fatal ? `not started: ${run.fatal}` : INTERRUPTED));
    return;
  }
  // Set when a start call of this run failed in a way that may have started the execution
  // anyway (connection dropped, 5xx): if it exists then, this run started it.
  let maybeStarted = false;
  const exists = (arn: string, attempt: number): BatchManifestRow => ({
    line,
    outputKey,
    status: maybeStarted ? "started" : "already-started",
    executionArn: arn,
    error: null,
    renderId: attemptRenderId(baseId, attempt),
    attempt,
  });
  const attemptStart = async (): Promise<BatchManifestRow> => {
    if (run.fatal) return notStarted(`not started: ${run.fatal}`);
    let next = 1;
    try {
      const found = await latestAttempt(run.client!, options.stateMachineArn, baseId, run.rerun);
      if (!found.startNext) return exists(found.arn!, found.attempt);
      if (found.attempt === 0 && run.rerun !== "all") {
        // No execution known: its history may be gone while its output is there.
        const renderId = await renderedFrom(run.s3, options.bucketName, outputKey, baseId);
        if (renderId !== undefined) {
          return {
            line,
            outputKey,
            status: "already-rendered",
            executionArn: null,
            error: null,
            renderId,
          };
        }
      }
      next = found.attempt + 1;
      const renderId = attemptRenderId(baseId, next);
      let handle;
      try {
        handle = await renderToLambda({
          siteHandle: options.siteHandle,
          bucketName: options.bucketName,
          stateMachineArn: options.stateMachineArn,
          config: row.config,
          outputKey,
          renderId,
          sfn: run.client,
          s3: false,
          onWarning: run.warnOnce,
        });
      } catch (error) {
        if (isTransient(error)) maybeStarted = true;
        throw error;
      }
      return {
        line,
        outputKey,
        status: "started",
        executionArn: handle.executionArn,
        error: null,
        renderId,
        attempt: next,
      };
    } catch (error) {
      if ((error as AwsError).name === "ExecutionAlreadyExists") {
        return exists(
          batchExecutionArn(options.stateMachineArn, attemptRenderId(baseId, next)),
          next,
        );
      }
      if (!isStackFatal(error)) throw error;
      const explained = explainStackError(error, {
        stateMachineArn: options.stateMachineArn,
      }) as Error;
      run.stop(explained.message ?? String(explained));
      return notStarted(`not started: ${run.fatal}`);
    }
  };
  try {
    run.finish(
      await retry(attemptStart, {
        attempts: run.startAttempts,
        baseMs: run.retryBaseMs,
        maxMs: RETRY_CAP_MS,
        jitter: "full",
        retryable: isRetryable,
        onRetry: ({ attempt, error }) => options.onRetry?.(line, attempt, error as Error),
        signal: run.stopped,
      }),
    );
  } catch (error) {
    if (run.stopped.aborted && error === run.stopped.reason) {
      run.finish(notStarted(run.fatal ? `not started: ${run.fatal}` : INTERRUPTED));
      return;
    }
    run.finish({
      line,
      outputKey,
      status: "failed-to-start",
      executionArn: null,
      error: startFailure(line, run.startAttempts, error),
    });
  }
}

/** The manifest error of a row whose start failed for good. */
function startFailure(line: number, attempts: number, error: unknown): string {
  if (isRetryable(error)) {
    const e = error as AwsError;
    const what = `${e.name ?? "Error"}: ${e.message ?? "no message"}`;
    return isThrottle(error)
      ? `line ${line}: the start call was throttled on all ${attempts} attempts ` +
        `(${what}); lower --max-concurrent, or run the batch again later to resume`
      : `line ${line}: the start call failed on all ${attempts} attempts (${what})`;
  }
  const message = (error as Error).message ?? String(error);
  return message.startsWith(`line ${line}:`) ? message : `line ${line}: ${message}`;
}

/**
 * Starts one distributed render per line of a JSONL batch file and returns the manifest,
 * one row per line, in line order. At most `maxConcurrent` `StartExecution` calls are in
 * flight at once; throttled calls are retried with exponential backoff. `maxConcurrent`
 * does not limit the function concurrency the renders use. On a rerun, rows whose latest
 * execution is running or succeeded are `already-started` and start nothing; rows whose
 * latest execution failed, timed out or was aborted start a new attempt (`-a2`, …; see
 * `rerun`).
 *
 * @example
 * ```ts no_run
 * import { deploySite, renderBatch } from "@vid/cli";
 * import { summarizeBatch } from "./batch.ts";
 *
 * const siteHandle = await deploySite({ projectDir: "examples/hello", bucketName: "vid-renders" });
 * const rows = await renderBatch({
 *   batchFile: "batch.jsonl",
 *   siteHandle,
 *   bucketName: "vid-renders",
 *   stateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render",
 *   maxConcurrent: 10,
 * });
 * console.log(summarizeBatch(rows));
 * ```
 */
export async function renderBatch<
  V extends { [K in keyof V]?: string | number | boolean } = Record<
    string,
    string | number | boolean
  >,
>(options: RenderBatchOptions<V>): Promise<BatchManifestRow[]> {
  const generic = options as RenderBatchOptions;
  const settings = await checkBatchOptions(generic);
  const warned = new Set<string>();
  const warnOnce = (message: string) => {
    if (warned.has(message)) return;
    warned.add(message);
    (options.onWarning ?? ((m: string) => console.warn(m)))(message);
  };
  const guidance = largeBatchGuidance({
    entries: await countEntries(options.batchFile),
    maxConcurrent: settings.maxConcurrent,
    maxParallelChunks: options.baseConfig?.maxParallelChunks,
    reservedConcurrency: options.reservedConcurrency,
  });
  if (guidance) warnOnce(guidance);

  // Interrupted while the stack is checked (an endpoint that never answers, then Ctrl-C):
  // no client, and every row is finished as not started below.
  const { client, owned } = await batchClient(generic).catch((error) => {
    if (options.signal?.aborted) return { client: undefined, owned: false };
    throw error;
  });
  const ownS3 = generic.s3 !== undefined && !(generic.s3 instanceof S3Client) && !generic.dryRun;
  const s3 = generic.dryRun || generic.s3 === undefined
    ? undefined
    : generic.s3 instanceof S3Client
    ? generic.s3
    : s3ClientFor(generic.s3);
  const rows: BatchManifestRow[] = [];
  const stop = new AbortController();
  const run: BatchRun = {
    ...settings,
    options: generic,
    client,
    s3,
    stopped: options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal,
    stop(reason: string) {
      run.fatal ??= reason;
      stop.abort();
    },
    warnOnce,
    rowWarnings: new Map(),
    finish(row: BatchManifestRow) {
      const warnings = run.rowWarnings.get(row.line);
      const finished = warnings ? { ...row, warnings } : row;
      rows.push(finished);
      options.onRow?.(finished);
    },
  };
  try {
    // Back-pressure: a line is read only when a start slot is free. Rows reached after an
    // interruption are still read, checked, and finished as not started (a rerun starts them).
    await pool(pendingRows(run), settings.maxConcurrent, (row) => startRow(run, row));
  } finally {
    if (owned) client?.destroy();
    if (ownS3) s3?.destroy();
  }
  return rows.sort((a, b) => a.line - b.line);
}
