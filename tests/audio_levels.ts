/**
 * Audio levels of a rendered file, measured by ffmpeg: the RMS level of a stretch of its sound
 * (`astats`) and the integrated loudness of the whole (`ebur128`). Shared by the tests of
 * fades, ducking, mixing and loudness on every surface (local, server, Lambda worker,
 * HyperFrames, recipes), so they all measure the same way and a change of ffmpeg's log format
 * is fixed once.
 *
 * @module
 */

import assert from "node:assert/strict";

/** ffmpeg's log of `args` (analysis filters print there); throws when ffmpeg fails. */
async function ffmpegLog(args: string[]): Promise<string> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-nostdin", ...args],
    stdout: "null",
    stderr: "piped",
  }).output();
  const log = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`ffmpeg ${args.join(" ")} failed:\n${log}`);
  return log;
}

/**
 * RMS level in dB of the sound between `from` and `to` seconds, after `filter` (an ffmpeg
 * audio filter chain ending in a comma, e.g. a low-pass that keeps one tone of a mix);
 * `-Infinity` for silence.
 *
 * @example
 * ```ts no_run
 * import { rmsDb } from "./audio_levels.ts";
 *
 * const middle = await rmsDb("out.mp4", 0.6, 1.4);
 * const music = await rmsDb("out.mp4", 0.2, 0.8, "lowpass=f=500,lowpass=f=500,");
 * ```
 */
export async function rmsDb(file: string, from: number, to: number, filter = ""): Promise<number> {
  const log = await ffmpegLog([
    "-ss",
    String(from),
    "-t",
    String(+(to - from).toFixed(6)),
    "-i",
    file,
    "-vn",
    "-af",
    `${filter}astats=measure_overall=RMS_level:measure_perchannel=none`,
    "-f",
    "null",
    "-",
  ]);
  const match = log.match(/RMS level dB: (-?inf|-?[\d.]+)/);
  assert.ok(match, `no RMS level in:\n${log}`);
  return match[1].endsWith("inf") ? -Infinity : Number(match[1]);
}

/**
 * Integrated loudness (LUFS) of a file's sound by ffmpeg's `ebur128`.
 *
 * @example
 * ```ts no_run
 * import { integratedLufs } from "./audio_levels.ts";
 *
 * console.log(await integratedLufs("out.mp4")); // -16.1
 * ```
 */
export async function integratedLufs(file: string): Promise<number> {
  const log = await ffmpegLog(["-i", file, "-vn", "-af", "ebur128", "-f", "null", "-"]);
  const summary = log.slice(log.lastIndexOf("Integrated loudness:"));
  const match = summary.match(/I:\s+(-?[\d.]+) LUFS/);
  assert.ok(match, `no integrated loudness in:\n${log.slice(-2000)}`);
  return Number(match[1]);
}
