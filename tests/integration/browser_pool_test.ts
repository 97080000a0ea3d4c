/**
 * Warm capture browsers (`createBrowserPool`, used by the preview studio and `vid server`):
 * consecutive renders through a pool capture with the same browser process, leave no
 * windows behind in it, still produce the right frames; a browser that died in the pool
 * is replaced; closing the pool ends the kept browser. A render with N workers captures in
 * N browsers (a browser's compositor takes one BeginFrame at a time), launched for the
 * render and gone when it returns; with a pool, the pool's browser is the first of them.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { recordBrowsersIn } from "../../src/render/browser.ts";
import { createBrowserPool } from "../../src/render/capture_mode.ts";
import { renderComposition } from "../../src/render/render.ts";
import { compositionHtml, makeProject, pixelSeries, waitFor } from "../helpers.ts";

let project: string;
let twoChunks: string;
let scratch: string;
let records: string;

before(async () => {
  records = await Deno.makeTempDir({ prefix: "vid-pool-browsers-" });
  recordBrowsersIn(records);
  project = await makeProject(
    compositionHtml(
      `<div style="position:absolute;inset:0;background:#2080ff"></div>`,
      { id: "warm", duration: 0.4 },
    ),
  );
  twoChunks = await makeProject(
    compositionHtml(
      `<div style="position:absolute;inset:0;animation:f 2s linear both"></div>`,
      {
        id: "two",
        duration: 2,
        head: `<style>@keyframes f { from { background: #000 } to { background: #00f } }</style>`,
      },
    ),
  );
  scratch = await Deno.makeTempDir({ prefix: "vid-pool-" });
});

after(async () => {
  recordBrowsersIn(undefined);
  await Deno.remove(records, { recursive: true });
  await Deno.remove(project, { recursive: true });
  await Deno.remove(twoChunks, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

/**
 * Pids of the capture browsers this file launched that still run, from the records the
 * browser launcher keeps (`recordBrowsersIn`, what `vid server` reaps after a crash): one
 * `browser-<pid>.json` per browser while it runs. Module state, so only this file's
 * browsers: the test process's children also hold the browsers of files running alongside.
 */
function capturingBrowsers(): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync(records)) {
    const pid = Number(/^browser-(\d+)\.json$/.exec(entry.name)?.[1]);
    if (pid && running(pid)) pids.push(pid);
  }
  return pids;
}

/** Renders a 10-frame, two-chunk fade with two workers, noting every browser seen meanwhile. */
async function renderWithTwoWorkers(
  output: string,
  extra: { browsers?: ReturnType<typeof createBrowserPool>; warm?: number } = {},
): Promise<{ seen: Set<number>; frames: number }> {
  const seen = new Set<number>();
  // Browsers running before the render (a pool's idle one aside) are not the render's.
  const earlier = new Set(capturingBrowsers().filter((pid) => pid !== extra.warm));
  const note = () => capturingBrowsers().forEach((pid) => earlier.has(pid) || seen.add(pid));
  const watch = setInterval(note, 20);
  try {
    const result = await renderComposition({
      target: twoChunks,
      fps: 5,
      chunkSize: 5,
      workers: 2,
      output,
      browsers: extra.browsers,
      onProgress: note,
    });
    assert.equal(result.workers, 2);
    assert.equal(result.chunks, 2);
    return { seen, frames: result.frames };
  } finally {
    clearInterval(watch);
  }
}

function running(pid: number): boolean {
  try {
    const state = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1]?.[0];
    return state !== undefined && state !== "Z";
  } catch {
    return false;
  }
}

describe("warm browser pool", () => {
  it("two renders share one browser process, which has no windows left after each", async () => {
    const pool = createBrowserPool();
    let again: Awaited<ReturnType<typeof pool.acquire>> | undefined;
    try {
      const first = await pool.acquire("auto", () => {}, 1);
      const pid = first.process.pid!;
      await pool.release(first);
      for (const name of ["a", "b"]) {
        const output = join(scratch, `${name}.mp4`);
        const result = await renderComposition({
          target: project,
          fps: 5,
          workers: 2,
          output,
          browsers: pool,
        });
        assert.equal(result.frames, 2);
        const [colour] = await pixelSeries(output, 160, 90);
        assert.ok(Math.abs(colour[2] - 0xff) < 12 && Math.abs(colour[0] - 0x20) < 12, `${colour}`);
      }
      again = await pool.acquire("auto", () => {}, 1);
      assert.equal(again.process.pid, pid, "the renders launched another browser");
      const { targetInfos } = await again.connection.send<
        { targetInfos: { type: string; url: string }[] }
      >("Target.getTargets");
      const pages = targetInfos.filter((t) => t.type === "page" && t.url !== "about:blank");
      assert.deepEqual(pages, []);
    } finally {
      // Given back even when an assertion failed, so the pool closes it.
      if (again) await pool.release(again);
      await pool.close();
    }
  });

  it("replaces a browser that died in the pool, and close() ends the kept one", async () => {
    const pool = createBrowserPool();
    const first = await pool.acquire("auto", () => {}, 1);
    const dead = first.process.pid!;
    await pool.release(first);
    const exited = new Promise((resolve) => first.process.once("exit", resolve));
    Deno.kill(-dead, "SIGKILL");
    await exited;
    const second = await pool.acquire("auto", () => {}, 1);
    assert.notEqual(second.process.pid, dead);
    const [page] = (await second.connection.send<{ targetInfos: { type: string }[] }>(
      "Target.getTargets",
    )).targetInfos;
    assert.ok(page, "the new browser answers");
    await pool.release(second);
    const pid = second.process.pid!;
    assert.ok(running(pid));
    await pool.close();
    await waitFor("close() to end the kept browser", () => !running(pid), { timeoutMs: 5000 });
  });
});

describe("a browser per worker", () => {
  it("two workers capture in two browsers, both gone when the render returns", async () => {
    const output = join(scratch, "two.mp4");
    const { seen, frames } = await renderWithTwoWorkers(output);
    assert.equal(frames, 10);
    assert.equal(seen.size, 2, `browsers seen during the render: ${[...seen]}`);
    await waitFor(
      "the workers' browsers to exit after the render",
      () => [...seen].filter(running).length === 0,
      { timeoutMs: 5000 },
    );
    const series = await pixelSeries(output, 160, 90);
    assert.equal(series.length, 10);
    for (const frame of [0, 5, 9]) {
      assert.ok(Math.abs(series[frame][2] - Math.round(255 * frame / 10)) < 12, `${frame}`);
    }
  });

  it("with a pool, the pool's warm browser is the first worker's and stays warm", async () => {
    const pool = createBrowserPool();
    try {
      const warm = await pool.acquire("auto", () => {}, 1);
      const pid = warm.process.pid!;
      await pool.release(warm);
      const { seen } = await renderWithTwoWorkers(join(scratch, "pooled.mp4"), {
        browsers: pool,
        warm: pid,
      });
      assert.ok(seen.has(pid), "the first worker did not use the warm browser");
      assert.equal(seen.size, 2);
      await waitFor(
        "the second worker's browser to exit",
        () => [...seen].filter(running).length === 1,
        { timeoutMs: 5000 },
      );
      assert.deepEqual([...seen].filter(running), [pid], "only the warm browser may stay");
    } finally {
      await pool.close();
    }
  });
});
