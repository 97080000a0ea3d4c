/**
 * The composition model: a composition file's markup (`markup.ts`) and where it is.
 *
 * @module
 */

import { readFile, stat } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { CompositionError } from "./errors.ts";
import { type Composition, parseCompositionMarkup } from "./markup.ts";

export { aspectRatioOf } from "./markup.ts";
export type { AspectRatio, Composition } from "./markup.ts";

/** Default entry file inside a project directory. */
export const DEFAULT_ENTRY = "index.html";

/**
 * Parses composition HTML. `file` is used in messages and to derive the project directory.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const c = parseComposition(
 *   '<div data-composition-id="intro" data-width="1080" data-height="1920" data-duration="3"></div>',
 *   "/tmp/intro/index.html",
 * );
 * assert.equal(c.aspectRatio, "9:16");
 * ```
 */
export function parseComposition(html: string, file: string): Composition {
  const markup = parseCompositionMarkup(html, file);
  const absolute = resolve(file);
  return { file: absolute, projectDir: dirname(absolute), entry: basename(absolute), ...markup };
}

/**
 * Resolves a CLI target to the composition file: a file is used as is; a directory
 * means `<dir>/<entry>` (entry defaults to `index.html`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const file = await resolveCompositionFile("examples/hello");
 * assert.ok(file.endsWith("/examples/hello/index.html"));
 * ```
 */
export async function resolveCompositionFile(
  target = ".",
  entry: string = DEFAULT_ENTRY,
): Promise<string> {
  let info;
  try {
    info = await stat(target);
  } catch {
    throw new CompositionError(`${target}: no such file or directory`, target, "dir");
  }
  if (info.isFile()) return resolve(target);
  const file = join(target, entry);
  try {
    const entryInfo = await stat(file);
    if (entryInfo.isFile()) return resolve(file);
  } catch {
    // reported below
  }
  throw new CompositionError(
    `${file}: composition entry not found; pass --composition <file> to pick another entry`,
    file,
    "composition",
  );
}

/**
 * Reads and parses a composition from a project directory or an HTML file.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const composition = await readComposition("examples/hello");
 * assert.deepEqual([composition.id, composition.width, composition.height], ["hello", 1920, 1080]);
 * ```
 */
export async function readComposition(
  target = ".",
  entry: string = DEFAULT_ENTRY,
): Promise<Composition> {
  const file = await resolveCompositionFile(target, entry);
  let html: string;
  try {
    html = await readFile(file, "utf8");
  } catch (error) {
    throw new CompositionError(`${file}: ${(error as Error).message}`, file);
  }
  return parseComposition(html, file);
}
