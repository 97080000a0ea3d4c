/**
 * `vid lambda progress|cancel|download`: the renders already started, by id, ARN or batch
 * manifest.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { readableExecutionError } from "../lambda/execution_error.ts";
import { executionArnOf, getRenderProgress, type LambdaRenderProgress } from "../lambda/sdk.ts";
import { cancelRender, downloadRender, renderOutputUrl } from "../lambda/renders.ts";
import { readBatchManifest } from "../lambda/batch_progress.ts";
import { BATCH_PROGRESS_EXIT, printBatchProgress } from "./lambda_batch.ts";
import {
  type Connection,
  connection,
  type ConnectionFlags,
  ENV_HELP,
  fail,
  LambdaUsageError,
} from "./lambda_connection.ts";
import { progressJson, progressLine } from "./lambda_progress.ts";
import { integerIn } from "./shared.ts";
import { pool } from "../util/async.ts";

/** Registers `vid lambda progress`, `cancel` and `download`. */
export function registerLambdaRenders(lambda: Command): void {
  registerLambdaRendersProgress(lambda);
  registerLambdaRendersCancel(lambda);
  registerLambdaRendersDownload(lambda);
}

/** Registers the `progress` subcommand. */
function registerLambdaRendersProgress(lambda: Command): void {
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
        "succeeded, 3 running, 1 failed, timed out or aborted, 4 when it cannot be read (an " +
        "unknown id, an unreachable stack)." + ENV_HELP,
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
        const where = render.startsWith("arn:")
          ? { executionArn: render }
          : { renderId: render, stateMachineArn: conn.stateMachineArn() };
        let progress: LambdaRenderProgress;
        try {
          progress = await getRenderProgress({ ...where, bucketName, sfn: conn.sfn, s3: conn.s3 });
        } catch (error) {
          // As the manifest form: a render that cannot be read (unknown id, unreachable
          // stack) is 4, not a failed render's 1, so a polling script tells them apart.
          fail(error, options.json);
          Deno.exitCode = BATCH_PROGRESS_EXIT.unreachable;
          return;
        }
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
}

/** Registers the `cancel` subcommand. */
function registerLambdaRendersCancel(lambda: Command): void {
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
}

/** Registers the `download` subcommand. */
function registerLambdaRendersDownload(lambda: Command): void {
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
