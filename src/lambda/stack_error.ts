/**
 * AWS client failures of the distributed commands, said in the user's terms: which
 * bucket, workflow or credential is at fault and what to do, instead of the SDK's
 * `The specified bucket does not exist` (no name) or `Could not load credentials from any
 * providers`. The SDK functions pass every AWS error through {@linkcode explainStackError}
 * at the call that knows the bucket or the workflow, so the message names it.
 *
 * @module
 */
import { EXIT_FAILED, VidError } from "../errors.ts";
import { EndpointUnreachableError } from "../aws/deadline.ts";

/** A distributed render's stack is missing, unreachable or refuses the credentials. */
export class StackError extends VidError {
  /** Always `"StackError"`. */
  override name = "StackError";
  /** What is at fault: `bucketName`, `stateMachineArn`, `credentials`, `endpoint` or `siteId`. */
  override readonly field: string;
  /**
   * Creates the error.
   *
   * @param field What is at fault.
   * @param message What is wrong and what to do.
   * @param options The AWS error as `cause`, and the AWS error's name as `code` where a
   * caller tells one case from another by it (`ExecutionDoesNotExist`).
   */
  constructor(field: string, message: string, options?: ErrorOptions & { code?: string }) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause, code: options?.code });
    this.field = field;
  }
}

/**
 * The error for a render id or execution ARN the workflow does not know, in the same words
 * for `progress`, `download`, `cancel` and a batch's rows; its `code` is AWS's
 * `ExecutionDoesNotExist` (see {@linkcode isRenderNotFound}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const error = renderNotFound("arn:aws:states:us-east-1:1:execution:vid-render:r-x");
 * assert.match(error.message, /^no render r-x in this workflow/);
 * assert.ok(isRenderNotFound(error));
 * ```
 */
export function renderNotFound(executionArn: string, cause?: unknown): StackError {
  return new StackError(
    "render",
    `no render ${executionArn.split(":").pop()} in this workflow (${executionArn}): check the ` +
      "render id, --state-machine-arn and AWS_REGION",
    { cause, code: "ExecutionDoesNotExist" },
  );
}

/** Whether `error` says the execution does not exist: AWS's own, or {@linkcode renderNotFound}. */
export function isRenderNotFound(error: unknown): boolean {
  return (error as { name?: unknown } | undefined)?.name === "ExecutionDoesNotExist" ||
    (error instanceof StackError && error.code === "ExecutionDoesNotExist");
}

interface AwsError {
  name?: string;
  message?: string;
  code?: string;
  Code?: string;
  $metadata?: { httpStatusCode?: number };
}

/** Where the failing call went, to name it in the message. */
export interface StackErrorContext {
  /** The render bucket the call used. */
  bucketName?: string;
  /** The workflow the call used. */
  stateMachineArn?: string;
  /** The region of the call. */
  region?: string;
}

const NETWORK = /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|connection refused/i;
const REJECTED_CREDENTIALS = [
  "UnrecognizedClientException",
  "InvalidClientTokenId",
  "InvalidAccessKeyId",
  "SignatureDoesNotMatch",
  "InvalidSignatureException",
  "ExpiredToken",
  "ExpiredTokenException",
];

/**
 * Whether the stack cannot be reached at all (refused, unknown host, no answer within the
 * call's deadline): no call can work.
 */
export function isUnreachable(error: unknown): boolean {
  const e = error as AwsError;
  return NETWORK.test(`${e?.code ?? ""} ${e?.message ?? ""}`) ||
    error instanceof EndpointUnreachableError ||
    (error instanceof StackError && error.field === "endpoint");
}

/**
 * Whether `error` stops every call of the same kind (stack unreachable, no or rejected
 * credentials, no such bucket or workflow): a batch stops on it instead of failing each
 * row with the same message.
 */
export function isStackFatal(error: unknown): boolean {
  if (error instanceof StackError) return true;
  const e = error as AwsError;
  return isUnreachable(error) || e?.name === "CredentialsProviderError" ||
    REJECTED_CREDENTIALS.includes(e?.name ?? "") || e?.name === "NoSuchBucket" ||
    e?.name === "StateMachineDoesNotExist";
}

/**
 * The AWS error `error` as a {@linkcode StackError} naming what is at fault and the fix,
 * or `error` itself when it is none of the stack's (a bad request, a throttle).
 *
 * @example
 * ```ts no_run
 * import { PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
 * import { explainStackError } from "./stack_error.ts";
 *
 * const s3 = new S3Client({ region: "us-east-1" });
 * try {
 *   await s3.send(new PutObjectCommand({ Bucket: "vid-renders", Key: "k", Body: "x" }));
 * } catch (error) {
 *   throw explainStackError(error, { bucketName: "vid-renders" });
 * }
 * ```
 */
export function explainStackError(error: unknown, context: StackErrorContext = {}): unknown {
  if (error instanceof StackError) return error;
  const e = error as AwsError;
  const region = context.region ? ` in region ${context.region}` : "";
  const original = `${e?.name ?? "Error"}: ${e?.message ?? String(error)}`;
  if (
    e?.name === "CredentialsProviderError" || /Could not load credentials/.test(e?.message ?? "")
  ) {
    return new StackError(
      "credentials",
      "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or " +
        "AWS_PROFILE) for the account the stack is deployed in; for the local stack, run the " +
        "`export` lines `vid lambda local` prints",
      { cause: error },
    );
  }
  if (REJECTED_CREDENTIALS.includes(e?.name ?? "")) {
    return new StackError(
      "credentials",
      `the AWS credentials were rejected (${original}): check AWS_ACCESS_KEY_ID, ` +
        "AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (or AWS_PROFILE), and that they belong to " +
        "the account of the stack",
      { cause: error },
    );
  }
  if (
    e?.name === "NoSuchBucket" || /specified bucket does not exist/i.test(e?.message ?? "")
  ) {
    const name = context.bucketName ? `the bucket ${context.bucketName}` : "the render bucket";
    return new StackError(
      "bucketName",
      `${name} does not exist${region}: pass --bucket (env VID_LAMBDA_BUCKET) the ` +
        "RenderBucketName printed by `vid lambda deploy` (or `vid lambda local`), and check " +
        "AWS_REGION",
      { cause: error },
    );
  }
  if (e?.name === "StateMachineDoesNotExist") {
    const name = context.stateMachineArn ?? "the state machine";
    return new StackError(
      "stateMachineArn",
      `${name} does not exist: pass --state-machine-arn (env VID_LAMBDA_STATE_MACHINE_ARN) ` +
        "the RenderStateMachineArn printed by `vid lambda deploy` (or `vid lambda local`), " +
        "and check AWS_REGION",
      { cause: error },
    );
  }
  return error;
}
