/**
 * Browsers that outlived their owner. A capture browser runs in its own process group (so
 * closing it takes its zygote, GPU and renderer processes along), which also means it would
 * survive an owner killed with SIGKILL; on Linux its parent-death signal (see `launchOnce` in
 * `browser.ts`) kills it with its owner, and this is the second line: where that is missing
 * (no util-linux, another OS) or a browser escaped it, and for the records and profiles a
 * killed owner leaves in any case. Every browser launched while records are on (see
 * `recordBrowsersIn` in `browser.ts`) is recorded as `browser-<pid>.json` (`{ pid, owner,
 * profile }`, the pid being its process group) and the record is removed when it exits.
 * {@linkcode reapOrphanBrowsers}, run when the next owner starts, kills the group of every
 * recorded browser whose owner is gone, only when that group is still a Chromium with the
 * recorded profile (a reused pid is never hit), and removes its profile and record.
 *
 * `vid server` keeps its records under its data folder; the other commands that launch
 * browsers (`vid render`, `still`, `preview`, `render-batch`, `validate`) keep theirs
 * under `<cache>/browsers` ({@linkcode cliBrowserRecords}).
 *
 * A render's work folder in the temp folder carries its owner's pid in its name
 * (`workFolderPrefix` in `work_folder.ts`); {@linkcode reapOrphanWorkFolders} removes those whose owner
 * is gone (a SIGKILLed `vid render` cannot remove its own). `vid server` removes its work
 * folders by itself (`src/server/queue/reaper.ts`).
 *
 * @module
 */

import { mkdirSync } from "node:fs";
import { readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import type { BrowserRecord } from "./browser.ts";
import { cacheDir } from "../util/cache_dir.ts";

/** One process: its id, its group and its command line. */
interface ProcessInfo {
  pid: number;
  pgid: number;
  args: string;
}

/** The processes of this machine, or undefined where `ps` is missing (Windows). */
export async function listProcesses(): Promise<ProcessInfo[] | undefined> {
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

/** The pids of `processes`, and this process's (which a `ps` run just before may miss). */
function livePids(processes: readonly ProcessInfo[]): Set<number> {
  return new Set([...processes.map((p) => p.pid), Deno.pid]);
}

/**
 * Kills every browser recorded in `dir` whose owner process is gone; returns how many
 * process groups it killed. `running` is the process list when the caller has one.
 *
 * @example
 * ```ts no_run
 * const killed = await reapOrphanBrowsers("vid-data/work/browsers");
 * console.log(`${killed} browser(s) left by a killed owner`);
 * ```
 */
export async function reapOrphanBrowsers(
  dir: string,
  running?: readonly ProcessInfo[],
): Promise<number> {
  const names = (await readdir(dir).catch(() => [] as string[]))
    .filter((name) => /^browser-\d+\.json$/.test(name));
  if (names.length === 0) return 0;
  const processes = running ?? await listProcesses();
  if (!processes) return 0;
  const alive = livePids(processes);
  let killed = 0;
  for (const name of names) {
    const file = join(dir, name);
    let record: BrowserRecord;
    try {
      record = JSON.parse(await readFile(file, "utf8")) as BrowserRecord;
    } catch {
      await rm(file, { force: true });
      continue;
    }
    if (alive.has(record.owner)) continue;
    const group = processes.filter((p) =>
      p.pgid === record.pid && p.args.includes(`--user-data-dir=${record.profile}`)
    );
    if (group.length > 0) {
      try {
        process.kill(-record.pid, "SIGKILL");
        killed++;
      } catch {
        // gone meanwhile
      }
    }
    await rm(record.profile, { recursive: true, force: true }).catch(() => {});
    await rm(file, { force: true });
  }
  return killed;
}

/**
 * The folder where the CLI's browser-launching commands record their browsers,
 * `<cache>/browsers`, created (mode 0700) if missing; undefined when it cannot be.
 */
export function cliBrowserRecords(): string | undefined {
  const dir = join(cacheDir(), "browsers");
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  } catch {
    return undefined;
  }
}

/**
 * Removes the render work folders in `parent` (the temp folder) whose owner process is gone;
 * returns how many. A folder of a live process, of another user or of an unknown shape is
 * left alone. `running` is the process list when the caller has one.
 *
 * @example
 * ```ts no_run
 * const removed = await reapOrphanWorkFolders();
 * console.log(`${removed} work folder(s) left by a killed render`);
 * ```
 */
export async function reapOrphanWorkFolders(
  parent: string = tmpdir(),
  running?: readonly ProcessInfo[],
): Promise<number> {
  const owned = (await readdir(parent).catch(() => [] as string[])).flatMap((name) => {
    const match = /^vid-render-(\d+)-[A-Za-z0-9]{6}$/.exec(name);
    return match ? [{ name, owner: Number(match[1]) }] : [];
  });
  if (owned.length === 0) return 0;
  const processes = running ?? await listProcesses();
  if (!processes) return 0;
  const alive = livePids(processes);
  let removed = 0;
  for (const { name, owner } of owned) {
    if (alive.has(owner)) continue;
    try {
      await rm(join(parent, name), { recursive: true });
      removed++;
    } catch {
      // another user's, or removed meanwhile
    }
  }
  return removed;
}
