/**
 * Unit tests of the caption parser shared by the page and the renderer
 * (src/runtime/captions.ts) and of the sidecar writer (src/render/captions.ts): WebVTT with
 * headers, identifiers, settings, notes, tags, entities and word timestamps; SRT; errors that
 * name the file and line; and a sidecar that parses back to the cues it was written from.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parseCaptions } from "../../src/runtime/captions.ts";
import {
  CaptionError,
  formatCaptions,
  readCaptions,
  shiftCues,
} from "../../src/render/captions.ts";

describe("caption files", () => {
  it("reads WebVTT: header, ids, settings, NOTE and STYLE blocks, tags, entities, CRLF", () => {
    const text = [
      "\uFEFFWEBVTT - a title",
      "Kind: captions",
      "",
      "STYLE",
      "::cue { color: red }",
      "",
      "a",
      "01:02:03.500 --> 01:02:04.000 align:start line:0",
      "<v Ann>Tom &amp; <i>Jerry</i></v>",
      "second line",
      "",
      "NOTE a note",
      "",
      "00:05.000 --> 00:06.25",
      "&lt;3",
    ].join("\r\n");
    assert.deepEqual(parseCaptions(text, "a.vtt"), [
      { start: 3723.5, end: 3724, text: "Tom & Jerry\nsecond line" },
      { start: 5, end: 6.25, text: "<3" },
    ]);
  });

  it("reads SRT, counters and all", () => {
    const text =
      "1\n00:00:01,000 --> 00:00:02,000\nOne\n\n2\n00:00:03,000 --> 00:00:04,500\nTwo\nlines\n";
    assert.deepEqual(parseCaptions(text, "a.srt"), [
      { start: 1, end: 2, text: "One" },
      { start: 3, end: 4.5, text: "Two\nlines" },
    ]);
  });

  it("names the file and line of what does not parse", () => {
    const cases: [string, string, RegExp][] = [
      ["a.vtt", "1\n00:00:01,000 --> 00:00:02,000\nx", /^a.vtt:1: a WebVTT file starts with/],
      [
        "a.vtt",
        "WEBVTT\n\n00:01.000 -> 00:02.000\nx",
        /^a.vtt:3: "00:01.000 -> 00:02.000" is not a cue timing/,
      ],
      [
        "a.vtt",
        "WEBVTT\n\nid\nHello",
        /^a.vtt:4: expected a cue timing such as 00:00:01.000 --> 00:00:02.500, got "Hello"/,
      ],
      [
        "a.vtt",
        "WEBVTT\n\n00:02.000 --> 00:01.000\nx",
        /^a.vtt:3: the cue ends \(1 s\) before it starts \(2 s\)/,
      ],
      ["a.vtt", "WEBVTT\n\n00:61.000 --> 00:62.000\nx", /^a.vtt:3: .* is not a cue timing/],
      [
        "a.srt",
        "1\n00:00:01,000 --> 00:00:02,000\nx\n\nHello\n",
        /^a.srt:5: expected a cue number or a timing such as 00:00:01,000 --> 00:00:02,500, got "Hello"/,
      ],
    ];
    for (const [name, text, message] of cases) {
      assert.throws(() => readCaptions(text, name), (error: unknown) => {
        assert.ok(error instanceof CaptionError);
        assert.match(error.message, message);
        assert.equal(error.file, name);
        assert.equal(error.exitCode, 1);
        assert.equal(error.line, Number(error.message.split(":")[1]));
        return true;
      }, text);
    }
  });

  it("a sidecar parses back to the cues it was written from, shifted and clipped", () => {
    const cues = parseCaptions(
      "WEBVTT\n\n00:00.500 --> 00:01.500\nA & <b>b</b>\n\n" +
        "00:02.000 --> 00:03.000\n<00:02.000>one <00:02.400>two <00:02.800>three\n\n" +
        "00:04.000 --> 00:05.000\nlater\n",
      "a.vtt",
    );
    const part = shiftCues(cues, 1, 2.5);
    assert.deepEqual(part.map((c) => [c.start, c.end, c.text]), [
      [0, 0.5, "A & b"],
      [1, 2, "one two three"],
    ]);
    assert.deepEqual(readCaptions(formatCaptions(part, "out.vtt"), "out.vtt"), part);
    assert.deepEqual(
      readCaptions(formatCaptions(part, "out.srt"), "out.srt"),
      part.map(({ start, end, text }) => ({ start, end, text })),
    );
  });
});
