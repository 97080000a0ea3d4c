/**
 * The studio's frame times as people type and read them: non-drop-frame `HH:MM:SS:FF`
 * timecode and seconds.
 *
 * @module
 */

const pad = (n: number, width = 2): string => String(n).padStart(width, "0");

/**
 * `HH:MM:SS:FF` of a frame: non-drop-frame timecode, counting whole frames at the nominal
 * rate (29.97 counts 30 a second, as editors label NTSC without drop-frame). The frame field
 * is as wide as the largest frame number of a second needs, at least two digits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(formatTimecode(3725 * 30 + 7, 30), "01:02:05:07");
 * assert.equal(formatTimecode(30, 29.97), "00:00:01:00");
 * assert.equal(formatTimecode(5, 120), "00:00:00:005");
 * ```
 */
export function formatTimecode(frame: number, rate: number): string {
  const fps = Math.round(rate);
  const seconds = Math.floor(frame / fps);
  const width = String(fps - 1).length < 2 ? 2 : String(fps - 1).length;
  return `${pad(Math.floor(seconds / 3600))}:${pad(Math.floor(seconds / 60) % 60)}:${
    pad(seconds % 60)
  }:${pad(frame % fps, width)}`;
}

/**
 * A typed time as a frame at `rate`: `HH:MM:SS:FF` (shorter forms fill from the right, so
 * `1:15` is 1 s and 15 frames), or seconds such as `1.5`, `1.5s`. Undefined when unreadable
 * or a field is out of range.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(parseTimecode("1:15", 30), 45);
 * assert.equal(parseTimecode("1.5s", 30), 45);
 * assert.equal(parseTimecode("00:00:01:30", 30), undefined);
 * ```
 */
export function parseTimecode(text: string, rate: number): number | undefined {
  const fps = Math.round(rate);
  const trimmed = text.trim().toLowerCase();
  const seconds = /^(\d+(?:\.\d+)?|\.\d+)\s*s?$/.exec(trimmed);
  if (seconds) return Math.round(Number(seconds[1]) * rate);
  if (!/^\d+(:\d+){1,3}$/.test(trimmed)) return undefined;
  const parts = trimmed.split(":").map(Number);
  while (parts.length < 4) parts.unshift(0);
  const [h, m, s, f] = parts;
  if (m >= 60 || s >= 60 || f >= fps) return undefined;
  return ((h * 60 + m) * 60 + s) * fps + f;
}
