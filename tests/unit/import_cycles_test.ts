/// <reference lib="deno.unstable" />
/**
 * No import cycle inside `src/`: each folder is a room a reader can understand from the rooms
 * below it, and a cycle ties two modules (or two rooms) into one that can only be read, tested
 * and moved together. The imports are parsed by Deno's own TypeScript parser (a lint plugin run
 * through `Deno.lint.runPlugin`): static imports and re-exports, `import type` too (a type-only
 * cycle ties the code just the same), dynamic `import("…")` and `import("…").Type`. The test
 * fails naming each strongly connected component of the graph (Tarjan's algorithm) with one
 * cycle through it, so the fix (move the shared piece down, or invert the dependency) is clear.
 *
 * The same graph holds the layers of ARCHITECTURE.md ({@linkcode LAYERS}): a folder of `src/`
 * imports only from its own layer and the layers below it.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { dirname, join, normalize, relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The folder whose modules may not import each other in a circle. */
const SCANNED = "src";

/**
 * The layers of `src/`, top first, as ARCHITECTURE.md draws them: each folder may import
 * from its own layer and those below. The surfaces share the top layer; `src/errors.ts`
 * (the error tree) is below them all.
 */
const LAYERS: readonly (readonly string[])[] = [
  ["cli", "server", "preview", "player", "lambda", "cloud"],
  ["check"],
  ["batch"],
  ["render"],
  ["request"],
  ["runtime"],
  ["composition", "project"],
  ["init"],
  ["net", "webhooks", "aws"],
  ["util", "errors.ts"],
];

/** The layer of a module of `src/` (0 is the top), or undefined for a folder not drawn. */
function layerOf(file: string): number | undefined {
  const folder = file.split("/")[1];
  const index = LAYERS.findIndex((layer) => layer.includes(folder));
  return index === -1 ? undefined : index;
}

/** One import of a module: the module it names and whether only types cross it. */
interface ImportEdge {
  to: string;
  typeOnly: boolean;
}

/** The `.ts` files under `src/`, as paths relative to the repository. */
async function sourceFiles(): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(join(ROOT, SCANNED), { withFileTypes: true, recursive: true });
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith(".ts") || entry.name.endsWith(".d.ts")) continue;
    const file = join(entry.parentPath, entry.name);
    if (file.includes("/node_modules/")) continue;
    out.push(relative(ROOT, file));
  }
  return out.sort();
}

/** The relative imports of one module, resolved to repository paths. */
function importsOf(file: string, source: string): ImportEdge[] {
  const found: ImportEdge[] = [];
  const add = (specifier: unknown, typeOnly: boolean): void => {
    if (typeof specifier !== "string" || !specifier.startsWith(".")) return;
    found.push({ to: normalize(join(dirname(file), specifier)), typeOnly });
  };
  const plugin: Deno.lint.Plugin = {
    name: "import-cycles",
    rules: {
      imports: {
        create() {
          return {
            ImportDeclaration(node): void {
              const specifiers = node.specifiers;
              const allTypes = specifiers.length > 0 &&
                specifiers.every((s) => s.type === "ImportSpecifier" && s.importKind === "type");
              add(node.source.value, node.importKind === "type" || allTypes);
            },
            ExportNamedDeclaration(node): void {
              if (node.source) add(node.source.value, node.exportKind === "type");
            },
            ExportAllDeclaration(node): void {
              add(node.source.value, node.exportKind === "type");
            },
            ImportExpression(node): void {
              if (node.source.type === "Literal") add(node.source.value, false);
            },
            TSImportType(node): void {
              const argument = node.argument as { literal?: { value?: unknown } };
              add(argument.literal?.value, true);
            },
          };
        },
      },
    },
  };
  Deno.lint.runPlugin(plugin, join(ROOT, file), source);
  return found;
}

/** The strongly connected components of more than one module (or one importing itself). */
function cycles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  let next = 0;
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of graph.get(node) ?? []) {
      if (!graph.has(to)) continue;
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) out.push(component.sort());
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) visit(node);
  return out;
}

/** One cycle through a component, as `a -> b -> a`, for the failure message. */
function cycleThrough(graph: Map<string, string[]>, component: string[]): string {
  const members = new Set(component);
  const start = component[0];
  const previous = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const node = queue.shift()!;
    for (const to of graph.get(node) ?? []) {
      if (!members.has(to)) continue;
      if (to === start) {
        const path = [start];
        for (let at = node; at !== start; at = previous.get(at)!) path.splice(1, 0, at);
        return [...path, start].join(" -> ");
      }
      if (!previous.has(to)) {
        previous.set(to, node);
        queue.push(to);
      }
    }
  }
  return component.join(", ");
}

const EDGES = new Map<string, ImportEdge[]>();
for (const file of await sourceFiles()) {
  EDGES.set(file, importsOf(file, await readFile(join(ROOT, file), "utf8")));
}
const GRAPH = new Map([...EDGES].map(([file, edges]) => [file, edges.map((e) => e.to)]));

describe("no import cycle inside src/, no import up a layer", () => {
  it("parses the imports (the graph is not empty)", () => {
    assert.ok(GRAPH.size > 200, `only ${GRAPH.size} modules found`);
    assert.ok(EDGES.get("src/cli/main.ts")?.some((e) => e.to === "src/cli/shared.ts"));
    // `import type` and `import("…").Type` count too.
    assert.ok(EDGES.get("src/server/context.ts")?.some((e) => e.typeOnly));
  });

  it("reads every kind of import, marking the type-only ones", () => {
    const source = `import type { A } from "./a.ts";
import { type B } from "./b.ts";
import { c, type C } from "../other/c.ts";
export * from "./d.ts";
export type { E } from "./e.ts";
const f = await import("./f.ts");
let g: import("./g.ts").G;
import "jsr:@std/assert";
`;
    assert.deepEqual(importsOf("src/x/m.ts", source), [
      { to: "src/x/a.ts", typeOnly: true },
      { to: "src/x/b.ts", typeOnly: true },
      { to: "src/other/c.ts", typeOnly: false },
      { to: "src/x/d.ts", typeOnly: false },
      { to: "src/x/e.ts", typeOnly: true },
      { to: "src/x/f.ts", typeOnly: false },
      { to: "src/x/g.ts", typeOnly: true },
    ]);
  });

  it("finds a cycle when there is one (the detector works)", () => {
    const graph = new Map([["a", ["b"]], ["b", ["c"]], ["c", ["a", "d"]], ["d", []], ["e", ["e"]]]);
    assert.deepEqual(cycles(graph), [["a", "b", "c"], ["e"]]);
    assert.equal(cycleThrough(graph, ["a", "b", "c"]), "a -> b -> c -> a");
  });

  it("every folder of src/ has a layer", () => {
    const folders = new Set([...GRAPH.keys()].map((file) => file.split("/")[1]));
    assert.deepEqual([...folders].filter((f) => layerOf(`src/${f}`) === undefined), []);
  });

  it("no module imports from a layer above its own (type-only imports included)", () => {
    const upward = [...EDGES].flatMap(([file, edges]) =>
      edges
        .filter((e) => GRAPH.has(e.to) && layerOf(e.to)! < layerOf(file)!)
        .map((e) => `${file} -> ${e.to}`)
    );
    assert.deepEqual(upward, [], "move the shared piece down to the lower layer");
  });

  it("no module of src/ reaches itself through its imports (type-only ones included)", () => {
    const found = cycles(GRAPH).map((c) => `${c.length} modules: ${cycleThrough(GRAPH, c)}`);
    assert.deepEqual(found, [], "break each cycle: move the shared piece down or invert it");
  });
});
