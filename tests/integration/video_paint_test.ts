/**
 * Screenshot capture paints each `<video>`'s current frame in the page itself
 * (`src/runtime/video_paint.ts`): Chromium's own picture of a paused video can stay a seek
 * behind in that mode while `requestVideoFrameCallback` already reports the new frame (CI
 * saw every frame of a chunk come one late). A page that seeks its video once more after
 * each seek puts Chromium in that state on nearly every frame, so it stands in for the
 * condition here: without painting, its frames come one late. The painted frame keeps the
 * element's box, `object-fit`, `object-position`, padding, radius, opacity and own
 * background: the same page renders to the same pixels with BeginFrame capture.
 *
 * Real Chromium (headless shell, both capture modes) and ffmpeg, through `vid render`.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  compositionHtml,
  imageDifference,
  indexedClip,
  lavfi,
  makeProject,
  pixelSeries,
  rgbFrames,
  runVid,
} from "../helpers.ts";

/** The page's own script seeks its video again, 1 ms on, after every seek. */
const SEEKS_AGAIN = `<script>
addEventListener("DOMContentLoaded", () => {
  const video = document.querySelector("video");
  let again = true;
  video.addEventListener("seeked", () => {
    if (again) video.currentTime += 0.001;
    again = !again;
  });
});
</script>`;

const STYLED = `<div style="position:absolute;inset:0;background:#203048"></div>
<video src="clip.mp4" muted style="position:absolute;left:40px;top:10px;width:200px;height:140px;
  padding:6px;border-radius:18px;background:#f08000;object-fit:contain;object-position:0% 100%;
  opacity:0.85"></video>`;

let project: string;
let scratch: string;
/** Grey of every source frame. */
let clip: number[];

before(async () => {
  project = await makeProject(
    compositionHtml(
      `<video src="clip.mp4" muted style="position:absolute;left:0;top:0;width:320px;height:180px;object-fit:fill"></video>`,
      { id: "again", duration: 1.2, head: SEEKS_AGAIN },
    ),
    { "styled.html": compositionHtml(STYLED, { id: "styled", duration: 0.2 }) },
  );
  scratch = await Deno.makeTempDir({ prefix: "vid-test-paint-" });
  await lavfi(indexedClip(30, 1), `${project}/clip.mp4`, [
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
  ]);
  clip = (await pixelSeries(`${project}/clip.mp4`, 160, 90)).map((c) => c[0]);
  assert.equal(clip.length, 30);
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

async function render(composition: string, capture: string, name: string): Promise<string> {
  const output = `${scratch}/${name}.mp4`;
  const result = await runVid([
    "render",
    project,
    "-c",
    composition,
    "-o",
    output,
    "--capture",
    capture,
    "--json",
  ]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(JSON.parse(result.stdout).captureMode, capture);
  return output;
}

describe("video frames painted in the page (screenshot capture)", () => {
  it("every frame shows its source frame although the page seeks its video again after each seek", async () => {
    const output = await render("index.html", "screenshot", "again");
    const greys = (await pixelSeries(output, 160, 90)).map((c) => c[0]);
    assert.equal(greys.length, 36);
    // Frames 30-35 come after the clip's end: its last frame stays, painted once.
    const late = greys.flatMap((grey, n) => {
      const k = Math.min(n, 29);
      return Math.abs(grey - clip[k]) <= 4 ? [] : [`frame ${n}: grey ${grey}, want ${clip[k]}`];
    });
    assert.deepEqual(late, []);
  });

  it("a painted video keeps its box, fit, position, padding, radius, opacity and background (same pixels as beginframe)", async () => {
    const [shot, begin] = await Promise.all([
      render("styled.html", "screenshot", "styled-shot").then((f) => rgbFrames(f, 320, 180)),
      render("styled.html", "beginframe", "styled-begin").then((f) => rgbFrames(f, 320, 180)),
    ]);
    assert.equal(shot.length, 6);
    assert.equal(begin.length, 6);
    for (let n = 0; n < 6; n++) {
      const diff = imageDifference(shot[n], begin[n]);
      assert.ok(diff.mean < 2 && diff.share < 0.02, `frame ${n}: ${JSON.stringify(diff)}`);
    }
    // object-fit contain puts the 16:9 picture at the bottom of the 200x140 box (0% 100%):
    // the element's own orange shows above it, under the element's opacity.
    const at = (
      x: number,
      y: number,
    ) => [...shot[3].subarray((y * 320 + x) * 3, (y * 320 + x) * 3 + 3)];
    const orange = at(140, 30);
    assert.ok(
      orange[0] > 180 && orange[1] > 90 && orange[1] < 150 && orange[2] < 70,
      `letterbox ${orange}`,
    );
    const picture = at(140, 120);
    assert.ok(Math.abs(picture[0] - picture[2]) < 24, `picture is grey: ${picture}`);
  });
});
