/**
 * Browser libraries a project may vendor: GSAP, Lottie (lottie-web) and Three.js, each an
 * npm dependency of vid (pinned in deno.json), copied from the installed package into the
 * project's `lib/` folder. A composition page is served from its project folder alone, so a
 * vendored copy is what makes it render offline, identically everywhere (server, Lambda).
 *
 * The files are read from the installed npm package at the time they are copied (never a
 * second copy kept in this repository): the package folder is found from the module
 * resolution of its bare name (`import.meta.resolve`, then Node's `require.resolve`), so a
 * checkout after `deno install` and the npm package (which depends on them) both find it.
 *
 * @module
 */

import { existsSync, readFileSync } from "node:fs";
import { copyFile, mkdir } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** A library a starter or recipe can vendor. */
export type LibraryName = "gsap" | "lottie-web" | "three";

/** The files each library contributes, from its npm package to the project's `lib/`. */
export const LIBRARIES: Readonly<
  Record<LibraryName, { files: readonly { from: string; to: string }[]; use: string }>
> = {
  gsap: {
    files: [{ from: "dist/gsap.min.js", to: "lib/gsap.min.js" }],
    use: `<script src="lib/gsap.min.js"></script>; register timelines on window.__timelines`,
  },
  "lottie-web": {
    files: [{ from: "build/player/lottie.min.js", to: "lib/lottie.min.js" }],
    use: `<script src="lib/lottie.min.js"></script>; goToAndStop(t * 1000) in __vid.onSeek`,
  },
  three: {
    files: [
      { from: "build/three.module.js", to: "lib/three.module.js" },
      { from: "build/three.core.js", to: "lib/three.core.js" },
    ],
    use: `import * as THREE from "./lib/three.module.js" in a module script; render in onSeek`,
  },
};

/** A library's files cannot be found on this machine. */
export class LibraryNotFoundError extends Error {
  /** Always `"LibraryNotFoundError"`. */
  override name = "LibraryNotFoundError";
  /** The npm package that is missing. */
  readonly field: string;
  /**
   * Creates the error for one package.
   *
   * @param name The npm package.
   * @param detail What was tried.
   */
  constructor(name: string, detail: string) {
    super(
      `cannot find the npm package ${name} to copy into the project (${detail}); run ` +
        `\`deno install\` in the vid checkout (or \`npm install ${name}\` beside the vid npm ` +
        `package) and try again`,
    );
    this.field = name;
  }
}

/** The folder holding `name`'s package.json, walking up from a file of the package. */
function packageRoot(name: string, file: string): string | undefined {
  let dir = dirname(file);
  while (dir !== dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (existsSync(manifest)) {
      try {
        if (JSON.parse(readFileSync(manifest, "utf8")).name === name) return dir;
      } catch {
        // an unreadable package.json on the way up is not the package's
      }
    }
    dir = dirname(dir);
  }
  return undefined;
}

/**
 * The installed folder of a library's npm package.
 *
 * @example
 * ```ts
 * libraryFolder("gsap"); // ".../node_modules/gsap"
 * ```
 */
export function libraryFolder(name: LibraryName): string {
  const tried: string[] = [];
  const candidates: (() => string)[] = [
    () => import.meta.resolve(name),
    () => createRequire(import.meta.url).resolve(name),
  ];
  for (const candidate of candidates) {
    try {
      const resolved = candidate();
      const file = resolved.startsWith("file:") ? fileURLToPath(resolved) : resolved;
      if (!file.startsWith("/") && !/^[A-Za-z]:[\\/]/.test(file)) {
        tried.push(`resolved to ${resolved}, not a file`);
        continue;
      }
      const root = packageRoot(name, file);
      if (root) return root;
      tried.push(`no package.json of ${name} above ${file}`);
    } catch (error) {
      tried.push((error as Error).message.split("\n")[0]);
    }
  }
  throw new LibraryNotFoundError(name, tried.join("; "));
}

/**
 * Copies a library's files into `projectDir` (see {@linkcode LIBRARIES}); returns the
 * project-relative paths written.
 *
 * @example
 * ```ts
 * await vendorLibrary("gsap", "my-video"); // ["lib/gsap.min.js"]
 * ```
 */
export async function vendorLibrary(name: LibraryName, projectDir: string): Promise<string[]> {
  const root = libraryFolder(name);
  const written: string[] = [];
  for (const { from, to } of LIBRARIES[name].files) {
    const target = join(projectDir, to);
    await mkdir(dirname(target), { recursive: true });
    await copyFile(join(root, from), target);
    written.push(to);
  }
  return written;
}
