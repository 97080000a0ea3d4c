/**
 * A capture browser runs in its own process group, so it outlives a `vid render` killed
 * with SIGKILL. The browser-launching commands record their browsers under
 * `<cache>/browsers`, and the next one kills the browsers whose owner is gone: here a real
 * `vid render` is SIGKILLed mid-render, its Chromium is seen still running, and the next
 * `vid render` (same cache folder) leaves no process of that group, no record and no
 * profile behind.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { compositionHtml, makeProject, ROOT, runVid, waitFor } from "../helpers.ts";

let project: string;
let cache: string;

before(async () => {
  project = await makeProject(
    compositionHtml(`<div style="position:absolute;inset:0;background:#08f"></div>`, {
      id: "orphans",
      duration: 20,
    }),
    { "short.html": compositionHtml("", { id: "short", duration: 0.2 }) },
  );
  cache = await Deno.makeTempDir({ prefix: "vid-orphans-cache-" });
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(cache, { recursive: true });
});

/** Pids of the processes in process group `group`. */
function groupMembers(group: number): number[] {
  const members: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // fields[0] is the state, fields[2] the process group.
      if (fields[0] !== "Z" && Number(fields[2]) === group) members.push(Number(entry.name));
    } catch {
      // exited meanwhile
    }
  }
  return members;
}

function until<T>(what: string, probe: () => T | undefined, ms: number): Promise<T> {
  return waitFor(what, probe, { timeoutMs: ms }) as Promise<T>;
}

describe("browsers left by a SIGKILLed vid render", () => {
  it("are killed by the next vid render", async () => {
    const records = join(cache, "browsers");
    const env = { VID_CACHE_DIR: cache };
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}cli.ts`, "render", project, "-o", join(project, "long.mp4")],
      env,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    let record: { pid: number; owner: number; profile: string };
    try {
      record = await until("a browser record", () => {
        try {
          const name = [...Deno.readDirSync(records)].find((e) => e.name.endsWith(".json"))?.name;
          return name ? JSON.parse(Deno.readTextFileSync(join(records, name))) : undefined;
        } catch {
          return undefined;
        }
      }, 60000);
      assert.equal(record.owner, child.pid);
    } finally {
      child.kill("SIGKILL");
    }
    await child.status;
    // The owner is gone; its browser is not.
    assert.ok(groupMembers(record.pid).length > 0, "the browser outlived its owner");

    const next = await runVid(
      ["render", project, "-c", "short.html", "-o", join(project, "s.mp4")],
      {
        env,
      },
    );
    assert.equal(next.code, 0, next.stderr);
    await until(
      "the orphaned browser group to end",
      () => groupMembers(record.pid).length === 0 ? true : undefined,
      10000,
    );
    assert.deepEqual([...Deno.readDirSync(records)].map((e) => e.name), []);
    await assert.rejects(Deno.stat(record.profile), Deno.errors.NotFound);
  });
});
