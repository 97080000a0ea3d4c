/**
 * The workers of a local render: each pulls chunks from one queue and renders them in its
 * own browser. A browser's compositor takes one BeginFrame at a time (windows of one
 * browser capture in turn; overlapping BeginFrames crash its GPU process), so a worker
 * with a window in a shared browser adds no capture throughput: the first worker uses the
 * session's browser, every further one launches its own (in the session's mode, scale and
 * network guard, closed with the session) while the first one already renders.
 *
 * Every chunk gets a fresh page fast-forwarded to its first frame, whatever the worker
 * count: Chromium keeps raster state between frames (layer raster scales, tiles), so a
 * page's history would otherwise show in the pixels and --workers would change them.
 *
 * @module
 */

import type { Browser } from "./browser.ts";
import { CdpClosedError } from "./cdp.ts";
import type { Chunk } from "./chunk_plan.ts";
import { type ChunkOutput, renderChunk, renderRange } from "./render_chunk.ts";
import type { RenderSession } from "./session.ts";

/** What {@linkcode runWorkers} needs besides the session. */
export interface WorkerPlan {
  chunks: readonly Chunk[];
  /** Workers to run (at most one per chunk is useful). */
  workers: number;
  /** The encoding of a chunk. */
  output(chunk: Chunk): ChunkOutput;
  /** Called after each frame is handed to the encoder. */
  onFrame(): void;
  /** Called when a chunk's frames are to be counted again (its retry after a crash). */
  onRetry(framesLost: number): void;
  /** Stops every worker between frames; aborted by the first failing worker. */
  abort: AbortController;
  /** Told when an extra worker cannot get a browser (the others carry on). */
  onWarning?: (message: string) => void;
  /** Builds the error of a chunk that failed again after its retry. */
  chunkFailed(chunk: Chunk, cause: Error): Error;
}

/**
 * Renders every chunk of the plan; resolves with the number of chunks retried after a
 * browser crash, rejects with the first failure (the other workers stop).
 */
export async function runWorkers(session: RenderSession, plan: WorkerPlan): Promise<number> {
  const signal = plan.abort.signal;
  let nextChunk = 0;
  let retries = 0;
  const renderOne = async (browser: Browser, chunk: Chunk): Promise<Browser> => {
    const out = plan.output(chunk);
    let done = 0;
    const countFrame = () => {
      done++;
      plan.onFrame();
    };
    try {
      const loaded = browser === session.browser ? session.takePage() : undefined;
      if (loaded) {
        try {
          await renderRange(loaded, out, countFrame, signal);
        } finally {
          await loaded.close();
        }
      } else await renderChunk(browser, session.spec, out, countFrame, signal);
      return browser;
    } catch (error) {
      if (!(error instanceof CdpClosedError) || signal.aborted) throw error;
      // The browser crashed: relaunch it (once for all its workers), retry this chunk once.
      retries++;
      plan.onRetry(done);
      try {
        const relaunched = await session.replaceBrowser(browser);
        await renderChunk(relaunched, session.spec, out, plan.onFrame, signal);
        return relaunched;
      } catch (retryError) {
        if (signal.aborted) throw retryError;
        throw plan.chunkFailed(chunk, retryError as Error);
      }
    }
  };
  const worker = async (index: number): Promise<void> => {
    try {
      let browser: Browser;
      if (index === 0) browser = session.browser;
      else {
        try {
          browser = await session.addBrowser();
        } catch (error) {
          if (signal.aborted) return;
          plan.onWarning?.(
            `worker ${index + 1} could not start its browser (${
              (error as Error).message.split("\n")[0]
            }); the other workers render its chunks`,
          );
          return;
        }
      }
      while (nextChunk < plan.chunks.length && !signal.aborted) {
        browser = await renderOne(browser, plan.chunks[nextChunk++]);
      }
    } catch (error) {
      plan.abort.abort();
      throw error;
    }
  };
  const results = await Promise.allSettled(
    Array.from({ length: plan.workers }, (_, index) => worker(index)),
  );
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
  return retries;
}
