/**
 * The `vid` command tree. Each command group lives in its own file under `src/cli/`.
 *
 * Start-up is lazy: a run of one command imports only that command's file (and what it
 * needs), so `vid --version` or `vid info` never load the browser driver, the server or the
 * AWS SDK. The whole tree is built only where it is shown: `--help`, `help`, `completions`,
 * a mistyped command (for commander's suggestion) and no command at all.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import type * as Auth from "./auth.ts";
import type * as Check from "./check.ts";
import type * as Cloud from "./cloud.ts";
import type * as Completions from "./completions.ts";
import type * as Info from "./info.ts";
import type * as Init from "./init.ts";
import type * as Lambda from "./lambda.ts";
import type * as Preview from "./preview.ts";
import type * as Render from "./render.ts";
import type * as RenderBatch from "./render_batch.ts";
import type * as Server from "./server.ts";
import type * as Still from "./still.ts";
import type * as Types from "./types.ts";
import type * as Validate from "./validate.ts";
import denoJson from "../../deno.json" with { type: "json" };

/** The CLI's version, from deno.json. */
export const VERSION: string = denoJson.version;

/** Adds one top-level command (with its subcommands) to the program. */
type Register = (program: Command) => void;

/** One top-level command: its name, the file that registers it, and how to load that. */
export interface CommandModule {
  /** The command's name, e.g. `render`. */
  name: string;
  /** The registering file, relative to the repository root (an `--include` of a binary). */
  file: string;
  /** Imports the file and returns its register function. */
  load(): Promise<Register>;
}

/**
 * Imports a command file by a computed URL. A literal `import("./x.ts")` would make Deno
 * resolve that file's whole graph (browser driver, AWS SDK) at start-up although it never
 * runs; the `import type` lines below keep the files type-checked with `deno check cli.ts`.
 */
function commandModule<M>(name: string, file: string, pick: (m: M) => Register): CommandModule {
  const url = new URL(file, import.meta.url).href;
  return { name, file: `src/cli/${file}`, load: async () => pick(await import(url) as M) };
}

/**
 * Each top-level command in the order `vid --help` lists them. A name missing here still
 * works (the whole tree is built), only slower; tests/integration/startup_test.ts checks the table
 * against the tree.
 */
export const COMMAND_MODULES: readonly CommandModule[] = [
  commandModule<typeof Info>("info", "info.ts", (m) => m.registerInfo),
  commandModule<typeof Init>("init", "init.ts", (m) => m.registerInit),
  commandModule<typeof Init>("add", "init.ts", (m) => m.registerAdd),
  commandModule<typeof Validate>("validate", "validate.ts", (m) => m.registerValidate),
  commandModule<typeof Check>("check", "check.ts", (m) => m.registerCheck),
  commandModule<typeof Render>("render", "render.ts", (m) => m.registerRender),
  commandModule<typeof RenderBatch>(
    "render-batch",
    "render_batch.ts",
    (m) => m.registerRenderBatch,
  ),
  commandModule<typeof Still>("still", "still.ts", (m) => m.registerStill),
  commandModule<typeof Cloud>("cloud", "cloud.ts", (m) => m.registerCloud),
  commandModule<typeof Server>("server", "server.ts", (m) => m.registerServer),
  commandModule<typeof Preview>("preview", "preview.ts", (m) => m.registerPreview),
  commandModule<typeof Auth>("auth", "auth.ts", (m) => m.registerAuth),
  commandModule<typeof Lambda>("lambda", "lambda.ts", (m) => m.registerLambda),
  commandModule<typeof Types>("types", "types.ts", (m) => m.registerTypes),
  commandModule<typeof Completions>(
    "completions",
    "completions.ts",
    (m) => (program) => m.registerCompletions(program, VERSION),
  ),
];

/** Commands that read the whole tree, so every other command must be registered too. */
const NEEDS_WHOLE_TREE = new Set(["help", "completions"]);

/**
 * Builds the `vid` program. With `only`, registers just that top-level command when it is
 * one vid knows (and the tree is not needed to run it); otherwise registers every command.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const program = await buildProgram();
 * assert.ok(program.commands.map((c) => c.name()).includes("render"));
 * ```
 */
export async function buildProgram(only?: string): Promise<Command> {
  const { Command } = await import("@commander-js/extra-typings");
  const program = new Command()
    .name("vid")
    .description(
      "Turn HTML compositions into finished videos, parameterised by typed template variables.",
    )
    .version(VERSION, "-V, --version")
    .showHelpAfterError("(run with --help for usage)")
    .enablePositionalOptions()
    .exitOverride();
  const one = only !== undefined && !NEEDS_WHOLE_TREE.has(only)
    ? COMMAND_MODULES.find((c) => c.name === only)
    : undefined;
  const registers = await Promise.all((one ? [one] : COMMAND_MODULES).map((c) => c.load()));
  for (const register of registers) register(program);
  return program;
}

/**
 * The top-level command `args` run. The program's own options (`-V`, `-h`) come before any
 * command (positional options), so a leading option means no single command runs.
 */
function commandWord(args: string[]): string | undefined {
  return args[0]?.startsWith("-") ? undefined : args[0];
}

/** Runs the CLI with `args`; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  if (args.length === 1 && (args[0] === "--version" || args[0] === "-V")) {
    console.log(VERSION);
    return 0;
  }
  const command = commandWord(args);
  const [{ CommanderError }, { EXIT }, program, reaping] = await Promise.all([
    import("@commander-js/extra-typings"),
    import("./shared.ts"),
    buildProgram(command),
    command && BROWSER_COMMANDS.has(command) ? trackBrowsers() : undefined,
  ]);
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
  } finally {
    await reaping?.done.catch(() => 0);
  }
  return typeof Deno.exitCode === "number" ? Deno.exitCode : EXIT.ok;
}

/** Commands that launch capture browsers (`vid server` records its own, in its data folder). */
const BROWSER_COMMANDS: ReadonlySet<string> = new Set([
  "render",
  "still",
  "preview",
  "render-batch",
  "validate",
  "check",
]);

/**
 * Records the browsers this command launches under `<cache>/browsers` and, meanwhile,
 * kills those an earlier command left behind when it was killed (SIGKILL leaves a browser's
 * own process group running) and removes the render work folders it left. Resolves to that clean-up (`done`), which runs beside the
 * command.
 */
async function trackBrowsers(): Promise<{ done: Promise<number> } | undefined> {
  const { cliBrowserRecords, listProcesses, reapOrphanBrowsers, reapOrphanWorkFolders } =
    await import("../render/browser_records.ts");
  const { recordBrowsersIn } = await import("../render/browser.ts");
  const dir = cliBrowserRecords();
  if (!dir) return undefined;
  recordBrowsersIn(dir);
  const reap = async (): Promise<number> => {
    const running = await listProcesses();
    if (!running) return 0;
    // The work folders of a killed render too: it could not remove them itself.
    const [browsers] = await Promise.all([
      reapOrphanBrowsers(dir, running),
      reapOrphanWorkFolders(undefined, running),
    ]);
    return browsers;
  };
  return { done: reap() };
}
