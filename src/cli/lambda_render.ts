/**
 * `vid lambda render`: one distributed render, from a project directory or an uploaded site.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { readComposition } from "../composition/composition.ts";
import { loadOverrides } from "../composition/variables.ts";
import { frameCount } from "../render/render.ts";
import type { RenderConfig } from "../lambda/config.ts";
import { validateConfig } from "../lambda/config.ts";
import { readableExecutionError } from "../lambda/execution_error.ts";
import {
  deploySite,
  getRenderProgress,
  type LambdaRenderProgress,
  type RenderHandle,
  renderToLambda,
  type SiteHandle,
  siteHandleFromId,
} from "../lambda/sdk.ts";
import { loadSite } from "../lambda/sites.ts";
import { packageProject } from "../project/package.ts";
import { OPTIONS } from "../request/options.ts";
import {
  type Connection,
  connection,
  type ConnectionFlags,
  ENV_HELP,
  fail,
  LambdaUsageError,
  type RenderConfigFlags,
  renderConfigFrom,
  reservedConcurrencyFromEnv,
  timeoutFromEnv,
} from "./lambda_connection.ts";
import { progressJson, progressLine } from "./lambda_progress.ts";
import { checkBeforeSpending, noCheckOption } from "./preflight.ts";
import { cliOption, cliOptionWithDefault, cliSwitch } from "./request_flags.ts";
import { EXIT, integerIn, positiveInteger, warn } from "./shared.ts";
import { sleep } from "../util/async.ts";

/** Registers `vid lambda render`. */
export function registerLambdaRender(lambda: Command): void {
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
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .option("--state-machine-arn <arn>", "the workflow (env VID_LAMBDA_STATE_MACHINE_ARN)")
    .addOption(cliOption(OPTIONS.width))
    .addOption(cliOption(OPTIONS.height))
    .addOption(cliOption(OPTIONS.fps, { defaultText: "30" }))
    .addOption(cliOption(OPTIONS.videoFormat))
    .addOption(cliOption(OPTIONS.quality))
    .addOption(cliOption(OPTIONS.loudness))
    .addOption(cliOption(OPTIONS.scale, { defaultText: "1" }))
    .addOption(cliOption(OPTIONS.frameTimeoutMs))
    .addOption(cliOption(OPTIONS.variables))
    .addOption(cliOption(OPTIONS.variablesFile))
    .addOption(cliSwitch(OPTIONS.strictVariables, {
      help: "fail, starting nothing, when a variable does not match",
    }))
    .addOption(cliOption(OPTIONS.reservedConcurrency))
    .option(
      "--output-key <key>",
      "object key of the output (default: renders/<renderId>/out.<format>)",
    )
    .addOption(cliOption(OPTIONS.maxParallelChunks))
    .addOption(cliOption(OPTIONS.targetChunkFrames))
    .addOption(cliOption(OPTIONS.chunkSize))
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
    .addOption(noCheckOption())
    .option("--json", "print machine-readable JSON on stdout")
    .action((projectDir, options) => runLambdaRender(projectDir, options));
}

/** The flags of `vid lambda render`, as commander parses them. */
interface LambdaRenderFlags extends ConnectionFlags, RenderConfigFlags {
  siteId?: string;
  composition: string;
  variables?: string;
  variablesFile?: string;
  strictVariables?: true;
  reservedConcurrency?: number;
  outputKey?: string;
  memory?: number;
  wait?: true;
  pollInterval: number;
  /** False with `--no-check`. */
  check: boolean;
  json?: true;
}

/** Runs `vid lambda render`: checks, uploads (unless --site-id), starts, and with --wait follows. */
async function runLambdaRender(
  projectDir: string | undefined,
  options: LambdaRenderFlags,
): Promise<void> {
  try {
    if (projectDir === undefined && !options.siteId) {
      throw new LambdaUsageError(
        "pass the project directory, or --site-id <id> to render a site uploaded earlier",
      );
    }
    // A project from this disk is checked first, before it is uploaded and its chunks paid for.
    if (projectDir !== undefined && !options.siteId) {
      await checkBeforeSpending(projectDir, options.composition, {
        enabled: options.check,
        variables: options.variables,
        variablesFile: options.variablesFile,
        warn,
      });
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
    const { siteHandle, duration } = await renderSite(projectDir, options, conn);
    // The composition's length sizes the largest chunk for the time-cap warning.
    const frames = duration !== undefined
      ? frameCount(duration, options.fps ?? Number(OPTIONS.fps.default))
      : undefined;
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
    await followRender(handle, started, options, conn);
  } catch (error) {
    fail(error, options.json);
  }
}

/**
 * The site that renders and the composition's length (for the time-cap warning): the
 * uploaded site (`--site-id`, checked in the bucket; a project directory that no longer
 * packages to it is a warning), or the project deployed now.
 */
async function renderSite(
  projectDir: string | undefined,
  options: LambdaRenderFlags,
  conn: Connection,
): Promise<{ siteHandle: SiteHandle; duration: number | undefined }> {
  let siteHandle: SiteHandle;
  let duration: number | undefined;
  if (options.siteId) {
    // The site in the bucket is what renders: check it exists and holds the
    // composition, and read the declarations from it, before anything starts.
    const site = await loadSite(options.siteId, conn.bucket(), {
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
      bucketName: conn.bucket(),
      s3: conn.s3,
    });
    duration = await readComposition(projectDir!, options.composition).then(
      (composition) => composition.duration,
      () => undefined,
    );
  }
  return { siteHandle, duration };
}

/** `--wait`: polls the render, printing each new progress line, until it finishes. */
async function followRender(
  handle: RenderHandle,
  started: Record<string, string>,
  options: LambdaRenderFlags,
  conn: Connection,
): Promise<void> {
  if (!options.json) console.error(`started ${handle.renderId}`);
  let last = "";
  let progress: LambdaRenderProgress;
  while (true) {
    progress = await getRenderProgress({
      executionArn: handle.executionArn,
      bucketName: handle.bucketName,
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
}
