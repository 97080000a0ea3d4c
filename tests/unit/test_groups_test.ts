/**
 * The test runner's groups (`scripts/test.ts`): the parallel group's files share one test
 * process, so a file that sets that process's environment runs alone, or the files beside it
 * see its values (a render of another file once got a removed TMPDIR from one).
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ALONE_INTEGRATION, SERIAL_INTEGRATION } from "../../scripts/test.ts";

const INTEGRATION = new URL("../integration/", import.meta.url);

describe("test groups", () => {
  it("every integration file that sets the process environment runs alone", () => {
    const setting: string[] = [];
    for (const entry of Deno.readDirSync(INTEGRATION)) {
      if (!entry.name.endsWith("_test.ts")) continue;
      const text = Deno.readTextFileSync(new URL(entry.name, INTEGRATION));
      if (
        /Deno\.env\.(set|delete)\(|process\.env\.\w+\s*=(?!=)|process\.env\[[^\]]+\]\s*=(?!=)/.test(
          text,
        )
      ) {
        setting.push(entry.name);
      }
    }
    assert.ok(setting.length > 0, "the scan finds the files known to set it");
    assert.deepEqual(setting.filter((name) => !ALONE_INTEGRATION.has(name)).sort(), []);
  });

  it("every file that runs alone says why in SERIAL_INTEGRATION", () => {
    assert.deepEqual([...ALONE_INTEGRATION].filter((name) => !(name in SERIAL_INTEGRATION)), []);
  });
});
