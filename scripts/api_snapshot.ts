/**
 * The SDK's public surface as text: every name each entry point (render.ts, lambda.ts,
 * cloud.ts, server.ts) exports, with its kind and signature, printed from `deno doc --json`.
 * tests/integration/api_snapshot_test.ts compares it with the checked-in
 * `tests/fixtures/api/public_api.txt`, so a change to what users can import (a new name, a
 * removed one, a changed parameter or field) shows in review as a diff of that file and is
 * made on purpose. JSDoc text and source positions are left out: rewording a comment or
 * moving a function is not an API change.
 *
 * ```sh
 * deno run -A scripts/api_snapshot.ts            # print the surface
 * deno run -A scripts/api_snapshot.ts --update   # rewrite the snapshot file after a deliberate change
 * ```
 *
 * @module
 */

import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** The entry points whose exports are public, in the order the snapshot lists them. */
export const API_ENTRIES: readonly string[] = [
  "render.ts",
  "lambda.ts",
  "cloud.ts",
  "server.ts",
  "player.ts",
];

/** Where the checked-in surface lives, relative to the repository root. */
export const API_SNAPSHOT_FILE = "tests/fixtures/api/public_api.txt";

/** One node of `deno doc --json`'s tree: the printer reads only `kind`, `value` and names. */
// deno-lint-ignore no-explicit-any -- deno doc's JSON schema is large and unversioned here
type Node = any;

/** `deno doc --json`'s answer (format version 2). */
interface DocJson {
  version: number;
  nodes: Record<string, { symbols: { name: string; declarations: Node[] }[] }>;
}

/**
 * The public surface of the entries as text, one block per entry, names sorted.
 *
 * @example
 * ```ts no_run
 * const text = await apiSnapshot();
 * console.log(text.split("\n").filter((line) => line.startsWith("function ")).length);
 * ```
 */
export async function apiSnapshot(entries: readonly string[] = API_ENTRIES): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--json", ...entries],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(`deno doc --json failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
  return formatSurface(JSON.parse(new TextDecoder().decode(out.stdout)) as DocJson, entries);
}

/**
 * Prints `deno doc --json`'s answer for `entries` as the snapshot's text.
 *
 * @example
 * ```ts
 * const text = formatSurface({ version: 2, nodes: {} }, []);
 * console.log(text); // "# 0 names\n"
 * ```
 */
export function formatSurface(doc: DocJson, entries: readonly string[]): string {
  const blocks: string[] = [];
  const names = new Set<string>();
  for (const entry of entries) {
    const node = Object.entries(doc.nodes).find(([url]) => url.endsWith(`/${entry}`))?.[1];
    const lines: string[] = [];
    for (const symbol of node?.symbols ?? []) {
      names.add(symbol.name);
      for (const declaration of symbol.declarations) {
        lines.push(declarationText(symbol.name, declaration));
      }
    }
    lines.sort((a, b) => a.localeCompare(b, "en"));
    blocks.push(`## ${entry} (${node?.symbols.length ?? 0} names)\n\n${lines.join("\n")}\n`);
  }
  return [`# ${names.size} names`, ...blocks].join("\n\n") + (blocks.length ? "" : "\n");
}

function declarationText(name: string, d: Node): string {
  const def = d.def ?? {};
  switch (d.kind) {
    case "function":
      return `function ${name}${typeParams(def.typeParams)}(${params(def.params)}): ${
        type(def.returnType)
      }`;
    case "variable":
      return `const ${name}: ${type(def.tsType)}`;
    case "typeAlias":
      return `type ${name}${typeParams(def.typeParams)} = ${type(def.tsType)}`;
    case "interface":
      return `interface ${name}${typeParams(def.typeParams)}${
        def.extends?.length ? ` extends ${def.extends.map(type).join(", ")}` : ""
      }${members(def)}`;
    case "class":
      return `class ${name}${typeParams(def.typeParams)}${
        def.extends ? ` extends ${def.extends}` : ""
      }${classMembers(def)}`;
    case "reference":
      return `${name}: the same as another entry's ${name}`;
    case "enum":
      return `enum ${name} { ${(def.members ?? []).map((m: Node) => m.name).join(", ")} }`;
    default:
      return `${d.kind} ${name}`;
  }
}

function typeParams(list: Node[] | undefined): string {
  if (!list?.length) return "";
  return `<${
    list.map((p) =>
      `${p.name}${p.constraint ? ` extends ${type(p.constraint)}` : ""}${
        p.default ? ` = ${type(p.default)}` : ""
      }`
    ).join(", ")
  }>`;
}

function params(list: Node[] | undefined): string {
  return (list ?? []).map(param).join(", ");
}

function param(p: Node): string {
  switch (p.kind) {
    case "identifier":
      return `${p.name}${p.optional ? "?" : ""}: ${type(p.tsType)}`;
    case "assign":
      return `${param(p.left).replace(/^(\w+):/, "$1?:")}`;
    case "rest":
      return `...${param(p.arg)}`;
    case "object":
      return `{ ${(p.props ?? []).map((x: Node) => x.key ?? x.name ?? "…").join(", ")} }: ${
        type(p.tsType)
      }`;
    default:
      return `${p.kind}: ${type(p.tsType)}`;
  }
}

function members(def: Node): string {
  return memberLines(def).map((line) => `\n    ${line}`).join("");
}

function memberLines(def: Node): string[] {
  return [
    ...(def.callSignatures ?? []).map((c: Node) =>
      `${typeParams(c.typeParams)}(${params(c.params)}): ${type(c.tsType)}`
    ),
    ...(def.indexSignatures ?? []).map((i: Node) =>
      `${i.readonly ? "readonly " : ""}[${params(i.params)}]: ${type(i.tsType)}`
    ),
    ...(def.properties ?? []).map((p: Node) =>
      `${p.readonly ? "readonly " : ""}${p.name}${p.optional ? "?" : ""}: ${type(p.tsType)}`
    ),
    ...(def.methods ?? []).map((m: Node) =>
      `${m.name}${m.optional ? "?" : ""}${typeParams(m.typeParams)}(${params(m.params)}): ${
        type(m.returnType)
      }`
    ),
  ];
}

function classMembers(def: Node): string {
  const lines = [
    ...(def.constructors ?? []).map((c: Node) => `constructor(${params(c.params)})`),
    ...(def.properties ?? []).filter((p: Node) => p.accessibility !== "private").map((
      p: Node,
    ) =>
      `${p.isStatic ? "static " : ""}${p.readonly ? "readonly " : ""}${p.name}${
        p.optional ? "?" : ""
      }: ${type(p.tsType)}`
    ),
    ...(def.methods ?? []).filter((m: Node) => m.accessibility !== "private").map((m: Node) =>
      `${m.isStatic ? "static " : ""}${m.kind === "method" ? "" : `${m.kind} `}${m.name}${
        typeParams(m.functionDef?.typeParams)
      }(${params(m.functionDef?.params)}): ${type(m.functionDef?.returnType)}`
    ),
  ];
  return lines.map((line) => `\n    ${line}`).join("");
}

/** TypeScript's text of one type node; an unknown kind prints as its `repr`. */
function type(t: Node): string {
  if (!t) return "unknown";
  const v = t.value;
  switch (t.kind) {
    case "keyword":
      return v;
    case "typeRef":
      return `${v.typeName}${v.typeParams?.length ? `<${v.typeParams.map(type).join(", ")}>` : ""}`;
    case "union":
      return v.map(type).join(" | ");
    case "intersection":
      return v.map(type).join(" & ");
    case "array":
      return `${/[ |&]/.test(type(v)) ? `(${type(v)})` : type(v)}[]`;
    case "tuple":
      return `[${v.map(type).join(", ")}]`;
    case "literal":
      if (v.kind === "string") return JSON.stringify(v.string);
      if (v.kind === "template") return t.repr;
      return String(v.number ?? v.boolean ?? v.bigInt ?? t.repr);
    case "typeLiteral":
      return memberLines(v).length ? `{ ${memberLines(v).join("; ")} }` : "{}";
    case "fnOrConstructor":
      return `${v.constructor ? "new " : ""}${typeParams(v.typeParams)}(${params(v.params)}) => ${
        type(v.tsType)
      }`;
    case "indexedAccess":
      return `${type(v.objType)}[${type(v.indexType)}]`;
    case "typeOperator":
      return `${v.operator} ${type(v.tsType)}`;
    case "parenthesized":
      return `(${type(v)})`;
    case "typeQuery":
      return `typeof ${v}`;
    case "optional":
      return `${type(v)}?`;
    case "rest":
      return `...${type(v)}`;
    case "conditional":
      return `${type(v.checkType)} extends ${type(v.extendsType)} ? ${type(v.trueType)} : ${
        type(v.falseType)
      }`;
    case "mapped":
      return `{ [${v.typeParam?.name} in ${type(v.typeParam?.constraint)}]${
        v.optional ? "?" : ""
      }: ${type(v.tsType)} }`;
    case "infer":
      return `infer ${v.typeParam?.name}`;
    case "typePredicate":
      return `${v.asserts ? "asserts " : ""}${v.param?.name ?? "this"} is ${type(v.type)}`;
    case "importType":
      return `import(${JSON.stringify(v.specifier)})${v.qualifier ? `.${v.qualifier}` : ""}`;
    default:
      return t.repr ?? t.kind;
  }
}

if (import.meta.main) {
  const text = await apiSnapshot();
  if (Deno.args.includes("--update")) {
    await Deno.mkdir(new URL("./", new URL(`../${API_SNAPSHOT_FILE}`, import.meta.url)), {
      recursive: true,
    });
    await Deno.writeTextFile(new URL(`../${API_SNAPSHOT_FILE}`, import.meta.url), text);
    console.log(`wrote ${API_SNAPSHOT_FILE}: ${text.split("\n", 1)[0].slice(2)}`);
  } else {
    console.log(text);
  }
}
