/**
 * A late frame of a page animated by its own `requestAnimationFrame` loop, as HyperFrames'
 * airbnb-deck draws its Three.js particles: the page's clock steps through every frame before
 * it (one animation frame round each) so the frame is the same whatever the chunk plan, and
 * each step costs what one draw costs. That fast-forward runs in slices, each under the host's
 * frame deadline (`--frame-timeout`), so a late `vid still` or a chunk that starts late takes
 * as long as its steps need instead of failing the deadline of one frame; a page that hangs
 * still fails it, and `vid check`, which seeks sampled frames, too. The page's colour is the number of frames it has drawn, so the pictures
 * show that no step was skipped or repeated.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { makeProject, rgbFrames, runVid } from "../helpers.ts";

/** 12 s at 30 fps; each animation frame burns a few milliseconds, then shows its count. */
const PAGE = `<!doctype html>
<html>
<head><style>html, body { margin: 0; width: 320px; height: 180px; background: #000 }</style></head>
<body>
  <div id="root" data-composition-id="ff" data-width="320" data-height="180" data-duration="12"
    style="width: 320px; height: 180px"></div>
  <script>
    let drawn = 0;
    window.sink = 0;
    const root = document.getElementById("root");
    function draw() {
      for (let i = 0; i < 1000000; i++) window.sink = (window.sink + i * 7) % 1000003;
      drawn++;
      root.style.background = "rgb(" + (drawn % 256) + ", " + Math.floor(drawn / 256) + ", 0)";
      requestAnimationFrame(draw);
    }
    requestAnimationFrame(draw);
  </script>
</body>
</html>`;

/** A deadline far below the ~300 steps' time (a few ms each) and far above one step's. */
const DEADLINE = ["--frame-timeout", "0.5"];

/** The colour that frame `n` shows: its clock stepped through frames 0..n, one draw each. */
function drawnAt(n: number): number[] {
  return [(n + 1) % 256, Math.floor((n + 1) / 256), 0];
}

/** The colour at the frame's centre. */
function centre(frame: Uint8Array): number[] {
  const at = 3 * (90 * 320 + 160);
  return Array.from(frame.subarray(at, at + 3));
}

let dir: string;

before(async () => {
  dir = await makeProject(PAGE);
});

after(async () => {
  await Deno.remove(dir, { recursive: true });
});

describe("fast-forwarding a page's own animation loop to a late frame", () => {
  it("vid still at frame 300 steps through all 300 frames before it, past the deadline of one frame", async () => {
    const out = join(dir, "late.png");
    const result = await runVid(["still", dir, "-o", out, "--time", "10", ...DEADLINE]);
    assert.equal(result.code, 0, result.stderr);
    const [frame] = await rgbFrames(out, 320, 180);
    assert.deepEqual(centre(frame), drawnAt(300));
  });

  it("vid render --frames 280-289 starts its chunk late the same way: each frame one draw on", async () => {
    const out = join(dir, "late.mp4");
    const result = await runVid([
      "render",
      dir,
      "-o",
      out,
      "--frames",
      "280-289",
      "--workers",
      "1",
      ...DEADLINE,
    ]);
    assert.equal(result.code, 0, result.stderr);
    const frames = await rgbFrames(out, 320, 180);
    assert.equal(frames.length, 10);
    // H.264 keeps a flat colour within a level or two of what was drawn.
    for (const [i, n] of [[0, 280], [9, 289]]) {
      const got = centre(frames[i]);
      assert.ok(
        got.every((v, c) => Math.abs(v - drawnAt(n)[c]) <= 3),
        `frame ${n}: ${got}, expected ${drawnAt(n)}`,
      );
    }
  });

  it("a page that hangs while fast-forwarding fails the deadline, naming the frame, in vid still and vid check", async () => {
    const hung = await makeProject(
      PAGE.replace("drawn++;", "drawn++; if (drawn === 100) while (true) {}"),
    );
    try {
      const out = join(hung, "hung.png");
      const result = await runVid(["still", hung, "-o", out, "--time", "10", ...DEADLINE]);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /frame 300: the page stopped responding/);
      assert.equal(await Deno.stat(out).then(() => true, () => false), false, "no output");
      // vid check seeks its sampled frames under the same deadline (it waited forever before).
      const check = await runVid(["check", hung, "--json", ...DEADLINE]);
      assert.equal(check.code, 1, check.stderr);
      const problems = JSON.parse(check.stdout).problems as { kind: string; field?: string }[];
      const hang = problems.find((p) => p.field === "--frame-timeout");
      assert.equal(hang?.kind, "page-error", check.stdout);
    } finally {
      await Deno.remove(hung, { recursive: true });
    }
  });
});
