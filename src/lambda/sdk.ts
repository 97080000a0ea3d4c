/**
 * The distributed render SDK's entry: {@linkcode renderToLambda} starts one workflow
 * execution per render. The rest of the surface lives beside it and is re-exported here:
 * sites (`deploySite`, `siteHandleFromId`, `loadSite`: sites.ts), where a render is
 * (`getRenderProgress`: progress.ts) and prices (cost.ts).
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

import type { S3Client } from "@aws-sdk/client-s3";
import { SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
import { ConfigError, type ExecutionInput, type RenderConfig, validateConfig } from "./config.ts";
import { timeCapWarning } from "./time_cap.ts";
import type { VariableDeclaration } from "../composition/declarations.ts";
import { formatOfPath, OUTPUT_FORMATS, type OutputFormat } from "../render/encode.ts";
import { StrictVariablesError } from "../composition/errors.ts";
import { checkOverrides } from "../composition/variables.ts";
import { OPTIONS } from "../request/options.ts";
import { explainStackError, StackError } from "./stack_error.ts";
import { type S3Options, sfnClientFor, type SfnOptions } from "../aws/clients.ts";
import { loadSite, type SiteHandle, withSiteFrameRate } from "./sites.ts";

export type { S3Options, SfnOptions };

// The SDK's surface, from the modules that own each part.
export {
  deploySite,
  type DeploySiteOptions,
  isNotFound,
  type SiteHandle,
  siteHandleFromId,
  type SiteHandleOptions,
  type SiteManifest,
  withSiteFrameRate,
} from "./sites.ts";
export {
  type ChunkRetry,
  executionArnOf,
  getRenderProgress,
  type LambdaRenderProgress,
  type LambdaRenderStatus,
  type RenderProgressOptions,
} from "./progress.ts";
export {
  type CostEstimate,
  DEFAULT_LAMBDA_MEMORY_MB,
  LAMBDA_USD_PER_GB_SECOND,
  USD_PER_STATE_TRANSITION,
} from "./cost.ts";

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
    if (!started.executionArn) {
      throw new StackError(
        "stateMachineArn",
        `StartExecution on ${options.stateMachineArn} returned no executionArn`,
      );
    }
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
