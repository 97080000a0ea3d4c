/**
 * The distributed render workflow: its ASL definition (valid for aws-local-stepfunctions,
 * with the retry, catch and concurrency policy), run through the local Step Functions
 * endpoint with the real `SFNClient`. Task bodies are stubbed: `invoke` stands in for the
 * Lambda functions, recording every payload, so the tests see exactly what the workflow
 * asks of the functions: every chunk rendered, the concurrency cap, retries, a failing
 * chunk failing the execution with a cause naming the chunk and its frames, progress in
 * DescribeExecution and GetExecutionHistory, StopExecution, and typed API errors.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  CreateStateMachineCommand,
  DescribeExecutionCommand,
  type DescribeExecutionCommandOutput,
  DescribeStateMachineCommand,
  ExecutionDoesNotExist,
  GetExecutionHistoryCommand,
  type HistoryEvent,
  InvalidArn,
  InvalidDefinition,
  InvalidExecutionInput,
  SFNClient,
  StartExecutionCommand,
  StateMachineDoesNotExist,
  StopExecutionCommand,
} from "@aws-sdk/client-sfn";
import { StateMachine } from "aws-local-stepfunctions";
import { type ExecutionInput, MAX_EXECUTION_INPUT_BYTES } from "../../src/lambda/config.ts";
import {
  type LocalStepFunctions,
  startLocalStepFunctions,
} from "../../src/lambda/local/local_sfn.ts";
import {
  type AssemblePayload,
  type ChunkMedia,
  type ChunkResult,
  NON_RETRYABLE_ERRORS,
  planChunks,
  type PlanResult,
  type RenderChunkPayload,
  STATE_NAMES,
  stateMachineDefinition,
  type TaskPayload,
} from "../../src/lambda/state_machine.ts";
import { chunkPlan } from "../../src/render/chunk_plan.ts";
import { sleep } from "../../src/util/async.ts";

const FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:vid-render";
const THREE_FUNCTIONS = {
  planFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:vid-plan",
  renderFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:vid-render-chunk",
  assembleFunctionArn: "arn:aws:lambda:us-east-1:123456789012:function:vid-assemble",
};

/** What one render's stubbed functions do, and what they were asked. */
interface Scenario {
  totalFrames: number;
  /** Replaces the planner's result (to exercise the Map's own concurrency cap). */
  plan?: (input: ExecutionInput) => PlanResult;
  /** Runs before a chunk "renders"; throw to fail the attempt. */
  chunk?: (payload: RenderChunkPayload, attempt: number) => Promise<void> | void;
  calls: { functionArn: string; payload: TaskPayload }[];
  attempts: Map<number, number>;
  active: number;
  maxActive: number;
}

const scenarios = new Map<string, Scenario>();

function scenario(
  renderId: string,
  options: Partial<Scenario> & { totalFrames: number },
): Scenario {
  const s: Scenario = { calls: [], attempts: new Map(), active: 0, maxActive: 0, ...options };
  scenarios.set(renderId, s);
  return s;
}

/** The stand-in for the Lambda functions: task bodies stubbed. */
async function invoke(functionArn: string, raw: unknown): Promise<unknown> {
  const payload = raw as TaskPayload;
  const s = scenarios.get(payload.input.renderId);
  if (!s) throw new Error(`no scenario for ${payload.input.renderId}`);
  s.calls.push({ functionArn, payload });
  switch (payload.task) {
    case "plan":
      return s.plan ? s.plan(payload.input) : planChunks(payload.input, s.totalFrames);
    case "renderChunk": {
      const { index } = payload.chunk;
      const attempt = (s.attempts.get(index) ?? 0) + 1;
      s.attempts.set(index, attempt);
      s.active++;
      s.maxActive = Math.max(s.maxActive, s.active);
      try {
        await sleep(15);
        await s.chunk?.(payload, attempt);
        const result: ChunkResult = {
          index,
          key: `renders/${payload.input.renderId}/chunks/${index}.mp4`,
          // As the worker: chunk 0 reports the composition's media for assemble.
          ...(index === 0 ? { media: [TONE] } : {}),
        };
        return result;
      } finally {
        s.active--;
      }
    }
    case "assemble":
      return {
        bucketName: payload.input.bucketName,
        outputKey: payload.input.outputKey,
        chunks: payload.chunks.length,
      };
  }
}

/** A media element as chunk 0 reports it. */
const TONE: ChunkMedia = {
  kind: "audio",
  src: "sounds/tone.wav",
  site: true,
  start: 0.5,
  mediaStart: 0,
  duration: null,
  volume: 0.8,
  muted: false,
  loop: false,
  playbackRate: 1,
};

function renderInput(renderId: string, config: ExecutionInput["config"] = {}): ExecutionInput {
  return {
    renderId,
    bucketName: "vid-renders-test",
    siteId: "site-0123456789abcdef",
    serveUrl: "http://127.0.0.1:1/sites/site-0123456789abcdef/",
    composition: "index.html",
    outputKey: `renders/${renderId}/out.mp4`,
    config: { fps: 30, width: 640, height: 360, format: "mp4", ...config },
  };
}

function errorNamed<T extends new (...args: never[]) => Error>(type: T, name: string) {
  return (error: unknown) => {
    assert.ok(error instanceof type, `expected ${type.name}, got ${error}`);
    assert.equal((error as Error).name, name);
    return true;
  };
}

describe("stateMachineDefinition", () => {
  it("is valid ASL for aws-local-stepfunctions, one function or three", () => {
    for (const functions of [{ functionArn: FUNCTION_ARN }, THREE_FUNCTIONS]) {
      const definition = stateMachineDefinition(functions);
      // The constructor validates (asl-validator with ARN and path checks) and throws.
      new StateMachine(definition as never);
      assert.deepEqual(JSON.parse(JSON.stringify(definition)), definition, "plain JSON");
    }
  });

  it("routes tasks to their functions with a task discriminator", () => {
    const states = stateMachineDefinition(THREE_FUNCTIONS).States;
    const map = states[STATE_NAMES.map];
    const inner = (map.ItemProcessor as { States: Record<string, Record<string, unknown>> })
      .States;
    assert.equal(states[STATE_NAMES.plan].Resource, THREE_FUNCTIONS.planFunctionArn);
    assert.equal(inner[STATE_NAMES.renderChunk].Resource, THREE_FUNCTIONS.renderFunctionArn);
    assert.equal(states[STATE_NAMES.assemble].Resource, THREE_FUNCTIONS.assembleFunctionArn);
    assert.equal((states[STATE_NAMES.plan].Parameters as Record<string, unknown>).task, "plan");
    assert.equal((map.ItemSelector as Record<string, unknown>).task, "renderChunk");
    assert.equal(
      (states[STATE_NAMES.assemble].Parameters as Record<string, unknown>).task,
      "assemble",
    );
  });

  it("caps the Map by the plan's maxParallelChunks and retries, then catches, a chunk", () => {
    const states = stateMachineDefinition({ functionArn: FUNCTION_ARN }, {
      retries: 3,
      throttleRetries: 5,
      retryIntervalSeconds: 4,
      taskTimeoutSeconds: 600,
    }).States;
    const map = states[STATE_NAMES.map];
    assert.equal(map.ItemsPath, "$.chunks");
    assert.equal(map.MaxConcurrencyPath, "$.maxParallelChunks");
    assert.equal(map.MaxConcurrency, undefined);
    const inner = (map.ItemProcessor as { States: Record<string, Record<string, unknown>> })
      .States;
    const task = inner[STATE_NAMES.renderChunk];
    assert.equal(task.TimeoutSeconds, 600);
    const retry = task.Retry as Record<string, unknown>[];
    assert.deepEqual(retry[0].ErrorEquals, [
      "Lambda.ServiceException",
      "Lambda.AWSLambdaException",
      "Lambda.SdkClientException",
      "Lambda.TooManyRequestsException",
    ]);
    assert.equal(retry[0].MaxAttempts, 5);
    assert.equal(retry[0].IntervalSeconds, 4);
    assert.equal(retry[0].BackoffRate, 2);
    assert.deepEqual(retry[1], {
      ErrorEquals: ["States.Timeout", "Sandbox.Timedout"],
      MaxAttempts: 0,
    });
    // A file missing from the project fails every attempt alike: not retried, not rebilled.
    assert.deepEqual(retry[2], { ErrorEquals: [...NON_RETRYABLE_ERRORS], MaxAttempts: 0 });
    assert.ok(NON_RETRYABLE_ERRORS.includes("MissingAssetError"));
    assert.deepEqual(retry[3].ErrorEquals, ["States.TaskFailed"]);
    assert.equal(retry[3].MaxAttempts, 3);
    assert.deepEqual(task.Catch, [{
      ErrorEquals: ["States.Timeout", "Sandbox.Timedout"],
      ResultPath: "$.error",
      Next: STATE_NAMES.recordChunkTimeout,
    }, {
      ErrorEquals: ["States.ALL"],
      ResultPath: "$.error",
      Next: STATE_NAMES.recordChunkFailure,
    }]);
    assert.equal(inner[STATE_NAMES.chunkFailed].Type, "Fail");
    assert.equal(states[STATE_NAMES.done].Type, "Succeed");
    assert.throws(() => stateMachineDefinition({ functionArn: FUNCTION_ARN }, { retries: -1 }));
  });

  it("plans with the shared chunk planner", () => {
    const input = renderInput("plan-1", { chunkSize: 30, maxParallelChunks: 4 });
    const plan = planChunks(input, 300);
    assert.deepEqual(plan.chunks, chunkPlan({ frames: 300, chunkSize: 30, maxParallelChunks: 4 }));
    assert.equal(plan.maxParallelChunks, 4);
    assert.equal(plan.totalFrames, 300);
    assert.equal(planChunks(renderInput("plan-2"), 1800).maxParallelChunks, 16);
  });
});

describe("local Step Functions endpoint, task bodies stubbed", () => {
  let local: LocalStepFunctions;
  /** What the endpoint logged about failures it survived. */
  const logged: string[] = [];
  let sfn: SFNClient;
  let stateMachineArn: string;

  before(async () => {
    local = await startLocalStepFunctions({
      invoke,
      retryIntervalMs: 5,
      log: (message) => logged.push(message),
    });
    stateMachineArn = local.createStateMachine(
      "vid-render",
      stateMachineDefinition({ functionArn: FUNCTION_ARN }),
    );
    sfn = new SFNClient({
      endpoint: local.endpoint,
      region: local.region,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      maxAttempts: 1,
    });
  });

  after(async () => {
    sfn.destroy();
    await local.close();
  });

  async function start(input: ExecutionInput, arn = stateMachineArn): Promise<string> {
    const { executionArn } = await sfn.send(
      new StartExecutionCommand({
        stateMachineArn: arn,
        name: input.renderId,
        input: JSON.stringify(input),
      }),
    );
    assert.ok(executionArn);
    return executionArn;
  }

  async function describe_(executionArn: string): Promise<DescribeExecutionCommandOutput> {
    return await sfn.send(new DescribeExecutionCommand({ executionArn }));
  }

  async function finish(executionArn: string): Promise<DescribeExecutionCommandOutput> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const execution = await describe_(executionArn);
      if (execution.status !== "RUNNING") return execution;
      await sleep(20);
    }
    throw new Error(`${executionArn} still running`);
  }

  async function history(executionArn: string): Promise<HistoryEvent[]> {
    const events: HistoryEvent[] = [];
    let nextToken: string | undefined;
    do {
      const page = await sfn.send(
        new GetExecutionHistoryCommand({ executionArn, nextToken, maxResults: 25 }),
      );
      events.push(...(page.events ?? []));
      nextToken = page.nextToken;
    } while (nextToken);
    return events;
  }

  const count = (events: HistoryEvent[], type: string) =>
    events.filter((e) => e.type === type).length;

  async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await condition())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await sleep(10);
    }
  }

  it("a 5-chunk plan renders every chunk once, then assembles them in order", async () => {
    const input = renderInput("five-chunks", { chunkSize: 30, maxParallelChunks: 5 });
    const s = scenario(input.renderId, { totalFrames: 150 });
    const executionArn = await start(input);
    const execution = await finish(executionArn);
    assert.equal(execution.status, "SUCCEEDED", execution.cause);
    assert.ok(execution.startDate instanceof Date && execution.stopDate instanceof Date);

    const tasks = s.calls.map((c) => c.payload.task);
    assert.deepEqual(tasks.filter((t) => t === "plan").length, 1);
    assert.deepEqual(tasks.filter((t) => t === "assemble").length, 1);
    const chunks = s.calls
      .map((c) => c.payload)
      .filter((p): p is RenderChunkPayload => p.task === "renderChunk")
      .map((p) => p.chunk)
      .sort((a, b) => a.index - b.index);
    assert.deepEqual(chunks, chunkPlan({ frames: 150, chunkSize: 30, maxParallelChunks: 5 }));
    assert.equal(chunks.length, 5);
    assert.ok(s.maxActive <= 5, `at most maxParallelChunks at once, saw ${s.maxActive}`);
    assert.ok(s.maxActive > 1, `chunks ran in parallel, saw ${s.maxActive}`);
    assert.ok(s.calls.every((c) => c.functionArn === FUNCTION_ARN));

    // Every task sees the execution input unchanged, and the same start time.
    for (const { payload } of s.calls) assert.deepEqual(payload.input, input);
    const startTimes = new Set(s.calls.map((c) => c.payload.executionStartTime));
    assert.equal(startTimes.size, 1);
    assert.ok(!Number.isNaN(Date.parse([...startTimes][0])));

    const assemble = s.calls.at(-1)!.payload as AssemblePayload;
    assert.equal(assemble.task, "assemble");
    assert.equal(assemble.totalFrames, 150);
    assert.deepEqual(assemble.chunks.map((c) => c.index), [0, 1, 2, 3, 4]);
    // Chunk 0's media reach assemble through the Map's results, so it needs no browser.
    assert.deepEqual(assemble.chunks.map((c) => c.media), [
      [TONE],
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    assert.deepEqual(JSON.parse(execution.output!), {
      bucketName: input.bucketName,
      outputKey: input.outputKey,
      chunks: 5,
    });
  });

  it("the Map never runs more chunks at once than the plan's maxParallelChunks", async () => {
    const input = renderInput("capped", { maxParallelChunks: 2 });
    const s = scenario(input.renderId, {
      totalFrames: 150,
      // A stubbed plan of 5 chunks under a cap of 2: the planner itself would not exceed
      // the cap, so this checks the Map's own guard.
      plan: () => ({
        totalFrames: 150,
        maxParallelChunks: 2,
        chunks: chunkPlan({ frames: 150, chunkSize: 30 }),
      }),
      chunk: () => sleep(30),
    });
    const execution = await finish(await start(input));
    assert.equal(execution.status, "SUCCEEDED", execution.cause);
    assert.equal(s.attempts.size, 5, "every chunk ran");
    assert.equal(s.maxActive, 2, "exactly the cap ran at once");
  });

  it("a request whose body breaks off is logged; the endpoint stays up and an execution finishes", async () => {
    const port = Number(new URL(local.endpoint).port);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(
      new TextEncoder().encode(
        "POST / HTTP/1.1\r\nHost: local\r\nX-Amz-Target: AWSStepFunctions.StartExecution\r\n" +
          'Content-Length: 1000\r\n\r\n{"stateMachineArn":',
      ),
    );
    await sleep(100); // the partial body reaches the endpoint before the close
    conn.close();
    await until(() => logged.some((m) => m.includes("body broke off")), "the log line");
    assert.match(
      logged.find((m) => m.includes("body broke off"))!,
      /^local Step Functions: AWSStepFunctions\.StartExecution: the request body broke off/,
    );
    const input = renderInput("after-broken-body", { chunkSize: 30, maxParallelChunks: 2 });
    scenario(input.renderId, { totalFrames: 60 });
    const execution = await finish(await start(input));
    assert.equal(execution.status, "SUCCEEDED", execution.cause);
  });

  it("a chunk that fails once is retried and the execution succeeds", async () => {
    const input = renderInput("retry-once", { chunkSize: 30, maxParallelChunks: 4 });
    const s = scenario(input.renderId, {
      totalFrames: 120,
      chunk: (payload, attempt) => {
        if (payload.chunk.index === 2 && attempt === 1) {
          const error = new Error("browser crashed");
          error.name = "BrowserCrashError";
          throw error;
        }
        if (payload.chunk.index === 3 && attempt <= 2) {
          const error = new Error("Rate exceeded");
          error.name = "Lambda.TooManyRequestsException";
          throw error;
        }
      },
    });
    const executionArn = await start(input);
    const execution = await finish(executionArn);
    assert.equal(execution.status, "SUCCEEDED", execution.cause);
    assert.deepEqual(Object.fromEntries(s.attempts), { 0: 1, 1: 1, 2: 2, 3: 3 });

    const events = await history(executionArn);
    const failed = events.filter((e) => e.type === "LambdaFunctionFailed");
    assert.equal(failed.length, 3);
    const crash = failed.find((e) =>
      e.lambdaFunctionFailedEventDetails?.error === "BrowserCrashError"
    );
    assert.ok(crash, "the crash is in the history");
    // A function error carries Lambda's JSON cause.
    const cause = JSON.parse(crash.lambdaFunctionFailedEventDetails!.cause!);
    assert.equal(cause.errorType, "BrowserCrashError");
    assert.equal(cause.errorMessage, "browser crashed");
    // One LambdaFunctionScheduled per attempt: plan + 4 chunks + 3 retries + assemble.
    assert.equal(count(events, "LambdaFunctionScheduled"), 1 + 4 + 3 + 1);
    assert.equal(count(events, "MapIterationSucceeded"), 4);
  });

  it("a chunk that always fails fails the execution with a cause naming the chunk and frames", async () => {
    const input = renderInput("always-fails", { chunkSize: 30, maxParallelChunks: 5 });
    const s = scenario(input.renderId, {
      totalFrames: 150,
      chunk: (payload) => {
        if (payload.chunk.index === 3) {
          const error = new Error("ffmpeg exited with code 1");
          error.name = "EncodeError";
          throw error;
        }
      },
    });
    const executionArn = await start(input);
    const execution = await finish(executionArn);
    assert.equal(execution.status, "FAILED");
    assert.equal(execution.error, "EncodeError");
    assert.ok(
      execution.cause?.startsWith("chunk 3 (frames 90-119) failed: "),
      `cause: ${execution.cause}`,
    );
    assert.match(execution.cause!, /ffmpeg exited with code 1/);
    assert.equal(s.attempts.get(3), 3, "the first attempt and 2 retries");
    assert.ok(!s.calls.some((c) => c.payload.task === "assemble"), "nothing assembled");

    const events = await history(executionArn);
    const iterationFailed = events.find((e) => e.type === "MapIterationFailed");
    assert.equal(iterationFailed?.mapIterationFailedEventDetails?.index, 3);
    assert.equal(count(events, "MapStateFailed"), 1);
    const last = events.at(-1)!;
    assert.equal(last.type, "ExecutionFailed");
    assert.equal(last.executionFailedEventDetails?.error, "EncodeError");
    assert.equal(last.executionFailedEventDetails?.cause, execution.cause);
  });

  it("a chunk that timed out is not retried", async () => {
    const input = renderInput("timed-out", { chunkSize: 30, maxParallelChunks: 2 });
    const s = scenario(input.renderId, {
      totalFrames: 60,
      chunk: (payload) => {
        if (payload.chunk.index === 0) {
          const error = new Error("Task timed out after 900.00 seconds");
          error.name = "Sandbox.Timedout";
          throw error;
        }
      },
    });
    const execution = await finish(await start(input));
    assert.equal(execution.status, "FAILED");
    assert.equal(execution.error, "ChunkTimedOut");
    assert.match(
      execution.cause!,
      /^chunk 0 \(frames 0-29\) hit the \d+ s function time cap: use smaller chunks /,
    );
    assert.equal(s.attempts.get(0), 1);
  });

  it("DescribeExecution and GetExecutionHistory reflect progress", async () => {
    const input = renderInput("progress", { chunkSize: 30, maxParallelChunks: 3 });
    const gates = new Map<number, () => void>();
    scenario(input.renderId, {
      totalFrames: 90,
      chunk: (payload) => new Promise<void>((resolve) => gates.set(payload.chunk.index, resolve)),
    });
    const executionArn = await start(input);
    await until(() => gates.size === 3, "three chunks started");

    let execution = await describe_(executionArn);
    assert.equal(execution.status, "RUNNING");
    assert.equal(execution.name, input.renderId);
    assert.equal(execution.stateMachineArn, stateMachineArn);
    assert.deepEqual(JSON.parse(execution.input!), input);
    assert.equal(execution.stopDate, undefined);
    let events = await history(executionArn);
    assert.equal(events[0].type, "ExecutionStarted");
    assert.deepEqual(events.map((e) => e.id), events.map((_, i) => i + 1));
    const planExited = events.find((e) => e.type === "TaskStateExited");
    assert.equal(planExited?.stateExitedEventDetails?.name, STATE_NAMES.plan);
    assert.equal(JSON.parse(planExited!.stateExitedEventDetails!.output!).chunks.length, 3);
    assert.equal(
      events.find((e) => e.type === "MapStateStarted")?.mapStateStartedEventDetails?.length,
      3,
    );
    await until(async () => {
      events = await history(executionArn);
      return count(events, "MapIterationStarted") === 3;
    }, "three iterations in the history");
    assert.equal(count(events, "MapIterationSucceeded"), 0);

    gates.get(1)!();
    await until(async () => {
      events = await history(executionArn);
      return count(events, "MapIterationSucceeded") === 1;
    }, "one iteration succeeded");
    assert.equal(
      events.find((e) => e.type === "MapIterationSucceeded")?.mapIterationSucceededEventDetails
        ?.index,
      1,
    );
    assert.equal((await describe_(executionArn)).status, "RUNNING");

    gates.get(0)!();
    gates.get(2)!();
    execution = await finish(executionArn);
    assert.equal(execution.status, "SUCCEEDED");
    events = await history(executionArn);
    assert.equal(count(events, "MapIterationSucceeded"), 3);
    const types: (string | undefined)[] = events.map((e) => e.type);
    for (
      const type of ["TaskStateEntered", "MapStateEntered", "MapStateExited", "TaskStateExited"]
    ) {
      assert.ok(types.includes(type), type);
    }
    assert.equal(types.at(-1), "ExecutionSucceeded");
    assert.equal(events.at(-1)!.executionSucceededEventDetails?.output, execution.output);

    const reversed = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, reverseOrder: true, maxResults: 1 }),
    );
    assert.equal(reversed.events?.[0].type, "ExecutionSucceeded");
    assert.ok(reversed.nextToken);
  });

  it("StopExecution aborts a running execution", async () => {
    const input = renderInput("stopped", { chunkSize: 30, maxParallelChunks: 2 });
    const gates: (() => void)[] = [];
    const s = scenario(input.renderId, {
      totalFrames: 60,
      chunk: () => new Promise<void>((resolve) => gates.push(resolve)),
    });
    const executionArn = await start(input);
    await until(() => gates.length === 2, "chunks started");
    const { stopDate } = await sfn.send(
      new StopExecutionCommand({ executionArn, error: "Cancelled", cause: "user asked" }),
    );
    assert.ok(stopDate instanceof Date);
    const execution = await describe_(executionArn);
    assert.equal(execution.status, "ABORTED");
    assert.equal(execution.error, "Cancelled");
    assert.equal(execution.cause, "user asked");
    assert.ok(execution.stopDate instanceof Date);
    const events = await history(executionArn);
    assert.equal(events.at(-1)!.type, "ExecutionAborted");

    for (const release of gates) release();
    await sleep(50);
    assert.equal((await describe_(executionArn)).status, "ABORTED");
    assert.ok(!s.calls.some((c) => c.payload.task === "assemble"), "nothing assembled");
  });

  it("three functions: each task goes to its own function", async () => {
    const arn = local.createStateMachine("vid-render-3", stateMachineDefinition(THREE_FUNCTIONS));
    const input = renderInput("three-functions", { chunkSize: 30 });
    const s = scenario(input.renderId, { totalFrames: 60 });
    const execution = await finish(await start(input, arn));
    assert.equal(execution.status, "SUCCEEDED", execution.cause);
    const byTask = new Map(s.calls.map((c) => [c.payload.task, c.functionArn]));
    assert.equal(byTask.get("plan"), THREE_FUNCTIONS.planFunctionArn);
    assert.equal(byTask.get("renderChunk"), THREE_FUNCTIONS.renderFunctionArn);
    assert.equal(byTask.get("assemble"), THREE_FUNCTIONS.assembleFunctionArn);
  });

  it("errors are typed: unknown execution, bad ARN, unknown state machine, oversized input", async () => {
    const unknown = stateMachineArn.replace(":stateMachine:", ":execution:") + ":nope";
    await assert.rejects(
      sfn.send(new DescribeExecutionCommand({ executionArn: unknown })),
      errorNamed(ExecutionDoesNotExist, "ExecutionDoesNotExist"),
    );
    await assert.rejects(
      sfn.send(new GetExecutionHistoryCommand({ executionArn: unknown })),
      errorNamed(ExecutionDoesNotExist, "ExecutionDoesNotExist"),
    );
    await assert.rejects(
      sfn.send(new StopExecutionCommand({ executionArn: unknown })),
      errorNamed(ExecutionDoesNotExist, "ExecutionDoesNotExist"),
    );
    await assert.rejects(
      sfn.send(new DescribeExecutionCommand({ executionArn: "not-an-arn" })),
      errorNamed(InvalidArn, "InvalidArn"),
    );
    await assert.rejects(
      sfn.send(
        new StartExecutionCommand({ stateMachineArn: stateMachineArn + "-missing", input: "{}" }),
      ),
      errorNamed(StateMachineDoesNotExist, "StateMachineDoesNotExist"),
    );
    const big = JSON.stringify({ blob: "x".repeat(MAX_EXECUTION_INPUT_BYTES) });
    await assert.rejects(
      sfn.send(new StartExecutionCommand({ stateMachineArn, input: big })),
      (error: unknown) => {
        assert.ok(error instanceof InvalidExecutionInput);
        assert.match((error as Error).message, /262144/);
        return true;
      },
    );
    await assert.rejects(
      sfn.send(new StartExecutionCommand({ stateMachineArn, input: "{not json" })),
      errorNamed(InvalidExecutionInput, "InvalidExecutionInput"),
    );
  });

  it("CreateStateMachine and DescribeStateMachine through the client", async () => {
    const definition = JSON.stringify(stateMachineDefinition({ functionArn: FUNCTION_ARN }));
    const created = await sfn.send(
      new CreateStateMachineCommand({
        name: "vid-render-sdk",
        definition,
        roleArn: "arn:aws:iam::000000000000:role/vid-states",
      }),
    );
    assert.match(created.stateMachineArn!, /:stateMachine:vid-render-sdk$/);
    const described = await sfn.send(
      new DescribeStateMachineCommand({ stateMachineArn: created.stateMachineArn }),
    );
    assert.equal(described.definition, definition);
    assert.equal(described.status, "ACTIVE");
    assert.equal(described.type, "STANDARD");
    await assert.rejects(
      sfn.send(
        new CreateStateMachineCommand({
          name: "broken",
          definition: JSON.stringify({ StartAt: "Nowhere", States: {} }),
          roleArn: "arn:aws:iam::000000000000:role/vid-states",
        }),
      ),
      errorNamed(InvalidDefinition, "InvalidDefinition"),
    );
  });
});
