/**
 * Frame rates: the one parser (integers, NTSC decimals, fractions, the 1-240 range),
 * `data-fps` on the composition root, and a real render at 29.97 fps checked with
 * ffprobe (r_frame_rate 30000/1001, frame count) and by the colour of the frame that
 * falls exactly on t = 15 × 1001 / 30000 s.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  ffmpegRate,
  formatFrameRate,
  frameCountOf,
  FrameRateError,
  frameRateValue,
  frameTime,
  parseFrameRate,
} from "../../src/composition/frame_rate.ts";
import { parseComposition } from "../../src/composition/composition.ts";
import { CompositionError } from "../../src/composition/errors.ts";
import { renderComposition, RenderOptionError } from "../../src/render/render.ts";
import { compositionHtml, makeProject, near, pixelSeries, rgb, runVid } from "../helpers.ts";

const NTSC = { num: 30000, den: 1001 };

describe("parseFrameRate", () => {
  it("reads integers, NTSC decimals and fractions", () => {
    assert.deepEqual(parseFrameRate("30"), { num: 30, den: 1 });
    assert.deepEqual(parseFrameRate(60), { num: 60, den: 1 });
    assert.deepEqual(parseFrameRate("29.97"), NTSC);
    assert.deepEqual(parseFrameRate(29.97), NTSC);
    assert.deepEqual(parseFrameRate("29.970"), NTSC);
    assert.deepEqual(parseFrameRate("30000/1001"), NTSC);
    assert.deepEqual(parseFrameRate(" 60000 / 1001 "), { num: 60000, den: 1001 });
    assert.deepEqual(parseFrameRate("23.976"), { num: 24000, den: 1001 });
    assert.deepEqual(parseFrameRate("23.98"), { num: 24000, den: 1001 });
    assert.deepEqual(parseFrameRate("59.94"), { num: 60000, den: 1001 });
    assert.deepEqual(parseFrameRate("119.88"), { num: 120000, den: 1001 });
    assert.deepEqual(parseFrameRate("12.5"), { num: 25, den: 2 });
    assert.deepEqual(parseFrameRate("60/2"), { num: 30, den: 1 });
  });

  it("maps a rate's value back to the same fraction", () => {
    for (const text of ["29.97", "23.976", "59.94", "12.5", "100/3", "24", "240"]) {
      const rate = parseFrameRate(text);
      assert.deepEqual(parseFrameRate(frameRateValue(rate)), rate, text);
    }
  });

  it("refuses what is not a rate or out of 1-240, naming the field", () => {
    for (const bad of ["0", "241", "0.5", "abc", "30fps", "-30", "1e2", "1/0", "30/1002", ""]) {
      assert.throws(
        () => parseFrameRate(bad, "--fps"),
        (error: unknown) =>
          error instanceof FrameRateError && error.field === "--fps" &&
          error.message.startsWith("--fps: "),
        bad,
      );
    }
    assert.throws(() => parseFrameRate(Number.NaN), FrameRateError);
    assert.throws(() => parseFrameRate(240.5), /from 1 to 240/);
  });

  it("times, counts and formats frames exactly", () => {
    assert.equal(frameTime(30, NTSC), 1.001);
    assert.equal(frameTime(15, NTSC), 0.5005);
    assert.equal(frameCountOf(1, NTSC), 30);
    assert.equal(frameCountOf(10, NTSC), 300);
    assert.equal(frameCountOf(1.5, { num: 25, den: 1 }), 38);
    assert.equal(frameCountOf(2.3, { num: 30, den: 1 }), 69);
    assert.equal(frameCountOf(0.001, { num: 30, den: 1 }), 1);
    assert.equal(ffmpegRate(NTSC), "30000/1001");
    assert.equal(ffmpegRate({ num: 30, den: 1 }), "30");
    assert.equal(formatFrameRate(NTSC), "29.97");
    assert.equal(formatFrameRate({ num: 24000, den: 1001 }), "23.976");
  });
});

describe("data-fps", () => {
  const root = (fps: string) =>
    `<div data-composition-id="c" data-width="320" data-height="180" data-duration="1" ` +
    `data-fps="${fps}"></div>`;

  it("is read from the composition root", () => {
    assert.deepEqual(parseComposition(root("29.97"), "/tmp/c/index.html").fps, NTSC);
    assert.deepEqual(parseComposition(root("25"), "/tmp/c/index.html").fps, { num: 25, den: 1 });
    const plain = parseComposition(root("30").replace(/ data-fps="30"/, ""), "/tmp/c/index.html");
    assert.equal(plain.fps, undefined);
    assert.equal("fps" in plain, false);
  });

  it("a bad data-fps is a CompositionError naming the attribute", () => {
    assert.throws(
      () => parseComposition(root("fast"), "/tmp/c/index.html"),
      (error: unknown) =>
        error instanceof CompositionError && error.field === "data-fps" &&
        /data-fps: must be an integer from 1 to 240/.test(error.message),
    );
  });
});

/** ffprobe's r_frame_rate of the video stream, as written ("30000/1001"). */
async function rFrameRate(file: string): Promise<string> {
  const out = await new Deno.Command("ffprobe", {
    args: [
      "-v",
      "error",
      "-select_streams",
      "v:0",
      "-count_frames",
      "-show_entries",
      "stream=r_frame_rate,nb_read_frames",
      "-of",
      "csv=p=0",
      file,
    ],
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

/** Seconds of the audio stream. */
async function audioDuration(file: string): Promise<number> {
  const out = await new Deno.Command("ffprobe", {
    args: [
      "-v",
      "error",
      "-select_streams",
      "a:0",
      "-show_entries",
      "stream=duration",
      "-of",
      "csv=p=0",
      file,
    ],
    stdout: "piped",
  }).output();
  return Number(new TextDecoder().decode(out.stdout).trim());
}

const RED = [255, 0, 0];
const BLUE = [0, 0, 255];

describe("rendering at 29.97 fps", () => {
  let project: string;

  before(async () => {
    // Blue from t = 0.5005 s: frame 15 at 30000/1001 fps (15 × 1001 / 30000 s exactly);
    // at 30 fps frame 15 is t = 0.5 and still red.
    const html = compositionHtml(
      '<div id="box" style="position:absolute;inset:0;background:#ff0000"></div>',
      {
        id: "ntsc",
        after: `<audio src="tone.wav"></audio><script>
window.__vid.onSeek((t) => {
  document.getElementById("box").style.background = t >= 0.5005 ? "#0000ff" : "#ff0000";
});
</script>`,
      },
    ).replace('data-duration="1"', 'data-duration="2" data-fps="29.97"');
    project = await makeProject(html);
    const tone = await new Deno.Command("ffmpeg", {
      args: [
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "sine=frequency=440:duration=3",
        `${project}/tone.wav`,
      ],
    }).output();
    assert.equal(tone.code, 0);
  });

  after(async () => {
    await Deno.remove(project, { recursive: true });
  });

  it("data-fps 29.97: 60 frames in 2 chunks, r_frame_rate 30000/1001, frame 15 exactly at 0.5005 s", async () => {
    const output = `${project}/renders/ntsc.mp4`;
    // Chunks are whole cells of the 1-second GOP grid (30 frames at 29.97): two of them, so
    // the join's timestamps are checked too.
    const result = await renderComposition({ target: project, output, chunkSize: 30 });
    assert.deepEqual(result.frameRate, NTSC);
    assert.equal(result.frames, 60);
    assert.equal(result.chunks, 2);
    assert.equal(result.durationSeconds, 2.002);
    assert.equal(await rFrameRate(output), "30000/1001,60");
    const colours = await pixelSeries(output, 160, 90);
    assert.equal(colours.length, 60);
    assert.ok(near(colours[14], RED), `frame 14 is ${rgb(colours[14])}`);
    assert.ok(near(colours[15], BLUE), `frame 15 is ${rgb(colours[15])}`);
    // The soundtrack is cut to the video's 60 frames × 1001/30000 s.
    const audio = await audioDuration(output);
    assert.ok(Math.abs(audio - 2.002) < 0.03, `audio lasts ${audio} s`);
  });

  it("vid render --fps wins over data-fps; vid still maps --time at the composition's rate", async () => {
    const output = `${project}/renders/ten.mp4`;
    const render = await runVid(["render", project, "--fps", "10", "-o", output]);
    assert.equal(render.code, 0, render.stderr);
    assert.match(render.stdout, /20 frames, 320x180, 10 fps/);
    assert.equal(await rFrameRate(output), "10/1,20");

    const fraction = await runVid([
      "render",
      project,
      "--fps",
      "30000/1001",
      "--frames",
      "14-15",
      "-o",
      `${project}/renders/two.mp4`,
      "--json",
    ]);
    assert.equal(fraction.code, 0, fraction.stderr);
    assert.deepEqual(JSON.parse(fraction.stdout).frameRate, NTSC);

    const still = await runVid([
      "still",
      project,
      "--time",
      "0.5005",
      "-o",
      `${project}/renders/still.png`,
      "--json",
    ]);
    assert.equal(still.code, 0, still.stderr);
    const body = JSON.parse(still.stdout);
    assert.equal(body.frame, 15);
    assert.equal(body.time, 0.5005);
  });

  it("--fps refuses a rate outside 1-240 or a malformed one (exit 2, names the flag)", async () => {
    for (const bad of ["241", "29,97", "0"]) {
      const result = await runVid(["render", project, "--fps", bad]);
      assert.equal(result.code, 2, bad);
      assert.match(result.stderr, /--fps: must be/);
    }
    await assert.rejects(
      renderComposition({ target: project, fps: "300" }),
      // The SDK names its own option; the flag rides along for the CLI.
      (error: unknown) =>
        error instanceof RenderOptionError && error.field === "fps" && error.flag === "--fps",
    );
  });
});
