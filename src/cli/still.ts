/**
 * `vid still [dir]`: one frame of a composition as a PNG or JPEG.
 *
 * @module
 */

import { type Command, InvalidArgumentError, Option } from "@commander-js/extra-typings";
import { CAPTURE_PREFERENCES } from "../render/capture_mode.ts";
import { renderStill } from "../render/still.ts";
import { frameRateArg, integerIn, reportError, VARIABLES_HELP, warn } from "./shared.ts";

function seconds(value: string): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isFinite(n) || n < 0) {
    throw new InvalidArgumentError("--time must be a number of seconds >= 0 (e.g. 2.5).");
  }
  return n;
}

/** Registers `vid still`. */
export function registerStill(program: Command): void {
  program
    .command("still")
    .summary("Render one frame of a composition as an image.")
    .description(
      "Render one frame of a composition as an image (.png or .jpg), exactly as it appears " +
        "in the video. Pick it with --frame or --time (default: frame 0).",
    )
    .argument("[target]", "project directory or HTML file", ".")
    .option(
      "-c, --composition <file>",
      "entry HTML file inside the project directory",
      "index.html",
    )
    .option("--frame <n>", "frame number, from 0", integerIn("--frame", 0, Number.MAX_SAFE_INTEGER))
    .option("--time <seconds>", "time in seconds; the frame shown then", seconds)
    .option(
      "--fps <rate>",
      "frame rate that maps --time to a frame: 30, 29.97 or 30000/1001 (default: 30 unless the " +
        "composition sets data-fps)",
      frameRateArg("--fps"),
    )
    .option("-o, --output <file>", "image file, .png or .jpg (default: renders/<id>-<frame>.png)")
    .option("--quality <n>", "JPEG quality 1-100", integerIn("--quality", 1, 100), 90)
    .option("--variables <json>", VARIABLES_HELP.variables)
    .option("--variables-file <path>", VARIABLES_HELP.variablesFile)
    .option("--strict-variables", VARIABLES_HELP.strict)
    .addOption(
      new Option("--capture <mode>", "capture path").choices(CAPTURE_PREFERENCES)
        .default("auto" as const),
    )
    .option("--json", "print a machine-readable summary on stdout")
    .action(async (target, options) => {
      try {
        const result = await renderStill({
          target,
          composition: options.composition,
          frame: options.frame,
          time: options.time,
          fps: options.fps,
          output: options.output,
          jpegQuality: options.quality,
          variables: options.variables,
          variablesFile: options.variablesFile,
          strictVariables: options.strictVariables,
          capture: options.capture,
          onWarning: warn,
        });
        if (options.json) {
          console.log(JSON.stringify({ ok: true, ...result }, null, 2));
        } else {
          console.log(
            `wrote ${result.output}\n  frame ${result.frame} (${result.time.toFixed(3)} s), ` +
              `${result.width}x${result.height} ${result.imageFormat}, ${result.bytes} bytes`,
          );
        }
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
