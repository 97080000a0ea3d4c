/**
 * Caption files on the renderer's side: the page shows them (`src/runtime/captions.ts`, one
 * parser for both), and here a render finds the composition's `data-captions` files, refuses
 * one that does not parse before the first frame (naming its line), and writes the
 * `--captions-out` sidecar: the cues shifted to the rendered range and clipped to it, as
 * WebVTT or SRT by the file's extension.
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { type CaptionCue, type CaptionTrack, parseCaptions } from "../runtime/captions.ts";
import { evaluate } from "./capture.ts";
import type { CompositionPage } from "./render_chunk.ts";

/** A caption file does not parse, or cannot be read. */
export class CaptionError extends VidError {
  /** Always `"CaptionError"`. */
  override name = "CaptionError";
  /** The file, as `data-captions` names it. */
  readonly file: string;
  /** Its line at fault (from 1), when one is. */
  readonly line?: number;

  /**
   * Creates the error.
   *
   * @param message The whole message (`<file>:<line>: <what>`).
   * @param file The file at fault.
   * @param line Its line at fault.
   */
  constructor(message: string, file: string, line?: number) {
    super(message, { field: "data-captions", exitCode: EXIT_FAILED });
    this.file = file;
    if (line !== undefined) this.line = line;
  }
}

/**
 * Parses a caption file's text; throws {@linkcode CaptionError} naming the file and line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(readCaptions("1\n00:00:01,000 --> 00:00:02,000\nHi\n", "a.srt")[0].text, "Hi");
 * assert.throws(() => readCaptions("WEBVTT\n\nHi\n", "a.vtt"), { name: "CaptionError", line: 3 });
 * ```
 */
export function readCaptions(text: string, file: string): CaptionCue[] {
  try {
    return parseCaptions(text, file);
  } catch (error) {
    const message = (error as Error).message;
    const line = message.slice(file.length).match(/^:(\d+):/)?.[1];
    throw new CaptionError(message, file, line === undefined ? undefined : Number(line));
  }
}

/**
 * The `data-captions` attributes of a loaded composition page, each with the absolute URL
 * it names.
 */
export async function listCaptionSources(
  composition: CompositionPage,
): Promise<{ src: string; url: string }[]> {
  return await evaluate(
    composition.page,
    `[...document.querySelectorAll("[data-captions]")]
      .map((el) => el.getAttribute("data-captions").trim())
      .filter((src) => src !== "")
      .map((src) => ({ src, url: new URL(src, document.baseURI).href }))`,
  ) as { src: string; url: string }[];
}

/**
 * Reads and parses each caption file of the page (`localFile` maps a URL to its file in the
 * project; others are fetched), in document order without repeats. Throws
 * {@linkcode CaptionError} for one that cannot be read or does not parse.
 */
export async function loadCaptionTracks(
  sources: readonly { src: string; url: string }[],
  localFile: (url: string) => string | undefined,
): Promise<CaptionTrack[]> {
  const tracks: CaptionTrack[] = [];
  const seen = new Set<string>();
  for (const { src, url } of sources) {
    if (seen.has(url)) continue;
    seen.add(url);
    const file = localFile(url);
    let text: string;
    try {
      if (file) {
        text = await readFile(file, "utf8");
      } else {
        const response = await fetch(url, { signal: AbortSignal.timeout(30_000) });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        text = await response.text();
      }
    } catch (error) {
      throw new CaptionError(
        `data-captions="${src}": cannot read it (${(error as Error).message}); check the path ` +
          "(relative to the composition's HTML file)",
        src,
      );
    }
    tracks.push({ src, cues: readCaptions(text, src) });
  }
  return tracks;
}

/**
 * The cues of a render of `duration` seconds from timeline time `startAt`: shifted so the
 * render starts at 0, clipped to it, those outside dropped (word timestamps alike).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const cues = [{ start: 0.5, end: 1.5, text: "a" }, { start: 2, end: 3, text: "b" }];
 * assert.deepEqual(shiftCues(cues, 1, 1.5), [{ start: 0, end: 0.5, text: "a" }, { start: 1, end: 1.5, text: "b" }]);
 * ```
 */
export function shiftCues(
  cues: readonly CaptionCue[],
  startAt: number,
  duration: number,
): CaptionCue[] {
  const clip = (t: number): number => +Math.min(duration, Math.max(0, t - startAt)).toFixed(3);
  return cues.flatMap((cue) => {
    if (cue.end <= startAt || cue.start >= startAt + duration) return [];
    const shifted: CaptionCue = { start: clip(cue.start), end: clip(cue.end), text: cue.text };
    if (cue.words) shifted.words = cue.words.map((w) => ({ start: clip(w.start), text: w.text }));
    return [shifted];
  });
}

/** `hh:mm:ss.ttt` (WebVTT) or `hh:mm:ss,ttt` (SRT). */
function timestamp(seconds: number, separator: "." | ","): string {
  const ms = Math.round(seconds * 1000);
  const pad = (n: number, width = 2) => String(n).padStart(width, "0");
  return `${pad(Math.floor(ms / 3_600_000))}:${pad(Math.floor(ms / 60_000) % 60)}:` +
    `${pad(Math.floor(ms / 1000) % 60)}${separator}${pad(ms % 1000, 3)}`;
}

/** Text as a cue payload: `&`, `<` and `>` escaped (WebVTT reads them as markup). */
function escaped(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/**
 * A caption file of `cues`: WebVTT (with word timestamps) for a `.vtt` name, SRT (words
 * joined) for `.srt`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const text = formatCaptions([{ start: 1, end: 2.5, text: "Hi" }], "out.srt");
 * assert.equal(text, "1\n00:00:01,000 --> 00:00:02,500\nHi\n");
 * ```
 */
export function formatCaptions(cues: readonly CaptionCue[], file: string): string {
  if (/\.srt$/i.test(file)) {
    return cues.map((cue, i) =>
      `${i + 1}\n${timestamp(cue.start, ",")} --> ${timestamp(cue.end, ",")}\n${cue.text}\n`
    ).join("\n");
  }
  const blocks = cues.map((cue) => {
    const payload = cue.words
      ? cue.words.map((w, i) =>
        (i === 0 && w.start === cue.start ? "" : `<${timestamp(w.start, ".")}>`) + escaped(w.text)
      ).join("")
      : escaped(cue.text);
    return `${timestamp(cue.start, ".")} --> ${timestamp(cue.end, ".")}\n${payload}\n`;
  });
  return ["WEBVTT\n", ...blocks].join("\n");
}
