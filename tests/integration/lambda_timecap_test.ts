/**
 * The function time cap: a chunk that runs past the task timeout (1 s here, through the
 * real workflow definition on the local Step Functions endpoint, worker stubbed) fails the
 * execution with `ChunkTimedOut` and a cause naming the chunk, its frames, the cap and the
 * fix; the chunk estimate; and `renderToLambda`'s warning before starting.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { DescribeExecutionCommand, SFNClient } from "@aws-sdk/client-sfn";
import {
  getRenderProgress,
  type LambdaRenderProgress,
  renderToLambda,
  siteHandleFromId,
} from "../../src/lambda/sdk.ts";
import {
  type LocalStepFunctions,
  startLocalStepFunctions,
} from "../../src/lambda/local/local_sfn.ts";
import {
  CHUNK_TIMED_OUT,
  chunkTimeoutCause,
  planChunks,
  STATE_NAMES,
  stateMachineDefinition,
  type TaskPayload,
} from "../../src/lambda/state_machine.ts";
import { estimateChunkSeconds, timeCapWarning } from "../../src/lambda/time_cap.ts";
import { S3_CREDENTIALS, type S3Server, startS3Server } from "../s3_server.ts";
import { runVid } from "../helpers.ts";
import { sleep } from "../../src/util/async.ts";

const BUCKET = "vid-timecap-test";
const FUNCTION_ARN = "arn:aws:lambda:us-east-1:000000000000:function:vid-render";
const FIX =
  "use smaller chunks (--chunk-size / --target-chunk-frames) or more memory (vid lambda deploy --memory)";

describe("function time cap on local Step Functions (worker stubbed)", () => {
  let server: S3Server;
  let s3: S3Client;
  let local: LocalStepFunctions;
  let sfn: SFNClient;
  let stateMachineArn: string;
  /** Releases chunks stuck past the cap, so no timer outlives the suite. */
  let release: () => void = () => {};
  const stuck = new Promise<void>((resolve) => (release = resolve));
  /** Per render: the chunk index that runs past the cap, or -1. */
  const slowChunk = new Map<string, number>();

  async function invoke(_functionArn: string, raw: unknown): Promise<unknown> {
    const payload = raw as TaskPayload;
    switch (payload.task) {
      case "plan":
        return planChunks(payload.input, 90);
      case "renderChunk":
        if (payload.chunk.index === slowChunk.get(payload.input.renderId)) {
          await Promise.race([stuck, sleep(3000)]);
        } else await sleep(5);
        return { index: payload.chunk.index, key: `chunks/${payload.chunk.index}.mp4` };
      case "assemble":
        return { bucketName: payload.input.bucketName, outputKey: payload.input.outputKey };
    }
  }

  before(async () => {
    server = await startS3Server();
    s3 = new S3Client({
      endpoint: server.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
    local = await startLocalStepFunctions({ invoke, retryIntervalMs: 5 });
    stateMachineArn = local.createStateMachine(
      "vid-render",
      stateMachineDefinition({ functionArn: FUNCTION_ARN }, { taskTimeoutSeconds: 1 }),
    );
    sfn = new SFNClient({
      endpoint: local.endpoint,
      region: local.region,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
      maxAttempts: 1,
    });
  });

  after(async () => {
    release();
    await sleep(20);
    sfn?.destroy();
    await local?.close();
    s3?.destroy();
    await server?.close();
  });

  async function finished(executionArn: string): Promise<LambdaRenderProgress> {
    const deadline = Date.now() + 15_000;
    while (true) {
      const progress = await getRenderProgress({ executionArn, sfn, s3 });
      if (progress.status !== "running") return progress;
      if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(progress)}`);
      await sleep(50);
    }
  }

  async function start(renderId: string, slow: number) {
    slowChunk.set(renderId, slow);
    return await renderToLambda({
      siteHandle: siteHandleFromId("site-0123456789abcdef", BUCKET),
      bucketName: BUCKET,
      stateMachineArn,
      config: { fps: 30, width: 320, height: 180, chunkSize: 30, maxParallelChunks: 3 },
      renderId,
      sfn,
      onWarning: () => {},
    });
  }

  it("a chunk past the 1 s cap fails the execution with ChunkTimedOut naming chunk, frames and fix (worker stubbed)", async () => {
    const render = await start("timecap-slow", 1);
    const done = await finished(render.executionArn);
    assert.equal(done.status, "failed");
    const cause = "chunk 1 (frames 30-59) hit the 1 s function time cap: " + FIX;
    assert.equal(chunkTimeoutCause({ index: 1, from: 30, to: 59 }, 1), cause);
    const described = await sfn.send(
      new DescribeExecutionCommand({ executionArn: render.executionArn }),
    );
    assert.equal(described.status, "FAILED");
    assert.equal(described.error, CHUNK_TIMED_OUT);
    assert.equal(described.cause, cause);
    assert.ok(
      done.errors.includes(`${CHUNK_TIMED_OUT}: ${cause}`),
      done.errors.join("\n"),
    );
  });

  it("fast chunks are unaffected by the cap (worker stubbed)", async () => {
    const render = await start("timecap-fast", -1);
    const done = await finished(render.executionArn);
    assert.equal(done.status, "succeeded", done.errors.join("\n"));
    assert.deepEqual(done.errors, []);
  });

  it("the definition catches timeouts before other errors", () => {
    const map = stateMachineDefinition({ functionArn: FUNCTION_ARN }, { taskTimeoutSeconds: 600 })
      .States[STATE_NAMES.map];
    const inner = (map.ItemProcessor as { States: Record<string, Record<string, unknown>> })
      .States;
    const catchers = inner[STATE_NAMES.renderChunk].Catch as { ErrorEquals: string[] }[];
    assert.deepEqual(catchers[0].ErrorEquals, ["States.Timeout", "Sandbox.Timedout"]);
    assert.deepEqual(catchers[1].ErrorEquals, ["States.ALL"]);
    const record = inner[STATE_NAMES.recordChunkTimeout].Parameters as Record<string, string>;
    assert.equal(record.Error, CHUNK_TIMED_OUT);
    assert.match(record["Cause.$"], /hit the 600 s function time cap/);
  });
});

describe("chunk time estimate and the planner's warning", () => {
  const base = { width: 1920, height: 1080, frames: 240, memoryMb: 10240 };

  it("estimateChunkSeconds grows with frames and pixels, shrinks with memory", () => {
    assert.equal(estimateChunkSeconds(base), 60);
    assert.ok(estimateChunkSeconds({ ...base, frames: 480 }) > estimateChunkSeconds(base));
    assert.ok(
      estimateChunkSeconds({ ...base, width: 3840, height: 2160 }) > estimateChunkSeconds(base),
    );
    assert.ok(
      estimateChunkSeconds({ ...base, width: 640, height: 360 }) < estimateChunkSeconds(base),
    );
    assert.ok(estimateChunkSeconds({ ...base, memoryMb: 1024 }) > estimateChunkSeconds(base));
    assert.ok(
      estimateChunkSeconds({ ...base, memoryMb: 128 }) >
        estimateChunkSeconds({ ...base, memoryMb: 1024 }),
    );
    assert.throws(() => estimateChunkSeconds({ ...base, memoryMb: 0 }), RangeError);
  });

  it("timeCapWarning uses the planner's largest chunk when frames are known", () => {
    // 10 000 frames capped at 16 chunks of whole 30-frame cells: at most 630 frames, 157 s at
    // 10240 MB: no warning.
    assert.equal(timeCapWarning({}, { frames: 10_000 }), undefined);
    // At 1024 MB: 1575 s > 720 s.
    assert.match(timeCapWarning({}, { frames: 10_000, memoryMb: 1024 }) ?? "", /630 frames/);
  });

  it("renderToLambda warns before any request for a huge chunk at 128 MB, not a small one", async () => {
    // An endpoint nothing listens on: the warning comes before any request is made.
    const sfn = { endpoint: "http://127.0.0.1:9", region: "us-east-1" };
    const siteHandle = siteHandleFromId("site-0123456789abcdef", BUCKET);
    const warningsFor = async (config: Record<string, number>) => {
      const warnings: string[] = [];
      await assert.rejects(
        renderToLambda({
          siteHandle,
          bucketName: BUCKET,
          stateMachineArn: "arn:aws:states:us-east-1:000000000000:stateMachine:vid-render",
          config,
          sfn,
          memoryMb: 128,
          timeoutSeconds: 900,
          onWarning: (m) => warnings.push(m),
        }),
      );
      return warnings;
    };
    const huge = await warningsFor({ width: 1920, height: 1080, chunkSize: 2000 });
    assert.equal(huge.length, 1, huge.join("\n"));
    assert.match(huge[0], /2000 frames at 1920x1080/);
    assert.match(huge[0], /128 MB/);
    assert.match(huge[0], /900 s function time cap/);
    assert.ok(huge[0].endsWith(FIX), huge[0]);
    const small = await warningsFor({ width: 320, height: 180, chunkSize: 10 });
    assert.deepEqual(small, []);
  });

  it("vid lambda render sizes the warned chunk from the composition (examples/hello: 150 frames)", async () => {
    const server = await startS3Server();
    const client = new S3Client({
      endpoint: server.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    try {
      await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
      await sizesTheWarnedChunk(server);
    } finally {
      client.destroy();
      await server.close();
    }
  });

  async function sizesTheWarnedChunk(server: S3Server): Promise<void> {
    const env = {
      VID_S3_ENDPOINT: server.endpoint,
      VID_SFN_ENDPOINT: "http://127.0.0.1:9",
      AWS_REGION: "us-east-1",
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    };
    const site = await runVid(["lambda", "sites", "create", "examples/hello", "--bucket", BUCKET], {
      env,
    });
    assert.equal(site.code, 0, site.stderr);
    // --site-id alone: the composition (and so the frame count) is read from the bucket.
    const out = await runVid([
      "lambda",
      "render",
      "--site-id",
      site.stdout.trim(),
      "--bucket",
      BUCKET,
      "--state-machine-arn",
      "arn:aws:states:us-east-1:000000000000:stateMachine:vid-render",
      "--memory",
      "128",
      "--chunk-size",
      "2000",
    ], { env });
    assert.notEqual(out.code, 0); // nothing listens on the Step Functions endpoint
    assert.match(out.stderr, /the largest chunk \(150 frames at 1920x1080\)/);
    // The connection failure names the endpoints to check.
    assert.match(
      out.stderr,
      /ECONNREFUSED.*cannot reach the stack \(VID_S3_ENDPOINT=http:\/\/127\.0\.0\.1:\d+, VID_SFN_ENDPOINT=http:\/\/127\.0\.0\.1:9\)/,
    );
  }
});
