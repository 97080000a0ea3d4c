/**
 * The resources of the distributed render stack, as one function of plain settings so that
 * the unit tests can build it several times with different settings under Pulumi mocks.
 *
 * What it creates:
 * - the render bucket (`aws.s3.Bucket`) with a public access block, SSE-S3 default encryption
 *   and a lifecycle rule that expires temporary chunk objects under `chunkPrefix`;
 * - the render function (Lambda, `nodejs22.x`) from the packaged worker artifact
 *   (`deno task build:worker` -> `dist/worker/`: the bundle, `@sparticuz/chromium`, static
 *   ffmpeg and ffprobe, about 226 MB unzipped). Its zip is over the 50 MB a direct upload
 *   takes, so it goes to a private artifacts bucket as `worker/<hash>.zip` (the artifact's
 *   content hash from `vid-artifact.json`, so every new build is a new object and a code
 *   update, and an unchanged one changes nothing) and the function's code points there;
 *   its log group and a role that may only write to that log group and read, write and list
 *   the render bucket;
 * - the Step Functions STANDARD state machine from the shared definition
 *   (`src/lambda/state_machine.ts`) and a role that may only invoke the render function.
 *
 * @module
 */

import * as aws from "@pulumi/aws";
import * as pulumi from "@pulumi/pulumi";
import type { ArtifactManifest } from "../worker/artifact_manifest.ts";
import { definitionJson } from "./definition.ts";

/** Lambda's maximum memory and the spec's default for the render function, in MB. */
export const MAX_MEMORY_MB = 10240;
/** Lambda's minimum memory, in MB. */
export const MIN_MEMORY_MB = 128;
/** Lambda's time cap and the spec's per-chunk limit (15 minutes), in seconds. */
export const MAX_TIMEOUT_SECONDS = 900;
/** Lambda's maximum `/tmp` size, in MB: frames, chunks and the browser profile live there. */
export const EPHEMERAL_STORAGE_MB = 10240;
/** Lambda runtime of the worker bundle (esbuild targets Node 22). */
export const RUNTIME = "nodejs22.x";

/** Settings of one render stack; `readStackSettings` in `config.ts` reads them from config. */
export interface RenderStackSettings {
  /**
   * Memory of the render function in MB (128 to 10240). CPU share grows with memory.
   * @default {10240}
   */
  memory: number;
  /**
   * Timeout of one render function invocation in seconds (1 to 900).
   * @default {900}
   */
  timeout: number;
  /**
   * Reserved concurrency of the render function; unreserved (the account pool) when undefined.
   * Lower than the renders' `maxParallelChunks` throttles renders.
   */
  concurrency?: number;
  /**
   * Directory of the packaged worker, zipped as the function code. `deno task build:worker`
   * builds it (bundle, Chromium, ffmpeg, ffprobe and `vid-artifact.json`).
   * @default {"../dist/worker"}
   */
  workerPath: string;
  /**
   * Handler of the render function inside the bundle.
   * @default {"index.handler"}
   */
  handler: string;
  /** Layer ARNs of the render function (none needed: the artifact carries its binaries). */
  layers: string[];
  /**
   * Key prefix of temporary chunk objects, expired by the bucket's lifecycle rule.
   * @default {"chunks/"}
   */
  chunkPrefix: string;
  /**
   * Days after which objects under `chunkPrefix` expire.
   * @default {1}
   */
  chunkExpirationDays: number;
  /**
   * Retention of the render function's log group in days.
   * @default {14}
   */
  logRetentionDays: number;
}

/** The resources of a render stack that callers and tests look at. */
export interface RenderStack {
  bucket: aws.s3.Bucket;
  artifactsBucket: aws.s3.Bucket;
  codeObject: aws.s3.BucketObjectv2;
  renderFunction: aws.lambda.Function;
  logGroup: aws.cloudwatch.LogGroup;
  functionRole: aws.iam.Role;
  functionPolicy: aws.iam.RolePolicy;
  stateMachine: aws.sfn.StateMachine;
  stateMachineRole: aws.iam.Role;
  stateMachinePolicy: aws.iam.RolePolicy;
}

/** A trust policy letting one AWS service assume a role. */
function assumedBy(service: string): string {
  return JSON.stringify({
    Version: "2012-10-17",
    Statement: [{
      Effect: "Allow",
      Principal: { Service: service },
      Action: "sts:AssumeRole",
    }],
  });
}

/** A bucket with every kind of public access blocked and SSE-S3 default encryption. */
function privateBucket(name: string): aws.s3.Bucket {
  const bucket = new aws.s3.Bucket(name, {});
  new aws.s3.BucketPublicAccessBlock(name, {
    bucket: bucket.id,
    blockPublicAcls: true,
    blockPublicPolicy: true,
    ignorePublicAcls: true,
    restrictPublicBuckets: true,
  });
  new aws.s3.BucketServerSideEncryptionConfiguration(name, {
    bucket: bucket.id,
    rules: [{ applyServerSideEncryptionByDefault: { sseAlgorithm: "AES256" } }],
  });
  return bucket;
}

/**
 * Creates the render stack's resources, each named with the prefix `name`, the function's
 * code from the packaged worker in `settings.workerPath` described by `artifact`.
 *
 * @example
 * ```ts
 * const settings = readStackSettings(new pulumi.Config());
 * const stack = createRenderStack("vid", settings, readArtifactManifest(settings.workerPath));
 * export const RenderBucketName = stack.bucket.bucket;
 * ```
 */
export function createRenderStack(
  name: string,
  settings: RenderStackSettings,
  artifact: Pick<ArtifactManifest, "sha256" | "handler">,
): RenderStack {
  const bucket = privateBucket(`${name}-renders`);
  new aws.s3.BucketLifecycleConfiguration(`${name}-renders`, {
    bucket: bucket.id,
    rules: [
      {
        id: "expire-temporary-chunks",
        status: "Enabled",
        filter: { prefix: settings.chunkPrefix },
        expiration: { days: settings.chunkExpirationDays },
      },
      {
        id: "abort-incomplete-multipart-uploads",
        status: "Enabled",
        filter: { prefix: "" },
        abortIncompleteMultipartUpload: { daysAfterInitiation: 1 },
      },
    ],
  });

  const logGroup = new aws.cloudwatch.LogGroup(`${name}-render-function`, {
    retentionInDays: settings.logRetentionDays,
  });
  const functionRole = new aws.iam.Role(`${name}-render-function`, {
    assumeRolePolicy: assumedBy("lambda.amazonaws.com"),
  });
  // The log group exists before the function, so the role needs no logs:CreateLogGroup.
  const functionPolicy = new aws.iam.RolePolicy(`${name}-render-function`, {
    role: functionRole.id,
    policy: pulumi.jsonStringify({
      Version: "2012-10-17",
      Statement: [
        {
          Sid: "WriteOwnLogs",
          Effect: "Allow",
          Action: ["logs:CreateLogStream", "logs:PutLogEvents"],
          Resource: pulumi.interpolate`${logGroup.arn}:*`,
        },
        {
          Sid: "ReadWriteRenderObjects",
          Effect: "Allow",
          Action: ["s3:GetObject", "s3:PutObject"],
          Resource: pulumi.interpolate`${bucket.arn}/*`,
        },
        {
          Sid: "ListRenderBucket",
          Effect: "Allow",
          Action: ["s3:ListBucket"],
          Resource: bucket.arn,
        },
      ],
    }),
  });

  // The deployer uploads the code and Lambda copies it at deploy time: the function's own
  // role needs no access to this bucket.
  const artifactsBucket = privateBucket(`${name}-artifacts`);
  const codeObject = new aws.s3.BucketObjectv2(`${name}-worker-code`, {
    bucket: artifactsBucket.id,
    key: `worker/${artifact.sha256.slice(0, 16)}.zip`,
    source: new pulumi.asset.FileArchive(settings.workerPath),
  });

  const renderFunction = new aws.lambda.Function(`${name}-render-function`, {
    description: "vid render worker: plans, renders chunks and assembles distributed renders",
    runtime: RUNTIME,
    handler: settings.handler,
    role: functionRole.arn,
    s3Bucket: artifactsBucket.id,
    s3Key: codeObject.key,
    sourceCodeHash: artifact.sha256,
    architectures: ["x86_64"],
    memorySize: settings.memory,
    timeout: settings.timeout,
    ephemeralStorage: { size: EPHEMERAL_STORAGE_MB },
    reservedConcurrentExecutions: settings.concurrency,
    layers: settings.layers.length > 0 ? settings.layers : undefined,
    loggingConfig: { logFormat: "Text", logGroup: logGroup.name },
    environment: {
      variables: {
        VID_RENDER_BUCKET: bucket.bucket,
        VID_CHUNK_PREFIX: settings.chunkPrefix,
      },
    },
  }, { dependsOn: [functionPolicy] });

  const stateMachineRole = new aws.iam.Role(`${name}-state-machine`, {
    assumeRolePolicy: assumedBy("states.amazonaws.com"),
  });
  const stateMachinePolicy = new aws.iam.RolePolicy(`${name}-state-machine`, {
    role: stateMachineRole.id,
    policy: pulumi.jsonStringify({
      Version: "2012-10-17",
      Statement: [
        {
          Sid: "InvokeRenderFunction",
          Effect: "Allow",
          Action: ["lambda:InvokeFunction"],
          Resource: renderFunction.arn,
        },
      ],
    }),
  });
  const stateMachine = new aws.sfn.StateMachine(`${name}-render`, {
    type: "STANDARD",
    roleArn: stateMachineRole.arn,
    definition: renderFunction.arn.apply((arn) => definitionJson(arn, settings.timeout)),
  }, { dependsOn: [stateMachinePolicy] });

  return {
    bucket,
    artifactsBucket,
    codeObject,
    renderFunction,
    logGroup,
    functionRole,
    functionPolicy,
    stateMachine,
    stateMachineRole,
    stateMachinePolicy,
  };
}
