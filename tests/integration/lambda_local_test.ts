/**
 * `vid lambda` against the local stack (`startLocalStack`, in-process): sites create
 * (twice: the second uploads nothing), a render with `--wait` through s3rver, the local
 * Step Functions endpoint and the worker bundle under Node 22, whose output has the frames
 * of a local render (3 chunks of 10 frames against the local render's 2 of 20: the GOP grid
 * makes the plan irrelevant), `progress`, `deploy` without Pulumi, and an execution input
 * over 256 KiB rejected before any request. `--frame-timeout` reaches the execution input the
 * chunk workers take their config from (commander names it after the flag, not the key).
 *
 * The oversized variables come with `--variables-file`: Linux caps one command-line
 * argument at 128 KiB, so 300 KiB of inline `--variables` cannot be passed to a process.
 *
 * Then the warm worker processes on their own, with a stub handler in place of the worker
 * bundle (real Node 22 processes; the stub makes reuse, errors, crashes and the time cap
 * observable): reuse of one process, module state kept between invocations, separate
 * processes for parallel invocations with only `maxWarm` kept, a handler error keeps the
 * process, a crash fails with `Lambda.Unknown` and is replaced, the time cap kills with
 * `Sandbox.Timedout`, idle processes exit, `close()` ends busy ones (SIGTERM first, so exit
 * hooks run), `concurrency` caps busy processes. Last, with the real worker: a stack with
 * concurrency 1 stopped mid-render leaves none of its workers' browsers running, and a
 * worker SIGKILLed mid-chunk takes its browser (and ffmpeg) down with it, the workflow
 * retries the chunk, and progress (`--wait` lines, `progress --json`) shows the attempt and
 * the error that caused it.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import {
  DescribeExecutionCommand,
  GetExecutionHistoryCommand,
  SFNClient,
  StopExecutionCommand,
} from "@aws-sdk/client-sfn";
import { renderComposition } from "../../src/render/render.ts";
import {
  type LocalStack,
  node22,
  S3_CREDENTIALS,
  startLocalStack,
} from "../../src/lambda/local/local_stack.ts";
import { startWarmWorkers, type WarmWorkersOptions } from "../../src/lambda/local/warm_workers.ts";
import {
  compositionHtml,
  frameHashes,
  makeProject,
  probeVideo,
  ROOT,
  runVid,
  waitFor,
} from "../helpers.ts";

/** A 3 s, 320x180 composition (30 frames at 10 fps): a box sliding and changing colour. */
const HTML = compositionHtml(`<div id="box"></div>`, {
  id: "lambda-local",
  duration: 3,
  head: `<style>
#box { position: absolute; left: 0; top: 40px; width: 60px; height: 60px; background: #f00;
  animation: slide 3s linear forwards; }
@keyframes slide { to { left: 260px; background: #00f; } }
</style>`,
});

/** A Step Functions client of the local stack, one attempt per call (the caller destroys it). */
function sfnClientOf(stack: LocalStack): SFNClient {
  return new SFNClient({
    endpoint: stack.sfnEndpoint,
    region: stack.region,
    credentials: S3_CREDENTIALS,
    maxAttempts: 1,
  });
}

/**
 * The execution's Lambda attempts that failed or timed out, as "<error>: <cause>", from its
 * history (the events `vid lambda progress` reads).
 */
async function failedAttempts(stack: LocalStack, executionArn: string): Promise<string[]> {
  const sfn = sfnClientOf(stack);
  try {
    const { events } = await sfn.send(
      new GetExecutionHistoryCommand({ executionArn, maxResults: 1000 }),
    );
    return (events ?? []).flatMap((event) => {
      const details = event.lambdaFunctionFailedEventDetails ??
        event.lambdaFunctionTimedOutEventDetails;
      return details ? [`${details.error}: ${details.cause}`] : [];
    });
  } finally {
    sfn.destroy();
  }
}

describe("vid lambda on the local stack", () => {
  let stack: LocalStack;
  let project: string;
  let scratch: string;
  let siteId: string;
  let renderId: string;

  before(async () => {
    [stack, project, scratch] = await Promise.all([
      startLocalStack(),
      makeProject(HTML),
      Deno.makeTempDir({ prefix: "vid-lambda-local-" }),
    ]);
  });

  after(async () => {
    await stack?.close();
    if (project) await Deno.remove(project, { recursive: true });
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  it("sites create uploads once, then nothing", async () => {
    const first = await runVid(["lambda", "sites", "create", project, "--json"], {
      env: stack.env,
    });
    assert.equal(first.code, 0, first.stderr);
    const site = JSON.parse(first.stdout);
    assert.equal(site.ok, true);
    assert.equal(site.uploaded, true);
    assert.match(site.siteId, /^site-[0-9a-f]{16}$/);
    siteId = site.siteId;

    const second = await runVid(["lambda", "sites", "create", project, "--json"], {
      env: stack.env,
    });
    assert.equal(second.code, 0, second.stderr);
    const again = JSON.parse(second.stdout);
    assert.equal(again.siteId, siteId);
    assert.equal(again.uploaded, false);
  });

  it("render --wait succeeds with the frames of a local render (other chunking)", async () => {
    assert.ok(siteId);
    const [distributed, local] = await Promise.all([
      runVid([
        "lambda",
        "render",
        project,
        "--site-id",
        siteId,
        "--fps",
        "10",
        "--chunk-size",
        "10",
        "--poll-interval",
        "250",
        "--wait",
        "--json",
      ], { env: stack.env }),
      renderComposition({
        target: project,
        output: join(scratch, "local.mp4"),
        fps: 10,
        format: "mp4",
        // One browser: the workers do not change a frame (the GOP grid), and it is one launch.
        workers: 1,
      }),
    ]);
    assert.equal(distributed.code, 0, distributed.stdout + distributed.stderr);
    const result = JSON.parse(distributed.stdout);
    assert.equal(result.ok, true);
    assert.equal(result.status, "succeeded");
    assert.equal(result.chunksTotal, 3);
    assert.equal(result.chunksDone, 3);
    assert.equal(result.outputLocation, `s3://${stack.RenderBucketName}/${result.outputKey}`);
    renderId = result.renderId;

    const client = new S3Client({
      region: stack.region,
      endpoint: stack.s3Endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    try {
      const object = await client.send(
        new GetObjectCommand({ Bucket: stack.RenderBucketName, Key: result.outputKey }),
      );
      await Deno.writeFile(
        join(scratch, "lambda.mp4"),
        await object.Body!.transformToByteArray(),
      );
    } finally {
      client.destroy();
    }
    // Local chunks are 2 s (20 frames): a different plan, the same frames (the GOP grid).
    assert.equal(local.chunks, 2);
    // plan + 3 chunks + assemble, and one more for each attempt the state machine retried:
    // a task that fails is retried, as on AWS (a clean-clone run of 2026-12-06 on a loaded
    // host had 6 invocations for a render that succeeded). A retry is printed with its error,
    // so a run shows it; some of the invocations ran in a process that had served before.
    assert.match(result.executionArn, /^arn:aws:states:.*:execution:/);
    const retried = await failedAttempts(stack, result.executionArn);
    if (retried.length > 0) console.log(`retried Lambda attempts: ${retried.join("; ")}`);
    const stats = stack.workerStats();
    assert.equal(stats.invocations, 5 + retried.length, JSON.stringify({ stats, retried }));
    assert.ok(stats.reused > 0 && stats.started < 5, JSON.stringify(stats));
    const info = await probeVideo(join(scratch, "lambda.mp4"));
    assert.equal(info.frames, 30);
    assert.equal(info.width, 320);
    assert.equal(info.height, 180);
    assert.deepEqual(
      await frameHashes(join(scratch, "lambda.mp4")),
      await frameHashes(local.output),
    );
  });

  it("a site whose composition pins data-fps renders at that rate without --fps; the output key's extension picks the format", async () => {
    const pinned = await makeProject(
      HTML.replace('data-duration="3"', 'data-duration="1" data-fps="12"'),
    );
    try {
      const site = await runVid(["lambda", "sites", "create", pinned, "--json"], {
        env: stack.env,
      });
      assert.equal(site.code, 0, site.stderr);
      const out = await runVid(
        [
          "lambda",
          "render",
          "--site-id",
          JSON.parse(site.stdout).siteId,
          "--output-key",
          "out/pinned.webm",
          "--poll-interval",
          "250",
          "--wait",
          "--json",
        ],
        { env: stack.env },
      );
      assert.equal(out.code, 0, out.stdout + out.stderr);
      const result = JSON.parse(out.stdout);
      const client = new S3Client({
        region: stack.region,
        endpoint: stack.s3Endpoint,
        forcePathStyle: true,
        credentials: S3_CREDENTIALS,
      });
      const file = join(scratch, "pinned.webm");
      try {
        const object = await client.send(
          new GetObjectCommand({ Bucket: stack.RenderBucketName, Key: result.outputKey }),
        );
        await Deno.writeFile(file, await object.Body!.transformToByteArray());
      } finally {
        client.destroy();
      }
      const info = await probeVideo(file);
      assert.equal(info.fps, 12);
      assert.equal(info.frames, 12);
      assert.equal(info.codec, "vp9");

      const gif = await runVid(
        ["lambda", "render", "--site-id", JSON.parse(site.stdout).siteId, "--output-key", "a.gif"],
        { env: stack.env },
      );
      assert.notEqual(gif.code, 0);
      assert.match(gif.stderr, /outputKey.*writes mp4, webm, mov, not gif/);
    } finally {
      await Deno.remove(pinned, { recursive: true });
    }
  });

  it("a HyperFrames project's sub-composition files travel with the site: its frames are a local render's", async () => {
    const hyperframes = join(scratch, "hyperframes");
    const fixture = join(ROOT, "tests", "fixtures", "hyperframes", "project");
    await Deno.mkdir(join(hyperframes, "compositions"), { recursive: true });
    for (const file of ["a.html", "b.html", "c.html"]) {
      await Deno.copyFile(
        join(fixture, "compositions", file),
        join(hyperframes, "compositions", file),
      );
    }
    // 3 s with the hosts held to the end, so the chunks after the first mount them too.
    await Deno.writeTextFile(
      join(hyperframes, "index.html"),
      (await Deno.readTextFile(join(fixture, "index.html")))
        .replace('data-duration="1"', 'data-duration="3"')
        .replace('data-duration="0.8"', 'data-duration="2.8"')
        .replace('data-duration="0.6"', 'data-duration="2.6"'),
    );
    await Deno.copyFile(
      join(ROOT, "node_modules", "gsap", "dist", "gsap.min.js"),
      join(hyperframes, "gsap.min.js"),
    );
    const site = await runVid(["lambda", "sites", "create", hyperframes, "--json"], {
      env: stack.env,
    });
    assert.equal(site.code, 0, site.stderr);
    const [out, local] = await Promise.all([
      runVid([
        "lambda",
        "render",
        "--site-id",
        JSON.parse(site.stdout).siteId,
        "--fps",
        "10",
        "--chunk-size",
        "10",
        "--poll-interval",
        "250",
        "--wait",
        "--json",
      ], { env: stack.env }),
      renderComposition({
        target: hyperframes,
        output: join(scratch, "hyperframes-local.mp4"),
        fps: 10,
        format: "mp4",
        workers: 1,
      }),
    ]);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    const result = JSON.parse(out.stdout);
    assert.equal(result.chunksTotal, 3);
    const client = new S3Client({
      region: stack.region,
      endpoint: stack.s3Endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    const file = join(scratch, "hyperframes-lambda.mp4");
    try {
      const object = await client.send(
        new GetObjectCommand({ Bucket: stack.RenderBucketName, Key: result.outputKey }),
      );
      await Deno.writeFile(file, await object.Body!.transformToByteArray());
    } finally {
      client.destroy();
    }
    // The chunks starting at 1 s and 2 s mount the sub-compositions and run their clocks as a
    // render from frame 0 does (tests/integration/hyperframes_test.ts checks those frames).
    assert.deepEqual(await frameHashes(file), await frameHashes(local.output));
  });

  it("progress shows every chunk done", async () => {
    assert.ok(renderId);
    const json = await runVid(["lambda", "progress", renderId, "--json"], { env: stack.env });
    assert.equal(json.code, 0, json.stdout + json.stderr);
    const progress = JSON.parse(json.stdout);
    assert.equal(progress.status, "succeeded");
    assert.equal(progress.chunksTotal, 3);
    assert.equal(progress.chunksDone, progress.chunksTotal);

    const text = await runVid(["lambda", "progress", renderId], { env: stack.env });
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /succeeded: chunks 3\/3/);
  });

  it("a failed render's progress names the chunk, its frames and the page error, readably", async () => {
    const broken = await makeProject(compositionHtml("<div></div>", {
      id: "lambda-broken",
      duration: 3,
      after: `<script>window.__vid.onSeek((t) => {
  if (t >= 1.5 && t < 1.52) throw new Error("logo service down");
});</script>`,
    }));
    try {
      const out = await runVid(
        [
          "lambda",
          "render",
          broken,
          "--fps",
          "10",
          "--chunk-size",
          "10",
          "--poll-interval",
          "250",
          "--wait",
        ],
        { env: stack.env },
      );
      assert.notEqual(out.code, 0, out.stdout);
      // The page's file, line and column come along from the chunk worker.
      const message =
        /error: chunk 1 \(frames 10-19\) failed: frame 15: .*logo service down at index\.html:7:35/;
      assert.match(out.stderr, message);
      assert.doesNotMatch(out.stderr, /errorType/);
      const id = out.stderr.match(/started (\S+)/)![1];
      const text = await runVid(["lambda", "progress", id], { env: stack.env });
      assert.equal(text.code, 1, "progress of a failed render exits 1");
      assert.match(text.stdout, / failed: chunks 2\/3/);
      assert.match(text.stdout, message);
      assert.doesNotMatch(text.stdout, /errorType/);
    } finally {
      await Deno.remove(broken, { recursive: true });
    }
  });

  it("deploy without pulumi on PATH exits 1 with the install instructions", async () => {
    const empty = await Deno.makeTempDir({ dir: scratch });
    const result = await runVid(["lambda", "deploy", "--concurrency", "4"], {
      env: { PATH: empty },
    });
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stderr, /Pulumi CLI/);
    assert.match(result.stderr, /https:\/\/www\.pulumi\.com\/docs\/install\//);
  });

  it("render --frame-timeout puts the frame deadline in the workflow's config (issue 22)", async () => {
    assert.ok(siteId);
    // Commander stores --frame-timeout as `frameTimeout`, not the declaration's key
    // `frameTimeoutMs`: the flag used to be missing, then silently dropped. At 1 fps: the
    // execution is stopped at once, whatever its chunk manages to draw before is waste.
    const out = await runVid(
      ["lambda", "render", "--site-id", siteId, "--fps", "1", "--frame-timeout", "3", "--json"],
      { env: stack.env },
    );
    assert.equal(out.code, 0, out.stdout + out.stderr);
    const { executionArn } = JSON.parse(out.stdout);
    const sfn = sfnClientOf(stack);
    try {
      const execution = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      // The execution input is what every chunk worker is handed its config from.
      const input = JSON.parse(execution.input!);
      assert.equal(input.config.frameTimeoutMs, 3000, execution.input);
      // The render itself is the first test's; this one only needed the input.
      await sfn.send(new StopExecutionCommand({ executionArn }));
    } finally {
      sfn.destroy();
    }

    const bad = await runVid(["lambda", "render", "--site-id", siteId, "--frame-timeout", "0"], {
      env: stack.env,
    });
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(bad.stderr, /--frame-timeout/);
  });

  it("an execution input over 256 KiB fails validateConfig before any request", async () => {
    let requests = 0;
    const sfn = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, () => {
      requests++;
      return new Response("{}", { headers: { "content-type": "application/x-amz-json-1.0" } });
    });
    try {
      const file = join(scratch, "big.json");
      await Deno.writeTextFile(file, JSON.stringify({ title: "x".repeat(300 * 1024) }));
      const result = await runVid([
        "lambda",
        "render",
        project,
        "--site-id",
        siteId ?? "site-0123456789abcdef",
        "--variables-file",
        file,
      ], { env: { ...stack.env, VID_SFN_ENDPOINT: `http://127.0.0.1:${sfn.addr.port}` } });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /\[validateConfig\] config:/);
      assert.equal(requests, 0);
    } finally {
      await sfn.shutdown();
    }
  });
});

/** A stand-in for the worker bundle: what each invocation does is in its payload. */
const STUB_HANDLER = `
import process from "node:process";
let calls = 0;
import { writeFileSync } from "node:fs";
export async function handler(event) {
  calls++;
  if (event.exitHookFile) process.on("exit", () => writeFileSync(event.exitHookFile, "exit"));
  // Tells the test the invocation is in the handler (its hooks are set), so it can stop it.
  if (event.startedFile) writeFileSync(event.startedFile, "started");
  if (event.sleepMs) await new Promise((resolve) => setTimeout(resolve, event.sleepMs));
  if (event.throw) {
    const error = new Error(event.throw.message);
    error.name = event.throw.name;
    throw error;
  }
  if (event.exit !== undefined) process.exit(event.exit);
  // A line that looks like a result and is not JSON, before the driver's real one.
  if (event.malformed) console.log("@@vid-task-result@@{not json");
  console.log("a stray line on stdout");
  return { pid: process.pid, calls };
}
`;

/** Whether process `pid` exists. */
async function running(pid: number): Promise<boolean> {
  try {
    await Deno.stat(`/proc/${pid}`);
    return true;
  } catch {
    return false;
  }
}

/** Waits until process `pid` is gone (or 5 s passed); returns whether it is gone. */
async function gone(pid: number): Promise<boolean> {
  for (const deadline = Date.now() + 5000; Date.now() < deadline;) {
    if (!(await running(pid))) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

describe("warm worker processes (stub handler)", () => {
  let dir: string;
  let base: WarmWorkersOptions;
  const logs: string[] = [];

  before(async () => {
    dir = await Deno.makeTempDir({ prefix: "vid-warm-" });
    await Deno.writeTextFile(join(dir, "stub.mjs"), STUB_HANDLER);
    base = {
      node: await node22(),
      bundle: join(dir, "stub.mjs"),
      env: { PATH: Deno.env.get("PATH") ?? "" },
      timeoutSeconds: 30,
      onLog: (text) => logs.push(text),
    };
  });

  after(async () => {
    if (dir) await Deno.remove(dir, { recursive: true });
  });

  type Reply = { pid: number; calls: number };

  it("one process serves consecutive invocations and keeps its module state (stub handler)", async () => {
    const workers = startWarmWorkers(base);
    try {
      const first = await workers.invoke({}) as Reply;
      const second = await workers.invoke({}) as Reply;
      assert.equal(second.pid, first.pid);
      assert.deepEqual([first.calls, second.calls], [1, 2]);
      assert.deepEqual(workers.stats(), {
        started: 1,
        invocations: 2,
        reused: 1,
        idle: 1,
        busy: 0,
        waiting: 0,
        peakBusy: 1,
      });
      // The handler's own stdout is a log line, not the result.
      assert.ok(logs.some((line) => line.includes("a stray line on stdout")), logs.join(""));
    } finally {
      await workers.close();
    }
  });

  it("parallel invocations run in separate processes; only maxWarm stay warm (stub handler)", async () => {
    const workers = startWarmWorkers({ ...base, maxWarm: 1 });
    try {
      const [a, b] = await Promise.all([
        workers.invoke({ sleepMs: 300 }),
        workers.invoke({ sleepMs: 300 }),
      ]) as Reply[];
      assert.notEqual(a.pid, b.pid);
      assert.equal(workers.stats().idle, 1);
      const third = await workers.invoke({}) as Reply;
      const retired = third.pid === a.pid ? b.pid : a.pid;
      assert.ok([a.pid, b.pid].includes(third.pid));
      assert.equal(third.calls, 2);
      assert.ok(await gone(retired), `process ${retired} should have exited`);
    } finally {
      await workers.close();
    }
  });

  it("concurrency caps busy processes; later invocations wait their turn (stub handler)", async () => {
    const workers = startWarmWorkers({ ...base, concurrency: 2 });
    try {
      const pending = Array.from({ length: 5 }, () => workers.invoke({ sleepMs: 300 }));
      // Two run (each for 300 ms), three wait.
      await waitFor("three invocations to wait", () => workers.stats().waiting === 3, {
        timeoutMs: 5000,
        intervalMs: 10,
      });
      const replies = await Promise.all(pending) as Reply[];
      assert.equal(replies.length, 5);
      const stats = workers.stats();
      assert.equal(stats.peakBusy, 2);
      assert.equal(stats.started, 2);
      assert.equal(stats.waiting, 0);
      assert.equal(new Set(replies.map((r) => r.pid)).size, 2);
    } finally {
      await workers.close();
    }
  });

  it("maxWarm 0 starts a fresh process for every invocation (stub handler)", async () => {
    const workers = startWarmWorkers({ ...base, maxWarm: 0 });
    try {
      const first = await workers.invoke({}) as Reply;
      const second = await workers.invoke({}) as Reply;
      assert.notEqual(second.pid, first.pid);
      assert.equal(second.calls, 1);
      assert.equal(workers.stats().started, 2);
    } finally {
      await workers.close();
    }
  });

  it("a handler error fails the invocation with its name and keeps the process (stub handler)", async () => {
    const workers = startWarmWorkers(base);
    try {
      const before = await workers.invoke({}) as Reply;
      await assert.rejects(
        workers.invoke({ throw: { name: "RenderError", message: "chunk 2 failed" } }),
        (error: Error) => error.name === "RenderError" && error.message === "chunk 2 failed",
      );
      const after = await workers.invoke({}) as Reply;
      assert.equal(after.pid, before.pid);
      assert.equal(after.calls, 3);
    } finally {
      await workers.close();
    }
  });

  it("a malformed result line fails its invocation, not the pool; the next one runs (stub handler)", async () => {
    const workers = startWarmWorkers(base);
    try {
      const before = await workers.invoke({}) as Reply;
      await assert.rejects(
        workers.invoke({ malformed: true }),
        (error: Error) =>
          error.name === "Lambda.Unknown" &&
          error.message ===
            "the worker process answered with a result that is not JSON: {not json",
      );
      assert.ok(logs.some((line) => line.includes("wrote a result line that is not JSON")));
      // The process that broke the protocol is not reused: its late real result line
      // would answer the next invocation.
      assert.ok(await gone(before.pid), `process ${before.pid} should have been stopped`);
      const after = await workers.invoke({}) as Reply;
      assert.notEqual(after.pid, before.pid);
      assert.equal(after.calls, 1);
    } finally {
      await workers.close();
    }
  });

  it("a crashed process fails its invocation with Lambda.Unknown and is replaced (stub handler)", async () => {
    const workers = startWarmWorkers(base);
    try {
      const before = await workers.invoke({}) as Reply;
      await assert.rejects(workers.invoke({ exit: 3 }), (error: Error) => {
        assert.equal(error.name, "Lambda.Unknown");
        assert.match(error.message, /exited with code 3 without a result/);
        return true;
      });
      const after = await workers.invoke({}) as Reply;
      assert.notEqual(after.pid, before.pid);
      assert.equal(after.calls, 1);
    } finally {
      await workers.close();
    }
  });

  it("past the time cap the process is killed and the invocation fails with Sandbox.Timedout (stub handler)", async () => {
    const workers = startWarmWorkers({ ...base, timeoutSeconds: 1, killGraceMs: 0 });
    try {
      const { pid } = await workers.invoke({}) as Reply;
      const started = Date.now();
      await assert.rejects(workers.invoke({ sleepMs: 20_000 }), (error: Error) => {
        assert.equal(error.name, "Sandbox.Timedout");
        assert.equal(error.message, "Task timed out after 1.00 seconds");
        return true;
      });
      assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
      assert.equal(await running(pid), false);
      const next = await workers.invoke({}) as Reply;
      assert.notEqual(next.pid, pid);
    } finally {
      await workers.close();
    }
  });

  it("an idle process exits after idleTimeoutMs (stub handler)", async () => {
    const workers = startWarmWorkers({ ...base, idleTimeoutMs: 200 });
    try {
      const { pid } = await workers.invoke({}) as Reply;
      assert.ok(await gone(pid), `process ${pid} should have exited`);
      assert.equal(workers.stats().idle, 0);
    } finally {
      await workers.close();
    }
  });

  it("close() stops a busy process with SIGTERM first, so its exit hooks run (stub handler)", async () => {
    const marker = join(dir, "exit-hook-ran");
    const workers = startWarmWorkers(base);
    const started = join(dir, "exit-hook-set");
    const pending = workers.invoke({ exitHookFile: marker, startedFile: started, sleepMs: 20_000 });
    await waitFor("the handler to set its exit hook", () => Deno.stat(started).catch(() => false));
    await workers.close();
    await assert.rejects(pending, (error: Error) => error.name === "Lambda.Unknown");
    assert.equal(await Deno.readTextFile(marker), "exit");
  });

  it("close() ends busy processes: their invocations fail (stub handler)", async () => {
    const workers = startWarmWorkers(base);
    const { pid } = await workers.invoke({}) as Reply;
    const started = join(dir, "busy-started");
    const pending = workers.invoke({ startedFile: started, sleepMs: 20_000 });
    await waitFor("the invocation to be busy", () => Deno.stat(started).catch(() => false));
    await workers.close();
    await assert.rejects(pending, (error: Error) => error.name === "Lambda.Unknown");
    assert.equal(await running(pid), false);
    await assert.rejects(workers.invoke({}), /closed/);
  });
});

/**
 * Pids of the descendants of `stack`'s worker processes whose command name matches `name`.
 * The stack's workers, not this process's children: files running alongside share this
 * process and have browsers of their own.
 */
async function descendants(stack: LocalStack, name: RegExp): Promise<number[]> {
  const table = await processTable();
  return below(table, stack.workerPids()).filter((pid) => name.test(table.get(pid)?.comm ?? ""));
}

/** `roots`' descendants (not the roots themselves) in `table`. */
function below(table: Map<number, { ppid: number }>, roots: number[]): number[] {
  const found = [...roots];
  for (let i = 0; i < found.length; i++) {
    for (const [child, row] of table) if (row.ppid === found[i]) found.push(child);
  }
  return found.slice(roots.length);
}

describe("local stack concurrency and clean shutdown (real worker)", () => {
  let stack: LocalStack;
  let project: string;

  before(async () => {
    [stack, project] = await Promise.all([
      startLocalStack({ concurrency: 1 }),
      // Long enough that its chunk is still rendering when the stack stops.
      makeProject(compositionHtml(`<div id="box"></div>`, { id: "lambda-long", duration: 20 })),
    ]);
  });

  after(async () => {
    await stack?.close();
    if (project) await Deno.remove(project, { recursive: true });
  });

  it("runs one task at a time, and close() leaves no browser behind", async () => {
    assert.equal(stack.env.VID_LAMBDA_RESERVED_CONCURRENCY, "1");
    const site = await runVid(["lambda", "sites", "create", project, "--json"], {
      env: stack.env,
    });
    assert.equal(site.code, 0, site.stderr);
    const siteId = JSON.parse(site.stdout).siteId;
    const started = await runVid([
      "lambda",
      "render",
      project,
      "--site-id",
      siteId,
      "--chunk-size",
      "600",
      "--json",
    ], { env: stack.env });
    assert.equal(started.code, 0, started.stderr);
    let browsers: number[] = [];
    for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
      browsers = await descendants(stack, /chrom|headless/i);
      if (browsers.length > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.ok(browsers.length > 0, "the chunk's browser should be running");
    assert.equal(stack.workerStats().peakBusy, 1);
    await stack.close();
    const left: number[] = [];
    for (const pid of browsers) if (!(await gone(pid))) left.push(pid);
    assert.deepEqual(left, [], "browsers of the stopped workers must be gone");
  });
});

/** Parent and command name of every process. */
async function processTable(): Promise<Map<number, { ppid: number; comm: string }>> {
  const table = new Map<number, { ppid: number; comm: string }>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const close = stat.lastIndexOf(")");
      table.set(Number(entry.name), {
        comm: stat.slice(stat.indexOf("(") + 1, close),
        ppid: Number(stat.slice(close + 2).split(" ")[1]),
      });
    } catch {
      // exited meanwhile
    }
  }
  return table;
}

describe("a worker SIGKILLed mid-chunk (real worker)", () => {
  let stack: LocalStack;
  let project: string;
  const logs: string[] = [];

  before(async () => {
    [stack, project] = await Promise.all([
      startLocalStack({ onLog: (text) => logs.push(text) }),
      // 50 frames at 5 fps in one chunk: long enough to be caught rendering (its browser is
      // up from the session's start), and drawn twice (the attempt killed, then the retry).
      makeProject(compositionHtml(`<div id="box"></div>`, { id: "lambda-killed", duration: 10 })),
    ]);
  });

  after(async () => {
    await stack?.close();
    if (project) await Deno.remove(project, { recursive: true });
  });

  it("takes its browser down, and the retried chunk shows in progress", async () => {
    const site = await runVid(["lambda", "sites", "create", project, "--json"], {
      env: stack.env,
    });
    assert.equal(site.code, 0, site.stderr);
    const rendering = runVid([
      "lambda",
      "render",
      project,
      "--site-id",
      JSON.parse(site.stdout).siteId,
      "--fps",
      "5",
      "--chunk-size",
      "50",
      "--poll-interval",
      "200",
      "--wait",
    ], { env: stack.env });

    // The worker rendering the chunk: one of the stack's workers with a browser below it.
    let worker: number | undefined;
    let tree: number[] = [];
    for (const deadline = Date.now() + 60_000; !worker && Date.now() < deadline;) {
      const table = await processTable();
      for (const pid of stack.workerPids()) {
        const descendants = below(table, [pid]);
        if (descendants.some((p) => /chrom|headless/i.test(table.get(p)?.comm ?? ""))) {
          worker = pid;
          tree = [pid, ...descendants];
        }
      }
      if (!worker) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.ok(worker, "a worker should be rendering the chunk in a browser");
    Deno.kill(worker, "SIGKILL");
    const left: number[] = [];
    for (const pid of tree) if (!(await gone(pid))) left.push(pid);
    assert.deepEqual(left, [], "the killed worker's browser and ffmpeg must be gone");

    const out = await rendering;
    assert.equal(out.code, 0, out.stdout + out.stderr);
    // The stack's log says what happened to the worker.
    assert.ok(
      logs.some((line) =>
        line.includes(`worker ${worker} exited with signal SIGKILL during a task`)
      ),
      logs.join(""),
    );
    assert.match(
      out.stderr,
      /chunk 0 attempt 2 \(retried after Lambda\.Unknown: worker process exited with signal SIGKILL/,
    );
    const id = out.stderr.match(/started (\S+)/)![1];
    const json = await runVid(["lambda", "progress", id, "--json"], { env: stack.env });
    const progress = JSON.parse(json.stdout);
    assert.equal(progress.status, "succeeded");
    assert.equal(progress.retries.length, 1, JSON.stringify(progress.retries));
    assert.equal(progress.retries[0].index, 0);
    assert.equal(progress.retries[0].attempts, 2);
    assert.match(progress.retries[0].errors[0], /^Lambda\.Unknown: .*SIGKILL/);
  });
});
