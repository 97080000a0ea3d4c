/**
 * The distributed render SDK: {@linkcode deploySite} uploads a project once under its
 * content address, {@linkcode renderToLambda} starts one workflow execution per render and
 * {@linkcode getRenderProgress} reads where a render is from the workflow's history (and
 * the worker's progress objects in the bucket, when there are any).
 *
 * Bucket layout:
 *
 * ```
 * sites/<siteId>/<path>              every file of the packaged project
 * sites/<siteId>/site.json           the site manifest, written last
 * renders/<renderId>/progress.json   optional, written by the worker
 * renders/<renderId>/chunks/<i>.json optional, written by the worker
 * ```
 *
 * Only web standards, `node:` modules and the AWS SDK are used, so the SDK runs under
 * Node as well as Deno.
 *
 * @module
 */

import {
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import {
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  SFNClient,
  StartExecutionCommand,
} from "@aws-sdk/client-sfn";
import { unzipSync } from "fflate";
import { type PackagedFile, packageProject } from "../project/package.ts";
import { ConfigError, type ExecutionInput, type RenderConfig, validateConfig } from "./config.ts";
import { STATE_NAMES } from "./state_machine.ts";
import { timeCapWarning } from "./time_cap.ts";
import { parseComposition } from "../composition/composition.ts";
import type { VariableDeclaration } from "../composition/declarations.ts";
import type { FrameRate } from "../composition/frame_rate.ts";
import { formatOfPath, OUTPUT_FORMATS, type OutputFormat } from "../render/encode.ts";
import { StrictVariablesError } from "../composition/errors.ts";
import { checkOverrides } from "../composition/variables.ts";
import { OPTIONS } from "../request/options.ts";
import { loadSite } from "./sites.ts";
import { explainStackError, isRenderNotFound, renderNotFound } from "./stack_error.ts";
import { functionRunMs } from "./cost.ts";
import { readableExecutionError } from "./execution_error.ts";
import { pool } from "../util/async.ts";
import { contentTypeOf } from "../util/mime.ts";
import {
  arnRegion,
  clientLocation,
  defaultRegion,
  executionArnFor,
  objectUrlFor as serveUrlFor,
  s3ClientFor,
  type S3Options,
  sfnClientFor,
  type SfnOptions,
  STATE_MACHINE_ARN_SHAPE,
} from "../aws/clients.ts";

export type { S3Options, SfnOptions };

/**
 * A ready `S3Client` of `@aws-sdk/client-s3`, which the caller keeps and destroys.
 *
 * An internal alias, not a re-export: `deno doc --lint` reports any type of an npm package
 * used in a public signature as private (denoland/deno#27364), and re-exporting the AWS
 * client would drag its whole API into this package's documentation.
 *
 * @internal
 */
type ReadyS3Client = S3Client;

/**
 * A ready `SFNClient` of `@aws-sdk/client-sfn`, kept by the caller; an internal alias for
 * the reason given at {@linkcode ReadyS3Client}.
 *
 * @internal
 */
type ReadySfnClient = SFNClient;

/** An uploaded site: what a render needs to find the project in the bucket. */
export interface SiteHandle {
  /** Content-addressed identifier: `site-` and 16 hex digits of the project zip's SHA-256. */
  siteId: string;
  /** Bucket holding the site. */
  bucketName: string;
  /** Key prefix of the site's files: `sites/<siteId>/`. */
  prefix: string;
  /** Absolute URL of the site's root, ending in `/`. */
  serveUrl: string;
  /** Entry HTML file inside the site. */
  composition: string;
  /** Files of the site, sorted by path; empty for a handle from {@linkcode siteHandleFromId}. */
  files: PackagedFile[];
  /** Whether this call uploaded anything (false when the site already existed). */
  uploaded: boolean;
  /**
   * Variables the composition declares, when known (from {@linkcode deploySite} or
   * `loadSite`; not from {@linkcode siteHandleFromId}): `renderToLambda` checks
   * `config.variables` against them.
   */
  declarations?: VariableDeclaration[];
  /**
   * The composition's `data-fps`, when it pins a rate and the handle knows it (from
   * {@linkcode deploySite} or `loadSite`): a render whose `config.fps` is unset renders at it.
   */
  fps?: FrameRate;
}

/**
 * `config` with the format its output key's extension names (`.mp4`, `.webm`, `.mov`) where
 * the caller gave no `format`, as `vid render -o` does. A key naming another format than
 * `format`, or one a distributed render cannot write (gif, PNG), is a {@linkcode ConfigError}.
 */
export function withOutputKeyFormat(config: RenderConfig, outputKey?: string): RenderConfig {
  const named = outputKey === undefined ? undefined : formatOfPath(outputKey);
  if (named === undefined || named === null) return config;
  if (!(OUTPUT_FORMATS as readonly string[]).includes(named)) {
    throw new ConfigError(
      "outputKey",
      `a distributed render writes ${OUTPUT_FORMATS.join(", ")}, not ${named} (${outputKey}); ` +
        "end the key with .mp4, .webm or .mov, or render gif and PNG sequences with vid render",
    );
  }
  if (config.format === undefined) return { ...config, format: named as OutputFormat };
  if (config.format !== named) {
    throw new ConfigError(
      "outputKey",
      `format ${config.format} conflicts with the extension of ${outputKey} (${named}); leave ` +
        `format unset to render ${named}, or end the key with .${config.format}`,
    );
  }
  return config;
}

/**
 * `config` with the site composition's `data-fps` filled in where the caller gave no `fps`:
 * the distributed path honours `data-fps` as `vid render` does (an explicit `fps` wins).
 */
export function withSiteFrameRate(config: RenderConfig, site: SiteHandle): RenderConfig {
  if (config.fps !== undefined || site.fps === undefined) return config;
  const { num, den } = site.fps;
  return { ...config, fps: den === 1 ? num : `${num}/${den}` };
}

/** The manifest stored as `sites/<siteId>/site.json`. */
export interface SiteManifest {
  /** Content-addressed identifier of the site (`site-` and 16 hex digits). */
  siteId: string;
  /** Hex SHA-256 of the deterministic project zip. */
  sha256: string;
  /** Entry HTML file inside the site. */
  composition: string;
  /** Every file and its size in bytes. */
  files: PackagedFile[];
  /** Sum of the file sizes. */
  totalBytes: number;
  /** ISO 8601 time of the upload. */
  created: string;
}

/** Options of {@linkcode deploySite}. */
export interface DeploySiteOptions {
  /** The project directory to package. */
  projectDir: string;
  /** Bucket to upload to (the stack output `RenderBucketName`). */
  bucketName: string;
  /** Composition entry relative to `projectDir`. @default "index.html" */
  composition?: string;
  /** S3 connection options, or a ready client (which the caller keeps and destroys). */
  s3?: S3Options | ReadyS3Client;
  /** Files uploaded at once. @default 8 */
  uploadConcurrency?: number;
  /**
   * Files never uploaded, absolute or relative to the working directory: the batch file,
   * the manifest and outputs named on the command line, which would otherwise change the
   * site id (see `PackageProjectOptions.exclude`).
   */
  exclude?: readonly string[];
}

/** Options of {@linkcode siteHandleFromId}. */
export interface SiteHandleOptions {
  /** Entry HTML file inside the site. @default "index.html" */
  composition?: string;
  /** S3 connection options, used to build `serveUrl`. */
  s3?: S3Options;
}

/**
 * Options of {@linkcode renderToLambda}. `V` types `config.variables` (see
 * {@linkcode RenderConfig}).
 */
export interface RenderToLambdaOptions<
  V extends { [K in keyof V]?: string | number | boolean } = Record<
    string,
    string | number | boolean
  >,
> {
  /** The site to render, from {@linkcode deploySite} or {@linkcode siteHandleFromId}. */
  siteHandle: SiteHandle;
  /** Bucket of the site, chunks and output (`RenderBucketName`); must be the site's bucket. */
  bucketName: string;
  /** The workflow (`RenderStateMachineArn`). */
  stateMachineArn: string;
  /** The render configuration. */
  config: RenderConfig<V>;
  /** Object key of the output video. @default `renders/<renderId>/out.<format>` */
  outputKey?: string;
  /** Entry HTML file inside the site. @default the site handle's `composition` */
  composition?: string;
  /** Identifier of the render and name of the execution. @default a fresh `r-…` id */
  renderId?: string;
  /** Step Functions connection options, or a ready client (kept by the caller). */
  sfn?: SfnOptions | ReadySfnClient;
  /** Reserved concurrency of the render function, to warn about throttling. */
  reservedConcurrency?: number;
  /**
   * Memory of the render function, MB (`vid lambda deploy --memory`), to warn before
   * starting when the largest chunk is likely to hit the time cap. @default 10240
   */
  memoryMb?: number;
  /**
   * The function time cap, seconds (900 on Lambda; `VID_LAMBDA_TIMEOUT_SECONDS` on the
   * local stack), for the same warning. @default 900
   */
  timeoutSeconds?: number;
  /**
   * Total frames of the render, when known, so the warning uses the planner's largest
   * chunk. @default unknown: the largest chunk is `chunkSize` (else `targetChunkFrames`, else 240)
   */
  frames?: number;
  /**
   * Declarations to check `config.variables` against. @default the site handle's
   * `declarations`; when neither is known and `s3` is given, they are read from the site's
   * composition in the bucket (`loadSite`), which also checks the site exists
   */
  declarations?: readonly VariableDeclaration[];
  /**
   * S3 connection (or a ready client), to read the declarations of a site handle without
   * them; `false` or unset: no request, variables are checked only against known
   * declarations.
   */
  s3?: S3Options | ReadyS3Client | false;
  /** Fail (`StrictVariablesError`, nothing started) when a variable does not match. */
  strictVariables?: boolean;
  /** Receives warnings: variable mismatches, throttling, the time cap. @default console.warn */
  onWarning?(message: string): void;
}

/** One started render. */
export interface RenderHandle {
  /** Identifier of the render; the execution's name. */
  renderId: string;
  /** ARN of the workflow execution. */
  executionArn: string;
  /** Bucket the output is written to. */
  bucketName: string;
  /** Object key of the output video. */
  outputKey: string;
  /** When the execution started. */
  startedAt: Date;
}

/** Options of {@linkcode getRenderProgress}: an execution ARN, or a render id and workflow. */
export interface RenderProgressOptions {
  /** ARN of the execution (from {@linkcode RenderHandle}). */
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

/** A rough cost of a render so far. */
export interface CostEstimate {
  /**
   * Function run time x memory in GB: each invocation (chunk attempts, plan, assemble)
   * from its start to its end, so waiting for a free instance and retry back-off are not
   * counted.
   */
  lambdaGbSeconds: number;
  /**
   * US dollars: `lambdaGbSeconds` x $0.0000166667 (x86 Lambda, per GB-second) plus
   * $0.000025 per state transition (Standard workflows). Lambda request charges, S3
   * requests and storage, and data transfer are not included.
   */
  usd: number;
  /** State transitions counted (states entered). */
  stateTransitions: number;
}

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
  retries: ChunkRetry[];
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

/** A chunk's attempts, from the execution history. */
export interface ChunkRetry {
  /** The chunk's index; absent when the history does not say which chunk failed. */
  index?: number;
  /** Attempts started so far (1: the first try). */
  attempts: number;
  /** Errors of the failed attempts, oldest first: `<error>: <cause>`. */
  errors: string[];
}

/** Price of Lambda compute (x86, us-east-1), US dollars per GB-second. */
export const LAMBDA_USD_PER_GB_SECOND = 0.0000166667;
/** Price of one Standard workflow state transition, US dollars. */
export const USD_PER_STATE_TRANSITION = 0.000025;
/** Memory of the render function assumed by the cost estimate (the deploy default), MB. */
export const DEFAULT_LAMBDA_MEMORY_MB = 10240;

/** Whether an S3 error means the object (or its key) does not exist. */
export function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NotFound" || e?.name === "NoSuchKey" ||
    e?.$metadata?.httpStatusCode === 404;
}

/**
 * Packages a project (see `packageProject`: deterministic zip, upload rules) and uploads
 * each included file to `sites/<siteId>/<path>`, then `sites/<siteId>/site.json`. The
 * site id is the zip's content address, so when `site.json` already exists for it the
 * whole upload is skipped (`uploaded: false`): the same tree is never uploaded twice, and
 * any change gives a new site id.
 *
 * @example
 * ```ts no_run
 * import { deploySite } from "@vid/cli";
 *
 * const site = await deploySite({ projectDir: "examples/hello", bucketName: "vid-renders-123" });
 * console.log(site.siteId, site.uploaded ? "uploaded" : "already there");
 * ```
 *
 * @param options Project, bucket, entry and S3 connection.
 * @returns The site handle to pass to {@linkcode renderToLambda}.
 */
export async function deploySite(options: DeploySiteOptions): Promise<SiteHandle> {
  const pkg = await packageProject(options.projectDir, {
    composition: options.composition,
    exclude: options.exclude,
  });
  const ownClient = !(options.s3 instanceof S3Client);
  const client = options.s3 instanceof S3Client ? options.s3 : s3ClientFor(options.s3);
  try {
    const location = options.s3 instanceof S3Client
      ? await clientLocation(options.s3)
      : { region: defaultRegion(), ...options.s3 };
    const prefix = `sites/${pkg.siteId}/`;
    const handle: SiteHandle = {
      siteId: pkg.siteId,
      bucketName: options.bucketName,
      prefix,
      serveUrl: serveUrlFor(options.bucketName, prefix, location),
      composition: pkg.entry,
      files: pkg.files,
      uploaded: false,
    };
    const contents = unzipSync(pkg.zip);
    try {
      const html = new TextDecoder().decode(contents[pkg.entry]);
      const parsed = parseComposition(html, pkg.entry);
      handle.declarations = parsed.declarations;
      if (parsed.fps) handle.fps = parsed.fps;
    } catch {
      // not a composition the parser accepts: the render reports it; nothing to check here
    }
    const manifestKey = `${prefix}site.json`;
    try {
      await client.send(new HeadObjectCommand({ Bucket: options.bucketName, Key: manifestKey }));
      return handle;
    } catch (error) {
      // HeadObject answers a missing bucket with a bare 404, like a missing key.
      if (!isNotFound(error)) {
        throw explainStackError(error, {
          bucketName: options.bucketName,
          region: location.region,
        });
      }
    }
    try {
      await uploadSite(client, options, pkg, contents, prefix, manifestKey);
    } catch (error) {
      throw explainStackError(error, { bucketName: options.bucketName, region: location.region });
    }
    return { ...handle, uploaded: true };
  } finally {
    if (ownClient) client.destroy();
  }
}

/** Uploads every file of the package, then site.json. */
async function uploadSite(
  client: S3Client,
  options: DeploySiteOptions,
  pkg: Awaited<ReturnType<typeof packageProject>>,
  contents: Record<string, Uint8Array>,
  prefix: string,
  manifestKey: string,
): Promise<void> {
  await pool(pkg.files, Math.max(1, options.uploadConcurrency ?? 8), async (file) => {
    await client.send(
      new PutObjectCommand({
        Bucket: options.bucketName,
        Key: prefix + file.path,
        Body: contents[file.path],
        ContentType: contentTypeOf(file.path),
      }),
    );
  });
  const manifest: SiteManifest = {
    siteId: pkg.siteId,
    sha256: pkg.sha256,
    composition: pkg.entry,
    files: pkg.files,
    totalBytes: pkg.uncompressedBytes,
    created: new Date().toISOString(),
  };
  await client.send(
    new PutObjectCommand({
      Bucket: options.bucketName,
      Key: manifestKey,
      Body: JSON.stringify(manifest, null, 2),
      ContentType: "application/json",
    }),
  );
}

/**
 * A minimal handle of a site uploaded earlier (`--site-id`), without packaging or any
 * request. `files` is empty and `uploaded` false.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { siteHandleFromId } from "@vid/cli";
 *
 * const site = siteHandleFromId("site-0123456789abcdef", "vid-renders-123", {
 *   s3: { region: "eu-west-1" },
 * });
 * assert.equal(
 *   site.serveUrl,
 *   "https://vid-renders-123.s3.eu-west-1.amazonaws.com/sites/site-0123456789abcdef/",
 * );
 * ```
 */
export function siteHandleFromId(
  siteId: string,
  bucketName: string,
  options: SiteHandleOptions = {},
): SiteHandle {
  if (!/^[A-Za-z0-9_-]+$/.test(siteId)) {
    throw new ConfigError("siteId", `must be a site id such as site-0123456789abcdef`);
  }
  const prefix = `sites/${siteId}/`;
  return {
    siteId,
    bucketName,
    prefix,
    serveUrl: serveUrlFor(bucketName, prefix, { region: defaultRegion(), ...options.s3 }),
    composition: options.composition ?? OPTIONS.composition.default!,
    files: [],
    uploaded: false,
  };
}

/** A fresh render id: time and randomness, valid as an execution name. */
function newRenderId(): string {
  const random = crypto.getRandomValues(new Uint8Array(6));
  const hex = [...random].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `r-${Date.now().toString(36)}-${hex}`;
}

/**
 * Starts one distributed render: builds the execution input, checks it with
 * `validateConfig` before any request (an input over 256 KiB is rejected with a
 * `[validateConfig] config:` error and nothing is sent), then starts one workflow
 * execution named after the render id.
 *
 * @example
 * ```ts no_run
 * import { deploySite, renderToLambda } from "@vid/cli";
 *
 * const siteHandle = await deploySite({ projectDir: "examples/hello", bucketName: "vid-renders-123" });
 * const render = await renderToLambda({
 *   siteHandle,
 *   bucketName: "vid-renders-123",
 *   stateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render",
 *   config: { fps: 30, width: 1920, height: 1080, format: "mp4", variables: { title: "Hi" } },
 *   outputKey: "out/hello.mp4",
 * });
 * console.log(render.renderId, render.executionArn);
 * ```
 */
export async function renderToLambda<
  V extends { [K in keyof V]?: string | number | boolean } = Record<
    string,
    string | number | boolean
  >,
>(options: RenderToLambdaOptions<V>): Promise<RenderHandle> {
  const { siteHandle, bucketName } = options;
  if (siteHandle.bucketName !== bucketName) {
    throw new ConfigError(
      "bucketName",
      `the site ${siteHandle.siteId} is in bucket ${siteHandle.bucketName}, not ${bucketName}; ` +
        "deploy the site to the render bucket",
    );
  }
  const renderId = options.renderId ?? newRenderId();
  const composition = options.composition ?? siteHandle.composition;
  const inputFor = (config: RenderConfig): ExecutionInput => ({
    renderId,
    bucketName,
    siteId: siteHandle.siteId,
    serveUrl: siteHandle.serveUrl,
    composition,
    outputKey: options.outputKey ??
      `renders/${renderId}/out.${config.format ?? OPTIONS.videoFormat.default}`,
    config,
  });
  // V only narrows what callers may pass; validateConfig checks the values at run time.
  const config = options.config as RenderConfig;
  let declarations = options.declarations ?? siteHandle.declarations;
  let site: SiteHandle = siteHandle;
  if (options.s3 && declarations === undefined) {
    // Reading the site is a cloud call: an input already over 256 KiB (or otherwise bad)
    // is refused before it, as before the StartExecution below. The site adds at most its
    // frame rate to the input, which the full check after the read covers.
    validateConfig(inputFor(withOutputKeyFormat(config, options.outputKey)), {
      onWarning: () => {},
    });
    // A bare handle (siteHandleFromId) knows neither the declarations nor data-fps (a handle
    // from deploySite or loadSite knows both): the site's composition says them.
    const loaded = await loadSite(siteHandle.siteId, bucketName, { s3: options.s3, composition });
    declarations ??= loaded.declarations;
    site = loaded;
  }
  const input = inputFor(withOutputKeyFormat(withSiteFrameRate(config, site), options.outputKey));
  validateConfig(input, {
    reservedConcurrency: options.reservedConcurrency,
    frames: options.frames,
    onWarning: options.onWarning,
  });
  const variables = input.config.variables ?? {};
  if (declarations !== undefined && Object.keys(variables).length > 0) {
    // The same checker as `vid render`: mismatches warn, or fail with strictVariables.
    const problems = checkOverrides(declarations, variables);
    if (problems.length > 0 && options.strictVariables) throw new StrictVariablesError(problems);
    for (const p of problems) (options.onWarning ?? console.warn)(p.message);
  }
  const timeCap = timeCapWarning(input.config, {
    memoryMb: options.memoryMb,
    timeoutSeconds: options.timeoutSeconds,
    frames: options.frames,
  });
  if (timeCap) (options.onWarning ?? console.warn)(timeCap);
  const body = JSON.stringify(input);
  const ownClient = !(options.sfn instanceof SFNClient);
  const client = options.sfn instanceof SFNClient
    ? options.sfn
    : sfnClientFor(options.sfn, options.stateMachineArn);
  try {
    const started = await client.send(
      new StartExecutionCommand({
        stateMachineArn: options.stateMachineArn,
        name: renderId,
        input: body,
      }),
    );
    if (!started.executionArn) throw new Error("StartExecution returned no executionArn");
    return {
      renderId,
      executionArn: started.executionArn,
      bucketName,
      outputKey: input.outputKey,
      startedAt: started.startDate ?? new Date(),
    };
  } catch (error) {
    throw explainStackError(error, { stateMachineArn: options.stateMachineArn });
  } finally {
    if (ownClient) client.destroy();
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
