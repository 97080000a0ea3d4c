/**
 * The preview's project watcher outlives its failures: an `onChange` that throws is reported
 * and later edits are still seen, and a project folder removed and made again is watched
 * again after the backoff. Real files and a real file watcher.
 *
 * @module
 */

import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { watchProject } from "../../src/preview/watch.ts";
import { waitFor } from "../helpers.ts";

describe("watchProject", () => {
  let dir: string;

  beforeEach(async () => {
    dir = await Deno.makeTempDir({ prefix: "vid-watch-" });
  });

  afterEach(async () => {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  });

  it("reports an onChange that throws and goes on watching", async () => {
    const changes: string[][] = [];
    const errors: string[] = [];
    const watcher = watchProject(dir, (paths) => {
      changes.push(paths);
      if (changes.length === 1) throw new Error("the reload failed");
    }, { debounceMs: 20, onError: (error) => errors.push(error.message) });
    try {
      await Deno.writeTextFile(`${dir}/a.html`, "a");
      await waitFor("the error report", () => errors.length > 0, { timeoutMs: 10_000 });
      assert.deepEqual(errors, ["the reload failed"]);
      await Deno.writeTextFile(`${dir}/b.html`, "b");
      await waitFor("the second change", () => changes.length > 1, { timeoutMs: 10_000 });
      assert.deepEqual(changes, [["a.html"], ["b.html"]]);
    } finally {
      watcher.close();
    }
  });

  it("watches a project folder again after it was removed and made again", async () => {
    const changes: string[][] = [];
    const errors: string[] = [];
    const watcher = watchProject(dir, (paths) => changes.push(paths), {
      debounceMs: 20,
      onError: (error) => errors.push(error.message),
    });
    try {
      await Deno.remove(dir, { recursive: true });
      await waitFor("the removal report", () => errors.length > 0, { timeoutMs: 10_000 });
      assert.equal(errors[0], `${dir} was removed; watching again in 0.25 s`);
      await Deno.mkdir(dir);
      // An edit every 100 ms until one is seen: the first may land before the watch is back.
      for (let i = 0; changes.length === 0; i++) {
        if (i >= 100) throw new Error("the watcher never came back");
        await Deno.writeTextFile(`${dir}/after-${i}.html`, "x");
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.match(changes[0][0], /^after-\d+\.html$/);
    } finally {
      watcher.close();
    }
  });
});
