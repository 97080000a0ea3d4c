/**
 * `vid lambda`: distributed rendering on AWS Lambda and Step Functions (or the local
 * stack): `local`, `deploy`, `sites create`, `render`, `progress`.
 *
 * @module
 */

import { type Command, Option } from "@commander-js/extra-typings";
import { readComposition } from "../composition/composition.ts";
import { loadOverrides } from "../composition/variables.ts";
import { frameCount } from "../render/render.ts";
import { pool, sleep } from "../util/async.ts";
import { defaultRegion, s3OptionsFromEnv, sfnOptionsFromEnv } from "../aws/clients.ts";
import type { RenderConfig } from "../lambda/config.ts";
import { LAMBDA_FORMATS, LAMBDA_QUALITIES, validateConfig } from "../lambda/config.ts";
import { deployStack } from "../lambda/deploy/deploy.ts";
import { readableExecutionError } from "../lambda/execution_error.ts";
import { startLocalStack } from "../lambda/local/local_stack.ts";
import {
  deploySite,
  executionArnOf,
  getRenderProgress,
  type LambdaRenderProgress,
  renderToLambda,
  type S3Options,
  type SfnOptions,
  type SiteHandle,
  siteHandleFromId,
} from "../lambda/sdk.ts";
import { listSites, loadSite, removeSite } from "../lambda/sites.ts";
import { explainStackError } from "../lambda/stack_error.ts";
import { cancelRender, downloadRender, renderOutputUrl } from "../lambda/renders.ts";
import { readBatchManifest } from "../lambda/batch.ts";
import { packageProject } from "../project/package.ts";
import { BATCH_PROGRESS_EXIT, printBatchProgress, registerLambdaBatch } from "./lambda_batch.ts";
import {
  EXIT,
  frameRateArg,
  integerIn,
  positiveInteger,
  reportError,
  VARIABLES_HELP,
  warn,
} from "./shared.ts";

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
export class LambdaUsageError extends Error {
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
 * The render options `vid lambda render` and `vid lambda render-batch` share. Their flag
 * definitions are written out in each command: a generic helper adding them to a command
 * makes commander's typed option inference too deep for the type checker.
 */
export interface RenderConfigFlags {
  width?: number;
  height?: number;
  fps?: number;
  format?: RenderConfig["format"];
  quality?: RenderConfig["quality"];
  chunkSize?: number;
  maxParallelChunks?: number;
  targetChunkFrames?: number;
}

/** The {@linkcode RenderConfig} of the shared render options; unset ones are left out. */
export function renderConfigFrom(flags: RenderConfigFlags): RenderConfig {
  const config: RenderConfig = {
    fps: flags.fps,
    width: flags.width,
    height: flags.height,
    format: flags.format,
    quality: flags.quality,
    chunkSize: flags.chunkSize,
    maxParallelChunks: flags.maxParallelChunks,
    targetChunkFrames: flags.targetChunkFrames,
  };
  for (const key of Object.keys(config) as (keyof RenderConfig)[]) {
    if (config[key] === undefined) delete config[key];
  }
  return config;
}

/** Reserved concurrency of the render function, from the environment (deploy's --concurrency). */
export const RESERVED_ENV = "VID_LAMBDA_RESERVED_CONCURRENCY";

/** `VID_LAMBDA_RESERVED_CONCURRENCY` as a positive integer, or `undefined` when unset. */
export function reservedConcurrencyFromEnv(): number | undefined {
  const raw = Deno.env.get(RESERVED_ENV);
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new LambdaUsageError(`${RESERVED_ENV} must be a positive integer, got ${raw}`);
  }
  return value;
}

/** The function time cap for the warning: `VID_LAMBDA_TIMEOUT_SECONDS`, else 900. */
function timeoutFromEnv(): number {
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
  const code = reportError(hinted(explainStackError(error)), json);
  Deno.exitCode = error instanceof LambdaUsageError ? EXIT.usage : code;
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
  const out = new Error(message);
  out.name = error.name;
  return out;
}

function progressLine(p: LambdaRenderProgress): string {
  const frames = p.framesTotal !== undefined
    ? `, frames ${p.framesDone ?? 0}/${p.framesTotal}`
    : "";
  const cost = `, ~$${p.costEstimate.usd.toFixed(4)}`;
  const where = p.outputLocation ? ` ${p.outputLocation}` : "";
  // Retried chunks: which, which attempt, and why the last one failed.
  const retries = p.retries.map((r) => {
    const why = readableExecutionError(r.errors.at(-1) ?? "");
    const reason = why.length > 160 ? `${why.slice(0, 157)}...` : why;
    return `; ${r.index === undefined ? "a chunk" : `chunk ${r.index}`} attempt ${r.attempts}` +
      (reason ? ` (retried after ${reason})` : "");
  }).join("");
  return `${p.status}: chunks ${p.chunksDone}/${p.chunksTotal}${frames}${cost}${where}${retries}`;
}

function progressJson(p: LambdaRenderProgress): Record<string, unknown> {
  return {
    ...p,
    // A failed chunk's cause is Lambda's JSON; machines get the readable message too.
    errors: p.errors.map(readableExecutionError),
    startedAt: p.startedAt?.toISOString(),
    stoppedAt: p.stoppedAt?.toISOString(),
  };
}

/** Registers `vid lambda`. */
export function registerLambda(program: Command): void {
  const lambda = program
    .command("lambda")
    .description(
      "Distributed rendering: one Step Functions execution per render, one Lambda invocation " +
        "per chunk. `vid lambda local` runs the whole stack on this machine.",
    );

  lambda
    .command("local")
    .summary("Run the whole stack on this machine and print its outputs and environment.")
    .description(
      "Start the stack locally (s3rver, local Step Functions, the worker under Node 22) and " +
        "print its outputs and the environment for the other `vid lambda` commands. Stays up " +
        "until Ctrl-C or SIGTERM.\n\n" +
        "Time cap: each task may run --timeout seconds (env VID_LAMBDA_TIMEOUT_SECONDS, default " +
        "900, Lambda's 15 minutes); a chunk that runs longer fails the render with ChunkTimedOut, " +
        "naming the chunk, its frames and the fix (smaller chunks or more memory).\n\n" +
        "Concurrency: at most --concurrency tasks run at once (env VID_LAMBDA_CONCURRENCY, " +
        "default twice the CPU count), like the function's reserved concurrency; later tasks " +
        "wait for a free worker. Workers stay warm between tasks (env VID_LAMBDA_WARM_WORKERS " +
        "idle processes, default 4; 0 starts a fresh process per task).",
    )
    .option(
      "--port <n>",
      "S3 port, Step Functions on the next (default: free ports)",
      (v) => integerIn("--port", 1, 65534)(v),
    )
    .option("--data-dir <dir>", "keep the bucket's objects in this folder")
    .option(
      "--timeout <s>",
      "emulated function time cap per task, seconds (env VID_LAMBDA_TIMEOUT_SECONDS; " +
        "default: 900)",
      positiveInteger("--timeout"),
    )
    .option(
      "--concurrency <n>",
      "most tasks running at once, like reserved concurrency (env VID_LAMBDA_CONCURRENCY; " +
        "default: twice the CPU count)",
      positiveInteger("--concurrency"),
    )
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        const stack = await startLocalStack({
          port: options.port,
          dataDir: options.dataDir,
          timeoutSeconds: options.timeout,
          concurrency: options.concurrency,
          onLog: (text) => console.error(text.trimEnd()),
        });
        if (options.json) {
          const { close: _close, ...outputs } = stack;
          console.log(JSON.stringify({ ok: true, ...outputs }, null, 2));
        } else {
          console.log(`RenderBucketName       ${stack.RenderBucketName}`);
          console.log(`RenderStateMachineArn  ${stack.RenderStateMachineArn}`);
          console.log(`S3 endpoint            ${stack.s3Endpoint}`);
          console.log(`Step Functions         ${stack.sfnEndpoint}`);
          console.log(`Concurrency            ${stack.concurrency} tasks at once`);
          console.log("\n# use the stack from another shell:");
          for (const [key, value] of Object.entries(stack.env)) {
            console.log(`export ${key}=${value}`);
          }
        }
        await new Promise<void>((resolve) => {
          const stop = () => {
            Deno.removeSignalListener("SIGINT", stop);
            Deno.removeSignalListener("SIGTERM", stop);
            resolve();
          };
          Deno.addSignalListener("SIGINT", stop);
          Deno.addSignalListener("SIGTERM", stop);
        });
        await stack.close();
      } catch (error) {
        fail(error, options.json);
      }
    });

  lambda
    .command("deploy")
    .summary("Deploy the stack once per account and region (Pulumi).")
    .description(
      "Deploy the stack (bucket, function, state machine) once per account and region with " +
        "the Pulumi Automation API; needs the Pulumi CLI on PATH. Builds the packaged worker " +
        "(Chromium and ffmpeg included) first. Prints RenderBucketName and RenderStateMachineArn.",
    )
    .option(
      "--concurrency <n>",
      "reserved concurrency of the render function (default: unreserved)",
      positiveInteger("--concurrency"),
    )
    .option(
      "--memory <mb>",
      "memory of the render function, MB, 128-10240 (the maximum)",
      integerIn("--memory", 128, 10240),
      10240,
    )
    .option("--stack <name>", "Pulumi stack", "dev")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option(
      "--worker-path <dir>",
      "deploy this packaged worker (default: build it into dist/worker first)",
    )
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        const { region, ...outputs } = await deployStack({
          stack: options.stack,
          region: options.region,
          memory: options.memory,
          concurrency: options.concurrency,
          workerPath: options.workerPath,
        });
        if (options.json) {
          console.log(JSON.stringify({ ok: true, region, ...outputs }, null, 2));
        } else {
          console.log(`RenderBucketName       ${outputs.RenderBucketName}`);
          console.log(`RenderStateMachineArn  ${outputs.RenderStateMachineArn}`);
        }
      } catch (error) {
        fail(error, options.json);
      }
    });

  const sites = lambda.command("sites").description(
    "Upload, list and remove the projects (sites) in the render bucket",
  );
  sites
    .command("create")
    .summary("Upload the project once; prints its content-addressed Site ID.")
    .description(
      "Upload the project once under its content address; prints the Site ID. An unchanged " +
        "project uploads nothing." + ENV_HELP,
    )
    .argument("<projectDir>", "project directory")
    .option("-c, --composition <file>", "entry HTML file", "index.html")
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (projectDir, options) => {
      try {
        const conn = connection(options);
        const site = await deploySite({
          projectDir,
          composition: options.composition,
          bucketName: conn.bucket(),
          s3: conn.s3,
        });
        if (options.json) {
          console.log(JSON.stringify({ ok: true, ...site }, null, 2));
        } else {
          if (!site.uploaded) console.error(`site ${site.siteId} already uploaded`);
          console.log(site.siteId);
        }
      } catch (error) {
        fail(error, options.json);
      }
    });

  sites
    .command("list")
    .summary("List the sites in the render bucket, newest first.")
    .description(
      "List the sites uploaded to the render bucket, newest first: site id, upload time, " +
        "files, size and entry. A site whose upload never finished shows as incomplete." +
        ENV_HELP,
    )
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        const conn = connection(options);
        const list = await listSites(conn.bucket(), { s3: conn.s3 });
        if (options.json) {
          console.log(JSON.stringify({ ok: true, sites: list }, null, 2));
        } else if (list.length === 0) {
          console.error("no sites in the bucket; upload one with `vid lambda sites create`");
        } else {
          for (const site of list) {
            const when = site.created ?? "incomplete";
            console.log(
              `${site.siteId}  ${when}  ${site.files} files  ${site.bytes} bytes  ` +
                `${site.composition ?? "-"}`,
            );
          }
        }
      } catch (error) {
        fail(error, options.json);
      }
    });

  sites
    .command("rm")
    .summary("Delete sites from the render bucket.")
    .description(
      "Delete every object of the given sites from the render bucket (site.json first, so a " +
        "half-deleted site is never used). Renders already started from a site may fail; " +
        "their finished outputs are kept." + ENV_HELP,
    )
    .argument("<siteIds...>", "site ids, as `vid lambda sites list` prints them")
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (siteIds, options) => {
      try {
        const conn = connection(options);
        const bucketName = conn.bucket();
        const removed: { siteId: string; objects: number }[] = [];
        for (const siteId of siteIds) {
          removed.push({ siteId, objects: await removeSite(siteId, bucketName, { s3: conn.s3 }) });
          if (!options.json) console.log(`removed ${siteId} (${removed.at(-1)!.objects} objects)`);
        }
        if (options.json) console.log(JSON.stringify({ ok: true, removed }, null, 2));
      } catch (error) {
        fail(error, options.json);
      }
    });

  lambda
    .command("render")
    .summary("Start one distributed render; --wait streams progress until it finishes.")
    .description(
      "Start one distributed render. Without --site-id the project is uploaded first (a " +
        "no-op when unchanged). Prints the render id and execution ARN at once, or with " +
        "--wait streams progress lines until the render finishes.\n\n" +
        "Variables are checked against the composition that renders (with --site-id, the " +
        "site's own, read from the bucket): a mismatch is a warning on stderr, or with " +
        "--strict-variables an error before anything starts. With --site-id the project " +
        "directory is optional; when given and it no longer packages to that site, a warning " +
        "says so (the uploaded site still renders)." + ENV_HELP,
    )
    .argument("[projectDir]", "project directory (optional with --site-id)")
    .option("--site-id <id>", "render a site uploaded earlier; skip packaging and upload")
    .option("-c, --composition <file>", "entry HTML file", "index.html")
    .option("--state-machine-arn <arn>", "the workflow (env VID_LAMBDA_STATE_MACHINE_ARN)")
    .option(
      "--width <px>",
      "output width in pixels (default: data-width)",
      positiveInteger("--width"),
    )
    .option(
      "--height <px>",
      "output height in pixels (default: data-height)",
      positiveInteger("--height"),
    )
    .option(
      "--fps <rate>",
      "frames per second, 1-240: 30, 29.97 or 30000/1001 (default: 30)",
      frameRateArg("--fps"),
    )
    .addOption(
      new Option("--format <format>", "output format (default: mp4)").choices(LAMBDA_FORMATS),
    )
    .addOption(
      new Option("--quality <preset>", "encoder preset (default: standard)")
        .choices(LAMBDA_QUALITIES),
    )
    .option("--variables <json>", VARIABLES_HELP.variables)
    .option("--variables-file <path>", VARIABLES_HELP.variablesFile)
    .option("--strict-variables", "fail, starting nothing, when a variable does not match")
    .option(
      "--reserved-concurrency <n>",
      "reserved concurrency of the render function (env VID_LAMBDA_RESERVED_CONCURRENCY), " +
        "to warn when --max-parallel-chunks exceeds it",
      positiveInteger("--reserved-concurrency"),
    )
    .option(
      "--output-key <key>",
      "object key of the output (default: renders/<renderId>/out.<format>)",
    )
    .option(
      "--max-parallel-chunks <n>",
      "cap on chunks, so on chunk workers at once (default: 16)",
      positiveInteger("--max-parallel-chunks"),
    )
    .option(
      "--target-chunk-frames <n>",
      "ceiling on frames per chunk; ignored when --chunk-size is set",
      positiveInteger("--target-chunk-frames"),
    )
    .option(
      "--chunk-size <n>",
      "frames per chunk (default: 240)",
      positiveInteger("--chunk-size"),
    )
    .option(
      "--memory <mb>",
      "memory the render function was deployed with, MB, for the time-cap warning " +
        "(default: 10240; the cap is env VID_LAMBDA_TIMEOUT_SECONDS, default 900)",
      integerIn("--memory", 128, 10240),
    )
    .option("--wait", "stream progress until the render finishes")
    .option(
      "--poll-interval <ms>",
      "milliseconds between progress polls with --wait",
      positiveInteger("--poll-interval"),
      1000,
    )
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (projectDir, options) => {
      try {
        if (projectDir === undefined && !options.siteId) {
          throw new LambdaUsageError(
            "pass the project directory, or --site-id <id> to render a site uploaded earlier",
          );
        }
        const conn = connection(options);
        const bucketName = conn.bucket();
        const stateMachineArn = conn.stateMachineArn();
        const reservedConcurrency = options.reservedConcurrency ?? reservedConcurrencyFromEnv();
        const variables = options.variables !== undefined || options.variablesFile !== undefined
          ? await loadOverrides({
            variables: options.variables,
            variablesFile: options.variablesFile,
          })
          : undefined;
        const config = renderConfigFrom(options);
        if (variables !== undefined) config.variables = variables as RenderConfig["variables"];
        // Pure checks first (input size, options): no request is worth making before them.
        const standIn = siteHandleFromId(options.siteId ?? "site-0000000000000000", bucketName, {
          composition: options.composition,
          s3: conn.s3,
        });
        validateConfig({
          renderId: "r-check",
          bucketName,
          siteId: standIn.siteId,
          serveUrl: standIn.serveUrl,
          composition: options.composition,
          outputKey: options.outputKey ?? "renders/r-check/out.mp4",
          config,
        });
        let siteHandle: SiteHandle;
        let duration: number | undefined;
        if (options.siteId) {
          // The site in the bucket is what renders: check it exists and holds the
          // composition, and read the declarations from it, before anything starts.
          const site = await loadSite(options.siteId, bucketName, {
            composition: options.composition,
            s3: conn.s3,
          });
          siteHandle = site;
          duration = site.duration;
          if (projectDir !== undefined) {
            const local = await packageProject(projectDir, { composition: options.composition })
              .then((pkg) => pkg.siteId, () => undefined);
            if (local !== undefined && local !== site.siteId) {
              warn(
                `${projectDir} packages as ${local}, not ${site.siteId}: rendering the uploaded ` +
                  `site ${site.siteId} (--site-id); drop --site-id to upload and render ` +
                  `${projectDir} as it is now`,
              );
            }
          }
        } else {
          siteHandle = await deploySite({
            projectDir: projectDir!,
            composition: options.composition,
            bucketName,
            s3: conn.s3,
          });
          duration = await readComposition(projectDir!, options.composition).then(
            (composition) => composition.duration,
            () => undefined,
          );
        }
        // The composition's length sizes the largest chunk for the time-cap warning.
        const frames = duration !== undefined ? frameCount(duration, options.fps ?? 30) : undefined;
        const handle = await renderToLambda({
          siteHandle,
          bucketName,
          stateMachineArn,
          config,
          outputKey: options.outputKey,
          sfn: conn.sfn,
          memoryMb: options.memory,
          frames,
          timeoutSeconds: timeoutFromEnv(),
          reservedConcurrency,
          strictVariables: options.strictVariables === true,
          onWarning: warn,
        });
        const started = {
          renderId: handle.renderId,
          executionArn: handle.executionArn,
          siteId: siteHandle.siteId,
          bucketName: handle.bucketName,
          outputKey: handle.outputKey,
        };
        if (!options.wait) {
          if (options.json) {
            console.log(JSON.stringify({ ok: true, status: "running", ...started }, null, 2));
          } else {
            console.log(handle.renderId);
            console.log(handle.executionArn);
          }
          return;
        }
        if (!options.json) console.error(`started ${handle.renderId}`);
        let last = "";
        let progress: LambdaRenderProgress;
        while (true) {
          progress = await getRenderProgress({
            executionArn: handle.executionArn,
            bucketName,
            sfn: conn.sfn,
            s3: conn.s3,
          });
          const line = progressLine(progress);
          if (line !== last) {
            if (options.json) {
              console.error(JSON.stringify({ event: "progress", ...progressJson(progress) }));
            } else console.error(line);
            last = line;
          }
          if (progress.status !== "running") break;
          await sleep(options.pollInterval);
        }
        const ok = progress.status === "succeeded";
        if (options.json) {
          console.log(JSON.stringify({ ok, ...started, ...progressJson(progress) }, null, 2));
        } else if (ok) {
          console.log(progress.outputLocation);
        } else {
          for (const e of progress.errors) console.error(`error: ${readableExecutionError(e)}`);
          console.error(`render ${handle.renderId} ${progress.status}`);
        }
        if (!ok) Deno.exitCode = EXIT.failed;
      } catch (error) {
        fail(error, options.json);
      }
    });

  registerLambdaBatch(lambda);

  lambda
    .command("progress")
    .summary("Where a render (or with --manifest, a batch) is: status, chunks, cost so far.")
    .description(
      "Where a render is: status, chunks, frames, errors, cost so far. With --manifest, where " +
        "every row of a batch is, with totals.\n\n" +
        "Exit status with --manifest: 0 when every row succeeded; 3 while any row is still " +
        "running; 1 when none runs and a row failed, timed out, was aborted, failed to start " +
        "or was not started (run the batch again to retry them); 4 when the stack cannot be " +
        "reached or a row's execution cannot be read. For one render the same codes: 0 " +
        "succeeded, 3 running, 1 failed, timed out or aborted." + ENV_HELP,
    )
    .argument("[render]", "render id (with the state machine) or execution ARN")
    .option("--manifest <file>", "a batch's manifest (`vid lambda render-batch --manifest`)")
    .option("--state-machine-arn <arn>", "the workflow (env VID_LAMBDA_STATE_MACHINE_ARN)")
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (render, options) => {
      try {
        const flags: ConnectionFlags = options;
        const conn = connection(flags);
        if (options.manifest !== undefined) {
          if (render !== undefined) {
            throw new LambdaUsageError("pass a render or --manifest <file>, not both");
          }
          return await printBatchProgress(options.manifest, conn, options);
        }
        if (render === undefined) {
          throw new LambdaUsageError("pass a render id or execution ARN, or --manifest <file>");
        }
        const bucketName = flags.bucket ?? Deno.env.get("VID_LAMBDA_BUCKET") ?? undefined;
        const progress = await getRenderProgress({
          ...(render.startsWith("arn:")
            ? { executionArn: render }
            : { renderId: render, stateMachineArn: conn.stateMachineArn() }),
          bucketName,
          sfn: conn.sfn,
          s3: conn.s3,
        });
        // A script polling one render gets the batch's codes: only a success is 0.
        const exitCode = progress.status === "succeeded"
          ? BATCH_PROGRESS_EXIT.succeeded
          : progress.status === "running"
          ? BATCH_PROGRESS_EXIT.running
          : BATCH_PROGRESS_EXIT.failed;
        if (options.json) {
          console.log(JSON.stringify(
            { ok: exitCode === BATCH_PROGRESS_EXIT.succeeded, exitCode, ...progressJson(progress) },
            null,
            2,
          ));
        } else {
          console.log(`${progress.renderId}  ${progressLine(progress)}`);
          for (const e of progress.errors) console.log(`  error: ${readableExecutionError(e)}`);
        }
        Deno.exitCode = exitCode;
      } catch (error) {
        fail(error, options.json);
      }
    });

  lambda
    .command("cancel")
    .summary("Stop a running render, or every running render of a batch (--manifest).")
    .description(
      "Stop a render's execution (StopExecution): no more chunks start and the render ends " +
        "`aborted`. With --manifest, every row of a batch that is still running. Renders that " +
        "already ended are left as they are. A cancelled batch row starts again as a new " +
        "attempt when the batch is run again." + ENV_HELP,
    )
    .argument("[render]", "render id (with the state machine) or execution ARN")
    .option("--manifest <file>", "a batch's manifest (`vid lambda render-batch --manifest`)")
    .option("--state-machine-arn <arn>", "the workflow (env VID_LAMBDA_STATE_MACHINE_ARN)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (render, options) => {
      try {
        const conn = connection(options);
        if ((render === undefined) === (options.manifest === undefined)) {
          throw new LambdaUsageError("pass a render id or execution ARN, or --manifest <file>");
        }
        const targets = options.manifest !== undefined
          ? (await readBatchManifest(options.manifest))
            .filter((row) => row.executionArn !== null)
            .map((row) => ({ line: row.line as number | undefined, arn: row.executionArn! }))
          : [{ line: undefined, arn: executionArnFrom(render!, conn) }];
        const results = await pool(targets, 10, async (t) => ({
          ...(t.line !== undefined ? { line: t.line } : {}),
          ...await cancelRender({ executionArn: t.arn, sfn: conn.sfn }),
        }));
        if (options.json) {
          console.log(JSON.stringify({ ok: true, results }, null, 2));
        } else {
          for (const r of results) {
            const id = r.executionArn.split(":").pop();
            const what = r.cancelled ? "cancelled" : `already ${r.status}`;
            console.log(`${r.line !== undefined ? `${r.line} ` : ""}${id} ${what}`);
          }
          if (options.manifest !== undefined) {
            const n = results.filter((r) => r.cancelled).length;
            console.error(`${n} of ${results.length} executions cancelled`);
          }
        }
      } catch (error) {
        fail(error, options.json);
      }
    });

  lambda
    .command("download")
    .summary("Fetch a finished render's output to a file, or print a presigned URL (--url).")
    .description(
      "Download a succeeded render's output (its bucket and key come from the execution) to " +
        "-o FILE: written to a temp file beside it, renamed once complete, so a failed " +
        "download leaves nothing. With --url, print a presigned HTTPS URL of the output " +
        "instead (valid --expires-in seconds). A render still running or failed is an error " +
        "saying so." + ENV_HELP,
    )
    .argument("<render>", "render id (with the state machine) or execution ARN")
    .option("-o, --output <file>", "file to write")
    .option("--url", "print a presigned URL instead of downloading")
    .option(
      "--expires-in <s>",
      "lifetime of the --url, seconds, at most 604800 (default: 3600)",
      integerIn("--expires-in", 1, 604800),
    )
    .option("--state-machine-arn <arn>", "the workflow (env VID_LAMBDA_STATE_MACHINE_ARN)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (render, options) => {
      try {
        const conn = connection(options);
        if ((options.output === undefined) === (options.url === undefined)) {
          throw new LambdaUsageError("pass -o <file> to download, or --url for a presigned URL");
        }
        const executionArn = executionArnFrom(render, conn);
        if (options.url) {
          const signed = await renderOutputUrl({
            executionArn,
            sfn: conn.sfn,
            s3: conn.s3,
            expiresIn: options.expiresIn,
          });
          if (options.json) console.log(JSON.stringify({ ok: true, ...signed }, null, 2));
          else console.log(signed.url);
          return;
        }
        const done = await downloadRender({
          executionArn,
          sfn: conn.sfn,
          s3: conn.s3,
          output: options.output!,
        });
        if (options.json) console.log(JSON.stringify({ ok: true, ...done }, null, 2));
        else {
          console.error(`s3://${done.bucketName}/${done.outputKey}: ${done.bytes} bytes`);
          console.log(done.output);
        }
      } catch (error) {
        fail(error, options.json);
      }
    });
}

/** The execution ARN of a render id or ARN argument. */
function executionArnFrom(render: string, conn: Connection): string {
  return render.startsWith("arn:") ? render : executionArnOf(conn.stateMachineArn(), render);
}
