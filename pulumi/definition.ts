/**
 * The one place where the Pulumi program meets the shared state machine definition.
 *
 * `src/lambda/state_machine.ts` builds the Amazon States Language document used both here and
 * by the local stack, so AWS and the local tests run the same workflow. This module adapts it
 * to what Pulumi needs: a JSON string for a known function ARN (the caller applies it to the
 * function's ARN output). One function serves every task (`{ functionArn }`), and a task may
 * run as long as the function may. If the shared signature changes, only this file changes.
 *
 * @module
 */

import { stateMachineDefinition } from "../src/lambda/state_machine.ts";

/**
 * The state machine definition for the render function `functionArn` whose timeout is
 * `timeoutSeconds`, serialised as JSON.
 *
 * @example
 * ```ts
 * const definition = renderFunction.arn.apply((arn) => definitionJson(arn, 900));
 * ```
 */
export function definitionJson(functionArn: string, timeoutSeconds: number): string {
  return JSON.stringify(
    stateMachineDefinition({ functionArn }, { taskTimeoutSeconds: timeoutSeconds }),
  );
}
