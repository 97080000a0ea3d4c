/**
 * The static part's reading of variable reads (`src/check/variable_reads.ts`): the forms of
 * a script read it sees and where, what it leaves alone (the object's own methods, keys an
 * override supplies, custom properties the project defines or that have a fallback), and
 * how a read of a dropped declaration is named. Also: a misspelt attribute is found on an
 * element that carries no other timing attribute.
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readReferences } from "../../src/check/references.ts";
import { attributeTypo } from "../../src/check/static.ts";
import { scriptReads, variableReadProblems } from "../../src/check/variable_reads.ts";

const at = { line: 1, column: 1 };

function reads(text: string): string[] {
  return scriptReads({ file: "a.js", text, module: false, start: at })
    .map((r) => `${r.id} ${r.line}:${r.column}`);
}

describe("variable reads", () => {
  it("sees direct, aliased, bracketed and destructured reads, comments aside", () => {
    assert.deepEqual(reads("x = __vid.getVariables().title;"), ["title 1:26"]);
    assert.deepEqual(reads('x = window.__hyperframes.getVariables()["sub title"];'), [
      "sub title 1:42",
    ]);
    assert.deepEqual(
      reads("const v = window.__vid.getVariables();\n// v.commented\nv.name; v?.price; w.v.other;"),
      ["name 3:3", "price 3:12"],
    );
    assert.deepEqual(reads("const { a, b: c, d = 1, ...rest } = __vid.getVariables();"), [
      "a 1:9",
      "b 1:12",
      "d 1:18",
    ]);
  });

  it("leaves the object's methods, supplied keys and defined custom properties alone", () => {
    const problems = variableReadProblems({
      declared: ["title"],
      supplied: ["extra"],
      dropped: [{ index: 1, id: "price", reason: 'default "9" is not a finite number' }],
      scripts: [{
        file: "a.js",
        module: false,
        start: at,
        text: "const v = __vid.getVariables(); v.hasOwnProperty('x'); v.extra; v.price;" +
          ' el.style.setProperty("--set", "1");',
      }],
      bindings: [],
      css: [{
        file: "a.css",
        start: at,
        text: ":root { --own: 1 } a { color: var(--own); b: var(--set); c: var(--x, red); " +
          "d: var(--titel) }",
      }],
      htmlLines: [],
      entry: "index.html",
    });
    assert.deepEqual(problems.map((p) => p.message), [
      '`price` is read at a.js:1:67 but its declaration is dropped (declaration 1: default "9" ' +
      "is not a finite number); fix the declaration",
      "`titel` is read at a.css:1:83 (var()) but not declared; did you mean `title`? " +
      "declared: title",
    ]);
    assert.ok(problems.every((p) => p.severity === "error" && p.kind === "undeclared-read"));
  });

  it("finds a misspelt attribute on an element with no other timing attribute", () => {
    const refs = readReferences(
      '<div data-composition-id="x"><div class="clip" data-strat="1" data-duraton="2"></div></div>',
    );
    const found = refs.data.flatMap((e) => e.attributes.map((a) => attributeTypo(a.name)))
      .filter((a) => a !== undefined);
    assert.deepEqual(found, ["data-start", "data-duration"]);
    assert.equal(refs.timed.filter((t) => t.role === "clip").length, 0, "not a clip");
  });
});
