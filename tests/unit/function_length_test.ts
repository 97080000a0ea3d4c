/// <reference lib="deno.unstable" />
/**
 * No hand-written function over {@linkcode MAX_LINES} lines: a function that long holds
 * several jobs and the state they share, and is hard to test a part of. The source is
 * parsed by Deno's own TypeScript parser (a lint plugin run through `Deno.lint.runPlugin`),
 * so every function counts: declarations, methods, function expressions and arrows, a
 * closure inside another one too. Scanned: the hand-written code of the SDK, CLI, server,
 * worker, scripts, benchmarks, the Pulumi program and the entry files; left out: the
 * generated page bundles (`*_bundle.ts`) and tests (a `describe` block is one long arrow
 * by design).
 *
 * {@linkcode KNOWN_LONG} names the functions still over the limit, each with the issue that
 * splits it. The list may only shrink: a function that is split must leave it (the test
 * fails on a stale entry), and a new long function fails the test instead of joining it.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The most lines a function may span, its signature and closing brace included. */
const MAX_LINES = 150;

/** Folders and files of hand-written TypeScript. */
const SCANNED = ["src", "worker", "scripts", "bench", "pulumi", "cli.ts", "mod.ts"];

/**
 * Functions over the limit today, as `file name`, with the issue that splits them. Remove an
 * entry when its function is split; never add one.
 */
const KNOWN_LONG: Record<string, string> = {};

/** One function of the source: where it is, what it is called and how long it is. */
interface FunctionSpan {
  file: string;
  name: string;
  line: number;
  lines: number;
}

async function sourceFiles(path: string): Promise<string[]> {
  const full = join(ROOT, path);
  if (path.endsWith(".ts")) return [full];
  const out: string[] = [];
  for (const entry of await readdir(full, { withFileTypes: true, recursive: true })) {
    const file = join(entry.parentPath, entry.name);
    if (!entry.isFile() || !entry.name.endsWith(".ts") || entry.name.endsWith(".d.ts")) continue;
    if (entry.name.endsWith("_bundle.ts") || file.includes("/node_modules/")) continue;
    out.push(file);
  }
  return out.sort();
}

/** The name a function is known by: its own, its method's or property's, or its variable's. */
function nameOf(node: Deno.lint.Node): string {
  const own = (node as { id?: { name?: string } | null }).id?.name;
  if (own) return own;
  const parent = (node as { parent?: Deno.lint.Node }).parent;
  const key = (parent as { key?: { name?: string } } | undefined)?.key?.name;
  if (key) return key;
  const id = (parent as { id?: { name?: string } } | undefined)?.id?.name;
  if (id) return id;
  if (parent?.type === "CallExpression") {
    const callee = (parent as { callee: { name?: string; property?: { name?: string } } }).callee;
    return `(callback of ${callee.name ?? callee.property?.name ?? "a call"})`;
  }
  return "(anonymous)";
}

/** Every function of one file with its line span. */
function functionsOf(file: string, source: string): FunctionSpan[] {
  const found: FunctionSpan[] = [];
  const lineAt = (offset: number) => source.slice(0, offset).split("\n").length;
  const plugin: Deno.lint.Plugin = {
    name: "function-length",
    rules: {
      span: {
        create() {
          const record = (node: Deno.lint.Node): void => {
            const [start, end] = node.range;
            const line = lineAt(start);
            found.push({
              file: relative(ROOT, file),
              name: nameOf(node),
              line,
              lines: lineAt(end) - line + 1,
            });
          };
          return {
            FunctionDeclaration: record,
            FunctionExpression: record,
            ArrowFunctionExpression: record,
          };
        },
      },
    },
  };
  Deno.lint.runPlugin(plugin, file, source);
  return found;
}

const FUNCTIONS: FunctionSpan[] = [];
for (const path of SCANNED) {
  for (const file of await sourceFiles(path)) {
    FUNCTIONS.push(...functionsOf(file, await readFile(file, "utf8")));
  }
}
const LONG = FUNCTIONS.filter((f) => f.lines > MAX_LINES);

describe(`functions of at most ${MAX_LINES} lines`, () => {
  it("finds the functions (the parse works)", () => {
    assert.ok(FUNCTIONS.length > 1000, `only ${FUNCTIONS.length} functions found`);
    assert.ok(FUNCTIONS.some((f) => f.name === "renderComposition"));
  });

  it(`no function outside the known list is over ${MAX_LINES} lines`, () => {
    const fresh = LONG.filter((f) => !(`${f.file} ${f.name}` in KNOWN_LONG))
      .map((f) => `${f.file}:${f.line} ${f.name}: ${f.lines} lines`);
    assert.deepEqual(fresh, [], "split these into functions with one job each");
  });

  it("every function of the known list is still over the limit (the list only shrinks)", () => {
    const long = new Set(LONG.map((f) => `${f.file} ${f.name}`));
    const stale = Object.keys(KNOWN_LONG).filter((key) => !long.has(key));
    assert.deepEqual(stale, [], "these were split: remove them from KNOWN_LONG");
  });
});
