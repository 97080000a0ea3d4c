/**
 * Caption files (WebVTT and SRT), parsed by one function that runs in two places: in the
 * page (bundled into the runtime, which shows the active cue in each `data-captions` element:
 * `caption_display.ts`) and in the renderer (which refuses a
 * file that does not parse before the first frame, and writes `--captions-out` sidecars).
 * One parser, so the page never shows what the renderer would have refused.
 *
 * @module
 */

/** One word (or run of words) of a cue with its own WebVTT timestamp (`<00:01.500>`). */
export interface CaptionWord {
  /** Seconds on the caption file's clock when it is spoken. */
  start: number;
  /** Its text, spaces included, as the cue spells it. */
  text: string;
}

/** One cue of a caption file. */
export interface CaptionCue {
  /** Seconds when it shows. */
  start: number;
  /** Seconds when it goes. */
  end: number;
  /** Its text, tags removed, lines joined by `\n`. */
  text: string;
  /** The cue's text split at its word timestamps, when it has any. */
  words?: CaptionWord[];
}

/** The cues of one caption file, as `window.__vid.captions` lists them. */
export interface CaptionTrack {
  /** The `data-captions` attribute, as written. */
  src: string;
  /** Its cues in file order. */
  cues: CaptionCue[];
}

/**
 * Parses a WebVTT (`WEBVTT` first) or SRT file. Throws an `Error` whose message starts
 * `<name>:<line>:` and names what was expected, for a file that does not parse. It runs in
 * the page too, so it uses web standards only.
 *
 * @param text The file's text.
 * @param name The file as messages name it.
 * @returns The cues, in file order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const cues = parseCaptions("WEBVTT\n\n00:01.000 --> 00:02.500\nHello <00:01.600>world", "a.vtt");
 * assert.deepEqual(cues, [{
 *   start: 1,
 *   end: 2.5,
 *   text: "Hello world",
 *   words: [{ start: 1, text: "Hello " }, { start: 1.6, text: "world" }],
 * }]);
 * assert.throws(() => parseCaptions("WEBVTT\n\n1:00 --> x\nHi", "a.vtt"), /^Error: a.vtt:3: /);
 * ```
 */
export function parseCaptions(text: string, name: string): CaptionCue[] {
  const lines = text.replace(/^\uFEFF/, "").split(/\r\n|\r|\n/);
  const vtt = /^WEBVTT(\s|$)/.test(lines[0] ?? "");
  const fail = (line: number, detail: string): never => {
    throw new Error(`${name}:${line}: ${detail}`);
  };
  if (!vtt && /\.vtt$/i.test(name)) {
    fail(1, 'a WebVTT file starts with the line "WEBVTT"');
  }
  // hh:mm:ss.ttt or mm:ss.ttt (WebVTT), hh:mm:ss,ttt (SRT).
  const time = (value: string): number => {
    const match = value.trim().match(/^(?:(\d+):)?(\d{1,2}):(\d{2})[.,](\d{1,3})$/);
    if (!match) return Number.NaN;
    const [, h, m, s, ms] = match;
    if (Number(m) > 59 || Number(s) > 59) return Number.NaN;
    return Number(h ?? 0) * 3600 + Number(m) * 60 + Number(s) + Number(ms.padEnd(3, "0")) / 1000;
  };
  const example = vtt ? "00:00:01.000 --> 00:00:02.500" : "00:00:01,000 --> 00:00:02,500";
  const entities = (value: string): string =>
    value.replace(
      /&(amp|lt|gt|nbsp|quot|#39);/g,
      (_, e: string) =>
        ({ amp: "&", lt: "<", gt: ">", nbsp: "\u00a0", quot: '"', "#39": "'" })[e] ?? "",
    );
  const cues: CaptionCue[] = [];
  let i = vtt ? 1 : 0;
  // Header lines of a WebVTT file run to the first blank line.
  if (vtt) { while (i < lines.length && lines[i].trim() !== "") i++; }
  while (i < lines.length) {
    if (lines[i].trim() === "") {
      i++;
      continue;
    }
    const blockStart = i;
    const first = lines[i].trim();
    if (vtt && /^(NOTE|STYLE|REGION)(\s|$)/.test(first)) {
      while (i < lines.length && lines[i].trim() !== "") i++;
      continue;
    }
    // An identifier (a WebVTT cue id, an SRT counter) may come before the timing.
    if (!first.includes("-->")) {
      // A mistyped timing is named as one, not taken for the cue's identifier.
      if (/^\d+:\d/.test(first)) {
        fail(i + 1, `"${first}" is not a cue timing such as ${example}`);
      }
      if (!vtt && !/^\d+$/.test(first)) {
        fail(i + 1, `expected a cue number or a timing such as ${example}, got "${first}"`);
      }
      i++;
    }
    const timingLine = i < lines.length ? lines[i] : "";
    if (!timingLine.includes("-->")) {
      // A block of one line without a timing: that line is the mistake, not what follows.
      const [line, text] = timingLine.trim() === ""
        ? [blockStart + 1, first]
        : [i + 1, timingLine.trim()];
      fail(line, `expected a cue timing such as ${example}, got "${text}"`);
    }
    const [from, rest] = timingLine.split("-->");
    const start = time(from);
    const end = time(rest.trim().split(/\s+/)[0] ?? "");
    if (!Number.isFinite(start) || !Number.isFinite(end)) {
      fail(i + 1, `"${timingLine.trim()}" is not a cue timing such as ${example}`);
    }
    if (end < start) {
      fail(i + 1, `the cue ends (${end} s) before it starts (${start} s)`);
    }
    i++;
    const payload: string[] = [];
    while (i < lines.length && lines[i].trim() !== "") payload.push(lines[i++]);
    const raw = payload.join("\n");
    const words: CaptionWord[] = [];
    let wordStart = start;
    let pending = "";
    const cueText = raw.replace(/<([^>]*)>|[^<]+/g, (piece: string, tag?: string) => {
      if (tag === undefined) {
        const plain = entities(piece);
        pending += plain;
        return plain;
      }
      const at = time(tag);
      if (Number.isFinite(at)) {
        if (pending !== "") words.push({ start: wordStart, text: pending });
        wordStart = at;
        pending = "";
      }
      return "";
    });
    const cue: CaptionCue = { start, end, text: cueText };
    if (words.length > 0) {
      if (pending !== "") words.push({ start: wordStart, text: pending });
      cue.words = words;
    }
    cues.push(cue);
  }
  return cues;
}
