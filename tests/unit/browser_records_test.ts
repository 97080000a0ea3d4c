/**
 * Browser records: a record appears whole (written under another name, then renamed), so an
 * owner starting meanwhile never reads half of one; and the reaper leaves records being
 * written alone while it removes unreadable ones. Real files and a real file watcher.
 *
 * @module
 */

import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir, readFile, rm, writeFile } from "node:fs/promises";
import { writeBrowserRecord } from "../../src/render/browser.ts";
import { reapOrphanBrowsers } from "../../src/render/browser_records.ts";

describe("browser records", () => {
  let dir: string;

  beforeEach(async () => {
    dir = await Deno.makeTempDir({ prefix: "vid-browser-records-" });
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("a record appears in one rename: never created empty, never written in place", async () => {
    const watcher = Deno.watchFs(dir);
    const events: Deno.FsEvent[] = [];
    const watching = (async () => {
      for await (const event of watcher) events.push(event);
    })();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const record = { pid: 4242, owner: 17, profile: "/tmp/vid-profile-x" };
    const path = writeBrowserRecord(dir, record);
    assert.equal(path, `${dir}/browser-4242.json`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    watcher.close();
    await watching;
    const onRecord = events.filter((e) => e.paths.includes(path));
    assert.ok(onRecord.length > 0, `the watcher saw the record: ${JSON.stringify(events)}`);
    assert.deepEqual(
      onRecord.filter((e) => e.kind !== "rename"),
      [],
      "the record file is only ever renamed into place",
    );
    assert.deepEqual(JSON.parse(await readFile(path, "utf8")), record);
    assert.deepEqual(await readdir(dir), ["browser-4242.json"], "no partial file left");
  });

  it("the reaper skips a record being written and removes an unreadable one", async () => {
    await writeFile(`${dir}/.browser-5.json.partial`, "");
    await writeFile(`${dir}/browser-6.json`, "");
    // No process runs: a readable record's owner would be gone, but there is none here.
    const killed = await reapOrphanBrowsers(dir, []);
    assert.equal(killed, 0);
    assert.deepEqual(await readdir(dir), [".browser-5.json.partial"]);
  });
});
