/**
 * The progress of a distributed render as `vid lambda render --wait` and `vid lambda progress`
 * print it: one line for people, JSON for machines.
 *
 * @module
 */

import { readableExecutionError } from "../lambda/execution_error.ts";
import type { LambdaRenderProgress } from "../lambda/sdk.ts";

export function progressLine(p: LambdaRenderProgress): string {
  const frames = p.framesTotal !== undefined
    ? `, frames ${p.framesDone ?? 0}/${p.framesTotal}`
    : "";
  const cost = `, ~$${p.costEstimate.usd.toFixed(4)}`;
  const where = p.outputLocation ? ` ${p.outputLocation}` : "";
  // Retried chunks: which, which attempt, and why the last one failed.
  const retries = p.retries.map((r) => {
    const why = readableExecutionError(r.errors.at(-1) ?? "");
    const reason = why.length > 160 ? `${why.slice(0, 157)}...` : why;
    return `; ${r.index === undefined ? "a chunk" : `chunk ${r.index}`} attempt ${r.attempts}` +
      (reason ? ` (retried after ${reason})` : "");
  }).join("");
  return `${p.status}: chunks ${p.chunksDone}/${p.chunksTotal}${frames}${cost}${where}${retries}`;
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
