/**
 * Performance regressions are caught: `vid render` is measured against the raw
 * capture+encode pipeline in the same run (bench/perf_guard.ts: a 640x360, 1 s page, whole
 * processes, alternating, medians), and the ratios must stay within 20% of the figures
 * recorded in bench/perf_guard.json. Ratios, not times: both sides see the same machine
 * and the same neighbours.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { guardProblems, measureGuard, recordedGuard, TOLERANCE } from "../../bench/perf_guard.ts";

describe("performance guard", () => {
  it("the guard's judgement: a ratio 20% off the record fails, one inside passes", () => {
    const recorded = { fpsRatio: 1, cpuRatio: 1, rounds: 3, load: [0, 0] as [number, number] };
    assert.deepEqual(guardProblems({ ...recorded, fpsRatio: 0.85, cpuRatio: 1.15 }, recorded), []);
    const slow = guardProblems({ ...recorded, fpsRatio: 1 - TOLERANCE - 0.05 }, recorded);
    assert.match(slow.join("\n"), /fps ratio to the raw pipeline fell to 0\.75/);
    const costly = guardProblems({ ...recorded, cpuRatio: 1 + TOLERANCE + 0.05 }, recorded);
    assert.match(costly.join("\n"), /CPU ratio to the raw pipeline rose to 1\.25/);
  });

  it("vid render keeps its fps and CPU ratios to the raw pipeline", async () => {
    const recorded = await recordedGuard();
    const measured = await measureGuard(5);
    console.log(
      `perf guard: fps ratio ${measured.fpsRatio.toFixed(2)} (recorded ${
        recorded.fpsRatio.toFixed(2)
      }), CPU ratio ${measured.cpuRatio.toFixed(2)} (recorded ${
        recorded.cpuRatio.toFixed(2)
      }), load ${measured.load.map((l) => l.toFixed(1)).join("-")}`,
    );
    assert.deepEqual(guardProblems(measured, recorded), []);
  });
});
