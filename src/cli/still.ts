/**
 * `vid still [dir]`: one frame of a composition as a PNG or JPEG.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { renderStill } from "../render/still.ts";
import { OPTIONS } from "../request/options.ts";
import { checkBeforeSpending, noCheckOption } from "./preflight.ts";
import { cliOption, cliOptionWithDefault, cliSwitch } from "./request_flags.ts";
import { reportError, warn, warnIfRoot } from "./shared.ts";

/** Registers `vid still`. */
export function registerStill(program: Command): void {
  program
    .command("still")
    .summary("Render one frame of a composition as an image.")
    .description(
      "Render one frame of a composition as an image (.png or .jpg), exactly as it appears " +
        "in the video. Pick it with --frame or --time (default: frame 0). A PNG keeps the " +
        "page's transparency (--background <color> flattens it); a JPEG is flattened on white.\n" +
        "First runs the static and media parts of vid check, as vid render does (--no-check " +
        "skips it).",
    )
    .argument("[target]", "project directory or HTML file", ".")
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .addOption(cliOption(OPTIONS.frame))
    .addOption(cliOption(OPTIONS.time))
    .addOption(cliOption(OPTIONS.fps, {
      help: "frame rate that maps --time to a frame: 30, 29.97 or 30000/1001",
    }))
    .option("-o, --output <file>", "image file, .png or .jpg (default: renders/<id>-<frame>.png)")
    .addOption(cliOptionWithDefault(OPTIONS.jpegQuality))
    .addOption(cliOptionWithDefault(OPTIONS.scale))
    .addOption(cliOption(OPTIONS.background))
    .addOption(cliOption(OPTIONS.variables))
    .addOption(cliOption(OPTIONS.variablesFile))
    .addOption(cliSwitch(OPTIONS.strictVariables))
    .addOption(cliOptionWithDefault(OPTIONS.capture))
    .addOption(cliOption(OPTIONS.frameTimeoutMs))
    .addOption(noCheckOption())
    .option("--json", "print a machine-readable summary on stdout")
    .action(async (target, options) => {
      warnIfRoot();
      try {
        await checkBeforeSpending(target, options.composition, {
          enabled: options.check,
          variables: options.variables,
          variablesFile: options.variablesFile,
          warn,
        });
        const result = await renderStill({
          target,
          composition: options.composition,
          frame: options.frame,
          time: options.time,
          fps: options.fps,
          output: options.output,
          jpegQuality: options.quality,
          scale: options.scale,
          background: options.background,
          variables: options.variables,
          variablesFile: options.variablesFile,
          strictVariables: options.strictVariables,
          capture: options.capture,
          frameTimeoutMs: options.frameTimeout,
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
