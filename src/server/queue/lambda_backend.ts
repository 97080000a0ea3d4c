/**
 * The `lambda` render backend of `vid server`: each render runs as one execution of the
 * distributed workflow (Step Functions + Lambda, or the local stack), through the SDK of
 * `src/lambda/sdk.ts`.
 *
 * For a render it:
 * 1. unpacks the asset's project zip and uploads it as a site with `deploySite` (content
 *    addressed: a project already in the bucket is not uploaded again);
 * 2. starts one execution with `renderToLambda`, named after the render id, and stores its
 *    ARN in the render's row (`execution_arn`) — a restarted server resumes polling that
 *    execution, and one killed between the start and the write finds it again by name, so
 *    a render never gets a second execution;
 * 3. polls `getRenderProgress` and writes the fraction of frames (else chunks) done into
 *    the render's `progress`;
 * 4. on success puts the output into the server's storage as `renders/<id>/video.<format>`:
 *    copied from the render bucket, or, when the storage is an S3 storage on the render
 *    bucket itself, written there directly by the workflow (no copy at all);
 * 5. takes the thumbnail from the output with ffmpeg at the time a local render would
 *    (1 s in, or half of a shorter video): no browser on the server.
 *
 * A failed execution fails the render with the execution's error, which names the chunk
 * and its frames (`chunk 1 (frames 10-19) failed: …`); the queue refunds it as usual.
 *
 * The server's limits hold here as on the local backend: `--frame-timeout` goes into the
 * workflow's config (each chunk worker's frame deadline), and the wall-clock budget
 * (`--max-render-seconds`, by default from the frames) counts from the claim. When it
 * passes, the execution is stopped (StopExecution: no more chunks scheduled or paid for)
 * and the render fails with `RenderBudgetError` and is refunded. A restarted server
 * resuming an execution gives it a fresh budget from its new claim.
 *
 * @module
 */

import { log } from "../log.ts";
import { readableExecutionError } from "../../lambda/execution_error.ts";
import { GetObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import type { SFNClient } from "@aws-sdk/client-sfn";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import type { RenderConfig } from "../../lambda/config.ts";
import {
  deploySite,
  getRenderProgress,
  type LambdaRenderProgress,
  renderToLambda,
  type S3Options,
} from "../../lambda/sdk.ts";
import type { ServerContext } from "../context.ts";
import { setExecutionArn } from "./renders.ts";
import {
  type LocalBackendLimits,
  RenderBudgetError,
  renderBudgetSeconds,
} from "./local_backend.ts";
import { unpackProject } from "./unpack_project.ts";
import { thumbnailFromVideo } from "./thumbnail.ts";
import {
  type LambdaBackendConfig,
  type RenderBackend,
  RenderDeletedError,
  type RenderJob,
} from "./render_backend.ts";
import { cancelRender } from "../../lambda/renders.ts";
import { isRenderNotFound } from "../../lambda/stack_error.ts";
import { S3Storage } from "../storage/storage_s3.ts";
import { linkSignals, sleep } from "../../util/async.ts";
import { s3ClientFor, sfnClientFor } from "../../aws/clients.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

/**
 * A render could not be handed to the distributed backend, or its execution did not
 * succeed. `field` is what is at fault: `variables.<key>`, `executionArn` or `execution`.
 */
export class LambdaBackendError extends VidError {
  /** Always `"LambdaBackendError"`. */
  override name = "LambdaBackendError";
  /** What is at fault. */
  override readonly field: string;
  /**
   * @param field What is at fault.
   * @param message What happened and, where there is one, the fix.
   */
  constructor(field: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
  }
}

/** Progress reads that may fail in a row (network blips, throttling) before the render fails. */
const POLL_FAILURES_TOLERATED = 5;

/** The storage key of a render's video. */
function videoKey(job: RenderJob): string {
  return `renders/${job.id}/video.${job.request.format}`;
}

/** The render configuration the workflow gets for a server render. */
export function lambdaRenderConfig(
  job: RenderJob,
  config: LambdaBackendConfig,
  limits: LocalBackendLimits = {},
): RenderConfig {
  const variables: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(job.request.variables)) {
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") {
      throw new LambdaBackendError(
        `variables.${key}`,
        `variable ${key} is ${
          value === null ? "null" : typeof value
        }: the distributed backend takes string, number and boolean values (pass media as URLs)`,
      );
    }
    variables[key] = value;
  }
  return {
    fps: job.request.fps,
    width: job.width,
    height: job.height,
    format: job.request.format,
    quality: job.request.quality,
    ...(job.request.loudness !== undefined ? { loudness: job.request.loudness } : {}),
    variables,
    ...(config.chunkSize !== undefined ? { chunkSize: config.chunkSize } : {}),
    ...(config.maxParallelChunks !== undefined
      ? { maxParallelChunks: config.maxParallelChunks }
      : {}),
    ...(limits.frameTimeoutMs !== undefined ? { frameTimeoutMs: limits.frameTimeoutMs } : {}),
  };
}

/** Fraction done: frames when known, else chunks. */
function fractionDone(progress: LambdaRenderProgress): number {
  if (progress.framesTotal && progress.framesDone !== undefined) {
    return progress.framesDone / progress.framesTotal;
  }
  return progress.chunksTotal > 0 ? progress.chunksDone / progress.chunksTotal : 0;
}

/** What the backend's steps share: its configuration and the AWS clients made from it. */
interface LambdaBackendClients {
  config: LambdaBackendConfig;
  limits: LocalBackendLimits;
  s3Options: S3Options;
  s3: S3Client;
  sfn: SFNClient;
}

/** The object key the workflow writes the video to, and whether that is the storage's own. */
function outputOf(
  backend: LambdaBackendClients,
  ctx: ServerContext,
  job: RenderJob,
): { key: string; inStorage: boolean } {
  const storage = ctx.storage;
  const sameBucket = storage instanceof S3Storage && storage.bucket === backend.config.bucketName &&
    (storage.endpoint ?? "").replace(/\/+$/, "") === (backend.config.s3Endpoint ?? "");
  if (!sameBucket) return { key: videoKey(job), inStorage: false };
  return {
    key: storage.prefix ? `${storage.prefix}/${videoKey(job)}` : videoKey(job),
    inStorage: true,
  };
}

/** The execution named after the render, when an earlier run started it. */
async function startedEarlier(
  backend: LambdaBackendClients,
  job: RenderJob,
): Promise<string | undefined> {
  try {
    const found = await getRenderProgress({
      renderId: job.id,
      stateMachineArn: backend.config.stateMachineArn,
      sfn: backend.sfn,
      s3: false,
    });
    return found.executionArn;
  } catch (error) {
    if (isRenderNotFound(error)) return undefined;
    throw error;
  }
}

/** Deploys the render's project as a site and starts its execution; returns the execution ARN. */
async function start(
  backend: LambdaBackendClients,
  ctx: ServerContext,
  job: RenderJob,
  dir: string,
): Promise<string> {
  const renderConfig = lambdaRenderConfig(job, backend.config, backend.limits);
  const project = await unpackProject(ctx, job, dir);
  const siteHandle = await deploySite({
    projectDir: project,
    bucketName: backend.config.bucketName,
    composition: job.request.composition,
    s3: backend.s3Options,
  });
  const handle = await renderToLambda({
    siteHandle,
    bucketName: backend.config.bucketName,
    stateMachineArn: backend.config.stateMachineArn,
    config: renderConfig,
    renderId: job.id,
    outputKey: outputOf(backend, ctx, job).key,
    sfn: backend.sfn,
    frames: Math.round(job.durationSeconds * job.request.fps),
    onWarning: (message) => log.warn(`render ${job.id}: ${message}`, { renderId: job.id }),
  });
  return handle.executionArn;
}

/** Polls the execution until it ends, writing progress into the render on the way. */
async function waitForEnd(
  backend: LambdaBackendClients,
  job: RenderJob,
  executionArn: string,
  signal: AbortSignal,
): Promise<LambdaRenderProgress> {
  let failures = 0;
  while (true) {
    signal.throwIfAborted();
    let progress: LambdaRenderProgress | undefined;
    try {
      progress = await getRenderProgress({
        executionArn,
        sfn: backend.sfn,
        s3: backend.s3,
        bucketName: backend.config.bucketName,
      });
      failures = 0;
    } catch (error) {
      if (isRenderNotFound(error)) {
        throw new LambdaBackendError(
          "executionArn",
          `the workflow execution ${executionArn} of this render no longer exists ` +
            `(was the state machine replaced?); submit the render again`,
        );
      }
      if (++failures > POLL_FAILURES_TOLERATED) throw error;
    }
    if (progress && progress.status !== "running") return progress;
    if (progress) job.setProgress(fractionDone(progress));
    await sleep(backend.config.pollIntervalMs, signal);
  }
}

/** Puts the finished video and its thumbnail into the server's storage. */
async function deliver(
  backend: LambdaBackendClients,
  ctx: ServerContext,
  job: RenderJob,
  progress: LambdaRenderProgress,
  dir: string,
): Promise<void> {
  const video = join(dir, `video.${job.request.format}`);
  const output = outputOf(backend, ctx, job);
  if (output.inStorage && progress.outputKey === output.key) {
    await ctx.storage.download(videoKey(job), video);
  } else {
    const object = await backend.s3.send(
      new GetObjectCommand({ Bucket: progress.bucketName, Key: progress.outputKey }),
    );
    const file = await Deno.open(video, { write: true, create: true, truncate: true });
    await object.Body!.transformToWebStream().pipeTo(file.writable);
    await ctx.storage.putFile(videoKey(job), video);
  }
  const thumbnail = join(dir, "thumbnail.jpg");
  await thumbnailFromVideo(video, job.durationSeconds, thumbnail, job.request.fps);
  await ctx.storage.putFile(`renders/${job.id}/thumbnail.jpg`, thumbnail, "image/jpeg");
}

/**
 * The distributed backend: renders run as workflow executions, at most
 * `config.maxInFlight` at once, each under the server's frame deadline and wall-clock
 * budget (`limits`, as the local backend's).
 *
 * @example
 * ```ts no_run
 * import { lambdaBackend } from "./lambda_backend.ts";
 * import { startQueue } from "./queue.ts";
 * import type { ServerContext } from "../context.ts";
 *
 * function startLambdaQueue(ctx: ServerContext) {
 *   return startQueue(ctx, lambdaBackend({
 *     kind: "lambda",
 *     bucketName: "vid-renders-123",
 *     stateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render",
 *     region: "us-east-1",
 *     s3ForcePathStyle: false,
 *     maxInFlight: 20,
 *     pollIntervalMs: 2000,
 *   }));
 * }
 * ```
 */
export function lambdaBackend(
  config: LambdaBackendConfig,
  limits: LocalBackendLimits = {},
): RenderBackend {
  const s3Options: S3Options = {
    region: config.region,
    endpoint: config.s3Endpoint,
    forcePathStyle: config.s3ForcePathStyle,
  };
  const s3 = s3ClientFor(s3Options);
  const sfn = sfnClientFor({ region: config.region, endpoint: config.sfnEndpoint });
  const backend: LambdaBackendClients = { config, limits, s3Options, s3, sfn };

  return {
    kind: "lambda",
    slots: config.maxInFlight,
    async render(ctx: ServerContext, job: RenderJob, queueSignal: AbortSignal): Promise<void> {
      const dir = await mkdtemp(join(ctx.workDir, `lambda-${job.id}-`));
      // The budget counts from the claim, upload and start included, as a local render's.
      const seconds = renderBudgetSeconds(
        job.durationSeconds,
        job.request.fps,
        limits.maxRenderSeconds,
      );
      const budget = new AbortController();
      const timer = setTimeout(
        () => budget.abort(new RenderBudgetError(seconds, limits.maxRenderSeconds !== undefined)),
        seconds * 1000,
      );
      const linked = linkSignals(queueSignal, budget.signal);
      const signal = linked.signal;
      try {
        let executionArn = job.executionArn ?? await startedEarlier(backend, job);
        if (!executionArn) {
          signal.throwIfAborted();
          executionArn = await start(backend, ctx, job, dir);
        }
        if (executionArn !== job.executionArn) await setExecutionArn(ctx.db, job.id, executionArn);
        const progress = await waitForEnd(backend, job, executionArn, signal).catch(
          async (error) => {
            // A deleted render, or one past its budget, stops its execution: no more chunks
            // are scheduled or paid for. (A server shutting down leaves it running; the next
            // start resumes polling it.)
            const reason = signal.reason;
            if (reason instanceof RenderDeletedError || reason instanceof RenderBudgetError) {
              const cause = reason instanceof RenderDeletedError
                ? `render ${job.id} was deleted`
                : `render ${job.id} passed its ${reason.seconds} s budget`;
              await cancelRender({ executionArn, sfn, cause })
                .catch((stop) =>
                  log.error(`render ${job.id}: cannot stop ${executionArn}: ${stop}`, {
                    renderId: job.id,
                  })
                );
            }
            throw error;
          },
        );
        if (progress.status !== "succeeded") {
          const why = progress.errors.length > 0
            ? progress.errors.map(readableExecutionError).join("; ")
            : `the execution ${progress.status}`;
          throw new LambdaBackendError(
            "execution",
            `distributed render ${progress.status}: ${why}`,
          );
        }
        await deliver(backend, ctx, job, progress, dir);
      } finally {
        linked.dispose();
        clearTimeout(timer);
        await rm(dir, { recursive: true, force: true });
      }
    },
    close(): void {
      s3.destroy();
      sfn.destroy();
    },
  };
}
