/**
 * The function time cap of a distributed render: how long a chunk is likely to take for
 * the function's memory, and the warning `renderToLambda` gives before starting when the
 * largest planned chunk is likely to come near the cap (15 minutes on Lambda, or
 * `VID_LAMBDA_TIMEOUT_SECONDS` on the local stack).
 *
 * The heuristic of {@linkcode estimateChunkSeconds}: one 1920x1080 frame takes about
 * {@linkcode SECONDS_PER_1080P_FRAME_AT_MAX_MEMORY} s (capture and encode) on a 10240 MB
 * function, which has 6 vCPUs. Lambda gives one vCPU per 1769 MB
 * ({@linkcode MB_PER_VCPU}), so the time scales with `vCPUs(10240) / vCPUs(memoryMb)`
 * where `vCPUs(m) = m / 1769` (a 128 MB function has 0.07 of a vCPU, 80 times slower), and
 * with the pixel count relative to 1080p. It is a rough, deliberately pessimistic guide,
 * not a measurement.
 *
 * @module
 */

import { DEFAULT_CHUNK_SIZE } from "../render/chunk_plan.ts";
import { chunkPlan } from "../render/chunk_plan.ts";
import { frameRateValue } from "../composition/frame_rate.ts";
import type { RenderConfig } from "./config.ts";
// config.fps, parsed the one way every reader of the config parses it.
import { configFrameRate } from "../request/execution_input.ts";
import { TIME_CAP_FIX } from "./state_machine.ts";

/** Lambda's memory per vCPU, MB. */
export const MB_PER_VCPU = 1769;
/** Memory of the render function unless deployed with another (`vid lambda deploy --memory`). */
export const DEFAULT_MEMORY_MB = 10240;
/** Lambda's function time cap, seconds. */
export const DEFAULT_TIMEOUT_SECONDS = 900;
/** Seconds per 1920x1080 frame on a {@linkcode DEFAULT_MEMORY_MB} function. */
export const SECONDS_PER_1080P_FRAME_AT_MAX_MEMORY = 0.25;
/** Share of the cap above which a chunk's estimate warns. */
export const TIME_CAP_WARNING_SHARE = 0.8;

/** Input of {@linkcode estimateChunkSeconds}. */
export interface ChunkEstimateInput {
  /** Frame width in pixels. */
  width: number;
  /** Frame height in pixels. */
  height: number;
  /** Frames in the chunk. */
  frames: number;
  /** Memory of the function, MB. */
  memoryMb: number;
}

function positiveNumber(name: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive number, got ${value}`);
  }
}

/**
 * Estimated seconds one function invocation needs to render a chunk (see the module's
 * heuristic): `frames × 0.25 × (width × height / 1920 × 1080) × (10240 / 1769) /
 * (memoryMb / 1769)`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const at = (memoryMb: number) =>
 *   Math.round(estimateChunkSeconds({ width: 1920, height: 1080, frames: 240, memoryMb }));
 * assert.equal(at(10240), 60);
 * assert.equal(at(1024), 600);
 * ```
 */
export function estimateChunkSeconds(input: ChunkEstimateInput): number {
  const { width, height, frames, memoryMb } = input;
  positiveNumber("width", width);
  positiveNumber("height", height);
  positiveNumber("frames", frames);
  positiveNumber("memoryMb", memoryMb);
  const pixels = (width * height) / (1920 * 1080);
  const slowdown = (DEFAULT_MEMORY_MB / MB_PER_VCPU) / (memoryMb / MB_PER_VCPU);
  return frames * SECONDS_PER_1080P_FRAME_AT_MAX_MEMORY * pixels * slowdown;
}

/** Options of {@linkcode timeCapWarning}. */
export interface TimeCapWarningOptions {
  /** Memory of the render function, MB. @default 10240 */
  memoryMb?: number;
  /** The function time cap, seconds. @default 900 */
  timeoutSeconds?: number;
  /** Total frames of the render, when known: the largest chunk comes from the planner. */
  frames?: number;
}

/**
 * The warning for a render whose largest planned chunk is estimated above 80% of the time
 * cap, or `undefined`. Without `frames`, the largest chunk is `chunkSize` (else
 * `targetChunkFrames`, else 240); a missing width or height counts as 1920x1080.
 */
export function timeCapWarning(
  config: RenderConfig,
  options: TimeCapWarningOptions = {},
): string | undefined {
  const memoryMb = options.memoryMb ?? DEFAULT_MEMORY_MB;
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  positiveNumber("memoryMb", memoryMb);
  positiveNumber("timeoutSeconds", timeoutSeconds);
  const chunkFrames = options.frames === undefined
    ? config.chunkSize ?? config.targetChunkFrames ?? DEFAULT_CHUNK_SIZE
    : Math.max(
      ...chunkPlan({
        frames: options.frames,
        fps: frameRateValue(configFrameRate(config)),
        chunkSize: config.chunkSize,
        targetChunkFrames: config.targetChunkFrames,
        maxParallelChunks: config.maxParallelChunks,
      }).map((c) => c.frames),
    );
  const width = config.width ?? 1920;
  const height = config.height ?? 1080;
  const estimate = estimateChunkSeconds({ width, height, frames: chunkFrames, memoryMb });
  if (estimate <= TIME_CAP_WARNING_SHARE * timeoutSeconds) return undefined;
  return `the largest chunk (${chunkFrames} frames at ${width}x${height}) is estimated at ` +
    `~${Math.round(estimate)} s on a ${memoryMb} MB function, over ` +
    `${Math.round(TIME_CAP_WARNING_SHARE * 100)}% of the ${timeoutSeconds} s function time ` +
    `cap; it may time out: ${TIME_CAP_FIX}`;
}
