/**
 * The chunk planner: splits a frame range into contiguous chunks. One planner serves
 * local parallel rendering, the hosted server and the distributed (Lambda) path.
 *
 * Count: with `chunkSize` unset and `targetChunkFrames` set, the chunk count is
 * clamp(ceil(frames / targetChunkFrames), 1, maxParallelChunks). With `chunkSize` set the
 * target is ignored. With neither, `chunkSize` defaults to 240. The count never exceeds
 * ceil(frames / chunkSize) and is capped by `maxParallelChunks`.
 *
 * A target is a ceiling: no chunk of a target plan is longer than `targetChunkFrames` (while
 * `maxParallelChunks` allows), so the count is raised where whole cells would overshoot it
 * (300 frames at 30 fps, target 100: four chunks of 90, 90, 60 and 60 frames, not 120, 90, 90).
 * A target below one cell shrinks the cells to the target ({@linkcode Chunk.cellFrames}):
 * that output has a keyframe every `targetChunkFrames` frames, so it is larger for the same
 * quality and no longer byte-identical to a render on the 1-second grid.
 *
 * The GOP grid: the range is cut into cells of {@linkcode gopFrames}(fps) = fps frames
 * (1 second; rounded for a rational rate) from its first frame, the last cell possibly shorter. Every cell is encoded
 * by its own encoder run (`startEncoder`'s `cellFrames`), so a cell's bytes do not depend
 * on the chunk it falls in, and a distributed render is frame-identical to a local one for
 * any chunk plan. Chunks therefore hold whole cells: the count is also capped by the
 * number of cells, and cells are spread evenly (the first chunks take the extra cell), so
 * chunk sizes are multiples of the grid, differ by at most one cell, and only the last
 * chunk ends off the grid (at the last frame). At an integer rate a cell is a whole second,
 * so a join falls on a timestamp every container time base holds exactly.
 *
 * @module
 */

// The chunking defaults belong to the render request (src/request/formats.ts).
import {
  DEFAULT_CHUNK_SIZE,
  DEFAULT_FPS,
  DEFAULT_MAX_PARALLEL_CHUNKS,
} from "../request/formats.ts";
export { DEFAULT_CHUNK_SIZE, DEFAULT_MAX_PARALLEL_CHUNKS };
import { VidError } from "../errors.ts";
import { RenderOptionError } from "../request/errors.ts";
import { checkOption, type OptionDeclaration, OPTIONS } from "../request/options.ts";
/** Seconds of one GOP grid cell. */
export const GOP_SECONDS = 1;

/**
 * Frames of one GOP grid cell at `fps`: 1 second, `fps` frames (rounded for a rational
 * rate: 30 frames at 29.97). Chunks hold whole cells and every cell is one encoder run
 * (one closed GOP starting on a keyframe).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(gopFrames(30), 30);
 * assert.equal(gopFrames(30000 / 1001), 30);
 * ```
 */
export function gopFrames(fps: number): number {
  return Math.max(1, Math.round(GOP_SECONDS * fps));
}

/** One contiguous frame range, inclusive on both ends. */
export interface Chunk {
  /** Position in the plan, from 0. */
  index: number;
  /** First frame. */
  from: number;
  /** Last frame (inclusive). */
  to: number;
  /** Number of frames, `to - from + 1`. */
  frames: number;
  /**
   * Frames per encoder run when the plan's grid is finer than {@linkcode gopFrames}(fps): a
   * target below a second. Absent on the 1-second grid.
   */
  cellFrames?: number;
}

/** Options of {@linkcode chunkPlan}. */
export interface ChunkPlanOptions {
  /** First frame of the range. @default 0 */
  from?: number;
  /** Number of frames in the range. */
  frames: number;
  /**
   * Frames per second (num / den for a rational rate): sets the GOP grid
   * ({@linkcode gopFrames}). @default 30
   */
  fps?: number;
  /** Frames per chunk. @default 240 */
  chunkSize?: number;
  /** Ceiling on frames per chunk, used only when `chunkSize` is unset. */
  targetChunkFrames?: number;
  /** Cap on the number of chunks. @default 16 */
  maxParallelChunks?: number;
}

/**
 * A chunk planning option is out of range: a {@linkcode VidError} whose `field` is the SDK
 * key (`chunkSize`) and `flag` the command-line flag (`--chunk-size`). The chunk options
 * are checked by their declarations (`src/request/options.ts`), so the words are those of
 * `vid render --chunk-size`; the planner's own inputs (`frames`, `fps`, `from`) have no flag.
 */
export class ChunkPlanError extends VidError {
  /** Always `"ChunkPlanError"`. */
  override name = "ChunkPlanError";
  /** The option at fault, e.g. `chunkSize`. */
  declare readonly field: string;
  /** What is wrong, e.g. `must be a positive integer, got 0`. */
  declare readonly detail: string;
  /**
   * Creates the error, naming the option, what it must be and what was given.
   *
   * @param field The option at fault.
   * @param detail What is wrong; the message is `<field>: <detail>`.
   * @param flag The command-line flag of the option, when it has one.
   */
  constructor(field: string, detail: string, flag?: string) {
    super(`${field}: ${detail}`, { field, flag, detail });
  }
}

function positiveRate(value: number | undefined): void {
  if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
    throw new ChunkPlanError(
      "fps",
      `must be a positive number of frames per second, got ${JSON.stringify(value)}`,
    );
  }
}

/** The planner's frame count: a positive integer (an invariant of its caller, no flag). */
function positiveFrames(value: number): void {
  if (!Number.isInteger(value) || value <= 0) {
    throw new ChunkPlanError("frames", `must be a positive integer, got ${JSON.stringify(value)}`);
  }
}

/** A chunk option, checked by its declaration: the CLI's words, as a ChunkPlanError. */
function declared(declaration: OptionDeclaration<string, number>, value: unknown): void {
  try {
    checkOption(declaration, value);
  } catch (error) {
    if (!(error instanceof RenderOptionError)) throw error;
    throw new ChunkPlanError(error.field, error.detail, error.flag);
  }
}

/**
 * Frames of a grid cell of the plan: {@linkcode gopFrames}(fps), or a target below that (a
 * target applies only without `chunkSize`).
 */
function cellFramesOf(options: ChunkPlanOptions): number {
  const gop = gopFrames(options.fps ?? DEFAULT_FPS);
  const target = options.chunkSize === undefined ? options.targetChunkFrames : undefined;
  return target === undefined ? gop : Math.min(gop, target);
}

/** Grid cells of a range: ceil(frames / cell). */
function cellCount(options: ChunkPlanOptions): number {
  return Math.ceil(options.frames / cellFramesOf(options));
}

/**
 * The number of chunks: the count rules above, capped by the number of GOP grid cells.
 */
export function chunkCount(options: ChunkPlanOptions): number {
  positiveFrames(options.frames);
  positiveRate(options.fps);
  declared(OPTIONS.chunkSize, options.chunkSize);
  declared(OPTIONS.targetChunkFrames, options.targetChunkFrames);
  declared(OPTIONS.maxParallelChunks, options.maxParallelChunks);
  const max = options.maxParallelChunks ?? DEFAULT_MAX_PARALLEL_CHUNKS;
  const per = options.chunkSize ?? options.targetChunkFrames ?? DEFAULT_CHUNK_SIZE;
  const cells = cellCount(options);
  let wanted = Math.max(Math.ceil(options.frames / per), 1);
  if (options.chunkSize === undefined && options.targetChunkFrames !== undefined) {
    // A ceiling: chunks of at most floor(target / cell) whole cells each.
    const cellsPerChunk = Math.floor(options.targetChunkFrames / cellFramesOf(options));
    wanted = Math.max(wanted, Math.ceil(cells / cellsPerChunk));
  }
  return Math.min(wanted, max, cells);
}

/**
 * Plans chunks of whole GOP grid cells for a frame range.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * // 60 s at 30 fps: 60 cells of 30 frames in 8 chunks, 4 x 240 and 4 x 210 frames
 * const sizes = chunkPlan({ frames: 1800, fps: 30 }).map((c) => c.frames);
 * assert.deepEqual(sizes, [240, 240, 240, 240, 210, 210, 210, 210]);
 * // a target is a ceiling: 300 frames, target 100, whole 30-frame cells
 * const small = chunkPlan({ frames: 300, fps: 30, targetChunkFrames: 100 }).map((c) => c.frames);
 * assert.deepEqual(small, [90, 90, 60, 60]);
 * ```
 */
export function chunkPlan(options: ChunkPlanOptions): Chunk[] {
  const count = chunkCount(options);
  const start = options.from ?? 0;
  if (!Number.isInteger(start) || start < 0) {
    throw new ChunkPlanError(
      "from",
      `must be a non-negative integer, got ${JSON.stringify(options.from)}`,
    );
  }
  const cell = cellFramesOf(options);
  const fine = cell !== gopFrames(options.fps ?? DEFAULT_FPS);
  const cells = cellCount(options);
  const base = Math.floor(cells / count);
  const extra = cells % count;
  const end = start + options.frames;
  const chunks: Chunk[] = [];
  let from = start;
  for (let index = 0; index < count; index++) {
    const to = Math.min(from + (base + (index < extra ? 1 : 0)) * cell, end) - 1;
    chunks.push({ index, from, to, frames: to - from + 1, ...(fine ? { cellFrames: cell } : {}) });
    from = to + 1;
  }
  return chunks;
}
