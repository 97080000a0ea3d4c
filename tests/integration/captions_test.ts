/**
 * End-to-end tests of captions from files through `vid render`: a `data-captions` WebVTT
 * file shows the cue active at each frame in its element (the caption band's pixels change
 * at each cue and word boundary, hold between them, and are empty before, between and after
 * the cues), the active word of a cue with word timestamps gets its class (styled yellow
 * here), `window.__vid.captions` gives scripts the parsed cues, `--captions-out` writes a
 * sidecar shifted and clipped to a `--frames` range that parses back to the same cues, and
 * a file that does not parse fails before the first frame naming its line.
 *
 * Rendered as lossless PNG sequences (320x180, 10 fps), so equal frames are equal bytes.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { compositionHtml, makeProject, rgbFrames, runVid } from "../helpers.ts";
import { readCaptions, shiftCues } from "../../src/render/captions.ts";

const VTT = `WEBVTT

intro
00:00.200 --> 00:00.800
Hello <b>there</b>

NOTE words follow

00:01.000 --> 00:01.600
<00:01.000>One <00:01.200>two <00:01.400>three
`;

/** The caption element sits in the bottom band; a script draws a bar 100 px per cue on top. */
const PAGE = `<div id="cap" data-captions="subs.vtt" style="position:absolute;left:0;right:0;
    bottom:10px;height:40px;text-align:center;font:bold 24px sans-serif;color:#fff"></div>
  <div id="bar" style="position:absolute;left:0;top:0;height:20px;width:0;background:#f00"></div>`;
const HEAD = "<style>.vid-caption-word-active { color: #ff0; }</style>";
const SCRIPT = `<script>
  __vid.onSeek(() => {
    const track = __vid.captions.find((t) => t.src === "subs.vtt");
    document.getElementById("bar").style.width = (track ? track.cues.length * 100 : 0) + "px";
  });
</script>`;

let project: string;
let scratch: string;

before(async () => {
  project = await makeProject(
    compositionHtml(PAGE, { id: "captions", duration: 2, head: HEAD, after: SCRIPT }),
    {
      "subs.vtt": VTT,
      "bad.vtt": "WEBVTT\n\n00:00.000 --> 00:00.500\nfine\n\n00:01.000 -> 00:02.000\nbroken\n",
      "broken.html": compositionHtml(
        `<div data-captions="bad.vtt"></div>`,
        { id: "broken", duration: 1 },
      ),
      "plain.html": compositionHtml("<div></div>", { id: "plain", duration: 1 }),
    },
  );
  scratch = await Deno.makeTempDir({ prefix: "vid-test-captions-" });
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

/** The caption band (rows 120-179) of an RGB frame. */
function band(frame: Uint8Array): Uint8Array {
  return frame.subarray(120 * 320 * 3, 180 * 320 * 3);
}

function bright(pixels: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < pixels.length; i += 3) if (pixels[i] > 128 || pixels[i + 1] > 128) n++;
  return n;
}

/** Pixels that are yellow (red and green high, blue low): the active word. */
function yellow(pixels: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < pixels.length; i += 3) {
    if (pixels[i] > 180 && pixels[i + 1] > 180 && pixels[i + 2] < 90) n++;
  }
  return n;
}

function same(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

describe("captions from files", () => {
  it("shows the cue active at each frame, the active word by class, empty outside cues", async () => {
    const dir = `${scratch}/frames`;
    const sidecar = `${scratch}/all.srt`;
    const result = await runVid([
      "render",
      project,
      "--fps",
      "10",
      "-o",
      `${dir}/%03d.png`,
      "--captions-out",
      sidecar,
    ]);
    assert.equal(result.code, 0, result.stderr);
    const frames = await rgbFrames(`${dir}/%03d.png`, 320, 180);
    assert.equal(frames.length, 20);
    const bands = frames.map(band);
    // Cue 1 [0.2, 0.8): frames 2-7; cue 2 [1.0, 1.6): words at 1.0, 1.2, 1.4.
    const groups = [[0, 1], [2, 3, 4, 5, 6, 7], [8, 9], [10, 11], [12, 13], [14, 15], [
      16,
      17,
      18,
      19,
    ]];
    const shown = [false, true, false, true, true, true, false];
    groups.forEach((group, g) => {
      for (const n of group) {
        assert.ok(same(bands[n], bands[group[0]]), `frame ${n} differs from frame ${group[0]}`);
        assert.equal(bright(bands[n]) > 50, shown[g], `frame ${n}: caption shown ${!shown[g]}`);
      }
      if (g > 0) {
        assert.ok(
          !same(bands[group[0]], bands[groups[g - 1][0]]),
          `no change at frame ${group[0]}`,
        );
      }
    });
    assert.equal(yellow(bands[2]), 0, "cue 1 has no word timestamps: no active word");
    for (const n of [10, 12, 14]) assert.ok(yellow(bands[n]) > 30, `frame ${n}: no active word`);
    // __vid.captions: the script drew 100 px per cue (2 cues).
    const top = (n: number, x: number) =>
      frames[n].subarray((10 * 320 + x) * 3, (10 * 320 + x) * 3 + 3);
    assert.ok(top(0, 190)[0] > 200 && top(0, 210)[0] < 30, `bar: ${top(0, 190)}, ${top(0, 210)}`);
    // The whole-render sidecar is the file's cues (SRT carries no word timestamps).
    const written = readCaptions(await Deno.readTextFile(sidecar), "all.srt");
    assert.deepEqual(written, [
      { start: 0.2, end: 0.8, text: "Hello there" },
      { start: 1, end: 1.6, text: "One two three" },
    ]);
  });

  it("--captions-out is shifted and clipped to a --frames range and parses back", async () => {
    const sidecar = `${scratch}/part.vtt`;
    const result = await runVid([
      "render",
      project,
      "--fps",
      "10",
      "--frames",
      "5-13",
      "-o",
      `${scratch}/part.mp4`,
      "--captions-out",
      sidecar,
    ]);
    assert.equal(result.code, 0, result.stderr);
    const written = readCaptions(await Deno.readTextFile(sidecar), "part.vtt");
    const expected = shiftCues(readCaptions(VTT, "subs.vtt"), 0.5, 0.9);
    assert.deepEqual(written, expected);
    assert.deepEqual(written.map((c) => [c.start, c.end]), [[0, 0.3], [0.5, 0.9]]);
    assert.deepEqual(written[1].words?.map((w) => w.start), [0.5, 0.7, 0.9]);
  });

  it("a caption file that does not parse fails before rendering, naming its line", async () => {
    const output = `${scratch}/broken.mp4`;
    const result = await runVid(["render", project, "-c", "broken.html", "-o", output]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /error: bad.vtt:6: "00:01.000 -> 00:02.000" is not a cue timing such as 00:00:01.000 --> 00:00:02.500/,
    );
    await assert.rejects(Deno.stat(output), Deno.errors.NotFound);
  });

  it("--captions-out needs a data-captions element and a .vtt or .srt name (exit 2)", async () => {
    const none = await runVid([
      "render",
      project,
      "-c",
      "plain.html",
      "-o",
      `${scratch}/plain.mp4`,
      "--captions-out",
      `${scratch}/plain.vtt`,
    ]);
    assert.equal(none.code, 2, none.stderr);
    assert.match(none.stderr, /--captions-out: the composition has no element with data-captions/);
    await assert.rejects(Deno.stat(`${scratch}/plain.mp4`), Deno.errors.NotFound);
    const text = await runVid(["render", project, "--captions-out", "subs.txt"]);
    assert.equal(text.code, 2, text.stderr);
    assert.match(text.stderr, /--captions-out: must be a file name ending in .vtt or .srt/);
  });
});
