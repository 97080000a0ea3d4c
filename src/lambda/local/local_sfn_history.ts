/**
 * The execution history of the local Step Functions endpoint (local_sfn.ts): what it knows of
 * a state machine and an execution, and the recorder that rebuilds Step Functions history
 * events from aws-local-stepfunctions' event log. Apart from the protocol server because the
 * history is what `getRenderProgress`, retries and cost read, and its rules (which event
 * follows which, what a retry or a caught failure writes) are the hard part to get right.
 *
 * The history is rebuilt from the interpreter's event log in Step Functions' event types:
 * `ExecutionStarted`, `<Type>StateEntered` / `<Type>StateExited`, `LambdaFunctionScheduled`
 * / `Started` / `Succeeded` / `Failed` / `TimedOut` (one Scheduled per attempt, so retries
 * show), `MapStateStarted` (with `length`), `MapIterationStarted` / `Succeeded` / `Failed` /
 * `Aborted`, `MapStateSucceeded` / `Failed`, and `ExecutionSucceeded` / `Failed` /
 * `Aborted` / `TimedOut`.
 *
 * @module
 */

import type { StateMachineDefinition } from "aws-local-stepfunctions";

/** A Step Functions history event as the API returns it. */
export interface HistoryEvent {
  timestamp: number;
  type: string;
  id: number;
  previousEventId: number;
  [details: string]: unknown;
}

/** Where an execution is, in the API's words. */
export type ExecutionStatus = "RUNNING" | "SUCCEEDED" | "FAILED" | "TIMED_OUT" | "ABORTED";

/**
 * A registered state machine, with what the interpreter and the recorder read of its
 * definition.
 */
export interface MachineRecord {
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

/**
 * An execution as the endpoint answers for it: its status and outcome, and the history
 * {@linkcode HistoryRecorder} writes.
 */
export interface ExecutionRecord {
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

/**
 * Milliseconds to the seconds the API's timestamps are in.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(seconds(1500), 1.5);
 * ```
 */
export const seconds = (ms: number): number => ms / 1000;

/**
 * Notes what the interpreter and the recorder need of a definition's states, nested Map and
 * Parallel states included: each Task's Resource, the states that retry, and each Map's
 * paths to its items.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const machine = { tasks: new Map(), retryStates: [], maps: new Map() };
 * collectStates({ Plan: { Type: "Task", Resource: "arn:fn", Retry: [] } }, machine);
 * assert.equal(machine.tasks.get("Plan"), "arn:fn");
 * assert.deepEqual(machine.retryStates, ["Plan"]);
 * ```
 */
export function collectStates(
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

/**
 * A value as the API's JSON strings carry it; `undefined` is `null`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(json(undefined), "null");
 * ```
 */
export function json(value: unknown): string {
  return JSON.stringify(value ?? null);
}

/** One Task attempt, from the handler call until its events are in the history. */
export interface Attempt {
  /** The payload the attempt sent. */
  payload: unknown;
  /** When its function began to run, once reported. */
  startedAt?: number;
  /** `<state>#<iteration>`, once its Scheduled event is recorded and Started is not. */
  key?: string;
}

/**
 * Turns the interpreter's event log into Step Functions history events.
 *
 * @example
 * ```ts no_run
 * import type { ExecutionRecord } from "./local_sfn_history.ts";
 *
 * function record(execution: ExecutionRecord, eventLog: unknown[]): void {
 *   const recorder = new HistoryRecorder(execution);
 *   for (const event of eventLog) recorder.record(event);
 * }
 * ```
 */
export class HistoryRecorder {
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

  /**
   * @param execution The execution whose `events`, status and outcome the recorder writes.
   * @param reportsStart Whether `invoke` reports when a function starts.
   */
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

  /** A state failed: its last Lambda attempt ends; a failed Map settles its open iterations. */
  #stateFailed(
    state: { name: string; type: string },
    key: string,
    // deno-lint-ignore no-explicit-any
    event: any,
    at: number,
  ): void {
    if (state.type === "Task") {
      // The final attempt's failure is written from the event itself.
      const failures = this.#failures.get(state.name);
      if (failures && failures[0]?.error === event.Error) failures.shift();
      const timedOut = event.Error === "States.Timeout";
      this.#ended(key, timedOut ? "LambdaFunctionTimedOut" : "LambdaFunctionFailed", {
        [timedOut ? "lambdaFunctionTimedOutEventDetails" : "lambdaFunctionFailedEventDetails"]: {
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
  }

  /** Writes the history events of one event of the interpreter's log, in order. */
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
        this.#stateFailed(state, key, event, at);
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
