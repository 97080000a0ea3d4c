/**
 * `vid lambda`: distributed rendering on AWS Lambda and Step Functions (or the local
 * stack). One module per subcommand group: `lambda_stack.ts` (`local`, `deploy`),
 * `lambda_sites.ts` (`sites create|list|rm`), `lambda_render.ts` (`render`),
 * `lambda_batch.ts` (`render-batch`), `lambda_renders.ts` (`progress`, `cancel`,
 * `download`); the connection helpers they share are in `lambda_connection.ts`.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { registerLambdaBatch } from "./lambda_batch.ts";
import { registerLambdaRender } from "./lambda_render.ts";
import { registerLambdaRenders } from "./lambda_renders.ts";
import { registerLambdaSites } from "./lambda_sites.ts";
import { registerLambdaStack } from "./lambda_stack.ts";

export {
  type Connection,
  connection,
  type ConnectionFlags,
  ENV_HELP,
  fail,
  LambdaUsageError,
  type RenderConfigFlags,
  renderConfigFrom,
  RESERVED_ENV,
  reservedConcurrencyFromEnv,
  unreachableHint,
} from "./lambda_connection.ts";

/** Registers `vid lambda`. */
export function registerLambda(program: Command): void {
  const lambda = program
    .command("lambda")
    .description(
      "Distributed rendering: one Step Functions execution per render, one Lambda invocation " +
        "per chunk. `vid lambda local` runs the whole stack on this machine.",
    );
  registerLambdaStack(lambda);
  registerLambdaSites(lambda);
  registerLambdaRender(lambda);
  registerLambdaBatch(lambda);
  registerLambdaRenders(lambda);
}
