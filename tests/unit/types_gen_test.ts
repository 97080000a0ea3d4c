/**
 * Typed variables for code, the pure part: src/composition/types_gen.ts derives the type
 * name, the TypeScript source and the JSON Schema (run through ajv, draft 2020-12, with
 * good and bad values) from the declarations. `vid types` and the real `deno check` of the
 * generated source are in tests/integration/types_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
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
