/**
 * The concat demuxer's list (`concatList` of src/render/encode.ts): every file but the last
 * carries its duration from its frame count, rounded to the microsecond once per join and
 * never accumulated, so a join at frame n falls at n / fps; paths are quoted for the demuxer.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { concatList } from "../../src/render/encode.ts";

describe("concatList", () => {
  it("gives each file but the last its exact duration", () => {
    assert.equal(
      concatList(["/w/a.mp4", "/w/b.mp4", "/w/c.mp4"], { fps: 30, frames: [60, 30, 7] }),
      "file '/w/a.mp4'\nduration 2.000000\nfile '/w/b.mp4'\nduration 1.000000\nfile '/w/c.mp4'\n",
    );
  });

  it("rounds each join, not each duration: joins stay on n / fps", () => {
    const frames = Array.from({ length: 50 }, () => 100);
    const list = concatList(frames.map((_, i) => `/w/${i}.mp4`), { fps: 30, frames });
    const durations = [...list.matchAll(/^duration (\S+)$/gm)].map((m) => Number(m[1]));
    assert.equal(durations.length, 49);
    durations.reduce((start, duration, i) => {
      const end = start + duration;
      const exact = ((i + 1) * 100) / 30;
      assert.ok(Math.abs(end - exact) <= 0.5e-6, `join ${i + 1}: ${end} vs ${exact}`);
      return end;
    }, 0);
  });

  it("quotes single quotes; without timing lists files only", () => {
    assert.equal(
      concatList(["/w/it's.mp4", "/w/b.mp4"]),
      "file '/w/it'\\''s.mp4'\nfile '/w/b.mp4'\n",
    );
  });
});
