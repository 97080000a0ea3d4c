/**
 * The run time a distributed render is billed for, read from its workflow history: the
 * sum over every function invocation (each chunk attempt, the plan, the assembly) of the
 * time from its `LambdaFunctionStarted` event to the end event that follows it
 * (`LambdaFunctionSucceeded`, `…Failed` or `…TimedOut`, whose `previousEventId` is the
 * Started event's id). Waiting for a free function instance (queued before Started) and
 * the workflow's back-off between retries (after an end, before the next Scheduled) are
 * not run time, so they are not counted; an invocation still running counts up to `now`.
 * The prices the estimate applies are declared here too.
 *
 * @module
 */

import type { HistoryEvent } from "@aws-sdk/client-sfn";

const ENDS = new Set([
  "LambdaFunctionSucceeded",
  "LambdaFunctionFailed",
  "LambdaFunctionTimedOut",
]);

/**
 * Milliseconds of function run time in `events`, or `undefined` when the history pairs no
 * Started event with its end (a history without Lambda events: the caller estimates
 * otherwise).
 *
 * @param events The execution's history, in order.
 * @param now End of the invocations still running (the execution's stop time once stopped).
 */
export function functionRunMs(events: readonly HistoryEvent[], now: number): number | undefined {
  const started = new Map<number, number>();
  for (const e of events) {
    if (e.type === "LambdaFunctionStarted" && e.id !== undefined) {
      started.set(e.id, e.timestamp?.getTime() ?? now);
    }
  }
  let ms = 0;
  let paired = false;
  for (const e of events) {
    if (!ENDS.has(e.type ?? "") || e.previousEventId === undefined) continue;
    const start = started.get(e.previousEventId);
    if (start === undefined) continue;
    paired = true;
    ms += Math.max(0, (e.timestamp?.getTime() ?? now) - start);
    started.delete(e.previousEventId);
  }
  if (!paired) return undefined;
  for (const start of started.values()) ms += Math.max(0, now - start);
  return ms;
}

/** A rough cost of a render so far. */
export interface CostEstimate {
  /**
   * Function run time x memory in GB: each invocation (chunk attempts, plan, assemble)
   * from its start to its end, so waiting for a free instance and retry back-off are not
   * counted.
   */
  lambdaGbSeconds: number;
  /**
   * US dollars: `lambdaGbSeconds` x $0.0000166667 (x86 Lambda, per GB-second) plus
   * $0.000025 per state transition (Standard workflows). Lambda request charges, S3
   * requests and storage, and data transfer are not included.
   */
  usd: number;
  /** State transitions counted (states entered). */
  stateTransitions: number;
}

/** Price of Lambda compute (x86, us-east-1), US dollars per GB-second. */
export const LAMBDA_USD_PER_GB_SECOND = 0.0000166667;

/** Price of one Standard workflow state transition, US dollars. */
export const USD_PER_STATE_TRANSITION = 0.000025;

/** Memory of the render function assumed by the cost estimate (the deploy default), MB. */
export const DEFAULT_LAMBDA_MEMORY_MB = 10240;
