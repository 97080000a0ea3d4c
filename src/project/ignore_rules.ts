/**
 * The upload exclusions: which files of a project directory go into the project zip.
 * The same rules serve the hosted upload (`vid cloud render`) and publishing a site for
 * distributed rendering, so a project packages the same way for both.
 *
 * A path is excluded when any of these holds, checked in this order:
 *
 * 1. it is, or lies under, `renders/` or `snapshots/` at the project root (a nested
 *    `scenes/renders/` is kept);
 * 2. it is, or lies under, a folder named `.git`, `node_modules`, `dist`, `.next` or
 *    `coverage` at any depth;
 * 3. any of its segments starts with a dot (dotfiles and dot-folders at any depth; this
 *    also keeps `.hyperframesignore`, `.vidignore` and `.env` files out of the zip);
 * 4. it matches the gitignore-style rules of `.hyperframesignore` and then `.vidignore`
 *    at the project root, read as one list in that order, so a `!pattern` in
 *    `.vidignore` can re-include what `.hyperframesignore` excluded.
 *
 * The built-in exclusions (1 to 3) cannot be re-included by a `!pattern`: the
 * ignore files add exclusions, never remove them, and they keep secrets (`.env`),
 * repository internals and previous outputs out of every upload whatever the ignore
 * files say. As in git, a file inside an excluded folder cannot be re-included either.
 *
 * Patterns match case-sensitively, as git does on Linux, so a project packages the same
 * way on every machine.
 *
 * @module
 */

import ignore from "ignore";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** Folders excluded only directly at the project root. */
export const ROOT_EXCLUSIONS: readonly string[] = ["renders", "snapshots"];

/** Folders excluded at any depth. */
export const ANYWHERE_EXCLUSIONS: readonly string[] = [
  ".git",
  "node_modules",
  "dist",
  ".next",
  "coverage",
];

/** Gitignore-style files read from the project root, in the order their rules apply. */
export const IGNORE_FILES: readonly string[] = [".hyperframesignore", ".vidignore"];

/** An ignore file exists but could not be read. */
export class IgnoreRulesError extends VidError {
  override name = "IgnoreRulesError";
  /** The ignore file at fault, e.g. `.vidignore`. */
  override readonly field: string;

  constructor(message: string, field: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
    this.field = field;
  }
}

/** The upload rules of one project directory. */
export interface ProjectRules {
  /** The ignore files that were found and read, in rule order. */
  sources: string[];
  /**
   * Why a path is excluded, in words (e.g. `root-level "renders/"` or
   * `.vidignore line 3 "assets/"`), or `undefined` when it is included.
   * Paths are posix and relative to the project root; a path that is absolute or leaves
   * the project is always excluded.
   */
  exclusionReason(relativePath: string, isDirectory: boolean): string | undefined;
  /** True when the path goes into the zip. */
  includes(relativePath: string, isDirectory: boolean): boolean;
}

async function readIgnoreFile(projectDir: string, name: string): Promise<string | undefined> {
  try {
    return await readFile(join(projectDir, name), "utf8");
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw new IgnoreRulesError(
      `${join(projectDir, name)}: cannot read the ignore file: ${(error as Error).message}`,
      name,
      { cause: error },
    );
  }
}

/** `./a/b/` -> `a/b`; undefined when the path is absolute or leaves the project. */
function normalize(relativePath: string): string | undefined {
  if (relativePath.startsWith("/")) return undefined;
  const segments: string[] = [];
  for (const segment of relativePath.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") return undefined;
    segments.push(segment);
  }
  return segments.join("/");
}

function builtInReason(segments: string[], isDirectory: boolean): string | undefined {
  // Every segment but the last is a folder; the last one is when isDirectory says so.
  const folders = isDirectory ? segments.length : segments.length - 1;
  if (folders > 0 && ROOT_EXCLUSIONS.includes(segments[0])) {
    return `root-level "${segments[0]}/"`;
  }
  for (let i = 0; i < folders; i++) {
    if (ANYWHERE_EXCLUSIONS.includes(segments[i])) return `"${segments[i]}/" folder`;
  }
  const dotted = segments.find((segment) => segment.startsWith("."));
  if (dotted !== undefined) return `dotfile "${dotted}"`;
  return undefined;
}

/**
 * Reads the upload rules of a project directory (its `.hyperframesignore` and
 * `.vidignore`, both optional) and returns them with the reason each exclusion applies.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const rules = await projectRules("examples/hello");
 * assert.equal(rules.exclusionReason("renders/hello.mp4", false), 'root-level "renders/"');
 * assert.equal(rules.includes("assets/logo.png", false), true); // no ignore file excludes it
 * ```
 */
export async function projectRules(projectDir: string): Promise<ProjectRules> {
  const matcher = ignore({ ignorecase: false });
  const sources: string[] = [];
  for (const name of IGNORE_FILES) {
    const text = await readIgnoreFile(projectDir, name);
    if (text === undefined) continue;
    sources.push(name);
    const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
    matcher.add(lines.map((pattern, index) => ({ pattern, mark: `${name} line ${index + 1}` })));
  }

  const exclusionReason = (relativePath: string, isDirectory: boolean): string | undefined => {
    const path = normalize(relativePath);
    if (path === undefined) return "outside the project";
    if (path === "") return undefined;
    const builtIn = builtInReason(path.split("/"), isDirectory);
    if (builtIn !== undefined) return builtIn;
    const result = matcher.test(isDirectory ? `${path}/` : path);
    if (!result.ignored) return undefined;
    return result.rule ? `${result.rule.mark} "${result.rule.pattern}"` : "an ignore file";
  };

  return {
    sources,
    exclusionReason,
    includes: (relativePath: string, isDirectory: boolean): boolean =>
      exclusionReason(relativePath, isDirectory) === undefined,
  };
}

/**
 * The upload filter of a project directory: true when a path (posix, relative to the
 * project root) goes into the project zip. Callers walking the tree should not descend
 * into a folder the filter excludes: nothing under it is included.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const include = await projectFilter("examples/hello");
 * assert.equal(include("index.html", false), true);
 * assert.equal(include("renders", true), false); // root-level renders/
 * assert.equal(include("scenes/renders", true), true); // only the root one is excluded
 * assert.equal(include("lib/node_modules", true), false); // at any depth
 * ```
 */
export async function projectFilter(
  projectDir: string,
): Promise<(relativePath: string, isDirectory: boolean) => boolean> {
  const rules = await projectRules(projectDir);
  return rules.includes;
}
