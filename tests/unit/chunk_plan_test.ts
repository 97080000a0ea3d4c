/**
 * Unit tests of the chunk planner against its rules: defaults (240 frames per
 * chunk, 16 chunks at most), `targetChunkFrames` as a ceiling when `chunkSize` is unset,
 * contiguous even chunks, and errors naming the field at fault; and the GOP grid: chunks
 * hold whole 1-second cells (fps frames). The count rules are checked at fps 1, where a
 * cell is one frame, so the grid does not round them.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  type Chunk,
  chunkCount,
  chunkPlan,
  ChunkPlanError,
  type ChunkPlanOptions,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_MAX_PARALLEL_CHUNKS,
  gopFrames,
} from "../../src/render/chunk_plan.ts";

/** Asserts the invariants every plan must hold; `cell` is the GOP grid's cell size. */
function assertWellFormed(chunks: Chunk[], from: number, frames: number, cell = 1): void {
  assert.ok(chunks.length >= 1, "at least one chunk");
  assert.equal(chunks[0].from, from, "the first chunk starts at `from`");
  assert.equal(chunks.at(-1)!.to, from + frames - 1, "the last chunk ends at the last frame");
  let next = from;
  for (const [i, chunk] of chunks.entries()) {
    assert.equal(chunk.index, i, `chunk ${i}: index`);
    assert.equal(chunk.from, next, `chunk ${i}: contiguous with the previous chunk`);
    assert.equal(chunk.frames, chunk.to - chunk.from + 1, `chunk ${i}: frames = to - from + 1`);
    assert.ok(chunk.frames >= 1, `chunk ${i}: not empty`);
    next = chunk.to + 1;
  }
  assert.equal(chunks.reduce((sum, c) => sum + c.frames, 0), frames, "frames add up");
  for (const chunk of chunks.slice(0, -1)) {
    assert.equal(chunk.frames % cell, 0, `chunk ${chunk.index}: whole cells of ${cell}`);
  }
  const cells = chunks.map((c) => Math.ceil(c.frames / cell));
  assert.ok(Math.max(...cells) - Math.min(...cells) <= 1, `even sizes: ${cells.join(", ")}`);
}

describe("chunkPlan defaults", () => {
  it("uses 240 frames per chunk and at most 16 chunks", () => {
    assert.equal(DEFAULT_CHUNK_SIZE, 240);
    assert.equal(DEFAULT_MAX_PARALLEL_CHUNKS, 16);
  });

  it("plans a 5-second 30 fps render (150 frames) as one chunk", () => {
    const chunks = chunkPlan({ frames: 150, fps: 30 });
    assert.deepEqual(chunks, [{ index: 0, from: 0, to: 149, frames: 150 }]);
  });

  it("plans 60 seconds at 30 fps (1800 frames) as 8 chunks of whole seconds", () => {
    const chunks = chunkPlan({ frames: 1800, fps: 30 });
    assert.equal(chunks.length, 8);
    assertWellFormed(chunks, 0, 1800, 30);
    assert.deepEqual(chunks.map((c) => c.frames), [240, 240, 240, 240, 210, 210, 210, 210]);
  });

  it("caps the count at 16 chunks by default", () => {
    const chunks = chunkPlan({ frames: 240 * 40, fps: 30 });
    assert.equal(chunks.length, 16);
    assertWellFormed(chunks, 0, 240 * 40, 30);
  });

  it("gives exactly ceil(frames / 240) chunks around the boundary", () => {
    assert.equal(chunkCount({ frames: 240, fps: 30 }), 1);
    assert.equal(chunkCount({ frames: 241, fps: 30 }), 2);
    assert.equal(chunkCount({ frames: 480, fps: 30 }), 2);
    assert.equal(chunkCount({ frames: 481, fps: 30 }), 3);
    assert.equal(chunkCount({ frames: 1, fps: 30 }), 1);
  });
});

describe("chunkPlan on the GOP grid", () => {
  it("has cells of one second", () => {
    assert.equal(gopFrames(30), 30);
    assert.equal(gopFrames(5), 5);
    assert.equal(gopFrames(30000 / 1001), 30, "29.97: rounded to whole frames");
    assert.equal(gopFrames(12.5), 13);
  });

  it("rounds chunk sizes to whole cells; only the last chunk ends off the grid", () => {
    // 100 frames at 30 fps: cells of 30, 30, 30 and 10 frames.
    assert.deepEqual(chunkPlan({ frames: 100, fps: 30, chunkSize: 50 }).map((c) => c.frames), [
      60,
      40,
    ]);
    assert.deepEqual(
      chunkPlan({ frames: 300, fps: 30, targetChunkFrames: 100 }).map((c) => c.frames),
      [90, 90, 60, 60],
      "the target is a ceiling: whole cells of at most 100 frames (not 120, 90, 90)",
    );
  });

  it("never exceeds the target while maxParallelChunks allows, on the grid or finer", () => {
    for (const fps of [24, 30, 60]) {
      for (const target of [1, 7, 29, 30, 31, 59, 60, 61, 100, 240, 1000]) {
        for (const frames of [1, 29, 30, 31, 300, 901]) {
          const options = { frames, fps, targetChunkFrames: target, maxParallelChunks: 1000 };
          const chunks = chunkPlan(options);
          const label = JSON.stringify(options);
          assert.ok(chunks.every((c) => c.frames <= target), `${label}: ${chunks.length}`);
          const cell = Math.min(gopFrames(fps), target);
          // Chunks hold whole cells; below a second the cells are the target.
          assert.ok(chunks.slice(0, -1).every((c) => c.frames % cell === 0), label);
          assert.ok(
            chunks.every((c) => c.cellFrames === (cell < gopFrames(fps) ? cell : undefined)),
            label,
          );
          assertWellFormed(chunks, 0, frames, cell);
        }
      }
    }
  });

  it("never has more chunks than cells", () => {
    assert.equal(chunkPlan({ frames: 30, fps: 30, chunkSize: 10 }).length, 1);
    assert.equal(chunkPlan({ frames: 31, fps: 30, chunkSize: 10 }).length, 2);
    // A target below a second makes the cells the target's size: 150 cells, capped at 16.
    assert.equal(chunkCount({ frames: 150, fps: 30, targetChunkFrames: 1 }), 16);
    assert.equal(
      chunkCount({ frames: 150, fps: 30, targetChunkFrames: 1, maxParallelChunks: 500 }),
      150,
    );
  });

  it("lays the grid from `from`, for any plan", () => {
    for (const frames of [1, 29, 30, 31, 299, 1801]) {
      for (const chunkSize of [1, 45, 60, 100, 240]) {
        for (const fps of [5, 24, 30, 60]) {
          const chunks = chunkPlan({ from: 7, frames, fps, chunkSize, maxParallelChunks: 1000 });
          assertWellFormed(chunks, 7, frames, fps);
          assert.ok(chunks.length <= Math.ceil(frames / chunkSize));
        }
      }
    }
  });
});

describe("chunkPlan with targetChunkFrames", () => {
  it("gives clamp(ceil(frames / target), 1, maxParallelChunks) chunks", () => {
    const cases: [ChunkPlanOptions, number][] = [
      [{ frames: 150, targetChunkFrames: 50 }, 3],
      [{ frames: 151, targetChunkFrames: 50 }, 4],
      [{ frames: 150, targetChunkFrames: 1000 }, 1],
      [{ frames: 150, targetChunkFrames: 1 }, 16],
      [{ frames: 150, targetChunkFrames: 1, maxParallelChunks: 4 }, 4],
      [{ frames: 100, targetChunkFrames: 10, maxParallelChunks: 32 }, 10],
      [{ frames: 7, targetChunkFrames: 2, maxParallelChunks: 100 }, 4],
    ];
    for (const [options, expected] of cases) {
      const count = Math.min(
        Math.max(Math.ceil(options.frames / options.targetChunkFrames!), 1),
        options.maxParallelChunks ?? 16,
      );
      assert.equal(count, expected, `test table: ${JSON.stringify(options)}`);
      const chunks = chunkPlan({ fps: 1, ...options });
      assert.equal(chunks.length, expected, JSON.stringify(options));
      assert.equal(chunkCount({ fps: 1, ...options }), expected, JSON.stringify(options));
      assertWellFormed(chunks, 0, options.frames);
    }
  });

  it("treats the target as a ceiling on chunk size while the cap allows", () => {
    const chunks = chunkPlan({ fps: 1, frames: 1000, targetChunkFrames: 90 });
    assert.equal(chunks.length, 12);
    assert.ok(chunks.every((c) => c.frames <= 90), chunks.map((c) => c.frames).join(","));
  });

  it("ignores the target when chunkSize is set", () => {
    const withTarget = chunkPlan({ fps: 1, frames: 600, chunkSize: 200, targetChunkFrames: 10 });
    assert.equal(withTarget.length, 3);
    assert.deepEqual(withTarget, chunkPlan({ fps: 1, frames: 600, chunkSize: 200 }));
    assert.equal(chunkCount({ fps: 1, frames: 600, chunkSize: 600, targetChunkFrames: 1 }), 1);
  });
});

describe("chunkPlan with chunkSize", () => {
  it("never exceeds ceil(frames / chunkSize) chunks", () => {
    for (const frames of [1, 2, 9, 10, 11, 99, 100, 101, 239, 240, 241, 1000]) {
      for (const chunkSize of [1, 3, 10, 50, 240, 5000]) {
        const chunks = chunkPlan({ fps: 1, frames, chunkSize, maxParallelChunks: 1000 });
        assert.equal(
          chunks.length,
          Math.ceil(frames / chunkSize),
          `frames ${frames}, chunkSize ${chunkSize}`,
        );
        assertWellFormed(chunks, 0, frames);
      }
    }
  });

  it("is capped by maxParallelChunks (chunks then grow beyond chunkSize)", () => {
    const chunks = chunkPlan({ fps: 1, frames: 1000, chunkSize: 10, maxParallelChunks: 4 });
    assert.equal(chunks.length, 4);
    assert.deepEqual(chunks.map((c) => c.frames), [250, 250, 250, 250]);
  });

  it("spreads the remainder one frame at a time over the first chunks", () => {
    const chunks = chunkPlan({ fps: 1, frames: 10, chunkSize: 3 });
    assert.deepEqual(chunks, [
      { index: 0, from: 0, to: 2, frames: 3 },
      { index: 1, from: 3, to: 5, frames: 3 },
      { index: 2, from: 6, to: 7, frames: 2 },
      { index: 3, from: 8, to: 9, frames: 2 },
    ]);
  });
});

describe("chunkPlan from offset", () => {
  it("starts the plan at `from` and covers exactly `frames` frames", () => {
    const chunks = chunkPlan({ fps: 1, from: 10, frames: 10, targetChunkFrames: 4 });
    assert.deepEqual(chunks, [
      { index: 0, from: 10, to: 13, frames: 4 },
      { index: 1, from: 14, to: 16, frames: 3 },
      { index: 2, from: 17, to: 19, frames: 3 },
    ]);
  });

  it("holds the invariants for many shapes", () => {
    for (const from of [0, 1, 37, 1000]) {
      for (const frames of [1, 2, 5, 16, 17, 239, 241, 3601]) {
        for (const max of [1, 2, 3, 16]) {
          const chunks = chunkPlan({
            fps: 1,
            from,
            frames,
            maxParallelChunks: max,
            targetChunkFrames: 7,
          });
          assert.ok(chunks.length <= max);
          assertWellFormed(chunks, from, frames);
        }
      }
    }
  });
});

describe("chunkPlan errors", () => {
  const invalid: [keyof ChunkPlanOptions, number][] = [
    ["frames", 0],
    ["frames", -3],
    ["frames", 2.5],
    ["frames", Number.NaN],
    ["chunkSize", 0],
    ["chunkSize", -1],
    ["chunkSize", 1.5],
    ["targetChunkFrames", 0],
    ["targetChunkFrames", Number.POSITIVE_INFINITY],
    ["maxParallelChunks", 0],
    ["maxParallelChunks", 0.5],
    ["fps", 0],
    ["fps", Number.NaN],
    ["from", -1],
    ["from", 1.5],
  ];
  for (const [field, value] of invalid) {
    it(`rejects ${field} = ${value} with a ChunkPlanError naming ${field}`, () => {
      const options: ChunkPlanOptions = { frames: 100, [field]: value };
      for (const plan of [chunkPlan, chunkCount]) {
        if (field === "from" && plan === chunkCount) continue;
        assert.throws(() => plan(options), (error: unknown) => {
          assert.ok(error instanceof ChunkPlanError, `got ${error}`);
          assert.equal(error.name, "ChunkPlanError");
          assert.equal(error.field, field);
          assert.match(error.message, new RegExp(`^${field}\\b`));
          return true;
        });
      }
    });
  }

  it("accepts from = 0", () => {
    assert.equal(chunkPlan({ from: 0, frames: 3 }).length, 1);
  });
});
