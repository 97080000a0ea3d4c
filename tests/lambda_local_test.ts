/**
 * `vid lambda` against the local stack (`startLocalStack`, in-process): sites create
 * (twice: the second uploads nothing), a render with `--wait` through s3rver, the local
 * Step Functions endpoint and the worker bundle under Node 22, whose output has the frames
 * of a local render at the same chunk size (10 frames: each chunk is its own H.264 stream,
 * so only equal chunking gives equal framemd5), `progress`, `deploy` without Pulumi, and
 * an execution input over 256 KiB rejected before any request.
 *
 * The oversized variables come with `--variables-file`: Linux caps one command-line
 * argument at 128 KiB, so 300 KiB of inline `--variables` cannot be passed to a process.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { renderComposition } from "../src/render/render.ts";
import { type LocalStack, S3_CREDENTIALS, startLocalStack } from "../src/lambda/local_stack.ts";
import { compositionHtml, frameHashes, makeProject, probeVideo, runVid } from "./helpers.ts";

/** A 1 s, 320x180 composition: a box sliding and changing colour. */
const HTML = compositionHtml(`<div id="box"></div>`, {
  id: "lambda-local",
  duration: 1,
  head: `<style>
#box { position: absolute; left: 0; top: 40px; width: 60px; height: 60px; background: #f00;
  animation: slide 1s linear forwards; }
@keyframes slide { to { left: 260px; background: #00f; } }
</style>`,
});

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

  it("render --wait succeeds with the frames of a local render at the same chunk size", async () => {
    assert.ok(siteId);
    const [distributed, local] = await Promise.all([
      runVid([
        "lambda",
        "render",
        project,
        "--site-id",
        siteId,
        "--fps",
        "30",
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
        fps: 30,
        format: "mp4",
        chunkSize: 10,
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
    assert.equal(local.chunks, 3);
    const info = await probeVideo(join(scratch, "lambda.mp4"));
    assert.equal(info.frames, 30);
    assert.equal(info.width, 320);
    assert.equal(info.height, 180);
    assert.deepEqual(
      await frameHashes(join(scratch, "lambda.mp4")),
      await frameHashes(local.output),
    );
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

  it("deploy without pulumi on PATH exits 1 with the install instructions", async () => {
    const empty = await Deno.makeTempDir({ dir: scratch });
    const result = await runVid(["lambda", "deploy", "--concurrency", "4"], {
      env: { PATH: empty },
    });
    assert.equal(result.code, 1, result.stdout + result.stderr);
    assert.match(result.stderr, /Pulumi CLI/);
    assert.match(result.stderr, /https:\/\/www\.pulumi\.com\/docs\/install\//);
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
