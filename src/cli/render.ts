/**
 * `vid render [dir]`: renders a composition locally to mp4, webm, mov, an animated GIF or a
 * PNG sequence; the `--output` extension picks the format unless `--format` is given.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { formatFrameRate } from "../composition/frame_rate.ts";
import { RenderCancelledError, renderComposition } from "../render/render.ts";
import { OPTIONS } from "../request/options.ts";
import { checkBeforeSpending, noCheckOption } from "./preflight.ts";
import { progressReporter } from "./progress.ts";
import { cliOption, cliOptionWithDefault, cliSwitch } from "./request_flags.ts";
import { EXIT, reportError, warn, warnIfRoot } from "./shared.ts";

/** Registers `vid render`. */
export function registerRender(program: Command): void {
  program
    .command("render")
    .summary("Render a composition to a video file on this machine.")
    .description(
      "Render a composition to a video file on this machine (headless Chromium + ffmpeg).\n" +
        "Frame n shows the page at t = n / fps; the file appears only when complete.\n" +
        "The frame rate is --fps, else the composition's data-fps, else 30.\n" +
        "First runs the static and media parts of vid check (milliseconds): an error stops " +
        "the render before its first frame, naming file:line:column and the fix " +
        "(--no-check renders anyway). Frame 0's text is looked at too: undefined, NaN, null " +
        "or [object Object] on screen fails the render (data-text-ok on an element allows it).",
    )
    .argument("[target]", "project directory or HTML file", ".")
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .option(
      "-o, --output <path>",
      "output file; its extension picks the format: .mp4, .webm, .mov, .gif, or a PNG " +
        "sequence frames/%05d.png (default: renders/<composition-id>.<format>)",
    )
    .addOption(cliOption(OPTIONS.fps))
    .addOption(cliOption(OPTIONS.format))
    .addOption(cliOptionWithDefault(OPTIONS.quality))
    .addOption(cliOption(OPTIONS.workers))
    .addOption(cliOption(OPTIONS.frames))
    .addOption(cliOption(OPTIONS.variables))
    .addOption(cliOption(OPTIONS.variablesFile))
    .addOption(cliSwitch(OPTIONS.strictVariables))
    .addOption(cliOptionWithDefault(OPTIONS.capture))
    .addOption(cliOption(OPTIONS.frameTimeoutMs))
    .addOption(cliSwitch(OPTIONS.hdr))
    .addOption(cliOption(OPTIONS.loudness))
    .addOption(cliOptionWithDefault(OPTIONS.scale))
    .addOption(cliOption(OPTIONS.captionsOut))
    .addOption(noCheckOption())
    .option("--json", "print a machine-readable summary on stdout")
    .option("-v, --verbose", "print the capture path, workers and chunk plan")
    .action(async (target, options) => {
      warnIfRoot();
      const controller = new AbortController();
      const stop = () => controller.abort();
      Deno.addSignalListener("SIGINT", stop);
      Deno.addSignalListener("SIGTERM", stop);
      try {
        await checkBeforeSpending(target, options.composition, {
          enabled: options.check,
          variables: options.variables,
          variablesFile: options.variablesFile,
          warn,
        });
        const result = await renderComposition({
          target,
          composition: options.composition,
          output: options.output,
          fps: options.fps,
          format: options.format,
          quality: options.quality,
          hdr: options.hdr,
          loudness: options.loudness,
          scale: options.scale,
          captionsOut: options.captionsOut,
          workers: options.workers,
          frames: options.frames,
          variables: options.variables,
          variablesFile: options.variablesFile,
          strictVariables: options.strictVariables,
          capture: options.capture,
          frameTimeoutMs: options.frameTimeout,
          signal: controller.signal,
          onWarning: warn,
          onProgress: progressReporter(),
        });
        if (options.json) {
          console.log(JSON.stringify({ ok: true, ...result }, null, 2));
          return;
        }
        if (options.verbose) {
          console.error(
            `capture: ${result.captureMode}, workers: ${result.workers}, chunks: ${result.chunks}`,
          );
        }
        console.log(
          `rendered ${result.output}\n  ${result.frames} frames, ${result.width}x${result.height}, ` +
            `${formatFrameRate(result.frameRate)} fps, ${
              result.durationSeconds.toFixed(2)
            } s of video, ${result.format}\n` +
            `  ${(result.elapsedMs / 1000).toFixed(1)} s wall, ${
              result.renderFps.toFixed(1)
            } fps ` +
            `(${result.captureMode}, ${result.workers} worker${result.workers > 1 ? "s" : ""})`,
        );
      } catch (error) {
        if (error instanceof RenderCancelledError) {
          console.error("render cancelled; no output written");
          Deno.exitCode = EXIT.cancelled;
          return;
        }
        Deno.exitCode = reportError(error, options.json);
      } finally {
        Deno.removeSignalListener("SIGINT", stop);
        Deno.removeSignalListener("SIGTERM", stop);
      }
    });
}
