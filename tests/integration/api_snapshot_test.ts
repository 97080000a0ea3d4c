/**
 * The SDK's public surface is a decision, not a side effect: the exports of every entry
 * point (render.ts, lambda.ts, cloud.ts, server.ts; mod.ts is their union) with their
 * signatures, printed from `deno doc --json` by scripts/api_snapshot.ts, must equal the
 * checked-in tests/fixtures/api/public_api.txt. A change to what users import (a new or
 * removed name, a parameter, a field) therefore shows in review as a diff of that file.
 * The surface also stays small: internals (parsers, codec arguments, constants, the page
 * runtime) are imported from src/ by tests and scripts, never re-exported.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { API_SNAPSHOT_FILE, apiSnapshot } from "../../scripts/api_snapshot.ts";
import { ROOT } from "../helpers.ts";

/**
 * The most names the entries may export together. Issue #35 cut 294 to 135; the player entry
 * (issue #34) added its 5 (`VidPlayer`, its base `PlayerElementBase` — JSR's publish check wants
 * a named superclass and `deno doc --lint` wants it public — `definePlayer`, `PlayerReadyState`,
 * `PLAYER_BUNDLE`).
 * Raise it only with a reason a reviewer accepts.
 */
const MAX_PUBLIC_NAMES = 140;

/** The lines only in `a`, each prefixed with `sign`. */
function only(a: string[], b: string[], sign: string): string[] {
  const other = new Set(b);
  return a.filter((line) => !other.has(line)).map((line) => `${sign} ${line}`);
}

describe("public API snapshot", () => {
  it("the entries export exactly what tests/fixtures/api/public_api.txt lists", async () => {
    const actual = await apiSnapshot();
    const expected = await Deno.readTextFile(`${ROOT}${API_SNAPSHOT_FILE}`);
    if (actual === expected) return;
    const a = actual.split("\n");
    const e = expected.split("\n");
    assert.fail(
      `The SDK's public surface changed:\n${
        [...only(e, a, "-"), ...only(a, e, "+")].join("\n")
      }\n\nIf the change is deliberate, run \`deno run -A scripts/api_snapshot.ts --update\` ` +
        `and commit ${API_SNAPSHOT_FILE}: its diff is the API change reviewers see. ` +
        `Otherwise import the name from src/ where it is needed instead of exporting it.`,
    );
  });

  it(`the entries export at most ${MAX_PUBLIC_NAMES} names together`, async () => {
    const header = (await Deno.readTextFile(`${ROOT}${API_SNAPSHOT_FILE}`)).split("\n", 1)[0];
    const count = Number(/^# (\d+) names$/.exec(header)?.[1]);
    assert.ok(count <= MAX_PUBLIC_NAMES, `${count} public names, over ${MAX_PUBLIC_NAMES}`);
  });
});
