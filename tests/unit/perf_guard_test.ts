/**
 * The performance guard's judgement (bench/perf_guard.ts): a ratio 20% off the record fails,
 * one inside passes. The measurement itself is a timing ratio and runs apart from the
 * correctness suite, as `deno task bench:guard`.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { guardProblems, TOLERANCE } from "../../bench/perf_guard.ts";

describe("performance guard", () => {
  it("the guard's judgement: a ratio 20% off the record fails, one inside passes", () => {
    const recorded = { fpsRatio: 1, cpuRatio: 1, rounds: 3, load: [0, 0] as [number, number] };
    assert.deepEqual(guardProblems({ ...recorded, fpsRatio: 0.85, cpuRatio: 1.15 }, recorded), []);
    const slow = guardProblems({ ...recorded, fpsRatio: 1 - TOLERANCE - 0.05 }, recorded);
    assert.match(slow.join("\n"), /fps ratio to the raw pipeline fell to 0\.75/);
    const costly = guardProblems({ ...recorded, cpuRatio: 1 + TOLERANCE + 0.05 }, recorded);
    assert.match(costly.join("\n"), /CPU ratio to the raw pipeline rose to 1\.25/);
  });
});
