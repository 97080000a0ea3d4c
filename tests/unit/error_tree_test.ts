/**
 * One error tree: every error class in `src/` and `worker/` extends `VidError`, so the CLI's
 * `reportError`, the server's error handler and SDK callers read one shape (exit code,
 * field, flag, code, HTTP status) instead of duck typing each class. A new class that
 * extends `Error` itself fails here, as does one missing from ARCHITECTURE.md's tree.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { VidError } from "../../src/errors.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The folders of hand-written host code: the SDK, CLI and server, and the Lambda worker. */
const SCANNED = [join(ROOT, "src"), join(ROOT, "worker")];

/** One `class X extends Y` declaration of `src/`. */
interface ClassDeclaration {
  name: string;
  base: string;
  exported: boolean;
  file: string;
}

async function sourceFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      // worker/runtime/ may hold the packages the artifact ships, with their own errors.
      if (entry.name !== "node_modules") out.push(...await sourceFiles(path));
    } else if (entry.name.endsWith(".ts")) out.push(path);
  }
  return out.sort();
}

async function declarations(): Promise<ClassDeclaration[]> {
  const out: ClassDeclaration[] = [];
  for (const file of (await Promise.all(SCANNED.map(sourceFiles))).flat()) {
    const text = await readFile(file, "utf8");
    for (const m of text.matchAll(/^(export )?(?:abstract )?class (\w+) extends (\w+)/gm)) {
      out.push({ name: m[2], base: m[3], exported: m[1] !== undefined, file });
    }
  }
  return out;
}

const CLASSES = await declarations();
const BY_NAME = new Map(CLASSES.map((c) => [c.name, c]));
/** The built-in error classes a class of vid could extend instead of VidError. */
const BUILT_IN = /^(Error|TypeError|RangeError|SyntaxError|AggregateError|DOMException)$/;

/** The bases of `name` up to the first one not declared in `src/`. */
function chain(name: string): string[] {
  const out = [name];
  for (let c = BY_NAME.get(name); c && out.length < 20; c = BY_NAME.get(c.base)) {
    out.push(c.base);
  }
  return out;
}

/** The classes of `src/` that are errors: their chain ends at a built-in error or VidError. */
const ERROR_CLASSES = CLASSES.filter((c) => {
  const root = chain(c.name).at(-1)!;
  return root === "VidError" || BUILT_IN.test(root) || c.name === "VidError";
});

describe("the error tree", () => {
  it("finds the error classes of src/ (the scan works)", () => {
    // 60-odd at the time of writing; a scan that finds a handful is broken, not clean.
    assert.ok(ERROR_CLASSES.length > 50, `only ${ERROR_CLASSES.length} error classes found`);
    assert.ok(ERROR_CLASSES.some((c) => c.name === "EncodeError"));
    assert.ok(ERROR_CLASSES.some((c) => c.name === "LambdaRuntimeError"), "worker/ is scanned");
  });

  it("every error class declared in src/ and worker/ descends from VidError", () => {
    const outside = ERROR_CLASSES
      .filter((c) => c.name !== "VidError" && !chain(c.name).includes("VidError"))
      .map((c) => `${c.name} (${relative(ROOT, c.file)}) extends ${c.base}`);
    assert.deepEqual(outside, [], "extend VidError from src/errors.ts");
  });

  it("every exported error class is a VidError at run time", async () => {
    const exported = ERROR_CLASSES.filter((c) => c.exported && c.name !== "VidError");
    assert.ok(exported.length > 40, `only ${exported.length} exported error classes`);
    for (const c of exported) {
      const module = await import(pathToFileURL(c.file).href) as Record<string, unknown>;
      const value = module[c.name];
      assert.equal(typeof value, "function", `${c.name} is exported by ${c.file}`);
      const prototype = (value as { prototype: unknown }).prototype;
      assert.ok(prototype instanceof VidError, `${c.name} extends VidError`);
    }
  });

  it("ARCHITECTURE.md's error tree names every exported error class", async () => {
    const architecture = await readFile(join(ROOT, "ARCHITECTURE.md"), "utf8");
    const section = architecture.slice(architecture.indexOf("## Errors"));
    assert.ok(section.startsWith("## Errors"), "ARCHITECTURE.md has an Errors section");
    const missing = ERROR_CLASSES
      .filter((c) => c.exported && !new RegExp(`\\b${c.name}\\b`).test(section))
      .map((c) => c.name);
    assert.deepEqual(missing, [], "add them to ARCHITECTURE.md's error tree");
  });
});
