/**
 * The `vid` command tree. Each command group lives in its own file under `src/cli/`.
 *
 * @module
 */

import { Command, CommanderError } from "@commander-js/extra-typings";
import denoJson from "../../deno.json" with { type: "json" };
import { registerAuth } from "./auth.ts";
import { registerInfo } from "./info.ts";
import { registerAdd, registerInit } from "./init.ts";
import { registerLambda } from "./lambda.ts";
import { registerRender } from "./render.ts";
import { registerRenderBatch } from "./render_batch.ts";
import { registerCloud } from "./cloud.ts";
import { registerCompletions } from "./completions.ts";
import { registerPreview } from "./preview.ts";
import { registerServer } from "./server.ts";
import { registerStill } from "./still.ts";
import { registerTypes } from "./types.ts";
import { EXIT } from "./shared.ts";
import { registerValidate } from "./validate.ts";

/** The CLI's version, from deno.json. */
export const VERSION: string = denoJson.version;

/** Builds the `vid` program. */
export function buildProgram(): Command {
  const program = new Command()
    .name("vid")
    .description(
      "Turn HTML compositions into finished videos, parameterised by typed template variables.",
    )
    .version(VERSION, "-V, --version")
    .showHelpAfterError("(run with --help for usage)")
    .enablePositionalOptions()
    .exitOverride();
  registerInfo(program);
  registerInit(program);
  registerAdd(program);
  registerValidate(program);
  registerRender(program);
  registerRenderBatch(program);
  registerStill(program);
  registerCloud(program);
  registerServer(program);
  registerPreview(program);
  registerAuth(program);
  registerLambda(program);
  registerTypes(program);
  registerCompletions(program, VERSION);
  return program;
}

/** Runs the CLI with `args`; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) {
      if (error.exitCode === 0) return EXIT.ok;
      // Machines asking for --json get the usage error in the same shape as other errors.
      if (args.includes("--json")) {
        console.log(JSON.stringify(
          {
            ok: false,
            error: {
              name: "UsageError",
              code: error.code,
              message: error.message.replace(/^error: /, ""),
              field: error.message.match(/option '(-[-\w]+)/)?.[1],
            },
          },
          null,
          2,
        ));
      }
      return EXIT.usage;
    }
    throw error;
  }
  return typeof Deno.exitCode === "number" ? Deno.exitCode : EXIT.ok;
}
