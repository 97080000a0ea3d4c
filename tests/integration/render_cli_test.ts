/**
 * End-to-end tests of `vid render` flags: validation of --fps/--format/--quality/
 * --workers/--frames (exit 2 naming the flag), frame counts (round(duration x fps)),
 * output paths, the three formats (H.264; VP9 and ProRes 4444 with alpha), quality
 * presets, odd sizes, partial renders, the JSON summary, progress lines, the missing
 * ffmpeg hint and the "no partial output" guarantee.
 *
 * Fixtures are small (320x180, 1 s) so the whole file stays fast on two cores.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  compositionHtml,
  makeProject,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  runVid,
} from "../helpers.ts";

/** A full-frame box fading from black to red over one second: frame n is red 255 n / 30. */
const FADE_HEAD =
  `<style>@keyframes fade { from { background: rgb(0,0,0) } to { background: rgb(255,0,0) } }</style>`;
const FADE_BODY = `<div style="position:absolute;inset:0;animation:fade 1s linear both"></div>`;

/** A transparent page with an opaque blue 100x100 box in the top-left corner. */
const ALPHA_HTML = compositionHtml(
  `<div style="position:absolute;left:0;top:0;width:100px;height:100px;background:rgb(0,0,255)"></div>`,
  { id: "alpha", head: `<style>html, body { background: transparent !important; }</style>` },
);

/** A detailed picture (gradient + text) whose encoded size depends on the quality. */
const DETAILED_HTML = compositionHtml(
  `<div style="position:absolute;inset:0;background:linear-gradient(45deg,#f06,#0cf,#fc0);
     animation:spin 1s linear both"></div>
   <p style="position:absolute;left:8px;top:8px;margin:0;font:bold 28px sans-serif;color:#fff">
     The quick brown fox jumps over the lazy dog 0123456789</p>`,
  {
    id: "detailed",
    head: `<style>@keyframes spin { to { filter: hue-rotate(360deg) } }</style>`,
  },
);

let fade: string;
let scratch: string;

before(async () => {
  fade = await makeProject(compositionHtml(FADE_BODY, { id: "fade", head: FADE_HEAD }), {
    "other.html": compositionHtml(FADE_BODY, { id: "half", head: FADE_HEAD, duration: 0.5 }),
    "alpha.html": ALPHA_HTML,
    "detailed.html": DETAILED_HTML,
    "odd.html": compositionHtml(FADE_BODY, {
      id: "odd",
      head: FADE_HEAD,
      width: 321,
      height: 181,
    }),
    "throws.html": compositionHtml(FADE_BODY, {
      id: "throws",
      head: FADE_HEAD,
      // Virtual time reaches 333 ms while seeking to frame 10 (t = 333.3 ms).
      after:
        `<script>setTimeout(() => { throw new Error("boom at a third of a second"); }, 333);</script>`,
    }),
  });
  scratch = await Deno.makeTempDir({ prefix: "vid-test-out-" });
});

after(async () => {
  await Deno.remove(fade, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

/** A fresh empty directory under the scratch directory. */
async function freshDir(name: string): Promise<string> {
  const dir = `${scratch}/${name}`;
  await Deno.mkdir(dir, { recursive: true });
  return dir;
}

async function listDir(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/** One stream field (or stream tag) of the first video stream, via ffprobe. */
async function probeField(file: string, entry: string): Promise<Record<string, unknown>> {
  const out = await new Deno.Command("ffprobe", {
    args: ["-v", "error", "-select_streams", "v:0", "-show_entries", entry, "-of", "json", file],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout)).streams[0];
}

describe("vid render flag validation", () => {
  const cases: [string[], string][] = [
    [["--fps", "0"], "--fps"],
    [["--fps", "241"], "--fps"],
    [["--fps", "0.5"], "--fps"],
    [["--fps", "29,97"], "--fps"],
    [["--fps", "30000/1003"], "--fps"],
    [["--fps", "abc"], "--fps"],
    [["--format", "avi"], "--format"],
    [["--quality", "ultra"], "--quality"],
    [["--workers", "0"], "--workers"],
    [["--frames", "5"], "--frames"],
    [["--frames", "9-3"], "--frames"],
  ];
  for (const [flags, flag] of cases) {
    it(`${flags.join(" ")} exits 2 naming ${flag}`, async () => {
      const output = `${scratch}/invalid.mp4`;
      const result = await runVid(["render", fade, "-o", output, ...flags]);
      assert.equal(result.code, 2, result.stderr);
      assert.ok(result.stderr.includes(flag), result.stderr);
      assert.equal(await exists(output), false);
    });
  }

  it("--frames beyond the composition exits non-zero naming --frames and the frame count", async () => {
    const output = `${scratch}/beyond.mp4`;
    const result = await runVid(["render", fade, "-o", output, "--frames", "0-99"]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /--frames/);
    assert.match(result.stderr, /30 frames/);
    assert.equal(await exists(output), false);

    const json = await runVid(["render", fade, "-o", output, "--frames", "0-99", "--json"]);
    assert.notEqual(json.code, 0);
    const body = JSON.parse(json.stdout);
    assert.equal(body.ok, false);
    assert.equal(body.error.name, "RenderOptionError");
    assert.equal(body.error.field, "--frames");
  });
});

describe("vid render output", () => {
  it("defaults to renders/<composition-id>.mp4 under the cwd; --json summarises the render", async () => {
    const cwd = await freshDir("default-path");
    const tmp = await freshDir("default-path-tmp");
    const result = await runVid(["render", fade, "--fps", "12", "--workers", "2", "--json"], {
      cwd,
      env: { TMPDIR: tmp },
    });
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout);
    const expected = `${cwd}/renders/fade.mp4`;
    assert.equal(summary.ok, true);
    assert.equal(summary.output, expected);
    assert.equal(summary.compositionId, "fade");
    assert.equal(summary.frames, 12);
    assert.equal(summary.fps, 12);
    assert.equal(summary.width, 320);
    assert.equal(summary.height, 180);
    assert.equal(summary.format, "mp4");
    assert.equal(summary.quality, "standard");
    assert.ok(["beginframe", "screenshot"].includes(summary.captureMode), summary.captureMode);
    assert.ok(Number.isInteger(summary.workers), `workers ${summary.workers}`);
    assert.ok(summary.workers >= 1 && summary.workers <= 2, `workers ${summary.workers} of 2`);
    assert.ok(Number.isInteger(summary.chunks), `chunks ${summary.chunks}`);
    assert.ok(
      summary.chunks >= summary.workers && summary.chunks <= 12,
      `chunks ${summary.chunks}`,
    );
    assert.deepEqual(await listDir(`${cwd}/renders`), ["fade.mp4"]);
    assert.equal(await exists(`${fade}/renders`), false, "not relative to the project");
    const info = await probeVideo(expected);
    assert.equal(info.frames, 12);
    assert.equal(info.fps, 12);
    assert.ok(Math.abs(info.duration - 1) < 0.05, `duration ${info.duration}`);
    // Work files live in the OS temp dir and are removed afterwards.
    assert.deepEqual((await listDir(tmp)).filter((n) => n.startsWith("vid-")), []);
  });

  it("-c picks another entry, -o sets the path, frames = round(duration x fps); progress on stderr", async () => {
    const cwd = await freshDir("custom-path");
    const output = `${cwd}/nested/dir/custom name.mp4`;
    const result = await runVid(
      ["render", fade, "-c", "other.html", "-o", output, "--fps", "24"],
      { cwd },
    );
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /^rendered .*custom name\.mp4$/m);
    assert.match(result.stdout, /12 frames, 320x180, 24 fps/);
    assert.deepEqual(await listDir(`${cwd}/nested/dir`), ["custom name.mp4"]);
    assert.equal(await exists(`${cwd}/renders`), false);
    const info = await probeVideo(output);
    assert.equal(info.frames, 12, "0.5 s x 24 fps");
    assert.equal(info.fps, 24);
    // stderr is not a terminal here: plain lines, no redrawn bar.
    assert.match(result.stderr, /^starting 0\/12 frames/m);
    assert.match(result.stderr, /^rendering \d+\/12 frames/m);
    assert.match(result.stderr, /^done 12\/12 frames/m);
    assert.ok(!result.stderr.includes("\r") && !result.stderr.includes("\x1b["), "no redraws");
    for (const match of result.stderr.matchAll(/^rendering \d+\/12 frames\s+([\d.]+) fps/gm)) {
      assert.ok(Number(match[1]) < 1000, `implausible progress rate: ${match[0]}`);
    }
  });
});

describe("vid render formats", () => {
  let full: string;

  it("mp4 is H.264 yuv420p; every frame n shows t = n / fps, across chunk seams", async () => {
    full = `${scratch}/full.mp4`;
    const result = await runVid(["render", fade, "-o", full, "--fps", "90", "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const info = await probeVideo(full);
    assert.deepEqual(
      [info.codec, info.pixFmt, info.frames, info.width, info.height, info.formatName],
      ["h264", "yuv420p", 90, 320, 180, "mov,mp4,m4a,3gp,3g2,mj2"],
    );
    const series = await pixelSeries(full, 160, 90);
    assert.equal(series.length, 90);
    const wrong = series.flatMap((colour, frame) => {
      const expected = [Math.round((255 * frame) / 90), 0, 0];
      return near(colour, expected, 8)
        ? []
        : [`frame ${frame}: ${rgb(colour)} vs ${rgb(expected)}`];
    });
    assert.deepEqual(wrong, [], `chunks: ${JSON.parse(result.stdout).chunks}`);
  });

  it("--frames 10-19 renders 10 frames equal to frames 10-19 of the full render", async () => {
    assert.ok(full, "needs the full render of the previous test");
    const output = `${scratch}/part.mp4`;
    const result = await runVid([
      "render",
      fade,
      "-o",
      output,
      "--fps",
      "90",
      "--frames",
      "10-19",
      "--json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout);
    assert.deepEqual([summary.frames, summary.from, summary.to], [10, 10, 19]);
    assert.equal((await probeVideo(output)).frames, 10);
    const part = await pixelSeries(output, 160, 90);
    const whole = await pixelSeries(full, 160, 90);
    assert.equal(part.length, 10);
    assert.ok(!near(part[0], whole[0], 16), `first frame is not frame 0: ${rgb(part[0])}`);
    for (let i = 0; i < 10; i++) {
      assert.ok(
        near(part[i], whole[10 + i], 4),
        `part frame ${i}: ${rgb(part[i])} vs full frame ${10 + i}: ${rgb(whole[10 + i])}`,
      );
    }
  });

  it("webm is VP9 with an alpha channel (renders/<id>.webm by default)", async () => {
    const cwd = await freshDir("webm");
    const result = await runVid(
      ["render", fade, "-c", "alpha.html", "--format", "webm", "--fps", "10"],
      { cwd },
    );
    assert.equal(result.code, 0, result.stderr);
    const output = `${cwd}/renders/alpha.webm`;
    const info = await probeVideo(output);
    assert.equal(info.codec, "vp9");
    assert.equal(info.frames, 10);
    assert.match(info.formatName, /webm/);
    const stream = await probeField(output, "stream_tags=alpha_mode");
    const tags = stream.tags as Record<string, string> | undefined;
    assert.equal(tags?.alpha_mode ?? tags?.ALPHA_MODE, "1", JSON.stringify(stream));
    const transparent = await pixelSeries(output, 250, 150, { alpha: true });
    const box = await pixelSeries(output, 50, 50, { alpha: true });
    assert.equal(transparent.length, 10);
    for (const frame of [0, 9]) {
      assert.ok(transparent[frame][3] <= 8, `alpha outside the box: ${transparent[frame]}`);
      assert.ok(box[frame][3] >= 247, `alpha of the box: ${box[frame]}`);
      assert.ok(near(box[frame], [0, 0, 255], 12), `box colour: ${rgb(box[frame])}`);
    }
  });

  it("mov is ProRes 4444 with an alpha channel", async () => {
    const cwd = await freshDir("mov");
    const result = await runVid(
      ["render", fade, "-c", "alpha.html", "--format", "mov", "--fps", "10"],
      { cwd },
    );
    assert.equal(result.code, 0, result.stderr);
    const output = `${cwd}/renders/alpha.mov`;
    const info = await probeVideo(output);
    // The encoder is fed yuva444p10le; ffmpeg's ProRes decoder reports 4444 as 12-bit.
    assert.deepEqual([info.codec, info.frames], ["prores", 10]);
    assert.match(info.pixFmt, /^yuva444p1[02]le$/);
    assert.equal((await probeField(output, "stream=profile")).profile, "4444");
    const transparent = await pixelSeries(output, 250, 150, { alpha: true });
    const box = await pixelSeries(output, 50, 50, { alpha: true });
    assert.equal(transparent[0][3], 0, `alpha outside the box: ${transparent[0]}`);
    assert.equal(box[0][3], 255, `alpha of the box: ${box[0]}`);
    assert.ok(near(box[0], [0, 0, 255], 6), `box colour: ${rgb(box[0])}`);
  });

  it("--quality draft and high both give valid files; high spends more bits", async () => {
    const sizes: Record<string, number> = {};
    for (const quality of ["draft", "high"]) {
      const output = `${scratch}/quality-${quality}.mp4`;
      const result = await runVid([
        "render",
        fade,
        "-c",
        "detailed.html",
        "-o",
        output,
        "--fps",
        "10",
        "--quality",
        quality,
        "--json",
      ]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(JSON.parse(result.stdout).quality, quality);
      const info = await probeVideo(output);
      assert.deepEqual([info.codec, info.pixFmt, info.frames], ["h264", "yuv420p", 10]);
      sizes[quality] = (await Deno.stat(output)).size;
    }
    assert.ok(sizes.high > sizes.draft, `high ${sizes.high} B vs draft ${sizes.draft} B`);
  });

  it("an odd size (321x181) is padded to even 322x182 for mp4", async () => {
    const output = `${scratch}/odd.mp4`;
    const result = await runVid([
      "render",
      fade,
      "-c",
      "odd.html",
      "-o",
      output,
      "--fps",
      "10",
      "--json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout);
    assert.deepEqual([summary.width, summary.height], [321, 181]);
    const info = await probeVideo(output);
    assert.deepEqual([info.width, info.height, info.frames], [322, 182, 10]);
    // The composition fills the picture up to the padding.
    const inside = await pixelSeries(output, 319, 179);
    assert.ok(near(inside[9], [Math.round(255 * 0.9), 0, 0], 8), rgb(inside[9]));
  });
});

describe("vid render failures", () => {
  it("without ffmpeg on PATH exits 1 with the apt install hint and writes nothing, temp files included", async () => {
    const cwd = await freshDir("no-ffmpeg");
    const emptyBin = await freshDir("empty-bin");
    // The temp folder and the project server are made while ffmpeg is looked up: the
    // failure must still find and remove them (it used to leave a vid-render-* folder).
    const tmp = await freshDir("no-ffmpeg-tmp");
    const result = await runVid(["render", fade, "--fps", "10"], {
      cwd,
      env: { PATH: emptyBin, VID_FFMPEG: "", VID_FFPROBE: "", TMPDIR: tmp },
    });
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /ffmpeg was not found/);
    assert.match(result.stderr, /apt-get install -y ffmpeg/);
    assert.deepEqual(await listDir(cwd), []);
    assert.deepEqual((await listDir(tmp)).filter((n) => n.startsWith("vid-")), []);
  });

  // TMPDIR points the render's work dirs (vid-render-*, vid-chromium-*) at a private
  // folder, so leftovers are ours alone even while other renders run on this machine.
  const throwing: [string, string[], RegExp][] = [
    ["mp4", ["--workers", "1"], /frame 10\b.*boom at a third of a second/],
    ["webm", ["--workers", "2", "--format", "webm"], /frame 1[05]\b.*boom at a third/],
  ];
  for (const [format, flags, message] of throwing) {
    it(`a page that throws mid-render (${format}, ${flags.join(" ")}) exits 1; no output or temp files remain`, async () => {
      const outDir = await freshDir(`throws-${format}-out`);
      const tmp = await freshDir(`throws-${format}-tmp`);
      const result = await runVid(
        ["render", fade, "-c", "throws.html", "-o", `${outDir}/video.${format}`, ...flags],
        { env: { TMPDIR: tmp } },
      );
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, message);
      assert.deepEqual(await listDir(outDir), [], "no output and no .partial file");
      // Chromium's own org.chromium.* scratch files are not ours to judge.
      assert.deepEqual((await listDir(tmp)).filter((n) => n.startsWith("vid-")), []);
    });
  }
});
