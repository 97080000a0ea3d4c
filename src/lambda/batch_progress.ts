/**
 * Where a whole distributed batch is, from its manifest: {@linkcode readBatchManifest}
 * reads the rows `vid lambda render-batch --manifest` wrote, and
 * {@linkcode getBatchProgress} reads each row's latest attempt (following `-a2`, `-a3`, …
 * past the one the manifest names) with `getRenderProgress` and totals them. Apart from
 * starting (batch.ts), which only the render-batch command does.
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import { attemptOf, FAILED_STATUSES, laterAttemptArn } from "./batch_attempts.ts";
import type { S3Client } from "@aws-sdk/client-s3";
import type { SFNClient } from "@aws-sdk/client-sfn";
import { BatchInputError, type BatchManifestRow, type BatchRowStatus } from "../batch/manifest.ts";

import { readableExecutionError } from "./execution_error.ts";
import {
  getRenderProgress,
  type LambdaRenderProgress,
  type LambdaRenderStatus,
} from "./progress.ts";
import type { S3Options, SfnOptions } from "../aws/clients.ts";
import { explainStackError, isRenderNotFound, isStackFatal, isUnreachable } from "./stack_error.ts";
import { VidError } from "../errors.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { pool } from "../util/async.ts";

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

/** Options of {@linkcode getBatchProgress}. */
export interface BatchProgressOptions {
  /** The manifest rows (from {@linkcode renderBatch} or {@linkcode readBatchManifest}). */
  rows: readonly BatchManifestRow[];
  /** Bucket of the renders. @default each execution input's `bucketName` */
  bucketName?: string;
  /** Step Functions connection options, or a ready client (kept by the caller). */
  sfn?: SfnOptions | ReadySfnClient;
  /** S3 connection options or client, for the worker's progress objects; `false` skips. */
  s3?: S3Options | ReadyS3Client | false;
  /** Executions read at once. @default 10 */
  concurrency?: number;
}

/** Where one row of a batch is. */
export interface BatchRowProgress {
  /** 1-based line number in the JSONL file. */
  line: number;
  /** The row's `outputKey`. */
  outputKey: string | null;
  /** ARN of the row's execution, `null` when it never started. */
  executionArn: string | null;
  /**
   * The render's status when the row has an execution; otherwise the manifest status
   * (`failed-to-start`, `skipped`, `not-started`, `would-invoke`), and `succeeded` for an
   * `already-rendered` row; `unknown` when the execution could not be read (see `errors`).
   */
  status:
    | LambdaRenderStatus
    | Exclude<BatchRowStatus, "started" | "already-started" | "already-rendered">
    | "unknown";
  /** Chunks rendered. */
  chunksDone: number;
  /** Chunks of the plan; 0 until planned. */
  chunksTotal: number;
  /** Failures of the render, or why the row never started. */
  errors: string[];
  /**
   * Chunks the workflow retried (or whose attempt failed), as `vid lambda progress <id>`
   * shows them: attempts so far and each failed attempt's error; empty without an execution.
   */
  retries: LambdaRenderProgress["retries"];
  /** `s3://<bucket>/<key>` once the render succeeded. */
  outputLocation?: string;
  /** Which attempt of the row the execution is (see {@linkcode BatchManifestRow}). */
  attempt?: number;
}

/** Where a whole batch is. */
export interface BatchProgress {
  /** One entry per manifest row, in line order. */
  rows: BatchRowProgress[];
  /** Rows of the manifest. */
  total: number;
  /** Rows with an execution. */
  executions: number;
  /** Executions still running. */
  running: number;
  /** Executions that succeeded. */
  succeeded: number;
  /** Executions that failed, were aborted or timed out. */
  failed: number;
  /** Executions that could not be read. */
  unknown: number;
  /** Rows without an execution (failed to start, skipped, not started, dry run). */
  notStarted: number;
  /** Chunks rendered over every execution. */
  chunksDone: number;
  /** Chunks planned over every execution. */
  chunksTotal: number;
  /** Sum of the executions' cost estimates so far, US dollars. */
  usd: number;
  /** Whether no execution is still running and every execution could be read. */
  done: boolean;
}

/**
 * Reads a manifest written by `vid lambda render-batch --manifest` (or `--json`): a JSON
 * array of rows. Throws {@linkcode BatchInputError} naming the first bad field.
 *
 * @example
 * ```ts no_run
 * import { getBatchProgress } from "@vid/cli";
 * import { readBatchManifest } from "./batch_progress.ts";
 *
 * const rows = await readBatchManifest("manifest.json");
 * const progress = await getBatchProgress({ rows });
 * console.log(`${progress.succeeded}/${progress.executions} done`);
 * ```
 */
export async function readBatchManifest(path: string): Promise<BatchManifestRow[]> {
  let value: unknown;
  try {
    value = JSON.parse(await readFile(path, "utf8"));
  } catch (error) {
    throw new BatchInputError(
      "manifest",
      `cannot read the manifest ${path}: ${(error as Error).message}; pass the file written ` +
        `by \`vid lambda render-batch --manifest\``,
    );
  }
  if (!Array.isArray(value)) {
    throw new BatchInputError("manifest", `the manifest ${path} must be a JSON array of rows`);
  }
  return value.map((row, i) => {
    const bad = (field: string, want: string) =>
      new BatchInputError(`[${i}].${field}`, `manifest ${path}, row ${i}: "${field}" ${want}`);
    if (!isPlainObject(row)) throw bad("line", "must be in an object");
    if (!Number.isInteger(row.line) || (row.line as number) < 1) {
      throw bad("line", "must be a positive integer");
    }
    if (row.outputKey !== null && typeof row.outputKey !== "string") {
      throw bad("outputKey", "must be a string or null");
    }
    if (typeof row.status !== "string") throw bad("status", "must be a string");
    if (row.executionArn !== null && typeof row.executionArn !== "string") {
      throw bad("executionArn", "must be a string or null");
    }
    return {
      line: row.line as number,
      outputKey: row.outputKey as string | null,
      status: row.status as BatchRowStatus,
      executionArn: row.executionArn as string | null,
      error: typeof row.error === "string" ? row.error : null,
      ...(typeof row.renderId === "string" ? { renderId: row.renderId } : {}),
      ...(Number.isInteger(row.attempt) && (row.attempt as number) >= 1
        ? { attempt: row.attempt as number }
        : {}),
      ...(Array.isArray(row.warnings) && row.warnings.every((w) => typeof w === "string")
        ? { warnings: row.warnings as string[] }
        : {}),
    };
  });
}

/**
 * Where a whole batch is: reads every execution of the manifest (at most `concurrency`
 * at once) with `getRenderProgress` and totals them. Rows that never started count as
 * `notStarted` with their reason.
 *
 * @example
 * ```ts no_run
 * import { getBatchProgress } from "@vid/cli";
 * import { readBatchManifest } from "./batch_progress.ts";
 *
 * const p = await getBatchProgress({ rows: await readBatchManifest("manifest.json") });
 * console.log(`${p.succeeded} succeeded, ${p.running} running, ${p.failed} failed`);
 * ```
 */
export async function getBatchProgress(options: BatchProgressOptions): Promise<BatchProgress> {
  const sorted = [...options.rows].sort((a, b) => a.line - b.line);
  const cost = { usd: 0 };
  const result = await pool(
    sorted,
    Math.max(1, options.concurrency ?? 10),
    (row) => rowProgress(row, options, cost),
  );
  const count = (test: (r: BatchRowProgress) => boolean) => result.filter(test).length;
  const running = count((r) => r.status === "running");
  return {
    rows: result,
    total: result.length,
    executions: count((r) => r.executionArn !== null),
    running,
    succeeded: count((r) => r.status === "succeeded"),
    failed: count((r) => ["failed", "aborted", "timed-out"].includes(r.status)),
    unknown: count((r) => r.status === "unknown"),
    notStarted: count((r) => r.executionArn === null),
    chunksDone: result.reduce((sum, r) => sum + r.chunksDone, 0),
    chunksTotal: result.reduce((sum, r) => sum + r.chunksTotal, 0),
    usd: cost.usd,
    done: running === 0 && count((r) => r.status === "unknown") === 0,
  };
}

/**
 * Where one manifest row is: its latest attempt's progress (a manifest from before a rerun
 * names an attempt that failed; a later attempt `-a<n+1>`, … is where the row is now), or
 * its manifest status when it never started. Adds the executions' cost to `cost.usd`.
 * Throws when the stack is unreachable or the credentials are wrong: then no row can be
 * read, and one error says so instead of a page of `unknown` rows.
 */
async function rowProgress(
  row: BatchManifestRow,
  options: BatchProgressOptions,
  cost: { usd: number },
): Promise<BatchRowProgress> {
  const base: Omit<
    BatchRowProgress,
    "status" | "chunksDone" | "chunksTotal" | "errors" | "retries"
  > = {
    line: row.line,
    outputKey: row.outputKey,
    executionArn: row.executionArn,
    ...(row.attempt ? { attempt: row.attempt } : {}),
  };
  if (!row.executionArn && row.status === "already-rendered") {
    // Its execution is gone; its output, from the same inputs, is there.
    const bucket = options.bucketName;
    return {
      ...base,
      status: "succeeded",
      chunksDone: 0,
      chunksTotal: 0,
      errors: [],
      retries: [],
      ...(bucket && row.outputKey ? { outputLocation: `s3://${bucket}/${row.outputKey}` } : {}),
    };
  }
  if (!row.executionArn) {
    return {
      ...base,
      status: row.status as Exclude<
        BatchRowStatus,
        "started" | "already-started" | "already-rendered"
      >,
      chunksDone: 0,
      chunksTotal: 0,
      errors: row.error ? [row.error] : [],
      retries: [],
    };
  }
  const read = (executionArn: string) =>
    getRenderProgress({
      executionArn,
      bucketName: options.bucketName,
      sfn: options.sfn,
      s3: options.s3,
    });
  try {
    let p = await read(row.executionArn);
    cost.usd += p.costEstimate.usd;
    let attempt = row.attempt ?? attemptOf(row.executionArn);
    while (FAILED_STATUSES.includes(p.status) && attempt !== undefined) {
      const later = laterAttemptArn(row.executionArn, attempt + 1);
      if (!later) break;
      try {
        p = await read(later);
      } catch (error) {
        if (isRenderNotFound(error)) break;
        throw error;
      }
      cost.usd += p.costEstimate.usd;
      attempt++;
      base.executionArn = later;
      base.attempt = attempt;
    }
    return {
      ...base,
      status: p.status,
      chunksDone: p.chunksDone,
      chunksTotal: p.chunksTotal,
      errors: p.errors.map(readableExecutionError),
      retries: p.retries,
      ...(p.outputLocation ? { outputLocation: p.outputLocation } : {}),
    };
  } catch (error) {
    // A row whose execution is not there is that row's news (`unknown`), not the stack's.
    if (!isRenderNotFound(error) && (isUnreachable(error) || isStackFatal(error))) {
      throw explainStackError(error, {});
    }
    return {
      ...base,
      status: "unknown",
      chunksDone: 0,
      chunksTotal: 0,
      retries: [],
      // vid's errors say what is wrong (`no render … in this workflow`); others get their name.
      errors: [
        error instanceof VidError
          ? error.message
          : `${(error as Error).name}: ${(error as Error).message}`,
      ],
    };
  }
}
