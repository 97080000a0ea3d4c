/**
 * The recipe examples (examples/gsap, canvas, fonts, lottie, threejs, media), run as the
 * README tells a designer to: copy the library in with `vid add`, render a few frames, and
 * check a pixel that only the library (or feature) could have drawn. Three.js renders in
 * both capture modes (WebGL on SwiftShader in headless Chromium).
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { frameHashes, near, pixelSeries, probeVideo, rgb, ROOT, runVid } from "../helpers.ts";

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

  for (const capture of ["beginframe", "screenshot"]) {
    it(`Three.js: WebGL draws the cube (${capture} capture)`, async () => {
      const dir = await example("threejs", ["three"], `threejs-${capture}`);
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
});
