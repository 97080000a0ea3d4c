/**
 * Where `vid server` renders: the render backend. `local` renders on this machine with the
 * shared renderer (the default); `lambda` hands each render to the distributed backend
 * (Step Functions + Lambda, or the local stack of `vid lambda local`), so a self-hosted
 * render cloud grows past one machine.
 *
 * This module holds what the queue and both backends share (the job a backend is given and
 * the backend's shape) and the backend's configuration: {@linkcode resolveRenderBackend}
 * reads `vid server`'s flags and their `VID_*` environment equivalents and refuses an
 * incomplete or malformed configuration before the server starts.
 *
 * @module
 */

import type { OutputFormat, Quality } from "../../render/encode.ts";
import type { ServerContext } from "../context.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

/** The stored request of a render, as the API recorded it. */
export interface RenderRequest {
  /** Entry HTML file inside the project. */
  composition: string;
  fps: number;
  quality: Quality;
  format: OutputFormat;
  /** Variable overrides as the caller sent them. */
  variables: Record<string, unknown>;
  strict_variables: boolean;
  /** Integrated loudness of the soundtrack, LUFS, when the request set one. */
  loudness?: number;
}

/** One claimed render, as the queue hands it to a backend. */
export interface RenderJob {
  /** The render's id (`rnd_…`). */
  id: string;
  /** The asset whose `project.zip` is rendered. */
  assetId: string;
  request: RenderRequest;
  /** Output frame size the server computed from resolution and aspect ratio. */
  width: number;
  height: number;
  /** Length of the output, seconds. */
  durationSeconds: number;
  /**
   * `Date.now()` at the page's time 0: the render's creation, whole seconds, so every chunk
   * of it, on any worker and in any attempt, sees one clock.
   */
  epochMs: number;
  /** Workflow execution started for this render by an earlier run (lambda backend). */
  executionArn: string | null;
  /** Records progress, 0 to 1 (the queue throttles writes and keeps it below 1). */
  setProgress(fraction: number): void;
}

/**
 * Renders claimed renders. A backend stores `renders/<id>/video.<format>` and
 * `renders/<id>/thumbnail.jpg` in the server's storage and resolves, or throws an error
 * whose message becomes the render's `error`. When `signal` aborts (the server is
 * stopping) it gives up quickly, leaving whatever a restart needs to resume.
 */
export interface RenderBackend {
  /** `local` or `lambda`. */
  readonly kind: RenderBackendKind;
  /** Renders in flight at most: the number of queue workers. */
  readonly slots: number;
  /** Renders one job. */
  render(ctx: ServerContext, job: RenderJob, signal: AbortSignal): Promise<void>;
  /**
   * Does one unit of a render already under way, when one waits (the local backend: a chunk
   * of a render spread over workers, see `chunk_jobs.ts`); the queue asks before it claims
   * a new render, so started renders finish first.
   *
   * @returns Whether there was work (false: claim a render).
   */
  work?(ctx: ServerContext, signal: AbortSignal): Promise<boolean>;
  /** Releases clients and sockets. */
  close(): void;
}

/**
 * The abort reason of a render deleted while it runs (as opposed to the server shutting
 * down, after which the next start resumes it): a backend stops the render's remote work.
 */
export class RenderDeletedError extends VidError {
  /** Always `"RenderDeletedError"`. */
  override name = "RenderDeletedError";
  /** The deleted render. */
  readonly renderId: string;
  constructor(renderId: string) {
    super(`render ${renderId} was deleted`, { exitCode: EXIT_FAILED });
    this.renderId = renderId;
  }
}

/** Names of the render backends. */
export type RenderBackendKind = "local" | "lambda";

/** Backends `--render-backend` accepts. */
export const RENDER_BACKENDS: readonly RenderBackendKind[] = ["local", "lambda"];

/** Default of `--lambda-max-in-flight`: distributed renders polled at once. */
export const DEFAULT_LAMBDA_MAX_IN_FLIGHT = 20;
/** Default of `--lambda-poll-interval`, milliseconds between progress reads of a render. */
export const DEFAULT_LAMBDA_POLL_INTERVAL_MS = 2000;

/** Settings of the `lambda` backend. Credentials come from the AWS SDK's default chain. */
export interface LambdaBackendConfig {
  /** The distributed backend. */
  kind: "lambda";
  /** The render bucket (`RenderBucketName`): sites, chunks and outputs. */
  bucketName: string;
  /** The render workflow (`RenderStateMachineArn`). */
  stateMachineArn: string;
  /** AWS region. @default the state machine ARN's region */
  region: string;
  /** Endpoint of an S3-compatible service (the local stack's s3rver). */
  s3Endpoint?: string;
  /** Address buckets by path. @default true when `s3Endpoint` is set */
  s3ForcePathStyle: boolean;
  /** Endpoint of a Step Functions-compatible service (the local stack). */
  sfnEndpoint?: string;
  /** `config.chunkSize` of every render, frames per chunk. @default the SDK's (240) */
  chunkSize?: number;
  /** `config.maxParallelChunks` of every render. @default the SDK's (16) */
  maxParallelChunks?: number;
  /** Distributed renders in flight at once. @default 20 */
  maxInFlight: number;
  /** Milliseconds between progress reads. @default 2000 */
  pollIntervalMs: number;
}

/** Settings of the `local` backend. */
export interface LocalBackendConfig {
  /** Renders on this machine. */
  kind: "local";
}

/** A resolved backend configuration. */
export type RenderBackendConfig = LocalBackendConfig | LambdaBackendConfig;

/** The backend flags of `vid server`, as parsed (strings, unvalidated). */
export interface RenderBackendFlags {
  /** `--render-backend` (env `VID_RENDER_BACKEND`). */
  renderBackend?: string;
  /** `--lambda-bucket`. */
  lambdaBucket?: string;
  /** `--lambda-state-machine`. */
  lambdaStateMachine?: string;
  /** `--lambda-region`. */
  lambdaRegion?: string;
  /** `--lambda-s3-endpoint`. */
  lambdaS3Endpoint?: string;
  /** `--lambda-sfn-endpoint`. */
  lambdaSfnEndpoint?: string;
  /** `--lambda-chunk-size`. */
  lambdaChunkSize?: string;
  /** `--lambda-max-parallel-chunks`. */
  lambdaMaxParallelChunks?: string;
  /** `--lambda-max-in-flight`. */
  lambdaMaxInFlight?: string;
  /** `--lambda-poll-interval`. */
  lambdaPollInterval?: string;
}

/**
 * The render backend configuration is unusable; `field` names the flag to fix (its
 * environment variable is named in the message).
 */
export class RenderBackendConfigError extends VidError {
  /** Always `"RenderBackendConfigError"`. */
  override name = "RenderBackendConfigError";
  /** The flag at fault, e.g. `--lambda-bucket`. */
  override readonly field: string;
  /**
   * Creates the error.
   *
   * @param field The flag or variable at fault.
   * @param message What is wrong and how to fix it.
   * @param field The flag at fault.
   * @param message What is wrong and how to fix it.
   */
  constructor(field: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
  }
}

/** Each flag with its environment variable(s), first set wins after the flag. */
const SOURCES: Readonly<Record<keyof RenderBackendFlags, { flag: string; env: string[] }>> = {
  renderBackend: { flag: "--render-backend", env: ["VID_RENDER_BACKEND"] },
  lambdaBucket: { flag: "--lambda-bucket", env: ["VID_LAMBDA_BUCKET"] },
  lambdaStateMachine: { flag: "--lambda-state-machine", env: ["VID_LAMBDA_STATE_MACHINE_ARN"] },
  lambdaRegion: { flag: "--lambda-region", env: ["AWS_REGION", "AWS_DEFAULT_REGION"] },
  lambdaS3Endpoint: { flag: "--lambda-s3-endpoint", env: ["VID_S3_ENDPOINT"] },
  lambdaSfnEndpoint: { flag: "--lambda-sfn-endpoint", env: ["VID_SFN_ENDPOINT"] },
  lambdaChunkSize: { flag: "--lambda-chunk-size", env: ["VID_LAMBDA_CHUNK_SIZE"] },
  lambdaMaxParallelChunks: {
    flag: "--lambda-max-parallel-chunks",
    env: ["VID_LAMBDA_MAX_PARALLEL_CHUNKS"],
  },
  lambdaMaxInFlight: { flag: "--lambda-max-in-flight", env: ["VID_LAMBDA_MAX_IN_FLIGHT"] },
  lambdaPollInterval: { flag: "--lambda-poll-interval", env: ["VID_LAMBDA_POLL_INTERVAL_MS"] },
};

/** `--flag` (env `VAR`), for messages. */
function source(key: keyof RenderBackendFlags): string {
  const { flag, env } = SOURCES[key];
  return `${flag} (env ${env.join(" or ")})`;
}

function integerSetting(
  key: keyof RenderBackendFlags,
  raw: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
    throw new RenderBackendConfigError(
      SOURCES[key].flag,
      `${source(key)} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`,
    );
  }
  return n;
}

function endpointSetting(key: keyof RenderBackendFlags, raw: string | undefined) {
  if (raw === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw new RenderBackendConfigError(
      SOURCES[key].flag,
      `${source(key)} must be an http(s) URL such as http://127.0.0.1:4568, got ${
        JSON.stringify(raw)
      }`,
    );
  }
  return raw.replace(/\/+$/, "");
}

/**
 * Resolves the render backend from `vid server`'s flags, falling back to the environment
 * (`VID_RENDER_BACKEND`, `VID_LAMBDA_BUCKET`, `VID_LAMBDA_STATE_MACHINE_ARN`, `AWS_REGION`,
 * `VID_S3_ENDPOINT`, `VID_S3_FORCE_PATH_STYLE`, `VID_SFN_ENDPOINT`, `VID_LAMBDA_CHUNK_SIZE`,
 * `VID_LAMBDA_MAX_PARALLEL_CHUNKS`, `VID_LAMBDA_MAX_IN_FLIGHT`,
 * `VID_LAMBDA_POLL_INTERVAL_MS`): the same variables `vid lambda local` prints, so its
 * output configures the server too.
 *
 * @example
 * ```ts no_run
 * import { resolveRenderBackend } from "./render_backend.ts";
 *
 * const backend = resolveRenderBackend(
 *   { renderBackend: "lambda" },
 *   (name) => Deno.env.get(name),
 * );
 * if (backend.kind === "lambda") console.log(backend.bucketName, backend.maxInFlight);
 * ```
 *
 * @param flags The flags as given on the command line.
 * @param env Reads an environment variable (empty counts as unset).
 * @returns The backend configuration.
 * @throws {RenderBackendConfigError} A missing bucket or state machine with backend
 *   `lambda`, a malformed value, or a `--lambda-*` flag given with backend `local`.
 */
export function resolveRenderBackend(
  flags: RenderBackendFlags,
  env: (name: string) => string | undefined,
): RenderBackendConfig {
  const read = (key: keyof RenderBackendFlags): string | undefined => {
    if (flags[key] !== undefined) return flags[key];
    for (const name of SOURCES[key].env) {
      const value = env(name);
      if (value !== undefined && value !== "") return value;
    }
    return undefined;
  };
  const kind = read("renderBackend") ?? "local";
  if (!(RENDER_BACKENDS as readonly string[]).includes(kind)) {
    throw new RenderBackendConfigError(
      "--render-backend",
      `${source("renderBackend")} must be one of ${RENDER_BACKENDS.join(", ")}, got ${
        JSON.stringify(kind)
      }`,
    );
  }
  if (kind === "local") {
    // Lambda flags without the lambda backend are a forgotten --render-backend, not a no-op.
    const stray = (Object.keys(SOURCES) as (keyof RenderBackendFlags)[])
      .find((key) => key !== "renderBackend" && flags[key] !== undefined);
    if (stray) {
      throw new RenderBackendConfigError(
        SOURCES[stray].flag,
        `${
          SOURCES[stray].flag
        } only applies to the distributed backend; add --render-backend lambda`,
      );
    }
    return { kind: "local" };
  }

  const bucketName = read("lambdaBucket");
  if (!bucketName) {
    throw new RenderBackendConfigError(
      "--lambda-bucket",
      `--render-backend lambda needs the render bucket: pass ${
        source("lambdaBucket")
      } (the RenderBucketName output of \`vid lambda deploy\`, or printed by \`vid lambda local\`)`,
    );
  }
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucketName)) {
    throw new RenderBackendConfigError(
      "--lambda-bucket",
      `${source("lambdaBucket")} must be an S3 bucket name (3-63 of a-z 0-9 . -), got ${
        JSON.stringify(bucketName)
      }`,
    );
  }
  const stateMachineArn = read("lambdaStateMachine");
  if (!stateMachineArn) {
    throw new RenderBackendConfigError(
      "--lambda-state-machine",
      `--render-backend lambda needs the render workflow: pass ${
        source("lambdaStateMachine")
      } (the RenderStateMachineArn output of \`vid lambda deploy\`, or printed by \`vid lambda local\`)`,
    );
  }
  const arn = stateMachineArn.split(":");
  if (arn.length !== 7 || arn[0] !== "arn" || arn[2] !== "states" || arn[5] !== "stateMachine") {
    throw new RenderBackendConfigError(
      "--lambda-state-machine",
      `${
        source("lambdaStateMachine")
      } must be a state machine ARN (arn:aws:states:<region>:<account>:stateMachine:<name>), got ${
        JSON.stringify(stateMachineArn)
      }`,
    );
  }
  const s3Endpoint = endpointSetting("lambdaS3Endpoint", read("lambdaS3Endpoint"));
  const pathStyle = env("VID_S3_FORCE_PATH_STYLE");
  return {
    kind: "lambda",
    bucketName,
    stateMachineArn,
    // One stack: the bucket lives in the workflow's region unless told otherwise.
    region: flags.lambdaRegion || arn[3] || read("lambdaRegion") || "us-east-1",
    s3Endpoint,
    s3ForcePathStyle: pathStyle !== undefined && pathStyle !== ""
      ? /^(1|true)$/i.test(pathStyle)
      : s3Endpoint !== undefined,
    sfnEndpoint: endpointSetting("lambdaSfnEndpoint", read("lambdaSfnEndpoint")),
    chunkSize: integerSetting("lambdaChunkSize", read("lambdaChunkSize"), 1, 100000),
    maxParallelChunks: integerSetting(
      "lambdaMaxParallelChunks",
      read("lambdaMaxParallelChunks"),
      1,
      1000,
    ),
    maxInFlight: integerSetting("lambdaMaxInFlight", read("lambdaMaxInFlight"), 1, 10000) ??
      DEFAULT_LAMBDA_MAX_IN_FLIGHT,
    pollIntervalMs: integerSetting("lambdaPollInterval", read("lambdaPollInterval"), 50, 600000) ??
      DEFAULT_LAMBDA_POLL_INTERVAL_MS,
  };
}
