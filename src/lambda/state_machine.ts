/**
 * The workflow of one distributed render, as an Amazon States Language definition: the
 * single definition deployed by Pulumi and run by the local stack.
 *
 * ```
 * Plan (Task) ──> RenderChunks (Map over the plan's chunks) ──> Assemble (Task) ──> Done
 *                   └ RenderChunk (Task, Retry) ──Catch──> RecordChunkFailure ──> ChunkFailed (Fail)
 *                                               └─Catch (timeout)──> RecordChunkTimeout ──┘
 * ```
 *
 * Design choices:
 *
 * - Every task payload carries a `task` discriminator (`"plan" | "renderChunk" |
 *   "assemble"`), so one Lambda function can serve all three (`{ functionArn }`): one
 *   bundle, one role, one memory size, and `vid lambda deploy --concurrency` reserves
 *   concurrency for the only function there is. Three functions (`{ planFunctionArn,
 *   renderFunctionArn, assembleFunctionArn }`) get the same payloads.
 * - Tasks name the function ARN as `Resource` (the direct Lambda form): the task's result
 *   is the function's return value, and a function error surfaces as its `errorType`
 *   with a JSON `Cause`. aws-local-stepfunctions runs this form; it has no
 *   `arn:aws:states:::lambda:invoke` integration.
 * - The Map's concurrency comes from `MaxConcurrencyPath: "$.maxParallelChunks"`, read
 *   from the plan's result (the planner applies the default of 16). A static
 *   `MaxConcurrency` would fix one value for every render of the stack; the path form
 *   (supported by Step Functions and by aws-local-stepfunctions) lets each render carry
 *   its own `maxParallelChunks`. The planner never returns more chunks than that anyway,
 *   so the cap is a guard.
 * - `assemble` needs the composition's media to mix the soundtrack; chunk 0's result carries
 *   them (`ChunkResult.media`: what its page discovered, site files as site paths), so the
 *   assemble invocation launches no browser. They reach it with the other chunk results.
 * - States carry only small data: the plan's result, then the chunk results. Each task
 *   reads the execution input from `$$.Execution.Input` in its `Parameters` /
 *   `ItemSelector`, so an input close to the 256 KiB limit is not copied into the state
 *   (whose size has the same limit). The Map iteration's own state holds the input once.
 * - Retries, per task: Lambda service errors and throttles (`Lambda.TooManyRequestsException`
 *   etc.) back off with full jitter up to `throttleRetries` times; a timeout
 *   (`States.Timeout`, `Sandbox.Timedout`) is not retried, since a chunk that hit the
 *   15-minute cap would hit it again; nor is an error of the project or the request
 *   ({@linkcode NON_RETRYABLE_ERRORS}: a file missing from the project, a bad composition),
 *   which would fail, and be billed, the same way again; any other task error (a browser
 *   crash, a failed upload) is retried `retries` times.
 * - A chunk that still fails is caught inside its Map iteration, where the chunk is known:
 *   `RecordChunkFailure` builds the cause `chunk <i> (frames <from>-<to>) failed: <cause>`
 *   and `ChunkFailed` fails the iteration with the chunk's own error name. The Map, and
 *   so the execution, fail with that error and cause.
 * - A chunk that hit the time cap (`States.Timeout`, `Sandbox.Timedout`) is caught first, by
 *   its own Catch: `RecordChunkTimeout` fails the iteration with the error
 *   {@linkcode CHUNK_TIMED_OUT} and the cause `chunk <i> (frames <from>-<to>) hit the <n> s
 *   function time cap: use smaller chunks (...) or more memory (...)`, so the fix reaches
 *   `getRenderProgress().errors` on AWS and locally alike, not a bare `States.Timeout`.
 *
 * @module
 */

import { type FrameRate, frameRateValue } from "../composition/frame_rate.ts";
import { type Chunk, chunkPlan, DEFAULT_MAX_PARALLEL_CHUNKS } from "../render/chunk_plan.ts";
import type { ExecutionInput } from "./config.ts";
// config.fps, parsed the one way every reader of the config parses it.
import { configFrameRate } from "../request/execution_input.ts";

/** The task a function invocation performs. */
export type TaskName = "plan" | "renderChunk" | "assemble";

/** Lambda functions of the workflow: one function for every task, or one per task. */
export type WorkflowFunctions =
  | { functionArn: string }
  | { planFunctionArn: string; renderFunctionArn: string; assembleFunctionArn: string };

/** Options of {@linkcode stateMachineDefinition}. */
export interface StateMachineOptions {
  /** Seconds a task may run before `States.Timeout`: the function time cap. @default 900 */
  taskTimeoutSeconds?: number;
  /** Retries of a task that failed (not a timeout, not a Lambda service error). @default 2 */
  retries?: number;
  /** Retries of a task refused by Lambda (throttled, service error). @default 6 */
  throttleRetries?: number;
  /** Seconds before the first retry; doubles on each one. @default 2 */
  retryIntervalSeconds?: number;
  /** The definition's `Comment`. */
  comment?: string;
}

/** An Amazon States Language state, kept loose: the definition is plain JSON. */
export type AslState = Record<string, unknown>;

/** An Amazon States Language definition. */
export interface AslDefinition {
  /** Free text describing the workflow. */
  Comment?: string;
  /** Name of the first state. */
  StartAt: string;
  /** Every top-level state, by name. */
  States: Record<string, AslState>;
}

/** Names of the states, as they appear in execution histories. */
export const STATE_NAMES = {
  plan: "Plan",
  map: "RenderChunks",
  renderChunk: "RenderChunk",
  recordChunkFailure: "RecordChunkFailure",
  recordChunkTimeout: "RecordChunkTimeout",
  chunkFailed: "ChunkFailed",
  assemble: "Assemble",
  done: "Done",
} as const;

/** Payload of the `plan` task: the execution input. */
export interface PlanPayload {
  task: "plan";
  input: ExecutionInput;
  /** ISO 8601 start of the execution; the default of `config.epochMs`. */
  executionStartTime: string;
}

/** Result of the `plan` task; it becomes the state the Map reads. */
export interface PlanResult {
  /** Frames of the whole render. */
  totalFrames: number;
  /** Concurrency cap of the Map: `config.maxParallelChunks` with its default applied. */
  maxParallelChunks: number;
  /** The chunks, from the shared chunk planner. */
  chunks: Chunk[];
}

/** Payload of one `renderChunk` task. */
export interface RenderChunkPayload {
  task: "renderChunk";
  input: ExecutionInput;
  chunk: Chunk;
  totalFrames: number;
  executionStartTime: string;
}

/**
 * A `<video>` or `<audio>` element of the composition as a chunk's page found it, portable to
 * another invocation: a source served from the site is given as its path inside the site.
 * The fields are those of the page runtime's `MediaDescriptor`, spelled out here because the
 * Pulumi program compiles this module without the DOM types that one needs.
 */
export interface ChunkMedia {
  /** The element's tag. */
  kind: "video" | "audio";
  /** A path inside the site when `site`, else the absolute URL of the source. */
  src: string;
  /** True: `src` is a path inside the site (`sounds/a.wav`); false: an absolute URL. */
  site: boolean;
  /** Seconds on the composition timeline when it starts (`data-start`). */
  start: number;
  /** Seconds into the source where it starts (`data-media-start`). */
  mediaStart: number;
  /** Null when it plays to the end of its source (or of the composition). */
  duration: number | null;
  /** Gain (`data-volume`). */
  volume: number;
  /** The element's `muted` attribute. */
  muted: boolean;
  /** The element's `loop` attribute. */
  loop: boolean;
  /** Speed of the source (`data-playback-rate`). */
  playbackRate: number;
  /** The element as messages name it (`<audio id="music">`). */
  element?: string;
  /** Its audio automation attributes as written (`data-fade-in`, keyframes, ducking). */
  audio?: {
    volume?: string;
    fadeIn?: string;
    fadeOut?: string;
    duck?: string;
    voice?: boolean;
  };
}

/** Result of a `renderChunk` task: where the chunk's file was written. */
export interface ChunkResult {
  /** The chunk's index in the plan. */
  index: number;
  /** Object key of the chunk file in the input's bucket. */
  key: string;
  /**
   * Chunk 0 only: the composition's media, which every chunk's page discovers anyway, so
   * that `assemble` mixes the soundtrack without loading the page in a browser again.
   */
  media?: ChunkMedia[];
}

/** Payload of the `assemble` task. */
export interface AssemblePayload {
  task: "assemble";
  input: ExecutionInput;
  totalFrames: number;
  /** Results of the chunks, in chunk order. */
  chunks: ChunkResult[];
  executionStartTime: string;
}

/** What a workflow function receives. */
export type TaskPayload = PlanPayload | RenderChunkPayload | AssemblePayload;

/**
 * The `plan` task's result for a render of `totalFrames` frames, from the shared chunk
 * planner (`chunkSize`, `targetChunkFrames`, `maxParallelChunks` of the input's config).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { ExecutionInput } from "./config.ts";
 *
 * const input: ExecutionInput = {
 *   renderId: "r1",
 *   bucketName: "vid-renders",
 *   siteId: "site-0123456789abcdef",
 *   serveUrl: "https://vid-renders.s3.amazonaws.com/sites/site-0123456789abcdef/",
 *   outputKey: "renders/r1/out.mp4",
 *   config: { fps: 30 },
 * };
 * assert.equal(planChunks(input, 1800).chunks.length, 8); // 60 s at 30 fps, default chunking
 * ```
 */
export function planChunks(
  input: ExecutionInput,
  totalFrames: number,
  rate: FrameRate = configFrameRate(input.config),
): PlanResult {
  const { chunkSize, targetChunkFrames, maxParallelChunks } = input.config;
  return {
    totalFrames,
    maxParallelChunks: maxParallelChunks ?? DEFAULT_MAX_PARALLEL_CHUNKS,
    chunks: chunkPlan({
      frames: totalFrames,
      // The rate the worker renders at: the GOP grid is a second of its frames.
      fps: frameRateValue(rate),
      chunkSize,
      targetChunkFrames,
      maxParallelChunks,
    }),
  };
}

const LAMBDA_SERVICE_ERRORS = [
  "Lambda.ServiceException",
  "Lambda.AWSLambdaException",
  "Lambda.SdkClientException",
  "Lambda.TooManyRequestsException",
];
const TIMEOUT_ERRORS = ["States.Timeout", "Sandbox.Timedout"];
/**
 * Errors of the project or the request, not of the machine (the worker keeps an error's
 * name as the task's error): the same chunk fails the same way on every attempt, so
 * retrying one only bills it again. A file missing from the project is the common one.
 */
export const NON_RETRYABLE_ERRORS: readonly string[] = [
  "MissingAssetError",
  "CompositionError",
  "DeclarationsSyntaxError",
  "VariablesInputError",
  "StrictVariablesError",
  "RenderOptionError",
  "FrameRateError",
  "ConfigError",
];

/** Error name of an execution whose chunk hit the function time cap. */
export const CHUNK_TIMED_OUT = "ChunkTimedOut";

/** The fix named by a chunk time-out's cause. */
export const TIME_CAP_FIX =
  "use smaller chunks (--chunk-size / --target-chunk-frames) or more memory " +
  "(vid lambda deploy --memory)";

/**
 * The cause of a chunk that hit the time cap, as the workflow writes it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.match(
 *   chunkTimeoutCause({ index: 3, from: 90, to: 119 }, 900),
 *   /^chunk 3 \(frames 90-119\) hit the 900 s function time cap: use smaller chunks/,
 * );
 * ```
 */
export function chunkTimeoutCause(
  chunk: Pick<Chunk, "index" | "from" | "to">,
  timeoutSeconds: number,
): string {
  return `chunk ${chunk.index} (frames ${chunk.from}-${chunk.to}) hit the ${timeoutSeconds} s ` +
    `function time cap: ${TIME_CAP_FIX}`;
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a non-negative integer, got ${value}`);
  }
  return value;
}

/**
 * The workflow definition of a distributed render, for Step Functions (Standard) and the
 * local stack alike.
 *
 * @example
 * ```ts
 * const definition = stateMachineDefinition({
 *   functionArn: "arn:aws:lambda:us-east-1:123456789012:function:vid-render",
 * });
 * const json = JSON.stringify(definition); // the state machine's `definition`
 * ```
 *
 * @param functions One function ARN for every task, or one per task.
 * @param options Timeouts and retry policy.
 * @returns The ASL definition, a plain JSON object.
 */
export function stateMachineDefinition(
  functions: WorkflowFunctions,
  options: StateMachineOptions = {},
): AslDefinition {
  const arns = "functionArn" in functions
    ? {
      plan: functions.functionArn,
      renderChunk: functions.functionArn,
      assemble: functions.functionArn,
    }
    : {
      plan: functions.planFunctionArn,
      renderChunk: functions.renderFunctionArn,
      assemble: functions.assembleFunctionArn,
    };
  const timeout = options.taskTimeoutSeconds ?? 900;
  if (!Number.isInteger(timeout) || timeout < 1) {
    throw new RangeError(`taskTimeoutSeconds must be a positive integer, got ${timeout}`);
  }
  const interval = options.retryIntervalSeconds ?? 2;
  if (!Number.isInteger(interval) || interval < 1) {
    throw new RangeError(`retryIntervalSeconds must be a positive integer, got ${interval}`);
  }
  const retry = [
    {
      ErrorEquals: LAMBDA_SERVICE_ERRORS,
      IntervalSeconds: interval,
      BackoffRate: 2,
      MaxAttempts: nonNegativeInteger("throttleRetries", options.throttleRetries ?? 6),
      MaxDelaySeconds: 60,
      JitterStrategy: "FULL",
    },
    { ErrorEquals: TIMEOUT_ERRORS, MaxAttempts: 0 },
    { ErrorEquals: [...NON_RETRYABLE_ERRORS], MaxAttempts: 0 },
    {
      ErrorEquals: ["States.TaskFailed"],
      IntervalSeconds: interval,
      BackoffRate: 2,
      MaxAttempts: nonNegativeInteger("retries", options.retries ?? 2),
    },
  ];
  const S = STATE_NAMES;
  return {
    Comment: options.comment ?? "vid distributed render: plan, render chunks, assemble",
    StartAt: S.plan,
    States: {
      [S.plan]: {
        Type: "Task",
        Resource: arns.plan,
        Parameters: {
          task: "plan",
          "input.$": "$",
          "executionStartTime.$": "$$.Execution.StartTime",
        },
        TimeoutSeconds: timeout,
        Retry: retry,
        Next: S.map,
      },
      [S.map]: {
        Type: "Map",
        ItemsPath: "$.chunks",
        MaxConcurrencyPath: "$.maxParallelChunks",
        ItemSelector: {
          task: "renderChunk",
          "input.$": "$$.Execution.Input",
          "chunk.$": "$$.Map.Item.Value",
          "totalFrames.$": "$.totalFrames",
          "executionStartTime.$": "$$.Execution.StartTime",
        },
        ItemProcessor: {
          ProcessorConfig: { Mode: "INLINE" },
          StartAt: S.renderChunk,
          States: {
            [S.renderChunk]: {
              Type: "Task",
              Resource: arns.renderChunk,
              TimeoutSeconds: timeout,
              Retry: retry,
              Catch: [
                { ErrorEquals: TIMEOUT_ERRORS, ResultPath: "$.error", Next: S.recordChunkTimeout },
                { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: S.recordChunkFailure },
              ],
              End: true,
            },
            [S.recordChunkTimeout]: {
              Type: "Pass",
              Parameters: {
                Error: CHUNK_TIMED_OUT,
                // TIME_CAP_FIX has no quote, brace or backslash (States.Format escapes).
                "Cause.$": `States.Format('chunk {} (frames {}-{}) hit the ${timeout} s ` +
                  `function time cap: ${TIME_CAP_FIX}', $.chunk.index, $.chunk.from, $.chunk.to)`,
              },
              Next: S.chunkFailed,
            },
            [S.recordChunkFailure]: {
              Type: "Pass",
              Parameters: {
                "Error.$": "$.error.Error",
                "Cause.$":
                  "States.Format('chunk {} (frames {}-{}) failed: {}', $.chunk.index, $.chunk.from, $.chunk.to, $.error.Cause)",
              },
              Next: S.chunkFailed,
            },
            [S.chunkFailed]: { Type: "Fail", ErrorPath: "$.Error", CausePath: "$.Cause" },
          },
        },
        ResultPath: "$.chunkResults",
        Next: S.assemble,
      },
      [S.assemble]: {
        Type: "Task",
        Resource: arns.assemble,
        Parameters: {
          task: "assemble",
          "input.$": "$$.Execution.Input",
          "totalFrames.$": "$.totalFrames",
          "chunks.$": "$.chunkResults",
          "executionStartTime.$": "$$.Execution.StartTime",
        },
        TimeoutSeconds: timeout,
        Retry: retry,
        Next: S.done,
      },
      [S.done]: { Type: "Succeed" },
    },
  };
}
