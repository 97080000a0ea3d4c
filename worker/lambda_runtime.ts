/**
 * Which browser, ffmpeg and ffprobe the worker renders with, and where they come from.
 *
 * The Lambda runtime (`nodejs22.x`, Amazon Linux 2023) has no Chromium and no ffmpeg, so the
 * deployable artifact (`deno task build:worker` -> `dist/worker/`) carries them beside the
 * bundle, installed with `npm ci` from `worker/runtime/package-lock.json`:
 *
 * | binary   | npm package                   | inside the artifact                                    |
 * | -------- | ----------------------------- | ------------------------------------------------------ |
 * | Chromium | `@sparticuz/chromium`         | brotli-compressed; `executablePath()` inflates to /tmp |
 * | ffmpeg   | `@ffmpeg-installer/linux-x64` | static x86_64 build (libx264, libvpx-vp9, prores_ks)   |
 * | ffprobe  | `@ffprobe-installer/linux-x64`| static x86_64 build (probes the page's media)          |
 *
 * Precedence, for each binary on its own:
 *
 * 1. `VID_HEADLESS_SHELL` / `VID_CHROMIUM`, `VID_FFMPEG`, `VID_FFPROBE` when set;
 * 2. on Lambda (`AWS_LAMBDA_FUNCTION_NAME` set), the packaged binary beside the bundle;
 * 3. the system's (`src/render/system.ts`: Debian paths, then `PATH`).
 *
 * The choice is handed to the render code through those same variables (the render code
 * knows nothing of Lambda), plus `VID_CHROMIUM_FLAGS` for `@sparticuz/chromium`'s
 * recommended launch flags. It is made once per process and kept for the warm
 * container's later invocations, as the inflated browser in /tmp is.
 *
 * A packaged binary that lost its executable bit in a zip that does not keep file modes is
 * copied to `<tmpdir>/vid-bin/` and made executable there (`/var/task` is read-only).
 *
 * Node built-ins only: this module runs in the Lambda bundle under Node 22.
 *
 * @module
 */

import { constants } from "node:fs";
import { access, chmod, copyFile, mkdir, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { EXIT_FAILED, VidError } from "../src/errors.ts";

/** npm package of the Lambda Chromium, left external to the bundle (see build_worker.ts). */
export const CHROMIUM_PACKAGE = "@sparticuz/chromium";

/** Where the packaged static binaries sit, relative to the artifact root. */
export const PACKAGED_BINARIES: Readonly<{ ffmpeg: string; ffprobe: string }> = {
  ffmpeg: "node_modules/@ffmpeg-installer/linux-x64/ffmpeg",
  ffprobe: "node_modules/@ffprobe-installer/linux-x64/ffprobe",
};

/**
 * The version the packaged ffmpeg prints (`ffmpeg version <this>`): a 2018 static build
 * (4.1, x264 core 157). `deno task setup` compares the local ffmpeg's with it, since only
 * the same build encodes the same bytes; tests/integration/lambda_runtime_test.ts checks it
 * against the binary, so a new pin in worker/runtime/package.json must update it.
 */
export const PACKAGED_FFMPEG_VERSION = "N-47683-g0e8eb07980-static";

/** Where a binary comes from: its `VID_*` variable, the Lambda artifact, or the system. */
export type BinarySource = "env" | "lambda" | "system";

/** The binaries chosen for this process. */
export interface RuntimeBinaries {
  /** Whether the process runs on Lambda (`AWS_LAMBDA_FUNCTION_NAME` set). */
  onLambda: boolean;
  /** Where each binary comes from. */
  sources: { browser: BinarySource; ffmpeg: BinarySource; ffprobe: BinarySource };
  /** Browser binary, when chosen here (else the render code's own lookup). */
  browser?: string;
  /** ffmpeg binary, when chosen here. */
  ffmpeg?: string;
  /** ffprobe binary, when chosen here. */
  ffprobe?: string;
  /** Extra launch flags of the packaged browser (`VID_CHROMIUM_FLAGS`). */
  chromiumFlags: string[];
}

/** The part of `@sparticuz/chromium`'s default export used here. */
export interface LambdaChromium {
  /** Inflates the browser into the temporary folder (once) and returns its path. */
  executablePath(input?: string): Promise<string>;
  /** Launch flags recommended for serverless environments. */
  readonly args: string[];
}

/** A packaged binary or package is missing from the artifact on Lambda. */
export class LambdaRuntimeError extends VidError {
  override name = "LambdaRuntimeError";
  /** The binary at fault: `browser`, `ffmpeg` or `ffprobe`. */
  override readonly field: string;

  constructor(message: string, field: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, field, cause: options?.cause });
    this.field = field;
  }
}

/** Options of {@linkcode resolveRuntime}. */
export interface ResolveRuntimeOptions {
  /** Environment to read and fill in. @default process.env */
  env?: Record<string, string | undefined>;
  /** Folder of the artifact (the bundle's). @default the folder of this module's file */
  root?: string;
  /** Loads `@sparticuz/chromium`. @default a dynamic import resolved from `root` */
  loadChromium?: () => Promise<LambdaChromium>;
  /**
   * Writable folder for the executable copies of binaries that lost their mode (in
   * `<tmpDir>/vid-bin/`). Given by a caller that must not depend on the process's `TMPDIR`.
   * @default os.tmpdir() (Lambda's `/tmp`, its only writable folder)
   */
  tmpDir?: string;
}

/** Whether `env` is a Lambda execution environment. */
export function isLambda(env: Record<string, string | undefined> = process.env): boolean {
  return Boolean(env.AWS_LAMBDA_FUNCTION_NAME);
}

/** Folder of the artifact: where the bundle (`index.mjs`) and its `node_modules` are. */
export function artifactRoot(): string {
  return dirname(fileURLToPath(import.meta.url));
}

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path, constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * `path` if it may be executed, else an executable copy of it under `<tmpDir>/vid-bin/`
 * (made once; the copy is written under a temporary name and renamed).
 *
 * @example
 * ```ts no_run
 * const ffmpeg = await executableCopy("/var/task/node_modules/.bin/ffmpeg", "ffmpeg");
 * ```
 */
export async function executableCopy(
  path: string,
  name: string,
  tmpDir: string = tmpdir(),
): Promise<string> {
  if (await isExecutable(path)) return path;
  const dir = join(tmpDir, "vid-bin");
  const copy = join(dir, name);
  if (await isExecutable(copy)) return copy;
  await mkdir(dir, { recursive: true });
  const partial = `${copy}.${process.pid}.partial`;
  try {
    await copyFile(path, partial);
    await chmod(partial, 0o755);
    await rename(partial, copy);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
  return copy;
}

/** The packaged browser's flags that the launcher does not set itself. */
function lambdaChromiumFlags(args: readonly string[]): string[] {
  // The launcher passes `--headless` already; the packaged binary is a headless shell.
  return args.filter((flag) => !flag.startsWith("--headless"));
}

async function importChromium(root: string): Promise<LambdaChromium> {
  const entry = join(root, "node_modules", ...CHROMIUM_PACKAGE.split("/"), "package.json");
  if (!(await exists(entry))) {
    throw new LambdaRuntimeError(
      `${CHROMIUM_PACKAGE} is not in the artifact (${dirname(entry)} is missing); build the ` +
        `deployable worker with \`deno task build:worker\` and deploy dist/worker, or set ` +
        `VID_HEADLESS_SHELL`,
      "browser",
    );
  }
  // Resolved from the artifact root, as Node resolves it beside the bundle.
  const { createRequire } = await import("node:module");
  const resolved = createRequire(join(root, "index.mjs")).resolve(CHROMIUM_PACKAGE);
  const mod = await import(pathToFileURL(resolved).href);
  return (mod.default ?? mod) as LambdaChromium;
}

/**
 * Chooses the binaries for this process (see the module's precedence) and writes the
 * choice into `env` (`VID_HEADLESS_SHELL`, `VID_CHROMIUM`, `VID_CHROMIUM_FLAGS`,
 * `VID_FFMPEG`, `VID_FFPROBE`), where the render code looks. Off Lambda it changes nothing.
 *
 * @example
 * ```ts
 * const binaries = await resolveRuntime({ env: { AWS_LAMBDA_FUNCTION_NAME: "vid-render" } });
 * console.log(binaries.sources); // { browser: "lambda", ffmpeg: "lambda", ffprobe: "lambda" }
 * ```
 */
export async function resolveRuntime(
  options: ResolveRuntimeOptions = {},
): Promise<RuntimeBinaries> {
  const env = options.env ?? process.env;
  const onLambda = isLambda(env);
  const result: RuntimeBinaries = {
    onLambda,
    sources: { browser: "system", ffmpeg: "system", ffprobe: "system" },
    chromiumFlags: [],
  };
  const root = options.root ?? artifactRoot();

  for (const name of ["ffmpeg", "ffprobe"] as const) {
    const variable = name === "ffmpeg" ? "VID_FFMPEG" : "VID_FFPROBE";
    if (env[variable]) {
      result.sources[name] = "env";
      result[name] = env[variable];
      continue;
    }
    if (!onLambda) continue;
    const packaged = join(root, PACKAGED_BINARIES[name]);
    if (!(await exists(packaged))) continue;
    result[name] = env[variable] = await executableCopy(packaged, name, options.tmpDir);
    result.sources[name] = "lambda";
  }

  if (env.VID_HEADLESS_SHELL || env.VID_CHROMIUM) {
    result.sources.browser = "env";
    result.browser = env.VID_HEADLESS_SHELL || env.VID_CHROMIUM;
  } else if (onLambda) {
    const chromium = await (options.loadChromium ?? (() => importChromium(root)))();
    let path: string;
    try {
      path = await chromium.executablePath();
    } catch (error) {
      throw new LambdaRuntimeError(
        `${CHROMIUM_PACKAGE} could not inflate its browser into ${tmpdir()}: ` +
          `${(error as Error).message}; give the function more ephemeral storage`,
        "browser",
        { cause: error },
      );
    }
    result.browser = env.VID_HEADLESS_SHELL = env.VID_CHROMIUM = path;
    result.sources.browser = "lambda";
    result.chromiumFlags = lambdaChromiumFlags(chromium.args);
    env.VID_CHROMIUM_FLAGS ??= result.chromiumFlags.join(" ");
  }
  return result;
}

let prepared: Promise<RuntimeBinaries> | undefined;

/**
 * {@linkcode resolveRuntime} for this process, once: later calls (the warm container's
 * later invocations) get the same answer. A failed attempt is forgotten, so the next
 * invocation tries again.
 *
 * @example
 * ```ts
 * await prepareRuntime(); // before the first render of an invocation
 * ```
 */
export function prepareRuntime(): Promise<RuntimeBinaries> {
  if (!prepared) {
    const attempt = resolveRuntime().then((binaries) => {
      if (binaries.onLambda) {
        const { sources } = binaries;
        console.error(
          `vid worker runtime: browser ${sources.browser} (${binaries.browser ?? "system"}), ` +
            `ffmpeg ${sources.ffmpeg} (${binaries.ffmpeg ?? "system"}), ` +
            `ffprobe ${sources.ffprobe} (${binaries.ffprobe ?? "system"})`,
        );
      }
      return binaries;
    });
    prepared = attempt;
    attempt.catch(() => {
      if (prepared === attempt) prepared = undefined;
    });
  }
  return prepared;
}
