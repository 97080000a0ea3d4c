/**
 * `vid lambda render-batch`: one distributed render per line of a JSONL file.
 *
 * @module
 */

import { type Command, Option } from "@commander-js/extra-typings";
import { readComposition } from "../composition/composition.ts";
import type { VariableDeclaration } from "../composition/declarations.ts";
import { type BatchManifestRow, renderBatch } from "../lambda/batch.ts";
import type { RenderConfig } from "../lambda/config.ts";
import { LAMBDA_FORMATS, LAMBDA_QUALITIES } from "../lambda/config.ts";
import { deploySite, type SiteHandle, siteHandleFromId } from "../lambda/sdk.ts";
import { connection, ENV_HELP, fail, LambdaUsageError } from "./lambda.ts";
import { EXIT, integerIn, positiveInteger, warn } from "./shared.ts";

/** Registers `vid lambda render-batch` under `vid lambda`. */
export function registerLambdaBatch(lambda: Command): void {
  lambda
    .command("render-batch")
    .description(
      'Start one distributed render per line of a JSONL file ({"outputKey": ..., "variables":\n' +
        "{...}}). The site is deployed once (unless --site-id). Prints a summary and one row\n" +
        "per entry (line, outputKey, executionArn); blank lines are skipped. Exit status 1 when\n" +
        "any row failed to start." + ENV_HELP,
    )
    .argument("<projectDir>", "project directory")
    .requiredOption("--batch <file>", "JSONL file, one batch entry per line")
    .option("--site-id <id>", "render a site uploaded earlier; skip packaging and upload")
    .option("-c, --composition <file>", "entry HTML file", "index.html")
    .option("--state-machine-arn <arn>", "the workflow (env VID_LAMBDA_STATE_MACHINE_ARN)")
    .option("--width <px>", "output width", positiveInteger("--width"))
    .option("--height <px>", "output height", positiveInteger("--height"))
    .option("--fps <n>", "frames per second, integer 1-240", integerIn("--fps", 1, 240))
    .addOption(new Option("--format <format>", "output format").choices(LAMBDA_FORMATS))
    .addOption(new Option("--quality <preset>", "encoder preset").choices(LAMBDA_QUALITIES))
    .option(
      "--max-parallel-chunks <n>",
      "cap on chunks per render (default 16)",
      positiveInteger("--max-parallel-chunks"),
    )
    .option("--chunk-size <n>", "frames per chunk (default 240)", positiveInteger("--chunk-size"))
    .option(
      "--max-concurrent <n>",
      "cap on simultaneous workflow start calls (not on function concurrency)",
      positiveInteger("--max-concurrent"),
      50,
    )
    .option(
      "--reserved-concurrency <n>",
      "reserved concurrency of the render function, for the large-batch guidance",
      positiveInteger("--reserved-concurrency"),
    )
    .option("--strict-variables", "a row whose variables do not match fails to start")
    .option("--variables-file <path>", "not accepted: variables are inline per row")
    .option("--dry-run", "lint the file: every valid row would-invoke; nothing is uploaded")
    .option("--bucket <name>", "render bucket (env VID_LAMBDA_BUCKET)")
    .option("--region <region>", "AWS region (env AWS_REGION)")
    .option("--json", "print the manifest as a JSON array on stdout")
    .action(async (projectDir, options) => {
      try {
        if (options.variablesFile !== undefined) {
          throw new LambdaUsageError(
            "--variables-file is not accepted by render-batch: variables are inline per row " +
              '(the "variables" object of each JSONL line)',
          );
        }
        const conn = connection(options);
        const bucketName = conn.bucket();
        const stateMachineArn = conn.stateMachineArn();
        let declarations: readonly VariableDeclaration[] = [];
        try {
          declarations = (await readComposition(projectDir, options.composition)).declarations;
        } catch (error) {
          if (!options.siteId) throw error;
          warn(`cannot read ${projectDir} to check variables: ${(error as Error).message}`);
        }
        const baseConfig: RenderConfig = {
          fps: options.fps,
          width: options.width,
          height: options.height,
          format: options.format,
          quality: options.quality,
          chunkSize: options.chunkSize,
          maxParallelChunks: options.maxParallelChunks,
        };
        for (const key of Object.keys(baseConfig) as (keyof RenderConfig)[]) {
          if (baseConfig[key] === undefined) delete baseConfig[key];
        }
        const siteOptions = { composition: options.composition, s3: conn.s3 };
        // The dry run uploads nothing: a handle naming the site is enough to lint the rows.
        const siteHandle: SiteHandle = options.siteId
          ? siteHandleFromId(options.siteId, bucketName, siteOptions)
          : options.dryRun
          ? siteHandleFromId("site-dry-run", bucketName, siteOptions)
          : await deploySite({ projectDir, bucketName, ...siteOptions });
        const rows: BatchManifestRow[] = await renderBatch({
          batchFile: options.batch,
          siteHandle,
          bucketName,
          stateMachineArn,
          declarations,
          strict: options.strictVariables === true,
          baseConfig,
          maxConcurrent: options.maxConcurrent,
          dryRun: options.dryRun === true,
          sfn: conn.sfn,
          reservedConcurrency: options.reservedConcurrency,
          onWarning: warn,
        });
        const failed = rows.filter((r) => r.status === "failed-to-start").length;
        if (options.json) {
          console.log(JSON.stringify(rows, null, 2));
        } else {
          const ok = rows.length - failed;
          const verb = options.dryRun ? "would invoke" : "started";
          console.log(`${ok} ${verb}, ${failed} failed to start`);
          for (const row of rows) {
            console.log(`${row.line} ${row.outputKey ?? "-"} ${row.executionArn ?? "-"}`);
            if (row.error) console.error(`line ${row.line}: ${row.error}`);
          }
        }
        if (failed > 0) Deno.exitCode = EXIT.failed;
      } catch (error) {
        fail(error, options.json);
      }
    });
}
