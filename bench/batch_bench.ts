/**
 * Start rate of `renderBatch` (what `vid lambda render-batch` runs): executions started
 * per second for a 1000-row batch at `--max-concurrent` 1, 10 and 50, against the local
 * Step Functions endpoint, printed as ratios to the 1-concurrency run measured in the
 * same process.
 *
 * The worker is stubbed: every Task state of the real render state machine returns at
 * once, so no browser runs; the bench measures starting executions (a `DescribeExecution`
 * look-up and a `StartExecution` call per row, through the real `SFNClient` over HTTP on
 * loopback), which does not depend on what the worker does. Each run has its own state
 * machine, so no row is already started.
 *
 * ```sh
 * deno task bench:batch            # 1000 rows
 * deno task bench:batch --rows 200 # a quicker look
 * ```
 *
 * @module
 */

import { join } from "node:path";
import { renderBatch, summarizeBatch } from "../src/lambda/batch.ts";
import type { ExecutionInput } from "../src/lambda/config.ts";
import { startLocalStepFunctions } from "../src/lambda/local/local_sfn.ts";
import { siteHandleFromId } from "../src/lambda/sdk.ts";
import {
  planChunks,
  stateMachineDefinition,
  type TaskPayload,
} from "../src/lambda/state_machine.ts";

const CONCURRENCY = [1, 10, 50];
const REGION = "us-east-1";
const BUCKET = "vid-renders";
const CREDENTIALS = { accessKeyId: "bench", secretAccessKey: "bench" };

function rowsArg(): number {
  const at = Deno.args.indexOf("--rows");
  if (at < 0) return 1000;
  const rows = Number(Deno.args[at + 1]);
  if (!Number.isInteger(rows) || rows < 1) {
    console.error(`--rows must be a positive integer, got ${Deno.args[at + 1]}`);
    Deno.exit(2);
  }
  return rows;
}

/** The stubbed worker: the real planner, then nothing. */
function invoke(_arn: string, payload: unknown): Promise<unknown> {
  const task = payload as TaskPayload;
  if (task.task === "plan") return Promise.resolve(planChunks(task.input as ExecutionInput, 1));
  if (task.task === "renderChunk") {
    return Promise.resolve({ index: task.chunk.index, key: `chunks/${task.chunk.index}` });
  }
  return Promise.resolve({ outputKey: task.input.outputKey });
}

interface Run {
  maxConcurrent: number;
  seconds: number;
  started: number;
}

async function main(): Promise<void> {
  const rows = rowsArg();
  const scratch = await Deno.makeTempDir({ prefix: "vid-batch-bench-" });
  const sfn = await startLocalStepFunctions({ region: REGION, invoke, retryIntervalMs: 10 });
  const definition = stateMachineDefinition({
    functionArn: `arn:aws:lambda:${REGION}:000000000000:function:vid-render`,
  });
  const siteHandle = siteHandleFromId("site-0123456789abcdef", BUCKET);
  const batchFile = join(scratch, "batch.jsonl");
  await Deno.writeTextFile(
    batchFile,
    Array.from(
      { length: rows },
      (_, i) => JSON.stringify({ outputKey: `bench/${i}.mp4`, variables: { title: `#${i}` } }),
    ).join("\n") + "\n",
  );
  const run = async (name: string, maxConcurrent: number, file: string): Promise<Run> => {
    const stateMachineArn = sfn.createStateMachine(name, definition);
    const t0 = performance.now();
    const manifest = await renderBatch({
      batchFile: file,
      siteHandle,
      bucketName: BUCKET,
      stateMachineArn,
      maxConcurrent,
      sfn: { endpoint: sfn.endpoint, region: REGION, credentials: CREDENTIALS },
      onWarning: () => {},
    });
    const seconds = (performance.now() - t0) / 1000;
    const summary = summarizeBatch(manifest);
    if (summary.started !== manifest.length) {
      throw new Error(
        `${name}: ${JSON.stringify(summary)}: ${manifest.find((r) => r.error)?.error}`,
      );
    }
    return { maxConcurrent, seconds, started: summary.started };
  };
  try {
    console.log(
      `vid lambda render-batch start rate: ${rows} rows against the local Step Functions ` +
        `endpoint (${sfn.endpoint})`,
    );
    console.log(
      "worker stubbed: Task states return at once (no browser); measured is starting the " +
        "executions (DescribeExecution + StartExecution per row), not rendering\n",
    );
    const warmFile = join(scratch, "warm.jsonl");
    await Deno.writeTextFile(
      warmFile,
      Array.from({ length: 50 }, (_, i) => JSON.stringify({ outputKey: `warm/${i}.mp4` }))
        .join("\n") + "\n",
    );
    await run("bench-warm-up", 10, warmFile);
    const runs: Run[] = [];
    for (const maxConcurrent of CONCURRENCY) {
      runs.push(await run(`bench-${maxConcurrent}`, maxConcurrent, batchFile));
    }
    const base = runs[0].started / runs[0].seconds;
    console.log("--max-concurrent  seconds  starts/s  ratio to --max-concurrent 1");
    for (const r of runs) {
      const rate = r.started / r.seconds;
      console.log(
        `${String(r.maxConcurrent).padStart(16)}  ${r.seconds.toFixed(2).padStart(7)}  ` +
          `${rate.toFixed(0).padStart(8)}  ${(rate / base).toFixed(2)}x`,
      );
    }
  } finally {
    await sfn.close();
    await Deno.remove(scratch, { recursive: true });
  }
}

if (import.meta.main) await main();
