/**
 * `vid preview [dir]`: a live studio for a composition on loopback.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { DEFAULT_PREVIEW_PORT, startPreview } from "../preview/server.ts";
import { OPTIONS } from "../request/options.ts";
import { cliOption, cliOptionWithDefault } from "./request_flags.ts";
import { integerIn, reportError } from "./shared.ts";
import { listenForStop, runUntilStopped, shutdownTimeoutOption } from "./shutdown.ts";
import { killLiveBrowsers } from "../render/browser.ts";
import { killLiveProcesses } from "../render/process_runner.ts";

/** Tries `xdg-open url`; returns what to tell the user when it could not. */
async function openBrowser(url: string): Promise<string | undefined> {
  try {
    const child = new Deno.Command("xdg-open", {
      args: [url],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const status = await child.status;
    return status.success
      ? undefined
      : `--open: xdg-open could not open a browser (exit ${status.code}); open ${url} yourself`;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      return `--open: xdg-open is not available on this machine; open ${url} in a browser`;
    }
    return `--open: ${(error as Error).message}; open ${url} in a browser`;
  }
}

/** Registers `vid preview`. */
export function registerPreview(program: Command): void {
  program
    .command("preview")
    .summary("Serve a live studio for a composition.")
    .description(
      "Serve a live studio for a composition on 127.0.0.1: the stage at its " +
        "true aspect ratio with sound, play/pause, frame-exact stepping both ways, " +
        "typed frame and timecode, a timeline of media clips and animations, a " +
        "variables panel, page errors with file:line:col, reload on file edits, " +
        "a switcher for every composition at the project root, the view kept in " +
        "the URL, and a render dialog (format, quality, frame range, file name; " +
        "progress, ETA, cancel) writing to <dir>/renders/. Ctrl-C stops it.",
    )
    .argument("[target]", "project directory or HTML file", ".")
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .option(
      "--port <n>",
      `port on 127.0.0.1 (0 picks a free one)`,
      integerIn("--port", 0, 65535),
      DEFAULT_PREVIEW_PORT,
    )
    .addOption(cliOption(OPTIONS.fps, {
      help: "frames per second of the stage and of renders, 1-240: 30, 29.97 or 30000/1001",
    }))
    .addOption(cliOption(OPTIONS.workers, {
      help: "parallel workers of a render, each a browser of its own",
      defaultText: "as vid render",
    }))
    .addOption(cliOption(OPTIONS.frameTimeoutMs))
    .addOption(shutdownTimeoutOption("cancel renders, close the studio"))
    .option("--open", "open the studio in the default browser (xdg-open)")
    .option("--json", 'print {"url", "port"} as one JSON line once listening')
    .action(async (target, options) => {
      const log = (message: string) => console.error(`vid preview: ${message}`);
      try {
        const preview = await startPreview({
          target,
          composition: options.composition,
          port: options.port,
          fps: options.fps,
          workers: options.workers,
          frameTimeoutMs: options.frameTimeout,
          onLog: log,
        });
        // Caught before the URL is printed: whoever reads it may signal at once.
        const signals = listenForStop();
        if (options.json) {
          console.log(JSON.stringify({ url: preview.url, port: preview.port }));
        } else {
          console.log(`vid preview: ${preview.url}`);
          console.error(
            `vid preview: watching ${preview.projectDir}; renders go to ${preview.rendersDir}; ` +
              `Ctrl-C stops`,
          );
        }
        if (options.open) {
          // Not awaited: a browser started in the foreground must not hold up Ctrl-C.
          openBrowser(preview.url).then((problem) => problem && log(problem));
        }
        await runUntilStopped({
          signals,
          name: "vid preview",
          timeoutSeconds: options.shutdownTimeout,
          stopping: "stopping",
          log,
          close: () => preview.close(),
          kill: () =>
            `killed ${killLiveBrowsers()} browser(s) and ${killLiveProcesses()} ffmpeg process(es)`,
        });
        log("stopped");
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
