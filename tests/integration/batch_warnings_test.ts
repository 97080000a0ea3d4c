/**
 * A batch says what each row got (issue 32): a row whose key is misspelt renders with the
 * default, and the manifest records the row's warning with a did-you-mean, the summary
 * counts the rows with warnings; `vid check --batch` finds the same, by line, without
 * rendering.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { compositionHtml, makeProject, runVid } from "../helpers.ts";

describe("batch rows with warnings", () => {
  let dir: string;

  before(async () => {
    dir = await makeProject(
      compositionHtml('<h1 data-var-text="name">Hi</h1>', {
        duration: 1,
        variables: [
          { id: "name", type: "string", label: "Name", default: "there" },
          { id: "price", type: "number", label: "Price", default: "9.99" },
        ],
      }),
      {
        "rows.jsonl": '{"outputKey":"a.mp4","variables":{"nmae":"Ada"}}\n' +
          '{"outputKey":"b.mp4","variables":{"name":"Bo"}}\n' +
          '{"outputKey":"c.mp4","variables":{"price":5}}\n' +
          '{"outputKey":"d.mp4","fps":3}\n',
      },
    );
  });
  after(async () => {
    await Deno.remove(dir, { recursive: true });
  });

  it("vid check --batch reports every row by line without rendering", async () => {
    const result = await runVid(["check", dir, "--batch", `${dir}/rows.jsonl`]);
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(
      result.stdout,
      /^rows\.jsonl:1: warning: row "a\.mp4": "nmae" is not declared .*; did you mean "name"\?$/m,
    );
    assert.doesNotMatch(result.stdout, /^rows\.jsonl:2:/m);
    assert.match(
      result.stdout,
      /^rows\.jsonl:3: warning: row "c\.mp4": "price" is set, but its declaration is dropped \(declaration 1: default "9\.99" is not a finite number\)/m,
    );
    assert.match(result.stdout, /^rows\.jsonl:4: error: fps: is not a row field/m);
    assert.match(result.stdout, /^failed: 4 rows of .*: 1 error, 2 warnings$/m);
    await assert.rejects(Deno.stat(`${dir}/renders`));
  });

  it("vid render-batch records each row's warnings in the manifest and counts the rows", async () => {
    await Deno.writeTextFile(
      `${dir}/one.jsonl`,
      '{"outputKey":"a.mp4","variables":{"nmae":"Ada"}}\n{"outputKey":"b.mp4"}\n',
    );
    const result = await runVid([
      "render-batch",
      dir,
      "--batch",
      `${dir}/one.jsonl`,
      "--out-dir",
      `${dir}/out`,
      "--fps",
      "2",
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^2 rendered, .*, 1 with warnings/m);
    const manifest = JSON.parse(
      await Deno.readTextFile(`${dir}/out/vid-batch-manifest.json`),
    ) as { line: number; status: string; warnings?: string[] }[];
    assert.deepEqual(manifest.map((r) => [r.line, r.status]), [[1, "rendered"], [2, "rendered"]]);
    assert.equal(manifest[0].warnings?.length, 1);
    assert.match(manifest[0].warnings![0], /"nmae" is not declared .*did you mean "name"\?/);
    assert.equal(manifest[1].warnings, undefined);
  });
});
