/**
 * A `<video>` that comes into the picture is drawn on the frame it comes in. Chromium shows a
 * video's own compositor surface a few BeginFrames after the video is seen again, and the
 * BeginFrames between draw nothing or the picture before: a render from frame 0 of
 * HyperFrames' play-mode example (its video drops in from above with a GSAP `elastic.out`
 * tween) had a white frame 1, where `vid still` drew the video. The capturer now draws on,
 * on such a frame, until the picture has changed (`src/render/capture.ts`).
 *
 * Real Chromium (BeginFrame) and ffmpeg; the example's motion at 320x180, with a 1080p clip
 * of one colour (a 320x180 clip came in on time in 2 runs of 3 before the fix, this one in
 * none of 9).
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  compositionHtml,
  gsapSource,
  lavfi,
  makeProject,
  near,
  rgb,
  rgbFrames,
  runVid,
} from "../helpers.ts";

/** The clip's one colour. */
const BLUE = [0x20, 0x50, 0xe0];
const WHITE = [255, 255, 255];

/** The video drops in from 400 px above the frame, as play-mode's does, from frame 0. */
const DROP_IN = compositionHtml(
  `<video id="clip" src="clip.mp4" muted></video>`,
  {
    id: "drop-in",
    head: `<script src="gsap.min.js"></script><style>
html, body { background: #fff; }
#clip { position: absolute; left: 0; top: 0; width: 320px; height: 180px; }
</style>`,
    after: `<script>
const tl = gsap.timeline({ paused: true });
tl.from("#clip", { y: -400, duration: 0.8, ease: "elastic.out(1, 0.5)" }, 0);
window.__timelines["drop-in"] = tl;
</script>`,
  },
);

/** Points inside the video on frame 1 (t = 0.1 s at 10 fps). */
const POINTS: ReadonlyArray<readonly [number, number]> = [[160, 90], [20, 160], [300, 160]];

let project: string;

before(async () => {
  project = await makeProject(DROP_IN, { "gsap.min.js": await gsapSource() });
  await lavfi(
    `color=0x${BLUE.map((c) => c.toString(16).padStart(2, "0")).join("")}:s=1920x1080:r=30:d=1`,
    join(project, "clip.mp4"),
    ["-c:v", "libx264", "-pix_fmt", "yuv420p"],
  );
});

after(async () => {
  await Deno.remove(project, { recursive: true });
});

/** The colour of pixel (x, y) of an RGB frame 320 wide. */
function pixel(frame: Uint8Array, x: number, y: number): number[] {
  const i = (y * 320 + x) * 3;
  return Array.from(frame.subarray(i, i + 3));
}

describe("a <video> coming into the picture", () => {
  it("is drawn on the frame it comes in, in a render from frame 0, as vid still draws that frame", async () => {
    const video = join(project, "out.mp4");
    const rendered = await runVid([
      "render",
      project,
      "-o",
      video,
      "--fps",
      "10",
      "--frames",
      "0-2",
      "--workers",
      "1",
    ]);
    assert.equal(rendered.code, 0, rendered.stderr);
    const still = join(project, "still-1.png");
    const stilled = await runVid(["still", project, "--frame", "1", "--fps", "10", "-o", still]);
    assert.equal(stilled.code, 0, stilled.stderr);
    const frames = await rgbFrames(video, 320, 180);
    assert.equal(frames.length, 3);
    const [expected] = await rgbFrames(still, 320, 180);
    // Frame 0: the video is still above the picture, all white.
    for (const [x, y] of POINTS) {
      assert.ok(near(pixel(frames[0], x, y), WHITE), `frame 0 at ${x},${y}`);
    }
    for (const [x, y] of POINTS) {
      const got = pixel(frames[1], x, y);
      assert.ok(near(got, BLUE, 12), `frame 1 at ${x},${y} is ${rgb(got)}, not the clip's blue`);
      const want = pixel(expected, x, y);
      assert.ok(near(got, want, 12), `frame 1 at ${x},${y}: ${rgb(got)}, vid still ${rgb(want)}`);
    }
  });
});
