/**
 * The progress of a distributed render as `vid lambda render --wait` and `vid lambda progress`
 * print it: one line for people, JSON for machines.
 *
 * @module
 */

import { readableExecutionError } from "../lambda/execution_error.ts";
import type { ChunkRetry, LambdaRenderProgress } from "../lambda/sdk.ts";

/**
 * Retried chunks as the progress lines end: which, which attempt, and why the last one
 * failed (`; chunk 0 attempt 2 (retried after …)`); empty without any. One render's line and
 * each row of `progress --manifest` say them alike.
 */
export function retriesText(retries: readonly ChunkRetry[]): string {
  return retries.map((r) => {
    const why = readableExecutionError(r.errors.at(-1) ?? "");
    const reason = why.length > 160 ? `${why.slice(0, 157)}...` : why;
    const chunk = r.index === undefined ? "a chunk" : `chunk ${r.index}`;
    // A first attempt that failed and was not retried (an error of the project): no "retried".
    if (r.attempts === 1) return `; ${chunk} attempt 1 failed${reason ? ` (${reason})` : ""}`;
    return `; ${chunk} attempt ${r.attempts}` + (reason ? ` (retried after ${reason})` : "");
  }).join("");
}

export function progressLine(p: LambdaRenderProgress): string {
  const frames = p.framesTotal !== undefined
    ? `, frames ${p.framesDone ?? 0}/${p.framesTotal}`
    : "";
  const cost = `, ~$${p.costEstimate.usd.toFixed(4)}`;
  const where = p.outputLocation ? ` ${p.outputLocation}` : "";
  return `${p.status}: chunks ${p.chunksDone}/${p.chunksTotal}${frames}${cost}${where}` +
    retriesText(p.retries);
}

export function progressJson(p: LambdaRenderProgress): Record<string, unknown> {
  return {
    ...p,
    // A failed chunk's cause is Lambda's JSON; machines get the readable message too.
    errors: p.errors.map(readableExecutionError),
    startedAt: p.startedAt?.toISOString(),
    stoppedAt: p.stoppedAt?.toISOString(),
  };
}
