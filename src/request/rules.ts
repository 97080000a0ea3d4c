/**
 * The rules of a render request that tie two options together, one function each with
 * one message, used by every surface that accepts both options. Each throws
 * {@linkcode RenderOptionError} naming the option to change.
 *
 * @module
 */

import type { OutputFormat, RenderFormat } from "./formats.ts";
import { RenderOptionError } from "./errors.ts";
import { flagOf, OPTIONS, type Resolution } from "./options.ts";

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
