/**
 * Prepares a machine to render and test vid: checks the system programs rendering needs
 * (chromium-headless-shell, Chromium, ffmpeg/ffprobe, fonts) and PostgreSQL (the server's
 * database for several instances, started by its tests), installs the missing ones with apt
 * when running as root, creates the unprivileged `vid-render` account `vid server` runs its
 * render browsers as (root only), and caches the npm dependencies. Run by `deno task setup`
 * and at the start of `deno task hello` and `deno task test`.
 *
 * It is idempotent and makes no apt calls when everything is already installed. When it cannot
 * install (not root, or no apt-get) it prints the exact command to run and exits 1.
 *
 * @module
 */

import { cpus } from "node:os";
import { fileURLToPath } from "node:url";
import { PACKAGED_BINARIES, PACKAGED_FFMPEG_VERSION } from "../worker/lambda_runtime.ts";
import {
  chromiumVersion,
  DEFAULT_RENDER_USERS,
  findChromium,
  findFfmpeg,
  findHeadlessShell,
  findPostgres,
  lookupUser,
  SYSTEM_PACKAGES,
  which,
} from "../src/render/system.ts";

/** What the check found for one required program (or the fonts). */
interface Requirement {
  /** Name printed in the report, e.g. `ffmpeg`. */
  name: string;
  /** Where it was found, or undefined when missing. */
  found?: string;
  /** Debian packages to install when it is missing. */
  packages: string[];
}

/** Output of a finished child process. */
interface CommandOutput {
  code: number;
  stdout: string;
  stderr: string;
}

const ROOT: string = fileURLToPath(new URL("../", import.meta.url));

async function output(program: string, args: string[], cwd?: string): Promise<CommandOutput> {
  const result = await new Deno.Command(program, {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: result.code,
    stdout: decoder.decode(result.stdout),
    stderr: decoder.decode(result.stderr),
  };
}

/** Debian packages among `packages` that dpkg reports as fully installed. */
async function installedPackages(packages: string[]): Promise<Set<string>> {
  // `dpkg -s` prints one stanza per known package and exits non-zero if any is unknown, so
  // the stanzas are read rather than the exit code.
  const { stdout } = await output("dpkg", ["-s", ...packages]);
  const installed = new Set<string>();
  for (const stanza of stdout.split(/\n\s*\n/)) {
    const name = /^Package:\s*(\S+)/m.exec(stanza)?.[1];
    const status = /^Status:\s*(.+)$/m.exec(stanza)?.[1].trim();
    if (name && status === "install ok installed") installed.add(name);
  }
  return installed;
}

async function checkFonts(): Promise<Requirement> {
  const packages = SYSTEM_PACKAGES.fonts;
  const fcList = await which("fc-list");
  const fontCount = fcList
    ? (await output(fcList, [])).stdout.split("\n").filter((line) => line.trim() !== "").length
    : 0;
  if (await which("dpkg")) {
    const installed = await installedPackages(packages);
    const missing = packages.filter((name) => !installed.has(name));
    if (missing.length > 0) return { name: "fonts", packages: missing };
  }
  if (fontCount === 0) return { name: "fonts", packages };
  return { name: "fonts", found: `${fontCount} fonts (fc-list)`, packages };
}

async function checkAll(): Promise<Requirement[]> {
  const { ffmpeg, ffprobe } = await findFfmpeg();
  return [
    {
      name: "chromium-headless-shell",
      found: await findHeadlessShell(),
      packages: SYSTEM_PACKAGES["chromium-headless-shell"],
    },
    { name: "chromium", found: await findChromium(), packages: SYSTEM_PACKAGES.chromium },
    { name: "ffmpeg", found: ffmpeg, packages: SYSTEM_PACKAGES.ffmpeg },
    { name: "ffprobe", found: ffprobe, packages: SYSTEM_PACKAGES.ffmpeg },
    await checkFonts(),
    // `vid server --database postgres://…` and its tests start PostgreSQL from the package.
    {
      name: "postgresql",
      found: (await findPostgres())?.bin,
      packages: SYSTEM_PACKAGES.postgresql,
    },
    // The README's server quickstart (examples/server_quickstart.sh) talks HTTP with these.
    { name: "curl", found: await which("curl"), packages: ["curl"] },
    { name: "jq", found: await which("jq"), packages: ["jq"] },
    { name: "zip", found: await which("zip"), packages: ["zip"] },
  ];
}

function missingPackages(requirements: Requirement[]): string[] {
  const packages = requirements.filter((r) => r.found === undefined).flatMap((r) => r.packages);
  return [...new Set(packages)];
}

function isRoot(): boolean {
  return Deno.uid() === 0;
}

async function aptInstall(packages: string[]): Promise<boolean> {
  const aptGet = await which("apt-get");
  if (!aptGet) return false;
  console.log(`setup: installing with apt-get: ${packages.join(" ")}`);
  const env = { DEBIAN_FRONTEND: "noninteractive" };
  const run = async (args: string[]): Promise<boolean> => {
    const command = new Deno.Command(aptGet, {
      args,
      env,
      stdin: "null",
      stdout: "inherit",
      stderr: "inherit",
    });
    return (await command.output()).code === 0;
  };
  return await run(["update"]) &&
    await run(["install", "-y", "--no-install-recommends", ...packages]);
}

function reportMissing(packages: string[], requirements: Requirement[]): void {
  const names = requirements.filter((r) => r.found === undefined).map((r) => r.name);
  console.error(`setup: missing ${names.join(", ")} (Debian packages: ${packages.join(" ")}).`);
  console.error("Install them with:");
  console.error(`  sudo apt-get install -y ${packages.join(" ")}`);
  console.error("or run `npx --yes deno@2 task setup` as root.");
}

async function cacheNpmDependencies(): Promise<boolean> {
  const result = await output(Deno.execPath(), ["install", "--quiet"], ROOT);
  if (result.code !== 0) {
    console.error("setup: `deno install` failed:");
    console.error(result.stdout + result.stderr);
  }
  return result.code === 0;
}

/**
 * As root, makes the account `vid server` runs its render browsers as (`vid-render`, a
 * system account with no home and no shell; see `src/render/sandbox.ts`), if missing. Not
 * root, or no `useradd`: nothing to do, the server then uses `nobody`.
 */
async function ensureRenderUser(): Promise<string | undefined> {
  const name = DEFAULT_RENDER_USERS[0];
  if (await lookupUser(name)) return name;
  if (!isRoot() || !await which("useradd")) return undefined;
  const result = await output("useradd", [
    "--system",
    "--no-create-home",
    "--home-dir",
    "/nonexistent",
    "--shell",
    "/usr/sbin/nologin",
    name,
  ]);
  if (result.code !== 0 && !await lookupUser(name)) {
    console.error(`setup: could not create the ${name} account: ${result.stderr.trim()}`);
    return undefined;
  }
  return name;
}

/**
 * The `ffmpeg version` of `ffmpeg`, and a note when it is not the build the Lambda worker
 * ships: x264 builds differ in their bytes, so only the same build makes a local render
 * byte-identical to the function's (docs/lambda.md). One `ffmpeg -version`, ~50 ms.
 */
async function ffmpegVersion(ffmpeg: string): Promise<{ version: string; note?: string }> {
  const { stdout } = await output(ffmpeg, ["-version"]);
  const version = /^ffmpeg version (\S+)/.exec(stdout)?.[1] ?? "unknown version";
  if (version === PACKAGED_FFMPEG_VERSION) return { version };
  const packaged = (name: keyof typeof PACKAGED_BINARIES): string =>
    `$PWD/dist/worker/${PACKAGED_BINARIES[name]}`;
  return {
    version,
    note: `note: ffmpeg ${version} is not the build the Lambda worker ships ` +
      `(${PACKAGED_FFMPEG_VERSION}), so local renders are not byte-identical to Lambda's. ` +
      `For one ffmpeg everywhere, after \`deno task build:worker\`: ` +
      `VID_FFMPEG=${packaged("ffmpeg")} VID_FFPROBE=${packaged("ffprobe")} ` +
      `(docs/lambda.md)`,
  };
}

/** The CPU model the kernel reports, for the host line beside the versions. */
function hostCpu(): string {
  return cpus()[0]?.model.trim() || "unknown CPU";
}

async function main(): Promise<number> {
  let requirements = await checkAll();
  let missing = missingPackages(requirements);
  if (missing.length > 0 && isRoot() && await which("apt-get")) {
    if (!await aptInstall(missing)) {
      console.error("setup: apt-get failed.");
      return 1;
    }
    requirements = await checkAll();
    missing = missingPackages(requirements);
  }
  if (missing.length > 0) {
    reportMissing(missing, requirements);
    return 1;
  }
  const width = Math.max(...requirements.map((r) => r.name.length));
  const ffmpeg = await ffmpegVersion(requirements.find((r) => r.name === "ffmpeg")!.found!);
  // Speed figures depend on the Chromium version and the host (bench/README.md): say both.
  const versions: Record<string, string> = { ffmpeg: `ffmpeg version ${ffmpeg.version}` };
  for (const name of ["chromium-headless-shell", "chromium"]) {
    const found = requirements.find((r) => r.name === name)?.found;
    if (found) versions[name] = `Chromium ${await chromiumVersion(found)}`;
  }
  for (const { name, found } of requirements) {
    const version = versions[name] ? ` (${versions[name]})` : "";
    console.log(`ok  ${name.padEnd(width)}  ${found}${version}`);
  }
  console.log(`ok  ${"host".padEnd(width)}  ${hostCpu()}, ${navigator.hardwareConcurrency} cores`);
  const renderUser = await ensureRenderUser();
  if (renderUser) console.log(`ok  ${"render user".padEnd(width)}  ${renderUser}`);
  if (ffmpeg.note) console.log(ffmpeg.note);
  return await cacheNpmDependencies() ? 0 : 1;
}

Deno.exit(await main());
