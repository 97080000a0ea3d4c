/**
 * Cleans up after a render server that died without stopping (SIGKILL, power loss): its
 * browsers live in their own process groups and survive it, and its work folders stay.
 *
 * Layout under the data folder's `work/`: each server run works in `run-<pid>/`, and every
 * browser the server process launches is recorded in `browsers/browser-<pid>.json` with
 * its owner's pid and its profile while it runs (see `recordBrowsersIn`). On start,
 * {@linkcode reapPredecessors} kills the process group of every recorded browser whose
 * owner is gone (only when that group is still a Chromium with the recorded profile, so a
 * reused pid is never hit), removes its profile and record, and removes the work folders
 * of runs whose process is gone.
 *
 * @module
 */

import { readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";

/** What {@linkcode reapPredecessors} cleaned up. */
export interface Reaped {
  /** Browser process groups killed. */
  browsers: number;
  /** Work folders removed. */
  folders: number;
}

/** A recorded browser. */
interface BrowserRecord {
  pid: number;
  owner: number;
  profile: string;
}

/** One line of `ps`: a process, its group and its command line. */
interface ProcessInfo {
  pid: number;
  pgid: number;
  args: string;
}

/** The processes of this machine, or undefined where `ps` is missing (Windows). */
async function processes(): Promise<ProcessInfo[] | undefined> {
  try {
    const { stdout, success } = await new Deno.Command("ps", {
      args: ["-eo", "pid=,pgid=,args="],
      stdout: "piped",
      stderr: "null",
    }).output();
    if (!success) return undefined;
    return new TextDecoder().decode(stdout).split("\n").flatMap((line) => {
      const match = line.match(/^\s*(\d+)\s+(\d+)\s+(.*)$/);
      return match ? [{ pid: Number(match[1]), pgid: Number(match[2]), args: match[3] }] : [];
    });
  } catch {
    return undefined;
  }
}

/**
 * Kills the browsers and removes the work folders that dead predecessors left in
 * `workRoot` (the data folder's `work/`). Call before this run records anything.
 *
 * @example
 * ```ts no_run
 * const reaped = await reapPredecessors("vid-data/work");
 * if (reaped.browsers > 0) console.log(`killed ${reaped.browsers} orphaned browser(s)`);
 * ```
 */
export async function reapPredecessors(workRoot: string): Promise<Reaped> {
  const reaped: Reaped = { browsers: 0, folders: 0 };
  const running = await processes();
  if (!running) return reaped;
  const alive = new Set(running.map((p) => p.pid));
  alive.add(Deno.pid);

  const records = join(workRoot, "browsers");
  for (const name of await readdir(records).catch(() => [] as string[])) {
    if (!/^browser-\d+\.json$/.test(name)) continue;
    const file = join(records, name);
    let record: BrowserRecord;
    try {
      record = JSON.parse(await readFile(file, "utf8")) as BrowserRecord;
    } catch {
      await rm(file, { force: true });
      continue;
    }
    if (alive.has(record.owner)) continue;
    const group = running.filter((p) =>
      p.pgid === record.pid && p.args.includes(`--user-data-dir=${record.profile}`)
    );
    if (group.length > 0) {
      try {
        process.kill(-record.pid, "SIGKILL");
        reaped.browsers++;
      } catch {
        // gone meanwhile
      }
    }
    await rm(record.profile, { recursive: true, force: true }).catch(() => {});
    await rm(file, { force: true });
  }

  for (const name of await readdir(workRoot).catch(() => [] as string[])) {
    const run = name.match(/^run-(\d+)$/);
    // Folders of the layout before runs had their own (render-…, upload-…, lambda-…).
    const legacy = /^(render|upload|lambda)-/.test(name);
    if ((run && !alive.has(Number(run[1]))) || legacy) {
      await rm(join(workRoot, name), { recursive: true, force: true });
      reaped.folders++;
    }
  }
  return reaped;
}
