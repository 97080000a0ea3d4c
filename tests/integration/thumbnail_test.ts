/**
 * Server thumbnails come from the finished video (no second browser session): the frame
 * 1 s in (or halfway through a shorter video), as JPEG; a transparent video (webm VP9 alpha,
 * mov ProRes 4444) is laid on white, as a browser shows a page without a background.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { renderComposition } from "../../src/render/render.ts";
import { thumbnailFromVideo, thumbnailTime } from "../../src/server/queue/thumbnail.ts";
import { compositionHtml, makeProject, near, pixelSeries, probeVideo, rgb } from "../helpers.ts";

/**
 * Left half red, right half transparent; a green square only from 0.4 s on, a blue one only
 * until 0.6 s: both show in the frame 0.5 s in.
 */
const HTML = compositionHtml(
  `<div id="half"></div><div id="late"></div><div id="early"></div>`,
  {
    id: "thumbnail",
    duration: 1,
    head: `<style>
html, body { background: transparent; }
#half { position: absolute; left: 0; top: 0; width: 160px; height: 180px; background: #f00; }
#late { position: absolute; left: 200px; top: 20px; width: 40px; height: 40px;
  background: #0f0; opacity: 0; animation: show 0.01s step-end 0.4s forwards; }
#early { position: absolute; left: 260px; top: 20px; width: 40px; height: 40px;
  background: #00f; animation: hide 0.01s step-end 0.6s forwards; }
@keyframes show { to { opacity: 1; } }
@keyframes hide { to { opacity: 0; } }
</style>`,
  },
);

describe("server thumbnails from the finished video", () => {
  let project: string;
  let dir: string;

  before(async () => {
    [project, dir] = await Promise.all([
      makeProject(HTML),
      Deno.makeTempDir({ prefix: "vid-thumb-" }),
    ]);
  });

  after(async () => {
    if (project) await Deno.remove(project, { recursive: true });
    if (dir) await Deno.remove(dir, { recursive: true });
  });

  it("is taken 1 s in, or halfway through a shorter video", () => {
    assert.equal(thumbnailTime(10), 1);
    assert.equal(thumbnailTime(1), 0.5);
    assert.equal(thumbnailTime(0.4), 0.2);
  });

  for (const format of ["mp4", "webm", "mov"] as const) {
    it(`${format}: a JPEG of the frame at the thumbnail time${format === "mp4" ? "" : ", transparency on white"}`, async () => {
      const video = join(dir, `video.${format}`);
      await renderComposition({ target: project, output: video, format, fps: 30 });
      const thumbnail = join(dir, `thumbnail-${format}.jpg`);
      await thumbnailFromVideo(video, 1, thumbnail);
      const bytes = await Deno.readFile(thumbnail);
      assert.deepEqual([...bytes.slice(0, 2)], [0xff, 0xd8]);
      const info = await probeVideo(thumbnail);
      assert.deepEqual([info.width, info.height], [320, 180]);
      const [red] = await pixelSeries(thumbnail, 80, 90);
      const [page] = await pixelSeries(thumbnail, 280, 150);
      const [late] = await pixelSeries(thumbnail, 220, 40);
      assert.ok(near(red, [255, 0, 0], 12), `left half: ${rgb(red)}`);
      assert.ok(near(page, [255, 255, 255], 12), `page: ${rgb(page)}`);
      const [early] = await pixelSeries(thumbnail, 280, 40);
      assert.ok(near(late, [0, 255, 0], 16), `shown from 0.4 s: ${rgb(late)}`);
      assert.ok(near(early, [0, 0, 255], 16), `shown until 0.6 s: ${rgb(early)}`);
    });
  }
});
