/**
 * Tests for caller overrides: `--variables` / `--variables-file` parsing, precedence
 * (defaults < file < inline), checking against declarations in warn and strict mode,
 * and merging with per-type fallbacks.
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { isCssColor } from "../../src/composition/color.ts";
import { parseComposition } from "../../src/composition/composition.ts";
import { parseDeclarations, type VariableDeclaration } from "../../src/composition/declarations.ts";
import { StrictVariablesError, VariablesInputError } from "../../src/composition/errors.ts";
import {
  checkOverrides,
  editDistance,
  fallbackValue,
  loadOverrides,
  mergeVariables,
  nearestName,
  parseInlineVariables,
  readVariablesFile,
  resolveVariables,
} from "../../src/composition/variables.ts";

/** Declarations as a composition would carry them, parsed through the real parser. */
function declare(entries: unknown[]): VariableDeclaration[] {
  const { declarations, dropped } = parseDeclarations(JSON.stringify(entries), isCssColor);
  assert.deepEqual(dropped, [], "test declarations must all be valid");
  return declarations;
}

const DECLARATIONS = declare([
  { id: "title", type: "string", label: "Title", default: "Hello" },
  { id: "count", type: "number", label: "Count", default: 3 },
  { id: "accent", type: "color", label: "Accent", default: "#ff0066" },
  { id: "dark", type: "boolean", label: "Dark", default: false },
  { id: "layout", type: "enum", label: "Layout", default: "wide", options: ["wide", "tall"] },
]);

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "vid-variables-" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The error names the flag (`--variables`, `--variables-file`) and its SDK option. */
function isInputError(flag: string, ...mentions: (string | RegExp)[]) {
  return (error: unknown) => {
    assert.ok(error instanceof VariablesInputError, `expected VariablesInputError, got ${error}`);
    assert.equal(error.name, "VariablesInputError");
    assert.equal(error.flag, flag);
    assert.equal(error.field, flag === "--variables-file" ? "variablesFile" : "variables");
    for (const m of mentions) {
      if (typeof m === "string") assert.ok(error.message.includes(m), error.message);
      else assert.match(error.message, m);
    }
    return true;
  };
}

describe("parseInlineVariables (--variables)", () => {
  it("parses a JSON object", () => {
    assert.deepEqual(parseInlineVariables('{"title":"Hi","count":2,"dark":true}'), {
      title: "Hi",
      count: 2,
      dark: true,
    });
    assert.deepEqual(parseInlineVariables("{}"), {});
  });

  it("rejects text that is not JSON, naming --variables", () => {
    for (const text of ["{title: 'Hi'}", "", "{", "title=Hi", '{"a":1,}']) {
      assert.throws(
        () => parseInlineVariables(text),
        isInputError("--variables", "--variables", /not valid JSON/),
      );
    }
  });

  it("rejects JSON that is not an object, naming --variables", () => {
    for (const text of ["[1,2]", '"title"', "5", "null", "true"]) {
      assert.throws(
        () => parseInlineVariables(text),
        isInputError("--variables", "--variables", /must be a JSON object/),
      );
    }
  });
});

describe("readVariablesFile (--variables-file)", () => {
  it("reads a JSON file", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "vars.json");
      await Deno.writeTextFile(path, '{"title": "From file", "count": 7}\n');
      assert.deepEqual(await readVariablesFile(path), { title: "From file", count: 7 });
    });
  });

  it("reads JSONC with line and block comments and trailing commas", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "vars.jsonc");
      await Deno.writeTextFile(
        path,
        `// campaign values\n{\n  /* headline */\n  "title": "Launch", // inline\n` +
          `  "tags": "a,b",\n  "count": 2,\n}\n`,
      );
      assert.deepEqual(await readVariablesFile(path), { title: "Launch", tags: "a,b", count: 2 });
    });
  });

  it("accepts a file saved with a byte-order mark", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "bom.json");
      await Deno.writeTextFile(path, '\uFEFF{"title": "BOM"}');
      assert.deepEqual(await readVariablesFile(path), { title: "BOM" });
    });
  });

  it("names the path and the line:column of a syntax error", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "bad.json");
      await Deno.writeTextFile(path, '{\n  "title": "x"\n  "count": 2\n}\n');
      await assert.rejects(
        () => readVariablesFile(path),
        isInputError("--variables-file", "--variables-file", `${path}:3:3`),
      );
    });
  });

  it("reports the column on the first line too", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "bad.json");
      await Deno.writeTextFile(path, '{"title" "x"}');
      await assert.rejects(
        () => readVariablesFile(path),
        isInputError("--variables-file", `${path}:1:10`),
      );
    });
  });

  it("rejects a file that does not hold an object, naming the path", async () => {
    await withTempDir(async (dir) => {
      for (
        const [name, text] of [["array.json", "[1]"], ["string.json", '"x"'], ["empty.json", ""]]
      ) {
        const path = join(dir, name);
        await Deno.writeTextFile(path, text);
        await assert.rejects(() => readVariablesFile(path), isInputError("--variables-file", path));
      }
    });
  });

  it("names the path of a missing file", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "missing.json");
      await assert.rejects(
        () => readVariablesFile(path),
        isInputError("--variables-file", path, /cannot read/),
      );
    });
  });
});

describe("loadOverrides: precedence", () => {
  it("returns an empty object without sources", async () => {
    assert.deepEqual(await loadOverrides({}), {});
  });

  it("lets --variables win over --variables-file key by key", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "vars.json");
      await Deno.writeTextFile(path, '{"title": "file", "count": 1}');
      assert.deepEqual(
        await loadOverrides({ variablesFile: path, variables: '{"count": 2, "dark": true}' }),
        { title: "file", count: 2, dark: true },
      );
      assert.deepEqual(await loadOverrides({ variablesFile: path }), { title: "file", count: 1 });
      assert.deepEqual(await loadOverrides({ variables: '{"count": 2}' }), { count: 2 });
    });
  });

  it("propagates input errors from either source", async () => {
    await assert.rejects(() => loadOverrides({ variables: "nope" }), isInputError("--variables"));
    await assert.rejects(
      () => loadOverrides({ variablesFile: "/definitely/not/here.json" }),
      isInputError("--variables-file"),
    );
  });
});

describe("checkOverrides", () => {
  it("finds no problems for values of the declared types", () => {
    assert.deepEqual(
      checkOverrides(DECLARATIONS, {
        title: "",
        count: -2.5,
        accent: "rgb(0 128 255 / 50%)",
        dark: true,
        layout: "tall",
      }),
      [],
    );
    assert.deepEqual(checkOverrides(DECLARATIONS, {}), []);
  });

  it("reports undeclared keys and wrong types all at once, in key order", () => {
    const problems = checkOverrides(DECLARATIONS, {
      title: 42,
      extra: "x",
      count: "5",
      accent: "blurple",
      dark: "true",
      layout: "square",
      another: 1,
    });
    assert.deepEqual(
      problems.map((p) => [p.key, p.expected, p.given]),
      [
        ["title", "a string", "42"],
        ["extra", "a declared variable", '"x"'],
        ["count", "a finite number", '"5"'],
        ["accent", 'a CSS colour such as "#ff0066"', '"blurple"'],
        ["dark", "true or false", '"true"'],
        ["layout", 'one of "wide", "tall"', '"square"'],
        ["another", "a declared variable", "1"],
      ],
    );
    for (const p of problems) {
      assert.ok(p.message.includes(`"${p.key}"`), p.message);
      if (p.expected !== "a declared variable") {
        assert.ok(p.message.includes(p.expected), p.message);
        assert.ok(p.message.includes(p.given), p.message);
      } else {
        assert.match(p.message, /not declared/);
      }
    }
  });

  it("rejects non-finite numbers, numeric strings and null for a number", () => {
    for (const value of [Infinity, -Infinity, NaN, "5", "", null, true]) {
      const problems = checkOverrides(DECLARATIONS, { count: value });
      assert.equal(problems.length, 1, `count: ${String(value)}`);
      assert.equal(problems[0].expected, "a finite number");
    }
  });

  it("accepts only true and false for a boolean", () => {
    for (const value of ["true", "false", 1, 0, null]) {
      assert.equal(checkOverrides(DECLARATIONS, { dark: value }).length, 1, `dark: ${value}`);
    }
    assert.deepEqual(checkOverrides(DECLARATIONS, { dark: false }), []);
  });

  it("requires a valid CSS colour string for a color", () => {
    for (const value of ["blurple", "#ggg", "rgb(1,2)", "", 0xff0066]) {
      assert.equal(checkOverrides(DECLARATIONS, { accent: value }).length, 1, `accent: ${value}`);
    }
    for (const value of ["#fff", "red", "hsl(330 100% 50%)", "color(display-p3 1 0 0)"]) {
      assert.deepEqual(checkOverrides(DECLARATIONS, { accent: value }), [], `accent: ${value}`);
    }
  });

  it("requires an enum value among the option values, not labels", () => {
    const declarations = declare([{
      id: "layout",
      type: "enum",
      options: [{ value: "wide", label: "Wide" }, "tall"],
    }]);
    assert.deepEqual(checkOverrides(declarations, { layout: "wide" }), []);
    assert.deepEqual(checkOverrides(declarations, { layout: "tall" }), []);
    for (const value of ["Wide", "WIDE", "", 0]) {
      const problems = checkOverrides(declarations, { layout: value });
      assert.equal(problems.length, 1, `layout: ${value}`);
      assert.equal(problems[0].expected, 'one of "wide", "tall"');
    }
  });

  it("rejects structured values for every type (variables are typed primitives)", () => {
    const problems = checkOverrides(DECLARATIONS, {
      title: { a: 1 },
      count: [1],
      accent: { r: 1 },
      dark: [],
      layout: ["wide"],
    });
    assert.deepEqual(problems.map((p) => p.key), ["title", "count", "accent", "dark", "layout"]);
    assert.equal(problems[0].given, '{"a":1}');
  });

  it("names the declared variables when a key is undeclared", () => {
    const [problem] = checkOverrides(DECLARATIONS, { titel: "typo" });
    assert.equal(problem.key, "titel");
    assert.match(problem.message, /title, count, accent, dark, layout/);
    const [none] = checkOverrides([], { x: 1 });
    assert.match(none.message, /declared: none/);
  });

  it("treats a key whose declaration was dropped as undeclared", () => {
    const html = `<div data-composition-id="p" data-width="1920" data-height="1080" ` +
      `data-duration="2" data-composition-variables='[{"id":"title","type":"string"},` +
      `{"id":"data","type":"object","default":{}},{"id":"n","type":"number","default":"1"}]'>` +
      `</div>`;
    const composition = parseComposition(html, "/p/index.html");
    assert.deepEqual(composition.declarations.map((d) => d.id), ["title"]);
    assert.deepEqual(composition.dropped.map((d) => d.id), ["data", "n"]);
    const problems = checkOverrides(composition.declarations, {
      title: "ok",
      data: '{"rows":[]}',
      n: 1,
    });
    assert.deepEqual(problems.map((p) => [p.key, p.expected]), [
      ["data", "a declared variable"],
      ["n", "a declared variable"],
    ]);
  });
});

describe("mergeVariables", () => {
  it("returns the defaults when there are no overrides", () => {
    assert.deepEqual(mergeVariables(DECLARATIONS, {}), {
      title: "Hello",
      count: 3,
      accent: "#ff0066",
      dark: false,
      layout: "wide",
    });
  });

  it("falls back per type when a declaration has no default", () => {
    const declarations = declare([
      { id: "s", type: "string" },
      { id: "n", type: "number" },
      { id: "b", type: "boolean" },
      { id: "c", type: "color" },
      { id: "e", type: "enum", options: [{ value: "first", label: "First" }, "second"] },
    ]);
    assert.deepEqual(mergeVariables(declarations, {}), {
      s: "",
      n: 0,
      b: false,
      c: "#000000",
      e: "first",
    });
    assert.deepEqual(declarations.map(fallbackValue), ["", 0, false, "#000000", "first"]);
  });

  it("keeps a falsy default rather than replacing it with a fallback", () => {
    const declarations = declare([
      { id: "e", type: "enum", options: ["loud", ""], default: "" },
      { id: "b", type: "boolean", default: true },
    ]);
    assert.deepEqual(mergeVariables(declarations, {}), { e: "", b: true });
  });

  it("lets overrides win, including falsy ones, and passes extra keys through", () => {
    assert.deepEqual(
      mergeVariables(DECLARATIONS, { title: "", count: 0, dark: true, extra: "x" }),
      {
        title: "",
        count: 0,
        accent: "#ff0066",
        dark: true,
        layout: "wide",
        extra: "x",
      },
    );
  });

  it("does not modify its inputs", () => {
    const overrides = { title: "T" };
    mergeVariables(DECLARATIONS, overrides);
    assert.deepEqual(overrides, { title: "T" });
    assert.equal(DECLARATIONS[0].default, "Hello");
  });
});

describe("resolveVariables", () => {
  it("applies defaults < --variables-file < --variables", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "vars.jsonc");
      await Deno.writeTextFile(path, '{\n  // file\n  "count": 10,\n  "title": "file",\n}\n');
      const { values, overrides, problems } = await resolveVariables(DECLARATIONS, {
        variablesFile: path,
        variables: '{"title": "inline"}',
      });
      assert.deepEqual(problems, []);
      assert.deepEqual(overrides, { count: 10, title: "inline" });
      assert.deepEqual(values, {
        title: "inline",
        count: 10,
        accent: "#ff0066",
        dark: false,
        layout: "wide",
      });
    });
  });

  it("without sources returns the defaults and no problems", async () => {
    const result = await resolveVariables(DECLARATIONS, {});
    assert.deepEqual(result.overrides, {});
    assert.deepEqual(result.problems, []);
    assert.deepEqual(result.values, mergeVariables(DECLARATIONS, {}));
  });

  it("in warn mode returns the problems and passes mismatched overrides through", async () => {
    const { values, problems } = await resolveVariables(DECLARATIONS, {
      variables: '{"count": "5", "extra": true, "title": "ok"}',
    });
    assert.deepEqual(problems.map((p) => p.key), ["count", "extra"]);
    assert.equal(values.count, "5");
    assert.equal(values.extra, true);
    assert.equal(values.title, "ok");
  });

  it("in strict mode throws StrictVariablesError listing every problem", async () => {
    await withTempDir(async (dir) => {
      const path = join(dir, "vars.json");
      await Deno.writeTextFile(path, '{"dark": "true"}');
      await assert.rejects(
        () =>
          resolveVariables(DECLARATIONS, {
            variablesFile: path,
            variables: '{"count": "5", "extra": 1}',
            strict: true,
          }),
        (error: unknown) => {
          assert.ok(error instanceof StrictVariablesError);
          assert.equal(error.name, "StrictVariablesError");
          assert.deepEqual(error.problems.map((p) => p.key), ["dark", "count", "extra"]);
          assert.equal(error.field, "variables.dark"); // the SDK path of the first problem
          assert.match(error.message, /--strict-variables/);
          for (const p of error.problems) assert.ok(error.message.includes(p.message), p.message);
          return true;
        },
      );
    });
  });

  it("in strict mode passes when every override matches", async () => {
    const { values, problems } = await resolveVariables(DECLARATIONS, {
      variables: '{"count": 9, "layout": "tall"}',
      strict: true,
    });
    assert.deepEqual(problems, []);
    assert.equal(values.count, 9);
    assert.equal(values.layout, "tall");
  });

  it("in strict mode reports keys of dropped declarations as undeclared", async () => {
    const html = `<div data-composition-id="p" data-width="1920" data-height="1080" ` +
      `data-duration="2" data-composition-variables='[{"id":"data","type":"object"}]'></div>`;
    const { declarations } = parseComposition(html, "/p/index.html");
    assert.deepEqual(declarations, []);
    await assert.rejects(
      () => resolveVariables(declarations, { variables: '{"data": "{}"}', strict: true }),
      (error: unknown) => {
        assert.ok(error instanceof StrictVariablesError);
        assert.deepEqual(error.problems.map((p) => [p.key, p.expected]), [
          ["data", "a declared variable"],
        ]);
        return true;
      },
    );
  });

  it("reports input errors before checking, even in strict mode", async () => {
    await assert.rejects(
      () => resolveVariables(DECLARATIONS, { variables: "[1]", strict: true }),
      isInputError("--variables"),
    );
  });
});

describe("nearest-name suggestions for undeclared keys", () => {
  it("editDistance counts a swap of neighbours as one edit", () => {
    assert.equal(editDistance("tittle", "title"), 1);
    assert.equal(editDistance("subtilte", "subtitle"), 1);
    assert.equal(editDistance("colour", "color"), 1);
    assert.equal(editDistance("", "abc"), 3);
    assert.equal(editDistance("kitten", "sitting"), 3);
  });

  it("nearestName ignores case, keeps a sensible threshold and prefers the closest", () => {
    assert.equal(nearestName("tittle", ["subtitle", "title"]), "title");
    assert.equal(nearestName("TITLE", ["title"]), "title");
    assert.equal(nearestName("acent", ["accent", "count"]), "accent");
    assert.equal(nearestName("backgroundColour", ["backgroundColor"]), "backgroundColor");
    assert.equal(nearestName("x", ["y"]), undefined);
    assert.equal(nearestName("background", ["title", "count"]), undefined);
  });

  it("checkOverrides and resolveVariables name the nearest declared variable", async () => {
    const problems = checkOverrides(DECLARATIONS, { tittle: "Hi", zzz: 1 });
    assert.equal(problems[0].suggestion, "title");
    assert.match(problems[0].message, /; did you mean "title"\?$/);
    assert.equal(problems[1].suggestion, undefined);
    assert.doesNotMatch(problems[1].message, /did you mean/);
    await assert.rejects(
      resolveVariables(DECLARATIONS, { variables: '{"lyout":"tall"}', strict: true }),
      (error: unknown) =>
        error instanceof StrictVariablesError && /did you mean "layout"\?/.test(error.message),
    );
  });
});
