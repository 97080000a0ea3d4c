/**
 * The rules of a render request that tie two options together, one function each with
 * one message, used by every surface that accepts both options. Each throws
 * {@linkcode RenderOptionError} naming the option to change.
 *
 * @module
 */

import type { OutputFormat, RenderFormat } from "./formats.ts";
import { RenderOptionError } from "./errors.ts";
import { checkOption, flagOf, MAX_DIMENSION, OPTIONS, type Resolution } from "./options.ts";

/**
 * 4k renders have no alpha path: webm and mov carry alpha and render at native resolution
 * only, so 4k must be mp4.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * checkResolutionFormat("4k", "mp4"); // fine
 * assert.throws(() => checkResolutionFormat("4k", "webm"), { field: "resolution" });
 * ```
 */
export function checkResolutionFormat(
  resolution: Resolution,
  format: OutputFormat,
  field = "resolution",
): void {
  if (resolution === "4k" && format !== "mp4") {
    throw new RenderOptionError(
      field,
      `4k cannot be ${format}: the 4k path has no alpha channel. Use mp4, or render alpha at ` +
        "native resolution",
      flagOf(OPTIONS.resolution),
    );
  }
}

/** High-dynamic-range output is an mp4 (10-bit HEVC, HLG): no other format carries it. */
export function checkHdrFormat(hdr: boolean | undefined, format: RenderFormat): void {
  if (hdr && format !== "mp4") {
    throw new RenderOptionError(
      "hdr",
      `HDR output is an mp4 (10-bit HEVC, HLG); it cannot be ${format}`,
      flagOf(OPTIONS.hdr),
    );
  }
}

/** A still is picked by frame or by time, not both. */
export function checkFrameOrTime(frame: number | undefined, time: number | undefined): void {
  if (frame !== undefined && time !== undefined) {
    throw new RenderOptionError("frame", "give --frame or --time, not both", flagOf(OPTIONS.frame));
  }
}

/**
 * The frame size of a render at `scale` device pixels per CSS pixel (`--scale`): each side
 * of `size` times the scale, which must stay within what the encoders take
 * ({@linkcode MAX_DIMENSION} pixels a side). Throws {@linkcode RenderOptionError} naming
 * `scale` and the largest scale that fits.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(scaledSize({ width: 1920, height: 1080 }, 2), { width: 3840, height: 2160 });
 * assert.throws(() => scaledSize({ width: 1920, height: 1080 }, 5), { field: "scale" });
 * ```
 */
export function scaledSize(
  size: { width: number; height: number },
  scale: number,
  field = "scale",
): { width: number; height: number } {
  checkOption(OPTIONS.scale, scale, field);
  const width = size.width * scale;
  const height = size.height * scale;
  if (width > MAX_DIMENSION || height > MAX_DIMENSION) {
    const fits = Math.floor(MAX_DIMENSION / Math.max(size.width, size.height));
    throw new RenderOptionError(
      field,
      `${scale} makes a ${width}x${height} frame, larger than the ${MAX_DIMENSION} pixels a side ` +
        `the encoders take; ${
          fits >= 1 ? `use --scale ${fits} or less` : "make the composition smaller"
        }`,
      flagOf(OPTIONS.scale),
    );
  }
  return { width, height };
}
