/**
 * A HyperFrames page whose first composition element is not the one that carries the video's
 * length, as HyperFrames' `airbnb-deck` example: a `<canvas data-composition-id>` with no
 * `data-duration` and no sub-compositions comes first, and the composition of the scenes
 * (`data-duration`, sub-compositions) after it, its timeline the only one the page registers.
 * HyperFrames' runtime takes the first composition element as the root and, as it has no
 * timeline of its own, the page's sole registered timeline for its length; vid renders it
 * the same length (docs/hyperframes.md, "The root composition and its length"), through
 * `vid render`, `vid still` and `vid info`. An inline module whose import of another host does
 * not load (airbnb-deck's Three.js from jsDelivr) fails the render by that URL and the fix.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import { makeProject, near, rgbFrames, ROOT, runVid } from "../helpers.ts";

const GSAP = join(ROOT, "node_modules", "gsap", "dist", "gsap.min.js");

/** The scenes: red 0-0.5 s, blue 0.5-1 s, in a 1 s composition after a canvas. */
const PAGE = `<!doctype html>
<html>
  <head>
    <meta charset="utf-8">
    <script src="gsap.min.js"></script>
    <style>
      html, body { margin: 0; background: #000; }
      #backdrop { position: absolute; inset: 0; width: 320px; height: 180px; }
      .scene { position: absolute; inset: 0; width: 320px; height: 180px; }
    </style>
  </head>
  <body>
    <canvas id="backdrop" data-composition-id="backdrop" data-start="0" data-width="320"
      data-height="180"></canvas>
    <div id="root" data-composition-id="root" data-start="0" data-duration="1" data-width="320"
      data-height="180" style="position: relative; width: 320px; height: 180px; overflow: hidden">
      <div class="scene" data-composition-id="first" data-start="0" data-duration="0.5"
        data-track-index="1" style="background: #ff0000"></div>
      <div class="scene" data-composition-id="second" data-start="0.5" data-duration="0.5"
        data-track-index="1" style="background: #0000ff"></div>
      <script>
        window.__timelines = window.__timelines || {};
        const tl = gsap.timeline({ paused: true });
        tl.to({}, { duration: 1 });
        window.__timelines["root"] = tl;
      </script>
    </div>
  </body>
</html>`;

let dir: string;

before(async () => {
  dir = await makeProject(PAGE);
  await copyFile(GSAP, join(dir, "gsap.min.js"));
});

after(async () => {
  await Deno.remove(dir, { recursive: true });
});

/** The colour at the frame's centre. */
function centre(frame: Uint8Array): number[] {
  const at = 3 * (90 * 320 + 160);
  return Array.from(frame.subarray(at, at + 3));
}

describe("a first composition element with no length, the page's sole timeline another's", () => {
  it("vid render renders it (exit 0) for that timeline's composition's length, its scenes in their windows", async () => {
    const out = join(dir, "out.mp4");
    const result = await runVid(["render", dir, "-o", out]);
    assert.equal(result.code, 0, result.stderr);
    const frames = await rgbFrames(out, 320, 180);
    assert.equal(frames.length, 30);
    assert.ok(near(centre(frames[5]), [255, 0, 0], 24), `frame 5: ${centre(frames[5])}`);
    assert.ok(near(centre(frames[20]), [0, 0, 255], 24), `frame 20: ${centre(frames[20])}`);
  });

  it("vid still at 0.8 s draws the second scene, and vid info gives 1 s", async () => {
    const out = join(dir, "still.png");
    const still = await runVid(["still", dir, "-o", out, "--time", "0.8"]);
    assert.equal(still.code, 0, still.stderr);
    const frame = (await rgbFrames(out, 320, 180))[0];
    assert.ok(near(centre(frame), [0, 0, 255], 24), `${centre(frame)}`);
    const info = await runVid(["info", dir, "--json"]);
    assert.equal(info.code, 0, info.stderr);
    assert.equal(JSON.parse(info.stdout).duration, 1);
  });

  // HyperFrames' explicit root marker: the marked element is the root wherever it stands, its
  // length and its variables (bound as CSS custom properties on it) are the video's.
  it('data-root="true" makes a later composition element the root: its length and its variables', async () => {
    const marked = await makeProject(
      PAGE.replace(/<script>\s*window\.__timelines[\s\S]*?<\/script>/, "")
        .replace(
          'id="root" data-composition-id="root"',
          'id="root" data-composition-id="root" data-root="true" ' +
            `data-composition-variables='[{"id": "accent", "type": "color", "default": "#ff0000"}]'`,
        )
        .replace('style="background: #0000ff"', 'style="background: var(--accent)"'),
    );
    try {
      await copyFile(GSAP, join(marked, "gsap.min.js"));
      const info = await runVid(["info", marked, "--json"]);
      assert.equal(info.code, 0, info.stderr);
      assert.equal(JSON.parse(info.stdout).id, "root");
      assert.equal(JSON.parse(info.stdout).duration, 1);
      const out = join(marked, "still.png");
      const args = ["still", marked, "-o", out, "--time", "0.8"];
      const still = await runVid([...args, "--variables", '{"accent": "#00ff00"}']);
      assert.equal(still.code, 0, still.stderr);
      const frame = (await rgbFrames(out, 320, 180))[0];
      assert.ok(near(centre(frame), [0, 255, 0], 24), `${centre(frame)}`);
      // Unmarked, the canvas is the root: no length of its own and no timeline to take one from.
      await Deno.writeTextFile(
        join(marked, "index.html"),
        (await Deno.readTextFile(join(marked, "index.html"))).replace(' data-root="true"', ""),
      );
      const unmarked = await runVid(["info", marked, "--json"]);
      assert.equal(unmarked.code, 1, unmarked.stdout);
      assert.equal(JSON.parse(unmarked.stdout).error.field, "data-duration");
    } finally {
      await Deno.remove(marked, { recursive: true });
    }
  });

  // airbnb-deck imports Three.js from jsDelivr in an inline module; a host that cannot reach it
  // ran the page without the module (its element fires only "error", no URL), silently.
  it("an inline module whose import does not load fails the render, naming the URL and vid add three", async () => {
    const cdn = "http://127.0.0.1:9/npm/three@0.160.0/build/three.module.js";
    const broken = await makeProject(PAGE.replace(
      "</body>",
      `<script type="module">import * as THREE from "${cdn}";\nwindow.three = THREE;</script></body>`,
    ));
    try {
      await copyFile(GSAP, join(broken, "gsap.min.js"));
      const output = join(broken, "out.mp4");
      const result = await runVid(["render", broken, "-o", output]);
      assert.equal(result.code, 1, result.stderr);
      const line = result.stderr.split("\n").find((l) => l.startsWith("error: ")) ?? "";
      assert.equal(
        line,
        `error: <script type="module"> import "${cdn}" did not load (unreachable, or it answered ` +
          "an error); run `vid add three` in the project and import ./lib/three.module.js, so " +
          "the project carries its own copy",
      );
      assert.equal(await Deno.stat(output).then(() => true, () => false), false, "no output");
    } finally {
      await Deno.remove(broken, { recursive: true });
    }
  });
});
