/**
 * Runs one execution of the local Step Functions endpoint (local_sfn.ts): the real ASL
 * definition interpreted by aws-local-stepfunctions, every Task state handed to the caller's
 * `invoke` with its `Resource` (the Lambda function ARN) and its payload, in place of Lambda,
 * and the interpreter's event log fed to the history recorder (local_sfn_history.ts). Apart
 * from the protocol server, which only checks requests and answers them, so that what stands
 * in for Lambda and the interpreter's overrides are read in one place.
 *
 * A function error reaches the workflow as Lambda reports it: error name = the thrown
 * error's `name`, cause = `{"errorType","errorMessage"}` as JSON (Lambda's own cause adds a
 * `trace`); an error named
 * `Lambda.*` (a stand-in for a throttle or a service error) keeps its plain message.
 *
 * @module
 */

import { StateMachine } from "aws-local-stepfunctions";
import { type ExecutionRecord, HistoryRecorder, json } from "./local_sfn_history.ts";

/** What `invoke` may report about one function invocation. */
export interface InvokeContext {
  /** The function begins to run now (see `invokeReportsStart`). */
  started(): void;
}

/** What running an execution takes of the endpoint's options (`LocalStepFunctionsOptions`). */
export interface RunOptions {
  /** Runs a Task state: what Lambda would do with `payload` for `functionArn`. */
  invoke: (functionArn: string, payload: unknown, context: InvokeContext) => Promise<unknown>;
  /** Whether `invoke` calls `context.started()` when the function begins to run. */
  invokeReportsStart?: boolean;
  /** Fixed pause before every retry, in milliseconds, in place of the definition's policy. */
  retryIntervalMs?: number;
}

/** The error a Task reports when the function throws, shaped as Lambda reports it. */
function functionError(thrown: unknown): Error {
  const original = thrown instanceof Error ? thrown : new Error(String(thrown));
  const errorType = original.name || "Error";
  // Lambda's cause also carries a `trace`; a stand-in's stack names only the test harness
  // and would bury the message in every chunk failure's cause.
  const message = errorType.startsWith("Lambda.")
    ? original.message
    : JSON.stringify({ errorType, errorMessage: original.message });
  const error = new Error(message);
  error.name = errorType;
  return error;
}

/**
 * Starts interpreting an execution's definition with its parsed input: sets the execution's
 * `abort` and `finished`, and records its history as the interpreter goes. A failure of the
 * event log is told to `log` and fails the execution instead of ending the process.
 *
 * @example
 * ```ts no_run
 * import type { ExecutionRecord } from "./local_sfn_history.ts";
 *
 * async function run(execution: ExecutionRecord): Promise<void> {
 *   runExecution(execution, JSON.parse(execution.input), {
 *     invoke: async (functionArn, payload) => ({ functionArn, payload }),
 *   }, console.error);
 *   await execution.finished;
 * }
 * ```
 *
 * @param execution The execution, RUNNING, with its machine and input.
 * @param input Its input, parsed.
 * @param options The stand-in for Lambda and the retry override.
 * @param log Told about a failure of the event log.
 */
export function runExecution(
  execution: ExecutionRecord,
  input: unknown,
  options: RunOptions,
  log: (message: string) => void,
): void {
  const { arn, name, machine } = execution;
  const recorder = new HistoryRecorder(execution, options.invokeReportsStart);
  const handlers = Object.fromEntries(
    [...machine.tasks].map(([state, resource]) => [
      state,
      async (payload: unknown) => {
        const attempt = recorder.payloadSent(state, payload);
        let result: unknown;
        try {
          result = await options.invoke(resource, payload, {
            started: () => recorder.started(attempt),
          });
        } catch (error) {
          const failure = functionError(error);
          recorder.attemptFailed(state, failure);
          throw failure;
        }
        return JSON.parse(json(result));
      },
    ]),
  );
  const retryIntervalMs = options.retryIntervalMs;
  const run = new StateMachine(machine.definition, { validationOptions: { noValidate: true } })
    .run(input as never, {
      overrides: {
        taskResourceLocalHandlers: handlers,
        retryIntervalOverrides: retryIntervalMs === undefined
          ? undefined
          : Object.fromEntries(machine.retryStates.map((s) => [s, retryIntervalMs])),
      },
      noThrowOnAbort: true,
      context: {
        Execution: {
          Id: arn,
          Name: name,
          RoleArn: machine.roleArn,
          StartTime: new Date(execution.startDate).toISOString(),
        },
        StateMachine: { Id: machine.arn, Name: machine.name },
      },
    });
  // The outcome is read from the event log; the result promise only needs a handler.
  run.result.catch(() => {});
  execution.abort = run.abort;
  execution.finished = (async () => {
    for await (const event of run.eventLogs) recorder.record(event);
  })().catch((error) => {
    // Unhandled, this would end the process and every other execution with it.
    log(`execution ${name}: ${error}`);
    run.abort();
    recorder.lost(error);
  });
}
