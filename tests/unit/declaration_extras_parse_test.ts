/**
 * Declaration extras without a render: min/max/step on numbers, description and group on
 * any type, image references, the checks of values against them, and what `vid types`
 * generates from them (TypeScript doc comments, a JSON Schema that strict ajv compiles).
 * The CLI and a render with an image variable are in
 * tests/integration/declaration_extras_test.ts.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { isCssColor } from "../../src/composition/color.ts";
import { isImageReference, parseDeclarations } from "../../src/composition/declarations.ts";
import { StrictVariablesError } from "../../src/composition/errors.ts";
import { variablesJsonSchema, variablesTypeSource } from "../../src/composition/types_gen.ts";
import { checkOverrides, mergeVariables } from "../../src/composition/variables.ts";
import { prepareComposition } from "../../src/render/session.ts";
import { ENTRIES } from "../fixtures/declaration_extras.ts";
import { compositionHtml, makeProject } from "../helpers.ts";

function parse(entries: unknown[]) {
  return parseDeclarations(JSON.stringify(entries), isCssColor);
}

describe("declaration extras: parsing", () => {
  it("keeps min/max/step on numbers and description/group on any type", () => {
    const { declarations, dropped } = parse(ENTRIES);
    assert.deepEqual(dropped, []);
    assert.deepEqual(declarations[0], {
      id: "count",
      type: "number",
      label: "Count",
      default: 3,
      min: 0,
      max: 10,
      step: 1,
      description: "How many dots",
      group: "Layout",
    });
    assert.deepEqual(declarations[2], {
      id: "logo",
      type: "image",
      label: "Logo",
      default: "img/logo.png",
      group: "Brand",
    });
    assert.equal(declarations[3].description, "Headline");
  });

  it("drops a declaration whose extras are invalid, with the reason", () => {
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ id: "a", type: "number", min: 5, max: 1 }, /"min" 5 is greater than "max" 1/],
      [{ id: "a", type: "number", step: 0 }, /"step" must be greater than 0, got 0/],
      [{ id: "a", type: "number", step: -1 }, /"step" must be greater than 0/],
      [{ id: "a", type: "number", min: "0" }, /"min" must be a finite number, got "0"/],
      [{ id: "a", type: "string", max: 3 }, /"max" applies to number variables only, not string/],
      [{ id: "a", type: "string", description: 5 }, /"description" must be a string, got 5/],
      [{ id: "a", type: "string", group: ["x"] }, /"group" must be a string/],
      [
        { id: "a", type: "number", min: 0, max: 10, default: 11 },
        /default 11 is not a number from 0 to 10/,
      ],
      [
        { id: "a", type: "image", default: "/etc/passwd" },
        /default "\/etc\/passwd" is not a project file path/,
      ],
      [
        { id: "a", type: "image", default: "data:image/png;base64,AAAA" },
        /is not a project file path/,
      ],
      [{ id: "a", type: "image", default: 5 }, /is not a project file path/],
    ];
    for (const [entry, reason] of cases) {
      const { declarations, dropped } = parse([entry]);
      assert.deepEqual(declarations, [], JSON.stringify(entry));
      assert.equal(dropped.length, 1);
      assert.match(dropped[0].reason, reason, JSON.stringify(entry));
    }
  });

  it("image references: empty, http(s) URLs and paths inside the project", () => {
    for (const ok of ["", "logo.png", "img/logo.png", "./img/a b.png", "https://x.test/a.png"]) {
      assert.equal(isImageReference(ok), true, ok);
    }
    for (const bad of ["/abs.png", "../up.png", "img/../../up.png", "file:///x.png", "data:,x"]) {
      assert.equal(isImageReference(bad), false, bad);
    }
  });
});

describe("declaration extras: checking values", () => {
  let project: string;
  before(async () => {
    project = await makeProject(compositionHtml("", { id: "extras", variables: ENTRIES }), {
      "img/logo.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
      "img/other.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
    });
  });
  after(async () => {
    await Deno.remove(project, { recursive: true });
  });

  it("a number outside min/max is a problem naming the range", () => {
    const { declarations } = parse(ENTRIES);
    const problems = checkOverrides(declarations, { count: 11, opacity: -1 });
    assert.deepEqual(problems.map((p) => p.message), [
      '"count" (number) expects a number from 0 to 10, got 11',
      '"opacity" (number) expects a number at least 0, got -1',
    ]);
    assert.deepEqual(checkOverrides(declarations, { count: 10, opacity: 0 }), []);
  });

  it("an image path must exist in the project; URLs pass; the default is checked too", () => {
    const { declarations } = parse(ENTRIES);
    assert.deepEqual(
      checkOverrides(declarations, { logo: "img/other.png" }, { projectDir: project }),
      [],
    );
    assert.deepEqual(
      checkOverrides(declarations, { logo: "https://cdn.example.com/l.png" }, {
        projectDir: project,
      }),
      [],
    );
    const missing = checkOverrides(declarations, { logo: "img/nope.png" }, { projectDir: project });
    assert.equal(missing.length, 1);
    assert.equal(missing[0].key, "logo");
    assert.match(missing[0].message, /"img\/nope.png" does not exist in the project/);
    // Without a project on disk only the form is checked.
    assert.deepEqual(checkOverrides(declarations, { logo: "img/nope.png" }), []);
    const badDefault = parse([{ id: "logo", type: "image", default: "img/gone.png" }]).declarations;
    const problems = checkOverrides(badDefault, {}, { projectDir: project });
    assert.match(problems[0].message, /"logo" \(image\) default "img\/gone.png" does not exist/);
    assert.equal(mergeVariables(parse([{ id: "i", type: "image" }]).declarations, {}).i, "");
  });

  it("render's variable step warns, and fails with strict checking, on a missing image", async () => {
    const warnings: string[] = [];
    const prepared = await prepareComposition({
      target: project,
      variables: '{"logo":"img/nope.png","count":20}',
      onWarning: (m) => warnings.push(m),
    });
    assert.equal(prepared.problems.length, 2);
    assert.ok(warnings.some((w) => /"logo" \(image\)/.test(w)), warnings.join("\n"));
    await assert.rejects(
      prepareComposition({
        target: project,
        values: { logo: "img/nope.png" },
        strictVariables: true,
      }),
      StrictVariablesError,
    );
  });
});

describe("declaration extras: vid types", () => {
  const { declarations } = parse(ENTRIES);

  it("TypeScript: image is a string; descriptions, ranges and groups are doc comments", () => {
    const source = variablesTypeSource(declarations, { compositionId: "extras" });
    assert.match(source, /^ {2}logo\?: string;$/m);
    assert.match(
      source,
      /\* How many dots\n {3}\* From 0 to 10 in steps of 1\.\n {3}\* Group: Layout\./,
    );
    assert.match(
      source,
      /\* A project file path \(such as "img\/logo.png"\) or an http\(s\) URL\./,
    );
  });

  it("JSON Schema: minimum/maximum enforced, description kept, strict ajv compiles it", () => {
    const schema = variablesJsonSchema(declarations, { compositionId: "extras" });
    const properties = schema.properties as Record<string, Record<string, unknown>>;
    assert.equal(properties.count.minimum, 0);
    assert.equal(properties.count.maximum, 10);
    assert.equal(properties.count.description, "How many dots");
    assert.equal(properties.logo.type, "string");
    const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
    assert.equal(validate({ count: 10, logo: "img/logo.png" }), true);
    assert.equal(validate({ count: 11 }), false);
  });
});
