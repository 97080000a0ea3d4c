/**
 * `vid cloud`: render on the hosted service (`render`), and read or delete renders
 * (`list`, `get`, `delete`).
 *
 * @module
 */

import { type Command, InvalidArgumentError } from "@commander-js/extra-typings";
import type { CloudClient } from "../cloud/client.ts";
import { connectCloud } from "../cloud/connect.ts";
import { cloudRender, type CloudRenderRecord, type CloudRenderResult } from "../cloud/render.ts";
import { OPTIONS } from "../request/options.ts";
import { checkBeforeSpending, noCheckOption } from "./preflight.ts";
import { cliOption, cliOptionWithDefault, cliSwitch } from "./request_flags.ts";
import { EXIT, integerIn, reportError, warn } from "./shared.ts";

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

const retryNotice = (info: { what: string; attempt: number; reason: string }) =>
  warn(`${info.what} failed (${info.reason}); retrying (attempt ${info.attempt + 1})`);

function describeRender(r: CloudRenderRecord): string {
  const lines = [
    `${r.render_id}  ${r.status}${
      r.status === "rendering" ? ` ${Math.round(r.progress * 100)}%` : ""
    }`,
  ];
  for (
    const field of [
      "asset_id",
      "format",
      "fps",
      "resolution",
      "aspect_ratio",
      "width",
      "height",
      "duration_seconds",
      "credits",
      "callback_id",
      "error",
      "created_at",
      "completed_at",
      "video_url",
      "thumbnail_url",
    ]
  ) {
    const value = r[field];
    if (value !== null && value !== undefined) lines.push(`  ${field.padEnd(16)} ${value}`);
  }
  return lines.join("\n");
}

/** Registers `vid cloud`. */
export function registerCloud(program: Command): void {
  const cloud = program
    .command("cloud")
    .summary("Render on the hosted service; list, read or delete your renders.")
    .description(
      "Render on the hosted service (CLOUD_API_URL; sign in with `vid auth login`), and " +
        "list, read or delete your renders.",
    );

  registerCloudRender(cloud);
  registerCloudList(cloud);
  registerCloudGet(cloud);
  registerCloudDelete(cloud);
}

/** Registers the `render` subcommand. */
function registerCloudRender(cloud: Command): void {
  cloud
    .command("render")
    .description(
      "Zip the project, upload it, render in the cloud, poll and download the video.\n" +
        "--asset-id or --url skip the upload. --dry-run only builds and inspects the zip.",
    )
    .argument("[dir]", "project directory", ".")
    .addOption(cliOption(OPTIONS.fps))
    .addOption(cliOptionWithDefault(OPTIONS.quality))
    .addOption(cliOption(OPTIONS.loudness))
    .addOption(cliOptionWithDefault(OPTIONS.videoFormat, {
      help: "mp4; webm and mov carry alpha (unset: the --output extension, else mp4)",
    }))
    .addOption(cliOptionWithDefault(OPTIONS.resolution))
    .addOption(cliOption(OPTIONS.aspectRatio))
    .addOption(
      cliOptionWithDefault(OPTIONS.composition, { help: "entry HTML file inside the zip" }),
    )
    .option("-o, --output <path>", "download path (default: renders/<render_id>.<ext>)")
    .option("--dry-run", "build and inspect the zip locally: no sign-in, upload or render")
    .addOption(noCheckOption())
    .option("--asset-id <id>", "render an uploaded asset; skip zip and upload")
    .option("--url <url>", "render a project zip or HTML file from a URL; skip the upload")
    .addOption(cliOption(OPTIONS.variables))
    .addOption(cliOption(OPTIONS.variablesFile))
    .addOption(cliSwitch(OPTIONS.strictVariables))
    .option("--no-wait", "submit, print the render_id and exit")
    .option("--callback-url <url>", "https webhook called when the render terminates")
    .addOption(cliOption(OPTIONS.callbackId))
    .addOption(cliOptionWithDefault(OPTIONS.pollInterval))
    .addOption(cliOptionWithDefault(OPTIONS.maxWait))
    .addOption(cliOption(OPTIONS.idempotencyKey))
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (dir, options, command) => {
      // The default mp4 gives way to the --output extension, as in vid render.
      const format = command.getOptionValueSource("format") === "default"
        ? undefined
        : options.format;
      const controller = new AbortController();
      const stop = () => controller.abort(new Error("cancelled"));
      Deno.addSignalListener("SIGINT", stop);
      let submitted: string | undefined;
      try {
        // A project from this disk is checked before it is zipped, uploaded and paid for.
        if (options.assetId === undefined && options.url === undefined) {
          await checkBeforeSpending(dir, options.composition, {
            enabled: options.check,
            variables: options.variables,
            variablesFile: options.variablesFile,
            warn,
          });
        }
        const result = await cloudRender(
          {
            target: dir,
            composition: options.composition,
            fps: options.fps,
            quality: options.quality,
            loudness: options.loudness,
            format,
            resolution: options.resolution,
            aspectRatio: options.aspectRatio,
            output: options.output,
            dryRun: options.dryRun,
            assetId: options.assetId,
            url: options.url,
            variables: options.variables,
            variablesFile: options.variablesFile,
            strictVariables: options.strictVariables,
            noWait: !options.wait,
            callbackUrl: options.callbackUrl,
            callbackId: options.callbackId,
            pollInterval: options.pollInterval,
            maxWait: options.maxWait,
            idempotencyKey: options.idempotencyKey,
            signal: controller.signal,
            onWarning: warn,
            onStage: stageReporter(options.json === true, (id) => submitted = id),
          },
          () => connectForRender(options.idempotencyKey),
        );
        printCloudResult(result, options.json === true);
      } catch (error) {
        if (controller.signal.aborted) {
          console.error(
            submitted
              ? `cancelled; render ${submitted} continues on the server; check it with: vid cloud get ${submitted}`
              : "cancelled; no render was submitted",
          );
          Deno.exitCode = EXIT.cancelled;
          return;
        }
        Deno.exitCode = reportError(error, options.json);
      } finally {
        Deno.removeSignalListener("SIGINT", stop);
      }
    });
}

/** Tells the user what `vid cloud render` is doing; `onSubmitted` learns the render id. */
function stageReporter(
  json: boolean,
  onSubmitted: (renderId: string) => void,
): (stage: string, detail?: Record<string, unknown>) => void {
  return (stage, detail) => {
    if (stage === "submitted") onSubmitted(String(detail?.renderId));
    if (json) return;
    if (stage === "uploading") {
      console.error(`uploading ${formatBytes(Number(detail?.bytes))}`);
    } else if (stage === "submitted") {
      console.error(`submitted ${detail?.renderId}`);
    } else if (stage === "rendering") {
      const progress = Math.round(Number(detail?.progress ?? 0) * 100);
      console.error(`${detail?.status} ${progress}%`);
    } else if (stage === "downloading") {
      console.error(`downloading to ${detail?.output}`);
    }
  };
}

/**
 * Signs in for a render; a retried billable call without `--idempotency-key` warns that a
 * re-run may bill twice.
 */
function connectForRender(idempotencyKey: string | undefined): Promise<CloudClient> {
  return connectCloud({
    onRetry: (info) => {
      retryNotice(info);
      const billable = info.what === "create the asset" ||
        info.what === "upload the project zip" || info.what === "submit the render";
      if (billable && !idempotencyKey) {
        warn(
          "upload retried without an idempotency key: this run reuses its own key, " +
            "but re-running the command may create a duplicate asset and bill twice; " +
            "pass --idempotency-key to make re-runs safe",
        );
      }
    },
    onWarning: warn,
  });
}

/** Prints what `vid cloud render` did: JSON, the dry run's zip, the render id or the file. */
function printCloudResult(result: CloudRenderResult, json: boolean): void {
  if (json) {
    console.log(JSON.stringify({ ok: true, ...result }, null, 2));
  } else if (result.dryRun) {
    console.log(
      `${result.projectDir} (${result.composition}, ${result.aspectRatio})\n` +
        `  zip ${formatBytes(result.compressedBytes)} (${formatBytes(result.uncompressedBytes)} ` +
        `unpacked), ${result.fileCount} files, site ${result.siteId}\n  largest files:`,
    );
    for (const file of result.largest) {
      console.log(`    ${formatBytes(file.size).padStart(10)}  ${file.path}`);
    }
  } else if (result.status === "queued") {
    console.log(result.renderId);
  } else {
    console.log(`rendered ${result.output} (${result.renderId})`);
  }
}

/** Registers the `list` subcommand. */
function registerCloudList(cloud: Command): void {
  cloud
    .command("list")
    .description("Recent renders, newest first")
    .option("--limit <n>", "renders per page, 1-100", integerIn("--limit", 1, 100), 20)
    .option("--token <token>", "page token from a previous list")
    .option("--all", "include deleted renders")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        const client = await connectCloud({ onRetry: retryNotice, onWarning: warn });
        const query = new URLSearchParams({ limit: String(options.limit) });
        if (options.token) query.set("token", options.token);
        if (options.all) query.set("all", "true");
        const page = await client.request<{ data: CloudRenderRecord[]; next_token: string | null }>(
          "GET",
          `/v3/vid/renders?${query}`,
        );
        if (options.json) {
          console.log(JSON.stringify({ ok: true, ...page }, null, 2));
          return;
        }
        if (page.data.length === 0) console.log("no renders");
        for (const r of page.data) {
          console.log(
            `${r.render_id}  ${String(r.status).padEnd(9)}  ${r.created_at}  ${r.format}`,
          );
        }
        if (page.next_token) console.log(`more: vid cloud list --token ${page.next_token}`);
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}

/** Registers the `get` subcommand. */
function registerCloudGet(cloud: Command): void {
  cloud
    .command("get")
    .description("Full detail of a render, with a fresh short-lived signed video_url")
    .argument("<render_id>", "the render")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (renderId, options) => {
      try {
        const client = await connectCloud({ onRetry: retryNotice, onWarning: warn });
        const render = await client.request<CloudRenderRecord>(
          "GET",
          `/v3/vid/renders/${encodeURIComponent(renderId)}`,
        );
        console.log(
          options.json ? JSON.stringify({ ok: true, ...render }, null, 2) : describeRender(render),
        );
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}

/** Registers the `delete` subcommand. */
function registerCloudDelete(cloud: Command): void {
  cloud
    .command("delete")
    .description("Soft-delete a render (asks first on a terminal)")
    .argument("<render_id>", "the render")
    .option("--no-confirm", "do not ask")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (renderId, options) => {
      try {
        if (options.confirm) {
          if (!Deno.stdin.isTerminal()) {
            throw new InvalidArgumentError(
              `refusing to delete ${renderId} without confirmation: no terminal to ask on; pass --no-confirm`,
            );
          }
          const answer = prompt(`Delete render ${renderId}? [y/N]`);
          if (!/^y(es)?$/i.test(answer?.trim() ?? "")) {
            console.error("not deleted");
            Deno.exitCode = EXIT.failed;
            return;
          }
        }
        const client = await connectCloud({ onRetry: retryNotice, onWarning: warn });
        const result = await client.request<{ render_id: string; deleted: boolean }>(
          "DELETE",
          `/v3/vid/renders/${encodeURIComponent(renderId)}`,
        );
        console.log(
          options.json ? JSON.stringify({ ok: true, ...result }, null, 2) : `deleted ${renderId}`,
        );
      } catch (error) {
        if (error instanceof InvalidArgumentError) {
          if (options.json) {
            console.log(JSON.stringify(
              {
                ok: false,
                error: { name: "UsageError", message: error.message, field: "--no-confirm" },
              },
              null,
              2,
            ));
          } else {
            console.error(`error: ${error.message}`);
          }
          Deno.exitCode = EXIT.usage;
          return;
        }
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
