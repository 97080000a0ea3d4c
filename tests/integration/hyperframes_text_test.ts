/**
 * HyperFrames' text rule (`html,body,*{text-rendering:geometricPrecision}`, first in `<head>`,
 * as HyperFrames' compiler writes it into every composition it renders) in a HyperFrames
 * project only (src/composition/text_rendering.ts, src/runtime/text_rendering.ts):
 *
 * - `vid still` and `vid render` of a HyperFrames-like page (a clip with `data-track-index`)
 *   draw its text with the rule, which the page's first script already sees first in its head
 *   (a probe square it paints green); `VID_HYPERFRAMES_TEXT_RENDERING=0` turns it off and the
 *   text moves;
 * - a vid composition, the same page without HyperFrames' markers, gets no rule: its still is
 *   the same, byte for byte, with the opt-out or without;
 * - the studio's stage page and `<vid-player>`'s page of a fetched composition ask the runtime
 *   for the rule for the HyperFrames page only.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { imageDifference, makeProject, near, rgb, rgbFrames, runVid } from "../helpers.ts";
import { startPreview } from "../../src/preview/server.ts";
import { srcdocPage } from "../../src/player/remote_page.ts";

/** A page of text at 320x180; `hyperframes` adds a HyperFrames clip's `data-track-index`. */
function page(hyperframes: boolean): string {
  const clip = hyperframes
    ? ` class="clip" data-start="0" data-duration="1" data-track-index="0"`
    : "";
  return `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: 320px; height: 180px; overflow: hidden; background: #fff; }
#root { position: relative; width: 320px; height: 180px; }
p { position: absolute; left: 7px; top: 40px; width: 300px; margin: 0; color: #000;
  font: 21px/1.3 serif; }
#probe { position: absolute; left: 0; top: 0; width: 20px; height: 20px; background: #f00; }
</style>
<script>
  // The page's first script: is the rule first in the head, and in effect?
  window.ruleSeen =
    document.head.firstElementChild?.getAttribute("data-hyperframes-text-rendering") === "true" &&
    getComputedStyle(document.documentElement).textRendering === "geometricprecision";
</script>
</head><body>
<div id="root" data-composition-id="text" data-width="320" data-height="180" data-duration="1">
  <p${clip}>Sphinx of black quartz, judge my vow. The five boxing wizards jump quickly 0123456789.</p>
  <div id="probe"></div>
</div>
<script>if (window.ruleSeen) document.getElementById("probe").style.background = "#0f0";</script>
</body></html>`;
}

const OFF = { VID_HYPERFRAMES_TEXT_RENDERING: "0" };
const GREEN = [0, 255, 0];
const RED = [255, 0, 0];

let hf: string;
let plain: string;

/** `vid still` of frame 0, as RGB bytes, and the PNG file's bytes. */
async function still(
  dir: string,
  name: string,
  env?: Record<string, string>,
): Promise<{ rgb: Uint8Array; png: Uint8Array }> {
  const out = join(dir, name);
  const result = await runVid(["still", dir, "-o", out], { env });
  assert.equal(result.code, 0, result.stderr);
  return { rgb: (await rgbFrames(out, 320, 180))[0], png: await Deno.readFile(out) };
}

/** The probe square's colour (the page's script saw the rule: green). */
function probe(frame: Uint8Array): number[] {
  const at = 3 * (10 * 320 + 10);
  return [...frame.subarray(at, at + 3)];
}

/** The rows of text, below the probe. */
function text(frame: Uint8Array): Uint8Array {
  return frame.subarray(3 * 320 * 30);
}

before(async () => {
  hf = await makeProject(page(true));
  plain = await makeProject(page(false));
});

after(async () => {
  await Deno.remove(hf, { recursive: true });
  await Deno.remove(plain, { recursive: true });
});

describe("HyperFrames' text rule", () => {
  it("a HyperFrames project's still has it before its first script; the opt-out moves the text", async () => {
    const on = await still(hf, "on.png");
    assert.ok(near(probe(on.rgb), GREEN), `the rule first in <head>: ${rgb(probe(on.rgb))}`);
    const off = await still(hf, "off.png", OFF);
    assert.ok(near(probe(off.rgb), RED), `no rule with the opt-out: ${rgb(probe(off.rgb))}`);
    const moved = imageDifference(text(on.rgb), text(off.rgb));
    assert.ok(moved.mean > 0.5, `the text is laid out differently: ${JSON.stringify(moved)}`);
  });

  it("vid render of a HyperFrames project has it too", async () => {
    const out = join(hf, "frame.mp4");
    const result = await runVid(["render", hf, "-o", out, "--frames", "0-0"]);
    assert.equal(result.code, 0, result.stderr);
    const frame = (await rgbFrames(out, 320, 180))[0];
    assert.ok(near(probe(frame), GREEN, 40), rgb(probe(frame)));
  });

  it("a vid composition has none: its still is byte for byte the same with the opt-out", async () => {
    const on = await still(plain, "on.png");
    assert.ok(near(probe(on.rgb), RED), rgb(probe(on.rgb)));
    const off = await still(plain, "off.png", OFF);
    assert.deepEqual(on.png, off.png);
  });

  it("the studio's stage and <vid-player>'s page ask the runtime for it in a HyperFrames project only", async () => {
    const flag = /"hyperframesTextRendering":true/;
    for (const [dir, expected] of [[hf, true], [plain, false]] as const) {
      const preview = await startPreview({ target: dir, port: 0 });
      try {
        const stage = await (await fetch(`${preview.url}index.html`)).text();
        assert.equal(flag.test(stage), expected, dir);
      } finally {
        await preview.close();
      }
      const { srcdoc } = srcdocPage(await Deno.readTextFile(join(dir, "index.html")), {
        url: "https://cdn.example/text/index.html",
        values: {},
        fps: "",
        epochMs: 0,
      });
      assert.equal(flag.test(srcdoc), expected, dir);
    }
  });
});
