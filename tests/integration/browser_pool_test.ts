/**
 * Warm capture browsers (`createBrowserPool`, used by the preview studio and `vid server`):
 * consecutive renders through a pool capture with the same browser process, leave no
 * windows behind in it, still produce the right frames; a browser that died in the pool
 * is replaced; closing the pool ends the kept browser.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { createBrowserPool } from "../../src/render/capture_mode.ts";
import { renderComposition } from "../../src/render/render.ts";
import { compositionHtml, makeProject, pixelSeries } from "../helpers.ts";

let project: string;
let scratch: string;

before(async () => {
  project = await makeProject(
    compositionHtml(
      `<div style="position:absolute;inset:0;background:#2080ff"></div>`,
      { id: "warm", duration: 0.4 },
    ),
  );
  scratch = await Deno.makeTempDir({ prefix: "vid-pool-" });
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

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
      const again = await pool.acquire("auto", () => {}, 1);
      assert.equal(again.process.pid, pid, "the renders launched another browser");
      const { targetInfos } = await again.connection.send<
        { targetInfos: { type: string; url: string }[] }
      >("Target.getTargets");
      const pages = targetInfos.filter((t) => t.type === "page" && t.url !== "about:blank");
      assert.deepEqual(pages, []);
      await pool.release(again);
    } finally {
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
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(running(pid), false, "close() left the kept browser running");
  });
});
