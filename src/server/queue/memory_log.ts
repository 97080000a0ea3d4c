/**
 * A worker's memory after each render, logged only when `VID_DEBUG_MEMORY=1`: the evidence
 * for "a worker's memory stays flat over 100 renders" (issue 26). The resident set alone
 * cannot tell a leak from V8 and the allocator growing into their working size; the heap
 * used after a full collection can, so when the process runs with
 * `--v8-flags=--expose-gc` the log forces one first. `bench/cluster_bench.ts` reads these
 * lines; normal output never carries them.
 *
 * @module
 */

import { log } from "../log.ts";

/** The switch, read once: a render's hot path does not look up the environment again. */
const ENABLED = (() => {
  try {
    return Deno.env.get("VID_DEBUG_MEMORY") === "1";
  } catch {
    // No env permission: the switch is off.
    return false;
  }
})();

/**
 * One log line of this process's memory, in MB: `rss`, V8's `heap_used` and `heap_total`,
 * and `external` (array buffers and other memory V8 tracks outside its heap), after a full
 * garbage collection when `gc` is exposed. Does nothing unless `VID_DEBUG_MEMORY=1`.
 *
 * @param what What just finished, e.g. `render abc`.
 *
 * @example
 * ```ts
 * logMemory("render abc"); // with VID_DEBUG_MEMORY=1:
 * // memory after render abc: rss 104.2 MB, heap_used 21.3 MB, heap_total 25.0 MB, external 3.1 MB, gc forced
 * ```
 */
export function logMemory(what: string): void {
  if (!ENABLED) return;
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const m = Deno.memoryUsage();
  const mb = (bytes: number): string => (bytes / 1024 / 1024).toFixed(1);
  log.info(
    `memory after ${what}: rss ${mb(m.rss)} MB, heap_used ${mb(m.heapUsed)} MB, heap_total ` +
      `${mb(m.heapTotal)} MB, external ${mb(m.external)} MB, ${gc ? "gc forced" : "no gc"}`,
  );
}
