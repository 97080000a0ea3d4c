/**
 * The distributed render SDK against a real S3 server (s3rver) and the local Step
 * Functions endpoint running the real workflow definition, with the worker stubbed: the
 * `invoke` stand-in plans with the shared planner, "renders" chunks (optionally writing
 * their progress objects, optionally failing) and writes a fake output for assemble.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { SFNClient } from "@aws-sdk/client-sfn";
import {
  deploySite,
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
  planChunks,
  stateMachineDefinition,
  type TaskPayload,
} from "../../src/lambda/state_machine.ts";
import { S3_CREDENTIALS, type S3Server, startS3Server } from "../s3_server.ts";
import { ROOT } from "../helpers.ts";
import { sleep } from "../../src/util/async.ts";

const BUCKET = "vid-sdk-test";
const FUNCTION_ARN = "arn:aws:lambda:us-east-1:000000000000:function:vid-render";

interface Stub {
  totalFrames: number;
  /** Runs inside a chunk; throw to fail it. */
  chunk?: (index: number) => Promise<void> | void;
}

describe("lambda SDK against s3rver and local Step Functions (worker stubbed)", () => {
  let server: S3Server;
  let s3: S3Client;
  let local: LocalStepFunctions;
  let sfn: SFNClient;
  let stateMachineArn: string;
  let projectDir: string;
  const puts: string[] = [];
  const stubs = new Map<string, Stub>();

  /** The worker stand-in. */
  async function invoke(_functionArn: string, raw: unknown): Promise<unknown> {
    const payload = raw as TaskPayload;
    // Renders started by a guide's snippet (fresh ids): 45 frames that render at once.
    const stub = stubs.get(payload.input.renderId) ??
      (payload.input.renderId.startsWith("r-") ? { totalFrames: 45 } : undefined);
    if (!stub) throw new Error(`no stub for ${payload.input.renderId}`);
    switch (payload.task) {
      case "plan":
        return planChunks(payload.input, stub.totalFrames);
      case "renderChunk":
        await sleep(5);
        await stub.chunk?.(payload.chunk.index);
        return {
          index: payload.chunk.index,
          key: `renders/${payload.input.renderId}/chunks/${payload.chunk.index}.mp4`,
        };
      case "assemble":
        await s3.send(
          new PutObjectCommand({
            Bucket: payload.input.bucketName,
            Key: payload.input.outputKey,
            Body: new TextEncoder().encode("fake mp4"),
            ContentType: "video/mp4",
          }),
        );
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
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
    // Count every PutObject the SDK sends through this client.
    s3.middlewareStack.add(
      (next, context) => (args) => {
        if (context.commandName === "PutObjectCommand") {
          puts.push((args.input as { Key: string }).Key);
        }
        return next(args);
      },
      { step: "initialize", name: "countPuts" },
    );
    await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));

    local = await startLocalStepFunctions({ invoke, retryIntervalMs: 5 });
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

    projectDir = await Deno.makeTempDir({ prefix: "vid-sdk-project-" });
    await Deno.writeTextFile(join(projectDir, "index.html"), "<html><body>hi</body></html>\n");
    await Deno.mkdir(join(projectDir, "assets"));
    await Deno.writeTextFile(join(projectDir, "assets", "style.css"), "body { color: red }\n");
    await Deno.writeTextFile(join(projectDir, ".secret"), "dotfiles are excluded\n");
  });

  after(async () => {
    sfn.destroy();
    await local.close();
    s3.destroy();
    await server.close();
    await Deno.remove(projectDir, { recursive: true });
  });

  async function keysUnder(prefix: string): Promise<string[]> {
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    return (listed.Contents ?? []).map((o) => o.Key!).sort();
  }

  async function poll(
    executionArn: string,
    done: (p: LambdaRenderProgress) => boolean,
  ): Promise<LambdaRenderProgress> {
    const deadline = Date.now() + 15_000;
    while (true) {
      const progress = await getRenderProgress({ executionArn, sfn, s3 });
      if (done(progress)) return progress;
      if (Date.now() > deadline) throw new Error(`timed out: ${JSON.stringify(progress)}`);
      await sleep(20);
    }
  }

  it("deploySite without s3 goes where VID_S3_ENDPOINT points, as the CLI does", async () => {
    const dir = await Deno.makeTempDir({ prefix: "vid-sdk-env-project-" });
    const names = ["VID_S3_ENDPOINT", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"];
    const saved = names.map((name) => Deno.env.get(name));
    try {
      await Deno.writeTextFile(join(dir, "index.html"), "<html><body>env</body></html>\n");
      Deno.env.set("VID_S3_ENDPOINT", server.endpoint);
      Deno.env.set("AWS_ACCESS_KEY_ID", "S3RVER");
      Deno.env.set("AWS_SECRET_ACCESS_KEY", "S3RVER");
      Deno.env.set("AWS_REGION", "us-east-1");
      // Before, a client without options went to amazonaws.com whatever the environment said.
      const site = await deploySite({ projectDir: dir, bucketName: BUCKET });
      assert.equal(site.serveUrl, `${server.endpoint}/${BUCKET}/sites/${site.siteId}/`);
      assert.deepEqual(await keysUnder(site.prefix), [
        `${site.prefix}index.html`,
        `${site.prefix}site.json`,
      ]);
    } finally {
      names.forEach((name, i) =>
        saved[i] === undefined ? Deno.env.delete(name) : Deno.env.set(name, saved[i]!)
      );
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("deploySite uploads the files under sites/<siteId>/; the same tree again uploads nothing", async () => {
    puts.length = 0;
    const site = await deploySite({ projectDir, bucketName: BUCKET, s3 });
    assert.match(site.siteId, /^site-[0-9a-f]{16}$/);
    assert.equal(site.prefix, `sites/${site.siteId}/`);
    assert.equal(site.serveUrl, `${server.endpoint}/${BUCKET}/sites/${site.siteId}/`);
    assert.equal(site.composition, "index.html");
    assert.equal(site.uploaded, true);
    assert.deepEqual(site.files.map((f) => f.path), ["assets/style.css", "index.html"]);
    assert.deepEqual(await keysUnder(site.prefix), [
      `${site.prefix}assets/style.css`,
      `${site.prefix}index.html`,
      `${site.prefix}site.json`,
    ]);
    assert.equal(puts.length, 3);
    assert.equal(puts.at(-1), `${site.prefix}site.json`, "the manifest is written last");

    const css = await s3.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: `${site.prefix}assets/style.css` }),
    );
    assert.equal(await css.Body!.transformToString(), "body { color: red }\n");
    assert.match(css.ContentType ?? "", /^text\/css/);
    const manifest = JSON.parse(
      await (await s3.send(
        new GetObjectCommand({ Bucket: BUCKET, Key: `${site.prefix}site.json` }),
      )).Body!.transformToString(),
    );
    assert.equal(manifest.siteId, site.siteId);
    assert.equal(manifest.composition, "index.html");
    assert.deepEqual(manifest.files, site.files);
    assert.ok(!Number.isNaN(Date.parse(manifest.created)));

    puts.length = 0;
    const again = await deploySite({ projectDir, bucketName: BUCKET, s3 });
    assert.equal(again.siteId, site.siteId);
    assert.equal(again.uploaded, false);
    assert.equal(puts.length, 0, "no bytes uploaded for an unchanged tree");
  });

  it("a changed file gives a new siteId, uploaded beside the old one", async () => {
    const before = await deploySite({ projectDir, bucketName: BUCKET, s3 });
    await Deno.writeTextFile(join(projectDir, "assets", "style.css"), "body { color: blue }\n");
    puts.length = 0;
    const changed = await deploySite({ projectDir, bucketName: BUCKET, s3 });
    assert.notEqual(changed.siteId, before.siteId);
    assert.equal(changed.uploaded, true);
    assert.equal(puts.length, 3);
    assert.equal((await keysUnder(before.prefix)).length, 3, "the old site is untouched");
  });

  it("siteHandleFromId builds a handle without archiving or requests", () => {
    const local = siteHandleFromId("site-0123456789abcdef", BUCKET, {
      s3: { endpoint: server.endpoint, forcePathStyle: true },
    });
    assert.deepEqual(local, {
      siteId: "site-0123456789abcdef",
      bucketName: BUCKET,
      prefix: "sites/site-0123456789abcdef/",
      serveUrl: `${server.endpoint}/${BUCKET}/sites/site-0123456789abcdef/`,
      composition: "index.html",
      files: [],
      uploaded: false,
    });
    const aws = siteHandleFromId("site-0123456789abcdef", "bkt", {
      s3: { region: "eu-west-1" },
      composition: "scenes/main.html",
    });
    assert.equal(
      aws.serveUrl,
      "https://bkt.s3.eu-west-1.amazonaws.com/sites/site-0123456789abcdef/",
    );
    assert.equal(aws.composition, "scenes/main.html");
    assert.throws(() => siteHandleFromId("../x", BUCKET), /\[validateConfig\] siteId/);
  });

  it("renderToLambda rejects a 300 KiB inlined variable before any network call", async () => {
    const siteHandle = siteHandleFromId("site-0123456789abcdef", BUCKET);
    let sends = 0;
    const spySfn = new SFNClient({
      endpoint: local.endpoint,
      region: local.region,
      credentials: { accessKeyId: "local", secretAccessKey: "local" },
    });
    const realSend = spySfn.send.bind(spySfn);
    spySfn.send = ((...args: Parameters<typeof realSend>) => {
      sends++;
      return realSend(...args);
    }) as typeof spySfn.send;
    const realFetch = globalThis.fetch;
    let fetches = 0;
    globalThis.fetch = (...args: Parameters<typeof fetch>) => {
      fetches++;
      return realFetch(...args);
    };
    try {
      const logo = "data:image/png;base64," + "A".repeat(300 * 1024);
      // With `s3`, a bare handle's site would be read from the bucket (its declarations and
      // frame rate); the size is checked before that too: this endpoint answers nothing.
      const noS3 = { endpoint: "http://127.0.0.1:9", forcePathStyle: true, region: local.region };
      for (
        const [client, s3] of [
          [spySfn, undefined],
          [{ endpoint: local.endpoint, region: local.region }, undefined],
          [spySfn, noS3],
        ] as const
      ) {
        await assert.rejects(
          renderToLambda({
            siteHandle,
            bucketName: BUCKET,
            stateMachineArn,
            config: { fps: 30, variables: { logo } },
            outputKey: "renders/big/out.mp4",
            sfn: client,
            s3,
          }),
          (error: Error) => {
            assert.match(error.message, /^\[validateConfig\] config: /);
            assert.match(error.message, /262144/);
            assert.match(error.message, /URL/);
            return true;
          },
        );
      }
    } finally {
      globalThis.fetch = realFetch;
      spySfn.destroy();
    }
    assert.equal(sends, 0, "no SFN request");
    assert.equal(fetches, 0, "no fetch");
  });

  it("renderToLambda starts an execution; progress goes from running to succeeded (worker stubbed)", async () => {
    const siteHandle = await deploySite({ projectDir, bucketName: BUCKET, s3 });
    const gates: (() => void)[] = [];
    const warnings: string[] = [];
    stubs.set("sdk-success", {
      totalFrames: 90,
      chunk: async (index) => {
        await s3.send(
          new PutObjectCommand({
            Bucket: BUCKET,
            Key: `renders/sdk-success/chunks/${index}.json`,
            // Chunk 0 as the worker writes a finished chunk; the others half-way.
            Body: JSON.stringify(
              index === 0
                ? {
                  index,
                  from: 0,
                  to: 29,
                  frames: 30,
                  key: "chunks/sdk-success/chunk-0.mp4",
                  bytes: 1,
                  renderedAt: new Date().toISOString(),
                }
                : { framesDone: 10 },
            ),
          }),
        );
        await new Promise<void>((resolve) => gates.push(resolve));
      },
    });
    const render = await renderToLambda({
      siteHandle,
      bucketName: BUCKET,
      stateMachineArn,
      config: { fps: 30, width: 320, height: 180, chunkSize: 30, maxParallelChunks: 3 },
      outputKey: "out/sdk-success.mp4",
      renderId: "sdk-success",
      sfn,
      reservedConcurrency: 2,
      onWarning: (m) => warnings.push(m),
    });
    assert.equal(warnings.length, 1, "reserved concurrency 2 < 3 warns");
    assert.equal(render.renderId, "sdk-success");
    assert.match(render.executionArn, /:execution:vid-render:sdk-success$/);
    assert.equal(render.bucketName, BUCKET);
    assert.equal(render.outputKey, "out/sdk-success.mp4");
    assert.ok(render.startedAt instanceof Date);

    const running = await poll(
      render.executionArn,
      (p) => gates.length === 3 && p.framesDone === 50,
    );
    assert.equal(running.status, "running");
    assert.equal(running.chunksTotal, 3);
    assert.equal(running.chunksDone, 1, "chunk 0's object says it is done");
    assert.equal(running.framesTotal, 90);
    assert.equal(running.outputLocation, undefined);
    assert.deepEqual(running.errors, []);

    for (const release of gates) release();
    const done = await poll(render.executionArn, (p) => p.status !== "running");
    assert.equal(done.status, "succeeded", done.errors.join("\n"));
    assert.equal(done.chunksDone, 3);
    assert.equal(done.chunksTotal, 3);
    assert.equal(done.framesDone, 90);
    assert.equal(done.outputKey, "out/sdk-success.mp4");
    assert.equal(done.outputLocation, `s3://${BUCKET}/out/sdk-success.mp4`);
    assert.ok(done.costEstimate.lambdaGbSeconds > 0);
    assert.ok(done.costEstimate.stateTransitions > 0);
    assert.ok(done.costEstimate.usd >= done.costEstimate.stateTransitions * 0.000025);
    await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "out/sdk-success.mp4" }));

    const byId = await getRenderProgress({
      renderId: "sdk-success",
      stateMachineArn,
      sfn,
      s3: false,
    });
    assert.equal(byId.executionArn, render.executionArn);
    assert.equal(byId.status, "succeeded");
  });

  it("a chunk that always fails: status failed, errors name the chunk (worker stubbed)", async () => {
    const siteHandle = siteHandleFromId("site-0123456789abcdef", BUCKET, {
      s3: { endpoint: server.endpoint, forcePathStyle: true },
    });
    stubs.set("sdk-fails", {
      totalFrames: 90,
      chunk: (index) => {
        if (index === 1) {
          const error = new Error("ffmpeg exited with code 1");
          error.name = "EncodeError";
          throw error;
        }
      },
    });
    const render = await renderToLambda({
      siteHandle,
      bucketName: BUCKET,
      stateMachineArn,
      config: { fps: 30, chunkSize: 30, maxParallelChunks: 3 },
      renderId: "sdk-fails",
      sfn,
    });
    assert.equal(render.outputKey, "renders/sdk-fails/out.mp4");
    const done = await poll(render.executionArn, (p) => p.status !== "running");
    assert.equal(done.status, "failed");
    assert.equal(done.chunksTotal, 3);
    assert.ok(done.chunksDone < 3);
    assert.equal(done.outputLocation, undefined);
    assert.ok(
      done.errors.some((e) => /chunk 1 \(frames 30-59\) failed: .*ffmpeg exited/.test(e)),
      done.errors.join("\n"),
    );
  });
  it("the cost counts each invocation's run time, not its wait for a free instance (local Step Functions, invoke reports its start)", async () => {
    const QUEUED_MS = 400;
    const RUN_MS = 60;
    const queued = await startLocalStepFunctions({
      invokeReportsStart: true,
      retryIntervalMs: 5,
      invoke: async (_arn, raw, context) => {
        const payload = raw as TaskPayload;
        await sleep(QUEUED_MS); // waiting for a free instance
        context.started();
        await sleep(RUN_MS);
        if (payload.task === "plan") return planChunks(payload.input, 30);
        if (payload.task === "renderChunk") {
          return { index: payload.chunk.index, key: `c/${payload.chunk.index}` };
        }
        return { bucketName: payload.input.bucketName, outputKey: payload.input.outputKey };
      },
    });
    try {
      const arn = queued.createStateMachine(
        "vid-render",
        stateMachineDefinition({ functionArn: FUNCTION_ARN }),
      );
      const client = {
        endpoint: queued.endpoint,
        region: queued.region,
        credentials: S3_CREDENTIALS,
      };
      const render = await renderToLambda({
        siteHandle: siteHandleFromId("site-0123456789abcdef", BUCKET),
        bucketName: BUCKET,
        stateMachineArn: arn,
        config: { fps: 30 },
        sfn: client,
      });
      let progress: LambdaRenderProgress;
      const deadline = Date.now() + 15_000;
      do {
        await sleep(50);
        progress = await getRenderProgress({
          executionArn: render.executionArn,
          sfn: client,
          s3: false,
        });
      } while (progress.status === "running" && Date.now() < deadline);
      assert.equal(progress.status, "succeeded", progress.errors.join("\n"));
      // Three invocations (plan, one chunk, assemble): about 3 x 60 ms of run time; with
      // the 3 x 400 ms of waiting counted it would be over 1.2 s.
      const runMs = (progress.costEstimate.lambdaGbSeconds / (10240 / 1024)) * 1000;
      assert.ok(runMs >= 3 * RUN_MS * 0.9 && runMs < 3 * QUEUED_MS, `run time ${runMs} ms`);
    } finally {
      await queued.close();
    }
  });

  it("files named on the command line (batch file, manifest) are never uploaded: the site id stays", async () => {
    const before = await deploySite({ projectDir, bucketName: BUCKET, s3 });
    const batch = join(projectDir, "people.jsonl");
    const manifest = join(projectDir, "out", "people.manifest.json");
    await Deno.writeTextFile(batch, '{"outputKey":"a.mp4"}\n');
    await Deno.mkdir(join(projectDir, "out"));
    await Deno.writeTextFile(manifest, "[]\n");
    try {
      const kept = await deploySite({
        projectDir,
        bucketName: BUCKET,
        s3,
        exclude: [batch, manifest],
      });
      assert.equal(kept.siteId, before.siteId);
      assert.equal(kept.uploaded, false);
      const naive = await deploySite({ projectDir, bucketName: BUCKET, s3 });
      assert.notEqual(naive.siteId, before.siteId, "without exclude they would be uploaded");
      assert.ok(naive.files.some((f) => f.path === "people.jsonl"));
    } finally {
      await Deno.remove(batch);
      await Deno.remove(join(projectDir, "out"), { recursive: true });
    }
  });

  it("the guide's Node snippet (docs/sdk.md) polls until the render ends, then downloads the output (worker stubbed)", async () => {
    const guide = await Deno.readTextFile(join(ROOT, "docs", "sdk.md"));
    const block = [...guide.matchAll(/```ts\n([\s\S]*?)```/g)]
      .map((m) => m[1])
      .find((code) => code.includes('from "vid-sdk"'));
    assert.ok(block, "docs/sdk.md has a ts block importing vid-sdk");
    assert.match(block, /while \(progress\.status === "running"\)/, "the snippet polls");
    const work = await Deno.makeTempDir({ prefix: "vid-sdk-snippet-" });
    try {
      await Deno.mkdir(join(work, "examples", "hello"), { recursive: true });
      await Deno.copyFile(join(projectDir, "index.html"), join(work, "examples/hello/index.html"));
      const script = join(work, "snippet.ts");
      await Deno.writeTextFile(
        script,
        'import process from "node:process";\n' +
          block.replace('"vid-sdk"', JSON.stringify(new URL("mod.ts", `file://${ROOT}`).href))
            .replace(/setTimeout\(resolve, \d+\)/, "setTimeout(resolve, 100)"),
      );
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--no-check", "--config", join(ROOT, "deno.json"), script],
        cwd: work,
        env: {
          VID_LAMBDA_BUCKET: BUCKET,
          VID_LAMBDA_STATE_MACHINE_ARN: stateMachineArn,
          VID_S3_ENDPOINT: server.endpoint,
          VID_SFN_ENDPOINT: local.endpoint,
          AWS_REGION: "us-east-1",
          AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
        },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(out.stdout);
      assert.equal(out.code, 0, stdout + new TextDecoder().decode(out.stderr));
      assert.match(stdout, /^(\d+\/1 chunks\n)*$/); // one line per poll while it ran
      // The stand-in's output, fetched by downloadRender to the snippet's file.
      assert.equal(await Deno.readTextFile(join(work, "hello.mp4")), "fake mp4");
    } finally {
      await Deno.remove(work, { recursive: true });
    }
  });
});
