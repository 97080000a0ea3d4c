/**
 * Where vid keeps what it derives and may derive again: media proxies, the capture probe's
 * result, browser records, font packages. A helper of no layer of its own, so the renderer,
 * the font packages of `src/init/` (which `src/composition/` reads) and the benchmarks share
 * one answer without importing each other.
 *
 * @module
 */

import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import process from "node:process";

/**
 * The folder vid caches derived files in: `VID_CACHE_DIR` when set; `/tmp/vid-cache` on
 * AWS Lambda (the only writable place there); else `$XDG_CACHE_HOME/vid`, else
 * `~/.cache/vid`; the system temp folder as a last resort.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * console.log(cacheDir()); // e.g. /home/me/.cache/vid
 * assert.ok(cacheDir().endsWith("vid"));
 * ```
 */
export function cacheDir(env: Record<string, string | undefined> = process.env): string {
  if (env.VID_CACHE_DIR) return resolve(env.VID_CACHE_DIR);
  if (env.AWS_LAMBDA_FUNCTION_NAME) return "/tmp/vid-cache";
  if (env.XDG_CACHE_HOME) return join(env.XDG_CACHE_HOME, "vid");
  const home = env.HOME ?? env.USERPROFILE;
  return home ? join(home, ".cache", "vid") : join(tmpdir(), "vid-cache");
}
