/**
 * The recipe examples (examples/gsap, canvas, fonts, lottie, threejs, media, voiceover,
 * captions, supersampled), run as the README tells a designer to: copy the library in with
 * `vid add`, render a few frames, and check a pixel (or a level) that only the library (or
 * feature) could have drawn. Three.js renders in
 * both capture modes (WebGL on SwiftShader in headless Chromium).
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  frameHashes,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  rgbFrames,
  ROOT,
  runVid,
} from "../helpers.ts";
import { rmsDb } from "../audio_levels.ts";

let scratch: string;

before(async () => {
  scratch = await Deno.makeTempDir({ prefix: "vid-test-recipes-" });
});

after(async () => {
  await Deno.remove(scratch, { recursive: true });
});

/** Copies examples/<name> to a scratch folder and vendors `libraries` with `vid add`. */
async function example(name: string, libraries: string[] = [], as = name): Promise<string> {
  const dir = `${scratch}/${as}`;
  const copy = await new Deno.Command("cp", { args: ["-r", `${ROOT}examples/${name}`, dir] })
    .output();
  assert.equal(copy.code, 0);
  if (libraries.length > 0) {
    const added = await runVid(["add", ...libraries, "--dir", dir]);
    assert.equal(added.code, 0, added.stderr);
  }
  return dir;
}

async function render(dir: string, output: string, flags: string[]): Promise<string> {
  const file = `${scratch}/${output}`;
  const result = await runVid(["render", dir, "-o", file, ...flags]);
  assert.equal(result.code, 0, result.stderr);
  return file;
}

function assertNear(actual: number[], want: number[], what: string, tolerance = 12): void {
  assert.ok(near(actual, want, tolerance), `${what}: ${rgb(actual)}, want ${rgb(want)}`);
}

describe("recipes: every example renders and the library drew", () => {
  it("GSAP: the timeline moves the box (x = 40 + 200 t)", async () => {
    const file = await render(await example("gsap", ["gsap"]), "gsap.mp4", ["--fps", "2"]);
    assert.equal((await probeVideo(file)).frames, 4);
    const at = await pixelSeries(file, 290, 180);
    assertNear(at[0], [17, 17, 24], "frame 0, before the box arrives");
    assertNear(at[2], [255, 61, 127], "frame 2 (t = 1 s), the box");
  });

  it("canvas 2D: the onSeek hook draws the ball at x = 80 + 240 t", async () => {
    const file = await render(await example("canvas"), "canvas.mp4", ["--fps", "2"]);
    const at = await pixelSeries(file, 320, 180);
    assertNear(at[0], [16, 16, 32], "frame 0");
    assertNear(at[2], [255, 209, 102], "frame 2 (t = 1 s), the ball");
  });

  it("web fonts: Inter is loaded by the first frame; a missing font file is named", async () => {
    const dir = await example("fonts", ["inter"]);
    const file = await render(dir, "fonts.mp4", ["--fps", "2"]);
    const [check] = await pixelSeries(file, 600, 320);
    assertNear(check, [0, 200, 83], "font check at frame 0");
    await Deno.remove(`${dir}/fonts`, { recursive: true });
    const result = await runVid(["render", dir, "-o", `${scratch}/nofont.mp4`, "--fps", "2"]);
    // The page asked for a font file the project lacks: vid names it.
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /fonts\/inter-latin-700-normal\.woff2/);
  });

  it("Lottie: lottie-web shows the animation's frame for t (square at x = 100 + 220 t)", async () => {
    const file = await render(await example("lottie", ["lottie"]), "lottie.mp4", ["--fps", "2"]);
    const at = await pixelSeries(file, 320, 180);
    assertNear(at[0], [29, 53, 87], "frame 0: background layer");
    assertNear(at[2], [230, 57, 70], "frame 2 (t = 1 s): the square layer");
  });

  /** One copy of examples/threejs with Three.js added, rendered by both capture paths. */
  let threejs: Promise<string> | undefined;
  for (const capture of ["beginframe", "screenshot"]) {
    it(`Three.js: WebGL draws the cube (${capture} capture)`, async () => {
      const dir = await (threejs ??= example("threejs", ["three"]));
      const file = await render(dir, `three-${capture}.mp4`, [
        "--fps",
        "2",
        "--frames",
        "0-2",
        "--capture",
        capture,
        "--variables",
        '{"color":"#ff8800"}',
      ]);
      const centre = await pixelSeries(file, 320, 180);
      const corner = await pixelSeries(file, 10, 10);
      for (let n = 0; n < 3; n++) {
        assertNear(centre[n], [255, 136, 0], `frame ${n}: the cube`);
        assertNear(corner[n], [32, 32, 64], `frame ${n}: the scene background`);
      }
      const hashes = await frameHashes(file);
      assert.notEqual(hashes[0], hashes[2], "the cube turns with t");
    });
  }

  it("video and audio: the clip's frames on the stage, the soundtracks mixed", async () => {
    const dir = await example("media");
    const ffmpeg = async (args: string[]) => {
      const out = await new Deno.Command("ffmpeg", { args: ["-v", "error", ...args] }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    };
    // The stand-ins the example's header describes.
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "color=red:s=320x180:r=30:d=1,format=yuv420p",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=2",
      "-shortest",
      `${dir}/clip.mp4`,
    ]);
    await ffmpeg(["-f", "lavfi", "-i", "sine=frequency=220:duration=2", `${dir}/music.wav`]);
    const file = await render(dir, "media.mp4", ["--fps", "4"]);
    const info = await probeVideo(file);
    assert.equal(info.frames, 8);
    assert.ok(info.hasAudio, "the soundtrack is muxed");
    const at = await pixelSeries(file, 200, 130);
    assertNear(at[3], [255, 0, 0], "frame 3 (t = 0.75 s): the clip, which starts at 0.5 s");
    const volume = await new Deno.Command("ffmpeg", {
      args: ["-i", file, "-af", "volumedetect", "-f", "null", "-"],
      stderr: "piped",
    }).output();
    const mean = Number(
      new TextDecoder().decode(volume.stderr).match(/mean_volume: (-?[\d.]+)/)![1],
    );
    assert.ok(mean > -40, `audible soundtrack, mean volume ${mean} dB`);
  });

  it("music under a voice-over: faded in, 12 dB lower under the voice, back after it", async () => {
    const dir = await example("voiceover");
    await ffmpegOk(["-f", "lavfi", "-i", "sine=frequency=220:duration=4", `${dir}/music.wav`]);
    await ffmpegOk(["-f", "lavfi", "-i", "sine=frequency=2000:duration=1.5", `${dir}/voice.wav`]);
    // One worker: the soundtrack is mixed once, whatever the workers (one browser, not two).
    const file = await render(dir, "voiceover.mp4", [
      "--fps",
      "2",
      "--loudness",
      "-20",
      "--workers",
      "1",
    ]);
    // The music alone, through low-passes that leave the 2 kHz voice out.
    const music = (from: number, to: number) =>
      rmsDb(file, from, to, "lowpass=f=500,lowpass=f=500,");
    const [start, open, ducked, released, end] = await Promise.all([
      music(0, 0.15),
      music(0.6, 0.85),
      music(1.1, 2.4),
      music(2.8, 2.95),
      music(3.85, 4),
    ]);
    assert.ok(Math.abs(ducked - (open - 12.04)) <= 2, `ducked ${ducked} dB, open ${open} dB`);
    assert.ok(Math.abs(released - open) <= 1, `after the voice ${released} dB vs ${open} dB`);
    assert.ok(start <= open - 10 && end <= open - 10, `fades: ${start}, ${end} vs ${open} dB`);
  });

  it("captions from a VTT: the cue at each frame, the spoken word highlighted, a sidecar", async () => {
    const dir = await example("captions");
    const sidecar = `${scratch}/captions.vtt`;
    const file = await render(dir, "captions.mp4", [
      "--fps",
      "4",
      "--quality",
      "high",
      "--captions-out",
      sidecar,
    ]);
    // Frame 0 (t = 0): no cue; frame 2 (0.5 s): cue 1 in white; frames 5, 6, 7 (1.25, 1.5,
    // 1.75 s): cue 2 with its first, second and third word in yellow.
    // The video is decoded once; the five frames are read from it.
    const frames = await rgbFrames(file, 640, 360);
    assert.equal(frames.length, 8, "2 s at 4 fps");
    const [empty, first, w1, w2, w3] = [0, 2, 5, 6, 7].map((n) => yellowAndWhite(frames[n]));
    assert.deepEqual([empty.white, empty.yellow], [0, 0], "frame 0: no caption");
    assert.ok(first.white > 200 && first.yellow === 0, `frame 2: ${JSON.stringify(first)}`);
    for (const [n, counts] of [[5, w1], [6, w2], [7, w3]] as const) {
      assert.ok(counts.yellow > 50, `frame ${n}: the spoken word, ${JSON.stringify(counts)}`);
    }
    assert.ok(w1.yellowX < w2.yellowX && w2.yellowX < w3.yellowX, "the highlight moves on");
    assert.match(await Deno.readTextFile(sidecar), /^WEBVTT\n\n00:00:00.250 --> 00:00:01.000\n/);
  });

  it("a 4k render of a 1080p layout: --scale 2 gives 3840x2160 with the hairline drawn at 2 px", async () => {
    const file = await render(await example("supersampled"), "supersampled.mp4", [
      "--scale",
      "2",
      "--frames",
      "0-0",
      "--quality",
      "high",
    ]);
    const info = await probeVideo(file);
    assert.deepEqual([info.width, info.height, info.frames], [3840, 2160, 1]);
    // The 1 px rule at y = 600 of the layout: device rows 1200 and 1201, red; 1199 and 1202 white.
    const column = await pixelColumn(file, 2000, 1196, 10);
    assertNear(column[4], [208, 2, 27], "row 1200", 40);
    assertNear(column[5], [208, 2, 27], "row 1201", 40);
    assertNear(column[0], [255, 255, 255], "row 1196", 12);
    assertNear(column[9], [255, 255, 255], "row 1205", 12);
  });
});

async function ffmpegOk(args: string[]): Promise<string> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-nostdin", "-y", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const log = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, log);
  return log;
}

/**
 * Yellow and white pixels of the caption band (rows 250-340) of one 640x360 RGB frame, and
 * the yellow's mean x.
 */
function yellowAndWhite(rgbBytes: Uint8Array): { yellow: number; white: number; yellowX: number } {
  let yellow = 0;
  let white = 0;
  let xs = 0;
  for (let y = 250; y < 340; y++) {
    for (let x = 0; x < 640; x++) {
      const i = (y * 640 + x) * 3;
      const [r, g, b] = [rgbBytes[i], rgbBytes[i + 1], rgbBytes[i + 2]];
      if (r > 200 && g > 180 && b < 90) {
        yellow++;
        xs += x;
      } else if (r > 200 && g > 200 && b > 200) white++;
    }
  }
  return { yellow, white, yellowX: yellow > 0 ? xs / yellow : -1 };
}

/** RGB of `count` pixels down from (x, y) in the first frame. */
async function pixelColumn(file: string, x: number, y: number, count: number): Promise<number[][]> {
  const out = await new Deno.Command("ffmpeg", {
    args: [
      "-v",
      "error",
      "-i",
      file,
      "-vf",
      `crop=1:${count}:${x}:${y}`,
      "-frames:v",
      "1",
      "-f",
      "rawvideo",
      "-pix_fmt",
      "rgb24",
      "-",
    ],
    stdout: "piped",
  }).output();
  const bytes = out.stdout;
  return Array.from({ length: count }, (_, i) => Array.from(bytes.subarray(i * 3, i * 3 + 3)));
}
