/**
 * Tests for `parseDeclarations`: the JSON array in `data-composition-variables`. Valid
 * entries are normalised; invalid ones (a type outside the five, such as `object`) are dropped
 * with an index and a reason;
 * input that is not a JSON array throws.
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { isCssColor } from "../../src/composition/color.ts";
import {
  DeclarationsSyntaxError,
  parseDeclarations,
  typeMismatch,
  VARIABLE_TYPES,
} from "../../src/composition/declarations.ts";

function parse(entries: unknown[]) {
  return parseDeclarations(JSON.stringify(entries), isCssColor);
}

/** Parses a single entry and asserts it was dropped; returns the drop record. */
function dropOne(entry: unknown) {
  const { declarations, dropped } = parse([entry]);
  assert.deepEqual(declarations, [], `expected ${JSON.stringify(entry)} to be dropped`);
  assert.equal(dropped.length, 1);
  return dropped[0];
}

describe("parseDeclarations: accepted declarations", () => {
  it("lists exactly the five spec types", () => {
    assert.deepEqual([...VARIABLE_TYPES], ["string", "number", "color", "boolean", "enum"]);
  });

  it("accepts each of the five types with a matching default", () => {
    const { declarations, dropped } = parse([
      { id: "title", type: "string", label: "Title", default: "Hello" },
      { id: "count", type: "number", label: "Count", default: 3.5 },
      { id: "accent", type: "color", label: "Accent", default: "#ff0066" },
      { id: "dark", type: "boolean", label: "Dark mode", default: true },
      { id: "layout", type: "enum", label: "Layout", default: "tall", options: ["wide", "tall"] },
    ]);
    assert.deepEqual(dropped, []);
    assert.deepEqual(declarations, [
      { id: "title", type: "string", label: "Title", default: "Hello" },
      { id: "count", type: "number", label: "Count", default: 3.5 },
      { id: "accent", type: "color", label: "Accent", default: "#ff0066" },
      { id: "dark", type: "boolean", label: "Dark mode", default: true },
      {
        id: "layout",
        type: "enum",
        label: "Layout",
        default: "tall",
        options: [{ value: "wide", label: "wide" }, { value: "tall", label: "tall" }],
      },
    ]);
  });

  it("keeps falsy defaults of the right type", () => {
    const { declarations, dropped } = parse([
      { id: "s", type: "string", default: "" },
      { id: "n", type: "number", default: 0 },
      { id: "b", type: "boolean", default: false },
    ]);
    assert.deepEqual(dropped, []);
    assert.deepEqual(declarations.map((d) => d.default), ["", 0, false]);
  });

  it("uses the id as label when none is given and omits an absent default", () => {
    const { declarations } = parse([{ id: "title", type: "string" }]);
    assert.deepEqual(declarations, [{ id: "title", type: "string", label: "title" }]);
    assert.equal("default" in declarations[0], false);
  });

  it("normalises enum options written as strings and as {value, label}", () => {
    const { declarations, dropped } = parse([{
      id: "layout",
      type: "enum",
      options: ["wide", { value: "tall", label: "Tall (9:16)" }, { value: "square" }],
    }]);
    assert.deepEqual(dropped, []);
    assert.deepEqual(declarations[0].options, [
      { value: "wide", label: "wide" },
      { value: "tall", label: "Tall (9:16)" },
      { value: "square", label: "square" },
    ]);
  });

  it("accepts an enum default given by an option object's value", () => {
    const { declarations } = parse([{
      id: "layout",
      type: "enum",
      default: "tall",
      options: [{ value: "wide", label: "Wide" }, { value: "tall", label: "Tall" }],
    }]);
    assert.equal(declarations[0].default, "tall");
  });

  it("accepts an empty array", () => {
    assert.deepEqual(parseDeclarations("[]", isCssColor), { declarations: [], dropped: [] });
  });
});

describe("parseDeclarations: dropped declarations", () => {
  it("drops type object (outside the five types) with its index, id and a reason naming the type", () => {
    const { declarations, dropped } = parse([
      { id: "title", type: "string", default: "Hi" },
      { id: "data", type: "object", default: {} },
      { id: "n", type: "number", default: 1 },
    ]);
    assert.deepEqual(declarations.map((d) => d.id), ["title", "n"]);
    assert.equal(dropped.length, 1);
    assert.equal(dropped[0].index, 1);
    assert.equal(dropped[0].id, "data");
    assert.match(dropped[0].reason, /unknown type/);
    assert.match(dropped[0].reason, /"object"/);
  });

  it("drops other types outside the five, and a missing type", () => {
    for (const type of ["array", "date", "String", "integer", 5]) {
      assert.match(dropOne({ id: "x", type }).reason, /unknown type/, `type ${type}`);
    }
    assert.match(dropOne({ id: "x" }).reason, /unknown type/);
  });

  it("drops entries without a usable id", () => {
    for (
      const entry of [
        { type: "string" },
        { id: "", type: "string" },
        { id: "  ", type: "string" },
        {
          id: 5,
          type: "number",
        },
      ]
    ) {
      const drop = dropOne(entry);
      assert.match(drop.reason, /missing "id"/, JSON.stringify(entry));
      assert.equal(drop.index, 0);
      assert.equal(drop.id, undefined);
    }
  });

  it("drops entries that are not objects", () => {
    const { declarations, dropped } = parse(["title", 5, null, ["id"], {
      id: "ok",
      type: "string",
    }]);
    assert.deepEqual(declarations.map((d) => d.id), ["ok"]);
    assert.deepEqual(dropped.map((d) => d.index), [0, 1, 2, 3]);
    for (const d of dropped) assert.match(d.reason, /JSON object/);
  });

  it("keeps the first of two declarations with the same id and drops the second", () => {
    const { declarations, dropped } = parse([
      { id: "title", type: "string", default: "first" },
      { id: "other", type: "number" },
      { id: "title", type: "string", default: "second" },
    ]);
    assert.deepEqual(declarations.map((d) => [d.id, d.default]), [["title", "first"], [
      "other",
      undefined,
    ]]);
    assert.equal(dropped.length, 1);
    assert.equal(dropped[0].index, 2);
    assert.equal(dropped[0].id, "title");
    assert.match(dropped[0].reason, /duplicate id "title"/);
  });

  it("drops a default of the wrong type, for each type", () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ id: "s", type: "string", default: 5 }, /default 5 is not a string/],
      [{ id: "s", type: "string", default: null }, /default null is not a string/],
      [{ id: "n", type: "number", default: "5" }, /default "5" is not a finite number/],
      [{ id: "n", type: "number", default: true }, /not a finite number/],
      [{ id: "b", type: "boolean", default: "true" }, /default "true" is not true or false/],
      [{ id: "b", type: "boolean", default: 1 }, /not true or false/],
      [{ id: "c", type: "color", default: "blurple" }, /default "blurple" is not a CSS colour/],
      [{ id: "c", type: "color", default: 0xff0066 }, /not a CSS colour/],
      [
        { id: "e", type: "enum", options: ["a", "b"], default: "c" },
        /default "c" is not one of "a", "b"/,
      ],
      [
        { id: "e", type: "enum", options: [{ value: "a", label: "A" }], default: "A" },
        /not one of "a"/,
      ],
    ];
    for (const [entry, reason] of cases) {
      const drop = dropOne(entry);
      assert.match(drop.reason, reason, JSON.stringify(entry));
      assert.equal(drop.id, entry.id);
    }
  });

  it("drops an enum without options, with empty options or with a bad option", () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ id: "e", type: "enum" }, /non-empty "options"/],
      [{ id: "e", type: "enum", options: [] }, /non-empty "options"/],
      [{ id: "e", type: "enum", options: "a,b" }, /non-empty "options"/],
      [{ id: "e", type: "enum", options: ["a", 5] }, /option 1 must be a string/],
      [{ id: "e", type: "enum", options: [{ label: "No value" }] }, /option 0 must be/],
      [{ id: "e", type: "enum", options: [null] }, /option 0 must be/],
      [{ id: "e", type: "enum", options: ["a", { value: "a", label: "A" }] }, /"a" appears twice/],
    ];
    for (const [entry, reason] of cases) {
      const drop = dropOne(entry);
      assert.match(drop.reason, reason, JSON.stringify(entry));
      assert.equal(drop.id, "e");
    }
  });

  it("reports every dropped entry with its own index", () => {
    const { declarations, dropped } = parse([
      { id: "a", type: "object" },
      { id: "b", type: "string" },
      { type: "string" },
      { id: "b", type: "number" },
      { id: "e", type: "enum", options: [] },
    ]);
    assert.deepEqual(declarations.map((d) => d.id), ["b"]);
    assert.deepEqual(dropped.map((d) => d.index), [0, 2, 3, 4]);
  });

  it("does not let a dropped declaration reserve its id", () => {
    const { declarations, dropped } = parse([
      { id: "x", type: "number", default: "bad" },
      { id: "x", type: "number", default: 2 },
    ]);
    assert.deepEqual(declarations.map((d) => [d.id, d.default]), [["x", 2]]);
    assert.deepEqual(dropped.map((d) => d.index), [0]);
  });
});

describe("parseDeclarations: malformed attribute", () => {
  it("throws DeclarationsSyntaxError naming the attribute on malformed JSON", () => {
    assert.throws(
      () => parseDeclarations('[{"id": "title", "type": "string",}]', isCssColor),
      (error: unknown) => {
        assert.ok(error instanceof DeclarationsSyntaxError);
        assert.equal(error.field, "data-composition-variables");
        assert.match(error.message, /data-composition-variables is not valid JSON/);
        return true;
      },
    );
  });

  it("throws DeclarationsSyntaxError when the JSON is not an array", () => {
    for (const text of ['{"id":"title","type":"string"}', '"title"', "5", "null"]) {
      assert.throws(
        () => parseDeclarations(text, isCssColor),
        (error: unknown) => {
          assert.ok(error instanceof DeclarationsSyntaxError, text);
          assert.match(error.message, /data-composition-variables must be a JSON array/);
          return true;
        },
      );
    }
  });
});

describe("typeMismatch", () => {
  it("returns null for fitting values and the expectation otherwise", () => {
    assert.equal(typeMismatch({ type: "number" }, 1, isCssColor), null);
    assert.equal(typeMismatch({ type: "number" }, Infinity, isCssColor), "a finite number");
    assert.equal(typeMismatch({ type: "number" }, NaN, isCssColor), "a finite number");
    assert.equal(typeMismatch({ type: "color" }, "rgb(1 2 3)", isCssColor), null);
    assert.equal(
      typeMismatch({ type: "enum", options: [{ value: "a", label: "A" }] }, "b", isCssColor),
      'one of "a"',
    );
  });
});
