/**
 * Connection helpers every `vid lambda` command shares: where the bucket and the workflow
 * are (flags, then the environment), the usage error of a missing one, the render
 * configuration of the shared render flags, and how a failure is reported (with the fix
 * for an unreachable stack). Its own module so the command files import it, never each
 * other.
 *
 * @module
 */

import { VidError } from "../errors.ts";
import { OPTIONS, type OptionValue, parseOption, RenderOptionError } from "../request/mod.ts";
import type { RenderConfig } from "../lambda/config.ts";
import type { S3Options, SfnOptions } from "../lambda/sdk.ts";
import { explainStackError } from "../lambda/stack_error.ts";
import { defaultRegion, s3OptionsFromEnv, sfnOptionsFromEnv } from "../aws/clients.ts";
import { reportError } from "./shared.ts";
import { flagProperty } from "./request_flags.ts";

export const ENV_HELP = "\n\nConnection (flags win over the environment):\n" +
  "  --bucket, VID_LAMBDA_BUCKET          render bucket (RenderBucketName)\n" +
  "  --state-machine-arn,\n" +
  "    VID_LAMBDA_STATE_MACHINE_ARN       the workflow (RenderStateMachineArn)\n" +
  "  --region, AWS_REGION                 AWS region (default: us-east-1)\n" +
  "  VID_S3_ENDPOINT                      S3-compatible endpoint (path-style)\n" +
  "  VID_SFN_ENDPOINT                     Step Functions-compatible endpoint\n" +
  "Credentials come from the AWS SDK's default chain (AWS_ACCESS_KEY_ID, ...).\n" +
  "`vid lambda local` prints these assignments for the local stack.";

/** A usage problem of a `vid lambda` command (exit 2). */
export class LambdaUsageError extends VidError {
  override name = "UsageError";
}

export interface ConnectionFlags {
  bucket?: string;
  stateMachineArn?: string;
  region?: string;
}

export interface Connection {
  region: string;
  s3: S3Options;
  sfn: SfnOptions;
  bucket(): string;
  stateMachineArn(): string;
}

export function connection(flags: ConnectionFlags): Connection {
  const env = (name: string) => Deno.env.get(name) || undefined;
  const region = flags.region ?? defaultRegion();
  return {
    region,
    s3: s3OptionsFromEnv(region),
    sfn: sfnOptionsFromEnv(region),
    bucket() {
      const bucket = flags.bucket ?? env("VID_LAMBDA_BUCKET");
      if (!bucket) {
        throw new LambdaUsageError(
          "no render bucket: pass --bucket or set VID_LAMBDA_BUCKET (the RenderBucketName " +
            "output of `vid lambda deploy`, or printed by `vid lambda local`)",
        );
      }
      return bucket;
    },
    stateMachineArn() {
      const arn = flags.stateMachineArn ?? env("VID_LAMBDA_STATE_MACHINE_ARN");
      if (!arn) {
        throw new LambdaUsageError(
          "no state machine: pass --state-machine-arn or set VID_LAMBDA_STATE_MACHINE_ARN (the " +
            "RenderStateMachineArn output of `vid lambda deploy`, or printed by `vid lambda local`)",
        );
      }
      return arn;
    },
  };
}

/**
 * The render options `vid lambda render` and `vid lambda render-batch` share, as their
 * declarations (`src/request/options.ts`) type them. Each command adds the flags with
 * `cliOption(OPTIONS.x)`: a generic helper adding them all makes commander's typed option
 * inference too deep for the type checker.
 */
export interface RenderConfigFlags {
  width?: OptionValue<typeof OPTIONS.width>;
  height?: OptionValue<typeof OPTIONS.height>;
  fps?: number;
  format?: OptionValue<typeof OPTIONS.videoFormat>;
  quality?: OptionValue<typeof OPTIONS.quality>;
  chunkSize?: OptionValue<typeof OPTIONS.chunkSize>;
  maxParallelChunks?: OptionValue<typeof OPTIONS.maxParallelChunks>;
  targetChunkFrames?: OptionValue<typeof OPTIONS.targetChunkFrames>;
  loudness?: OptionValue<typeof OPTIONS.loudness>;
  scale?: OptionValue<typeof OPTIONS.scale>;
  /** `--frame-timeout`, in milliseconds once parsed (commander names it after the flag). */
  frameTimeout?: OptionValue<typeof OPTIONS.frameTimeoutMs>;
}

/** The options whose flag value goes into the distributed `config` under their config field. */
const CONFIG_FLAGS = [
  OPTIONS.width,
  OPTIONS.height,
  OPTIONS.fps,
  OPTIONS.videoFormat,
  OPTIONS.quality,
  OPTIONS.chunkSize,
  OPTIONS.maxParallelChunks,
  OPTIONS.targetChunkFrames,
  OPTIONS.loudness,
  OPTIONS.scale,
  OPTIONS.frameTimeoutMs,
] as const;

/** The {@linkcode RenderConfig} of the shared render options; unset ones are left out. */
export function renderConfigFrom(flags: RenderConfigFlags): RenderConfig {
  const config: Record<string, unknown> = {};
  for (const declaration of CONFIG_FLAGS) {
    // Commander names a value after its flag (`frameTimeout`), not the declaration's key.
    const value = flags[flagProperty(declaration) as keyof RenderConfigFlags];
    if (value !== undefined) config[declaration.config!] = value;
  }
  // Each value passed its declaration's check when the flag was parsed.
  return config as RenderConfig;
}

/** Reserved concurrency of the render function, from the environment (deploy's --concurrency). */
export const RESERVED_ENV: string = OPTIONS.reservedConcurrency.env!;

/**
 * `VID_LAMBDA_RESERVED_CONCURRENCY` as a positive integer (the `--reserved-concurrency`
 * declaration's check), or `undefined` when unset.
 */
export function reservedConcurrencyFromEnv(): number | undefined {
  const raw = Deno.env.get(RESERVED_ENV);
  if (raw === undefined || raw === "") return undefined;
  try {
    return parseOption(OPTIONS.reservedConcurrency, raw);
  } catch (error) {
    if (!(error instanceof RenderOptionError)) throw error;
    throw new LambdaUsageError(`${RESERVED_ENV} ${error.detail}`);
  }
}

/** The function time cap for the warning: `VID_LAMBDA_TIMEOUT_SECONDS`, else 900. */
export function timeoutFromEnv(): number {
  const raw = Deno.env.get("VID_LAMBDA_TIMEOUT_SECONDS");
  if (!raw) return 900;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new LambdaUsageError(`VID_LAMBDA_TIMEOUT_SECONDS must be a positive integer, got ${raw}`);
  }
  return value;
}

export function fail(error: unknown, json: boolean | undefined): void {
  // AWS's own words (`Could not load credentials from any providers`) get the fix added.
  Deno.exitCode = reportError(hinted(explainStackError(error)), json);
}

/** A connection failure's message with the endpoints to check added; others unchanged. */
export function unreachableHint(message: string): string {
  if (!/ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT/.test(message)) return message;
  const endpoints = ["VID_S3_ENDPOINT", "VID_SFN_ENDPOINT"]
    .map((name) => `${name}=${Deno.env.get(name) ?? "(AWS)"}`)
    .join(", ");
  return `${message}: cannot reach the stack (${endpoints}); is \`vid lambda local\` still ` +
    "running, or are the endpoints and AWS_REGION right?";
}

/** `error` with {@linkcode unreachableHint} applied to its message. */
function hinted(error: unknown): unknown {
  if (!(error instanceof Error)) return error;
  const message = unreachableHint(error.message);
  if (message === error.message) return error;
  if (error instanceof VidError) {
    const { exitCode, field, code, status } = error;
    const out = new VidError(message, { exitCode, field, code, status, cause: error });
    out.name = error.name;
    return out;
  }
  const out = new Error(message);
  out.name = error.name;
  return out;
}
