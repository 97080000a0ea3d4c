/**
 * `initProject`: writes a starter project (see starters.ts) into a folder, with its
 * libraries vendored, so a designer starts from a composition that already renders.
 *
 * A folder that exists and is not empty is refused unless `force` is set, so an init never
 * overwrites work by accident; with `force` the starter's files replace same-named files
 * and every other file is kept.
 *
 * @module
 */

import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { type Starter, STARTERS } from "./starters.ts";
import {
  LIBRARIES,
  LIBRARY_NAMES,
  libraryFolder,
  type LibraryName,
  vendorLibrary,
} from "./vendor.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import {
  fetchFontPackage,
  FONT_PACKAGES,
  linkStylesheet,
  vendorFontPackage,
} from "./font_packages.ts";

/** A bad argument of {@linkcode initProject}; `field` names it. */
export class InitError extends VidError {
  /** Always `"InitError"`. */
  override name = "InitError";
  /** The offending option: `template` or `dir`. */
  override readonly field: string;
  /**
   * Creates the error for one option.
   *
   * @param field The offending option.
   * @param message What is wrong and how to fix it.
   */
  constructor(field: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
  }
}

/** Options of {@linkcode initProject}. */
export interface InitOptions {
  /** Folder to create the project in. @default "." */
  dir?: string;
  /** Starter name (see {@linkcode listStarters}). @default "social" */
  template?: string;
  /** Write into a folder that is not empty (same-named files are replaced). @default false */
  force?: boolean;
}

/** What {@linkcode initProject} wrote. */
export interface InitResult {
  /** Absolute path of the project folder. */
  dir: string;
  /** The starter used. */
  template: string;
  /** Project-relative paths written, sorted. */
  files: string[];
  /** The composition's width in pixels. */
  width: number;
  /** The composition's height in pixels. */
  height: number;
  /** The composition's length in seconds. */
  duration: number;
  /** Suggested output of a first render (its extension picks the format). */
  output: string;
}

/**
 * The starters `vid init --template` accepts.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { listStarters } from "./init.ts";
 *
 * for (const s of listStarters()) console.log(s.name, s.description);
 * assert.ok(listStarters().some((s) => s.name === "lower-third"));
 * ```
 */
export function listStarters(): { name: string; description: string; libraries: string[] }[] {
  return STARTERS.map((s) => ({
    name: s.name,
    description: s.description,
    libraries: [...s.libraries],
  }));
}

function starterNamed(name: string): Starter {
  const starter = STARTERS.find((s) => s.name === name);
  if (!starter) {
    throw new InitError(
      "template",
      `unknown template ${JSON.stringify(name)}; choose one of ${
        STARTERS.map((s) => s.name).join(", ")
      } (vid init --list describes them)`,
    );
  }
  return starter;
}

/**
 * Creates a starter project: the composition, example batch rows and the vendored
 * libraries it uses.
 *
 * @example
 * ```ts no_run
 * import { initProject, renderComposition } from "@vid/cli";
 *
 * const project = await initProject({ dir: "my-video", template: "lower-third" });
 * await renderComposition({ target: project.dir, output: "renders/lower-third.webm" });
 * ```
 */
export async function initProject(options: InitOptions = {}): Promise<InitResult> {
  const starter = starterNamed(options.template ?? STARTERS[0].name);
  const dir = resolve(options.dir ?? ".");
  let existing: string[] = [];
  try {
    existing = await readdir(dir);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOTDIR") {
      throw new InitError("dir", `${dir} is a file; give a folder for the new project`);
    }
  }
  if (existing.length > 0 && !options.force) {
    throw new InitError(
      "dir",
      `${dir} is not empty (${existing.length} entr${existing.length === 1 ? "y" : "ies"}); ` +
        `choose a new folder, or pass --force to add the starter's files (same-named files ` +
        `are replaced)`,
    );
  }
  // Every library is found before anything is written: no half-made project.
  for (const library of starter.libraries) libraryFolder(library);
  await mkdir(dir, { recursive: true });
  const files: string[] = [];
  for (const [path, text] of Object.entries(starter.files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), text);
    files.push(path);
  }
  for (const library of starter.libraries) files.push(...await vendorLibrary(library, dir));
  return {
    dir,
    template: starter.name,
    files: files.sort(),
    width: starter.width,
    height: starter.height,
    duration: starter.duration,
    output: starter.output,
  };
}

/** What {@linkcode addLibraries} copied, per library. */
export interface AddedLibrary {
  /** The name given (`gsap`, `lottie`, `three`, `inter` or a font's slug, e.g. `montserrat`). */
  name: string;
  /** The npm package it came from. */
  package: string;
  /** The version of that package. */
  version: string;
  /** Project-relative paths written. */
  files: string[];
  /** How a composition uses it. */
  use: string;
}

/** Every name `vid add` accepts: the libraries, then the fonts HyperFrames embeds. */
export const ADD_NAMES: readonly string[] = [...LIBRARY_NAMES, ...Object.keys(FONT_PACKAGES)];

/** Inter's stylesheet, over the two faces `vid add inter` copies from vid's dependency. */
const INTER_STYLESHEET = [400, 700].map((w) =>
  `@font-face {\n  font-family: 'Inter';\n  font-style: normal;\n  font-display: swap;\n` +
  `  font-weight: ${w};\n  src: url(inter-latin-${w}-normal.woff2) format('woff2');\n}\n`
).join("\n");

/**
 * Links a font's stylesheet from the project's `index.html`, so the page declares the family
 * with no edit by hand; returns how a composition uses it.
 */
async function linkFont(projectDir: string, stylesheet: string, family: string): Promise<string> {
  const entry = join(projectDir, "index.html");
  const html = await readFile(entry, "utf8").catch(() => undefined);
  if (html !== undefined) await writeFile(entry, linkStylesheet(html, stylesheet));
  return `${html !== undefined ? "index.html links" : "link"} ` +
    `<link rel="stylesheet" href="${stylesheet}">; font-family: "${family}"`;
}

/**
 * Copies libraries (GSAP, Lottie, Three.js, the Inter font) from vid's npm dependencies into
 * a project, so its page loads them from its own folder and renders offline; the other fonts
 * HyperFrames embeds (`montserrat`, `roboto`, ...) come from the npm registry at a pinned,
 * integrity-checked version (see `font_packages.ts`). A font's files go to `fonts/` with a
 * `fonts/<slug>.css` that `index.html` is made to link. Every name is checked and every
 * package found before anything is written.
 *
 * @example
 * ```ts no_run
 * import { addLibraries } from "./init.ts";
 *
 * const [gsap] = await addLibraries(["gsap"], "my-video");
 * gsap.files; // ["lib/gsap.min.js"]
 * ```
 */
export async function addLibraries(
  names: readonly string[],
  projectDir = ".",
): Promise<AddedLibrary[]> {
  const unknown = names.filter((n) => !ADD_NAMES.includes(n));
  if (unknown.length > 0 || names.length === 0) {
    throw new InitError(
      "library",
      `${unknown.length > 0 ? `unknown library ${unknown.join(", ")}` : "no library named"}; ` +
        `choose from ${LIBRARY_NAMES.join(", ")} or a font: ${
          Object.keys(FONT_PACKAGES).join(", ")
        }`,
    );
  }
  const wanted = [...new Set(names)];
  const libraries = wanted.filter((n): n is LibraryName =>
    (LIBRARY_NAMES as readonly string[]).includes(n)
  );
  const folders = new Map(libraries.map((name) => [name, libraryFolder(name)]));
  // Fetched (or read from the cache) and verified first, so a family that cannot be had
  // fails the command before any file is written.
  for (const name of wanted) if (!folders.has(name as LibraryName)) await fetchFontPackage(name);
  const added: AddedLibrary[] = [];
  for (const name of wanted) {
    const folder = folders.get(name as LibraryName);
    if (folder === undefined) {
      const font = await vendorFontPackage(name, projectDir);
      added.push({
        name,
        package: `@fontsource/${name}`,
        version: font.version,
        files: font.files,
        use: await linkFont(projectDir, font.stylesheet, FONT_PACKAGES[name].family),
      });
      continue;
    }
    const library = name as LibraryName;
    const manifest = JSON.parse(await readFile(join(folder, "package.json"), "utf8"));
    const files = await vendorLibrary(library, projectDir);
    let use = LIBRARIES[library].use;
    if (library === "inter") {
      await writeFile(join(projectDir, "fonts", "inter.css"), INTER_STYLESHEET);
      files.unshift("fonts/inter.css");
      use = await linkFont(projectDir, "fonts/inter.css", "Inter");
    }
    added.push({
      name,
      package: LIBRARIES[library].package,
      version: String(manifest.version),
      files,
      use,
    });
  }
  return added;
}
