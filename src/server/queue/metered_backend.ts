/**
 * The render backend as `/metrics` sees it: {@linkcode meteredBackend} wraps the backend the
 * queue renders with and reports each render into the process's {@linkcode ServerMetrics}
 * (busy workers, outcome, duration, frames). Apart from `metrics.ts`, which keeps the numbers
 * and knows nothing of backends or the server's context, so the context can carry the
 * metrics without the two importing each other.
 *
 * @module
 */

import type { ServerContext } from "../context.ts";
import { frameCount } from "../../render/render.ts";
import type { ServerMetrics } from "./metrics.ts";
import type { RenderBackend, RenderJob } from "./render_backend.ts";

/** Frames of a job's video: its duration at its frame rate. */
function framesOf(job: RenderJob): number {
  try {
    return frameCount(job.durationSeconds, job.request.fps);
  } catch {
    return 0;
  }
}

/**
 * `backend` with every render reported into `metrics`: busy workers while it runs, then its
 * outcome, duration and frames. A render that throws after its signal was aborted was
 * deleted or handed back at shutdown, so it counts as cancelled rather than failed.
 *
 * @example
 * ```ts no_run
 * import { localBackend } from "./local_backend.ts";
 * import { ServerMetrics } from "./metrics.ts";
 *
 * const metrics = new ServerMetrics();
 * const backend = meteredBackend(localBackend(2), metrics);
 * ```
 */
export function meteredBackend(backend: RenderBackend, metrics: ServerMetrics): RenderBackend {
  metrics.workers = backend.slots;
  return {
    kind: backend.kind,
    slots: backend.slots,
    async render(ctx: ServerContext, job: RenderJob, signal: AbortSignal): Promise<void> {
      metrics.busy++;
      const started = performance.now();
      const seconds = () => (performance.now() - started) / 1000;
      try {
        await backend.render(ctx, job, signal);
        metrics.renderFinished("completed", seconds(), framesOf(job));
      } catch (error) {
        metrics.renderFinished(signal.aborted ? "cancelled" : "failed", seconds());
        throw error;
      } finally {
        metrics.busy--;
      }
    },
    // A chunk of a render another worker claimed: busy and its duration are counted where it
    // is run (`chunk_jobs.ts`, through the context's metrics), its frames with its render.
    ...(backend.work && { work: backend.work.bind(backend) }),
    close: () => backend.close(),
  };
}
