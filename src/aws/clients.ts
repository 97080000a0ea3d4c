/**
 * The one place AWS clients are made. Every surface that talks to S3 or Step Functions
 * (the Lambda SDK, `vid lambda`, the server's Lambda backend and S3 storage, the local
 * stack, the worker under Node) builds its client here, so the region chain, the
 * S3-compatible endpoint settings and the checksum rule are spelled once.
 *
 * The region chain, first that is set:
 * 1. the explicit option (`--region`, `region:` of the SDK options);
 * 2. for Step Functions, and for S3 calls about one execution, the region of the ARN;
 * 3. `AWS_REGION`, then `AWS_DEFAULT_REGION` (as the AWS SDK and CLI read them);
 * 4. `us-east-1`.
 *
 * S3-compatible services (s3rver in the tests and the local stack, MinIO) are reached with
 * `VID_S3_ENDPOINT`; buckets are then addressed by path unless `VID_S3_FORCE_PATH_STYLE` is
 * `0`/`false`. Step Functions-compatible services with `VID_SFN_ENDPOINT`. Credentials are
 * the SDK's default chain unless given. A client made without connection options reads
 * these variables, so the SDK (`deploySite`, `renderToLambda`, …) goes where the CLI goes.
 * Every call of a client made here has a deadline (`src/aws/deadline.ts`).
 *
 * Web standards, `node:process` and the AWS SDK only: the worker bundle runs this under
 * Node 22.
 *
 * @module
 */

import process from "node:process";
import { S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { SFNClient, type SFNClientConfig } from "@aws-sdk/client-sfn";
import { withDeadlines } from "./deadline.ts";

/** Where and how to reach S3 (or an S3-compatible service such as s3rver). */
export interface S3Options {
  /** AWS region. @default `AWS_REGION`, then `AWS_DEFAULT_REGION`, then `"us-east-1"` */
  region?: string;
  /** Endpoint of an S3-compatible service, e.g. `http://127.0.0.1:4568`. */
  endpoint?: string;
  /** Address buckets as `<endpoint>/<bucket>`; most loopback services need this. */
  forcePathStyle?: boolean;
  /** Access keys; the SDK's default chain when unset. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/** Where and how to reach Step Functions. */
export interface SfnOptions {
  /** AWS region. @default the region of the state machine or execution ARN */
  region?: string;
  /** Endpoint of a Step Functions-compatible service (the local stack). */
  endpoint?: string;
  /** Access keys; the SDK's default chain when unset. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
}

/** Client settings beyond the connection. */
export interface ClientTuning {
  /** Attempts per call, the SDK's own retries included. @default the SDK's (3) */
  maxAttempts?: number;
}

/** Where an S3 client sends requests (for building object URLs). */
export interface S3Location {
  /** The client's region. */
  region: string;
  /** The S3-compatible endpoint, when not AWS. */
  endpoint?: string;
  /** Whether buckets are addressed by path. */
  forcePathStyle?: boolean;
}

function env(name: string): string | undefined {
  return process.env[name] || undefined;
}

/**
 * The region of the environment: `AWS_REGION`, then `AWS_DEFAULT_REGION`, then `us-east-1`.
 *
 * @returns A region name.
 */
export function defaultRegion(): string {
  return env("AWS_REGION") ?? env("AWS_DEFAULT_REGION") ?? "us-east-1";
}

/**
 * The region field of an ARN (`arn:aws:states:<region>:…`), if it has one.
 *
 * @param arn Any ARN.
 * @returns The region, or `undefined`.
 */
export function arnRegion(arn?: string): string | undefined {
  const region = arn?.split(":")[3];
  return region ? region : undefined;
}

/**
 * S3 options from the environment: `VID_S3_ENDPOINT` and `VID_S3_FORCE_PATH_STYLE` (`1`/`true`
 * or `0`/`false`; path-style by default when an endpoint is set).
 *
 * @param region The region to put in the options. @default unset (the chain applies later)
 * @returns Options for {@linkcode s3ClientFor}.
 */
export function s3OptionsFromEnv(region?: string): S3Options {
  const endpoint = env("VID_S3_ENDPOINT");
  const pathStyle = env("VID_S3_FORCE_PATH_STYLE");
  return {
    ...(region ? { region } : {}),
    endpoint,
    forcePathStyle: pathStyle !== undefined
      ? /^(1|true)$/i.test(pathStyle)
      : endpoint !== undefined,
  };
}

/**
 * Step Functions options from the environment: `VID_SFN_ENDPOINT`.
 *
 * @param region The region to put in the options. @default unset (the chain applies later)
 * @returns Options for {@linkcode sfnClientFor}.
 */
export function sfnOptionsFromEnv(region?: string): SfnOptions {
  return { ...(region ? { region } : {}), endpoint: env("VID_SFN_ENDPOINT") };
}

/**
 * An S3 client for the connection options. With an endpoint, checksums are computed only
 * where required: S3-compatible services (s3rver, older MinIO) reject the checksum trailers
 * the SDK otherwise adds to streamed uploads; AWS accepts either.
 *
 * @param options Region, endpoint, addressing and credentials. @default s3OptionsFromEnv()
 * @param region The region when `options` has none (e.g. an execution ARN's), before the
 *   environment's.
 * @param tuning Attempts per call.
 * @returns A new client; the caller destroys it.
 */
export function s3ClientFor(
  options: S3Options = s3OptionsFromEnv(),
  region?: string,
  tuning: ClientTuning = {},
): S3Client {
  const config: S3ClientConfig = {
    region: options.region ?? region ?? defaultRegion(),
    endpoint: options.endpoint,
    forcePathStyle: options.forcePathStyle,
    credentials: options.credentials,
    requestChecksumCalculation: options.endpoint ? "WHEN_REQUIRED" : "WHEN_SUPPORTED",
    responseChecksumValidation: options.endpoint ? "WHEN_REQUIRED" : "WHEN_SUPPORTED",
    ...(tuning.maxAttempts !== undefined ? { maxAttempts: tuning.maxAttempts } : {}),
  };
  return withDeadlines(
    new S3Client(config),
    options.endpoint ?? `S3 (${config.region})`,
  );
}

/**
 * A Step Functions client for the connection options, in the ARN's region by default.
 *
 * @param options Region, endpoint and credentials. @default sfnOptionsFromEnv()
 * @param arn A state machine or execution ARN whose region applies when `options` has none.
 * @param tuning Attempts per call.
 * @returns A new client; the caller destroys it.
 */
export function sfnClientFor(
  options: SfnOptions = sfnOptionsFromEnv(),
  arn?: string,
  tuning: ClientTuning = {},
): SFNClient {
  const config: SFNClientConfig = {
    region: options.region ?? arnRegion(arn) ?? defaultRegion(),
    endpoint: options.endpoint,
    credentials: options.credentials,
    ...(tuning.maxAttempts !== undefined ? { maxAttempts: tuning.maxAttempts } : {}),
  };
  return withDeadlines(
    new SFNClient(config),
    options.endpoint ?? `Step Functions (${config.region})`,
  );
}

/**
 * Where a ready S3 client sends requests.
 *
 * @param client A client made by anyone.
 * @returns Its region, custom endpoint and addressing.
 */
export async function clientLocation(client: S3Client): Promise<S3Location> {
  const config = client.config as unknown as {
    region: () => Promise<string>;
    endpoint?: () => Promise<{ protocol: string; hostname: string; port?: number; path: string }>;
    isCustomEndpoint?: boolean;
    forcePathStyle?: boolean;
  };
  const region = await config.region();
  let endpoint: string | undefined;
  if (config.endpoint && config.isCustomEndpoint !== false) {
    const e = await config.endpoint();
    endpoint = `${e.protocol}//${e.hostname}${e.port ? `:${e.port}` : ""}${e.path ?? ""}`;
  }
  return { region, endpoint, forcePathStyle: config.forcePathStyle };
}

function trimSlashes(path: string): string {
  return path.replace(/^\/+|\/+$/g, "");
}

/**
 * The URL of a key (or key prefix) as the bucket serves it: under the endpoint when there
 * is one, else on AWS; by path or by virtual host as the location says.
 *
 * @param bucketName The bucket.
 * @param path The key or prefix, already URL-encoded where needed.
 * @param location Region, endpoint and addressing of the client that wrote it.
 * @returns An absolute URL.
 *
 * @example
 * ```ts
 * objectUrlFor("renders", "out/a.mp4", { region: "eu-west-1" });
 * // "https://renders.s3.eu-west-1.amazonaws.com/out/a.mp4"
 * ```
 */
export function objectUrlFor(bucketName: string, path: string, location: S3Location): string {
  if (location.endpoint) {
    const url = new URL(location.endpoint);
    const base = trimSlashes(url.pathname);
    if (location.forcePathStyle) {
      url.pathname = `${base ? `/${base}` : ""}/${bucketName}/${path}`;
    } else {
      url.hostname = `${bucketName}.${url.hostname}`;
      url.pathname = `${base ? `/${base}` : ""}/${path}`;
    }
    return url.href;
  }
  return location.forcePathStyle
    ? `https://s3.${location.region}.amazonaws.com/${bucketName}/${path}`
    : `https://${bucketName}.s3.${location.region}.amazonaws.com/${path}`;
}

/** The shape of a state machine ARN, for error messages. */
export const STATE_MACHINE_ARN_SHAPE = "arn:aws:states:<region>:<account>:stateMachine:<name>";

/**
 * The ARN of the execution `name` of a state machine: its ARN with `execution` for
 * `stateMachine` and the name appended. Step Functions names executions this way, so the
 * ARN of a render is known before (and without) starting it.
 *
 * @param stateMachineArn The workflow's ARN.
 * @param name The execution name (the render id).
 * @returns The execution ARN, or `undefined` when `stateMachineArn` is not a state machine
 *   ARN (callers throw their own error naming their field).
 *
 * @example
 * ```ts
 * executionArnFor("arn:aws:states:us-east-1:123456789012:stateMachine:vid-render", "r1");
 * // "arn:aws:states:us-east-1:123456789012:execution:vid-render:r1"
 * ```
 */
export function executionArnFor(stateMachineArn: string, name: string): string | undefined {
  const parts = stateMachineArn.split(":");
  if (parts.length < 7 || parts[5] !== "stateMachine") return undefined;
  return [...parts.slice(0, 5), "execution", parts[6], name].join(":");
}
