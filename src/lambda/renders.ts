/**
 * What a user does with a distributed render after starting it, beyond polling:
 * {@linkcode cancelRender} stops its execution (`StopExecution`), {@linkcode downloadRender}
 * fetches its output to a local file (a temp file beside it, renamed once complete, so a
 * failed download never leaves a partial video), and {@linkcode renderOutputUrl} gives a
 * short-lived presigned URL of the output instead.
 *
 * A render is named by its execution ARN, or by its render id with the workflow; the
 * bucket and output key come from the execution's own input, so nothing else is needed.
 *
 * @module
 */

import { createWriteStream } from "node:fs";
import { rename, rm, stat } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { pipeline } from "node:stream/promises";
import type { Readable } from "node:stream";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { DescribeExecutionCommand, SFNClient, StopExecutionCommand } from "@aws-sdk/client-sfn";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import type { ExecutionInput } from "./config.ts";
import { executionArnOf, isNotFound, type LambdaRenderStatus } from "./sdk.ts";
import { s3ClientFor, type S3Options, sfnClientFor, type SfnOptions } from "../aws/clients.ts";
import { explainStackError, isRenderNotFound, renderNotFound, StackError } from "./stack_error.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/**
 * A ready `SFNClient` of `@aws-sdk/client-sfn`, kept by the caller; an internal alias (see
 * `ReadyS3Client` in sdk.ts).
 *
 * @internal
 */
type ReadySfnClient = SFNClient;

/**
 * A ready `S3Client` of `@aws-sdk/client-s3`, kept by the caller; an internal alias.
 *
 * @internal
 */
type ReadyS3Client = S3Client;

/** Which render: an execution ARN, or a render id with its workflow. */
export interface RenderRef {
  /** ARN of the execution. */
  executionArn?: string;
  /** Render id (the execution name), with `stateMachineArn`. */
  renderId?: string;
  /** The workflow, with `renderId`. */
  stateMachineArn?: string;
  /** Step Functions connection options, or a ready client (kept by the caller). */
  sfn?: SfnOptions | ReadySfnClient;
}

/** Options of {@linkcode cancelRender}. */
export interface CancelRenderOptions extends RenderRef {
  /** Recorded as the execution's cause. @default "cancelled by the user" */
  cause?: string;
}

/** What {@linkcode cancelRender} did. */
export interface CancelResult {
  /** ARN of the execution. */
  executionArn: string;
  /** Whether this call stopped it (false: it had already ended). */
  cancelled: boolean;
  /** Its status now (`aborted` when this call stopped it). */
  status: LambdaRenderStatus;
}

/** Options of {@linkcode downloadRender}. */
export interface DownloadRenderOptions extends RenderRef {
  /** Local file to write; written through a temp file beside it and a rename. */
  output: string;
  /** S3 connection options, or a ready client (kept by the caller). */
  s3?: S3Options | ReadyS3Client;
}

/** Options of {@linkcode renderOutputUrl}. */
export interface RenderOutputUrlOptions extends RenderRef {
  /** S3 connection options, or a ready client (kept by the caller). */
  s3?: S3Options | ReadyS3Client;
  /** Lifetime of the URL, seconds (1 to 604800). @default 3600 */
  expiresIn?: number;
}

/** Where a finished render's output is. */
export interface RenderOutput {
  /** ARN of the execution. */
  executionArn: string;
  /** Bucket of the output. */
  bucketName: string;
  /** Object key of the output. */
  outputKey: string;
}

/** The render cannot give what was asked (not finished, failed, no output). */
export class RenderStateError extends VidError {
  /** Always `"RenderStateError"`. */
  override name = "RenderStateError";
  /** Always `render`. */
  override readonly field = "render";
  /**
   * The render's status (`status`, as on every {@linkcode VidError}, is an HTTP status,
   * which this error has none of).
   */
  readonly renderStatus: LambdaRenderStatus;
  /**
   * Creates the error for a render in `status`.
   *
   * @param status The render's status.
   * @param message What is wrong and what to do.
   */
  constructor(status: LambdaRenderStatus, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.renderStatus = status;
  }
}

const STATUS: Record<string, LambdaRenderStatus> = {
  RUNNING: "running",
  PENDING_REDRIVE: "running",
  SUCCEEDED: "succeeded",
  FAILED: "failed",
  ABORTED: "aborted",
  TIMED_OUT: "timed-out",
};

function arnOf(ref: RenderRef): string {
  if (ref.executionArn) return ref.executionArn;
  if (!ref.renderId || !ref.stateMachineArn) {
    throw new StackError(
      "executionArn",
      "pass an execution ARN, or a render id with the state machine (--state-machine-arn, " +
        "env VID_LAMBDA_STATE_MACHINE_ARN)",
    );
  }
  return executionArnOf(ref.stateMachineArn, ref.renderId);
}

async function withSfn<T>(ref: RenderRef, arn: string, work: (c: SFNClient) => Promise<T>) {
  const own = !(ref.sfn instanceof SFNClient);
  const client = ref.sfn instanceof SFNClient ? ref.sfn : sfnClientFor(ref.sfn, arn);
  try {
    return await work(client);
  } catch (error) {
    if (isRenderNotFound(error)) throw renderNotFound(arn, error);
    throw explainStackError(error, {});
  } finally {
    if (own) client.destroy();
  }
}

/**
 * Stops a running render's execution (`StopExecution`): its chunks stop being scheduled,
 * and the render ends `aborted`. A render that already ended is left as it is
 * (`cancelled: false`).
 *
 * @example
 * ```ts no_run
 * import { cancelRender } from "@vid/cli";
 *
 * const executionArn = "arn:aws:states:us-east-1:123456789012:execution:vid-render:r-abc";
 * const result = await cancelRender({ executionArn });
 * console.log(result.cancelled ? "cancelled" : `already ${result.status}`);
 * ```
 */
export async function cancelRender(options: CancelRenderOptions): Promise<CancelResult> {
  const executionArn = arnOf(options);
  return await withSfn(options, executionArn, async (client) => {
    const before = await client.send(new DescribeExecutionCommand({ executionArn }));
    if (before.status !== "RUNNING" && before.status !== "PENDING_REDRIVE") {
      return { executionArn, cancelled: false, status: STATUS[before.status ?? ""] ?? "failed" };
    }
    await client.send(
      new StopExecutionCommand({
        executionArn,
        error: "Cancelled",
        cause: options.cause ?? "cancelled by the user",
      }),
    );
    const after = await client.send(new DescribeExecutionCommand({ executionArn }));
    return { executionArn, cancelled: true, status: STATUS[after.status ?? ""] ?? "aborted" };
  });
}

/**
 * The bucket and key of a succeeded render's output, from its execution input; a
 * {@linkcode RenderStateError} when the render is running or did not succeed.
 *
 * @example
 * ```ts no_run
 * import { renderOutput } from "./renders.ts";
 *
 * const executionArn = "arn:aws:states:us-east-1:123456789012:execution:vid-render:r-abc";
 * const { bucketName, outputKey } = await renderOutput({ executionArn });
 * ```
 */
export async function renderOutput(ref: RenderRef): Promise<RenderOutput> {
  const executionArn = arnOf(ref);
  const described = await withSfn(
    ref,
    executionArn,
    (client) => client.send(new DescribeExecutionCommand({ executionArn })),
  );
  const status = STATUS[described.status ?? ""] ?? "running";
  const id = described.name ?? executionArn.split(":").pop();
  if (status === "running") {
    throw new RenderStateError(
      status,
      `render ${id} is still running; wait for it (\`vid lambda progress ${id}\`) and try again`,
    );
  }
  if (status !== "succeeded") {
    throw new RenderStateError(
      status,
      `render ${id} ${status}, so it has no output; see its errors with \`vid lambda progress ` +
        `${id}\` and start it again`,
    );
  }
  let input: Partial<ExecutionInput> = {};
  try {
    input = JSON.parse(described.input ?? "{}");
  } catch {
    // checked below
  }
  if (!input.bucketName || !input.outputKey) {
    throw new RenderStateError(status, `render ${id}: its execution input names no output`);
  }
  return { executionArn, bucketName: input.bucketName, outputKey: input.outputKey };
}

/**
 * Downloads a succeeded render's output to `output`: streamed to a temp file in the same
 * folder, renamed once complete (a failed download leaves nothing behind). Returns where
 * it came from and the bytes written.
 *
 * @example
 * ```ts no_run
 * import { downloadRender } from "@vid/cli";
 *
 * const stateMachineArn = "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render";
 * await downloadRender({ renderId: "r-abc", stateMachineArn, output: "out.mp4" });
 * ```
 */
export async function downloadRender(
  options: DownloadRenderOptions,
): Promise<RenderOutput & { output: string; bytes: number }> {
  const folder = dirname(options.output);
  if (!(await stat(folder).then((info) => info.isDirectory(), () => false))) {
    throw new StackError(
      "output",
      `cannot write ${options.output}: the folder ${folder} does not exist; create it or pass ` +
        "another -o",
    );
  }
  const where = await renderOutput(options);
  const own = !(options.s3 instanceof S3Client);
  const client = options.s3 instanceof S3Client ? options.s3 : s3ClientFor(options.s3);
  const temp = join(
    dirname(options.output),
    `.${basename(options.output)}.${crypto.randomUUID()}.part`,
  );
  try {
    let object;
    try {
      object = await client.send(
        new GetObjectCommand({ Bucket: where.bucketName, Key: where.outputKey }),
      );
    } catch (error) {
      if ((error as { name?: string }).name !== "NoSuchBucket" && isNotFound(error)) {
        throw new RenderStateError(
          "succeeded",
          `the output s3://${where.bucketName}/${where.outputKey} is gone (deleted after the ` +
            "render?); render it again",
        );
      }
      throw explainStackError(error, { bucketName: where.bucketName });
    }
    let bytes = 0;
    const body = object.Body as Readable;
    body.on("data", (chunk: Uint8Array) => (bytes += chunk.length));
    await pipeline(body, createWriteStream(temp, { flags: "wx" }));
    await rename(temp, options.output);
    return { ...where, output: options.output, bytes };
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  } finally {
    if (own) client.destroy();
  }
}

/**
 * A presigned GET URL of a succeeded render's output, valid `expiresIn` seconds: share it,
 * or fetch it with any HTTP client. Re-create it rather than cache it.
 *
 * @example
 * ```ts no_run
 * import { renderOutputUrl } from "@vid/cli";
 *
 * const executionArn = "arn:aws:states:us-east-1:123456789012:execution:vid-render:r-abc";
 * const url = await renderOutputUrl({ executionArn, expiresIn: 600 });
 * ```
 */
export async function renderOutputUrl(
  options: RenderOutputUrlOptions,
): Promise<RenderOutput & { url: string; expiresIn: number }> {
  const expiresIn = options.expiresIn ?? 3600;
  if (!Number.isInteger(expiresIn) || expiresIn < 1 || expiresIn > 604800) {
    throw new StackError(
      "expiresIn",
      `expiresIn must be whole seconds from 1 to 604800 (7 days), got ${expiresIn}`,
    );
  }
  const where = await renderOutput(options);
  const own = !(options.s3 instanceof S3Client);
  const client = options.s3 instanceof S3Client ? options.s3 : s3ClientFor(options.s3);
  try {
    const url = await getSignedUrl(
      client,
      new GetObjectCommand({ Bucket: where.bucketName, Key: where.outputKey }),
      { expiresIn },
    );
    return { ...where, url, expiresIn };
  } catch (error) {
    throw explainStackError(error, { bucketName: where.bucketName });
  } finally {
    if (own) client.destroy();
  }
}
