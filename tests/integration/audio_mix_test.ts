/**
 * End-to-end tests of the soundtrack's automation through `vid render`, measured with
 * ffmpeg on the rendered file: `data-fade-in`/`data-fade-out` (the first and last 150 ms at
 * least 10 dB under the middle, also in a `--frames` sub-range that ends inside the
 * fade), `data-volume` keyframes (held levels and a ramp's midpoint within 1 dB),
 * `data-duck` under a `data-voice` element (the music 12 dB lower within 2 dB, measured
 * through a low-pass that leaves the voice's 2 kHz tone out, and back after the release),
 * and `--loudness` (integrated loudness within 1 LU of the target by `ebur128`). Bad
 * attributes and flags fail before rendering, naming the element or flag and the fix.
 *
 * Tones are generated with ffmpeg (lavfi): music 220 Hz, voice 2 kHz; 320x180 pages.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { compositionHtml, lavfi, makeProject, runVid } from "../helpers.ts";
import { integratedLufs, rmsDb } from "../audio_levels.ts";

/** Keeps the 220 Hz music, drops the 2 kHz voice (two 500 Hz low-passes: -40 dB at 2 kHz). */
const MUSIC_BAND = "lowpass=f=500,lowpass=f=500,";

const db = (gain: number): number => 20 * Math.log10(gain);

let project: string;
let scratch: string;
/** Level of the music tone as generated, measured like the outputs. */
let musicDb: number;

before(async () => {
  project = await makeProject(
    compositionHtml(
      `<audio id="music" src="music.wav" data-fade-in="0.5" data-fade-out="0.5"></audio>`,
      { id: "fades", duration: 2 },
    ),
    {
      // Held at 0.25, ramp to 1 over 0.5-0.7 s, held, down to 0.5 over 1.3-1.5 s, held.
      "keyframes.html": compositionHtml(
        `<audio id="music" src="music.wav"
           data-volume="0:0.25, 0.5:0.25, 0.7:1, 1.3:1, 1.5:0.5"></audio>`,
        { id: "keyframes", duration: 2 },
      ),
      // The voice plays 1-2 s; the music ducks to 0.25 under it.
      "duck.html": compositionHtml(
        `<audio id="music" src="music3.wav" data-duck="0.25"></audio>
         <audio id="voice" src="voice.wav" data-start="1" data-voice></audio>`,
        { id: "duck", duration: 3 },
      ),
      "backwards.html": compositionHtml(
        `<audio id="music" src="music.wav" data-volume="0:1, 1.5:0.5, 1:0"></audio>`,
        { id: "backwards", duration: 2 },
      ),
      "long-fade.html": compositionHtml(
        `<audio src="music.wav" data-duration="1" data-fade-out="1.5"></audio>`,
        { id: "long-fade", duration: 2 },
      ),
      "bad-duck.html": compositionHtml(
        `<audio id="bed" src="music.wav" data-duck="1.5"></audio>`,
        { id: "bad-duck", duration: 2 },
      ),
    },
  );
  scratch = await Deno.makeTempDir({ prefix: "vid-test-audio-" });
  await Promise.all([
    lavfi("sine=frequency=220:duration=2:sample_rate=48000", `${project}/music.wav`),
    lavfi("sine=frequency=220:duration=3:sample_rate=48000", `${project}/music3.wav`),
    lavfi("sine=frequency=2000:duration=1:sample_rate=48000", `${project}/voice.wav`),
  ]);
  musicDb = await rmsDb(`${project}/music.wav`, 0.2, 1.8);
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

/**
 * Renders `composition` of the project at 10 fps with one worker (the soundtrack is mixed
 * once for the whole render, whatever the workers; one browser instead of one per 2 s
 * chunk); asserts success.
 */
async function render(composition: string, output: string, extra: string[] = []): Promise<void> {
  const result = await runVid([
    "render",
    project,
    "-c",
    composition,
    "-o",
    output,
    "--fps",
    "10",
    "--workers",
    "1",
    ...extra,
  ]);
  assert.equal(result.code, 0, result.stderr);
}

describe("soundtrack automation", () => {
  it("data-fade-in/out: the first and last 150 ms are 10+ dB under the middle", async () => {
    const output = `${scratch}/fades.mp4`;
    await render("index.html", output);
    const middle = await rmsDb(output, 0.6, 1.4);
    assert.ok(Math.abs(middle - musicDb) <= 0.5, `middle ${middle} dB, source ${musicDb} dB`);
    const first = await rmsDb(output, 0, 0.15);
    const last = await rmsDb(output, 1.85, 2);
    assert.ok(first <= middle - 10, `first 150 ms ${first} dB vs middle ${middle} dB`);
    assert.ok(last <= middle - 10, `last 150 ms ${last} dB vs middle ${middle} dB`);
    // Halfway through the fade-in the gain is 0.5 (the curve is linear in gain).
    const half = await rmsDb(output, 0.24, 0.26);
    assert.ok(Math.abs(half - (middle + db(0.5))) <= 1, `0.25 s: ${half} dB`);
  });

  it("a --frames sub-range ending in the fade-out carries that part of the fade", async () => {
    // Frames 10-19 at 10 fps: timeline 1.0-2.0 s; the fade-out is its last 0.5 s.
    const output = `${scratch}/fades-part.mp4`;
    await render("index.html", output, ["--frames", "10-19"]);
    const full = await rmsDb(output, 0.05, 0.45);
    assert.ok(Math.abs(full - musicDb) <= 0.5, `0.05-0.45 s: ${full} dB, want ${musicDb}`);
    const last = await rmsDb(output, 0.85, 1);
    assert.ok(last <= full - 10, `last 150 ms ${last} dB vs ${full} dB`);
  });

  it("data-volume keyframes: held levels and a ramp's midpoint within 1 dB", async () => {
    const output = `${scratch}/keyframes.mp4`;
    await render("keyframes.html", output);
    const checks: [number, number, number][] = [
      [0.05, 0.45, 0.25],
      [0.59, 0.61, 0.625],
      [0.75, 1.25, 1],
      [1.55, 1.95, 0.5],
    ];
    for (const [from, to, gain] of checks) {
      const level = await rmsDb(output, from, to);
      const want = musicDb + db(gain);
      assert.ok(Math.abs(level - want) <= 1, `${from}-${to} s: ${level} dB, want ${want}`);
    }
  });

  it("data-duck lowers the music 12 dB under a data-voice element, then releases it", async () => {
    const output = `${scratch}/duck.mp4`;
    await render("duck.html", output);
    const open = await rmsDb(output, 0.2, 0.8, MUSIC_BAND);
    const ducked = await rmsDb(output, 1.05, 1.95, MUSIC_BAND);
    const released = await rmsDb(output, 2.35, 2.9, MUSIC_BAND);
    assert.ok(
      Math.abs(ducked - (open + db(0.25))) <= 2,
      `under the voice ${ducked} dB, before ${open} dB: want ${db(0.25).toFixed(1)} dB lower`,
    );
    assert.ok(Math.abs(released - open) <= 0.5, `after the voice ${released} dB vs ${open} dB`);
  });

  it("--loudness -20 normalises the mix to -20 LUFS integrated (ebur128, within 1 LU)", async () => {
    const output = `${scratch}/loud.mp4`;
    await render("duck.html", output, ["--loudness", "-20"]);
    const lufs = await integratedLufs(output);
    assert.ok(Math.abs(lufs - -20) <= 1, `integrated ${lufs} LUFS, want -20`);
    // One gain for the whole mix: the duck is still 12 dB deep.
    const open = await rmsDb(output, 0.2, 0.8, MUSIC_BAND);
    const ducked = await rmsDb(output, 1.05, 1.95, MUSIC_BAND);
    assert.ok(Math.abs(ducked - (open + db(0.25))) <= 2, `ducked ${ducked} vs ${open} dB`);
  });

  it("bad automation fails before rendering, naming the element, the attribute and the fix", async () => {
    const cases: [string, RegExp][] = [
      [
        "backwards.html",
        /<audio id="music"> data-volume: keyframe 3 "1:0" goes back in time .*time order/,
      ],
      [
        "long-fade.html",
        /<audio src="music.wav"> data-fade-out: the fade \(1.5 s\) is longer than the element plays \(1 s\)/,
      ],
      ["bad-duck.html", /<audio id="bed"> data-duck: "1.5" is not a gain from 0 to 1/],
    ];
    const results = await Promise.all(
      cases.map(([composition]) =>
        runVid(["render", project, "-c", composition, "-o", `${scratch}/bad-${composition}.mp4`])
      ),
    );
    for (const [i, [composition, message]] of cases.entries()) {
      const output = `${scratch}/bad-${composition}.mp4`;
      const result = results[i];
      assert.equal(result.code, 1, `${composition}: ${result.stderr}`);
      assert.match(result.stderr, message);
      assert.doesNotMatch(result.stderr, /rendering \d/, "refused before any frame");
      await assert.rejects(Deno.stat(output), Deno.errors.NotFound);
    }
  });

  it("--loudness outside -70..-5 or not a number is a usage error (exit 2)", async () => {
    const values = ["-3", "-80", "loud"];
    const results = await Promise.all(
      values.map((value) =>
        runVid(["render", project, "--loudness", value, "-o", `${scratch}/x.mp4`])
      ),
    );
    for (const result of results) {
      assert.equal(result.code, 2, result.stderr);
      assert.match(result.stderr, /--loudness: must be a loudness from -70 to -5 LUFS/);
    }
  });
});
