/**
 * A known crash of the `postgres` client (3.4.9, the release vid uses; porsager/postgres#1154,
 * #1208, unfixed there): it sends a small message from a `setImmediate` callback, and when
 * PostgreSQL closes the connection between the scheduling and the callback (a restart, a
 * terminated backend, a shutdown), the callback writes to the socket the client has already
 * dropped. The `TypeError` it throws belongs to no statement, so nothing can catch it, and an
 * uncaught error ends the process: a whole `vid server` lost to a database blip.
 *
 * {@linkcode guardClientCrash} catches exactly that error (by its message and its frames in the
 * client's `connection.js`), keeps the process running and tells each open PostgreSQL database
 * to start a fresh pool: a statement the lost connection held fails as "database away" (the
 * server answers 503 and its loops retry) instead of waiting forever. Any other uncaught error
 * still ends the process as before.
 *
 * @module
 */

import { log } from "../log.ts";

/** Whether `error` is the client's write to a connection it already closed. */
export function isClientWriteAfterClose(error: unknown): boolean {
  if (!(error instanceof TypeError)) return false;
  const stack = error.stack ?? "";
  return /reading 'write'/.test(error.message) && /\bnextWrite\b/.test(stack) &&
    /postgres[@/][^\n]*connection\.js/.test(stack);
}

/** What the guard tells: the databases renew their pools. */
const listeners = new Set<() => void>();
let installed = false;

/**
 * Keeps the process alive through the client's write-after-close crash and calls `renew` when
 * it happens; returns a function that stops calling it. The global listener is installed once.
 *
 * @example
 * ```ts no_run
 * const stop = guardClientCrash(() => console.error("renewing the pool"));
 * // ... later, when the database closes:
 * stop();
 * ```
 */
export function guardClientCrash(renew: () => void): () => void {
  if (!installed) {
    installed = true;
    globalThis.addEventListener("error", (event: ErrorEvent) => {
      if (!isClientWriteAfterClose(event.error)) return;
      event.preventDefault();
      log.error(
        "database: a connection closed while the postgres client was writing to it " +
          "(a known client fault); starting a fresh pool, the statements on the old one fail " +
          "as the database being away",
      );
      for (const listener of [...listeners]) listener();
    });
  }
  listeners.add(renew);
  return () => listeners.delete(renew);
}
