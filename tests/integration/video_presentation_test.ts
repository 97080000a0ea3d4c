/**
 * Seeked `<video>` frames are captured only once the compositor has presented them. Under
 * BeginFrame control a video's frame reaches the compositor on its own thread, so the draw
 * right after `seeked` may still show the previous frame (seen as a one-frame lag on a
 * loaded CI machine). The page runtime records which seeked videos await their
 * `requestVideoFrameCallback`; `seekFrame` returns that count and the capturer draws until
 * it is 0. A video the compositor never draws (`display: none`) is waited for once, then no
 * more, so it does not slow every frame (simulated by a page whose
 * `requestVideoFrameCallback` never calls back: Chromium presents even hidden videos).
 * A video whose seeked frame stays off screen until it is seeked again (seen on a fresh page
 * under load: every frame of the chunk came one late) is seeked again while the capturer
 * waits (simulated by a page whose `requestVideoFrameCallback` holds back each video's
 * frames until its second seek).
 *
 * Real Chromium (headless shell, BeginFrame) and ffmpeg; a 25 fps clip.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { evaluate, seekFrame } from "../../src/render/capture.ts";
import { openRenderSession, prepareComposition } from "../../src/render/session.ts";
import { openComposition } from "../../src/render/render_chunk.ts";
import {
  compositionHtml,
  indexedClip,
  lavfi,
  makeProject,
  STUCK_UNTIL_RESEEKED,
} from "../helpers.ts";

const VIDEOS =
  `<video src="clip.mp4" muted style="position:absolute;left:0;top:0;width:320px;height:180px;object-fit:fill"></video>` +
  `<video src="clip.mp4" muted style="display:none"></video>`;

/** A page where no video frame is ever reported presented. */
const NEVER_PRESENTED = `<script>
HTMLVideoElement.prototype.requestVideoFrameCallback = function () { return 1; };
</script>`;

let project: string;

before(async () => {
  project = await makeProject(compositionHtml(VIDEOS, { id: "presented", duration: 1 }), {
    "never.html": compositionHtml(VIDEOS, { id: "never", duration: 1, head: NEVER_PRESENTED }),
    "stuck.html": compositionHtml(VIDEOS, { id: "stuck", duration: 1, head: STUCK_UNTIL_RESEEKED }),
  });
  await lavfi(
    indexedClip(25, 1),
    `${project}/clip.mp4`,
    ["-c:v", "libx264", "-pix_fmt", "yuv420p"],
  );
});

after(async () => {
  await Deno.remove(project, { recursive: true });
});

/** Seeks and captures frames 0-5 of `composition`; what seekFrame returned, and what was left after each capture, and the ms per capture. */
async function seekAndCapture(
  composition: string,
): Promise<{ pending: number[]; left: number[]; ms: number[] }> {
  const prepared = await prepareComposition({ target: project, composition });
  const session = await openRenderSession({
    prepared,
    frameRate: { num: 30, den: 1 },
    format: "mp4",
    capture: "beginframe",
  });
  try {
    assert.equal(session.browser.mode, "beginframe");
    const page = session.takePage() ?? await openComposition(session.browser, session.spec);
    try {
      const pending: number[] = [];
      const left: number[] = [];
      const ms: number[] = [];
      for (let frame = 0; frame < 6; frame++) {
        const videos = await seekFrame(page.page, frame);
        pending.push(videos.pending);
        const start = performance.now();
        await page.capturer.capture(videos);
        ms.push(performance.now() - start);
        left.push(Number(await evaluate(page.page, "window.__vid.videoFramesPending()")));
      }
      return { pending, left, ms };
    } finally {
      await page.close();
    }
  } finally {
    await session.close();
  }
}

describe("video frame presentation before capture (beginframe)", () => {
  it("waits for each seeked video's new frame to be presented", async () => {
    const { pending, left } = await seekAndCapture("index.html");
    // 30 fps over a 25 fps source: frames 0-5 show source frames 0,0,1,2,3,4, so frame 1
    // seeks nothing; the others seek both videos (the hidden one is presented too).
    assert.deepEqual(pending, [2, 0, 2, 2, 2, 2]);
    assert.deepEqual(left, [0, 0, 0, 0, 0, 0]);
  });

  it("a video never reported presented is waited for on one frame only (rVFC stubbed in the page)", async () => {
    const { pending, left, ms } = await seekAndCapture("never.html");
    assert.deepEqual(pending, [2, 0, 0, 0, 0, 0]);
    assert.deepEqual(left, [2, 0, 0, 0, 0, 0]);
    // The first capture gave up after its bounded wait; the later ones did not wait.
    assert.ok(ms[0] > 1000, `first capture ${ms[0]} ms`);
    assert.ok(ms.slice(2).every((t) => t < ms[0] / 2), `captures ${ms.map(Math.round)} ms`);
  });

  it("a video whose seeked frame is reported only after another seek is seeked again, and still waited for on later frames (rVFC held back by a stub in the page)", async () => {
    const { pending, left, ms } = await seekAndCapture("stuck.html");
    // Frame 0 waits until the capturer seeks both videos again (about 0.2 s in), well before
    // its bounded wait would give up; the videos stay waited for afterwards. On code without
    // the second seek, frame 0 gives up and no later frame waits: [2, 0, 0, 0, 0, 0].
    assert.deepEqual(pending, [2, 0, 2, 2, 2, 2]);
    assert.deepEqual(left, [0, 0, 0, 0, 0, 0]);
    assert.ok(ms[0] < 1000, `first capture ${Math.round(ms[0])} ms`);
  });
});
