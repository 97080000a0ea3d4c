/**
 * Reruns of a distributed batch: which attempt of a row exists, and whether a run of the
 * batch starts the next one. Apart from starting the rows (batch.ts), which asks here per row
 * and only carries the answer out, so the rerun rules read in one place.
 *
 * Resumable: a row's execution name (its render id) is `b-` and 40 hex digits of the
 * SHA-256 of its execution input (site, composition, bucket, outputKey, config), so the
 * same row of the same site always maps to the same execution. Attempt n > 1 of a row
 * is that name with `-a<n>`. Before starting, the attempts are looked up in order
 * (`DescribeExecution`) up to the first that does not exist; the latest one decides:
 * running or succeeded, the row is `already-started` with its ARN and nothing starts;
 * failed, timed out or aborted, the next attempt starts (`rerun: "failed"`, the default),
 * so a rerun of a batch finishes the job and is still resumable. `rerun: "all"` starts a
 * next attempt for every row not running; `rerun: "none"` never starts a second attempt.
 *
 * Once a row's execution history is gone (a restarted local stack, expired history on AWS),
 * its output object still says which render wrote it: {@linkcode renderedFrom} finds a row
 * whose output a render of the same inputs wrote, so it is not rendered again.
 *
 * @module
 */

import { HeadObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { DescribeExecutionCommand, type SFNClient } from "@aws-sdk/client-sfn";
import { RENDER_ID_METADATA } from "../batch/manifest.ts";
import { attemptRenderId, batchExecutionArn, MAX_ATTEMPTS } from "./batch_attempts.ts";
import { isRenderNotFound } from "./stack_error.ts";

/**
 * Which rows a rerun starts again: `failed` (default) starts a new attempt for rows whose
 * latest execution failed, timed out or was aborted; `all` for every row whose latest
 * execution is not running; `none` never starts a second attempt.
 */
export type BatchRerun = "failed" | "all" | "none";

/** The values of {@linkcode BatchRerun}, for flag parsing. */
export const BATCH_RERUN_VALUES: readonly BatchRerun[] = ["failed", "all", "none"];

/** A row's latest attempt, and whether the rerun rule starts the next one. */
export interface LatestAttempt {
  /** The latest attempt's number; 0 when the row has no execution. */
  attempt: number;
  /** The latest attempt's execution ARN, when there is one. */
  arn?: string;
  /** Whether to start attempt `attempt + 1`. */
  startNext: boolean;
}

/** The execution's ARN and status, or `undefined` when there is none. */
async function describeExecution(
  client: SFNClient,
  executionArn: string,
): Promise<{ arn: string; status: string } | undefined> {
  try {
    const described = await client.send(new DescribeExecutionCommand({ executionArn }));
    return { arn: described.executionArn ?? executionArn, status: described.status ?? "" };
  } catch (error) {
    if (isRenderNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * The row's latest attempt (walking `-a2`, `-a3`, … up to the first that does not exist),
 * and whether to start the next one.
 *
 * @example
 * ```ts no_run
 * import { SFNClient } from "@aws-sdk/client-sfn";
 *
 * const arn = "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render";
 * const found = await latestAttempt(new SFNClient({}), arn, `b-${"0".repeat(40)}`, "failed");
 * if (found.startNext) console.log(`start attempt ${found.attempt + 1}`);
 * ```
 *
 * @throws {Error} When the next attempt would be past {@linkcode MAX_ATTEMPTS}.
 */
export async function latestAttempt(
  client: SFNClient,
  stateMachineArn: string,
  baseId: string,
  rerun: BatchRerun,
): Promise<LatestAttempt> {
  let found: { attempt: number; arn: string; status: string } | undefined;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const described = await describeExecution(
      client,
      batchExecutionArn(stateMachineArn, attemptRenderId(baseId, attempt)),
    );
    if (!described) break;
    found = { attempt, ...described };
  }
  if (!found) return { attempt: 0, startNext: true };
  const running = found.status === "RUNNING" || found.status === "PENDING_REDRIVE";
  const failed = ["FAILED", "TIMED_OUT", "ABORTED"].includes(found.status);
  const startNext = !running && (rerun === "all" || (rerun === "failed" && failed));
  if (startNext && found.attempt >= MAX_ATTEMPTS) {
    throw new Error(
      `all ${MAX_ATTEMPTS} attempts of this row ended without success; fix the row (see ` +
        "`vid lambda progress --manifest`) and run the batch again",
    );
  }
  return { attempt: found.attempt, arn: found.arn, startNext };
}

/**
 * The render id on the row's output object when a render of this row (its first attempt or
 * a later one) wrote it; `undefined` when there is no object, it came from other inputs, or
 * it cannot be read (then the row renders, as it would have). `undefined` also without a
 * client (not looked up).
 *
 * @example
 * ```ts no_run
 * import { S3Client } from "@aws-sdk/client-s3";
 *
 * const baseId = `b-${"0".repeat(40)}`;
 * const renderId = await renderedFrom(new S3Client({}), "vid-renders", "out/a.mp4", baseId);
 * if (renderId) console.log(`out/a.mp4 was rendered by ${renderId}`);
 * ```
 */
export async function renderedFrom(
  s3: S3Client | undefined,
  bucketName: string,
  outputKey: string,
  baseId: string,
): Promise<string | undefined> {
  if (!s3) return undefined;
  try {
    const head = await s3.send(
      new HeadObjectCommand({ Bucket: bucketName, Key: outputKey }),
    );
    const renderId = head.Metadata?.[RENDER_ID_METADATA];
    return renderId !== undefined && renderId.replace(/-a\d+$/, "") === baseId
      ? renderId
      : undefined;
  } catch {
    return undefined;
  }
}
