/**
 * Cleans up after a render server that died without stopping (SIGKILL, power loss): its
 * work folders, browser records and profiles stay, and its browsers, in their own process
 * groups, survive it where their parent-death signal could not be set (see `browser.ts`).
 *
 * Layout under the data folder's `work/`: each server run works in `run-<pid>/`, and every
 * browser the server process launches is recorded in `browsers/browser-<pid>.json` with
 * its owner's pid and its profile while it runs (see `recordBrowsersIn`). On start,
 * {@linkcode reapPredecessors} kills the browsers whose owner is gone
 * (`reapOrphanBrowsers` of `src/render/browser_records.ts`) and removes the work folders
 * of runs whose process is gone.
 *
 * @module
 */

import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { listProcesses, reapOrphanBrowsers } from "../../render/browser_records.ts";

/** What {@linkcode reapPredecessors} cleaned up. */
export interface Reaped {
  /** Browser process groups killed. */
  browsers: number;
  /** Work folders removed. */
  folders: number;
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
  const running = await listProcesses();
  if (!running) return reaped;
  const alive = new Set(running.map((p) => p.pid));
  alive.add(Deno.pid);

  reaped.browsers = await reapOrphanBrowsers(join(workRoot, "browsers"), running);

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
