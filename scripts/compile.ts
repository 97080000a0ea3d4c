/**
 * Builds self-contained `vid` binaries with `deno compile`, one per target, into `dist/bin/`:
 *
 * ```sh
 * deno task compile                          # all five targets
 * deno task compile --target linux-x64       # one (or several --target flags)
 * DENORT_BIN=/path/to/denort deno task compile --target linux-x64
 * ```
 *
 * | target         | Rust triple                   | output                       |
 * | -------------- | ----------------------------- | ---------------------------- |
 * | `linux-x64`    | `x86_64-unknown-linux-gnu`    | `dist/bin/vid-linux-x64`     |
 * | `linux-arm64`  | `aarch64-unknown-linux-gnu`   | `dist/bin/vid-linux-arm64`   |
 * | `darwin-x64`   | `x86_64-apple-darwin`         | `dist/bin/vid-darwin-x64`    |
 * | `darwin-arm64` | `aarch64-apple-darwin`        | `dist/bin/vid-darwin-arm64`  |
 * | `windows-x64`  | `x86_64-pc-windows-msvc`      | `dist/bin/vid-windows-x64.exe` |
 *
 * Choices:
 *
 * - `-A`: the command spawns Chromium, ffmpeg and Node, serves HTTP, reads and writes
 *   projects, renders and its data directory, and reads its environment; a binary cannot
 *   prompt, so it gets what `deno task vid` gets.
 * - Runtime files the code reads through `import.meta.url` are embedded with `--include`
 *   ({@linkcode RUNTIME_INCLUDES}): the server's OpenAPI document and the Lambda worker
 *   bundle (built first when missing). Modules, npm packages and the JSON-imported
 *   deno.json are embedded by `deno compile` itself, except the command files that
 *   src/cli/main.ts imports by a computed URL for a fast start-up: each is an `--include`
 *   too ({@linkcode COMMAND_MODULES}), which makes it (and the npm packages it reaches) part
 *   of the binary's module graph.
 * - `--self-extracting`: the embedded files are written to disk (a hidden folder beside the
 *   binary) on first run, so paths from `import.meta.url` are real files. The local stack
 *   hands the worker bundle's path to a separate Node 22 process, which cannot read a
 *   binary's virtual file system.
 * - `--exclude-unused-npm`: only the npm packages the command reaches are embedded (the
 *   build tools in deno.json's imports, such as esbuild, are not); the command has no
 *   dynamic imports of npm packages that this could miss.
 * - Type-checking runs once (`deno check cli.ts`), then each target compiles with
 *   `--no-check`.
 * - `deno compile` builds on a `denort` runtime binary for the target that it downloads from
 *   dl.deno.land (or takes from `DENORT_BIN`). Where that host is unreachable the task stops
 *   with {@linkcode DenortUnavailableError}: what is missing and the two ways out. `deno task
 *   vid` runs the same command without a binary meanwhile.
 * - `vid lambda deploy` is not embedded: its Pulumi program needs its own npm packages
 *   (about 200 MB) and the Pulumi CLI; run it from a checkout.
 *
 * @module
 */

import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { COMMAND_MODULES } from "../src/cli/main.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** The targets, by the names the task takes, with the Rust triple `deno compile` takes. */
export const TARGETS = {
  "linux-x64": "x86_64-unknown-linux-gnu",
  "linux-arm64": "aarch64-unknown-linux-gnu",
  "darwin-x64": "x86_64-apple-darwin",
  "darwin-arm64": "aarch64-apple-darwin",
  "windows-x64": "x86_64-pc-windows-msvc",
} as const;

/** A target name: `linux-x64`, `linux-arm64`, `darwin-x64`, `darwin-arm64`, `windows-x64`. */
export type TargetName = keyof typeof TARGETS;

/**
 * Files read at run time through `import.meta.url`, relative to the repository root:
 * `api/openapi.yaml` (`vid server` validates requests and serves it at `/v3/openapi.json`)
 * and `dist/worker/index.mjs` (the worker bundle the local stack runs under Node 22).
 */
export const RUNTIME_INCLUDES: readonly string[] = ["api/openapi.yaml", "dist/worker/index.mjs"];

/** Default folder of the binaries, relative to the repository root. */
export const DEFAULT_OUTDIR = "dist/bin";

/** A bad argument of the task; names the argument and the accepted values. */
export class CompileArgumentError extends Error {
  /** Always `"CompileArgumentError"`. */
  override name = "CompileArgumentError";
  /** The argument at fault, e.g. `--target`. */
  readonly field: string;

  /**
   * Creates the error for one argument.
   *
   * @param field The argument at fault.
   * @param message What is wrong and what is accepted.
   */
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/** `deno compile` could not get the `denort` runtime binary for a target. */
export class DenortUnavailableError extends Error {
  /** Always `"DenortUnavailableError"`. */
  override name = "DenortUnavailableError";
  /** What is missing: always `"denort"`. */
  readonly field = "denort";
  /** The target whose runtime is missing. */
  readonly target: TargetName;

  /**
   * Creates the error; the message says what is missing and how to provide it.
   *
   * @param target The target whose runtime could not be had.
   * @param denoVersion Version of the Deno doing the compiling (denort must match it).
   * @param cause The last lines of `deno compile`'s error.
   */
  constructor(target: TargetName, denoVersion: string, cause: string) {
    super(denortMessage(target, denoVersion, cause));
    this.target = target;
  }
}

/** The message of {@linkcode DenortUnavailableError}. */
export function denortMessage(target: TargetName, denoVersion: string, cause: string): string {
  const triple = TARGETS[target];
  return [
    `cannot build the ${target} binary: deno compile needs the denort runtime binary for ` +
    `${triple} (denort-${triple}.zip of Deno ${denoVersion}), and could not get it.`,
    `  deno compile said: ${cause}`,
    "To build binaries, either:",
    "  - allow network access to dl.deno.land, where deno compile downloads denort (once; " +
    "it is cached in DENO_DIR), or",
    `  - set DENORT_BIN to a denort binary of Deno ${denoVersion} for ${triple} and build ` +
    `that one target: DENORT_BIN=/path/to/denort deno task compile --target ${target}`,
    "Meanwhile `deno task vid <command>` (or `npx --yes deno@2 task vid <command>`) runs the " +
    "same CLI without a binary.",
  ].join("\n");
}

/** Whether `deno compile`'s stderr says it failed to get the denort binary. */
export function isDenortFailure(stderr: string): boolean {
  return /dl\.deno\.land|denort|Setting up base binary|DENORT_BIN/i.test(stderr);
}

/** Output path of a target's binary (`.exe` for Windows). */
export function outputPath(target: TargetName, outdir: string = DEFAULT_OUTDIR): string {
  return `${outdir}/vid-${target}${target.startsWith("windows") ? ".exe" : ""}`;
}

/**
 * Arguments of `deno compile` for one target, run from the repository root.
 *
 * @example
 * ```ts
 * compileArgs("linux-arm64");
 * // ["compile", "-A", "--self-extracting", "--no-check", "--exclude-unused-npm",
 * //  "--include", "api/openapi.yaml", "--include", "dist/worker/index.mjs",
 * //  "--target", "aarch64-unknown-linux-gnu", "--output", "dist/bin/vid-linux-arm64", "cli.ts"]
 * ```
 */
export function compileArgs(target: TargetName, outdir: string = DEFAULT_OUTDIR): string[] {
  return [
    "compile",
    "-A",
    "--self-extracting",
    "--no-check",
    "--exclude-unused-npm",
    ...RUNTIME_INCLUDES.flatMap((file) => ["--include", file]),
    ...COMMAND_MODULES.flatMap((command) => ["--include", command.file]),
    "--target",
    TARGETS[target],
    "--output",
    outputPath(target, outdir),
    "cli.ts",
  ];
}

/** What the task was asked to do. */
export interface CompileRequest {
  /** Targets to build, in order. */
  targets: TargetName[];
  /** Folder of the binaries, relative to the repository root or absolute. */
  outdir: string;
}

/**
 * Parses the task's arguments: `--target <name>` (repeatable; a target name or its Rust
 * triple; default: all five) and `--outdir <dir>`. With `DENORT_BIN` set, exactly one
 * target must be named, since a denort binary serves one target.
 */
export function parseCompileArgs(args: readonly string[], denortBin?: string): CompileRequest {
  const targets: TargetName[] = [];
  let outdir = DEFAULT_OUTDIR;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const [flag, inline] = arg.includes("=") ? arg.split(/=(.*)/s, 2) : [arg, undefined];
    if (flag !== "--target" && flag !== "--outdir") {
      throw new CompileArgumentError(
        arg,
        "unknown argument; use --target <name> or --outdir <dir>",
      );
    }
    const value = inline ?? args[++i];
    if (value === undefined || value === "" || value.startsWith("--")) {
      throw new CompileArgumentError(flag, "needs a value");
    }
    if (flag === "--outdir") {
      outdir = value;
      continue;
    }
    const name = (Object.keys(TARGETS) as TargetName[]).find((t) =>
      t === value || TARGETS[t] === value
    );
    if (!name) {
      throw new CompileArgumentError(
        "--target",
        `unknown target "${value}"; use one of ${Object.keys(TARGETS).join(", ")} ` +
          "(or its Rust triple)",
      );
    }
    if (!targets.includes(name)) targets.push(name);
  }
  const chosen = targets.length > 0 ? targets : Object.keys(TARGETS) as TargetName[];
  if (denortBin && chosen.length !== 1) {
    throw new CompileArgumentError(
      "--target",
      "DENORT_BIN names one denort binary, which serves one target: name exactly one " +
        "--target (the one DENORT_BIN was built for)",
    );
  }
  return { targets: chosen, outdir };
}

/** Output of a finished child process. */
interface CommandResult {
  success: boolean;
  stdout: string;
  stderr: string;
}

async function run(args: string[]): Promise<CommandResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    success: out.success,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/**
 * The line of `deno compile`'s error worth showing: the one naming the download or the
 * denort binary, else the innermost cause.
 */
export function compileFailureCause(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim().replace(/^\d+:\s*/, "")).filter((l) =>
    l && !l.startsWith("Stack backtrace") && l !== "<unknown>"
  );
  return lines.find((l) => /error sending request|Could not find denort/i.test(l)) ??
    lines.find((l) => /dl\.deno\.land|denort/i.test(l)) ?? lines.at(-1) ?? "no output";
}

/** Options of {@linkcode compileAll}. */
export interface CompileOptions extends CompileRequest {
  /** Receives progress lines. @default console.error */
  onLog?(line: string): void;
}

/**
 * Builds the requested binaries; returns their paths. Throws
 * {@linkcode DenortUnavailableError} when `deno compile` cannot get its runtime binary.
 */
export async function compileAll(options: CompileOptions): Promise<string[]> {
  const log = options.onLog ?? ((line: string) => console.error(line));
  if (!existsSync(join(ROOT, "dist", "worker", "index.mjs"))) {
    log("building the worker bundle (dist/worker/index.mjs)");
    const built = await run(["run", "-A", "scripts/build_worker.ts"]);
    if (!built.success) throw new Error(`deno task build:worker failed:\n${built.stderr}`);
  }
  for (const file of RUNTIME_INCLUDES) {
    if (!existsSync(join(ROOT, file))) throw new Error(`${file} is missing; cannot embed it`);
  }
  log("type-checking cli.ts");
  const check = await run(["check", "cli.ts"]);
  if (!check.success) throw new Error(`deno check cli.ts failed:\n${check.stderr}`);

  const outputs: string[] = [];
  for (const target of options.targets) {
    log(`compiling ${target} (${TARGETS[target]})`);
    const out = await run(compileArgs(target, options.outdir));
    if (!out.success) {
      if (isDenortFailure(out.stderr)) {
        throw new DenortUnavailableError(
          target,
          Deno.version.deno,
          compileFailureCause(out.stderr),
        );
      }
      throw new Error(`deno compile failed for ${target}:\n${out.stderr}`);
    }
    outputs.push(outputPath(target, options.outdir));
  }
  return outputs;
}

if (import.meta.main) {
  try {
    const request = parseCompileArgs(Deno.args, Deno.env.get("DENORT_BIN"));
    const outputs = await compileAll(request);
    for (const output of outputs) console.log(`built ${output}`);
  } catch (error) {
    if (error instanceof CompileArgumentError || error instanceof DenortUnavailableError) {
      console.error(`compile: ${error.message}`);
      Deno.exit(error instanceof CompileArgumentError ? 2 : 1);
    }
    throw error;
  }
}
