/**
 * Frame rates, integer or rational: the one parser every surface uses for `data-fps`,
 * `--fps`, the SDK's `fps`, the server API's `fps` field and the Lambda `config.fps`.
 *
 * A rate is kept as a fraction `num/den` so that NTSC rates are exact: `29.97` means
 * 30000/1001, `23.976` (or `23.98`) 24000/1001, `59.94` 60000/1001, `119.88`
 * 120000/1001. Frame n is shown at t = n × den / num seconds, and ffmpeg is told
 * `-r 30000/1001`, so the container says 29.97 rather than a rounded 2997/100.
 *
 * Code that carries a rate as a plain `number` (the SDK's `fps`, JSON bodies) carries its
 * value num/den; {@linkcode parseFrameRate} maps that value back to the same fraction,
 * because rates are limited to denominators up to 1001, whose values are far apart
 * compared with a double's rounding.
 *
 * @module
 */

import { VidError } from "../errors.ts";

/** A frame rate as a reduced fraction: `num` frames every `den` seconds. */
export interface FrameRate {
  /** Frames... */
  num: number;
  /** ...per this many seconds. */
  den: number;
}

/** Lowest accepted rate, frames per second. */
export const MIN_FPS = 1;
/** Highest accepted rate, frames per second. */
export const MAX_FPS = 240;
/** Largest denominator of a rate (1001, as in the NTSC rates). */
export const MAX_RATE_DENOMINATOR = 1001;

/** A frame rate that cannot be parsed or is out of range; `field` names where it came from. */
export class FrameRateError extends VidError {
  /** Always `"FrameRateError"`. */
  override name = "FrameRateError";
  /** Where the rate came from, e.g. `fps`, `data-fps` or `config.fps`. */
  declare readonly field: string;

  /**
   * Creates the error for one field.
   *
   * @param field Where the rate came from.
   * @param message What is wrong; prefixed with `<field>: `.
   */
  constructor(field: string, message: string) {
    super(`${field}: ${message}`, { field, detail: message, exitCode: 2 });
  }
}

const HELP = "an integer from 1 to 240, a decimal such as 29.97 (= 30000/1001) or a " +
  "fraction such as 30000/1001";

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

function reduced(num: number, den: number): FrameRate {
  const g = gcd(num, den);
  return { num: num / g, den: den / g };
}

/** The NTSC rate N×1000/1001 that `value` names, if any (e.g. 29.97 or 29.970029...). */
function ntscRate(value: number, decimals: number | undefined): FrameRate | undefined {
  const whole = Math.round(value * 1.001);
  if (whole <= 0) return undefined;
  const exact = (whole * 1000) / 1001;
  // The full value (a rate passed on as a number), or the rate rounded to the decimals
  // written (29.97, 23.976, 23.98), but not an integer such as 30.
  const matches = Math.abs(value - exact) < 1e-9 ||
    (decimals !== undefined && decimals >= 2 && Number(exact.toFixed(decimals)) === value);
  return matches ? reduced(whole * 1000, 1001) : undefined;
}

/** The fraction with denominator up to 1001 whose value is `value` (continued fractions). */
function fractionOf(value: number): FrameRate | undefined {
  let [h0, h1, k0, k1] = [0, 1, 1, 0];
  let x = value;
  for (let i = 0; i < 32; i++) {
    const a = Math.floor(x);
    [h0, h1] = [h1, a * h1 + h0];
    [k0, k1] = [k1, a * k1 + k0];
    if (k1 > MAX_RATE_DENOMINATOR) return undefined;
    if (Math.abs(h1 / k1 - value) < 1e-9) return reduced(h1, k1);
    const rest = x - a;
    if (rest < 1e-12) return undefined;
    x = 1 / rest;
  }
  return undefined;
}

function checkRange(field: string, rate: FrameRate, given: string): FrameRate {
  const value = rate.num / rate.den;
  if (value < MIN_FPS || value > MAX_FPS) {
    throw new FrameRateError(
      field,
      `must be a rate from ${MIN_FPS} to ${MAX_FPS}, got ${given} (frames per second)`,
    );
  }
  return rate;
}

/**
 * Parses a frame rate: an integer (`30`), a decimal (`29.97`, `23.976`, `12.5`) or a
 * fraction (`30000/1001`), as text or as a number. A decimal that is an NTSC rate
 * N×1000/1001 rounded to 2 or more places means that exact rate; any other decimal or
 * fraction must reduce to a denominator of at most 1001. The rate must be 1 to 240 fps.
 * Throws {@linkcode FrameRateError} naming `field`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseFrameRate("29.97"), { num: 30000, den: 1001 });
 * assert.deepEqual(parseFrameRate(30), { num: 30, den: 1 });
 * assert.deepEqual(parseFrameRate("12.5"), { num: 25, den: 2 });
 * assert.throws(() => parseFrameRate("0"), FrameRateError);
 * ```
 */
export function parseFrameRate(input: string | number, field = "fps"): FrameRate {
  if (typeof input === "number") {
    if (!Number.isFinite(input)) throw new FrameRateError(field, `must be ${HELP}, got ${input}`);
    if (input <= 0) checkRange(field, { num: 0, den: 1 }, String(input));
    if (Number.isInteger(input)) return checkRange(field, { num: input, den: 1 }, String(input));
    const rate = ntscRate(input, decimalsOf(String(input))) ?? fractionOf(input);
    if (!rate) {
      throw new FrameRateError(
        field,
        `${input} is not a rate with a denominator up to ${MAX_RATE_DENOMINATOR}; write it ` +
          `as a fraction such as 30000/1001`,
      );
    }
    return checkRange(field, rate, String(input));
  }
  const text = input.trim();
  const fraction = /^(\d+)\s*\/\s*(\d+)$/.exec(text);
  if (fraction) {
    const num = Number(fraction[1]);
    const den = Number(fraction[2]);
    if (!Number.isSafeInteger(num) || !Number.isSafeInteger(den) || num === 0 || den === 0) {
      throw new FrameRateError(field, `must be ${HELP}, got ${JSON.stringify(input)}`);
    }
    const rate = reduced(num, den);
    if (rate.den > MAX_RATE_DENOMINATOR) {
      throw new FrameRateError(
        field,
        `${text} has a denominator above ${MAX_RATE_DENOMINATOR} once reduced; use a rate ` +
          `such as 30000/1001`,
      );
    }
    return checkRange(field, rate, text);
  }
  if (!/^\d+(\.\d+)?$/.test(text)) {
    throw new FrameRateError(field, `must be ${HELP}, got ${JSON.stringify(input)}`);
  }
  const value = Number(text);
  if (Number.isInteger(value)) return checkRange(field, { num: value, den: 1 }, text);
  const decimals = decimalsOf(text);
  const ntsc = ntscRate(value, decimals);
  if (ntsc) return checkRange(field, ntsc, text);
  // Any other decimal is exact: 12.5 = 25/2.
  const digits = text.replace(/0+$/, "");
  const places = decimalsOf(digits) ?? 0;
  const rate = reduced(Number(digits.replace(".", "")), 10 ** places);
  if (rate.den > MAX_RATE_DENOMINATOR) {
    throw new FrameRateError(
      field,
      `${text} has too many decimals; write it as a fraction such as 30000/1001`,
    );
  }
  return checkRange(field, rate, text);
}

function decimalsOf(text: string): number | undefined {
  const dot = text.indexOf(".");
  return dot < 0 || /e/i.test(text) ? undefined : text.length - dot - 1;
}

/**
 * Frames per second as a number: num / den.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(frameRateValue({ num: 30000, den: 1001 }), 29.97002997002997);
 * ```
 */
export function frameRateValue(rate: FrameRate): number {
  return rate.num / rate.den;
}

/**
 * Time of frame `frame` in seconds: frame × den / num (exact for integer rates, and
 * correctly rounded for rational ones).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(frameTime(30, { num: 30000, den: 1001 }), 1.001);
 * ```
 */
export function frameTime(frame: number, rate: FrameRate): number {
  return (frame * rate.den) / rate.num;
}

/**
 * Frames of a composition `duration` seconds long: duration × rate rounded to the nearest
 * whole frame (halves round up), and at least 1. 10 s at 29.97 is 300 frames (10.01 s);
 * 1.5 s at 25 fps is 38 frames.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(frameCountOf(10, { num: 30000, den: 1001 }), 300);
 * assert.equal(frameCountOf(1.5, { num: 25, den: 1 }), 38);
 * ```
 */
export function frameCountOf(duration: number, rate: FrameRate): number {
  // The 1e-9 keeps a product such as 2.3 × 30 = 68.99999999999999 on its whole frame.
  return Math.max(1, Math.round((duration * rate.num) / rate.den + 1e-9));
}

/**
 * The rate as ffmpeg takes it for `-r` / `-framerate`: `30` or `30000/1001`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(ffmpegRate({ num: 30000, den: 1001 }), "30000/1001");
 * assert.equal(ffmpegRate({ num: 30, den: 1 }), "30");
 * ```
 */
export function ffmpegRate(rate: FrameRate): string {
  return rate.den === 1 ? String(rate.num) : `${rate.num}/${rate.den}`;
}

/**
 * The rate for people: `30`, `29.97`, `23.976`, `12.5`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(formatFrameRate({ num: 24000, den: 1001 }), "23.976");
 * assert.equal(formatFrameRate({ num: 30, den: 1 }), "30");
 * ```
 */
export function formatFrameRate(rate: FrameRate): string {
  if (rate.den === 1) return String(rate.num);
  return String(Number(frameRateValue(rate).toFixed(3)));
}
