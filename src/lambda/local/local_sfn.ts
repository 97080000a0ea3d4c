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
 * This module is the protocol: the HTTP server, the operations' checks and answers, and the
 * registry of machines and executions. An execution runs in local_sfn_execution.ts and its
 * history is written by local_sfn_history.ts.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StateMachine, type StateMachineDefinition } from "aws-local-stepfunctions";
import { MAX_EXECUTION_INPUT_BYTES } from "../config.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";
import { type InvokeContext, runExecution } from "./local_sfn_execution.ts";
import {
  collectStates,
  type ExecutionRecord,
  type MachineRecord,
  seconds,
} from "./local_sfn_history.ts";

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

/** Names Step Functions accepts: 1-80 characters, no whitespace, brackets, wildcards,
 * special characters or control characters. */
const NAME = /^[^\s<>{}[\]?*"#%\\^|~`$&,;:/\p{Cc}]{1,80}$/u;

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
  runExecution(execution, parsed, local.options, (message) => log(local, message));
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
