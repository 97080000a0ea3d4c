/**
 * Batch distributed rendering: one workflow execution per line of a JSONL file.
 *
 * The file is streamed (`node:fs` `createReadStream` + `readline`), never loaded whole,
 * and each line is parsed and validated on its own; a bad line becomes a
 * `failed-to-start` manifest row and never stops the batch.
 *
 * Decisions:
 * - Blank (whitespace-only) lines are skipped: they are not batch entries and produce no
 *   manifest row. Line numbers stay physical (1-based) so every row maps back to its line.
 * - A row that could not be started has `status: "failed-to-start"`, `executionArn: null`
 *   and an `error` message.
 * - A second row with an `outputKey` already used by an earlier accepted row fails to
 *   start, naming the earlier line.
 *
 * @module
 */

import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import { SFNClient } from "@aws-sdk/client-sfn";
import type { VariableDeclaration, Variables } from "../composition/declarations.ts";
import { checkOverrides } from "../composition/variables.ts";
import { type ExecutionInput, type RenderConfig, validateConfig } from "./config.ts";
import { renderToLambda, type SfnOptions, type SiteHandle } from "./sdk.ts";

/** Status of a batch manifest row. */
export type BatchRowStatus = "started" | "would-invoke" | "failed-to-start";

/** One row of the batch manifest: one per non-blank input line. */
export interface BatchManifestRow {
  /** 1-based line number in the JSONL file. */
  line: number;
  /** The entry's `outputKey`; `null` when the line had none. */
  outputKey: string | null;
  status: BatchRowStatus;
  /** ARN of the started execution; `null` unless `started`. */
  executionArn: string | null;
  /** Render id (execution name) of a started row. */
  renderId?: string;
  /** Why the row failed to start. */
  error?: string;
}

/** Options of {@linkcode renderBatch}. */
export interface RenderBatchOptions {
  /** Path of the JSONL file: one `{ "outputKey": ..., "variables": {...} }` per line. */
  batchFile: string;
  /** The site every row renders. */
  siteHandle: SiteHandle;
  /** The render bucket (`RenderBucketName`). */
  bucketName: string;
  /** The workflow (`RenderStateMachineArn`). */
  stateMachineArn: string;
  /** Declarations of the composition, to check each row's variables against. */
  declarations?: readonly VariableDeclaration[];
  /** Fail a row whose variables do not match the declarations (else warn). */
  strict?: boolean;
  /** Configuration shared by every row; the row's `variables` replace `variables`. */
  baseConfig?: RenderConfig;
  /** Cap on simultaneous `StartExecution` calls. @default 50 */
  maxConcurrent?: number;
  /** Validate only: every valid row becomes `would-invoke`; nothing is started. */
  dryRun?: boolean;
  /** Step Functions connection options, or a ready client (kept by the caller). */
  sfn?: SfnOptions | SFNClient;
  /** Reserved concurrency of the render function, for the large-batch guidance. */
  reservedConcurrency?: number;
  /** Called with each row once its outcome is known (in completion order). */
  onRow?(row: BatchManifestRow): void;
  /** Receives warnings. @default console.warn */
  onWarning?(message: string): void;
}

/** Rows above which the concurrency guidance applies. */
export const LARGE_BATCH_ROWS = 1000;
const DEFAULT_MAX_PARALLEL_CHUNKS = 16;
const THROTTLE_RETRIES = 6;
const THROTTLE_BASE_MS = 100;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isThrottle(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "ThrottlingException" || e?.name === "TooManyRequestsException" ||
    e?.name === "Throttling" || e?.$metadata?.httpStatusCode === 429;
}

function newRenderId(): string {
  const random = crypto.getRandomValues(new Uint8Array(6));
  const hex = [...random].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `r-${Date.now().toString(36)}-${hex}`;
}

/** Counting semaphore: at most `limit` holders at once. */
class Limiter {
  #active = 0;
  #waiting: (() => void)[] = [];
  constructor(readonly limit: number) {}
  async acquire(): Promise<void> {
    while (this.#active >= this.limit) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#active++;
  }
  release(): void {
    this.#active--;
    this.#waiting.shift()?.();
  }
}

/**
 * Starts one distributed render per line of a JSONL batch file and returns the manifest,
 * in line order. At most `maxConcurrent` `StartExecution` calls are in flight at once;
 * throttled calls are retried with exponential backoff. `maxConcurrent` does not limit
 * the function concurrency the renders use.
 *
 * @example
 * ```ts
 * import { deploySite, renderBatch } from "@vid/cli";
 *
 * const siteHandle = await deploySite({ projectDir: "examples/hello", bucketName: "vid-renders" });
 * const rows = await renderBatch({
 *   batchFile: "batch.jsonl",
 *   siteHandle,
 *   bucketName: "vid-renders",
 *   stateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render",
 *   maxConcurrent: 10,
 * });
 * ```
 */
export async function renderBatch(options: RenderBatchOptions): Promise<BatchManifestRow[]> {
  const maxConcurrent = options.maxConcurrent ?? 50;
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) {
    throw new RangeError(`maxConcurrent must be a positive integer, got ${maxConcurrent}`);
  }
  const onWarning = options.onWarning ?? ((m: string) => console.warn(m));
  const declarations = options.declarations ?? [];
  const baseConfig: RenderConfig = options.baseConfig ?? {};
  const rows: BatchManifestRow[] = [];
  const seen = new Map<string, number>();
  const limiter = new Limiter(maxConcurrent);
  const pending = new Set<Promise<void>>();
  const ownClient = !options.dryRun && !(options.sfn instanceof SFNClient);
  const client = options.dryRun
    ? undefined
    : options.sfn instanceof SFNClient
    ? options.sfn
    : new SFNClient({
      region: options.sfn?.region ?? options.stateMachineArn.split(":")[3] ??
        Deno.env.get("AWS_REGION") ?? "us-east-1",
      endpoint: options.sfn?.endpoint,
      credentials: options.sfn?.credentials,
    });
  let warnedLarge = false;
  let count = 0;

  const finish = (row: BatchManifestRow) => {
    rows.push(row);
    options.onRow?.(row);
  };

  const start = async (line: number, outputKey: string, config: RenderConfig) => {
    const renderId = newRenderId();
    try {
      for (let attempt = 0;; attempt++) {
        try {
          const handle = await renderToLambda({
            siteHandle: options.siteHandle,
            bucketName: options.bucketName,
            stateMachineArn: options.stateMachineArn,
            config,
            outputKey,
            renderId,
            sfn: client,
            onWarning,
          });
          finish({
            line,
            outputKey,
            status: "started",
            executionArn: handle.executionArn,
            renderId,
          });
          return;
        } catch (error) {
          if (!isThrottle(error) || attempt >= THROTTLE_RETRIES) throw error;
          const delay = THROTTLE_BASE_MS * 2 ** attempt * (0.5 + Math.random());
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    } catch (error) {
      finish({
        line,
        outputKey,
        status: "failed-to-start",
        executionArn: null,
        error: (error as Error).message ?? String(error),
      });
    } finally {
      limiter.release();
    }
  };

  const stream = createReadStream(options.batchFile, { encoding: "utf8" });
  const reader = createInterface({ input: stream, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const text of reader) {
      line++;
      if (text.trim() === "") continue;
      count++;
      if (
        !warnedLarge && count > LARGE_BATCH_ROWS && options.reservedConcurrency !== undefined
      ) {
        warnedLarge = true;
        const chunks = baseConfig.maxParallelChunks ?? DEFAULT_MAX_PARALLEL_CHUNKS;
        const advised = Math.floor(options.reservedConcurrency / chunks);
        if (maxConcurrent > advised) {
          onWarning(
            `batch of more than ${LARGE_BATCH_ROWS} entries: --max-concurrent ${maxConcurrent} ` +
              `is above floor(reservedConcurrency ${options.reservedConcurrency} / ` +
              `maxParallelChunks ${chunks}) = ${advised}; renders will compete for function ` +
              `instances and be throttled. Use --max-concurrent near ${advised} (not enforced)`,
          );
        }
      }
      const fail = (outputKey: string | null, error: string) =>
        finish({ line, outputKey, status: "failed-to-start", executionArn: null, error });

      let entry: unknown;
      try {
        entry = JSON.parse(text);
      } catch (error) {
        fail(null, `line ${line}: not valid JSON: ${(error as Error).message}`);
        continue;
      }
      if (!isPlainObject(entry)) {
        fail(null, `line ${line}: a batch entry must be a JSON object`);
        continue;
      }
      const outputKey = entry.outputKey;
      if (typeof outputKey !== "string" || outputKey === "") {
        fail(null, `line ${line}: "outputKey" must be a non-empty string`);
        continue;
      }
      const variables = entry.variables ?? {};
      if (!isPlainObject(variables)) {
        fail(outputKey, `line ${line}: "variables" must be a JSON object`);
        continue;
      }
      const problems = checkOverrides(declarations, variables as Variables);
      if (problems.length > 0) {
        const detail = problems.map((p) => p.message).join("; ");
        if (options.strict) {
          fail(outputKey, `line ${line}: variables do not match the declarations: ${detail}`);
          continue;
        }
        onWarning(`line ${line}: ${detail}`);
      }
      const config: RenderConfig = {
        ...baseConfig,
        variables: variables as RenderConfig["variables"],
      };
      const input: ExecutionInput = {
        renderId: "r-batch-check",
        bucketName: options.bucketName,
        siteId: options.siteHandle.siteId,
        serveUrl: options.siteHandle.serveUrl,
        composition: options.siteHandle.composition,
        outputKey,
        config,
      };
      try {
        validateConfig(input);
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
        finish({ line, outputKey, status: "would-invoke", executionArn: null });
        continue;
      }
      await limiter.acquire(); // back-pressure: reading waits for a free start slot
      const task = start(line, outputKey, config);
      pending.add(task);
      task.finally(() => pending.delete(task));
    }
    await Promise.all(pending);
  } finally {
    reader.close();
    stream.destroy();
    if (ownClient) client?.destroy();
  }
  return rows.sort((a, b) => a.line - b.line);
}
