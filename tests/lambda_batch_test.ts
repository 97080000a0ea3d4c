/**
 * `vid lambda render-batch` and `renderBatch`, worker stubbed: s3rver plus the local Step
 * Functions endpoint with a one-state machine (no Lambda worker runs). A small proxy in
 * front of the Step Functions endpoint delays `StartExecution` responses and records how
 * many are in flight at once.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { CreateBucketCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { renderBatch } from "../src/lambda/batch.ts";
import { startLocalStepFunctions } from "../src/lambda/local_sfn.ts";
import {
  LOCAL_BUCKET,
  S3_CREDENTIALS,
  type S3Server,
  startS3Server,
} from "../src/lambda/local_stack.ts";
import { siteHandleFromId } from "../src/lambda/sdk.ts";
import { compositionHtml, makeProject, runVid } from "./helpers.ts";

const REGION = "us-east-1";
const HTML = compositionHtml(`<div></div>`, {
  id: "batch",
  variables: [{ id: "title", type: "string", label: "Title", default: "Hi" }],
});

describe("vid lambda render-batch (worker stubbed)", () => {
  let s3: S3Server;
  let sfn: Awaited<ReturnType<typeof startLocalStepFunctions>>;
  let proxy: Server;
  let proxyEndpoint: string;
  let stateMachineArn: string;
  let project: string;
  let scratch: string;
  let s3Client: S3Client;
  const counter = { inFlight: 0, max: 0, starts: 0 };
  let env: Record<string, string>;

  before(async () => {
    [s3, sfn, project, scratch] = await Promise.all([
      startS3Server(),
      startLocalStepFunctions({ region: REGION, invoke: () => Promise.resolve({}) }),
      makeProject(HTML),
      Deno.makeTempDir({ prefix: "vid-lambda-batch-" }),
    ]);
    stateMachineArn = sfn.createStateMachine("vid-render", {
      StartAt: "Done",
      States: { Done: { Type: "Succeed" } },
    });
    s3Client = new S3Client({
      region: REGION,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    await s3Client.send(new CreateBucketCommand({ Bucket: LOCAL_BUCKET }));
    const target = new URL(sfn.endpoint);
    proxy = createServer((req, res) => {
      const chunks: Uint8Array[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const isStart = String(req.headers["x-amz-target"] ?? "").endsWith(".StartExecution");
        if (isStart) {
          counter.starts++;
          counter.inFlight++;
          counter.max = Math.max(counter.max, counter.inFlight);
        }
        const upstream = request({
          hostname: target.hostname,
          port: target.port,
          path: req.url,
          method: req.method,
          headers: req.headers,
        }, (up) => {
          const body: Uint8Array[] = [];
          up.on("data", (c) => body.push(c));
          up.on("end", () => {
            setTimeout(() => {
              if (isStart) counter.inFlight--;
              res.writeHead(up.statusCode ?? 500, up.headers);
              res.end(Buffer.concat(body));
            }, isStart ? 100 : 0);
          });
        });
        upstream.end(Buffer.concat(chunks));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    proxyEndpoint = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    env = {
      VID_LAMBDA_BUCKET: LOCAL_BUCKET,
      VID_LAMBDA_STATE_MACHINE_ARN: stateMachineArn,
      VID_S3_ENDPOINT: s3.endpoint,
      VID_SFN_ENDPOINT: proxyEndpoint,
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    };
  });

  after(async () => {
    s3Client?.destroy();
    if (proxy) await new Promise((resolve) => proxy.close(resolve));
    await sfn?.close();
    await s3?.close();
    if (project) await Deno.remove(project, { recursive: true });
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  const batchFile = async (name: string, lines: string[]): Promise<string> => {
    const path = join(scratch, name);
    await Deno.writeTextFile(path, lines.join("\n") + "\n");
    return path;
  };

  const mixed = () => [
    JSON.stringify({ outputKey: "out/a.mp4", variables: { title: "A" } }), // 1 ok
    "{not json", // 2 malformed
    JSON.stringify({ variables: { title: "B" } }), // 3 no outputKey
    JSON.stringify({ outputKey: "out/c.mp4", variables: { title: 5 } }), // 4 wrong type
    "", // 5 blank: skipped
    JSON.stringify({ outputKey: "out/a.mp4" }), // 6 duplicate of line 1
    JSON.stringify({ outputKey: "out/big.mp4", variables: { title: "x".repeat(300_000) } }), // 7
    JSON.stringify({ outputKey: "out/d.mp4" }), // 8 ok, no variables
  ];

  const sites = async () =>
    (await s3Client.send(new ListObjectsV2Command({ Bucket: LOCAL_BUCKET, Prefix: "sites/" })))
      .KeyCount ?? 0;

  it("--dry-run: valid rows would-invoke; nothing started, nothing uploaded", async () => {
    const file = await batchFile("mixed.jsonl", mixed());
    const out = await runVid(
      ["lambda", "render-batch", project, "--batch", file, "--dry-run", "--json"],
      { env },
    );
    assert.equal(out.code, 1, out.stderr); // some rows fail to start
    const rows = JSON.parse(out.stdout);
    assert.deepEqual(
      rows.map((r: { line: number; status: string }) => [r.line, r.status]),
      [
        [1, "would-invoke"],
        [2, "failed-to-start"],
        [3, "failed-to-start"],
        [4, "would-invoke"],
        [6, "failed-to-start"],
        [7, "failed-to-start"],
        [8, "would-invoke"],
      ],
    );
    assert.ok(rows.every((r: { executionArn: unknown }) => r.executionArn === null));
    assert.equal(counter.starts, 0);
    assert.equal(await sites(), 0);
  });

  it("starts the valid rows; bad rows fail to start with their line numbers", async () => {
    const file = await batchFile("mixed.jsonl", mixed());
    const out = await runVid(["lambda", "render-batch", project, "--batch", file, "--json"], {
      env,
    });
    assert.equal(out.code, 1, out.stderr);
    const rows = JSON.parse(out.stdout);
    const byLine = new Map(rows.map((r: { line: number }) => [r.line, r]));
    assert.equal(rows.length, 7);
    for (const line of [1, 4, 8]) {
      const row = byLine.get(line) as { status: string; executionArn: string };
      assert.equal(row.status, "started");
      assert.match(row.executionArn, /^arn:aws:states:.*:execution:vid-render:/);
    }
    const error = (line: number) => (byLine.get(line) as { error: string }).error;
    assert.match(error(2), /not valid JSON/);
    assert.match(error(3), /outputKey/);
    assert.match(error(6), /duplicate outputKey out\/a\.mp4 \(first on line 1\)/);
    assert.match(error(7), /\[validateConfig\] config: .*262144/);
    assert.match(out.stderr, /line 4: "title"/); // wrong type: warning only
    assert.equal(counter.starts, 3);
    assert.ok(await sites() > 0); // deployed once

    const human = await runVid(
      ["lambda", "render-batch", project, "--batch", file, "--dry-run"],
      { env },
    );
    assert.match(human.stdout, /^3 would invoke, 4 failed to start\n1 out\/a\.mp4 -\n/);
  });

  it("strict variables: a wrong type fails to start (SDK)", async () => {
    const file = await batchFile("strict.jsonl", [
      JSON.stringify({ outputKey: "s/1.mp4", variables: { title: 5 } }),
      JSON.stringify({ outputKey: "s/2.mp4", variables: { title: "ok" } }),
    ]);
    const rows = await renderBatch({
      batchFile: file,
      siteHandle: siteHandleFromId("site-0123456789abcdef", LOCAL_BUCKET),
      bucketName: LOCAL_BUCKET,
      stateMachineArn,
      declarations: [{ id: "title", type: "string", label: "Title", default: "Hi" }],
      strict: true,
      dryRun: true,
    });
    assert.deepEqual(rows.map((r) => r.status), ["failed-to-start", "would-invoke"]);
    assert.match(rows[0].error!, /"title"/);
  });

  it("--max-concurrent 2: never more than 2 StartExecution in flight", async () => {
    const file = await batchFile(
      "ten.jsonl",
      Array.from({ length: 10 }, (_, i) => JSON.stringify({ outputKey: `c/${i}.mp4` })),
    );
    counter.max = 0;
    const before = counter.starts;
    const out = await runVid(
      ["lambda", "render-batch", project, "--batch", file, "--max-concurrent", "2"],
      { env },
    );
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^10 started, 0 failed to start\n/);
    assert.equal(counter.starts - before, 10);
    assert.equal(counter.max, 2);
  });

  it("--variables-file is refused", async () => {
    const file = await batchFile("one.jsonl", [JSON.stringify({ outputKey: "v.mp4" })]);
    const out = await runVid(
      ["lambda", "render-batch", project, "--batch", file, "--variables-file", "x.json"],
      { env },
    );
    assert.equal(out.code, 2);
    assert.match(out.stderr, /variables are inline per row/);
  });

  it("streams a 5,000-line file (--dry-run)", async () => {
    const file = await batchFile(
      "big.jsonl",
      Array.from(
        { length: 5000 },
        (_, i) => JSON.stringify({ outputKey: `b/${i}.mp4`, variables: { title: `T${i}` } }),
      ),
    );
    const out = await runVid(
      ["lambda", "render-batch", project, "--batch", file, "--dry-run", "--json"],
      { env },
    );
    assert.equal(out.code, 0, out.stderr);
    const rows = JSON.parse(out.stdout);
    assert.equal(rows.length, 5000);
    assert.equal(rows[4999].line, 5000);
  });
});
