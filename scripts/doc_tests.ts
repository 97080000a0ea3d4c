/**
 * The runnable `@example` blocks of the library as a few ordinary test files.
 *
 * `deno test --doc` makes every example a module of its own, loaded in a worker of its own:
 * ~355 module graphs (the `no_run` examples of a module with a runnable one are loaded too,
 * then filtered out), each importing the module it documents and everything below it. On
 * the 2-core machine that loading was the whole cost: 148 s for 273 examples that run in
 * milliseconds. Here each runnable example becomes one `Deno.test` of a generated file, as
 * `deno test --doc` would write it: the example's imports become `await import(...)` inside
 * the test (relative specifiers resolved against the documented module), the module's own
 * exports that the example names are bound first (deno does the same implicitly), and the
 * body runs in a block of its own, so a name it declares shadows an export of the same name.
 * Type-only imports are dropped: `deno check --doc` type-checks every example as written, and
 * these files run with `--no-check`. Each test is named as `deno test --doc` names the
 * example (`file:///…/module.ts#<open>-<close + 1>.ts`), so a report reads the same.
 *
 * ```sh
 * deno run -A scripts/test.ts --unit   # runs them with the unit tests
 * ```
 *
 * @module
 */

import { pathToFileURL } from "node:url";

/** One runnable example: its `deno test --doc` name, its module, and its fence lines. */
export interface RunnableExample {
  /** `file:///…/module.ts#<open>-<close + 1>.ts` (1-based fence lines). */
  name: string;
  /** Absolute path of the documented module. */
  file: string;
}

/** A JSDoc line's text without its leading `*` (and the one space after it). */
const JSDOC_PREFIX = /^\s*\*\s?/;
/** An import statement on one line: `import <clause> from "<specifier>";`. */
const IMPORT_LINE = /^import\s+(.+?)\s+from\s+(["'])([^"']+)\2\s*;?\s*$/;
/** A side-effect import: `import "<specifier>";`. */
const BARE_IMPORT = /^import\s+(["'])([^"']+)\1\s*;?\s*$/;
/** Declarations of a module's own runtime exports (types and interfaces have none). */
const EXPORT_DECLARATION =
  /^export\s+(?:declare\s+)?(?:default\s+)?(?:async\s+)?(?:function\*?|const|let|var|class|enum)\s+([A-Za-z_$][\w$]*)/gm;
/** `export { a, b as c }` and `export { a } from "…"` lists. */
const EXPORT_LIST = /^export\s+\{([^}]*)\}/gm;

/** The body of one example: the lines between its fences, without the JSDoc prefix. */
export function exampleBody(source: string, name: string): string {
  const range = /#(\d+)-(\d+)\.ts$/.exec(name);
  if (!range) throw new Error(`not a doc example name: ${name}`);
  const open = Number(range[1]); // 1-based line of the opening fence
  const close = Number(range[2]) - 1; // 1-based line of the closing fence
  return source.split("\n").slice(open, close - 1).map((line) => line.replace(JSDOC_PREFIX, ""))
    .join("\n");
}

/** The runtime names a module exports by its own declarations and export lists. */
export function exportedNames(source: string): Set<string> {
  const names = new Set<string>();
  for (const match of source.matchAll(EXPORT_DECLARATION)) names.add(match[1]);
  for (const match of source.matchAll(EXPORT_LIST)) {
    for (const part of match[1].split(",")) {
      const item = part.trim();
      if (item === "" || item.startsWith("type ")) continue;
      const alias = /\bas\s+([A-Za-z_$][\w$]*)$/.exec(item);
      names.add(alias ? alias[1] : item);
    }
  }
  names.delete("default");
  return names;
}

/**
 * The import clause `default, { a, b as c }` / `* as ns` / `{ type T, a }` as a destructuring
 * of the imported module, or `undefined` for a type-only import.
 */
function bindingOf(clause: string): string | undefined {
  if (clause.startsWith("type ")) return undefined;
  const namespace = /^\*\s+as\s+([\w$]+)$/.exec(clause);
  if (namespace) return namespace[1];
  const parts: string[] = [];
  const braces = /\{([^}]*)\}/.exec(clause);
  const defaultName = clause.replace(/\{[^}]*\}/, "").replace(",", "").trim();
  if (defaultName !== "") parts.push(`default: ${defaultName}`);
  for (const item of braces?.[1].split(",") ?? []) {
    const text = item.trim();
    if (text === "" || text.startsWith("type ")) continue;
    const [imported, local] = text.split(/\s+as\s+/);
    parts.push(local === undefined ? imported : `${imported}: ${local}`);
  }
  return parts.length === 0 ? undefined : `{ ${parts.join(", ")} }`;
}

/** A relative specifier as the documented module's URL resolves it; others as written. */
function resolved(specifier: string, moduleUrl: string): string {
  return specifier.startsWith(".") ? new URL(specifier, moduleUrl).href : specifier;
}

/** The source of one generated test for `example`, given its module's source and exports. */
export function exampleTest(
  example: RunnableExample,
  source: string,
  exports: Set<string>,
): string {
  const moduleUrl = pathToFileURL(example.file).href;
  const imports: string[] = [];
  const body: string[] = [];
  for (const line of exampleBody(source, example.name).split("\n")) {
    const bare = BARE_IMPORT.exec(line);
    const statement = bare ? undefined : IMPORT_LINE.exec(line);
    if (bare) {
      imports.push(`await import(${JSON.stringify(resolved(bare[2], moduleUrl))});`);
    } else if (statement) {
      const binding = bindingOf(statement[1].trim());
      if (binding !== undefined) {
        const specifier = JSON.stringify(resolved(statement[3], moduleUrl));
        imports.push(`const ${binding} = await import(${specifier});`);
      }
    } else {
      body.push(line);
    }
  }
  const text = body.join("\n");
  const named = [...exports].filter((name) =>
    new RegExp(`(?<![\\w$.])${escape(name)}(?![\\w$])`).test(text)
  );
  const own = named.length === 0
    ? ""
    : `const { ${named.join(", ")} } = await import(${JSON.stringify(moduleUrl)});\n`;
  // Three scopes: the module's exports, then the example's imports (which may rebind one),
  // then its body (which may declare one again), each shadowing the one before.
  return `Deno.test(${JSON.stringify(example.name)}, async () => {\n${own}{\n${
    imports.join("\n")
  }\n{\n${text}\n}\n}\n});\n`;
}

function escape(name: string): string {
  return name.replace(/\$/g, "\\$");
}

/**
 * Writes the runnable examples into `count` test files under `folder` (balanced by example
 * count, each module's examples kept together) and returns their paths.
 */
export async function writeDocTests(
  examples: readonly RunnableExample[],
  folder: string,
  count: number,
): Promise<string[]> {
  const byFile = new Map<string, RunnableExample[]>();
  for (const example of examples) {
    byFile.set(example.file, [...byFile.get(example.file) ?? [], example]);
  }
  const groups: string[][] = Array.from({ length: count }, () => []);
  const sizes: number[] = new Array(count).fill(0);
  const modules = [...byFile.entries()].sort((a, b) => b[1].length - a[1].length);
  for (const [file, list] of modules) {
    const source = await Deno.readTextFile(file);
    const exports = exportedNames(source);
    const smallest = sizes.indexOf(Math.min(...sizes));
    for (const example of list) groups[smallest].push(exampleTest(example, source, exports));
    sizes[smallest] += list.length;
  }
  await Deno.remove(folder, { recursive: true }).catch(() => {});
  await Deno.mkdir(folder, { recursive: true });
  const paths: string[] = [];
  for (let i = 0; i < count; i++) {
    if (groups[i].length === 0) continue;
    const path = `${folder}/examples_${i + 1}_test.ts`;
    await Deno.writeTextFile(
      path,
      `// Generated by scripts/doc_tests.ts from the library's @example blocks: do not edit.\n` +
        `// deno-lint-ignore-file\n${groups[i].join("\n")}`,
    );
    paths.push(path);
  }
  return paths;
}
