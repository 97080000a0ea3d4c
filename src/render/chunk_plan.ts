/**
 * The chunk planner: splits a frame range into contiguous chunks. One planner serves
 * local parallel rendering, the hosted server and the distributed (Lambda) path.
 *
 * Spec rules: with `chunkSize` unset and `targetChunkFrames` set, the chunk count is
 * clamp(ceil(frames / targetChunkFrames), 1, maxParallelChunks). With `chunkSize` set the
 * target is ignored. With neither, `chunkSize` defaults to 240. The count never exceeds
 * ceil(frames / chunkSize) and is capped by `maxParallelChunks`. Frames are spread
 * evenly: chunk sizes differ by at most one frame.
 *
 * @module
 */

/** Default frames per chunk. */
export const DEFAULT_CHUNK_SIZE = 240;
/** Default cap on chunks rendered in parallel. */
export const DEFAULT_MAX_PARALLEL_CHUNKS = 16;

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
}

/** Options of {@linkcode chunkPlan}. */
export interface ChunkPlanOptions {
  /** First frame of the range. @default 0 */
  from?: number;
  /** Number of frames in the range. */
  frames: number;
  /** Frames per chunk. @default 240 */
  chunkSize?: number;
  /** Ceiling on frames per chunk, used only when `chunkSize` is unset. */
  targetChunkFrames?: number;
  /** Cap on the number of chunks. @default 16 */
  maxParallelChunks?: number;
}

/** A chunk planning option is out of range. */
export class ChunkPlanError extends Error {
  /** Always `"ChunkPlanError"`. */
  override name = "ChunkPlanError";
  /** The option at fault, e.g. `chunkSize`. */
  readonly field: string;
  /**
   * Creates the error, naming the option, what it must be and what was given.
   *
   * @param field The option at fault.
   * @param value The value given, shown as JSON.
   * @param expected What the option must be, in words.
   */
  constructor(field: string, value: unknown, expected = "a positive integer") {
    super(`${field} must be ${expected}, got ${JSON.stringify(value)}`);
    this.field = field;
  }
}

function positive(field: string, value: number | undefined): void {
  if (value !== undefined && (!Number.isInteger(value) || value <= 0)) {
    throw new ChunkPlanError(field, value);
  }
}

/** The number of chunks the spec's rules give. */
export function chunkCount(options: ChunkPlanOptions): number {
  positive("frames", options.frames);
  positive("chunkSize", options.chunkSize);
  positive("targetChunkFrames", options.targetChunkFrames);
  positive("maxParallelChunks", options.maxParallelChunks);
  const max = options.maxParallelChunks ?? DEFAULT_MAX_PARALLEL_CHUNKS;
  const per = options.chunkSize ?? options.targetChunkFrames ?? DEFAULT_CHUNK_SIZE;
  return Math.min(Math.max(Math.ceil(options.frames / per), 1), max);
}

/**
 * Plans chunks for a frame range.
 *
 * @example
 * ```ts
 * chunkPlan({ frames: 1800 }); // 8 chunks of 225 frames (60 s at 30 fps)
 * chunkPlan({ frames: 150, targetChunkFrames: 50 }).length; // 3
 * ```
 */
export function chunkPlan(options: ChunkPlanOptions): Chunk[] {
  const count = chunkCount(options);
  const start = options.from ?? 0;
  if (!Number.isInteger(start) || start < 0) {
    throw new ChunkPlanError("from", options.from, "a non-negative integer");
  }
  const base = Math.floor(options.frames / count);
  const extra = options.frames % count;
  const chunks: Chunk[] = [];
  let from = start;
  for (let index = 0; index < count; index++) {
    const frames = base + (index < extra ? 1 : 0);
    chunks.push({ index, from, to: from + frames - 1, frames });
    from += frames;
  }
  return chunks;
}
