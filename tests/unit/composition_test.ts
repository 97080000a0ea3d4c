/**
 * Tests for the composition model: finding the root element with a real HTML parser,
 * reading and validating its attributes, aspect-ratio detection, and resolving a project
 * directory or file to the composition entry.
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join, resolve } from "node:path";
import {
  aspectRatioOf,
  parseComposition,
  readComposition,
  resolveCompositionFile,
} from "../../src/composition/composition.ts";
import { CompositionError } from "../../src/composition/errors.ts";

const FILE = "/projects/promo/index.html";

/** A composition root element with the given attributes (defaults for the required four). */
function rootTag(attrs: Record<string, string | undefined> = {}, inner = ""): string {
  const all: Record<string, string | undefined> = {
    "data-composition-id": "promo",
    "data-width": "1920",
    "data-height": "1080",
    "data-duration": "5",
    ...attrs,
  };
  const text = Object.entries(all)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}="${v}"`)
    .join(" ");
  return `<div ${text}>${inner}</div>`;
}

function page(body: string): string {
  return `<!doctype html>\n<html>\n<head><meta charset="utf-8"><title>t</title></head>\n` +
    `<body>\n${body}\n</body>\n</html>\n`;
}

/** Asserts `fn` throws a CompositionError with these fields, named in its message. */
function assertCompositionError(
  fn: () => unknown,
  expected: { file: string; field?: string; value?: string },
  valueInMessage = true,
): CompositionError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof CompositionError, `expected CompositionError, got ${caught}`);
  assert.equal(caught.name, "CompositionError");
  assert.equal(caught.file, expected.file);
  assert.equal(caught.field, expected.field);
  assert.equal(caught.value, expected.value);
  assert.ok(caught.message.includes(expected.file), `message names file: ${caught.message}`);
  if (expected.field) {
    assert.ok(caught.message.includes(expected.field), `message names field: ${caught.message}`);
  }
  if (valueInMessage && expected.value?.trim()) {
    assert.ok(
      caught.message.includes(`"${expected.value}"`),
      `message names value: ${caught.message}`,
    );
  }
  return caught;
}

describe("parseComposition: finding the root", () => {
  it("reads the four root attributes of a minimal composition", () => {
    const c = parseComposition(rootTag(), FILE);
    assert.equal(c.id, "promo");
    assert.equal(c.width, 1920);
    assert.equal(c.height, 1080);
    assert.equal(c.duration, 5);
    assert.equal(c.aspectRatio, "16:9");
    assert.deepEqual(c.declarations, []);
    assert.deepEqual(c.dropped, []);
  });

  it("derives absolute file, project directory and entry from the path", () => {
    const c = parseComposition(rootTag(), "some/dir/scene.html");
    assert.equal(c.file, resolve("some/dir/scene.html"));
    assert.equal(c.projectDir, resolve("some/dir"));
    assert.equal(c.entry, "scene.html");
  });

  it("finds the root nested in body and wrapper elements of a full document", () => {
    const html = page(
      `<div class="stage"><main><section>${
        rootTag({ "data-composition-id": "nested" }, "<h1>Hi</h1>")
      }</section></main></div>`,
    );
    const c = parseComposition(html, FILE);
    assert.equal(c.id, "nested");
    assert.equal(c.width, 1920);
  });

  it("finds the root after other markup, styles and scripts", () => {
    const html = page(
      `<style>.a{color:red}</style><header><p>intro</p></header>` +
        `<script>window.x = 1;</script>${rootTag({ "data-composition-id": "after" })}`,
    );
    assert.equal(parseComposition(html, FILE).id, "after");

    it('takes the element marked data-root="true" over an earlier composition, as HyperFrames', () => {
      const html = page(
        `<canvas data-composition-id="bg" data-width="10" data-height="10"></canvas>` +
          rootTag({ "data-composition-id": "main", "data-root": "true" }),
      );
      const c = parseComposition(html, FILE);
      assert.equal(c.id, "main");
      assert.equal(c.width, 1920);
      assert.equal(c.duration, 5);
      // Any other value of data-root leaves the first composition the root.
      const unmarked = html.replace('data-root="true"', 'data-root="false"');
      assertCompositionError(() => parseComposition(unmarked, FILE), {
        file: FILE,
        field: "data-duration",
      });
    });
  });

  it("accepts the attribute on <body> or <html>", () => {
    const onBody = `<html><body data-composition-id="b" data-width="10" data-height="10" ` +
      `data-duration="1"><p>x</p></body></html>`;
    assert.equal(parseComposition(onBody, FILE).id, "b");
    const onHtml = `<html data-composition-id="h" data-width="10" data-height="10" ` +
      `data-duration="1"><body></body></html>`;
    assert.equal(parseComposition(onHtml, FILE).id, "h");
  });

  it("takes the outermost composition when compositions are nested", () => {
    const inner = rootTag({ "data-composition-id": "inner", "data-width": "100" });
    const html = page(rootTag({ "data-composition-id": "outer" }, inner));
    const c = parseComposition(html, FILE);
    assert.equal(c.id, "outer");
    assert.equal(c.width, 1920);
  });

  it("ignores the attribute text inside an HTML comment", () => {
    const fake = rootTag({ "data-composition-id": "commented", "data-width": "111" });
    const html = page(`<!-- ${fake} -->\n${rootTag({ "data-composition-id": "real" })}`);
    const c = parseComposition(html, FILE);
    assert.equal(c.id, "real");
    assert.equal(c.width, 1920);
  });

  it("ignores the attribute text inside a <script> string", () => {
    const html = page(
      `<script>const tpl = '<div data-composition-id="scripted" data-width="111" ` +
        `data-height="111" data-duration="9">';</script>\n${
          rootTag({ "data-composition-id": "real" })
        }`,
    );
    const c = parseComposition(html, FILE);
    assert.equal(c.id, "real");
    assert.equal(c.duration, 5);
  });

  it("ignores the attribute text inside another attribute's value and in text", () => {
    const html = page(
      `<div title='data-composition-id="in-title"'>data-composition-id="in-text"</div>` +
        `<textarea>${rootTag({ "data-composition-id": "in-textarea" })}</textarea>` +
        rootTag({ "data-composition-id": "real" }),
    );
    assert.equal(parseComposition(html, FILE).id, "real");
  });

  it("reports a missing root when the attribute only appears in a comment or script", () => {
    const html = page(
      `<!-- ${rootTag()} --><script>var s = '${rootTag()}';</script><div>no root</div>`,
    );
    const error = assertCompositionError(() => parseComposition(html, FILE), {
      file: FILE,
      field: "data-composition-id",
    });
    assert.match(error.message, /no composition element/);
  });

  it("decodes HTML entities in attribute values", () => {
    const vars = JSON.stringify([{ id: "title", type: "string", default: "A & B" }])
      .replaceAll("&", "&amp;")
      .replaceAll('"', "&quot;");
    const html = page(
      rootTag({ "data-composition-id": "a&amp;b", "data-composition-variables": vars }),
    );
    const c = parseComposition(html, FILE);
    assert.equal(c.id, "a&b");
    assert.equal(c.declarations[0].default, "A & B");
  });

  it("reads declarations in a single-quoted attribute", () => {
    const html = `<div data-composition-id="v" data-width="1080" data-height="1920" ` +
      `data-duration="3" data-composition-variables='[{"id":"title","type":"string",` +
      `"default":"Hello"},{"id":"data","type":"object"}]'></div>`;
    const c = parseComposition(html, FILE);
    assert.deepEqual(c.declarations, [
      { id: "title", type: "string", label: "title", default: "Hello" },
    ]);
    assert.equal(c.dropped.length, 1);
    assert.equal(c.dropped[0].id, "data");
    assert.equal(c.aspectRatio, "9:16");
  });

  it("reads declarations on <html>, the root's winning for the same id", () => {
    const c = parseComposition(
      `<html data-composition-variables='[{"id":"title","type":"string","default":"html"},` +
        `{"id":"accent","type":"color","default":"#ff0000"}]'><body>` +
        `<div data-composition-id="x" data-width="10" data-height="10" data-duration="1" ` +
        `data-composition-variables='[{"id":"title","type":"string","default":"root"}]'></div>` +
        `</body></html>`,
      FILE,
    );
    assert.deepEqual(c.declarations.map((d) => [d.id, d.default]), [
      ["accent", "#ff0000"],
      ["title", "root"],
    ]);
  });

  it("treats an empty declarations attribute as no declarations", () => {
    const c = parseComposition(rootTag({ "data-composition-variables": "  " }), FILE);
    assert.deepEqual(c.declarations, []);
  });
});

describe("parseComposition: attribute values", () => {
  it("accepts fractional and padded durations", () => {
    for (
      const [raw, value] of [["2.5", 2.5], ["0.04", 0.04], [" 3 ", 3], ["10", 10], [".5", 0.5]]
    ) {
      const c = parseComposition(rootTag({ "data-duration": String(raw) }), FILE);
      assert.equal(c.duration, value, `data-duration="${raw}"`);
    }
  });

  it("accepts padded integer sizes", () => {
    const c = parseComposition(rootTag({ "data-width": " 1280 ", "data-height": "720" }), FILE);
    assert.equal(c.width, 1280);
    assert.equal(c.height, 720);
  });

  it("rejects an empty or blank id, naming file and attribute", () => {
    for (const id of ["", "   "]) {
      assertCompositionError(() => parseComposition(rootTag({ "data-composition-id": id }), FILE), {
        file: FILE,
        field: "data-composition-id",
        value: id,
      });
    }
  });

  it("reports a missing root in an empty document", () => {
    assertCompositionError(() => parseComposition("", FILE), {
      file: FILE,
      field: "data-composition-id",
    });
  });

  for (const name of ["data-width", "data-height"]) {
    it(`rejects a missing ${name}, naming file and attribute`, () => {
      assertCompositionError(() => parseComposition(rootTag({ [name]: undefined }), FILE), {
        file: FILE,
        field: name,
      });
    });

    it(`rejects a ${name} that is not a positive integer, naming file, attribute and value`, () => {
      for (
        const bad of ["0", "-1", "-1920", "1.5", "1920.5", "abc", "", " ", "1e3", "0x780", "12px"]
      ) {
        assertCompositionError(() => parseComposition(rootTag({ [name]: bad }), FILE), {
          file: FILE,
          field: name,
          value: bad,
        });
      }
    });
  }

  it("rejects a missing data-duration, naming file and attribute", () => {
    assertCompositionError(
      () => parseComposition(rootTag({ "data-duration": undefined }), FILE),
      { file: FILE, field: "data-duration" },
    );
  });

  describe("a first composition element with no length (HyperFrames' airbnb-deck)", () => {
    const canvas = `<canvas data-composition-id="bg" data-start="0" data-width="1920" ` +
      `data-height="1080"></canvas>`;
    const deck = (attrs: Record<string, string | undefined> = {}, script = ""): string =>
      page(
        canvas + rootTag(
          { "data-composition-id": "root", "data-duration": "108", ...attrs },
          `<div data-composition-id="cover" data-start="0" data-duration="9"></div>` +
            `<div data-composition-id="ask" data-start="90" data-duration="18"></div>`,
        ) + script,
      );
    const registers = (...ids: string[]): string =>
      `<script>window.__timelines = window.__timelines || {};\n${
        ids.map((id) => `window.__timelines["${id}"] = tl;`).join("\n")
      }\nconst again = window.__timelines["root"];</script>`;

    it("is the root, lasting what the composition of the page's sole timeline declares", () => {
      const c = parseComposition(deck({}, registers("root")), FILE);
      assert.deepEqual([c.id, c.width, c.height, c.duration], ["bg", 1920, 1080, 108]);
      // Registered as a property, and that composition's length from its sub-compositions.
      const dotted = `<script type="module">window.__timelines.root = tl;</script>`;
      assert.equal(
        parseComposition(deck({ "data-duration": undefined }, dotted), FILE).duration,
        108,
      );
    });

    it("is refused as before when the markup does not tell which timeline plays", () => {
      for (
        const script of [
          "",
          registers("root", "cover"),
          registers("bg"),
          registers("nowhere"),
          `<script>window.__timelines[id] = tl;</script>${registers("root")}`,
          `<script>window.__timelines = [tl];</script>`,
        ]
      ) {
        assertCompositionError(() => parseComposition(deck({}, script), FILE), {
          file: FILE,
          field: "data-duration",
        });
      }
    });
  });

  it("rejects a non-positive or non-numeric data-duration, naming file, attribute and value", () => {
    for (const bad of ["0", "-1", "-0.5", "NaN", "abc", "", "Infinity", "5s", "0x5"]) {
      assertCompositionError(() => parseComposition(rootTag({ "data-duration": bad }), FILE), {
        file: FILE,
        field: "data-duration",
        value: bad,
      });
    }
  });

  it("turns malformed declarations JSON into a CompositionError naming the attribute", () => {
    const raw = '[{"id":"title","type":"string"';
    const html = `<div data-composition-id="p" data-width="10" data-height="10" ` +
      `data-duration="1" data-composition-variables='${raw}'></div>`;
    const error = assertCompositionError(() => parseComposition(html, FILE), {
      file: FILE,
      field: "data-composition-variables",
      value: raw,
    }, false);
    assert.match(error.message, /not valid JSON/);
  });

  it("turns non-array declarations JSON into a CompositionError naming the attribute", () => {
    const raw = '{"id":"title","type":"string"}';
    const html = `<div data-composition-id="p" data-width="10" data-height="10" ` +
      `data-duration="1" data-composition-variables='${raw}'></div>`;
    const error = assertCompositionError(() => parseComposition(html, FILE), {
      file: FILE,
      field: "data-composition-variables",
      value: raw,
    }, false);
    assert.match(error.message, /JSON array/);
  });
});

describe("aspect ratio", () => {
  it("detects 16:9, 9:16 and 1:1 and returns null otherwise", () => {
    const cases: [number, number, string | null][] = [
      [1920, 1080, "16:9"],
      [1280, 720, "16:9"],
      [3840, 2160, "16:9"],
      [1080, 1920, "9:16"],
      [720, 1280, "9:16"],
      [500, 500, "1:1"],
      [1080, 1080, "1:1"],
      [1000, 700, null],
      [1920, 1081, null],
      [1080, 1350, null],
      [1600, 1200, null],
    ];
    for (const [w, h, ratio] of cases) {
      assert.equal(aspectRatioOf(w, h), ratio, `${w}x${h}`);
      const c = parseComposition(
        rootTag({ "data-width": String(w), "data-height": String(h) }),
        FILE,
      );
      assert.equal(c.aspectRatio, ratio, `parsed ${w}x${h}`);
    }
  });
});

describe("readComposition / resolveCompositionFile", () => {
  async function project(files: Record<string, string>): Promise<string> {
    const dir = await Deno.makeTempDir({ prefix: "vid-composition-" });
    for (const [name, text] of Object.entries(files)) {
      await Deno.writeTextFile(join(dir, name), text);
    }
    return dir;
  }

  it("reads index.html from a project directory", async () => {
    const dir = await project({
      "index.html": page(rootTag({ "data-composition-id": "from-dir" })),
    });
    try {
      const c = await readComposition(dir);
      assert.equal(c.id, "from-dir");
      assert.equal(c.file, join(resolve(dir), "index.html"));
      assert.equal(c.projectDir, resolve(dir));
      assert.equal(c.entry, "index.html");
      assert.equal(await resolveCompositionFile(dir), join(resolve(dir), "index.html"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("reads a custom entry inside the directory", async () => {
    const dir = await project({
      "index.html": page(rootTag({ "data-composition-id": "index" })),
      "scene.html": page(rootTag({ "data-composition-id": "scene" })),
    });
    try {
      const c = await readComposition(dir, "scene.html");
      assert.equal(c.id, "scene");
      assert.equal(c.entry, "scene.html");
      assert.equal(
        await resolveCompositionFile(dir, "scene.html"),
        join(resolve(dir), "scene.html"),
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("uses a file path as is, ignoring the entry", async () => {
    const dir = await project({ "promo.html": page(rootTag({ "data-composition-id": "file" })) });
    try {
      const file = join(dir, "promo.html");
      const c = await readComposition(file);
      assert.equal(c.id, "file");
      assert.equal(c.file, resolve(file));
      assert.equal(c.projectDir, resolve(dir));
      assert.equal(await resolveCompositionFile(file, "other.html"), resolve(file));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("names the path when the directory does not exist", async () => {
    const dir = await project({});
    await Deno.remove(dir, { recursive: true });
    const missing = join(dir, "nope");
    for (const call of [() => readComposition(missing), () => resolveCompositionFile(missing)]) {
      await assert.rejects(call, (error: unknown) => {
        assert.ok(error instanceof CompositionError);
        assert.equal(error.file, missing);
        assert.ok(error.message.includes(missing), error.message);
        return true;
      });
    }
  });

  it("names the entry path and suggests --composition when index.html is missing", async () => {
    const dir = await project({ "other.html": page(rootTag()) });
    try {
      await assert.rejects(() => readComposition(dir), (error: unknown) => {
        assert.ok(error instanceof CompositionError);
        assert.equal(error.file, join(dir, "index.html"));
        assert.ok(error.message.includes(join(dir, "index.html")), error.message);
        assert.match(error.message, /--composition/);
        return true;
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("names the custom entry path and suggests --composition when it is missing", async () => {
    const dir = await project({ "index.html": page(rootTag()) });
    try {
      await assert.rejects(() => resolveCompositionFile(dir, "missing.html"), (error: unknown) => {
        assert.ok(error instanceof CompositionError);
        assert.ok(error.message.includes(join(dir, "missing.html")), error.message);
        assert.match(error.message, /--composition/);
        return true;
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("does not take a directory named like the entry as the entry", async () => {
    const dir = await project({});
    await Deno.mkdir(join(dir, "index.html"));
    try {
      await assert.rejects(() => resolveCompositionFile(dir), CompositionError);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("reports attribute errors against the file that was read", async () => {
    const dir = await project({ "index.html": page(rootTag({ "data-width": "0" })) });
    try {
      await assert.rejects(() => readComposition(dir), (error: unknown) => {
        assert.ok(error instanceof CompositionError);
        assert.equal(error.file, resolve(dir, "index.html"));
        assert.equal(error.field, "data-width");
        assert.equal(error.value, "0");
        return true;
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});
