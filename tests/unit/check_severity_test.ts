/**
 * One severity table: README's table (under `<!-- severity table -->`) lists every kind of
 * `vid check` problem with the severity `SEVERITY` gives it, so the docs cannot drift from
 * what every command does.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { SEVERITY } from "../../src/check/problems.ts";

const README = fileURLToPath(new URL("../../README.md", import.meta.url));

describe("the severity table", () => {
  it("README lists every kind with the severity SEVERITY gives it", async () => {
    const text = await readFile(README, "utf8");
    const start = text.indexOf("<!-- severity table: src/check/problems.ts SEVERITY -->");
    assert.ok(start >= 0, "README has the severity table");
    const rows = text.slice(start).split("\n\n")[1].split("\n").slice(2);
    const listed = Object.fromEntries(rows.map((row) => {
      const [, kind, severity] = row.split("|").map((c) => c.trim());
      return [kind.replaceAll("`", ""), severity];
    }));
    assert.deepEqual(listed, { ...SEVERITY });
  });
});
