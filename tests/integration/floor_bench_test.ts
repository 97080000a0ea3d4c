/**
 * The floor benchmark (bench/floor_bench.ts) measures what it says: on a real page with
 * real Chromium and ffmpeg, the draw-only pass reads nothing back (the browser process, which
 * encodes screenshots, stays nearly idle), the capture pass does, the floors are the sums of
 * their parts, and the CPU of the passes before a measurement is not counted in it.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { floorText, measureFloor } from "../../bench/floor_bench.ts";
import { sampleTree } from "../../bench/proc_cpu.ts";

/** A 960x540, 1 s page that repaints all of itself every frame. */
const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: 960px; height: 540px; }
#root { width: 960px; height: 540px; animation: hue 1s linear both;
  background: linear-gradient(90deg, #f00, #00f); }
@keyframes hue { to { filter: hue-rotate(300deg); } }
</style></head>
<body><div id="root" data-composition-id="floor" data-width="960" data-height="540"
  data-duration="1"></div></body></html>
`;

describe("floor benchmark", () => {
  it("measures draw, capture, decode and encode apart, and sums them into the floors", async () => {
    const dir = await mkdtemp(join(tmpdir(), "vid-floor-test-"));
    try {
      await writeFile(join(dir, "index.html"), PAGE);
      const floor = await measureFloor(dir, "high", 1);
      console.log(floorText("floor test page", floor));
      assert.equal(floor.frames, 30);
      assert.deepEqual([floor.width, floor.height], [960, 540]);
      for (const part of ["draw", "capture", "decode", "encode"] as const) {
        assert.ok(Number.isFinite(floor[part]) && floor[part] >= 0, `${part}: ${floor[part]}`);
      }
      assert.ok(floor.encode > 0, "x264 spent CPU time");
      assert.ok(floor.capture > 0, "Chromium spent CPU time capturing");
      // The screenshot is encoded in the browser process: the capture pass spends more there.
      assert.ok(
        (floor.captureByRole.browser ?? 0) > (floor.drawByRole.browser ?? 0),
        `browser CPU: capture ${floor.captureByRole.browser}, draw ${floor.drawByRole.browser}`,
      );
      assert.equal(floor.paintAndEncodeFloor, floor.draw + floor.encode);
      assert.equal(floor.jpegHandOffFloor, floor.capture + floor.decode + floor.encode);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("a sample taken from now leaves out the CPU a process spent before", async () => {
    const busy = new Deno.Command("sh", {
      args: ["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo spent; exec sleep 5"],
      stdout: "piped",
    }).spawn();
    try {
      // Wait until the loop has spent its CPU and sleeps.
      const reader = busy.stdout.getReader();
      assert.match(new TextDecoder().decode((await reader.read()).value), /spent/);
      reader.releaseLock();
      const fromStart = sampleTree(busy.pid);
      const fromNow = sampleTree(busy.pid, true);
      // Deliberate: 300 ms of the loop sleeping, which must cost it no CPU.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const total = (cpu: Record<string, number>) => Object.values(cpu).reduce((a, b) => a + b, 0);
      const before = total(fromStart.stop());
      assert.ok(before > 0.05, `the loop spent CPU before: ${before} s`);
      assert.ok(total(fromNow.stop()) < 0.03, "nothing counted while it slept");
    } finally {
      busy.kill("SIGKILL");
      await busy.status;
      await busy.stdout.cancel().catch(() => undefined);
    }
  });
});
