/**
 * A local Step Functions endpoint: a loopback HTTP server speaking the AWS JSON 1.0
 * protocol of the Step Functions API, so the real `SFNClient` (with `endpoint` set to
 * this server) drives it. Executions run the real ASL definition with
 * aws-local-stepfunctions; every Task state is handed to the caller's `invoke` with its
 * `Resource` (the Lambda function ARN) and its payload, in place of Lambda.
 *
 * Operations: `CreateStateMachine`, `DescribeStateMachine`, `StartExecution`,
 * `DescribeExecution`, `GetExecutionHistory`, `StopExecution`. Errors use the AWS JSON
 * error shape (`__type`, `message`, HTTP 400), so the client raises its typed exceptions
 * (`ExecutionDoesNotExist`, `StateMachineDoesNotExist`, `InvalidExecutionInput`,
 * `InvalidArn`, `InvalidDefinition`, `InvalidName`, `ExecutionAlreadyExists`,
 * `StateMachineAlreadyExists`).
 *
 * The history is rebuilt from the interpreter's event log in Step Functions' event types:
 * `ExecutionStarted`, `<Type>StateEntered` / `<Type>StateExited`, `LambdaFunctionScheduled`
 * / `Started` / `Succeeded` / `Failed` / `TimedOut` (one Scheduled per attempt, so retries
 * show), `MapStateStarted` (with `length`), `MapIterationStarted` / `Succeeded` / `Failed` /
 * `Aborted`, `MapStateSucceeded` / `Failed`, and `ExecutionSucceeded` / `Failed` /
 * `Aborted` / `TimedOut`.
 *
 * A function error reaches the workflow as Lambda reports it: error name = the thrown
 * error's `name`, cause = `{"errorType","errorMessage"}` as JSON (Lambda's own cause adds a
 * `trace`); an error named
 * `Lambda.*` (a stand-in for a throttle or a service error) keeps its plain message.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import { MAX_EXECUTION_INPUT_BYTES } from "../config.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

/** Options of {@linkcode startLocalStepFunctions}. */
export interface LocalStepFunctionsOptions {
  /** Port to listen on; 0 picks a free one. @default 0 */
  port?: number;
  /** Loopback address to listen on. @default "127.0.0.1" */
  hostname?: string;
  /** Region written into ARNs. @default "us-east-1" */
  region?: string;
  /** Account id written into ARNs. @default "000000000000" */
  accountId?: string;
  /**
   * Runs a Task state: what Lambda would do with `payload` for `functionArn`. Its return
   * value is the task's result; a throw is the function's error.
   */
  invoke: (functionArn: string, payload: unknown, context: InvokeContext) => Promise<unknown>;
  /**
   * Whether `invoke` calls `context.started()` when the function begins to run (after any
   * wait for a free instance): `LambdaFunctionStarted` is then recorded at that moment, as on
   * AWS, so a task's run time (Started to its end event) leaves out the wait. Otherwise it
   * is recorded with `LambdaFunctionScheduled`. @default false
   */
  invokeReportsStart?: boolean;
  /**
   * Fixed pause before every retry, in milliseconds, in place of the definition's
   * `IntervalSeconds` / `BackoffRate` (fast local loops). @default the definition's policy
   */
  retryIntervalMs?: number;
  /**
   * Told about a failure the endpoint survived (a request body that broke off, an
   * execution's event log that failed). @default console.error
   */
  log?: (message: string) => void;
}

/** What `invoke` may report about one function invocation. */
export interface InvokeContext {
  /** The function begins to run now (see `invokeReportsStart`). */
  started(): void;
}

/** A running local Step Functions endpoint. */
export interface LocalStepFunctions {
  /** Base URL for `new SFNClient({ endpoint })`. */
  endpoint: string;
  /** Region of the ARNs this endpoint issues. */
  region: string;
  /**
   * Registers a state machine (as `CreateStateMachine` does) and returns its ARN.
   * Throws when the definition is not valid ASL.
   */
  createStateMachine(name: string, definition: object): string;
  /** Aborts running executions and stops the server. */
  close(): Promise<void>;
}

/** An API error in the AWS JSON shape; `type` becomes the client's exception name. */
class SfnApiError extends VidError {
  readonly type: string;
  constructor(type: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.name = type;
    this.type = type;
  }
}

/** A Step Functions history event as the API returns it. */
interface HistoryEvent {
  timestamp: number;
  type: string;
  id: number;
  previousEventId: number;
  [details: string]: unknown;
}

type ExecutionStatus = "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "ABORTED";

interface MachineRecord {
  arn: string;
  name: string;
  definition: StateMachineDefinition;
  definitionText: string;
  roleArn: string;
  type: string;
  creationDate: number;
  /** Task state name -> its Resource. */
  tasks: Map<string, string>;
  /** Names of the states that have a Retry field. */
  retryStates: string[];
  /** Map state name -> its ItemsPath and InputPath, to report the item count. */
  maps: Map<string, { itemsPath?: string; inputPath?: string | null }>;
}

interface ExecutionRecord {
  arn: string;
  name: string;
  machine: MachineRecord;
  status: ExecutionStatus;
  startDate: number;
  stopDate?: number;
  input: string;
  output?: string;
  error?: string;
  cause?: string;
  stopRequest?: { error?: string; cause?: string };
  events: HistoryEvent[];
  abort(): void;
  /** Settles when the interpreter's event log is fully recorded. */
  finished: Promise<void>;
}

/** Names Step Functions accepts: 1-80 characters, no whitespace, brackets, wildcards,
 * special characters or control characters. */
const NAME = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\p{Cc}]{1,80}$/u;
const seconds = (ms: number): number => ms / 1000;

function collectStates(
  states: Record<string, Record<string, unknown>>,
  machine: Pick<MachineRecord, "tasks" | "retryStates" | "maps">,
): void {
  for (const [name, state] of Object.entries(states)) {
    if (state.Type === "Task") machine.tasks.set(name, String(state.Resource));
    if (Array.isArray(state.Retry)) machine.retryStates.push(name);
    const nested: unknown[] = [];
    if (state.Type === "Map") {
      machine.maps.set(name, {
        itemsPath: state.ItemsPath as string | undefined,
        inputPath: state.InputPath as string | null | undefined,
      });
      nested.push(state.ItemProcessor ?? state.Iterator);
    }
    if (state.Type === "Parallel") nested.push(...(state.Branches as unknown[]));
    for (const sub of nested) {
      collectStates((sub as { States: Record<string, Record<string, unknown>> }).States, machine);
    }
  }
}

/** Resolves `$` or `$.a.b` paths; anything fancier is reported as unknown. */
function simplePath(path: string | null | undefined, value: unknown): unknown {
  if (path === undefined || path === "$") return value;
  if (path === null || !/^\$(\.[A-Za-z_][A-Za-z0-9_]*)+$/.test(path)) return undefined;
  let current = value;
  for (const key of path.slice(2).split(".")) {
    if (typeof current !== "object" || current === null) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

function json(value: unknown): string {
  return JSON.stringify(value ?? null);
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

/** One Task attempt, from the handler call until its events are in the history. */
interface Attempt {
  /** The payload the attempt sent. */
  payload: unknown;
  /** When its function began to run, once reported. */
  startedAt?: number;
  /** `<state>#<iteration>`, once its Scheduled event is recorded and Started is not. */
  key?: string;
}

/** Turns the interpreter's event log into Step Functions history events. */
class HistoryRecorder {
  readonly #execution: ExecutionRecord;
  /** Task state name -> attempts whose Scheduled event is not in the history yet, in order. */
  readonly #payloads = new Map<string, Attempt[]>();
  /** `<state>#<iteration>` -> id of its running attempt's `LambdaFunctionStarted`. */
  readonly #started = new Map<string, number>();
  /** `<state>#<iteration>` -> its attempt scheduled but not started yet. */
  readonly #pending = new Map<string, Attempt>();
  /** Whether `invoke` reports when a function starts (`invokeReportsStart`). */
  readonly #reportsStart: boolean;
  /** `<state>#<iteration>` of tasks whose failure a Catch handled. */
  readonly #caught = new Set<string>();
  /** Map iterations: index -> still running, and the failure it ended on, if any. */
  readonly #iterations = new Map<number, { done: boolean; failure?: boolean }>();

  constructor(execution: ExecutionRecord, reportsStart = false) {
    this.#execution = execution;
    this.#reportsStart = reportsStart;
  }

  /** Task state name -> errors of failed attempts not yet in the history, in order. */
  readonly #failures = new Map<string, { error: string; cause: string }[]>();

  /**
   * Notes a Task attempt's failure; if the state retries, {@linkcode record} writes it as
   * the attempt's `LambdaFunctionFailed` before the next attempt, as AWS does.
   */
  attemptFailed(state: string, error: Error): void {
    const queue = this.#failures.get(state) ?? [];
    queue.push({ error: error.name, cause: error.message });
    this.#failures.set(state, queue);
  }

  /** Notes the payload a Task attempt sent, before its event reaches {@linkcode record}. */
  payloadSent(state: string, payload: unknown): Attempt {
    const attempt: Attempt = { payload };
    const queue = this.#payloads.get(state) ?? [];
    queue.push(attempt);
    this.#payloads.set(state, queue);
    return attempt;
  }

  /**
   * The attempt's function begins to run: `LambdaFunctionStarted` now, or (its Scheduled
   * event not recorded yet) at this time once it is.
   */
  started(attempt: Attempt): void {
    if (attempt.startedAt !== undefined) return;
    attempt.startedAt = Date.now();
    if (attempt.key !== undefined && this.#execution.status === "RUNNING") {
      this.#pending.delete(attempt.key);
      this.#startedEvent(attempt.key, attempt.startedAt);
    }
  }

  #startedEvent(key: string, timestamp: number): void {
    this.#add("LambdaFunctionStarted", {}, timestamp);
    this.#started.set(key, this.#execution.events.length);
  }

  #add(
    type: string,
    details: Record<string, unknown> = {},
    timestamp = Date.now(),
    previousEventId?: number,
  ): void {
    const events = this.#execution.events;
    const id = events.length + 1;
    events.push({
      timestamp: seconds(timestamp),
      type,
      id,
      previousEventId: previousEventId ?? id - 1,
      ...details,
    });
  }

  /**
   * An attempt's end event follows its `LambdaFunctionStarted` (`previousEventId`), as on
   * AWS, so its run time can be read even with parallel chunks interleaved.
   */
  #ended(key: string, type: string, details: Record<string, unknown>, timestamp: number): void {
    const started = this.#started.get(key);
    this.#started.delete(key);
    // An attempt that ended before it reported its start never gets a Started event.
    const pending = this.#pending.get(key);
    if (pending) pending.key = undefined;
    this.#pending.delete(key);
    this.#add(type, details, timestamp, started);
  }

  #scheduled(state: string, input: unknown, timestamp: number, key: string): void {
    const resource = this.#execution.machine.tasks.get(state);
    const attempt = this.#payloads.get(state)?.shift();
    this.#add("LambdaFunctionScheduled", {
      lambdaFunctionScheduledEventDetails: {
        resource,
        input: json(attempt ? attempt.payload : input),
        inputDetails: { truncated: false },
      },
    }, timestamp);
    if (!this.#reportsStart || !attempt) this.#startedEvent(key, timestamp);
    else if (attempt.startedAt !== undefined) {
      this.#startedEvent(key, Math.max(timestamp, attempt.startedAt));
    } else {
      attempt.key = key;
      this.#pending.set(key, attempt);
    }
  }

  /**
   * The interpreter's event log failed: the execution fails with the reason, so a poller
   * sees it end instead of waiting on a RUNNING execution forever.
   */
  lost(error: unknown): void {
    const execution = this.#execution;
    if (execution.status !== "RUNNING") return;
    const at = Date.now();
    execution.error = "States.Runtime";
    execution.cause = `the local Step Functions lost this execution's event log: ${error}`;
    this.#finish("FAILED", at);
    this.#add("ExecutionFailed", {
      executionFailedEventDetails: { error: execution.error, cause: execution.cause },
    }, at);
  }

  #finish(status: ExecutionStatus, timestamp: number): void {
    const execution = this.#execution;
    if (execution.status !== "RUNNING") return;
    execution.status = status;
    execution.stopDate = timestamp;
  }

  // deno-lint-ignore no-explicit-any
  record(event: any): void {
    const at: number = event.timestamp ?? Date.now();
    const execution = this.#execution;
    const state = event.state as { name: string; type: string; input: unknown; output?: unknown };
    const iteration = typeof event.index === "number" ? event.index : undefined;
    const key = state ? `${state.name}#${iteration ?? ""}` : "";
    if (iteration !== undefined && event.type.startsWith("State")) {
      const entry = this.#iterations.get(iteration);
      if (entry) entry.failure = event.type === "StateFailed";
    }
    switch (event.type) {
      case "ExecutionStarted":
        this.#add("ExecutionStarted", {
          executionStartedEventDetails: {
            input: execution.input,
            inputDetails: { truncated: false },
            roleArn: execution.machine.roleArn,
          },
        }, at);
        break;
      case "StateEntered": {
        this.#add(`${state.type}StateEntered`, {
          stateEnteredEventDetails: {
            name: state.name,
            input: json(state.input),
            inputDetails: { truncated: false },
          },
        }, at);
        if (state.type === "Task") this.#scheduled(state.name, state.input, at, key);
        if (state.type === "Map") {
          const map = execution.machine.maps.get(state.name);
          const items = simplePath(map?.itemsPath, simplePath(map?.inputPath, state.input));
          if (Array.isArray(items)) {
            this.#add(
              "MapStateStarted",
              { mapStateStartedEventDetails: { length: items.length } },
              at,
            );
          }
        }
        break;
      }
      case "StateRetried":
        if (state.type === "Task") {
          // The failed attempt ends (after its Started, as on AWS) before the next begins.
          const failure = this.#failures.get(state.name)?.shift();
          if (failure) {
            const timedOut = failure.error === "States.Timeout";
            this.#ended(key, timedOut ? "LambdaFunctionTimedOut" : "LambdaFunctionFailed", {
              [
                timedOut ? "lambdaFunctionTimedOutEventDetails" : "lambdaFunctionFailedEventDetails"
              ]: failure,
            }, at);
          }
          this.#scheduled(state.name, state.input, at, key);
        }
        break;
      case "StateCaught":
        this.#caught.add(key);
        break;
      case "StateFailed":
        if (state.type === "Task") {
          // The final attempt's failure is written from the event itself.
          const failures = this.#failures.get(state.name);
          if (failures && failures[0]?.error === event.Error) failures.shift();
          const timedOut = event.Error === "States.Timeout";
          this.#ended(key, timedOut ? "LambdaFunctionTimedOut" : "LambdaFunctionFailed", {
            [timedOut ? "lambdaFunctionTimedOutEventDetails" : "lambdaFunctionFailedEventDetails"]:
              {
                error: event.Error,
                cause: typeof event.Cause === "string" ? event.Cause : json(event.Cause),
              },
          }, at);
        }
        if (state.type === "Map") {
          // The interpreter drops the failed iteration's own event once the Map fails, and
          // reports nothing for the iterations it aborted: settle every open iteration here.
          for (const [index, entry] of this.#iterations) {
            if (entry.done) continue;
            entry.done = true;
            const type = entry.failure ? "MapIterationFailed" : "MapIterationAborted";
            const detailsKey = entry.failure
              ? "mapIterationFailedEventDetails"
              : "mapIterationAbortedEventDetails";
            this.#add(type, { [detailsKey]: { name: state.name, index } }, at);
          }
          this.#add("MapStateFailed", {}, at);
        }
        break;
      case "StateExited":
        if (state.type === "Task" && !this.#caught.delete(key)) {
          this.#ended(key, "LambdaFunctionSucceeded", {
            lambdaFunctionSucceededEventDetails: {
              output: json(state.output),
              outputDetails: { truncated: false },
            },
          }, at);
        }
        if (state.type === "Map") {
          this.#iterations.clear();
          this.#add("MapStateSucceeded", {}, at);
        }
        this.#add(`${state.type}StateExited`, {
          stateExitedEventDetails: {
            name: state.name,
            output: json(state.output),
            outputDetails: { truncated: false },
          },
        }, at);
        break;
      case "MapIterationStarted":
        this.#iterations.set(event.index, { done: false });
        this.#add("MapIterationStarted", {
          mapIterationStartedEventDetails: { name: event.parentState.name, index: event.index },
        }, at);
        break;
      case "MapIterationSucceeded":
      case "MapIterationFailed": {
        const entry = this.#iterations.get(event.index);
        if (entry?.done) break;
        if (entry) entry.done = true;
        const detailsKey = event.type === "MapIterationSucceeded"
          ? "mapIterationSucceededEventDetails"
          : "mapIterationFailedEventDetails";
        this.#add(event.type, {
          [detailsKey]: { name: event.parentState.name, index: event.index },
        }, at);
        break;
      }
      case "ExecutionSucceeded":
        execution.output = json(event.output);
        this.#finish("SUCCEEDED", at);
        this.#add("ExecutionSucceeded", {
          executionSucceededEventDetails: {
            output: execution.output,
            outputDetails: { truncated: false },
          },
        }, at);
        break;
      case "ExecutionFailed":
        execution.error = String(event.Error);
        execution.cause = typeof event.Cause === "string" ? event.Cause : json(event.Cause);
        this.#finish("FAILED", at);
        this.#add("ExecutionFailed", {
          executionFailedEventDetails: { error: execution.error, cause: execution.cause },
        }, at);
        break;
      case "ExecutionAborted":
        execution.error = execution.stopRequest?.error;
        execution.cause = execution.stopRequest?.cause;
        this.#finish("ABORTED", at);
        this.#add("ExecutionAborted", {
          executionAbortedEventDetails: { error: execution.error, cause: execution.cause },
        }, at);
        break;
      case "ExecutionTimeout":
        execution.error = "States.Timeout";
        this.#finish("TIMED_OUT", at);
        this.#add("ExecutionTimedOut", {
          executionTimedOutEventDetails: { error: execution.error },
        }, at);
        break;
    }
  }
}

/** What the endpoint's operations share: its options, ARN parts, and what was created. */
interface SfnState {
  options: LocalStepFunctionsOptions;
  region: string;
  accountId: string;
  machines: Map<string, MachineRecord>;
  executions: Map<string, ExecutionRecord>;
}

/** The ARN of the state machine `name`. */
function machineArn(local: SfnState, name: string): string {
  return `arn:aws:states:${local.region}:${local.accountId}:stateMachine:${name}`;
}

/** `arn` when it is a state machine or execution ARN (as `kind` says), else `InvalidArn`. */
function checkArn(arn: unknown, kind: "stateMachine" | "execution"): string {
  const parts = typeof arn === "string" ? arn.split(":") : [];
  const expected = kind === "stateMachine" ? 7 : 8;
  if (
    parts.length !== expected || parts[0] !== "arn" || parts[2] !== "states" || parts[5] !== kind
  ) {
    throw new SfnApiError("InvalidArn", `Invalid Arn: '${String(arn)}'`);
  }
  return arn as string;
}

/** `CreateStateMachine`: registers a machine; the same one again is a no-op. */
function createMachine(
  local: SfnState,
  name: unknown,
  definitionText: unknown,
  roleArn = `arn:aws:iam::${local.accountId}:role/vid-local-states`,
  type = "STANDARD",
): MachineRecord {
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new SfnApiError("InvalidName", `Invalid Name: '${String(name)}'`);
  }
  let definition: StateMachineDefinition;
  try {
    definition = JSON.parse(String(definitionText));
    new StateMachine(definition);
  } catch (error) {
    throw new SfnApiError("InvalidDefinition", `Invalid State Machine Definition: ${error}`);
  }
  const arn = machineArn(local, name);
  const existing = local.machines.get(arn);
  if (existing) {
    if (existing.definitionText === definitionText && existing.roleArn === roleArn) {
      return existing;
    }
    throw new SfnApiError("StateMachineAlreadyExists", `State Machine Already Exists: '${arn}'`);
  }
  const machine: MachineRecord = {
    arn,
    name,
    definition,
    definitionText: String(definitionText),
    roleArn,
    type,
    creationDate: Date.now(),
    tasks: new Map(),
    retryStates: [],
    maps: new Map(),
  };
  collectStates(definition.States as unknown as Record<string, Record<string, unknown>>, machine);
  local.machines.set(arn, machine);
  return machine;
}

/** The registered machine of `arn`, else `StateMachineDoesNotExist`. */
function getMachine(local: SfnState, arn: unknown): MachineRecord {
  const machine = local.machines.get(checkArn(arn, "stateMachine"));
  if (!machine) {
    throw new SfnApiError("StateMachineDoesNotExist", `State Machine Does Not Exist: '${arn}'`);
  }
  return machine;
}

/** The execution of `arn`, else `ExecutionDoesNotExist`. */
function getExecution(local: SfnState, arn: unknown): ExecutionRecord {
  const execution = local.executions.get(checkArn(arn, "execution"));
  if (!execution) {
    throw new SfnApiError("ExecutionDoesNotExist", `Execution Does Not Exist: '${arn}'`);
  }
  return execution;
}

/** `StartExecution`: runs the definition, every Task handed to `invoke`. */
function startExecution(local: SfnState, request: Record<string, unknown>): ExecutionRecord {
  const machine = getMachine(local, request.stateMachineArn);
  const name = request.name === undefined ? crypto.randomUUID() : request.name;
  if (typeof name !== "string" || !NAME.test(name)) {
    throw new SfnApiError("InvalidName", `Invalid Name: '${String(name)}'`);
  }
  const input = request.input === undefined ? "{}" : String(request.input);
  const bytes = new TextEncoder().encode(input).byteLength;
  if (bytes > MAX_EXECUTION_INPUT_BYTES) {
    throw new SfnApiError(
      "InvalidExecutionInput",
      `Execution input is ${bytes} bytes, over the maximum of ${MAX_EXECUTION_INPUT_BYTES} bytes`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(input);
  } catch (error) {
    throw new SfnApiError(
      "InvalidExecutionInput",
      `Invalid State Machine Execution Input: ${error}`,
    );
  }
  const arn = `arn:aws:states:${local.region}:${local.accountId}:execution:${machine.name}:${name}`;
  const existing = local.executions.get(arn);
  if (existing) {
    if (existing.status === "RUNNING" && existing.input === input) return existing;
    throw new SfnApiError("ExecutionAlreadyExists", `Execution Already Exists: '${arn}'`);
  }

  const execution: ExecutionRecord = {
    arn,
    name,
    machine,
    status: "RUNNING",
    startDate: Date.now(),
    input,
    events: [],
    abort: () => {},
    finished: Promise.resolve(),
  };
  const recorder = new HistoryRecorder(execution, local.options.invokeReportsStart);
  const handlers = Object.fromEntries(
    [...machine.tasks].map(([state, resource]) => [
      state,
      async (payload: unknown) => {
        const attempt = recorder.payloadSent(state, payload);
        let result: unknown;
        try {
          result = await local.options.invoke(resource, payload, {
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
  const retryIntervalMs = local.options.retryIntervalMs;
  const run = new StateMachine(machine.definition, { validationOptions: { noValidate: true } })
    .run(parsed as never, {
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
    log(local, `execution ${name}: ${error}`);
    run.abort();
    recorder.lost(error);
  });
  local.executions.set(arn, execution);
  return execution;
}

/** `StopExecution`: aborts a running execution and waits for its end. */
async function stopExecution(
  local: SfnState,
  request: Record<string, unknown>,
): Promise<ExecutionRecord> {
  const execution = getExecution(local, request.executionArn);
  if (execution.status === "RUNNING") {
    execution.stopRequest = {
      error: request.error as string | undefined,
      cause: request.cause as string | undefined,
    };
    execution.abort();
    await execution.finished;
  }
  return execution;
}

/** `DescribeExecution` of one execution. */
function describeExecution(execution: ExecutionRecord): Record<string, unknown> {
  return {
    executionArn: execution.arn,
    stateMachineArn: execution.machine.arn,
    name: execution.name,
    status: execution.status,
    startDate: seconds(execution.startDate),
    stopDate: execution.stopDate === undefined ? undefined : seconds(execution.stopDate),
    input: execution.input,
    inputDetails: { included: true },
    output: execution.output,
    outputDetails: execution.output === undefined ? undefined : { included: true },
    error: execution.error,
    cause: execution.cause,
  };
}

/** `GetExecutionHistory`: a page of the execution's events. */
function history(local: SfnState, request: Record<string, unknown>): Record<string, unknown> {
  const execution = getExecution(local, request.executionArn);
  const max = Math.min(Number(request.maxResults) || 100, 1000);
  const start = request.nextToken === undefined ? 0 : Number(request.nextToken);
  if (!Number.isInteger(start) || start < 0) {
    throw new SfnApiError("InvalidToken", `Invalid Token: '${request.nextToken}'`);
  }
  let events = [...execution.events];
  if (request.reverseOrder === true) events.reverse();
  if (request.includeExecutionData === false) {
    events = events.map((event) => {
      const copy = structuredClone(event);
      for (const value of Object.values(copy)) {
        if (typeof value === "object" && value !== null) {
          delete (value as Record<string, unknown>).input;
          delete (value as Record<string, unknown>).output;
        }
      }
      return copy;
    });
  }
  const page = events.slice(start, start + max);
  const next = start + max < events.length ? String(start + max) : undefined;
  return { events: page, nextToken: next };
}

/** Runs one API operation; an `SfnApiError` becomes an AWS JSON error. */
async function dispatch(
  local: SfnState,
  operation: string,
  request: Record<string, unknown>,
): Promise<unknown> {
  switch (operation) {
    case "CreateStateMachine": {
      const machine = createMachine(
        local,
        request.name,
        request.definition,
        request.roleArn as string | undefined,
        request.type as string | undefined,
      );
      return { stateMachineArn: machine.arn, creationDate: seconds(machine.creationDate) };
    }
    case "DescribeStateMachine": {
      const machine = getMachine(local, request.stateMachineArn);
      return {
        stateMachineArn: machine.arn,
        name: machine.name,
        status: "ACTIVE",
        definition: machine.definitionText,
        roleArn: machine.roleArn,
        type: machine.type,
        creationDate: seconds(machine.creationDate),
      };
    }
    case "StartExecution": {
      const execution = startExecution(local, request);
      return { executionArn: execution.arn, startDate: seconds(execution.startDate) };
    }
    case "DescribeExecution":
      return describeExecution(getExecution(local, request.executionArn));
    case "GetExecutionHistory":
      return history(local, request);
    case "StopExecution": {
      const execution = await stopExecution(local, request);
      return { stopDate: seconds(execution.stopDate ?? Date.now()) };
    }
    default:
      throw new SfnApiError("UnknownOperationException", `Unknown operation: ${operation}`);
  }
}

/** Reports a failure the endpoint carries on after. */
function log(local: SfnState, message: string): void {
  (local.options.log ?? console.error)(`local Step Functions: ${message}`);
}

/** Answers one HTTP request of the AWS JSON 1.0 protocol. */
async function handle(
  local: SfnState,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const target = String(request.headers["x-amz-target"] ?? "");
  const send = (status: number, payload: unknown, errorType?: string): void => {
    const text = JSON.stringify(payload);
    response.writeHead(status, {
      "content-type": "application/x-amz-json-1.0",
      "content-length": Buffer.byteLength(text),
      "x-amzn-requestid": crypto.randomUUID(),
      ...(errorType ? { "x-amzn-errortype": errorType } : {}),
    });
    response.end(text);
  };
  let body: string;
  try {
    // Inside a try: a client that breaks off mid-body makes this throw, and a throw out of
    // a request handler would end the endpoint.
    const chunks: Uint8Array[] = [];
    for await (const chunk of request) chunks.push(chunk as Uint8Array);
    body = Buffer.concat(chunks).toString("utf8");
  } catch (error) {
    log(local, `${target || "a request"}: the request body broke off (${error})`);
    if (!response.headersSent && !response.destroyed) {
      send(400, { __type: "SerializationException", message: "Request body broke off" });
    }
    return;
  }
  try {
    if (request.method !== "POST" || !target.startsWith("AWSStepFunctions.")) {
      throw new SfnApiError(
        "UnknownOperationException",
        `Expected POST with X-Amz-Target: AWSStepFunctions.<Operation>, got ${request.method} ${
          target || "(no target)"
        }`,
      );
    }
    let parsed: unknown;
    try {
      parsed = body ? JSON.parse(body) : {};
    } catch {
      throw new SfnApiError("SerializationException", "Request body is not JSON");
    }
    send(200, await dispatch(local, target.slice("AWSStepFunctions.".length), parsed as never));
  } catch (error) {
    if (error instanceof SfnApiError) {
      send(400, { __type: error.type, message: error.message }, error.type);
    } else {
      send(500, { __type: "InternalFailure", message: String(error) }, "InternalFailure");
    }
  }
}

/**
 * Starts a local Step Functions endpoint on loopback.
 *
 * @example
 * ```ts no_run
 * import { SFNClient, StartExecutionCommand } from "@aws-sdk/client-sfn";
 * import { stateMachineDefinition } from "../state_machine.ts";
 *
 * const definition = stateMachineDefinition({ functionArn: "arn:aws:lambda:us-east-1:0:function:vid" });
 * const local = await startLocalStepFunctions({
 *   invoke: async (functionArn, payload) => {
 *     console.log(`${functionArn} runs`, payload); // a worker would render here
 *     return {};
 *   },
 * });
 * const stateMachineArn = local.createStateMachine("vid-render", definition);
 * const sfn = new SFNClient({
 *   endpoint: local.endpoint,
 *   region: local.region,
 *   credentials: { accessKeyId: "local", secretAccessKey: "local" },
 * });
 * await sfn.send(new StartExecutionCommand({ stateMachineArn, input: "{}" }));
 * await local.close();
 * ```
 *
 * @param options Port, ARN region and account, and the stand-in for Lambda.
 * @returns The endpoint, a way to register state machines, and `close`.
 */
export async function startLocalStepFunctions(
  options: LocalStepFunctionsOptions,
): Promise<LocalStepFunctions> {
  const region = options.region ?? "us-east-1";
  const accountId = options.accountId ?? "000000000000";
  const machines = new Map<string, MachineRecord>();
  const executions = new Map<string, ExecutionRecord>();

  const local: SfnState = { options, region, accountId, machines, executions };

  const server = createServer((request, response) => {
    handle(local, request, response).catch((error) => log(local, `a request failed: ${error}`));
  });
  const hostname = options.hostname ?? "127.0.0.1";
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, hostname, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = hostname.includes(":") ? `[${hostname}]` : hostname;

  return {
    endpoint: `http://${host}:${port}`,
    region,
    createStateMachine(name: string, definition: object): string {
      try {
        return createMachine(local, name, JSON.stringify(definition)).arn;
      } catch (error) {
        throw error instanceof SfnApiError
          ? new Error(`createStateMachine ${name}: ${error.message}`)
          : error;
      }
    },
    async close(): Promise<void> {
      const running = [...executions.values()].filter((e) => e.status === "RUNNING");
      for (const execution of running) {
        execution.stopRequest = { error: "LocalStepFunctionsClosed" };
        execution.abort();
      }
      await Promise.all(running.map((e) => e.finished));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
