/**
 * The attempts of a batch row: a row's first execution is named by its content
 * (`batchRenderId`: `b-` and 40 hex digits), and each rerun after a failure starts
 * `<first>-a2`, `-a3`, …, so starting a batch (batch.ts), deciding what a rerun starts
 * (batch_rerun.ts) and reading where it is (batch_progress.ts) find the same executions by
 * name.
 *
 * @module
 */

import { executionArnFor, STATE_MACHINE_ARN_SHAPE } from "../aws/clients.ts";
import { BatchInputError } from "../batch/manifest.ts";

/** Attempts of one row before a rerun gives up on it. */
export const MAX_ATTEMPTS = 20;

export const FAILED_STATUSES: readonly string[] = ["failed", "aborted", "timed-out"];

/** The attempt number of a batch execution ARN (`b-<hex>` is 1, `b-<hex>-a<n>` is n). */
export function attemptOf(executionArn: string): number | undefined {
  const match = /:(b-[0-9a-f]{40})(?:-a(\d+))?$/.exec(executionArn);
  return match ? Number(match[2] ?? 1) : undefined;
}

/** The ARN of attempt `attempt` of the same batch row, or `undefined` for another ARN. */
export function laterAttemptArn(executionArn: string, attempt: number): string | undefined {
  const match = /^(.*:)(b-[0-9a-f]{40})(?:-a\d+)?$/.exec(executionArn);
  return match ? `${match[1]}${attemptRenderId(match[2], attempt)}` : undefined;
}

/** The render id of attempt `attempt` of a row whose first attempt is `baseId`. */
export function attemptRenderId(baseId: string, attempt: number): string {
  return attempt <= 1 ? baseId : `${baseId}-a${attempt}`;
}

/** The execution ARN for a name; a malformed state machine ARN is the batch's input error. */
export function batchExecutionArn(stateMachineArn: string, name: string): string {
  const arn = executionArnFor(stateMachineArn, name);
  if (arn === undefined) {
    throw new BatchInputError(
      "stateMachineArn",
      `stateMachineArn must be a state machine ARN (${STATE_MACHINE_ARN_SHAPE}), got ${
        JSON.stringify(stateMachineArn)
      }`,
    );
  }
  return arn;
}
