/**
 * Unit tests of the page runtime's parts that need no DOM (src/runtime/): the seeded random
 * stream and UUIDs, frame times with exact rates, the order timers fire in, which stack
 * frames are the page's own, where a video is seeked to for a frame (its window, loop, the
 * end of its source, the middle of a proxy's frame) and when it is seeked again, how a
 * painted video frame is layered over the element's backgrounds, and which caption cue and
 * word show.
 * The rest (installed into a real page) is covered by the render tests.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { seededRandom, uuidFromBytes } from "../../src/runtime/random.ts";
import {
  frameTimeMs,
  frameTimeSeconds,
  nextDueTimer,
  type VirtualTimer,
} from "../../src/runtime/clock.ts";
import { parseStack } from "../../src/runtime/page_errors.ts";
import { atSeekTarget, reseekTarget, videoSeekTarget } from "../../src/runtime/media_elements.ts";
import { layeredBackground, splitList } from "../../src/runtime/video_paint.ts";
import { activeCues, spokenWord } from "../../src/runtime/caption_display.ts";

describe("seeded randomness", () => {
  it("repeats per seed, differs between seeds, stays in [0, 1)", () => {
    const a = seededRandom(42);
    const b = seededRandom(42);
    const c = seededRandom(43);
    const first = Array.from({ length: 1000 }, () => a());
    assert.deepEqual(first, Array.from({ length: 1000 }, () => b()));
    assert.notDeepEqual(first.slice(0, 10), Array.from({ length: 10 }, () => c()));
    assert.ok(first.every((x) => x >= 0 && x < 1));
  });

  it("keeps the mulberry32 sequence renders were made with", () => {
    // Pinned: a change here changes every seeded page's pixels.
    const random = seededRandom(1);
    assert.deepEqual([random(), random(), random()], [
      0.6270739405881613,
      0.002735721180215478,
      0.5274470399599522,
    ]);
  });

  it("formats version 4 UUIDs", () => {
    const uuid = uuidFromBytes(Uint8Array.from({ length: 16 }, (_, i) => i * 17));
    assert.match(uuid, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    assert.equal(uuid, "00112233-4455-4677-8899-aabbccddeeff");
  });
});

describe("virtual clock", () => {
  it("times frames by fps, or exactly by a rate's fraction", () => {
    assert.equal(frameTimeMs(0, 30), 0);
    assert.equal(frameTimeMs(45, 30), 1500);
    assert.equal(frameTimeSeconds(45, 30), 1.5);
    const ntsc = { num: 30000, den: 1001 };
    assert.equal(frameTimeMs(30, 29.97, ntsc), 1001);
    assert.equal(frameTimeSeconds(30000, 29.97, ntsc), 1001);
    assert.notEqual(frameTimeSeconds(30000, 29.97), 1001, "29.97 itself would round");
  });

  it("fires the earliest due timer first, ties in the order they were set", () => {
    const fn = (): void => {};
    const timer = (id: number, due: number, seq: number): VirtualTimer => ({
      id,
      due,
      seq,
      fn,
      args: [],
    });
    const timers = [timer(1, 40, 3), timer(2, 20, 5), timer(3, 20, 4), timer(4, 100, 0)];
    assert.equal(nextDueTimer(timers, 99)?.id, 3);
    assert.equal(nextDueTimer(timers.filter((t) => t.id !== 3), 99)?.id, 2);
    assert.equal(nextDueTimer([timers[0], timers[3]], 99)?.id, 1);
    assert.equal(nextDueTimer([timers[3]], 99), undefined, "not due yet");
    assert.equal(nextDueTimer([timers[3]], 100)?.id, 4, "due at the target itself");
  });
});

describe("page error stacks", () => {
  it("keeps the page's frames above the runtime's, named or anonymous", () => {
    const stack = [
      "TypeError: nope",
      "    at draw (http://127.0.0.1:5000/scene.js:10:7)",
      "    at http://127.0.0.1:5000/index.html:30:3",
      "    at Object.seek (vid-runtime.js:900:11)",
      "    at http://127.0.0.1:5000/index.html:99:1",
    ].join("\n");
    assert.deepEqual(parseStack(stack), [
      { functionName: "draw", url: "http://127.0.0.1:5000/scene.js", line: 10, column: 7 },
      { functionName: "", url: "http://127.0.0.1:5000/index.html", line: 30, column: 3 },
    ]);
  });

  it("skips the runtime's frames above the page's, and lines of no page URL", () => {
    const stack = [
      "Error: x",
      "    at recordError (vid-runtime.js:12:3)",
      "    at <anonymous>:1:1",
      "    at tick (file:///tmp/p/index.html:4:9)",
      "    at async blob:http://127.0.0.1/abc:2:2",
    ].join("\n");
    // "<anonymous>" is no page URL; "async blob:…" reads as no frame at all.
    assert.deepEqual(parseStack(stack).map((f) => `${f.functionName}@${f.line}`), ["tick@4"]);
  });
});

describe("video seek targets", () => {
  const clip = { start: 2, mediaStart: 1, duration: 3, playbackRate: 1, loop: false };

  it("holds the window's first frame before it starts and its last after it ends", () => {
    assert.equal(videoSeekTarget(clip, 0, 60, 0), 1);
    assert.equal(videoSeekTarget(clip, 3.5, 60, 0), 2.5);
    assert.equal(videoSeekTarget(clip, 10, 60, 0), 4, "mediaStart + duration");
  });

  it("plays at its rate and stops at the end of its source", () => {
    const fast = { ...clip, duration: null, playbackRate: 2 };
    assert.equal(videoSeekTarget(fast, 3, 60, 0), 3);
    assert.equal(videoSeekTarget(fast, 100, 60, 0), 60, "clamped to the source's length");
  });

  it("loops over the source from its media start", () => {
    const loop = { start: 0, mediaStart: 1, duration: null, playbackRate: 1, loop: true };
    assert.equal(videoSeekTarget(loop, 4.5, 4, 0), 2.5, "1 + (5.5 - 1) % 3");
  });

  it("aims at the middle of the proxy frame covering the time, never past the last", () => {
    const plain = { start: 0, mediaStart: 0, duration: null, playbackRate: 1, loop: false };
    assert.equal(videoSeekTarget(plain, 0, 1, 25), 0.5 / 25);
    assert.equal(videoSeekTarget(plain, 0.04, 1, 25), 1.5 / 25, "0.04 s is frame 1's start");
    assert.equal(videoSeekTarget(plain, 5, 1, 25), 24.5 / 25, "a 1 s source has 25 frames");
  });
});

describe("video re-seeks", () => {
  it("seeks a waiting video again at each mark, every other time a tenth of a frame later", () => {
    const at = (elapsed: number, nudges: number) => reseekTarget(2, 25, elapsed, nudges);
    assert.equal(at(199, 0), null, "not before 200 ms");
    assert.equal(at(200, 0), 2 + 0.1 / 25);
    assert.equal(at(699, 1), null);
    assert.equal(at(700, 1), 2);
    assert.equal(at(1300, 2), 2 + 0.1 / 25);
    assert.equal(at(1900, 3), 2);
    assert.equal(at(60_000, 4), null, "four re-seeks at most");
    assert.equal(reseekTarget(2, 0, 200, 0), 2, "no frame rate: the target itself");
  });

  it("skips a seek to where the video is, or where a re-seek for that target left it", () => {
    assert.equal(atSeekTarget(2 + 1e-7, 2, undefined, 25), true);
    assert.equal(atSeekTarget(2.004, 2, 2, 25), true, "nudged a tenth of a frame for 2");
    assert.equal(atSeekTarget(2.004, 2, 1.96, 25), false, "nudged for another target");
    assert.equal(atSeekTarget(2.01, 2, 2, 25), false, "a quarter of a frame away");
    assert.equal(atSeekTarget(1, 2, undefined, 0), false, "no frame rate");
  });
});

describe("video frame painting", () => {
  it("splits computed lists at top-level commas, not inside functions or strings", () => {
    assert.deepEqual(splitList("none"), ["none"]);
    assert.deepEqual(splitList('url("a\\",b.png") , rgb(1, 2, 3)'), [
      'url("a\\",b.png")',
      "rgb(1, 2, 3)",
    ]);
  });

  it("puts the frame on top of the element's own layers, each list repeated per image", () => {
    const ours = {
      "background-image": 'url("blob:f")',
      "background-size": "contain",
      "background-position": "50% 50%",
      "background-origin": "content-box",
      "background-clip": "content-box",
      "background-repeat": "no-repeat",
      "background-attachment": "scroll",
      "background-blend-mode": "normal",
    };
    const own: Record<string, string> = {
      "background-image": "linear-gradient(red, blue), none, url(x.png)",
      "background-size": "auto, cover",
      "background-position": "0% 0%",
      "background-origin": "padding-box",
      "background-clip": "border-box",
      "background-repeat": "repeat",
      "background-attachment": "scroll",
      "background-blend-mode": "normal",
    };
    const css = layeredBackground(ours, (property) => own[property]);
    assert.equal(
      css.split(" !important;")[0],
      'background-image: url("blob:f"), linear-gradient(red, blue), none, url(x.png)',
    );
    assert.ok(css.includes("background-size: contain, auto, cover, auto !important;"));
    assert.ok(css.includes("background-clip: content-box, border-box, border-box, border-box"));
    assert.ok(css.endsWith(" object-position: -1000000px -1000000px !important;"));
  });
});

describe("caption display", () => {
  const cues = [
    { start: 0, end: 1, text: "one" },
    {
      start: 1,
      end: 3,
      text: "two words",
      words: [{ start: 1, text: "two " }, { start: 2, text: "words" }],
    },
  ];

  it("shows a cue from its start until just before its end", () => {
    assert.deepEqual(activeCues(cues, 0.999).map((c) => c.text), ["one"]);
    assert.deepEqual(activeCues(cues, 1).map((c) => c.text), ["two words"]);
    assert.deepEqual(activeCues(cues, 3), []);
  });

  it("marks the word being spoken: the last one started", () => {
    assert.equal(spokenWord(cues[1], 1.5), 0);
    assert.equal(spokenWord(cues[1], 2), 1);
    assert.equal(spokenWord({ ...cues[1], start: 0 }, 0.5), -1, "before its first word");
    assert.equal(spokenWord(cues[0], 0.5), -1, "a cue without word timestamps");
  });
});
