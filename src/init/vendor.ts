/**
 * Browser libraries a project may vendor: GSAP, Lottie (lottie-web), Three.js and the Inter
 * web font (@fontsource/inter), each an npm dependency of vid (pinned in deno.json), copied
 * from the installed package into the project's `lib/` (or `fonts/`) folder. A composition page is served from its project folder alone, so a
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
import { EXIT_FAILED, VidError } from "../errors.ts";

/** A library a starter or recipe can vendor (`vid add <name>`). */
export type LibraryName = "gsap" | "lottie" | "three" | "inter";

/** What a library is and which files of its npm package go where in the project. */
export interface Library {
  /** The npm package (a dependency of vid, pinned in deno.json). */
  package: string;
  /** Files copied, from the package folder to the project folder. */
  files: readonly { from: string; to: string }[];
  /** How a composition uses it, one line. */
  use: string;
}

/** The libraries `vid add` and the starters copy. */
export const LIBRARIES: Readonly<Record<LibraryName, Library>> = {
  gsap: {
    package: "gsap",
    files: [{ from: "dist/gsap.min.js", to: "lib/gsap.min.js" }],
    use: `<script src="lib/gsap.min.js"></script>, then a paused timeline in ` +
      `window.__timelines (vid seeks it)`,
  },
  lottie: {
    package: "lottie-web",
    files: [{ from: "build/player/lottie.min.js", to: "lib/lottie.min.js" }],
    use: `<script src="lib/lottie.min.js"></script>, autoplay: false, and ` +
      `anim.goToAndStop(t * 1000) in __vid.onSeek`,
  },
  three: {
    package: "three",
    files: [
      { from: "build/three.module.js", to: "lib/three.module.js" },
      { from: "build/three.core.js", to: "lib/three.core.js" },
    ],
    use: `import * as THREE from "./lib/three.module.js" in a module script; ` +
      `renderer.render() in __vid.onSeek`,
  },
  inter: {
    package: "@fontsource/inter",
    files: [
      { from: "files/inter-latin-400-normal.woff2", to: "fonts/inter-latin-400-normal.woff2" },
      { from: "files/inter-latin-700-normal.woff2", to: "fonts/inter-latin-700-normal.woff2" },
      { from: "LICENSE", to: "fonts/inter-LICENSE.txt" },
    ],
    use: `@font-face { font-family: Inter; font-weight: 700; ` +
      `src: url(fonts/inter-latin-700-normal.woff2) format("woff2"); }`,
  },
};

/** The names `vid add` accepts. */
export const LIBRARY_NAMES: readonly LibraryName[] = Object.keys(LIBRARIES) as LibraryName[];

/** A library's files cannot be found on this machine. */
export class LibraryNotFoundError extends VidError {
  /** Always `"LibraryNotFoundError"`. */
  override name = "LibraryNotFoundError";
  /** The npm package that is missing. */
  override readonly field: string;
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
      { exitCode: EXIT_FAILED },
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
 * import assert from "node:assert/strict";
 *
 * assert.ok(libraryFolder("inter").endsWith("/node_modules/@fontsource/inter"));
 * ```
 */
export function libraryFolder(name: LibraryName): string {
  const pkg = LIBRARIES[name].package;
  const tried: string[] = [];
  const candidates: (() => string)[] = [
    () => import.meta.resolve(pkg),
    () => createRequire(import.meta.url).resolve(pkg),
  ];
  for (const candidate of candidates) {
    try {
      const resolved = candidate();
      const file = resolved.startsWith("file:") ? fileURLToPath(resolved) : resolved;
      if (!file.startsWith("/") && !/^[A-Za-z]:[\\/]/.test(file)) {
        tried.push(`resolved to ${resolved}, not a file`);
        continue;
      }
      const root = packageRoot(pkg, file);
      if (root) return root;
      tried.push(`no package.json of ${pkg} above ${file}`);
    } catch (error) {
      tried.push((error as Error).message.split("\n")[0]);
    }
  }
  throw new LibraryNotFoundError(pkg, tried.join("; "));
}

/**
 * Copies a library's files into `projectDir` (see {@linkcode LIBRARIES}); returns the
 * project-relative paths written.
 *
 * @example
 * ```ts no_run
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
