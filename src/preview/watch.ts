/**
 * Watches a project directory for edits that should reload the preview. A burst of file
 * system events (an editor's save is often several) becomes one change after a quiet
 * period. Only files the project would package count: the upload exclusions of
 * `src/project/ignore_rules.ts` keep `renders/` (where the studio's own renders land),
 * `.git`, `node_modules` and dotfiles (editor swap files) from reloading the stage. The
 * watcher outlives its failures: an error is reported and watching starts again after a
 * backoff, so the studio never stops noticing edits (or crashes) because of one.
 *
 * @module
 */

import { relative, resolve, sep } from "node:path";
import { projectRules } from "../project/ignore_rules.ts";

/** Options of {@linkcode watchProject}. */
export interface WatchOptions {
  /** Quiet period before a burst of events is reported, in ms. @default 120 */
  debounceMs?: number;
  /** Folders whose changes never count (e.g. a render output folder), absolute or relative. */
  ignoreDirs?: string[];
  /**
   * Told when watching fails (the folder was removed, too many watches) or `onChange`
   * throws. Watching starts again by itself after a backoff (0.25 s, doubling up to 5 s)
   * until closed, so a folder that is removed and made again is watched again.
   */
  onError?: (error: Error) => void;
}

/** Waits before watching again after a failure, in order; the last one repeats. */
const RESTART_BACKOFF_MS = [250, 500, 1000, 2000, 5000];

/** A running watcher. */
export interface ProjectWatcher {
  /** Stops watching; pending changes are dropped. Safe to call twice. */
  close(): void;
}

/** True when `path` is `dir` or lies inside it. */
function isInside(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir + sep);
}

/**
 * Calls `onChange` with the changed project paths (posix, relative to `projectDir`,
 * sorted) once per burst of edits.
 *
 * @example
 * ```ts no_run
 * const watcher = watchProject("examples/hello", (paths) => console.log("changed", paths));
 * // … later
 * watcher.close();
 * ```
 */
export function watchProject(
  projectDir: string,
  onChange: (paths: string[]) => void,
  options: WatchOptions = {},
): ProjectWatcher {
  const root = resolve(projectDir);
  const ignored = (options.ignoreDirs ?? []).map((d) => resolve(d));
  const debounceMs = options.debounceMs ?? 120;
  const pending = new Set<string>();
  let watcher: Deno.FsWatcher | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let failures = 0;
  let closed = false;

  // Nothing thrown by the callbacks may escape: from a timer or the event loop it would end
  // the preview server, whose other parts (the stage, renders) are fine.
  const report = (error: unknown): void => {
    try {
      options.onError?.(error instanceof Error ? error : new Error(String(error)));
    } catch {
      // a failing reporter has nobody left to tell
    }
  };

  const flush = async (): Promise<void> => {
    timer = undefined;
    const paths = [...pending].sort();
    pending.clear();
    // Read per burst: an edit to .vidignore changes what counts from the next burst on.
    const rules = await projectRules(root).catch(() => undefined);
    const counted = paths.filter((p) => rules?.includes(p, false) ?? true);
    if (closed || counted.length === 0) return;
    try {
      onChange(counted);
    } catch (error) {
      report(error);
    }
  };

  /** Watching failed: tell, and start again after a backoff until closed. */
  const restartLater = (error: unknown): void => {
    if (closed) return;
    const delay = RESTART_BACKOFF_MS[Math.min(failures, RESTART_BACKOFF_MS.length - 1)];
    failures++;
    report(
      new Error(`${(error as Error)?.message ?? error}; watching again in ${delay / 1000} s`),
    );
    retry = setTimeout(start, delay);
  };

  const watch = async (current: Deno.FsWatcher): Promise<void> => {
    for await (const event of current) {
      if (event.kind === "access" || event.kind === "any") continue;
      for (const path of event.paths) {
        const absolute = resolve(path);
        // The folder itself went (a checkout, a re-clone): its watch is dead with it.
        if (absolute === root && event.kind === "remove") {
          throw new Error(`${projectDir} was removed`);
        }
        if (!isInside(absolute, root) || absolute === root) continue;
        if (ignored.some((dir) => isInside(absolute, dir))) continue;
        pending.add(relative(root, absolute).split(sep).join("/"));
      }
      if (pending.size === 0) continue;
      if (timer !== undefined) clearTimeout(timer);
      timer = setTimeout(() => void flush(), debounceMs);
    }
    if (!closed) throw new Error("the file watcher ended");
  };

  function start(): void {
    retry = undefined;
    if (closed) return;
    let current: Deno.FsWatcher;
    try {
      current = Deno.watchFs(root, { recursive: true });
    } catch (error) {
      restartLater(error);
      return;
    }
    watcher = current;
    failures = 0;
    watch(current).catch((error) => {
      try {
        current.close();
      } catch {
        // already closed by the error
      }
      restartLater(error);
    });
  }

  start();

  return {
    close(): void {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      if (retry !== undefined) clearTimeout(retry);
      try {
        watcher?.close();
      } catch {
        // already closed by an error
      }
    },
  };
}
