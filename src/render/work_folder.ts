/**
 * The name of a render's work folder in the temp folder. It carries its owner's pid, so the
 * next command can remove the folder of a render killed with SIGKILL (`reapOrphanWorkFolders`
 * in `browser_records.ts`, which is Deno-only). Runtime-neutral: every render session names its
 * folder with this, in the npm package under Node and in the Lambda worker too.
 *
 * @module
 */

import process from "node:process";

/**
 * The name a render's work folder starts with: `vid-render-<pid>-` (this process's by
 * default; Node's `process.pid`, since Node has no `Deno.pid`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(workFolderPrefix(42), "vid-render-42-");
 * ```
 */
export function workFolderPrefix(pid: number = process.pid): string {
  return `vid-render-${pid}-`;
}
