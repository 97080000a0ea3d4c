/**
 * Output formats of a local render: the `--output` extension picks the format when
 * `--format` is absent (mp4, webm, mov, gif, PNG sequence), a conflicting `--format` is an
 * error naming both and the fix, GIFs share one palette and are capped at 25 fps, PNG
 * sequences are numbered by frame index and written into their folder atomically. Both
 * `vid render` and the SDK's `renderComposition` (multi-chunk joins) are exercised.
 *
 * Fixtures are 320x180, one second, at low frame rates.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { renderComposition } from "../../mod.ts";
import {
  compositionHtml,
  makeProject,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  runVid,
} from "../helpers.ts";

/** A full-frame box fading from black to red over one second: at t, red is 255 t. */
const FADE = compositionHtml(
  `<div style="position:absolute;inset:0;animation:fade 1s linear both"></div>`,
  {
    id: "fade",
    head:
      `<style>@keyframes fade { from { background: rgb(0,0,0) } to { background: rgb(255,0,0) } }</style>`,
  },
);

/** A transparent page with an opaque blue 100x100 box in the top-left corner. */
const ALPHA = compositionHtml(
  `<div style="position:absolute;left:0;top:0;width:100px;height:100px;background:rgb(0,0,255)"></div>`,
  { id: "alpha", head: `<style>html, body { background: transparent !important; }</style>` },
);

/**
 * The fade over three seconds: chunks hold whole one-second GOP grid cells, so three
 * seconds make three chunks. At t, red is 255 t / 3.
 */
const LONG_FADE = compositionHtml(
  `<div style="position:absolute;inset:0;animation:fade 3s linear both"></div>`,
  {
    id: "long-fade",
    duration: 3,
    head:
      `<style>@keyframes fade { from { background: rgb(0,0,0) } to { background: rgb(255,0,0) } }</style>`,
  },
);

let project: string;
let out: string;

before(async () => {
  project = await makeProject(FADE, { "alpha.html": ALPHA, "long.html": LONG_FADE });
  out = await Deno.makeTempDir({ prefix: "vid-test-formats-" });
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(out, { recursive: true });
});

async function names(dir: string): Promise<string[]> {
  const list: string[] = [];
  for await (const entry of Deno.readDir(dir)) list.push(entry.name);
  return list.sort();
}

/** Red expected at frame n of the fade rendered at `fps`. */
function fadeRed(n: number, fps: number): number {
  return Math.round(255 * n / fps);
}

describe("vid render: format from the --output extension", () => {
  const cases: [string, string, string][] = [
    ["ext.mp4", "h264", "mov,mp4,m4a,3gp,3g2,mj2"],
    ["ext.webm", "vp9", "matroska,webm"],
    ["ext.mov", "prores", "mov,mp4,m4a,3gp,3g2,mj2"],
    ["ext.gif", "gif", "gif"],
  ];
  for (const [name, codec, container] of cases) {
    it(`-o ${name} without --format writes ${codec}`, async () => {
      const file = `${out}/${name}`;
      const result = await runVid(["render", project, "-o", file, "--fps", "10", "--json"]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(JSON.parse(result.stdout).format, name.split(".")[1]);
      const info = await probeVideo(file);
      assert.equal(info.codec, codec);
      assert.equal(info.formatName, container);
      assert.equal(info.frames, 10);
    });
  }

  it("-o out.gif: 25 frames at the 25 fps cap, one palette, exact flat colours", async () => {
    const file = `${out}/fade.gif`;
    const result = await runVid(["render", project, "-o", file, "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout);
    assert.equal(summary.fps, 25, "the default 30 fps is capped at 25 for a GIF");
    assert.equal(summary.frames, 25);
    const info = await probeVideo(file);
    assert.equal(info.frames, 25);
    const colours = await pixelSeries(file, 160, 90);
    assert.equal(colours.length, 25);
    for (const n of [0, 5, 12, 24]) {
      const want = [fadeRed(n, 25), 0, 0];
      assert.ok(near(colours[n], want, 6), `frame ${n}: ${rgb(colours[n])}, want ${rgb(want)}`);
    }
  });

  it("-o frames/%05d.png: one RGBA PNG per frame, numbered by frame index, with alpha", async () => {
    const pattern = `${out}/alpha-frames/%05d.png`;
    const result = await runVid([
      "render",
      project,
      "-c",
      "alpha.html",
      "-o",
      pattern,
      "--fps",
      "5",
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await names(`${out}/alpha-frames`), [
      "00000.png",
      "00001.png",
      "00002.png",
      "00003.png",
      "00004.png",
    ]);
    assert.deepEqual(
      (await names(out)).filter((n) => n.includes("partial")),
      [],
      "no temp folder left",
    );
    const [inside] = await pixelSeries(`${out}/alpha-frames/00003.png`, 50, 50);
    const [outside] = await pixelSeries(`${out}/alpha-frames/00003.png`, 200, 150);
    assert.ok(near(inside, [0, 0, 255, 255]), `box: ${inside}`);
    assert.equal(outside[3], 0, `outside the box is transparent: ${outside}`);
  });

  it("--frames 2-4 with a PNG sequence keeps the frame numbers 2..4", async () => {
    const result = await runVid([
      "render",
      project,
      "-o",
      `${out}/part/f%03d.png`,
      "--fps",
      "5",
      "--frames",
      "2-4",
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await names(`${out}/part`), ["f002.png", "f003.png", "f004.png"]);
    const [colour] = await pixelSeries(`${out}/part/f004.png`, 10, 10);
    assert.ok(near(colour, [fadeRed(4, 5), 0, 0, 255]), rgb(colour));
  });
});

describe("vid render: format errors", () => {
  it("--format conflicting with the extension exits 2 naming both and the fix", async () => {
    const file = `${out}/conflict.webm`;
    const result = await runVid(["render", project, "-o", file, "--format", "mp4"]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--format mp4 conflicts with the output extension/);
    assert.match(result.stderr, /conflict\.webm \(webm\)/);
    assert.match(result.stderr, /drop --format to render webm, or name the output for mp4/);
    await assert.rejects(Deno.stat(file));
  });

  it("an extension no format writes exits 2 listing the extensions", async () => {
    const result = await runVid(["render", project, "-o", `${out}/x.mkv`]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /--output: no output format writes \.mkv files/);
    assert.match(result.stderr, /\.mp4, \.webm, \.mov, \.gif or a PNG sequence/);
  });

  it("a .png output without a frame pattern exits 2 suggesting one and vid still", async () => {
    const result = await runVid(["render", project, "-o", `${out}/one.png`]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /%05d\.png/);
    assert.match(result.stderr, /vid still/);
  });

  it("a PNG sequence folder holding other files is refused before rendering", async () => {
    await Deno.mkdir(`${out}/busy`);
    await Deno.writeTextFile(`${out}/busy/notes.txt`, "keep me");
    const result = await runVid(["render", project, "-o", `${out}/busy/%05d.png`, "--fps", "2"]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /holds notes\.txt/);
    assert.deepEqual(await names(`${out}/busy`), ["notes.txt"]);
  });
});

describe("renderComposition (SDK): formats over several chunks", () => {
  it("format from the output extension; a conflict throws naming --format", async () => {
    await assert.rejects(
      renderComposition({ target: project, output: `${out}/sdk.mov`, format: "gif" }),
      (error: Error & { field?: string }) => {
        assert.equal(error.name, "RenderOptionError");
        assert.equal(error.field, "format");
        assert.equal((error as Error & { flag?: string }).flag, "--format");
        assert.match(error.message, /--format gif conflicts/);
        return true;
      },
    );
  });

  it("a GIF of 3 chunks joins into one palette pass: 12 frames, colours in order", async () => {
    const result = await renderComposition({
      target: project,
      composition: "long.html",
      output: `${out}/sdk.gif`,
      fps: 4,
      chunkSize: 4,
      workers: 2,
    });
    assert.equal(result.format, "gif");
    assert.equal(result.chunks, 3);
    const info = await probeVideo(`${out}/sdk.gif`);
    assert.equal(info.frames, 12);
    const colours = await pixelSeries(`${out}/sdk.gif`, 100, 100);
    for (let n = 0; n < 12; n++) {
      assert.ok(near(colours[n], [fadeRed(n, 12), 0, 0], 6), `frame ${n}: ${rgb(colours[n])}`);
    }
  });

  it("a PNG sequence of 3 chunks replaces an earlier sequence in its folder", async () => {
    const folder = `${out}/sdk-frames`;
    await Deno.mkdir(folder);
    for (let n = 0; n < 12; n++) await Deno.writeTextFile(`${folder}/${n}.png`, "stale");
    const result = await renderComposition({
      target: project,
      composition: "long.html",
      output: folder,
      format: "png",
      fps: 4,
      chunkSize: 4,
      workers: 2,
    });
    assert.equal(result.output, `${folder}/%05d.png`);
    assert.equal(result.chunks, 3);
    const files = await names(folder);
    assert.equal(files.length, 12);
    assert.equal(files[11], "00011.png");
    const [colour] = await pixelSeries(`${folder}/00007.png`, 300, 170);
    assert.ok(near(colour, [fadeRed(7, 12), 0, 0, 255]), rgb(colour));
  });
});
