/**
 * Where a distributed render is, read from its workflow execution: the history's events
 * (chunks planned, done, retried; the run time billed) and, while it runs, the worker's
 * progress objects in the bucket. {@linkcode getRenderProgress} is the one reader;
 * `vid lambda progress`, `render --wait`, a batch's progress and the server's Lambda
 * backend all go through it.
 *
 * @module
 */

import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  SFNClient,
} from "@aws-sdk/client-sfn";
import { ConfigError, type ExecutionInput } from "./config.ts";
import { STATE_NAMES } from "./state_machine.ts";
import { isRenderNotFound, renderNotFound } from "./stack_error.ts";
import {
  type CostEstimate,
  DEFAULT_LAMBDA_MEMORY_MB,
  functionRunMs,
  LAMBDA_USD_PER_GB_SECOND,
  USD_PER_STATE_TRANSITION,
} from "./cost.ts";
import { readableExecutionError } from "./execution_error.ts";
import {
  arnRegion,
  executionArnFor,
  s3ClientFor,
  type S3Options,
  sfnClientFor,
  type SfnOptions,
  STATE_MACHINE_ARN_SHAPE,
} from "../aws/clients.ts";

/**
 * A ready `S3Client` of `@aws-sdk/client-s3`, kept by the caller; an internal alias (see
 * `ReadyS3Client` in sdk.ts).
 *
 * @internal
 */
type ReadyS3Client = S3Client;

/**
 * A ready `SFNClient` of `@aws-sdk/client-sfn`, kept by the caller; an internal alias (see
 * `ReadyS3Client` in sdk.ts).
 *
 * @internal
 */
type ReadySfnClient = SFNClient;

/** Options of {@linkcode getRenderProgress}: an execution ARN, or a render id and workflow. */
export interface RenderProgressOptions {
  /** ARN of the execution (from `renderToLambda`'s handle). */
  executionArn?: string;
  /** Render id, with `stateMachineArn`, when the execution ARN is not at hand. */
  renderId?: string;
  /** The workflow, with `renderId`. */
  stateMachineArn?: string;
  /** Bucket of the render. @default the execution input's `bucketName` */
  bucketName?: string;
  /** Step Functions connection options, or a ready client (kept by the caller). */
  sfn?: SfnOptions | ReadySfnClient;
  /**
   * S3 connection options or client, to read the worker's progress objects; `false` skips
   * them. @default the SDK's default chain in the execution's region
   */
  s3?: S3Options | ReadyS3Client | false;
  /** Memory of the render function in MB, for the cost estimate. @default 10240 */
  memoryMb?: number;
}

/** Status of a distributed render. */
export type LambdaRenderStatus = "running" | "succeeded" | "failed" | "aborted" | "timed-out";

/** Where a distributed render is. */
export interface LambdaRenderProgress {
  /** Identifier of the render; the execution's name. */
  renderId: string;
  /** ARN of the workflow execution. */
  executionArn: string;
  /** Where the execution is: running, or how it ended. */
  status: LambdaRenderStatus;
  /** Chunks rendered. */
  chunksDone: number;
  /** Chunks of the plan; 0 until the plan is known. */
  chunksTotal: number;
  /** Frames rendered, when known. */
  framesDone?: number;
  /** Frames of the render, once planned. */
  framesTotal?: number;
  /** Failures: the execution's error (a failed chunk's cause names chunk and frames). */
  errors: string[];
  /**
   * Chunks that needed more than one attempt, or whose attempt failed (the workflow retries
   * a failed chunk): attempts so far and each failed attempt's error.
   */
  retries: {
    /** The chunk's index; absent when the history does not say which chunk failed. */
    index?: number;
    /** Attempts started so far (1: the first try). */
    attempts: number;
    /** Errors of the failed attempts, oldest first: `<error>: <cause>`. */
    errors: string[];
  }[];
  /** Bucket of the output. */
  bucketName: string;
  /** Object key of the output. */
  outputKey: string;
  /** `s3://<bucket>/<key>` once the render succeeded. */
  outputLocation?: string;
  /** Rough cost so far. */
  costEstimate: CostEstimate;
  /** When the execution started. */
  startedAt?: Date;
  /** When the execution stopped. */
  stoppedAt?: Date;
}

/**
 * A chunk's attempts, from the execution history: one of
 * {@linkcode LambdaRenderProgress.retries}. An internal name: `@vid/cli/lambda` exports the
 * progress, not its parts (issue #35).
 */
export type ChunkRetry = LambdaRenderProgress["retries"][number];

const STATUS: Record<string, LambdaRenderStatus> = {
  RUNNING: "running",
  PENDING_REDRIVE: "running",
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  ABORTED: "aborted",
  TIMED_OUT: "timed-out",
};

/** The execution ARN of a render: the state machine ARN with `execution` and the name. */
export function executionArnOf(stateMachineArn: string, renderId: string): string {
  const arn = executionArnFor(stateMachineArn, renderId);
  if (arn === undefined) {
    throw new ConfigError(
      "stateMachineArn",
      `must be a state machine ARN (${STATE_MACHINE_ARN_SHAPE}), got ${
        JSON.stringify(stateMachineArn)
      }`,
    );
  }
  return arn;
}

async function readHistory(client: SFNClient, executionArn: string): Promise<HistoryEvent[]> {
  const events: HistoryEvent[] = [];
  let nextToken: string | undefined;
  do {
    const page = await client.send(
      new GetExecutionHistoryCommand({ executionArn, nextToken, maxResults: 1000 }),
    );
    events.push(...(page.events ?? []));
    nextToken = page.nextToken;
  } while (nextToken);
  return events;
}

async function readJsonObject(
  client: S3Client,
  bucket: string,
  key: string,
): Promise<Record<string, unknown> | undefined> {
  try {
    const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const value = JSON.parse(await object.Body!.transformToString());
    return typeof value === "object" && value !== null && !Array.isArray(value) ? value : undefined;
  } catch {
    return undefined; // absent, unreadable or not JSON: the history is enough
  }
}

const num = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) ? value : undefined;

interface PlannedChunk {
  index: number;
  frames: number;
}

/** What the history says about the plan, the chunks and the task time. */
function readEvents(events: HistoryEvent[], now: number) {
  let framesTotal: number | undefined;
  let chunks: PlannedChunk[] | undefined;
  let mapLength: number | undefined;
  const done = new Set<number>();
  const iterationStart = new Map<number, number>();
  const taskStart = new Map<string, number>();
  let taskMs = 0;
  let transitions = 0;
  const errors: string[] = [];
  const time = (e: HistoryEvent) => e.timestamp?.getTime() ?? now;
  // Attempts per chunk: renderChunk invocations name their chunk in their input; a failed
  // attempt is the chunk its cause names, else the only chunk attempt still open.
  const attempts = new Map<number | undefined, ChunkRetry>();
  const open: number[] = [];
  const attempt = (index: number | undefined): ChunkRetry => {
    let entry = attempts.get(index);
    if (!entry) attempts.set(index, entry = { index, attempts: 0, errors: [] });
    return entry;
  };
  const settle = (index: number | undefined): void => {
    const at = index === undefined ? -1 : open.indexOf(index);
    if (at >= 0) open.splice(at, 1);
  };

  for (const e of events) {
    const type = e.type ?? "";
    if (type.endsWith("StateEntered")) transitions++;
    if (type === "LambdaFunctionScheduled") {
      try {
        const payload = JSON.parse(e.lambdaFunctionScheduledEventDetails?.input ?? "null");
        const index = num(payload?.chunk?.index);
        if (payload?.task === "renderChunk" && index !== undefined) {
          attempt(index).attempts++;
          open.push(index);
        }
      } catch {
        // not a chunk's payload
      }
    } else if (type === "LambdaFunctionSucceeded") {
      try {
        const result = JSON.parse(e.lambdaFunctionSucceededEventDetails?.output ?? "null");
        if (typeof result?.key === "string") settle(num(result.index));
      } catch {
        // not a chunk's result
      }
    } else if (type === "LambdaFunctionFailed" || type === "LambdaFunctionTimedOut") {
      const d = e.lambdaFunctionFailedEventDetails ?? e.lambdaFunctionTimedOutEventDetails;
      const cause = d?.cause ?? "";
      const named = cause.match(/\bchunk (\d+)\b/);
      const index = named ? Number(named[1]) : open.length === 1 ? open[0] : undefined;
      if (named || open.length > 0) {
        settle(index);
        attempt(index).errors.push(`${d?.error ?? "Error"}: ${cause}`);
      }
    }
    if (type === "TaskStateEntered") {
      const name = e.stateEnteredEventDetails?.name ?? "";
      taskStart.set(name, time(e));
    } else if (type === "TaskStateExited") {
      const name = e.stateExitedEventDetails?.name ?? "";
      const start = taskStart.get(name);
      if (start !== undefined) taskMs += time(e) - start;
      taskStart.delete(name);
      if (name === STATE_NAMES.plan && e.stateExitedEventDetails?.output) {
        try {
          const plan = JSON.parse(e.stateExitedEventDetails.output);
          framesTotal = num(plan.totalFrames);
          if (Array.isArray(plan.chunks)) {
            chunks = plan.chunks.map((c: Record<string, unknown>, i: number) => ({
              index: num(c.index) ?? i,
              frames: num(c.frames) ?? 0,
            }));
          }
        } catch {
          // not the plan's JSON: count chunks from the Map instead
        }
      }
    } else if (type === "MapStateStarted") {
      mapLength = e.mapStateStartedEventDetails?.length;
    } else if (type === "MapIterationStarted") {
      const index = e.mapIterationStartedEventDetails?.index;
      if (index !== undefined) iterationStart.set(index, time(e));
    } else if (
      type === "MapIterationSucceeded" || type === "MapIterationFailed" ||
      type === "MapIterationAborted"
    ) {
      const details = e.mapIterationSucceededEventDetails ?? e.mapIterationFailedEventDetails ??
        e.mapIterationAbortedEventDetails;
      const index = details?.index;
      if (index === undefined) continue;
      if (type === "MapIterationSucceeded") done.add(index);
      const start = iterationStart.get(index);
      if (start !== undefined) taskMs += time(e) - start;
      iterationStart.delete(index);
    } else if (type === "ExecutionFailed") {
      const d = e.executionFailedEventDetails;
      errors.push(`${d?.error ?? "Error"}: ${d?.cause ?? "the execution failed"}`);
    } else if (type === "ExecutionTimedOut") {
      const d = e.executionTimedOutEventDetails;
      errors.push(`${d?.error ?? "States.Timeout"}: ${d?.cause ?? "the execution timed out"}`);
    } else if (type === "ExecutionAborted") {
      const d = e.executionAbortedEventDetails;
      errors.push(`${d?.error ?? "Aborted"}: ${d?.cause ?? "the execution was stopped"}`);
    }
  }
  // Tasks and iterations still running count up to now.
  for (const start of [...taskStart.values(), ...iterationStart.values()]) taskMs += now - start;
  const retries = [...attempts.values()].filter((a) => a.attempts > 1 || a.errors.length > 0)
    .map((a) => a.index === undefined ? { attempts: a.attempts, errors: a.errors } : a);
  return { framesTotal, chunks, mapLength, done, taskMs, transitions, errors, retries };
}

/**
 * Where a distributed render is, from `DescribeExecution` and `GetExecutionHistory`, plus
 * the worker's progress objects when they exist: `renders/<renderId>/progress.json`
 * (numbers `framesTotal`, `chunksTotal`, and `framesDone`, `chunksDone`, `errors` when
 * present) and `renders/<renderId>/chunks/<index>.json`, which the worker writes once a
 * chunk is uploaded (`{ index, from, to, frames, key, bytes, renderedAt }`: the chunk
 * counts as done) or, for partial progress, with a number `framesDone` (or a string
 * `error`). Absent or unreadable objects are ignored.
 *
 * Chunks are done when their Map iteration succeeded; a failed chunk's error names the
 * chunk and its frames (`chunk 3 (frames 90-119) failed: …`). `retries` lists the chunks
 * the workflow retried, with their attempts and each failed attempt's error, from the
 * history's `LambdaFunctionScheduled` / `LambdaFunctionFailed` events. The cost estimate
 * assumes Lambda at $0.0000166667 per GB-second (x86) times `memoryMb` for the run time of
 * every function invocation (failed attempts included; the wait for a free instance and
 * retry back-off not), plus $0.000025 per state transition; request charges and S3 are not
 * included.
 *
 * @example
 * ```ts no_run
 * import { getRenderProgress } from "@vid/cli";
 *
 * const executionArn = "arn:aws:states:us-east-1:123456789012:execution:vid-render:r-abc";
 * const p = await getRenderProgress({ executionArn });
 * console.log(p.status, `${p.chunksDone}/${p.chunksTotal}`, p.outputLocation ?? "");
 * ```
 */
export async function getRenderProgress(
  options: RenderProgressOptions,
): Promise<LambdaRenderProgress> {
  const { executionArn, described, events } = await describeRender(options);
  let input: Partial<ExecutionInput> = {};
  try {
    input = JSON.parse(described.input ?? "{}");
  } catch {
    // keep the defaults
  }
  const renderId = input.renderId ?? described.name ?? options.renderId ?? "";
  const bucketName = options.bucketName ?? input.bucketName ?? "";
  const outputKey = input.outputKey ?? "";
  const status = STATUS[described.status ?? ""] ?? "running";
  const now = described.stopDate?.getTime() ?? Date.now();
  const seen = readEvents(events, now);

  const tally: ProgressTally = {
    chunksTotal: seen.chunks?.length ?? seen.mapLength ?? 0,
    chunksDone: seen.done.size,
    framesTotal: seen.framesTotal,
    framesDone: seen.chunks
      ? seen.chunks.filter((c) => seen.done.has(c.index)).reduce((sum, c) => sum + c.frames, 0)
      : undefined,
    errors: [...seen.errors],
  };
  if (status === "failed" && tally.errors.length === 0 && described.cause) {
    tally.errors.push(`${described.error ?? "Error"}: ${described.cause}`);
  }
  if (options.s3 !== false && bucketName && renderId) {
    const ownS3 = !(options.s3 instanceof S3Client);
    const s3 = options.s3 instanceof S3Client
      ? options.s3
      : s3ClientFor(options.s3, arnRegion(executionArn));
    try {
      await addStoredProgress(tally, s3, bucketName, renderId, status === "running", seen);
    } finally {
      if (ownS3) s3.destroy();
    }
  }
  const { chunksTotal, chunksDone, framesTotal, framesDone, errors } = tally;

  const memoryMb = options.memoryMb ?? DEFAULT_LAMBDA_MEMORY_MB;
  // Function run time when the history pairs invocations with their starts (AWS, the local
  // stack); else the task and iteration spans.
  const runMs = functionRunMs(events, now) ?? seen.taskMs;
  const lambdaGbSeconds = (runMs / 1000) * (memoryMb / 1024);
  const usd = lambdaGbSeconds * LAMBDA_USD_PER_GB_SECOND +
    seen.transitions * USD_PER_STATE_TRANSITION;
  return {
    renderId,
    executionArn,
    status,
    chunksDone: status === "succeeded" ? Math.max(chunksDone, chunksTotal) : chunksDone,
    chunksTotal,
    framesDone: status === "succeeded" && framesTotal !== undefined ? framesTotal : framesDone,
    framesTotal,
    // Lambda's JSON causes and the worker's temporary paths, as a person reads them.
    errors: errors.map(readableExecutionError),
    retries: seen.retries.map((r) => ({ ...r, errors: r.errors.map(readableExecutionError) })),
    bucketName,
    outputKey,
    outputLocation: status === "succeeded" && bucketName && outputKey
      ? `s3://${bucketName}/${outputKey}`
      : undefined,
    costEstimate: { lambdaGbSeconds, usd, stateTransitions: seen.transitions },
    startedAt: described.startDate,
    stoppedAt: described.stopDate,
  };
}

/** The execution named by `options` (its ARN, or render id and state machine) and its history. */
async function describeRender(options: RenderProgressOptions): Promise<{
  executionArn: string;
  described: DescribeExecutionCommandOutput;
  events: HistoryEvent[];
}> {
  let executionArn = options.executionArn;
  if (!executionArn) {
    if (!options.renderId || !options.stateMachineArn) {
      throw new ConfigError(
        "executionArn",
        "pass executionArn, or renderId together with stateMachineArn",
      );
    }
    executionArn = executionArnOf(options.stateMachineArn, options.renderId);
  }
  const ownSfn = !(options.sfn instanceof SFNClient);
  const sfn = options.sfn instanceof SFNClient
    ? options.sfn
    : sfnClientFor(options.sfn, executionArn);
  try {
    const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    const events = await readHistory(sfn, executionArn);
    return { executionArn, described, events };
  } catch (error) {
    // AWS says `Execution Does Not Exist: '<arn>'`; download and cancel say which render.
    if (isRenderNotFound(error)) throw renderNotFound(executionArn, error);
    throw error;
  } finally {
    if (ownSfn) sfn.destroy();
  }
}

/** The counts of a render's progress, from its history and then its stored objects. */
interface ProgressTally {
  chunksTotal: number;
  chunksDone: number;
  framesTotal?: number;
  framesDone?: number;
  errors: string[];
}

/**
 * Adds what the render's objects in the bucket say to `tally`: `progress.json` (the
 * worker's totals) and, while it runs, each pending chunk's own progress object (frames of
 * chunks still rendering, chunks uploaded but not yet recorded, chunk errors).
 */
async function addStoredProgress(
  tally: ProgressTally,
  s3: S3Client,
  bucketName: string,
  renderId: string,
  running: boolean,
  seen: ReturnType<typeof readEvents>,
): Promise<void> {
  const { errors } = tally;
  const base = `renders/${renderId}/`;
  const progress = await readJsonObject(s3, bucketName, `${base}progress.json`);
  if (progress) {
    tally.chunksTotal = Math.max(tally.chunksTotal, num(progress.chunksTotal) ?? 0);
    tally.chunksDone = Math.max(tally.chunksDone, num(progress.chunksDone) ?? 0);
    tally.framesTotal = tally.framesTotal ?? num(progress.framesTotal);
    const frames = num(progress.framesDone);
    if (frames !== undefined) tally.framesDone = Math.max(tally.framesDone ?? 0, frames);
    if (Array.isArray(progress.errors)) {
      for (const e of progress.errors) {
        if (typeof e === "string" && !errors.includes(e)) errors.push(e);
      }
    }
  }
  if (!running || !seen.chunks) return;
  // Frames of chunks still rendering, from their own progress objects.
  const pending = seen.chunks.filter((c) => !seen.done.has(c.index));
  const partial = await Promise.all(
    pending.map((c) => readJsonObject(s3, bucketName, `${base}chunks/${c.index}.json`)),
  );
  let extra = 0;
  partial.forEach((chunk, i) => {
    if (!chunk) return;
    const partialFrames = num(chunk.framesDone);
    if (partialFrames !== undefined) {
      extra += Math.min(partialFrames, pending[i].frames);
    } else if (typeof chunk.error !== "string") {
      // The worker writes the object once the chunk is uploaded: the chunk is done,
      // its Map iteration just not recorded yet.
      extra += pending[i].frames;
      tally.chunksDone++;
    }
    if (typeof chunk.error === "string") {
      const message = `chunk ${pending[i].index}: ${chunk.error}`;
      if (!errors.includes(message)) errors.push(message);
    }
  });
  if (extra > 0) tally.framesDone = (tally.framesDone ?? 0) + extra;
}
