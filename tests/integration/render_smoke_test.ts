/**
 * Smoke test of `vid render` through the CLI: a one-second CSS fade renders with the
 * right frame count, size and per-frame colours.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  compositionHtml,
  makeProject,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  runVid,
} from "../helpers.ts";

describe("vid render (smoke)", () => {
  it("renders a CSS fade frame-exactly: frame n shows t = n / fps", async () => {
    const dir = await makeProject(compositionHtml(
      `<div id="box" style="position:absolute;inset:0;animation:fade 1s linear both"></div>`,
      {
        head:
          `<style>@keyframes fade { from { background: rgb(0,0,0) } to { background: rgb(255,0,0) } }</style>`,
      },
    ));
    const output = `${dir}/out.mp4`;
    const result = await runVid(["render", dir, "--output", output, "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout);
    assert.equal(summary.frames, 30);
    const info = await probeVideo(output);
    assert.deepEqual([info.frames, info.width, info.height, info.codec, info.pixFmt], [
      30,
      320,
      180,
      "h264",
      "yuv420p",
    ]);
    const series = await pixelSeries(output, 160, 90);
    for (const frame of [0, 10, 15, 29]) {
      const expected = [Math.round((255 * frame) / 30), 0, 0];
      assert.ok(
        near(series[frame], expected, 6),
        `frame ${frame}: ${rgb(series[frame])} vs ${rgb(expected)}`,
      );
    }
    await Deno.remove(dir, { recursive: true });
  });
});
