/**
 * Builds the Lambda worker: `worker/handler.ts` and everything it imports, as one ES module
 * for Node 22 (`nodejs22.x`) at `<outdir>/index.mjs` exporting `handler` (the function's
 * handler is `index.handler`), and, unless `--bundle-only`, the deployable artifact around
 * it: the binaries the Lambda runtime lacks, installed from npm beside the bundle.
 *
 * ```sh
 * deno task build:worker                                  # -> dist/worker/ (deployable)
 * deno run -A scripts/build_worker.ts --bundle-only       # -> dist/worker/index.mjs only
 * deno run -A scripts/build_worker.ts --outdir /tmp/w     # elsewhere
 * ```
 *
 * The artifact (`dist/worker/`):
 *
 * ```
 * index.mjs                                   the bundle
 * package.json, package-lock.json             worker/runtime/'s, pinned exact versions
 * node_modules/@sparticuz/chromium/           Chromium, brotli-compressed (inflated to /tmp)
 * node_modules/@ffmpeg-installer/linux-x64/ffmpeg    static x86_64 ffmpeg
 * node_modules/@ffprobe-installer/linux-x64/ffprobe  static x86_64 ffprobe
 * vid-artifact.json                           content hash, size, versions (see worker/artifact_manifest.ts)
 * ```
 *
 * It is installed with `npm ci --ignore-scripts` from `worker/runtime/package-lock.json`
 * (the npm registry only; the packages' own install scripts would only `chmod` their
 * binaries, which this script does itself), checked against Lambda's 250 MB unzipped limit
 * and built in a staging folder that replaces `outdir` only when complete.
 *
 * Choices:
 *
 * - esbuild's JS API, not `deno bundle`: `deno bundle` (Deno 2.9) targets only the
 *   `browser` and `deno` platforms, and the worker must run on Node.
 * - Bare imports (`@aws-sdk/client-s3`, `parse5`, ...) resolve from `./node_modules`, which
 *   Deno fills from the `imports` map of deno.json (`"nodeModulesDir": "auto"`); the script
 *   runs `deno install` first so every mapped package is there. A small plugin checks each
 *   bare import against that map, so an unmapped package fails the build with a clear
 *   message instead of a stray copy from elsewhere.
 * - The AWS SDK is bundled, not left to the Lambda runtime's copy: the bundle then runs
 *   the exact client version the tests ran, on AWS and on a local Node alike (the runtime's
 *   SDK version changes without notice, and a local Node has none).
 * - `@sparticuz/chromium` is external: it ships a compressed Chromium that must stay a real
 *   package beside the bundle, and the worker imports it only on AWS
 *   (`worker/lambda_runtime.ts`).
 * - `mainFields: ["module", "main"]`: packages' ES module builds first (jsonc-parser's UMD
 *   `main` loads its parts with dynamic `require`, which a bundle cannot follow).
 * - A `require` shim in the banner: bundled CommonJS dependencies call `require("fs")`
 *   etc., which an ES module has not got.
 *
 * @module
 */

import * as esbuild from "esbuild";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import { dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ARTIFACT_MANIFEST,
  type ArtifactManifest,
  LAMBDA_UNZIPPED_LIMIT_BYTES,
} from "../worker/artifact_manifest.ts";
import { CHROMIUM_PACKAGE, PACKAGED_BINARIES } from "../worker/lambda_runtime.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** package.json and package-lock.json of the runtime packages. */
const RUNTIME_DIR = join(ROOT, "worker", "runtime");

/** Packages left out of the bundle (loaded at run time from beside it). */
export const EXTERNAL: string[] = [CHROMIUM_PACKAGE];

/** Options of {@linkcode buildWorker}. */
export interface BuildWorkerOptions {
  /** Output folder. @default dist/worker at the repository root */
  outdir?: string;
  /** Only the bundle, no runtime packages (local runs need none). @default false */
  bundleOnly?: boolean;
  /** The unzipped size limit checked. @default Lambda's 250 MB */
  limitBytes?: number;
}

/** What a build produced. */
export interface BuildWorkerResult {
  /** Path of `index.mjs`. */
  bundle: string;
  /** The artifact's manifest; absent for `bundleOnly`. */
  manifest?: ArtifactManifest;
}

/** The packaged worker is over Lambda's unzipped size limit. */
export class ArtifactTooLargeError extends Error {
  override name = "ArtifactTooLargeError";
  /** Always `"limitBytes"`: the limit that was exceeded. */
  readonly field = "limitBytes";
}

/** Package name of a bare specifier: `@scope/name/sub` -> `@scope/name`. */
function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/** Fails on bare imports that deno.json does not map (so they are not in node_modules). */
function denoImportsPlugin(mapped: Set<string>): esbuild.Plugin {
  return {
    name: "deno-imports",
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        // Only imports written in our own sources; packages resolve their own deps.
        if (args.importer.includes("/node_modules/")) return undefined;
        if (args.path.startsWith("node:")) return { path: args.path, external: true };
        const name = packageName(args.path);
        if (EXTERNAL.includes(name)) return { path: args.path, external: true };
        if (!mapped.has(name)) {
          return {
            errors: [{
              text: `${args.path} is not in the imports map of deno.json; add it there`,
            }],
          };
        }
        if (!existsSync(join(ROOT, "node_modules", name))) {
          return {
            errors: [{ text: `${name} is missing from node_modules; run deno install` }],
          };
        }
        return undefined;
      });
    },
  };
}

async function run(command: string, args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    const decoder = new TextDecoder();
    throw new Error(
      `${command} ${args.join(" ")} failed (exit ${out.code}):\n` +
        decoder.decode(out.stderr) + decoder.decode(out.stdout),
    );
  }
}

/**
 * Bundles `worker/handler.ts` into `<outdir>/index.mjs`, written whole under another name and
 * renamed into place: test files running in parallel each start a local stack, which rebuilds
 * a stale `dist/worker/index.mjs`, and one must never load a bundle another is still writing.
 */
async function bundle(outdir: string): Promise<string> {
  await run(Deno.execPath(), ["install"], ROOT);
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const mapped = new Set(
    Object.keys(config.imports ?? {}).map((key) => packageName(key.replace(/\/$/, ""))),
  );
  const outfile = join(outdir, "index.mjs");
  const partial = join(outdir, `.index.mjs.${Deno.pid}.partial`);
  try {
    await esbuild.build({
      entryPoints: [join(ROOT, "worker", "handler.ts")],
      outfile: partial,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node22",
      external: EXTERNAL,
      // ES module builds first: jsonc-parser's UMD `main` requires its parts dynamically,
      // which a bundle cannot follow.
      mainFields: ["module", "main"],
      plugins: [denoImportsPlugin(mapped)],
      banner: {
        js: "import { createRequire as __vidCreateRequire } from 'node:module';\n" +
          "const require = __vidCreateRequire(import.meta.url);",
      },
      legalComments: "none",
      logLevel: "warning",
    });
    await Deno.rename(partial, outfile);
  } finally {
    await esbuild.stop();
    await Deno.remove(partial).catch(() => {});
  }
  return outfile;
}

/** Every file under `dir` (posix paths relative to it), sorted; links are not followed. */
async function listFiles(dir: string, base = dir): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) found.push(...await listFiles(path, base));
    else found.push(relative(base, path).split("\\").join("/"));
  }
  return found.sort();
}

/** Hash, size and count of the artifact's files (the manifest itself excluded). */
async function measure(dir: string): Promise<{ sha256: string; bytes: number; files: number }> {
  const hash = createHash("sha256");
  let bytes = 0;
  let files = 0;
  for (const path of await listFiles(dir)) {
    if (path === ARTIFACT_MANIFEST) continue;
    const info = await Deno.lstat(join(dir, path));
    const content = info.isSymlink
      ? new TextEncoder().encode(await Deno.readLink(join(dir, path)))
      : await Deno.readFile(join(dir, path));
    const fileHash = createHash("sha256").update(content).digest("hex");
    hash.update(`${path}\0${(info.mode ?? 0) & 0o777}\0${fileHash}\n`);
    bytes += info.size;
    files++;
  }
  return { sha256: hash.digest("hex"), bytes, files };
}

/** The ten largest files under `dir`, for the too-large message. */
async function largest(dir: string): Promise<string> {
  const sizes: [number, string][] = [];
  for (const path of await listFiles(dir)) {
    sizes.push([(await Deno.lstat(join(dir, path))).size, path]);
  }
  sizes.sort((a, b) => b[0] - a[0]);
  return sizes.slice(0, 10).map(([size, path]) => `  ${(size / 1e6).toFixed(1)} MB  ${path}`)
    .join("\n");
}

/** Installs the runtime packages into `dir` and makes their binaries executable. */
async function installRuntime(dir: string): Promise<Record<string, string>> {
  for (const name of ["package.json", "package-lock.json"]) {
    await Deno.copyFile(join(RUNTIME_DIR, name), join(dir, name));
  }
  await run("npm", [
    "ci",
    "--omit=dev",
    "--ignore-scripts",
    "--no-audit",
    "--no-fund",
    "--no-update-notifier",
  ], dir);
  for (const path of Object.values(PACKAGED_BINARIES)) await Deno.chmod(join(dir, path), 0o755);
  const manifest = JSON.parse(await Deno.readTextFile(join(RUNTIME_DIR, "package.json")));
  const packages: Record<string, string> = {};
  for (const name of Object.keys(manifest.dependencies ?? {}).sort()) {
    const installed = JSON.parse(
      await Deno.readTextFile(join(dir, "node_modules", name, "package.json")),
    );
    packages[name] = installed.version;
  }
  return packages;
}

/**
 * Builds the worker into `outdir`: the bundle, and unless `bundleOnly` the deployable
 * artifact (runtime packages, size check, `vid-artifact.json`).
 *
 * @example
 * ```ts
 * const { manifest } = await buildWorker();
 * console.log(manifest?.bytes, manifest?.sha256);
 * ```
 */
export async function buildWorker(options: BuildWorkerOptions = {}): Promise<BuildWorkerResult> {
  const outdir = resolve(options.outdir ?? join(ROOT, "dist", "worker"));
  if (options.bundleOnly) {
    await Deno.mkdir(outdir, { recursive: true });
    return { bundle: await bundle(outdir) };
  }
  await Deno.mkdir(dirname(outdir), { recursive: true });
  const staging = await Deno.makeTempDir({
    dir: dirname(outdir),
    prefix: `.${outdir.split("/").pop()}-building-`,
  });
  try {
    await bundle(staging);
    const packages = await installRuntime(staging);
    const limitBytes = options.limitBytes ?? LAMBDA_UNZIPPED_LIMIT_BYTES;
    const { sha256, bytes, files } = await measure(staging);
    if (bytes > limitBytes) {
      throw new ArtifactTooLargeError(
        `the worker artifact is ${(bytes / 1e6).toFixed(1)} MB unzipped, over the limit of ` +
          `${(limitBytes / 1e6).toFixed(1)} MB (Lambda's for code plus layers). Largest ` +
          `files:\n${await largest(staging)}\nDeploy it as a container image instead, or ` +
          `drop a binary from worker/runtime/package.json`,
      );
    }
    const manifest: ArtifactManifest = {
      format: 1,
      sha256,
      bytes,
      files,
      limitBytes,
      handler: "index.handler",
      runtime: "nodejs22.x",
      packages,
    };
    await Deno.writeTextFile(
      join(staging, ARTIFACT_MANIFEST),
      JSON.stringify(manifest, null, 2) + "\n",
    );
    // Lambda runs the code as another user: everything must be readable by all.
    await Deno.chmod(staging, 0o755);
    await Deno.remove(outdir, { recursive: true }).catch(() => {});
    await Deno.rename(staging, outdir);
    return { bundle: join(outdir, "index.mjs"), manifest };
  } catch (error) {
    await Deno.remove(staging, { recursive: true }).catch(() => {});
    throw error;
  }
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--outdir");
  const outdir = at >= 0 ? Deno.args[at + 1] : undefined;
  if (at >= 0 && !outdir) {
    console.error("--outdir needs a folder, e.g. --outdir /tmp/worker");
    Deno.exit(2);
  }
  const { bundle: file, manifest } = await buildWorker({
    outdir: outdir === undefined ? undefined : isAbsolute(outdir) ? outdir : resolve(outdir),
    bundleOnly: Deno.args.includes("--bundle-only"),
  });
  const { size } = await Deno.stat(file);
  console.log(`built ${file} (${(size / 1e6).toFixed(1)} MB)`);
  if (manifest) {
    const packages = Object.entries(manifest.packages).map(([n, v]) => `${n}@${v}`).join(", ");
    console.log(
      `artifact ${dirname(file)}: ${(manifest.bytes / 1e6).toFixed(1)} MB unzipped in ` +
        `${manifest.files} files (limit ${(manifest.limitBytes / 1e6).toFixed(1)} MB), ` +
        `sha256 ${manifest.sha256.slice(0, 16)}; ${packages}`,
    );
  }
}
