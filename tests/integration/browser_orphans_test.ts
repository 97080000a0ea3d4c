/**
 * A capture browser runs in its own process group, yet dies with a `vid render` killed with
 * SIGKILL: it is started with a parent-death signal (`setpriv --pdeathsig`), and ffmpeg ends
 * with its input. Here a real `vid render` is SIGKILLed mid-render and its Chromium and ffmpeg
 * are gone within seconds with no other process started; the next `vid render` (same cache
 * folder) then removes the record, profile and work folder the killed one left. The second line, the
 * reaping of a recorded browser still running whose owner is gone, is shown on a stand-in
 * (a shell in its own process group carrying the recorded profile in its command line): a
 * real browser no longer survives its owner.
 *
 * @module
 */

import { spawn } from "node:child_process";
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import process from "node:process";
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

/** The state and parent of a process, or undefined once it is gone (or a zombie). */
function processState(pid: number): { state: string; ppid: number } | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return fields[0] === "Z" ? undefined : { state: fields[0], ppid: Number(fields[1]) };
  } catch {
    return undefined;
  }
}

/** Pids of the running ffmpeg processes whose parent is `parent`. */
function ffmpegChildren(parent: number): number[] {
  const found: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const comm = Deno.readTextFileSync(`/proc/${entry.name}/comm`).trim();
      if (comm === "ffmpeg" && processState(Number(entry.name))?.ppid === parent) {
        found.push(Number(entry.name));
      }
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

describe("browsers of a SIGKILLed vid render", () => {
  it("die with it, its ffmpeg too, and the next vid render removes what it left (browser records, profiles, work folders)", async () => {
    const records = join(cache, "browsers");
    // Its own temp folder, to find the render's work folder in.
    const temp = join(cache, "tmp");
    await Deno.mkdir(temp, { recursive: true });
    const env = { VID_CACHE_DIR: cache, TMPDIR: temp };
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}cli.ts`, "render", project, "-o", join(project, "long.mp4")],
      env,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    let record: { pid: number; owner: number; profile: string };
    let encoders: number[];
    try {
      record = await until("a browser record", () => {
        try {
          const name = [...Deno.readDirSync(records)].find((e) =>
            /^browser-\d+\.json$/.test(e.name)
          )
            ?.name;
          return name ? JSON.parse(Deno.readTextFileSync(join(records, name))) : undefined;
        } catch {
          return undefined;
        }
      }, 60000);
      assert.equal(record.owner, child.pid);
      // Mid-render: frames are being encoded.
      encoders = await until("the render's ffmpeg", () => {
        const found = ffmpegChildren(child.pid);
        return found.length > 0 ? found : undefined;
      }, 60000);
      assert.ok(groupMembers(record.pid).length > 0, "the browser runs");
    } finally {
      child.kill("SIGKILL");
    }
    await child.status;
    // Nothing else runs meanwhile: the kernel and ffmpeg's closed input end them.
    await until(
      "the killed render's browser group and ffmpeg to end",
      () =>
        groupMembers(record.pid).length === 0 && encoders.every((pid) => !processState(pid))
          ? true
          : undefined,
      10000,
    );

    const left = [...Deno.readDirSync(temp)].map((e) => e.name);
    assert.ok(
      left.some((name) => name.startsWith(`vid-render-${child.pid}-`)),
      `the killed render's work folder, named after its pid, is left: ${left}`,
    );

    const next = await runVid(
      ["render", project, "-c", "short.html", "-o", join(project, "s.mp4")],
      { env },
    );
    assert.equal(next.code, 0, next.stderr);
    assert.deepEqual([...Deno.readDirSync(records)].map((e) => e.name), []);
    await assert.rejects(Deno.stat(record.profile), Deno.errors.NotFound);
    assert.deepEqual(
      [...Deno.readDirSync(temp)].map((e) => e.name),
      [],
      "the next render removed the killed one's work folder, and its own",
    );
  });

  it("one still running whose owner is gone is killed by the next vid render (stand-in browser)", async () => {
    const records = join(cache, "browsers");
    Deno.mkdirSync(records, { recursive: true });
    const profile = await Deno.makeTempDir({ prefix: "vid-chromium-standin-" });
    // An owner that is gone: a process that has exited.
    const gone = new Deno.Command("true").spawn();
    await gone.status;
    // A process group led by a shell whose command line carries the profile, as a browser's
    // does; `; true` keeps the shell from exec-ing sleep and losing that command line.
    const standIn = spawn("sh", ["-c", "sleep 300; true", `--user-data-dir=${profile}`], {
      detached: true,
      stdio: "ignore",
    });
    const group = standIn.pid!;
    try {
      await until(
        "the stand-in's sleep",
        () => groupMembers(group).length === 2 || undefined,
        10000,
      );
      const record = join(records, `browser-${group}.json`);
      Deno.writeTextFileSync(record, JSON.stringify({ pid: group, owner: gone.pid, profile }));
      const next = await runVid(
        ["render", project, "-c", "short.html", "-o", join(project, "s2.mp4")],
        { env: { VID_CACHE_DIR: cache } },
      );
      assert.equal(next.code, 0, next.stderr);
      await until(
        "the orphaned group to end",
        () => groupMembers(group).length === 0 || undefined,
        10000,
      );
      await assert.rejects(Deno.stat(record), Deno.errors.NotFound);
      await assert.rejects(Deno.stat(profile), Deno.errors.NotFound);
    } finally {
      const exited = standIn.exitCode === null && standIn.signalCode === null
        ? new Promise((resolve) => standIn.once("exit", resolve))
        : undefined;
      try {
        process.kill(-group, "SIGKILL");
      } catch {
        // reaped, as it should be
      }
      await exited;
      await Deno.remove(profile, { recursive: true }).catch(() => {});
    }
  });
});
