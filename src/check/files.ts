/**
 * Whether a URL the page names is a file of the project, letter case included: the render
 * serves the project over HTTP from a Linux disk (and the Lambda worker from S3), where
 * `Logo.png` is not `logo.png`, while a designer's Mac finds either. Each folder is read
 * once per check.
 *
 * @module
 */

import { readdir } from "node:fs/promises";
import { relative, resolve, sep } from "node:path";

/** What {@linkcode projectPath} makes of a URL. */
export type ProjectPath =
  | { kind: "remote" }
  | { kind: "outside"; path: string }
  | { kind: "local"; path: string; relative: string };

/**
 * The project file a URL written in `fromFile` names, or `remote` for a URL vid does not
 * look up on disk (http(s), data:, blob:, a fragment). A leading `/` is the project root,
 * which is where the render serves the project.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const p = projectPath("img/a%20b.png?v=2", "/p/index.html", "/p");
 * assert.deepEqual(p, { kind: "local", path: "/p/img/a b.png", relative: "img/a b.png" });
 * assert.equal(projectPath("https://x.test/a.png", "/p/index.html", "/p").kind, "remote");
 * ```
 */
export function projectPath(url: string, fromFile: string, projectDir: string): ProjectPath {
  if (/^([a-z][a-z0-9+.-]*:|\/\/|#)/i.test(url) || url.includes("{{")) return { kind: "remote" };
  let path = url.split(/[?#]/)[0];
  if (path === "") return { kind: "remote" };
  try {
    path = decodeURI(path);
  } catch {
    // keep it as written
  }
  const absolute = path.startsWith("/")
    ? resolve(projectDir, "." + path)
    : resolve(fromFile, "..", path);
  const rel = relative(projectDir, absolute);
  if (rel.startsWith("..") || rel === "") return { kind: "outside", path: absolute };
  return { kind: "local", path: absolute, relative: rel.split(sep).join("/") };
}

/** Why a project path is not a file, or null when it is one (letter case included). */
export type Missing = { reason: "missing" } | { reason: "case"; actual: string } | null;

/** Looks up project paths by exact letter case, reading each folder once. */
export function fileFinder(projectDir: string): (relativePath: string) => Promise<Missing> {
  const listings = new Map<string, Promise<Map<string, boolean> | undefined>>();
  const list = (dir: string): Promise<Map<string, boolean> | undefined> => {
    let listing = listings.get(dir);
    if (!listing) {
      listing = readdir(dir, { withFileTypes: true }).then(
        (entries) => new Map(entries.map((e) => [e.name, e.isDirectory()])),
        () => undefined,
      );
      listings.set(dir, listing);
    }
    return listing;
  };
  return async (relativePath: string): Promise<Missing> => {
    const parts = relativePath.split("/").filter((p) => p !== "" && p !== ".");
    let dir = projectDir;
    const actual: string[] = [];
    for (const [i, part] of parts.entries()) {
      const entries = await list(dir);
      if (!entries) return { reason: "missing" };
      const last = i === parts.length - 1;
      if (entries.has(part) && entries.get(part) === !last) {
        actual.push(part);
      } else {
        const other = [...entries.keys()].find((name) =>
          name.toLowerCase() === part.toLowerCase() && entries.get(name) === !last
        );
        if (other === undefined) return { reason: "missing" };
        actual.push(other);
        const rest = parts.slice(i + 1);
        return { reason: "case", actual: [...actual, ...rest].join("/") };
      }
      dir = resolve(dir, part);
    }
    return null;
  };
}
