/**
 * Typed variables for code: `vid types` and src/composition/types_gen.ts. The generated
 * TypeScript is type-checked by the real `deno check` against consumers of the SDK (one
 * that must pass, one whose wrong variables must fail naming them), the JSON Schema is
 * run through ajv (draft 2020-12) with good and bad values, and the CLI is run as a
 * subprocess on examples/hello and on bad input.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { VariableDeclaration } from "../../src/composition/declarations.ts";
import {
  checkTypeName,
  JSON_SCHEMA_DIALECT,
  TypeNameError,
  typeNameFor,
  variablesJsonSchema,
  variablesTypeSource,
} from "../../src/composition/types_gen.ts";
import { compositionHtml, makeProject, ROOT, runVid } from "../helpers.ts";

const HELLO = `${ROOT}examples/hello`;

/** One declaration of each type, an enum with labels, a label needing escapes, no defaults. */
const DECLARATIONS: VariableDeclaration[] = [
  { id: "title", type: "string", label: "Title */ with a comment end", default: "Hi" },
  { id: "accent", type: "color", label: "Accent", default: "#ff0066" },
  { id: "count", type: "number", label: "Count" },
  { id: "show", type: "boolean", label: "show" },
  {
    id: "layout",
    type: "enum",
    label: "Layout",
    options: [{ value: "wide", label: "Wide" }, { value: "tall", label: "tall" }],
    default: "tall",
  },
  { id: "data-url", type: "string", label: "Data URL", default: "https://example.com/a.json" },
];

function ajvValidator(schema: Record<string, unknown>) {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  return ajv.compile(schema);
}

/** `deno check` of `files` with the repository's configuration; exit code and output. */
async function denoCheck(files: string[]): Promise<{ code: number; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--config", `${ROOT}deno.json`, ...files],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, output: decoder.decode(out.stdout) + decoder.decode(out.stderr) };
}

describe("types_gen: type names", () => {
  it("derives PascalCase + Variables from data-composition-id", () => {
    assert.equal(typeNameFor("hello"), "HelloVariables");
    assert.equal(typeNameFor("product-launch_v2"), "ProductLaunchV2Variables");
    assert.equal(typeNameFor("3d intro"), "Composition3dIntroVariables");
    assert.equal(typeNameFor("--"), "Variables");
  });

  it("rejects a name that is not a TypeScript identifier, naming the flag", () => {
    assert.doesNotThrow(() => checkTypeName("Hello_$1"));
    for (const bad of ["hello-vars", "1Hello", "", "string", "my type"]) {
      assert.throws(
        () => checkTypeName(bad),
        (e: unknown) =>
          e instanceof TypeNameError && e.field === "--name" &&
          e.message.includes(JSON.stringify(bad)),
        bad,
      );
    }
  });
});

describe("types_gen: TypeScript source", () => {
  const source = variablesTypeSource(DECLARATIONS, { compositionId: "promo-card" });

  it("exports one type alias with every key optional and each type mapped", () => {
    assert.match(source, /^export type PromoCardVariables = \{$/m);
    assert.match(source, /^ {2}title\?: string;$/m);
    assert.match(source, /^ {2}accent\?: string;$/m);
    assert.match(source, /^ {2}count\?: number;$/m);
    assert.match(source, /^ {2}show\?: boolean;$/m);
    assert.match(source, /^ {2}layout\?: "wide" \| "tall";$/m);
    assert.match(source, /^ {2}"data-url"\?: string;$/m);
    assert.equal(source.match(/\?: /g)?.length, DECLARATIONS.length);
  });

  it("carries labels, the colour note, enum labels and defaults (fallbacks when undeclared) as JSDoc", () => {
    assert.match(source, /\* Title \*\\\/ with a comment end/);
    assert.equal(source.match(/\*\//g)?.length, DECLARATIONS.length + 1, "one close per comment");
    assert.match(source, /A CSS colour string/);
    assert.match(source, /Options: "wide" \(Wide\), "tall"\./);
    assert.match(source, /@default "tall"/);
    assert.match(source, /@default 0 \(none declared: the type's fallback\)/);
    assert.match(source, /@default false \(none declared/);
  });

  it("uses the given name, and an empty record type without declarations", () => {
    assert.match(
      variablesTypeSource(DECLARATIONS, { compositionId: "x", typeName: "Promo" }),
      /export type Promo = \{/,
    );
    assert.match(
      variablesTypeSource([], { compositionId: "empty" }),
      /export type EmptyVariables = Record<string, never>;/,
    );
    assert.throws(
      () => variablesTypeSource(DECLARATIONS, { compositionId: "x", typeName: "a-b" }),
      TypeNameError,
    );
  });
});

describe("types_gen: JSON Schema (ajv, draft 2020-12)", () => {
  const schema = variablesJsonSchema(DECLARATIONS, { compositionId: "promo-card" });
  const validate = ajvValidator(schema);

  it("is a draft 2020-12 object schema titled with the type name, no key required", () => {
    assert.equal(schema.$schema, JSON_SCHEMA_DIALECT);
    assert.equal(schema.title, "PromoCardVariables");
    assert.equal(schema.type, "object");
    assert.equal(schema.required, undefined);
    assert.equal(schema.additionalProperties, false);
    const properties = schema.properties as Record<string, Record<string, unknown>>;
    assert.deepEqual(properties.layout.enum, ["wide", "tall"]);
    assert.equal(properties.count.default, 0);
    assert.equal(properties.accent.default, "#ff0066");
  });

  it("accepts good values, including the empty object", () => {
    for (
      const good of [
        {},
        { title: "Launch", accent: "#000", count: 2.5, show: true, layout: "wide" },
        { "data-url": "https://cdn.example.com/x.json" },
      ]
    ) {
      assert.equal(validate(good), true, JSON.stringify(validate.errors));
    }
  });

  it("rejects a wrong enum value, a wrong type and an undeclared key, naming each", () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{ layout: "square" }, "/layout", "enum"],
      [{ count: "5" }, "/count", "type"],
      [{ show: "yes" }, "/show", "type"],
      [{ titel: "typo" }, "", "additionalProperties"],
    ];
    for (const [value, path, keyword] of cases) {
      assert.equal(validate(value), false, JSON.stringify(value));
      const error = validate.errors?.find((e) => e.keyword === keyword);
      assert.ok(error, `${JSON.stringify(value)}: ${JSON.stringify(validate.errors)}`);
      assert.equal(error.instancePath, path);
      if (keyword === "additionalProperties") {
        assert.equal(error.params.additionalProperty, "titel");
      }
    }
  });
});

describe("vid types (CLI)", () => {
  let dir: string;
  let bad: string;

  before(async () => {
    await Deno.mkdir(`${ROOT}.test-results`, { recursive: true });
    dir = await Deno.makeTempDir({ dir: `${ROOT}.test-results`, prefix: "types-" });
    bad = await makeProject(compositionHtml("", {
      id: "with-dropped",
      variables: [
        { id: "title", type: "string", default: "x" },
        { id: "data", type: "object" },
      ],
    }));
  });

  after(async () => {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(bad, { recursive: true });
  });

  it("prints the type of examples/hello on stdout, notes on stderr", async () => {
    const result = await runVid(["types", HELLO]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^\/\/ Generated by `vid types`/);
    assert.match(result.stdout, /export type HelloVariables = \{/);
    assert.match(result.stdout, /layout\?: "center" \| "left";/);
    assert.equal(result.stderr, "");
  });

  it("examples/hello round-trips: every declared variable and default is in the type and schema", async () => {
    const info = await runVid(["info", HELLO, "--json"]);
    assert.equal(info.code, 0, info.stderr);
    const declared = JSON.parse(info.stdout).variables as VariableDeclaration[];
    assert.ok(declared.length >= 5);
    const ts = `${dir}/hello.variables.ts`;
    const schemaFile = `${dir}/hello.schema.json`;
    const result = await runVid(["types", HELLO, "-o", ts, "--json-schema", schemaFile]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /wrote HelloVariables \(\d+ variables\) to .*hello\.variables\.ts/);
    const source = await Deno.readTextFile(ts);
    const schema = JSON.parse(await Deno.readTextFile(schemaFile));
    const validate = ajvValidator(schema);
    const defaults: Record<string, unknown> = {};
    for (const d of declared) {
      assert.match(source, new RegExp(`^  ${d.id}\\?: `, "m"), d.id);
      assert.equal(schema.properties[d.id].default, d.default, d.id);
      defaults[d.id] = d.default;
    }
    assert.deepEqual(Object.keys(schema.properties), declared.map((d) => d.id));
    assert.equal(validate(defaults), true, JSON.stringify(validate.errors));
    assert.equal(validate({ layout: "diagonal" }), false);
  });

  it("--json carries the source and the schema", async () => {
    const result = await runVid(["types", HELLO, "--json", "--name", "Hello"]);
    assert.equal(result.code, 0, result.stderr);
    const body = JSON.parse(result.stdout);
    assert.equal(body.ok, true);
    assert.equal(body.typeName, "Hello");
    assert.equal(body.compositionId, "hello");
    assert.equal(body.output, null);
    assert.match(body.typescript, /export type Hello = \{/);
    assert.equal(body.jsonSchema.title, "Hello");
  });

  it("warns that a dropped declaration is not in the type", async () => {
    const result = await runVid(["types", bad]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /declaration 1 \("data"\) dropped: .*not in the generated type/);
    assert.match(result.stdout, /title\?: string;/);
    assert.doesNotMatch(result.stdout, /data\?/);
  });

  it("a bad --name exits 2 naming the flag and the value; nothing is written", async () => {
    const out = `${dir}/bad-name.ts`;
    const result = await runVid(["types", HELLO, "--name", "hello-vars", "-o", out]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--name "hello-vars" is not a usable TypeScript type name/);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
  });

  it("the same file for --output and --json-schema exits 2 naming --json-schema", async () => {
    const out = `${dir}/same.ts`;
    const result = await runVid(["types", HELLO, "-o", out, "--json-schema", out, "--json"]);
    assert.equal(result.code, 2, result.stderr);
    const body = JSON.parse(result.stdout);
    assert.equal(body.ok, false);
    assert.equal(body.error.field, "--json-schema");
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
  });

  it("a missing composition exits 1 and writes no file", async () => {
    const out = `${dir}/missing.ts`;
    const result = await runVid(["types", `${dir}/no-such-project`, "-o", out]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /^error: /m);
    await assert.rejects(Deno.stat(out), Deno.errors.NotFound);
    const leftovers = [...Deno.readDirSync(dir)].filter((e) => e.name.includes("partial"));
    assert.deepEqual(leftovers, []);
  });

  it("an unwritable --output exits 2 naming the flag, and leaves no partial file", async () => {
    const blocker = `${dir}/blocker`;
    await Deno.writeTextFile(blocker, "a file, not a folder");
    const result = await runVid(["types", HELLO, "-o", `${blocker}/types.ts`]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--output .*blocker\/types\.ts: cannot write it/);
    assert.equal(await Deno.readTextFile(blocker), "a file, not a folder");
    const leftovers = [...Deno.readDirSync(dir)].filter((e) => e.name.includes("partial"));
    assert.deepEqual(leftovers, []);
  });
});

describe("generated types with the SDK (real deno check)", () => {
  let dir: string;

  before(async () => {
    await Deno.mkdir(`${ROOT}.test-results`, { recursive: true });
    dir = await Deno.makeTempDir({ dir: `${ROOT}.test-results`, prefix: "types-sdk-" });
    const result = await runVid(["types", HELLO, "-o", `${dir}/hello.variables.ts`]);
    assert.equal(result.code, 0, result.stderr);
  });

  after(async () => {
    await Deno.remove(dir, { recursive: true });
  });

  it("a consumer using the generated type correctly type-checks; a wrong one fails naming each variable", async () => {
    const header = [
      `import { type BatchEntry, type RenderConfig, renderBatch, renderComposition, renderToLambda, type SiteHandle } from "../../mod.ts";`,
      `import type { HelloVariables } from "./hello.variables.ts";`,
      `declare const siteHandle: SiteHandle;`,
      `const target = { siteHandle, bucketName: "b", stateMachineArn: "arn:aws:states:x" };`,
    ];
    const good = [
      ...header,
      `export const config: RenderConfig<HelloVariables> = { fps: 30, variables: { layout: "left", count: 5 } };`,
      `export const a = renderToLambda<HelloVariables>({ ...target, config: { variables: { title: "Hi", accent: "#fff", showSubtitle: false, layout: "center" } } });`,
      `export const b = renderToLambda<HelloVariables>({ ...target, config: {} });`,
      `export const c = renderBatch<HelloVariables>({ ...target, batchFile: "b.jsonl", baseConfig: { variables: { layout: "left" } } });`,
      `export const d = () => renderComposition<HelloVariables>({ target: "examples/hello", values: { count: 2 } });`,
      `export const e = renderToLambda({ ...target, config: { variables: { anything: "goes untyped" } } });`,
      `export const entries: BatchEntry<HelloVariables>[] = [{ outputKey: "a.mp4", variables: { title: "Ada", layout: "left" } }];`,
    ];
    // One wrong variable per line, so each error can be matched to its line.
    const wrong: [string, RegExp][] = [
      [
        `renderToLambda<HelloVariables>({ ...target, config: { variables: { layout: "diagonal" } } });`,
        /"diagonal"/,
      ],
      [
        `renderToLambda<HelloVariables>({ ...target, config: { variables: { count: "5" } } });`,
        /Type 'string' is not assignable to type 'number( \| undefined)?'/,
      ],
      [
        `renderToLambda<HelloVariables>({ ...target, config: { variables: { titel: "typo" } } });`,
        /'titel' does not exist in type 'HelloVariables'/,
      ],
      [
        `renderBatch<HelloVariables>({ ...target, batchFile: "b.jsonl", baseConfig: { variables: { showSubtitle: "yes" } } });`,
        /Type 'string' is not assignable to type 'boolean( \| undefined)?'/,
      ],
      [
        `[{ outputKey: "b.mp4", variables: { layout: "up" } }] satisfies BatchEntry<HelloVariables>[];`,
        /"up"/,
      ],
      [
        `() => renderComposition<HelloVariables>({ values: { layout: "right" } });`,
        /"right"/,
      ],
      [
        `({ variables: { accent: 255 } }) satisfies RenderConfig<HelloVariables>;`,
        /Type 'number' is not assignable to type 'string( \| undefined)?'/,
      ],
    ];
    const bad = [...header, ...wrong.map(([line], i) => `export const w${i} = ${line}`)];
    await Deno.writeTextFile(`${dir}/good.ts`, good.join("\n") + "\n");
    await Deno.writeTextFile(`${dir}/bad.ts`, bad.join("\n") + "\n");

    const ok = await denoCheck([`${dir}/good.ts`]);
    assert.equal(ok.code, 0, ok.output);

    const failed = await denoCheck([`${dir}/bad.ts`]);
    assert.notEqual(failed.code, 0, failed.output);
    // Each error names its file position; every wrong line must have its own error.
    const errors = failed.output.split(/\n(?=TS\d+ \[ERROR\])/).filter((e) => /^TS\d+/.test(e));
    for (const [i, [line, message]] of wrong.entries()) {
      const lineNo = header.length + i + 1;
      const error = errors.find((e) => e.includes(`bad.ts:${lineNo}:`));
      assert.ok(error, `no error on line ${lineNo} (${line}):\n${failed.output}`);
      assert.match(error, message, error);
    }
    assert.equal(errors.length, wrong.length, failed.output);
  });
});
