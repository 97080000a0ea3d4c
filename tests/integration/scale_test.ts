/**
 * End-to-end tests of `--scale` (supersampled output) through `vid render` and `vid still`:
 * a 320x180 layout at `--scale 2` gives 640x360 in every format (mp4, webm, gif, a PNG
 * sequence, a still), drawn at that size: its edges are sharper (more gradient energy)
 * than ffmpeg's upscale of the 1x render, and its layout is the same (the 1x render and a
 * downscale of the 2x one agree). Scales the encoders cannot take and values outside 1-4
 * are usage errors (exit 2) naming `--scale`.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  compositionHtml,
  imageDifference,
  makeProject,
  probeVideo,
  rgbFrames,
  runVid,
} from "../helpers.ts";

let project: string;
let scratch: string;

before(async () => {
  project = await makeProject(
    compositionHtml(
      `<p style="position:absolute;left:12px;top:8px;margin:0;font:bold 22px sans-serif;
         color:#000">Sharp text, ÅBÇ 0123</p>
       <svg style="position:absolute;left:20px;top:70px" width="200" height="90">
         <circle cx="45" cy="45" r="40" fill="none" stroke="#c00" stroke-width="1"/>
         <line x1="100" y1="5" x2="195" y2="85" stroke="#00c" stroke-width="1"/>
       </svg>`,
      {
        id: "scale",
        duration: 0.5,
        head: "<style>html, body { background: #fff; }</style>",
      },
    ),
    {
      "wide.html": compositionHtml("", { id: "wide", width: 2200, height: 100, duration: 0.5 }),
    },
  );
  scratch = await Deno.makeTempDir({ prefix: "vid-test-scale-" });
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

async function render(output: string, extra: string[]): Promise<void> {
  const result = await runVid(["render", project, "-o", output, "--fps", "10", ...extra]);
  assert.equal(result.code, 0, result.stderr);
}

/** Mean squared luma gradient of an RGB image: higher when edges are sharper. */
function gradientEnergy(rgb: Uint8Array, width: number, height: number): number {
  const luma = (x: number, y: number): number => {
    const i = (y * width + x) * 3;
    return 0.299 * rgb[i] + 0.587 * rgb[i + 1] + 0.114 * rgb[i + 2];
  };
  let sum = 0;
  for (let y = 0; y < height - 1; y++) {
    for (let x = 0; x < width - 1; x++) {
      const here = luma(x, y);
      sum += (luma(x + 1, y) - here) ** 2 + (luma(x, y + 1) - here) ** 2;
    }
  }
  return sum / ((width - 1) * (height - 1));
}

/** Runs ffmpeg with `args`; throws with its stderr. */
async function ffmpeg(args: string[]): Promise<void> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-v", "error", "-y", ...args],
    stdout: "null",
    stderr: "piped",
  }).output();
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
}

describe("--scale", () => {
  it("--scale 2 doubles the frame and draws at that size: sharper than an upscale of 1x", async () => {
    const one = `${scratch}/one.mp4`;
    const two = `${scratch}/two.mp4`;
    await render(one, ["--quality", "high"]);
    await render(two, ["--quality", "high", "--scale", "2"]);
    const info = await probeVideo(two);
    assert.deepEqual([info.width, info.height, info.frames], [640, 360, 5]);
    const upscaled = `${scratch}/upscaled.mp4`;
    await ffmpeg(["-i", one, "-vf", "scale=640:360:flags=lanczos", "-crf", "12", upscaled]);
    const [drawn] = await rgbFrames(two, 640, 360);
    const [stretched] = await rgbFrames(upscaled, 640, 360);
    const sharp = gradientEnergy(drawn, 640, 360);
    const soft = gradientEnergy(stretched, 640, 360);
    assert.ok(sharp > soft * 1.5, `gradient energy at --scale 2: ${sharp}, upscaled 1x: ${soft}`);
    // The same layout: the 2x frame scaled down is the 1x frame, near enough.
    const down = `${scratch}/down.mp4`;
    await ffmpeg(["-i", two, "-vf", "scale=320:180:flags=area", "-crf", "12", down]);
    const [small] = await rgbFrames(down, 320, 180);
    const [native] = await rgbFrames(one, 320, 180);
    const { mean } = imageDifference(small, native);
    assert.ok(mean < 6, `2x scaled down differs from 1x by ${mean} on average`);
  });

  it("every format and vid still come out at twice the size", async () => {
    for (const name of ["two.webm", "two.gif"]) {
      const output = `${scratch}/${name}`;
      await render(output, ["--scale", "2", "--frames", "0-1"]);
      const info = await probeVideo(output);
      assert.deepEqual([info.width, info.height], [640, 360], name);
    }
    await render(`${scratch}/seq/%03d.png`, ["--scale", "2", "--frames", "0-1"]);
    const frame = await probeVideo(`${scratch}/seq/000.png`);
    assert.deepEqual([frame.width, frame.height], [640, 360]);
    const still = await runVid([
      "still",
      project,
      "--scale",
      "2",
      "-o",
      `${scratch}/still.png`,
      "--json",
    ]);
    assert.equal(still.code, 0, still.stderr);
    const summary = JSON.parse(still.stdout);
    assert.deepEqual([summary.width, summary.height], [640, 360]);
    const image = await probeVideo(`${scratch}/still.png`);
    assert.deepEqual([image.width, image.height], [640, 360]);
  });

  it("refuses a scale outside 1-4 and one the encoders cannot take (exit 2, no output)", async () => {
    for (const value of ["0", "5", "1.5", "two"]) {
      const result = await runVid(["render", project, "--scale", value, "-o", `${scratch}/x.mp4`]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /--scale: must be an integer from 1 to 4/);
    }
    const output = `${scratch}/wide.mp4`;
    const result = await runVid([
      "render",
      project,
      "-c",
      "wide.html",
      "--scale",
      "4",
      "-o",
      output,
    ]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(
      result.stderr,
      /--scale: 4 makes a 8800x400 frame, larger than the 8192 pixels a side the encoders take; use --scale 3 or less/,
    );
    await assert.rejects(Deno.stat(output), Deno.errors.NotFound);
  });
});
