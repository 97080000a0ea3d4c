/**
 * `vid lambda local` and `vid lambda deploy`: the stack, on this machine or in AWS.
 *
 * Both import what they run only when they run: every `vid lambda` command registers these
 * two, and loading the emulators (s3rver, the ASL interpreter) and the deployer would cost
 * each `vid lambda progress` or `render-batch` a third of its start-up.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { fail } from "./lambda_connection.ts";
import { integerIn, positiveInteger } from "./shared.ts";
import { listenForStop, runUntilStopped, shutdownTimeoutOption } from "./shutdown.ts";

/** Registers `vid lambda local` and `vid lambda deploy`. */
export function registerLambdaStack(lambda: Command): void {
  registerLambdaStackLocal(lambda);
  registerLambdaStackDeploy(lambda);
}

/** Registers the `local` subcommand. */
function registerLambdaStackLocal(lambda: Command): void {
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
    .addOption(shutdownTimeoutOption("end the workers, close the emulators"))
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        const { startLocalStack } = await import("../lambda/local/local_stack.ts");
        const stack = await startLocalStack({
          port: options.port,
          dataDir: options.dataDir,
          timeoutSeconds: options.timeout,
          concurrency: options.concurrency,
          onLog: (text) => console.error(text.trimEnd()),
        });
        // Caught before the outputs are printed: whoever reads them may signal at once.
        const signals = listenForStop();
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
        await runUntilStopped({
          signals,
          name: "vid lambda local",
          timeoutSeconds: options.shutdownTimeout,
          // stdout may be the JSON of the outputs: the notice goes to stderr.
          stopping: "vid lambda local: stopping",
          log: (message) => console.error(message),
          close: () => stack.close(),
          // Each worker leads a process group and exits as soon as its input closes,
          // which this exit does; its browsers and ffmpeg go with it (warm_workers.ts).
          kill: () => "its workers end with it, their browsers and ffmpeg too",
        });
      } catch (error) {
        fail(error, options.json);
      }
    });
}

/** Registers the `deploy` subcommand. */
function registerLambdaStackDeploy(lambda: Command): void {
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
        const { deployStack } = await import("../lambda/deploy/deploy.ts");
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
}
