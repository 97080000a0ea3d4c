/**
 * Finds the system programs rendering needs (Chromium and ffmpeg) and says exactly how
 * to install them when they are missing. Never downloads a browser.
 *
 * @module
 */

import { execFile } from "node:child_process";
import { access, constants, readdir } from "node:fs/promises";
import { delimiter, join } from "node:path";
import process from "node:process";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** A required program that is not installed. */
export class MissingDependencyError extends VidError {
  /** Always `"MissingDependencyError"`. */
  override name = "MissingDependencyError";
  /** The program that is missing, e.g. `ffmpeg`. */
  override readonly field: string;
  /** The Debian packages that provide it. */
  readonly packages: string[];

  /**
   * Creates the error, naming the program and how to install it.
   *
   * @param program The program that is missing.
   * @param packages The Debian packages that provide it.
   * @param envVar Environment variable that can point at an existing binary instead.
   */
  constructor(program: string, packages: string[], envVar?: string) {
    super(
      `${program} was not found. Install it with:\n` +
        `  sudo apt-get install -y ${packages.join(" ")}\n` +
        `or run \`npx --yes deno@2 task setup\` as root` +
        (envVar ? `, or point ${envVar} at an existing binary.` : "."),
      { exitCode: EXIT_FAILED },
    );
    this.field = program;
    this.packages = packages;
  }
}

/** The Debian packages the project needs, by purpose. */
export const SYSTEM_PACKAGES: Readonly<Record<string, string[]>> = {
  "chromium-headless-shell": ["chromium-headless-shell"],
  chromium: ["chromium"],
  ffmpeg: ["ffmpeg"],
  fonts: ["fonts-dejavu-core", "fonts-liberation", "fonts-noto-core"],
  // `vid server --database postgres://…` for several instances, and the tests of it.
  postgresql: ["postgresql"],
};

async function isExecutable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** First executable named `name` on PATH, or undefined. */
export async function which(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (dir === "") continue;
    const candidate = join(dir, name);
    if (await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

async function firstExecutable(candidates: (string | undefined)[]): Promise<string | undefined> {
  for (const candidate of candidates) {
    if (candidate && await isExecutable(candidate)) return candidate;
  }
  return undefined;
}

/**
 * Path of `chromium-headless-shell` (the real binary, not Debian's wrapper script), the
 * browser that supports BeginFrame capture. `VID_HEADLESS_SHELL` overrides.
 */
export async function findHeadlessShell(): Promise<string | undefined> {
  return await firstExecutable([
    process.env.VID_HEADLESS_SHELL,
    "/usr/lib/chromium/chromium-headless-shell",
    await which("chromium-headless-shell"),
  ]);
}

/** Path of full Chromium (screenshot capture fallback). `VID_CHROMIUM` overrides. */
export async function findChromium(): Promise<string | undefined> {
  return await firstExecutable([
    process.env.VID_CHROMIUM,
    "/usr/lib/chromium/chromium",
    await which("chromium"),
    await which("chromium-browser"),
    await which("google-chrome"),
  ]);
}

/**
 * The version a Chromium binary reports (`Chromium 156.0.8078.114`), or `"unknown"` when it
 * does not answer within 10 s. Figures of speed depend on it and on the host, so setup and
 * every benchmark print it beside them (bench/README.md).
 *
 * @example
 * ```ts no_run
 * const shell = await findHeadlessShell();
 * if (shell) console.log(await chromiumVersion(shell)); // "156.0.8078.114"
 * ```
 */
export function chromiumVersion(binary: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(binary, ["--version"], { timeout: 10_000 }, (error, stdout) => {
      const version = /(\d+\.\d+\.\d+\.\d+)/.exec(String(stdout))?.[1];
      resolve(error || !version ? "unknown" : version);
    });
  });
}

/**
 * The folder of PostgreSQL's server programs (`initdb`, `postgres`) and its major version:
 * the newest `/usr/lib/postgresql/<n>/bin` Debian's `postgresql` package installed, which
 * keeps them off PATH. `VID_POSTGRES_BIN` overrides (its version is then `"?"`).
 *
 * @example
 * ```ts no_run
 * const found = await findPostgres();
 * console.log(found ? `PostgreSQL ${found.version} in ${found.bin}` : "not installed");
 * ```
 */
export async function findPostgres(): Promise<{ bin: string; version: string } | undefined> {
  const given = process.env.VID_POSTGRES_BIN;
  if (given) {
    return await isExecutable(join(given, "initdb")) ? { bin: given, version: "?" } : undefined;
  }
  let versions: string[];
  try {
    versions = (await readdir("/usr/lib/postgresql")).filter((v) => /^\d+$/.test(v));
  } catch {
    return undefined;
  }
  for (const version of versions.sort((a, b) => Number(b) - Number(a))) {
    const bin = `/usr/lib/postgresql/${version}/bin`;
    if (await isExecutable(join(bin, "initdb"))) return { bin, version };
  }
  return undefined;
}

/** Paths of ffmpeg and ffprobe. `VID_FFMPEG` / `VID_FFPROBE` override. */
export async function findFfmpeg(): Promise<{ ffmpeg?: string; ffprobe?: string }> {
  return {
    ffmpeg: await firstExecutable([process.env.VID_FFMPEG, await which("ffmpeg")]),
    ffprobe: await firstExecutable([process.env.VID_FFPROBE, await which("ffprobe")]),
  };
}

/** Path of ffmpeg, or a {@linkcode MissingDependencyError} with the install hint. */
export async function requireFfmpeg(): Promise<string> {
  const { ffmpeg } = await findFfmpeg();
  if (!ffmpeg) throw new MissingDependencyError("ffmpeg", SYSTEM_PACKAGES.ffmpeg, "VID_FFMPEG");
  return ffmpeg;
}

/** Path of ffprobe, or a {@linkcode MissingDependencyError} with the install hint. */
export async function requireFfprobe(): Promise<string> {
  const { ffprobe } = await findFfmpeg();
  if (!ffprobe) throw new MissingDependencyError("ffprobe", SYSTEM_PACKAGES.ffmpeg, "VID_FFPROBE");
  return ffprobe;
}

/** Accounts render browsers run as by default when the server runs as root, in order. */
export const DEFAULT_RENDER_USERS: readonly string[] = ["vid-render", "nobody"];

/**
 * The account `name` (from `getent passwd`, so NSS accounts count); undefined when missing.
 *
 * @example
 * ```ts no_run
 * console.log(await lookupUser("nobody")); // { name: "nobody", uid: 65534, gid: 65534 }
 * console.log(await lookupUser("no-such-user")); // undefined
 * ```
 */
export function lookupUser(
  name: string,
): Promise<{ name: string; uid: number; gid: number } | undefined> {
  // node:child_process, not Deno.Command: this module is part of the Node SDK too.
  return new Promise((resolve) => {
    execFile("getent", ["passwd", name], (error, stdout) => {
      if (error) return resolve(undefined);
      const fields = String(stdout).trim().split(":");
      const uid = Number(fields[2]);
      const gid = Number(fields[3]);
      const found = fields[0] === name && Number.isInteger(uid) && Number.isInteger(gid);
      resolve(found ? { name, uid, gid } : undefined);
    });
  });
}
