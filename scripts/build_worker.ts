/**
 * Builds the Lambda worker bundle: `worker/handler.ts` and everything it imports, as one
 * ES module for Node 22 (`nodejs22.x`), at `dist/worker/index.mjs` exporting `handler`
 * (the function's handler is `index.handler`).
 *
 * ```sh
 * deno task build:worker                      # -> dist/worker/index.mjs
 * deno run -A scripts/build_worker.ts --outdir /tmp/w
 * ```
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
 *   package beside the bundle (`dist/worker/node_modules/@sparticuz/chromium`), and the
 *   worker imports it lazily, only on AWS.
 * - `mainFields: ["module", "main"]`: packages' ES module builds first (jsonc-parser's UMD
 *   `main` loads its parts with dynamic `require`, which a bundle cannot follow).
 * - A `require` shim in the banner: bundled CommonJS dependencies call `require("fs")`
 *   etc., which an ES module has not got.
 *
 * @module
 */

import * as esbuild from "esbuild";
import { existsSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** Packages left out of the bundle (loaded at run time from beside it). */
export const EXTERNAL = ["@sparticuz/chromium"];

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

/** Builds the bundle into `outdir`; returns the path of `index.mjs`. */
export async function buildWorker(outdir = join(ROOT, "dist", "worker")): Promise<string> {
  const install = await new Deno.Command(Deno.execPath(), {
    args: ["install"],
    cwd: ROOT,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!install.success) throw new Error("deno install failed");
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json")));
  const mapped = new Set(
    Object.keys(config.imports ?? {}).map((key) => packageName(key.replace(/\/$/, ""))),
  );
  const outfile = join(outdir, "index.mjs");
  try {
    await esbuild.build({
      entryPoints: [join(ROOT, "worker", "handler.ts")],
      outfile,
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
  } finally {
    await esbuild.stop();
  }
  return outfile;
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--outdir");
  const outdir = at >= 0 ? Deno.args[at + 1] : undefined;
  const file = await buildWorker(
    outdir === undefined ? undefined : isAbsolute(outdir) ? outdir : resolve(outdir),
  );
  const { size } = await Deno.stat(file);
  console.log(`built ${file} (${(size / 1e6).toFixed(1)} MB)`);
}
