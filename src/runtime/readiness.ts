/**
 * The readiness gate: after a seek, the frame is captured only once the page's fonts are
 * loaded, its images decoded and every `__vid.delay()` handle released, or the render fails
 * naming what was not ready after the readiness timeout. It waits on wall-clock time (the
 * page's own timers stand still during a seek).
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`).
 *
 * @module
 */

import type { RealTime } from "./clock.ts";

/** The gate of one page. */
export interface ReadinessGate {
  /** Holds the capture until the returned function is called (`__vid.delay`). */
  delay(label?: string): () => void;
  /** Resolves once `frame` is ready to capture; rejects naming what was not. */
  wait(frame: number): Promise<void>;
}

/**
 * Creates the gate; `timeoutMs` is the config's `readyTimeoutMs`.
 *
 * @example
 * ```ts no_run
 * import { captureRealTime } from "./clock.ts";
 *
 * const gate = createReadinessGate(30000, captureRealTime());
 * const release = gate.delay("data");
 * setTimeout(release, 0);
 * await gate.wait(0);
 * ```
 */
export function createReadinessGate(timeoutMs: number, real: RealTime): ReadinessGate {
  const delays = new Map<number, string>();
  let nextDelayId = 1;
  const { sleep } = real;
  return {
    delay(label = "delay") {
      const id = nextDelayId++;
      delays.set(id, label);
      return () => {
        delays.delete(id);
      };
    },
    async wait(frame: number): Promise<void> {
      const deadline = real.Date.now() + timeoutMs;
      const timeout = (what: string) =>
        new Error(
          `frame ${frame}: ${what} not ready after ${timeoutMs} ms`,
        );
      if (document.fonts && document.fonts.status !== "loaded") {
        await Promise.race([
          document.fonts.ready,
          sleep(timeoutMs).then(() => {
            throw timeout("fonts");
          }),
        ]);
      }
      for (const image of Array.from(document.images)) {
        if (image.complete || !image.src) continue;
        const left = deadline - real.Date.now();
        await Promise.race([
          image.decode().catch(() => undefined),
          sleep(Math.max(0, left)).then(() => {
            throw timeout(`image ${image.currentSrc || image.src}`);
          }),
        ]);
      }
      while (delays.size > 0) {
        if (real.Date.now() > deadline) {
          const labels = Array.from(delays.values()).map((l) => `"${l}"`).join(", ");
          throw new Error(
            `frame ${frame}: __vid.delay(${labels}) was not released within ` +
              `${timeoutMs} ms`,
          );
        }
        await sleep(2);
      }
    },
  };
}
