/**
 * A launched browser's processes: its process tree or group, killing them, removing its
 * profile, killing whatever still runs when this process exits, and the records on disk
 * that let the successor of an owner killed with SIGKILL reap what it left
 * (`browser_records.ts` reads them). Apart from the launch
 * in `browser.ts`: every path that ends a browser (close, failed start, exit, a server past
 * its shutdown deadline) goes through these few functions.
 *
 * @module
 */

import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { sleep } from "../util/async.ts";

/**
 * Removes a browser profile. A process of the killed browser may still be finishing a
 * write when the main process exits (ENOTEMPTY), so it is tried a few times.
 */
export async function removeProfile(profile: string): Promise<void> {
  for (let attempt = 1;; attempt++) {
    try {
      await rm(profile, { recursive: true, force: true });
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
      await sleep(50 * attempt);
    }
  }
}

/**
 * Whether browsers stay in this process's process group (`VID_BROWSER_IN_PARENT_GROUP=1`):
 * the local stack starts each warm worker as a process group and kills the group when the
 * worker ends, however it ends (SIGKILL included), so the worker's browsers must be in it.
 * Otherwise a browser gets its own group, killed with it.
 */
export function inParentGroup(): boolean {
  return process.env.VID_BROWSER_IN_PARENT_GROUP === "1";
}

/** `pid` and its descendants, parents first (Linux `/proc`; just `pid` elsewhere). */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  try {
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        // pid (comm) state ppid ...; comm may hold spaces and parentheses.
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
      } catch {
        // exited meanwhile
      }
    }
  } catch {
    // no /proc
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/**
 * SIGKILLs a browser with its zygote, GPU, network and renderer processes: its process
 * group, or (in the parent's group) the process tree, listed before the first kill.
 */
export function killBrowser(pid: number, ownGroup: boolean): void {
  for (const target of ownGroup ? [-pid] : processTree(pid)) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Browsers of this process still running: their pid, profile and whether they lead a group. */
export const LIVE_BROWSERS: Set<{ pid: number; profile: string; ownGroup: boolean }> = new Set();
let exitHookInstalled = false;

/**
 * Kills a browser's process group (and removes its profile) when this process exits while
 * the browser still runs: browsers live in their own process group, so a worker that is
 * told to stop (the local stack's warm workers exit on SIGTERM) would otherwise leave them
 * behind.
 */
export function killOnExit(browser: { pid: number; profile: string; ownGroup: boolean }): void {
  LIVE_BROWSERS.add(browser);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const { pid, profile, ownGroup } of LIVE_BROWSERS) {
      killBrowser(pid, ownGroup);
      try {
        rmSync(profile, { recursive: true, force: true });
      } catch {
        // best effort
      }
    }
  });
}

/**
 * Kills every browser this process launched that still runs (each with its process group,
 * its profile removed), at once: for a process that must end now, such as `vid server`
 * past its shutdown deadline. Returns how many were killed.
 *
 * @example
 * ```ts no_run
 * const killed = killLiveBrowsers();
 * console.error(`killed ${killed} browser(s)`);
 * ```
 */
export function killLiveBrowsers(): number {
  const browsers = [...LIVE_BROWSERS];
  for (const { pid, profile, ownGroup } of browsers) {
    killBrowser(pid, ownGroup);
    try {
      rmSync(profile, { recursive: true, force: true });
    } catch {
      // a process of the browser may still be writing; the reaper removes it later
    }
  }
  return browsers.length;
}

/** A recorded browser. */
export interface BrowserRecord {
  /** The browser's pid, which is also its process group. */
  pid: number;
  /** The pid of the process that launched it. */
  owner: number;
  /** Its profile folder (`--user-data-dir`), removed when it is reaped. */
  profile: string;
}

/**
 * Records a running browser in `dir` as `browser-<pid>.json`; returns the record's path.
 * The record is written whole under a name the reaper skips, then renamed into place: an
 * owner starting meanwhile (the CLI's commands share one folder) would otherwise read an
 * empty record, delete it as unreadable, and the browser would outlive a SIGKILL of its
 * owner.
 */
export function writeBrowserRecord(dir: string, record: BrowserRecord): string {
  const path = join(dir, `browser-${record.pid}.json`);
  const partial = join(dir, `.browser-${record.pid}.json.partial`);
  writeFileSync(partial, JSON.stringify(record));
  renameSync(partial, path);
  return path;
}

/** Folder where running browsers are recorded, see {@linkcode recordBrowsersIn}. */
let browserRecords: string | undefined;

/** The folder {@linkcode recordBrowsersIn} set, if any: where a launch records its browser. */
export function browserRecordsDir(): string | undefined {
  return browserRecords;
}

/**
 * Records every browser this process launches from now on as `<dir>/browser-<pid>.json`
 * (`{ pid, owner, profile }`; the pid is also its process group) while it runs. A browser
 * lives in its own process group, so it outlives an owner killed with SIGKILL; the owner's
 * successor reads these records to kill what was left (the render server does, on start).
 * `undefined` stops recording.
 */
export function recordBrowsersIn(dir: string | undefined): void {
  browserRecords = dir;
}
