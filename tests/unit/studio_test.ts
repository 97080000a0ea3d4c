/**
 * Unit tests of the studio client's parts that need no page (src/preview/studio/): timecode
 * both ways, the URL's state, timeline windows and the ruler, where a sound plays, the render
 * request the dialog sends, variable fields and values kept across a reload, and what the
 * stage says of a page error. The wiring to the page is covered by studio_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatTimecode, parseTimecode } from "../../src/preview/studio/timecode.ts";
import { changedValues, readUrlState, urlSearch } from "../../src/preview/studio/url_state.ts";
import {
  animationWindow,
  mediaClipWindow,
  rulerStep,
  rulerTicks,
  selectorOf,
  sourceName,
} from "../../src/preview/studio/timeline.ts";
import { playerVolume, soundingClips, soundPosition } from "../../src/preview/studio/sound.ts";
import {
  formatBytes,
  lastFrameAt,
  renderDoneFigures,
  renderHref,
  renderingText,
  renderRequestBody,
} from "../../src/preview/studio/render_dialog.ts";
import {
  droppedText,
  fieldEvent,
  fieldRuns,
  inputType,
  keptValues,
  numberFieldValue,
  thumbnailSrc,
} from "../../src/preview/studio/variables_form.ts";
import {
  pageErrorMessage,
  projectFile,
  sourceExcerpt,
} from "../../src/preview/studio/page_error.ts";
import { keyCommand, parseFrameField } from "../../src/preview/studio/transport.ts";
import { checkSummary } from "../../src/preview/studio/check_panel.ts";
import type { Declaration, MediaClip } from "../../src/preview/studio/types.ts";

describe("studio timecode", () => {
  it("formats non-drop-frame timecode at the nominal rate", () => {
    assert.equal(formatTimecode(0, 30), "00:00:00:00");
    assert.equal(formatTimecode(29, 30), "00:00:00:29");
    assert.equal(formatTimecode(30 * 3661 + 1, 30), "01:01:01:01");
    assert.equal(formatTimecode(1799, 29.97), "00:00:59:29", "29.97 counts 30 a second");
    assert.equal(formatTimecode(24, 24), "00:00:01:00");
  });

  it("reads timecode filled from the right, and seconds", () => {
    assert.equal(parseTimecode("15", 30), 450, "a bare number is seconds");
    assert.equal(parseTimecode("2:10", 30), 70);
    assert.equal(parseTimecode("1:02:10", 30), 62 * 30 + 10);
    assert.equal(parseTimecode("01:00:00:00", 30), 3600 * 30);
    assert.equal(parseTimecode(" .5S ", 30), 15);
    assert.equal(parseTimecode("1.5", 29.97), Math.round(1.5 * 29.97));
  });

  it("refuses what is no time or out of range", () => {
    for (const text of ["", "abc", "1:60:00", "0:61", "00:00:00:30", "1:2:3:4:5", "-1"]) {
      assert.equal(parseTimecode(text, 30), undefined, text);
    }
    assert.equal(formatTimecode(parseTimecode("00:00:02:15", 30)!, 30), "00:00:02:15");
  });
});

describe("studio URL state", () => {
  it("reads the state with defaults for what is missing or unreadable", () => {
    assert.deepEqual(readUrlState(""), {
      entry: "",
      frame: 0,
      values: undefined,
      muted: false,
      volume: 1,
    });
    const state = readUrlState(
      "?composition=b.html&frame=7.9&vars=%7B%22title%22%3A%22Hi%22%7D&volume=3",
    );
    assert.deepEqual(state, {
      entry: "b.html",
      frame: 7,
      values: { title: "Hi" },
      muted: false,
      volume: 1,
    });
    assert.equal(readUrlState("?frame=-4&vars=%5B1%5D&volume=x").frame, 0);
    assert.equal(readUrlState("?vars=%5B1%5D").values, undefined, "an array is no values");
    assert.equal(readUrlState("?volume=x").volume, 0);
  });

  it("writes only what differs from the defaults, and reads back the same", () => {
    const values = changedValues({ title: "Hi", count: 3 }, { title: "Hello", count: 3 });
    assert.deepEqual(values, { title: "Hi" });
    assert.deepEqual(changedValues({ a: 1 }, undefined), { a: 1 });
    const state = { entry: "b.html", frame: 12, values, muted: true, volume: 0.25 };
    const search = urlSearch(state, "index.html");
    assert.equal(
      search,
      "?composition=b.html&frame=12&vars=%7B%22title%22%3A%22Hi%22%7D&muted=1&volume=0.25",
    );
    assert.deepEqual(readUrlState(search), state);
    assert.equal(
      urlSearch({ ...state, entry: "index.html", values: {} }, "index.html"),
      "?frame=12&muted=1&volume=0.25",
    );
  });
});

describe("studio timeline", () => {
  it("names sources by file and elements by selector", () => {
    assert.equal(sourceName("http://h/a/b/clip%201.webm"), "clip 1.webm");
    assert.equal(sourceName("not a url"), "not a url");
    assert.equal(selectorOf({ id: "x", tagName: "DIV", classList: ["a"] }), "#x");
    assert.equal(selectorOf({ id: "", tagName: "SPAN", classList: [] }), "span");
  });

  it("places media clips: their duration, else the rest of the source, cut at the end", () => {
    const clip = { start: 2, mediaStart: 1, duration: null, playbackRate: 1 };
    assert.deepEqual(mediaClipWindow({ ...clip, duration: 3 }, 100, 10), { start: 2, end: 5 });
    assert.deepEqual(mediaClipWindow(clip, 4, 10), { start: 2, end: 5 });
    assert.deepEqual(mediaClipWindow(clip, 100, 10), { start: 2, end: 10 });
    assert.deepEqual(mediaClipWindow(clip, Number.NaN, 10), { start: 2, end: 10 }, "not loaded");
  });

  it("places animations from their birth, rate and timing", () => {
    // At 1 s an animation at 2x is 1000 ms into its own time: born at 0.5 s.
    assert.deepEqual(
      animationWindow({ nowMs: 1000, currentTime: 1000, rate: 2, delay: 0, endTime: 3000 }, 10),
      { start: 0.5, end: 2 },
    );
    assert.deepEqual(
      animationWindow({ nowMs: 0, currentTime: 0, rate: 1, delay: 0, endTime: Infinity }, 4),
      { start: 0, end: 4 },
      "an infinite animation lasts to the end",
    );
  });

  it("puts at most 8 ruler steps over the span, labelled in s or m:ss", () => {
    for (const span of [0.3, 1, 3, 7, 20, 45, 90, 400, 1000, 7200]) {
      const step = rulerStep(span);
      assert.ok(span / step <= 8, `${span} s: step ${step}`);
    }
    assert.deepEqual(rulerTicks(2).map((t) => t.time), [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2]);
    assert.deepEqual(rulerTicks(150).map((t) => t.label), [
      "0s",
      "30s",
      "1:00",
      "1:30",
      "2:00",
      "2:30",
    ]);
  });
});

describe("studio sound", () => {
  const clip: MediaClip = {
    kind: "audio",
    src: "a.mp3",
    start: 1,
    mediaStart: 0.5,
    duration: null,
    volume: 1,
    muted: false,
    loop: false,
    playbackRate: 2,
  };

  it("plays inside its window at its rate, silent outside and while paused", () => {
    assert.equal(soundPosition(clip, 0.5, 10, true), null, "before its start");
    assert.equal(soundPosition(clip, 2, 10, true), 2.5);
    assert.equal(soundPosition(clip, 6, 10, true), null, "past the end of its source");
    assert.equal(soundPosition(clip, 6, Number.NaN, true), 10.5, "length unknown yet");
    assert.equal(soundPosition(clip, 2, 10, false), null);
  });

  it("loops from its media start; plays only sounding clips at a bounded volume", () => {
    assert.equal(soundPosition({ ...clip, loop: true, playbackRate: 1 }, 6, 2, true), 1);
    assert.deepEqual(
      soundingClips([clip, { ...clip, muted: true }, { ...clip, volume: 0 }]).map((c) => c.src),
      ["a.mp3"],
    );
    assert.equal(playerVolume(0.5, 1), 0.5);
    assert.equal(playerVolume(-1, 1), 0);
  });
});

describe("studio render dialog", () => {
  const fields = {
    values: { title: "Hi" },
    entry: "index.html",
    format: "webm",
    quality: "high",
    scale: "0.5",
    fps: "24",
    from: "10",
    to: "20",
    toMax: "59",
    name: " promo ",
  };

  it("sends what differs from the composition's own, in a fixed order", () => {
    assert.equal(
      JSON.stringify(renderRequestBody(fields, 29.97)),
      '{"values":{"title":"Hi"},"entry":"index.html","format":"webm","quality":"high",' +
        '"scale":0.5,"fps":24,"from":10,"to":20,"name":"promo"}',
    );
    const whole = { ...fields, scale: "1", fps: "29.97", from: "0", to: "59", name: "" };
    assert.deepEqual(Object.keys(renderRequestBody(whole, 29.97)), [
      "values",
      "entry",
      "format",
      "quality",
    ]);
  });

  it("renders one frame for a still, and counts frames at another rate", () => {
    const still = renderRequestBody({ ...fields, format: "still" }, 24);
    assert.equal(still.from, 10);
    assert.equal(still.to, 10);
    assert.equal(lastFrameAt(5, 24), 119);
    assert.equal(lastFrameAt(1 / 3, 30), 9, "no float dust");
    assert.equal(formatBytes(1048576), "1.0 MB");
    assert.equal(formatBytes(1536), "2 KB");
  });
});

describe("studio render status", () => {
  it("says how far a render is, and how long it has left", () => {
    const progress = {
      stage: "rendering",
      framesDone: 30,
      framesTotal: 90,
      fps: 14.96,
      etaSeconds: 4.01,
    };
    assert.equal(renderingText(progress), "Rendering: 30 / 90 frames (15.0 fps, about 5 s left)");
    assert.equal(
      renderingText({ ...progress, etaSeconds: undefined }),
      "Rendering: 30 / 90 frames (15.0 fps)",
    );
    assert.equal(
      renderingText({ ...progress, etaSeconds: Infinity }),
      "Rendering: 30 / 90 frames (15.0 fps)",
      "no time left is shown before it is known",
    );
    assert.equal(renderingText({ ...progress, etaSeconds: -2 }).endsWith("about 0 s left)"), true);
    assert.equal(renderingText({ ...progress, stage: "encoding" }), "Rendering: encoding");
    assert.equal(renderingText(undefined), "Rendering: starting");
  });

  it("links a finished render and names its frames, size and time", () => {
    assert.equal(renderHref("clip.mp4"), "/__preview/renders/clip.mp4");
    assert.equal(renderHref("a#b/00000.png"), "/__preview/renders/a%23b/00000.png");
    assert.equal(
      renderDoneFigures({ state: "done", id: 2, frames: 90, bytes: 5 * 1048576, elapsedMs: 12345 }),
      " (90 frames, 5.0 MB, 12.3 s)",
    );
  });
});

describe("studio variables", () => {
  it("gives each type its field and the event it reports on", () => {
    const of = (type: Declaration["type"]): Declaration => ({ id: "v", type, label: "V" });
    assert.deepEqual(
      (["string", "number", "boolean", "color", "image", "enum"] as const).map((t) => [
        inputType(of(t)),
        fieldEvent(of(t)),
      ]),
      [
        ["text", "input"],
        ["number", "input"],
        ["checkbox", "change"],
        ["text", "input"],
        ["text", "input"],
        ["text", "change"],
      ],
    );
  });

  it("groups the fields where each group first appears, the others in order", () => {
    const d = (id: string, group?: string): Declaration => ({
      id,
      type: "string",
      label: id,
      ...(group ? { group } : {}),
    });
    const runs = fieldRuns([d("a"), d("b", "Look"), d("c"), d("e", "Text"), d("f", "Look")]);
    assert.deepEqual(runs.map((r) => [r.group ?? null, r.declarations.map((x) => x.id)]), [
      [null, ["a"]],
      ["Look", ["b", "f"]],
      [null, ["c"]],
      ["Text", ["e"]],
    ]);
    assert.deepEqual(fieldRuns([]), []);
  });

  it("shows an image's thumbnail from the project or the web", () => {
    assert.equal(thumbnailSrc("img/a.png"), "/img/a.png");
    assert.equal(thumbnailSrc("HTTP://x.test/a.png"), "HTTP://x.test/a.png");
    assert.equal(thumbnailSrc("   "), undefined);
  });

  it("lists a dropped declaration with its id when it had one", () => {
    assert.equal(droppedText({ index: 0, reason: "no type" }), "declaration 0 dropped: no type");
    assert.equal(droppedText({ index: 3, id: "t", reason: "x" }), 'declaration 3 ("t") dropped: x');
  });

  const title: Declaration = { id: "title", type: "string", label: "Title" };
  const count: Declaration = { id: "count", type: "number", label: "Count" };

  it("reads a number field as a number, else as typed", () => {
    assert.equal(numberFieldValue("1e3"), 1000);
    assert.equal(numberFieldValue(" 12 "), 12);
    assert.equal(numberFieldValue("12px"), "12px");
    assert.equal(numberFieldValue("Infinity"), "Infinity");
  });

  it("keeps edited values of variables still declared the same way", () => {
    const defaults = { title: "Hello", count: 1 };
    assert.deepEqual(keptValues([title, count], defaults, undefined, {}), defaults);
    assert.deepEqual(
      keptValues([title, count], defaults, [title, count], { title: "Hi", count: 5 }),
      { title: "Hi", count: 5 },
    );
    const retyped: Declaration = { ...count, type: "string" };
    assert.deepEqual(
      keptValues([title, retyped], defaults, [title, count], { title: "Hi", count: 5 }),
      { title: "Hi", count: 1 },
      "a variable whose type changed takes its default",
    );
    assert.deepEqual(
      keptValues([title], defaults, undefined, {}, { title: "from url" }),
      { title: "from url" },
    );
  });
});

describe("studio page errors", () => {
  const studio = "http://127.0.0.1:4000/?frame=1";

  it("names files relative to the composition's folder", () => {
    assert.equal(projectFile("http://127.0.0.1:4000/a/b.js", studio, "index.html"), "a/b.js");
    assert.equal(projectFile("/s/x.js", studio, "s/index.html"), "x.js");
    assert.equal(projectFile("http://other:1/x.js", studio, "index.html"), "http://other:1/x.js");
  });

  it("says when it was thrown and where, three frames at most", () => {
    const frame = (n: number) => ({ functionName: `f${n}`, url: `u${n}`, line: n, column: 1 });
    const record = {
      message: "Error: x",
      phase: "load" as const,
      stack: [frame(1), frame(2), frame(3), frame(4)],
    };
    assert.equal(
      pageErrorMessage(record, 3, (u) => u),
      "the page threw while loading: Error: x\n    at f1 (u1:1:1)\n    at f2 (u2:2:1)\n    at f3 (u3:3:1)",
    );
    const located = { message: "x", phase: "frame" as const, stack: [], url: "u", line: 2 };
    assert.equal(pageErrorMessage(located, 3, (u) => u), "frame 3: the page threw x\n    at u:2:0");
  });

  it("shows the offending line between its neighbours, with a caret", () => {
    const source = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join("\n");
    assert.equal(
      sourceExcerpt(source, 10, 3),
      "   9 | line 9\n> 10 | line 10\n     |   ^\n  11 | line 11",
    );
    assert.equal(sourceExcerpt("only\tone", 1, 0), "> 1 | only  one", "tabs as two spaces");
  });
});

describe("studio transport", () => {
  it("maps keys to commands: arrows step 1 (10 with shift), Home and End go to the ends", () => {
    assert.deepEqual(keyCommand("ArrowRight", false, 7, 59), { kind: "go", frame: 8 });
    assert.deepEqual(
      keyCommand("ArrowLeft", true, 7, 59),
      { kind: "go", frame: -3 },
      "clamped later",
    );
    assert.deepEqual(keyCommand("Home", true, 7, 59), { kind: "go", frame: 0 });
    assert.deepEqual(keyCommand("End", false, 7, 59), { kind: "go", frame: 59 });
    assert.deepEqual(keyCommand("m", false, 7, 59), { kind: "mute" });
    assert.deepEqual(keyCommand(" ", true, 7, 59), { kind: "toggle-play" });
    for (const key of ["M", "Enter", "ArrowUp", "a"]) {
      assert.equal(keyCommand(key, false, 7, 59), undefined, key);
    }
  });

  it("takes a typed frame only when whole and in range", () => {
    assert.equal(parseFrameField("0", 59), 0);
    assert.equal(parseFrameField("59", 59), 59);
    for (const text of ["", " ", "-1", "60", "2.5", "x", "1e1000"]) {
      assert.equal(parseFrameField(text, 59), undefined, text);
    }
  });
});

describe("studio check panel", () => {
  it("counts errors and warnings, or says there are none", () => {
    assert.equal(
      checkSummary(true, []),
      "no problems found (the stage shows what the page throws)",
    );
    const two = [{ severity: "error", text: "a" }, { severity: "error", text: "b" }];
    assert.match(checkSummary(true, two), /^2 errors, 0 warnings: /);
    assert.equal(checkSummary(false, two), "cannot check: unknown error");
  });
});
