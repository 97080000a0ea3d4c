/**
 * Watches a project directory for edits that should reload the preview. A burst of file
 * system events (an editor's save is often several) becomes one change after a quiet
 * period. Only files the project would package count: the upload exclusions of
 * `src/project/ignore_rules.ts` keep `renders/` (where the studio's own renders land),
 * `.git`, `node_modules` and dotfiles (editor swap files) from reloading the stage.
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
  /** Told when the watcher fails (the folder was removed, too many watches). */
  onError?: (error: Error) => void;
}

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
  const watcher = Deno.watchFs(root, { recursive: true });
  const pending = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;

  const flush = async (): Promise<void> => {
    timer = undefined;
    const paths = [...pending].sort();
    pending.clear();
    // Read per burst: an edit to .vidignore changes what counts from the next burst on.
    const rules = await projectRules(root).catch(() => undefined);
    const counted = paths.filter((p) => rules?.includes(p, false) ?? true);
    if (!closed && counted.length > 0) onChange(counted);
  };

  (async () => {
    try {
      for await (const event of watcher) {
        if (event.kind === "access" || event.kind === "any") continue;
        for (const path of event.paths) {
          const absolute = resolve(path);
          if (!isInside(absolute, root) || absolute === root) continue;
          if (ignored.some((dir) => isInside(absolute, dir))) continue;
          pending.add(relative(root, absolute).split(sep).join("/"));
        }
        if (pending.size === 0) continue;
        if (timer !== undefined) clearTimeout(timer);
        timer = setTimeout(flush, debounceMs);
      }
    } catch (error) {
      if (!closed) options.onError?.(error as Error);
    }
  })();

  return {
    close(): void {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      try {
        watcher.close();
      } catch {
        // already closed by an error
      }
    },
  };
}
