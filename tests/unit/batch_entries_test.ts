/**
 * The shared batch reader (src/batch/entries.ts): JSONL lines checked as the distributed batch
 * always did, and CSV files (RFC 4180 quoting, CRLF, a byte-order mark, cells typed by the
 * declarations, rows numbered by the line they start on).
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseBatchLine, parseCsv, readBatchFile } from "../../src/batch/entries.ts";
import type { VariableDeclaration } from "../../src/composition/declarations.ts";

const DECLARATIONS = [
  { id: "title", type: "string", label: "Title", default: "" },
  { id: "count", type: "number", label: "Count", default: 1 },
  { id: "loud", type: "boolean", label: "Loud", default: false },
] as VariableDeclaration[];

describe("parseBatchLine", () => {
  it("reads an entry, a blank line, and names each problem with its line", () => {
    assert.deepEqual(
      parseBatchLine('{"outputKey":"a.mp4","variables":{"count":2}}', 1, DECLARATIONS),
      {
        kind: "entry",
        outputKey: "a.mp4",
        variables: { count: 2 },
      },
    );
    assert.deepEqual(parseBatchLine("   ", 2, DECLARATIONS), { kind: "blank" });
    const cases: [string, RegExp][] = [
      ["{nope", /^line 3: not valid JSON/],
      ["[1]", /^line 3: a batch entry must be a JSON object/],
      ['{"variables":{}}', /^line 3: "outputKey" must be a non-empty string/],
      ['{"outputKey":"a.mp4","variables":[1]}', /^line 3: "variables" must be a JSON object/],
    ];
    for (const [text, message] of cases) {
      const parsed = parseBatchLine(text, 3, DECLARATIONS);
      assert.equal(parsed.kind, "invalid", text);
      assert.match((parsed as { error: string }).error, message);
    }
  });

  it("a variable problem is a warning, or with strict an invalid line", () => {
    const text = '{"outputKey":"a.mp4","variables":{"count":"two"}}';
    const warned = parseBatchLine(text, 4, DECLARATIONS);
    assert.equal(warned.kind, "entry");
    assert.match((warned as { warning: string }).warning, /^line 4: .*count/);
    const strict = parseBatchLine(text, 4, DECLARATIONS, true);
    assert.equal(strict.kind, "invalid");
    assert.match((strict as { error: string }).error, /variables do not match the declarations/);
  });
});

describe("parseCsv", () => {
  it("quotes, escaped quotes, commas and line breaks in cells, CRLF, a BOM", () => {
    const text = '\ufeffoutputKey,title\r\n"a, b.mp4","say ""hi"""\r\nc.mp4,"two\nlines"\r\n\r\n';
    assert.deepEqual(parseCsv(text), [
      { line: 1, cells: ["outputKey", "title"] },
      { line: 2, cells: ["a, b.mp4", 'say "hi"'] },
      { line: 3, cells: ["c.mp4", "two\nlines"] },
      { line: 5, cells: [] },
    ]);
  });

  it("keeps empty cells, and a last line without a newline", () => {
    assert.deepEqual(parseCsv("a,,c\nx,y,"), [
      { line: 1, cells: ["a", "", "c"] },
      { line: 2, cells: ["x", "y", ""] },
    ]);
  });
});

describe("readBatchFile (CSV)", () => {
  it("types cells by declaration, leaves empty cells at their defaults, numbers rows by line", async () => {
    const file = await Deno.makeTempFile({ suffix: ".csv" });
    await Deno.writeTextFile(
      file,
      "outputKey,title,count,loud\n" +
        "a.mp4,Hello,3,true\n" +
        '"b.mp4","multi\nline",,FALSE\n' +
        "c.mp4,x\n" +
        "\n" +
        "d.mp4,007,seven,maybe\n",
    );
    const rows = await Array.fromAsync(readBatchFile(file, DECLARATIONS));
    assert.deepEqual(rows.map((r) => r.line), [2, 3, 5, 6, 7]);
    assert.deepEqual(rows[0].parsed, {
      kind: "entry",
      outputKey: "a.mp4",
      variables: { title: "Hello", count: 3, loud: true },
    });
    assert.deepEqual(rows[1].parsed, {
      kind: "entry",
      outputKey: "b.mp4",
      variables: { title: "multi\nline", loud: false },
    });
    assert.equal(rows[2].parsed.kind, "invalid");
    assert.match(
      (rows[2].parsed as { error: string }).error,
      /^line 5: 2 cells, but the header has 4/,
    );
    assert.deepEqual(rows[3].parsed, { kind: "blank" });
    // "007" stays text for a string; cells that are not numbers or booleans stay text and warn.
    const last = rows[4].parsed as { kind: string; variables: object; warning?: string };
    assert.equal(last.kind, "entry");
    assert.deepEqual(last.variables, { title: "007", count: "seven", loud: "maybe" });
    assert.match(last.warning!, /^line 7: .*count.*loud/);
    await Deno.remove(file);
  });

  it("refuses a render setting as a column, naming the flag, as a JSONL row's key is", async () => {
    const file = await Deno.makeTempFile({ suffix: ".csv" });
    await Deno.writeTextFile(file, "outputKey,title,fps\na.mp4,Hello,24\n");
    const rows = await Array.fromAsync(readBatchFile(file, DECLARATIONS));
    assert.equal(rows.length, 1);
    assert.equal(rows[0].line, 1);
    assert.equal(rows[0].parsed.kind, "invalid");
    assert.match(
      (rows[0].parsed as { error: string }).error,
      /^line 1: fps: is not a column .*set --fps for the whole batch$/,
    );
    // A template that declares a variable of that name takes it as the variable.
    const withFps = [...DECLARATIONS, { id: "fps", type: "number", label: "FPS" } as const];
    const [row] = await Array.fromAsync(readBatchFile(file, withFps));
    assert.deepEqual(row.parsed, {
      kind: "entry",
      outputKey: "a.mp4",
      variables: { title: "Hello", fps: 24 },
    });
    await Deno.remove(file);
  });
});
