/**
 * End-to-end tests of media in compositions through `vid render`: `<video>` frames are
 * exact (frame n of the output shows the source frame its timing attributes select,
 * before, during and after the clip, across chunk seams, at another source frame rate,
 * with `data-media-start` and `data-playback-rate`, on both capture paths), and the
 * soundtrack of `<audio>` and `<video>` elements is mixed once, placed at `data-start`,
 * scaled by `data-volume`, silenced by `muted`, cut to `--frames` sub-ranges, padded to
 * the video's length and encoded per format (AAC in mp4/mov, Opus in webm). A page
 * without media gets no audio stream; a missing video source fails the render.
 *
 * Test media are generated with ffmpeg (lavfi) into small fixture projects (320x180,
 * a few seconds). The test clips encode their frame index in their luminance: frame k
 * has luma 16 + 3 * ((7k + 30) mod 60), so neighbouring frames differ by 20+ grey levels
 * and an off-by-one frame cannot pass.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  compositionHtml,
  frameHashes,
  indexedClip,
  makeProject,
  pixelSeries,
  probeVideo,
  runVid,
} from "../helpers.ts";
import { rmsDb } from "../audio_levels.ts";

/** A full-frame element style. */
const FULL = "position:absolute;left:0;top:0;width:320px;height:180px;object-fit:fill";
/** Left and right halves. */
const LEFT = "position:absolute;left:0;top:0;width:160px;height:180px;object-fit:fill";
const RIGHT = "position:absolute;left:160px;top:0;width:160px;height:180px;object-fit:fill";

async function ffmpeg(args: string[]): Promise<string> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-nostdin", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  if (out.code !== 0) throw new Error(`ffmpeg ${args.join(" ")} failed:\n${stderr}`);
  return stderr;
}

/** The grey level (red channel) of pixel (x, y) in every frame. */
async function greys(file: string, x: number, y: number): Promise<number[]> {
  return (await pixelSeries(file, x, y)).map((c) => c[0]);
}

/**
 * Frames whose grey is not within `tolerance` of the source frame `expected(n)` selects,
 * as readable lines (empty when all match).
 */
function mismatches(
  output: number[],
  source: number[],
  expected: (n: number) => number,
  tolerance = 4,
): string[] {
  return output.flatMap((grey, n) => {
    const k = expected(n);
    return Math.abs(grey - source[k]) <= tolerance
      ? []
      : [`frame ${n}: grey ${grey}, want source frame ${k} (grey ${source[k]})`];
  });
}

/** Power sum of two uncorrelated levels in dB. */
function sumDb(a: number, b: number): number {
  return 10 * Math.log10(10 ** (a / 10) + 10 ** (b / 10));
}

/** codec_name and duration of every stream, via ffprobe. */
async function streams(
  file: string,
): Promise<{ codec_type: string; codec_name: string; duration?: string }[]> {
  const out = await new Deno.Command("ffprobe", {
    args: [
      "-v",
      "error",
      "-show_entries",
      "stream=codec_type,codec_name,duration",
      "-of",
      "json",
      file,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return JSON.parse(new TextDecoder().decode(out.stdout)).streams;
}

async function listDir(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

let project: string;
let scratch: string;
/** Grey of every frame of the 30 fps and the 25 fps test clip. */
let clip30: number[];
let clip25: number[];
/** Source level of the tones, measured like the outputs. */
let musicDb: number;
let voiceDb: number;
let avDb: number;

before(async () => {
  project = await makeProject(
    compositionHtml(`<video src="clip.mp4" data-start="0.5" style="${FULL}"></video>`, {
      id: "clip",
      duration: 3,
    }),
    {
      // Left: from 0.5 s into the source at double speed, starting at 0.5 s.
      // Right: a 25 fps source from 0 s.
      "rates.html": compositionHtml(
        `<video src="clip.mp4" data-start="0.5" data-media-start="0.5" data-playback-rate="2"
           style="${LEFT}"></video>
         <video src="clip25.mp4" style="${RIGHT}"></video>`,
        { id: "rates", duration: 2.5 },
      ),
      "missing.html": compositionHtml(`<video src="nope.mp4" style="${FULL}"></video>`, {
        id: "missing",
      }),
      // A muted copy of the voice at 0.5 s must add nothing.
      "audio.html": compositionHtml(
        `<audio src="music.wav" data-volume="0.5"></audio>
         <audio src="voice.wav" data-start="1.5"></audio>
         <audio src="voice.wav" data-start="0.5" muted></audio>`,
        { id: "audio", duration: 3 },
      ),
      "short.html": compositionHtml(`<audio src="voice.wav" data-start="0.2"></audio>`, {
        id: "short",
      }),
      "silent.html": compositionHtml(`<div style="${FULL};background:#08f"></div>`, {
        id: "silent",
      }),
      "av.html": compositionHtml(`<video src="av.mp4" data-start="1" style="${FULL}"></video>`, {
        id: "av",
        duration: 3,
      }),
    },
  );
  scratch = await Deno.makeTempDir({ prefix: "vid-test-media-" });
  const h264 = ["-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "30", "-bf", "2"];
  await Promise.all([
    ffmpeg(["-f", "lavfi", "-i", indexedClip(30, 2), ...h264, `${project}/clip.mp4`]),
    ffmpeg(["-f", "lavfi", "-i", indexedClip(25, 2), ...h264, `${project}/clip25.mp4`]),
    ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=220:duration=2:sample_rate=48000",
      `${project}/music.wav`,
    ]),
    ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=0.5:sample_rate=48000",
      `${project}/voice.wav`,
    ]),
    ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "color=gray:s=320x180:r=30:d=2",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=330:duration=2:sample_rate=44100",
      ...h264,
      "-c:a",
      "aac",
      "-shortest",
      `${project}/av.mp4`,
    ]),
  ]);
  [clip30, clip25, musicDb, voiceDb, avDb] = await Promise.all([
    greys(`${project}/clip.mp4`, 160, 90),
    greys(`${project}/clip25.mp4`, 160, 90),
    rmsDb(`${project}/music.wav`, 0.2, 1.8),
    rmsDb(`${project}/voice.wav`, 0.05, 0.45),
    rmsDb(`${project}/av.mp4`, 0.2, 1.8),
  ]);
  assert.deepEqual([clip30.length, clip25.length], [60, 50]);
  for (const clip of [clip30, clip25]) {
    for (let k = 1; k < clip.length; k++) {
      assert.ok(Math.abs(clip[k] - clip[k - 1]) >= 15, `source frames ${k - 1}, ${k} too close`);
    }
  }
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

describe("<video> frames", () => {
  let single: string;

  it("frame n shows source frame n - 15 (start 0.5 s), frame 0 before, the last after (--workers 1)", async () => {
    single = `${scratch}/clip-w1.mp4`;
    const result = await runVid([
      "render",
      project,
      "-o",
      single,
      "--workers",
      "1",
      "--capture",
      "screenshot",
      "--json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const summary = JSON.parse(result.stdout);
    assert.deepEqual([summary.frames, summary.workers], [90, 1]);
    assert.ok(summary.chunks >= 2, `chunk seams inside the clip: ${summary.chunks} chunks`);
    const output = await greys(single, 160, 90);
    assert.equal(output.length, 90);
    // 0.5 s = frame 15 starts the clip; it ends after source frame 59 (output frame 74).
    const expected = (n: number) => Math.min(Math.max(n - 15, 0), 59);
    assert.deepEqual(mismatches(output, clip30, expected), []);
  });

  it("--workers 2 gives identical frames (framemd5)", async () => {
    assert.ok(single, "needs the render of the previous test");
    const output = `${scratch}/clip-w2.mp4`;
    const result = await runVid([
      "render",
      project,
      "-o",
      output,
      "--workers",
      "2",
      "--capture",
      "screenshot",
      "--json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).workers, 2);
    const [one, two] = await Promise.all([frameHashes(single), frameHashes(output)]);
    assert.equal(one.length, 90);
    assert.deepEqual(two, one);
  });

  /** Left: source frame of data-media-start 0.5 + rate 2 from 0.5 s; right: 25 fps source. */
  const left = (n: number) => Math.min(15 + 2 * Math.max(0, n - 15), 59);
  const right = (n: number) => Math.min(Math.floor((n * 25) / 30), 49);

  /** Grey of the left and right half of every frame of the beginframe render. */
  let rates: number[][];

  it("data-media-start + data-playback-rate, and a 25 fps source in a 30 fps composition (beginframe)", async () => {
    const output = `${scratch}/rates.mp4`;
    const result = await runVid([
      "render",
      project,
      "-c",
      "rates.html",
      "-o",
      output,
      "--capture",
      "beginframe",
      // One browser for both chunks: the seams are the first test's and the next one's.
      "--workers",
      "1",
      "--json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).captureMode, "beginframe");
    rates = await Promise.all([greys(output, 80, 90), greys(output, 240, 90)]);
    assert.equal(rates[0].length, 75);
    assert.deepEqual(mismatches(rates[0], clip30, left), [], "left: media-start 0.5, rate 2");
    assert.deepEqual(mismatches(rates[1], clip25, right), [], "right: 25 fps source");
  });

  it("--capture screenshot shows the same pixels as beginframe (--frames 10-29)", async () => {
    assert.ok(rates, "needs the render of the previous test");
    const output = `${scratch}/rates-screenshot.mp4`;
    const result = await runVid([
      "render",
      project,
      "-c",
      "rates.html",
      "-o",
      output,
      "--frames",
      "10-29",
      "--capture",
      "screenshot",
      "--json",
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).captureMode, "screenshot");
    const shot = await Promise.all([greys(output, 80, 90), greys(output, 240, 90)]);
    assert.deepEqual(mismatches(shot[0], clip30, (n) => left(n + 10)), [], "left");
    assert.deepEqual(mismatches(shot[1], clip25, (n) => right(n + 10)), [], "right");
    for (const side of [0, 1]) {
      const beginframe = rates[side].slice(10, 30);
      assert.equal(shot[side].length, 20);
      assert.ok(
        shot[side].every((v, i) => Math.abs(v - beginframe[i]) <= 2),
        `screenshot ${shot[side]} vs beginframe ${beginframe}`,
      );
    }
  });

  it("a missing video source fails the render naming it; no output", async () => {
    const outDir = `${scratch}/missing`;
    await Deno.mkdir(outDir);
    const result = await runVid([
      "render",
      project,
      "-c",
      "missing.html",
      "-o",
      `${outDir}/out.mp4`,
      "--fps",
      "10",
    ]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(result.stderr, /nope\.mp4/);
    assert.deepEqual(await listDir(outDir), []);
  });
});

describe("soundtrack", () => {
  it("places <audio> at data-start with data-volume, ignores muted, pads to the video length", async () => {
    const output = `${scratch}/audio.mp4`;
    const result = await runVid([
      "render",
      project,
      "-c",
      "audio.html",
      "-o",
      output,
      "--fps",
      "10",
      // The soundtrack is mixed once, whatever the workers: one browser, not one per chunk.
      "--workers",
      "1",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const all = await streams(output);
    const video = all.find((s) => s.codec_type === "video")!;
    const audio = all.find((s) => s.codec_type === "audio");
    assert.equal(audio?.codec_name, "aac", JSON.stringify(all));
    assert.ok(
      Math.abs(Number(audio.duration) - Number(video.duration)) <= 0.03,
      `audio ${audio.duration} s vs video ${video.duration} s`,
    );
    assert.ok(Math.abs(Number(video.duration) - 3) <= 0.01, `video ${video.duration} s`);
    const music = musicDb + 20 * Math.log10(0.5);
    // Before 1.5 s: the music alone at half gain (the muted voice at 0.5 s adds nothing).
    for (const [from, to] of [[0.1, 0.45], [0.55, 0.95], [1.05, 1.45]]) {
      const level = await rmsDb(output, from, to);
      assert.ok(Math.abs(level - music) <= 0.5, `${from}-${to} s: ${level} dB, want ${music}`);
    }
    // The voice from 1.5 s to 2.0 s adds to the music.
    const both = await rmsDb(output, 1.55, 1.95);
    const want = sumDb(music, voiceDb);
    assert.ok(Math.abs(both - want) <= 1, `1.55-1.95 s: ${both} dB, want ${want}`);
    // The music is 2 s long: silence after, up to the end of the video.
    const tail = await rmsDb(output, 2.1, 2.95);
    assert.ok(tail < -60, `2.1-2.95 s: ${tail} dB, want silence`);
  });

  it("a --frames sub-range carries its own part of the soundtrack", async () => {
    const output = `${scratch}/audio-part.mp4`;
    // Frames 10-29 at 10 fps: timeline 1.0-3.0 s, so the voice starts 0.5 s in.
    const result = await runVid([
      "render",
      project,
      "-c",
      "audio.html",
      "-o",
      output,
      "--fps",
      "10",
      "--frames",
      "10-29",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const audio = (await streams(output)).find((s) => s.codec_type === "audio");
    assert.ok(Math.abs(Number(audio?.duration) - 2) <= 0.03, `audio ${audio?.duration} s`);
    const music = musicDb + 20 * Math.log10(0.5);
    const before = await rmsDb(output, 0.05, 0.45);
    assert.ok(Math.abs(before - music) <= 0.5, `0.05-0.45 s: ${before} dB, want ${music}`);
    const both = await rmsDb(output, 0.55, 0.95);
    const want = sumDb(music, voiceDb);
    assert.ok(Math.abs(both - want) <= 1, `0.55-0.95 s: ${both} dB, want ${want}`);
    const tail = await rmsDb(output, 1.1, 1.95);
    assert.ok(tail < -60, `1.1-1.95 s: ${tail} dB, want silence`);
  });

  it("a composition without media has no audio stream", async () => {
    const output = `${scratch}/silent.mp4`;
    const result = await runVid([
      "render",
      project,
      "-c",
      "silent.html",
      "-o",
      output,
      "--fps",
      "10",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const info = await probeVideo(output);
    assert.equal(info.frames, 10);
    assert.equal(info.hasAudio, false);
  });

  for (const [format, codec] of [["webm", "opus"], ["mov", "aac"]]) {
    it(`${format} carries ${codec} audio`, async () => {
      const output = `${scratch}/short.${format}`;
      const result = await runVid([
        "render",
        project,
        "-c",
        "short.html",
        "-o",
        output,
        "--fps",
        "10",
        "--format",
        format,
      ]);
      assert.equal(result.code, 0, result.stderr);
      const all = await streams(output);
      assert.deepEqual(all.map((s) => s.codec_type).sort(), ["audio", "video"]);
      assert.equal(all.find((s) => s.codec_type === "audio")?.codec_name, codec);
      // The voice plays from 0.2 s to 0.7 s.
      const gap = await rmsDb(output, 0.02, 0.15);
      assert.ok(gap < -60, `0.02-0.15 s: ${gap} dB, want silence`);
      const voice = await rmsDb(output, 0.3, 0.6);
      assert.ok(Math.abs(voice - voiceDb) <= 1, `0.3-0.6 s: ${voice} dB, want ${voiceDb}`);
    });
  }

  it("a <video> with a soundtrack contributes it from its data-start", async () => {
    const output = `${scratch}/av.mp4`;
    const result = await runVid([
      "render",
      project,
      "-c",
      "av.html",
      "-o",
      output,
      "--fps",
      "10",
      "--workers",
      "1",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const audio = (await streams(output)).find((s) => s.codec_type === "audio");
    assert.equal(audio?.codec_name, "aac");
    const before = await rmsDb(output, 0.1, 0.9);
    assert.ok(before < -60, `0.1-0.9 s: ${before} dB, want silence before data-start`);
    for (const [from, to] of [[1.1, 1.9], [2.1, 2.9]]) {
      const level = await rmsDb(output, from, to);
      assert.ok(Math.abs(level - avDb) <= 1, `${from}-${to} s: ${level} dB, want ${avDb}`);
    }
  });
});
