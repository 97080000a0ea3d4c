/**
 * `vid lambda render-batch`, `vid lambda progress --manifest` and `renderBatch`.
 *
 * Part 1, worker stubbed: s3rver plus the local Step Functions endpoint running the real
 * render state machine, whose Task states go to an in-process stand-in of the worker
 * (plan: the real planner; renderChunk: nothing; assemble: writes a small JSON object
 * holding the row's variables at the row's outputKey). Everything around it is real: the
 * CLI process, the AWS SDK clients, HTTP on loopback, the ASL interpreter. A proxy in
 * front of the Step Functions endpoint delays `StartExecution` responses, records how
 * many are in flight at once, and can answer them with AWS's `ThrottlingException`.
 *
 * Part 2, real worker: the local stack (`startLocalStack`, the worker bundle under Node
 * 22 with Chromium and ffmpeg, at most twice the CPU count of tasks at once) renders an
 * 8-line personalised batch from one command: 3 lines broken, one row that fails for real
 * (its page asks for a missing file), and 4 outputs in the bucket, each a video of its
 * row's colour. Run again with nothing fixed, only the failed row starts, as attempt 2.
 * The batch file and manifest live inside the project and are never uploaded; one output
 * is downloaded to a file and through a presigned URL; the site is listed and removed.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, request, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Buffer } from "node:buffer";
import { join } from "node:path";
import {
  CreateBucketCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { largeBatchGuidance, renderBatch } from "../../src/lambda/batch.ts";
import { getBatchProgress } from "../../src/lambda/batch_progress.ts";
import type { ExecutionInput } from "../../src/lambda/config.ts";
import { type BatchManifestRow, RENDER_ID_METADATA } from "../../src/batch/manifest.ts";
import { startLocalStepFunctions } from "../../src/lambda/local/local_sfn.ts";
import {
  LOCAL_BUCKET,
  type LocalStack,
  S3_CREDENTIALS,
  type S3Server,
  startLocalStack,
  startS3Server,
} from "../../src/lambda/local/local_stack.ts";
import {
  deploySite,
  getRenderProgress,
  renderToLambda,
  siteHandleFromId,
} from "../../src/lambda/sdk.ts";
import { loadSite } from "../../src/lambda/sites.ts";
import {
  type AssemblePayload,
  planChunks,
  type RenderChunkPayload,
  stateMachineDefinition,
  type TaskPayload,
} from "../../src/lambda/state_machine.ts";
import {
  compositionHtml,
  makeProject,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  ROOT,
  runVid,
  waitFor,
} from "../helpers.ts";

const REGION = "us-east-1";
const HTML = compositionHtml(`<div></div>`, {
  id: "batch",
  // 3 s: three 1-second GOP grid cells, so up to 3 chunks.
  duration: 3,
  variables: [{ id: "title", type: "string", label: "Title", default: "Hi" }],
});

/** What the proxy in front of the Step Functions endpoint saw and does. */
interface ProxyState {
  /** StartExecution calls received (throttled ones included). */
  starts: number;
  /** StartExecution calls in flight now, and the most at once. */
  inFlight: number;
  max: number;
  /** Answer the next `throttleNext` StartExecution calls with a ThrottlingException. */
  throttleNext: number;
  /** Always throttle StartExecution calls whose body holds one of these outputKeys. */
  throttleKeys: Set<string>;
  /** StartExecution calls answered with a ThrottlingException. */
  throttled: number;
  /** Start calls per outputKey (from the execution input). */
  byKey: Map<string, number>;
  /** Milliseconds each StartExecution response is held back. */
  startDelayMs: number;
  /** Drop the connection of the next StartExecution calls before forwarding them. */
  dropBefore: number;
  /** Forward the next StartExecution calls, then drop the connection instead of answering. */
  dropAfter: number;
  /** Requests of any kind received, and milliseconds every answer is held back. */
  requests?: number;
  allDelayMs?: number;
  /**
   * Answer with `connection: close`, so every call has a fresh connection: an HTTP client
   * may silently resend a request whose pooled connection dropped, hiding the drop.
   */
  closeConnections: boolean;
}

/** AWS's answer to a throttled call of a JSON 1.0 protocol service (HTTP 400). */
function throttleResponse(res: import("node:http").ServerResponse): void {
  const body = JSON.stringify({
    __type: "com.amazon.coral.availability#ThrottlingException",
    message: "Rate exceeded",
  });
  res.writeHead(400, {
    "content-type": "application/x-amz-json-1.0",
    "x-amzn-errortype":
      "ThrottlingException:http://internal.amazon.com/coral/com.amazon.coral.availability/",
    "x-amzn-requestid": crypto.randomUUID(),
    "content-length": String(Buffer.byteLength(body)),
  });
  res.end(body);
}

/** Starts the proxy; returns its server and endpoint. */
async function startProxy(
  target: URL,
  state: ProxyState,
): Promise<{ server: Server; endpoint: string }> {
  const server = createServer((req, res) => {
    const chunks: Uint8Array[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const payload = Buffer.concat(chunks);
      state.requests = (state.requests ?? 0) + 1;
      const isStart = String(req.headers["x-amz-target"] ?? "").endsWith(".StartExecution");
      if (isStart) {
        state.starts++;
        let key = "";
        try {
          key = JSON.parse(JSON.parse(payload.toString()).input).outputKey ?? "";
        } catch {
          // not a render's input
        }
        state.byKey.set(key, (state.byKey.get(key) ?? 0) + 1);
        if (state.throttleNext > 0 || state.throttleKeys.has(key)) {
          if (!state.throttleKeys.has(key)) state.throttleNext--;
          state.throttled++;
          throttleResponse(res);
          return;
        }
        if (state.dropBefore > 0) {
          state.dropBefore--;
          req.socket.destroy();
          return;
        }
        state.inFlight++;
        state.max = Math.max(state.max, state.inFlight);
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
            if (isStart) state.inFlight--;
            if (isStart && state.dropAfter > 0) {
              state.dropAfter--;
              req.socket.destroy();
              return;
            }
            res.writeHead(up.statusCode ?? 500, {
              ...up.headers,
              ...(state.closeConnections ? { connection: "close" } : {}),
            });
            res.end(Buffer.concat(body));
          }, isStart ? state.startDelayMs : state.allDelayMs ?? 0);
        });
      });
      upstream.end(payload);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Rows of a `--json` manifest, as `[line, status]` pairs. */
const statuses = (rows: BatchManifestRow[]) => rows.map((r) => [r.line, r.status]);

describe("vid lambda render-batch (worker stubbed: real state machine, stand-in tasks)", () => {
  let s3: S3Server;
  let sfn: Awaited<ReturnType<typeof startLocalStepFunctions>>;
  let proxy: Server;
  let stateMachineArn: string;
  let project: string;
  let scratch: string;
  let s3Client: S3Client;
  const state: ProxyState = {
    starts: 0,
    inFlight: 0,
    max: 0,
    throttleNext: 0,
    throttleKeys: new Set(),
    throttled: 0,
    byKey: new Map(),
    startDelayMs: 100,
    dropBefore: 0,
    dropAfter: 0,
    closeConnections: false,
  };
  let env: Record<string, string>;

  /** Chunks of `title: "hold"` rows wait here until released (or their render is stopped). */
  const held: (() => void)[] = [];
  /** The worker's stand-in: the real planner, no rendering, the row's variables as output. */
  const invoke = async (_arn: string, payload: unknown): Promise<unknown> => {
    const task = payload as TaskPayload;
    if (task.task === "plan") return planChunks(task.input as ExecutionInput, 3);
    if (task.task === "renderChunk") {
      const { chunk, input } = task as RenderChunkPayload;
      const title = input.config.variables?.title;
      // A row whose page would throw: every attempt of its chunks fails.
      if (title === "boom") throw new Error(`chunk ${chunk.index}: the page threw for "boom"`);
      if (title === "hold") await new Promise<void>((resolve) => held.push(resolve));
      return { index: chunk.index, key: `chunks/${input.renderId}/${chunk.index}` };
    }
    const { input } = task as AssemblePayload;
    await s3Client.send(
      new PutObjectCommand({
        Bucket: input.bucketName,
        Key: input.outputKey,
        Body: JSON.stringify({ variables: input.config.variables ?? {} }),
        ContentType: "application/json",
        // As the worker's assemble does (asserted in the real worker's test below).
        Metadata: { [RENDER_ID_METADATA]: input.renderId },
      }),
    );
    return { bucketName: input.bucketName, outputKey: input.outputKey };
  };

  before(async () => {
    [s3, sfn, project, scratch] = await Promise.all([
      startS3Server(),
      startLocalStepFunctions({ region: REGION, invoke, retryIntervalMs: 10 }),
      makeProject(HTML),
      Deno.makeTempDir({ prefix: "vid-lambda-batch-" }),
    ]);
    stateMachineArn = sfn.createStateMachine(
      "vid-render",
      stateMachineDefinition({ functionArn: `arn:aws:lambda:${REGION}:0:function:vid-render` }),
    );
    s3Client = new S3Client({
      region: REGION,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    await s3Client.send(new CreateBucketCommand({ Bucket: LOCAL_BUCKET }));
    const started = await startProxy(new URL(sfn.endpoint), state);
    proxy = started.server;
    env = {
      VID_LAMBDA_BUCKET: LOCAL_BUCKET,
      VID_LAMBDA_STATE_MACHINE_ARN: stateMachineArn,
      VID_S3_ENDPOINT: s3.endpoint,
      VID_SFN_ENDPOINT: started.endpoint,
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    };
  });

  after(async () => {
    while (held.length > 0) held.shift()!();
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
    JSON.stringify({ outputKey: "out/c.mp4", variables: { title: 5 } }), // 4 wrong type: warns
    "   ", // 5 blank: skipped
    JSON.stringify({ outputKey: "out/a.mp4" }), // 6 duplicate of line 1
    JSON.stringify({ outputKey: "out/big.mp4", variables: { title: "x".repeat(300_000) } }), // 7
    JSON.stringify({ outputKey: "out/d.mp4" }), // 8 ok, no variables
  ];

  const keys = async (prefix: string): Promise<string[]> => {
    const found: string[] = [];
    let token: string | undefined;
    do {
      const page = await s3Client.send(
        new ListObjectsV2Command({
          Bucket: LOCAL_BUCKET,
          Prefix: prefix,
          ContinuationToken: token,
        }),
      );
      found.push(...(page.Contents ?? []).map((o) => o.Key!));
      token = page.NextContinuationToken;
    } while (token);
    return found;
  };

  const readObject = async (key: string): Promise<string> => {
    const object = await s3Client.send(new GetObjectCommand({ Bucket: LOCAL_BUCKET, Key: key }));
    return await object.Body!.transformToString();
  };

  const vid = (args: string[]) => runVid(["lambda", ...args], { env });

  it("--dry-run: one row per line (blank: skipped); nothing started, nothing uploaded", async () => {
    const file = await batchFile("mixed.jsonl", mixed());
    const out = await vid(["render-batch", project, "--batch", file, "--dry-run", "--json"]);
    assert.equal(out.code, 1, out.stderr); // some rows fail to start
    const rows: BatchManifestRow[] = JSON.parse(out.stdout);
    assert.deepEqual(statuses(rows), [
      [1, "would-invoke"],
      [2, "failed-to-start"],
      [3, "failed-to-start"],
      [4, "would-invoke"],
      [5, "skipped"],
      [6, "failed-to-start"],
      [7, "failed-to-start"],
      [8, "would-invoke"],
    ]);
    assert.deepEqual(rows[4], {
      line: 5,
      outputKey: null,
      status: "skipped",
      executionArn: null,
      error: "blank line",
    });
    for (const row of rows) {
      assert.deepEqual(
        Object.keys(row).filter((k) => k !== "renderId" && k !== "warnings").sort(),
        ["error", "executionArn", "line", "outputKey", "status"],
      );
      assert.equal(row.executionArn, null);
    }
    // Line 4's wrong type renders with the default: its row says so (issue 32).
    assert.deepEqual(rows.filter((r) => r.warnings).map((r) => r.line), [4]);
    assert.match(rows[3].warnings![0], /"title"/);
    assert.equal(state.starts, 0);
    assert.deepEqual(await keys("sites/"), []);
  });

  it("a row whose key is misspelt records its warning with a did-you-mean in the manifest; the summary counts such rows (issue 32)", async () => {
    const file = await batchFile("misspelt.jsonl", [
      JSON.stringify({ outputKey: "out/x.mp4", variables: { titel: "A" } }),
      JSON.stringify({ outputKey: "out/y.mp4", variables: { title: "B" } }),
    ]);
    const manifest = join(scratch, "misspelt.manifest.json");
    const out = await vid([
      "render-batch",
      project,
      "--batch",
      file,
      "--dry-run",
      "--manifest",
      manifest,
    ]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(
      out.stdout,
      /^2 would invoke, 0 failed to start, 0 skipped, 1 with warnings \(see the manifest's "warnings"\)\n/,
    );
    const rows: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
    assert.equal(rows[0].warnings?.length, 1);
    assert.match(rows[0].warnings![0], /"titel" is not declared.*did you mean "title"\?/);
    assert.equal(rows[1].warnings, undefined);
  });

  it("--dry-run needs no stack: without bucket or state machine it lints the rows", async () => {
    const file = await batchFile("mixed.jsonl", mixed());
    const bare = { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "" };
    const [out, started] = await Promise.all([
      runVid(["lambda", "render-batch", project, "--batch", file, "--dry-run"], { env: bare }),
      runVid(["lambda", "render-batch", project, "--batch", file], { env: bare }),
    ]);
    assert.equal(out.code, 1, out.stderr); // rows 2, 3, 6, 7 fail to start; no usage error
    assert.match(
      out.stdout,
      /^3 would invoke, 4 failed to start, 1 skipped, 1 with warnings \(see the manifest\'s "warnings"\)\n/,
    );
    assert.doesNotMatch(out.stderr, /no render bucket|no state machine/);
    assert.equal(started.code, 2); // a real run still needs them
    assert.match(started.stderr, /no render bucket: pass --bucket or set VID_LAMBDA_BUCKET/);
  });

  it("starts the valid rows; bad rows fail to start with their line numbers", async () => {
    const file = await batchFile("mixed.jsonl", mixed());
    const out = await vid(["render-batch", project, "--batch", file, "--json"]);
    assert.equal(out.code, 1, out.stderr);
    const rows: BatchManifestRow[] = JSON.parse(out.stdout);
    assert.equal(rows.length, 8);
    const byLine = new Map(rows.map((r) => [r.line, r]));
    for (const line of [1, 4, 8]) {
      const row = byLine.get(line)!;
      assert.equal(row.status, "started");
      assert.equal(row.error, null);
      assert.match(row.executionArn!, /^arn:aws:states:.*:execution:vid-render:b-[0-9a-f]{40}$/);
    }
    const error = (line: number) => byLine.get(line)!.error!;
    assert.match(error(2), /^line 2: not valid JSON/);
    assert.match(error(3), /^line 3: "outputKey" must be a non-empty string/);
    assert.match(error(6), /duplicate outputKey out\/a\.mp4 \(first on line 1\)/);
    assert.match(error(7), /\[validateConfig\] config: .*262144/);
    assert.equal(byLine.get(5)!.status, "skipped");
    assert.match(out.stderr, /line 4: "title"/); // wrong type: a warning only
    assert.equal(state.starts, 3);
    assert.ok((await keys("sites/")).length > 0); // deployed once

    const human = await vid(["render-batch", project, "--batch", file, "--dry-run"]);
    assert.match(
      human.stdout,
      /^3 would invoke, 4 failed to start, 1 skipped, 1 with warnings \(see the manifest\'s "warnings"\)\n1 out\/a\.mp4 - would-invoke\n2 - - failed-to-start\n/,
    );
    assert.match(human.stdout, /\n5 - - skipped\n/);
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

  it("a final newline is not a line; blank lines in a row each get a row", async () => {
    const path = join(scratch, "blanks.jsonl");
    await Deno.writeTextFile(path, `{"outputKey":"k/1.mp4"}\n\n\r\n{"outputKey":"k/2.mp4"}\n`);
    const rows = await renderBatch({
      batchFile: path,
      siteHandle: siteHandleFromId("site-0123456789abcdef", LOCAL_BUCKET),
      bucketName: LOCAL_BUCKET,
      stateMachineArn,
      dryRun: true,
    });
    assert.deepEqual(statuses(rows), [
      [1, "would-invoke"],
      [2, "skipped"],
      [3, "skipped"],
      [4, "would-invoke"],
    ]);
  });

  it("--max-concurrent 2: never more than 2 StartExecution in flight", async () => {
    const file = await batchFile(
      "ten.jsonl",
      Array.from({ length: 10 }, (_, i) => JSON.stringify({ outputKey: `c/${i}.mp4` })),
    );
    state.max = 0;
    const before = state.starts;
    const out = await vid(["render-batch", project, "--batch", file, "--max-concurrent", "2"]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /^10 started, 0 already started, 0 failed to start, 0 skipped\n/);
    assert.equal(state.starts - before, 10);
    assert.equal(state.max, 2);
  });

  it("--variables-file is refused", async () => {
    const file = await batchFile("one.jsonl", [JSON.stringify({ outputKey: "v.mp4" })]);
    const out = await vid(["render-batch", project, "--batch", file, "--variables-file", "x.json"]);
    assert.equal(out.code, 2);
    assert.match(out.stderr, /variables are inline per row/);
  });

  it("a missing batch file is an error naming it, before anything is uploaded", async () => {
    const missing = join(scratch, "nope.jsonl");
    const out = await vid(["render-batch", project, "--batch", missing, "--json"]);
    assert.equal(out.code, 1);
    const body = JSON.parse(out.stdout);
    assert.equal(body.error.field, "batchFile");
    assert.match(body.error.message, /cannot read the batch file .*nope\.jsonl/);
  });

  it("streams a 10,000-line file in seconds (--dry-run), with the large-batch guidance", async () => {
    const file = await batchFile(
      "big.jsonl",
      Array.from(
        { length: 10_000 },
        (_, i) => JSON.stringify({ outputKey: `b/${i}.mp4`, variables: { title: `T${i}` } }),
      ),
    );
    const t0 = performance.now();
    const out = await vid([
      "render-batch",
      project,
      "--batch",
      file,
      "--dry-run",
      "--json",
      "--reserved-concurrency",
      "320",
    ]);
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(out.code, 0, out.stderr);
    const rows: BatchManifestRow[] = JSON.parse(out.stdout);
    assert.equal(rows.length, 10_000);
    assert.equal(rows[9999].line, 10_000);
    assert.ok(rows.every((r) => r.status === "would-invoke"));
    assert.ok(seconds < 30, `10,000-line dry run took ${seconds.toFixed(1)} s`);
    // 10,000 entries, --max-concurrent 50 (default) > floor(320 / 16) = 20.
    assert.match(
      out.stderr,
      /batch of 10000 entries \(more than 1000\): --max-concurrent 50 is above floor\(reservedConcurrency 320 \/ maxParallelChunks 16\) = 20;.*Use --max-concurrent near 20/,
    );

    const within = await runVid(
      ["lambda", "render-batch", project, "--batch", file, "--dry-run", "--max-concurrent", "20"],
      { env: { ...env, VID_LAMBDA_RESERVED_CONCURRENCY: "320" } },
    );
    assert.equal(within.code, 0, within.stderr);
    assert.doesNotMatch(within.stderr, /more than 1000/);
    assert.match(within.stdout, /^10000 would invoke, 0 failed to start, 0 skipped\n/);
  });

  it("large-batch guidance: above 1000 entries only, against floor(reserved / chunks)", () => {
    const at = (entries: number, maxConcurrent: number, reservedConcurrency?: number) =>
      largeBatchGuidance({ entries, maxConcurrent, reservedConcurrency, maxParallelChunks: 8 });
    assert.equal(at(1000, 50, 80), undefined); // not above 1000
    assert.match(at(1001, 11, 80)!, /--max-concurrent 11 is above .* = 10;/);
    assert.equal(at(1001, 10, 80), undefined); // at the advised value
    assert.match(at(1001, 10)!, /pass --reserved-concurrency/); // unknown: the rule itself
  });

  // 60 lines: three times --max-concurrent 20, so the start calls overlap and queue.
  it("60 lines, 3 broken: 57 renders whose outputs are in the bucket; a rerun starts nothing", async () => {
    const lines = Array.from(
      { length: 60 },
      (_, i) =>
        JSON.stringify({ outputKey: `p/${i + 1}.json`, variables: { title: `Hi #${i + 1}` } }),
    );
    lines[14] = "{broken"; // line 15
    lines[29] = JSON.stringify({ outputKey: 7 }); // line 30
    lines[44] = JSON.stringify({ outputKey: "p/1.json" }); // line 45: duplicate of line 1
    const file = await batchFile("sixty.jsonl", lines);
    const manifest = join(scratch, "sixty.manifest.json");
    const before = state.starts;
    state.max = 0;
    const out = await vid([
      "render-batch",
      project,
      "--batch",
      file,
      "--max-concurrent",
      "20",
      "--manifest",
      manifest,
    ]);
    assert.equal(out.code, 1, out.stderr);
    assert.match(out.stdout, /^57 started, 0 already started, 3 failed to start, 0 skipped\n/);
    assert.equal(out.stdout.trim().split("\n").length, 61); // summary + one row per line
    assert.equal(state.starts - before, 57);
    assert.ok(state.max <= 20, `${state.max} start calls in flight at once`);
    assert.ok(state.max >= 2, `the starts ran one at a time (${state.max})`);

    const rows: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
    assert.deepEqual(rows.map((r) => r.line), Array.from({ length: 60 }, (_, i) => i + 1));
    assert.deepEqual(
      rows.filter((r) => r.status === "failed-to-start").map((r) => r.line),
      [15, 30, 45],
    );

    const sfnOptions = { endpoint: sfn.endpoint, region: REGION, credentials: S3_CREDENTIALS };
    let progress = await getBatchProgress({ rows, sfn: sfnOptions, s3: false });
    for (let i = 0; i < 60 && !progress.done; i++) {
      // Each poll reads every row's execution: not more often than once a second.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      progress = await getBatchProgress({ rows, sfn: sfnOptions, s3: false });
    }
    assert.equal(progress.succeeded, 57, JSON.stringify(progress.rows.find((r) => r.errors[0])));
    const outputs = await keys("p/");
    assert.equal(outputs.length, 57);
    for (const line of [1, 2, 29, 46, 60]) {
      assert.deepEqual(JSON.parse(await readObject(`p/${line}.json`)), {
        variables: { title: `Hi #${line}` },
      });
    }

    const cli = await vid(["progress", "--manifest", manifest, "--json"]);
    assert.equal(cli.code, 1, cli.stderr); // every execution succeeded, but 3 rows never started
    const report = JSON.parse(cli.stdout);
    assert.equal(report.outcome, "failed");
    assert.equal(report.ok, false);
    assert.equal(report.total, 60);
    assert.equal(report.executions, 57);
    assert.equal(report.succeeded, 57);
    assert.equal(report.notStarted, 3);
    assert.equal(report.done, true);
    assert.equal(report.rows[14].status, "failed-to-start");
    assert.match(report.rows[14].errors[0], /^line 15: not valid JSON/);
    assert.equal(report.rows[0].outputLocation, `s3://${LOCAL_BUCKET}/p/1.json`);
    const human = await vid(["progress", "--manifest", manifest]);
    assert.match(
      human.stdout,
      /^batch: 60 rows, 57 executions: 57 succeeded, 0 running, 0 failed; 3 rows not started;/,
    );

    const again = await vid(["render-batch", project, "--batch", file, "--json"]);
    assert.equal(again.code, 1, again.stderr);
    const rerun: BatchManifestRow[] = JSON.parse(again.stdout);
    assert.equal(state.starts - before, 57); // no StartExecution at all
    assert.equal(rerun.filter((r) => r.status === "already-started").length, 57);
    for (const [i, row] of rerun.entries()) {
      assert.equal(row.executionArn, rows[i].executionArn, `line ${row.line}`);
    }
  });

  /** Polls the manifest's rows until no execution runs. */
  const settle = async (rows: BatchManifestRow[]) => {
    const sfnOptions = { endpoint: sfn.endpoint, region: REGION, credentials: S3_CREDENTIALS };
    for (let i = 0; i < 200; i++) {
      const progress = await getBatchProgress({ rows, sfn: sfnOptions, s3: false });
      if (progress.done) return progress;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error("the batch never settled");
  };

  it("once the executions' history is gone, a rerun finds the outputs the same rows rendered: already-rendered, nothing started; a changed row, or --rerun all, renders", async () => {
    const rowsOf = (second: string) => [
      JSON.stringify({ outputKey: "h/1.json", variables: { title: "one" } }),
      JSON.stringify({ outputKey: "h/2.json", variables: { title: second } }),
    ];
    const file = await batchFile("history.jsonl", rowsOf("two"));
    const manifest = join(scratch, "history.manifest.json");
    const first = await vid(["render-batch", project, "--batch", file, "--manifest", manifest]);
    assert.equal(first.code, 0, first.stderr);
    const started: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
    assert.deepEqual((await settle(started)).rows.map((r) => r.status), ["succeeded", "succeeded"]);

    // A workflow that knows none of their executions, as a restarted stack's.
    const fresh = sfn.createStateMachine(
      "vid-render-fresh",
      stateMachineDefinition({ functionArn: `arn:aws:lambda:${REGION}:0:function:vid-render` }),
    );
    const gone = { ...env, VID_LAMBDA_STATE_MACHINE_ARN: fresh };
    const before = state.starts;
    const again = await runVid(
      ["lambda", "render-batch", project, "--batch", file, "--manifest", manifest],
      { env: gone },
    );
    assert.equal(again.code, 0, again.stderr);
    assert.match(
      again.stdout,
      /^0 started, 0 already started, 2 already rendered, 0 failed to start, 0 skipped\n/,
    );
    assert.equal(state.starts, before, "nothing rendered again");
    const found: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
    assert.deepEqual(found.map((r) => [r.status, r.executionArn, r.renderId]), [
      ["already-rendered", null, started[0].renderId],
      ["already-rendered", null, started[1].renderId],
    ]);
    const progress = await runVid(["lambda", "progress", "--manifest", manifest, "--json"], {
      env: gone,
    });
    assert.equal(progress.code, 0, progress.stdout + progress.stderr);
    const report = JSON.parse(progress.stdout);
    assert.deepEqual(
      report.rows.map((
        r: { status: string; outputLocation?: string },
      ) => [r.status, r.outputLocation]),
      [["succeeded", `s3://${LOCAL_BUCKET}/h/1.json`], [
        "succeeded",
        `s3://${LOCAL_BUCKET}/h/2.json`,
      ]],
    );

    // Row 2's inputs changed: the object there came from other inputs, so it renders.
    const changed = await batchFile("history.jsonl", rowsOf("two, changed"));
    const partly = await runVid(["lambda", "render-batch", project, "--batch", changed, "--json"], {
      env: gone,
    });
    assert.equal(partly.code, 0, partly.stderr);
    assert.deepEqual(statuses(JSON.parse(partly.stdout)), [[1, "already-rendered"], [
      2,
      "started",
    ]]);
    assert.equal(state.starts - before, 1);
    // --rerun all renders what is there again (row 2 already runs in this workflow).
    const all = await runVid(
      ["lambda", "render-batch", project, "--batch", changed, "--rerun", "all", "--json"],
      { env: gone },
    );
    assert.equal(all.code, 0, all.stderr);
    assert.equal(JSON.parse(all.stdout)[0].status, "started");
  });

  it("a rerun starts failed rows again as attempt -a2, -a3 (deterministic); succeeded rows are left alone; --rerun none / all", async () => {
    const file = await batchFile("retry.jsonl", [
      JSON.stringify({ outputKey: "r/ok-1.json", variables: { title: "one" } }),
      JSON.stringify({ outputKey: "r/boom.json", variables: { title: "boom" } }),
      JSON.stringify({ outputKey: "r/ok-2.json", variables: { title: "two" } }),
    ]);
    const manifest = join(scratch, "retry.manifest.json");
    const run = async (...extra: string[]) => {
      const before = state.starts;
      const out = await vid([
        "render-batch",
        project,
        "--batch",
        file,
        "--manifest",
        manifest,
        ...extra,
      ]);
      assert.equal(out.code, 0, out.stderr);
      const rows: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
      return { out, rows, starts: state.starts - before, progress: await settle(rows) };
    };

    const first = await run();
    assert.match(first.out.stdout, /^3 started, 0 already started, 0 failed to start, 0 skipped\n/);
    assert.deepEqual(first.progress.rows.map((r) => r.status), [
      "succeeded",
      "failed",
      "succeeded",
    ]);
    const base = first.rows[1].renderId!;
    assert.match(base, /^b-[0-9a-f]{40}$/);
    assert.equal(first.rows[1].attempt, 1);
    const failed = await vid(["progress", "--manifest", manifest, "--json"]);
    assert.equal(failed.code, 1, "a failed row: exit 1");
    const report = JSON.parse(failed.stdout);
    assert.equal(report.outcome, "failed");
    // A failed chunk's error reads as a sentence, not as Lambda's escaped JSON.
    assert.ok(report.rows[1].errors.length > 0);
    for (const e of report.rows[1].errors) assert.doesNotMatch(e, /errorType|\\"/);
    // The workflow retried the failing chunk: the row says so, as `progress <id>` does.
    const retried = report.rows[1].retries as {
      index?: number;
      attempts: number;
      errors: string[];
    }[];
    assert.ok(retried.length > 0, JSON.stringify(report.rows[1]));
    assert.ok(retried[0].attempts >= 2, JSON.stringify(retried));
    assert.match(retried[0].errors[0], /the page threw for "boom"/);
    assert.deepEqual(report.rows[0].retries, []);
    const failedText = await vid(["progress", "--manifest", manifest]);
    assert.match(
      failedText.stdout,
      /^2 r\/boom\.json failed .*; chunk \d+ attempt \d+ \(retried after .*the page threw for "boom"/m,
    );

    const second = await run();
    assert.equal(second.starts, 1, "only the failed row starts");
    assert.match(
      second.out.stdout,
      /^1 started \(1 as a new attempt after a failure\), 2 already started, 0 failed to start, 0 skipped\n/,
    );
    assert.match(
      second.out.stdout,
      new RegExp(`\\n2 r/boom\\.json \\S+:${base}-a2 started \\(attempt 2\\)\\n`),
    );
    assert.deepEqual(second.rows.map((r) => [r.status, r.attempt, r.renderId]), [
      ["already-started", 1, first.rows[0].renderId],
      ["started", 2, `${base}-a2`],
      ["already-started", 1, first.rows[2].renderId],
    ]);
    assert.equal(second.rows[0].executionArn, first.rows[0].executionArn);

    const none = await run("--rerun", "none");
    assert.equal(none.starts, 0);
    assert.deepEqual(none.rows.map((r) => [r.status, r.attempt]), [
      ["already-started", 1],
      ["already-started", 2],
      ["already-started", 1],
    ]);

    const third = await run();
    assert.equal(third.starts, 1);
    assert.equal(third.rows[1].renderId, `${base}-a3`);

    const all = await run("--rerun", "all");
    assert.equal(all.starts, 3, "every row renders again");
    assert.deepEqual(all.rows.map((r) => r.attempt), [2, 4, 2]);
    assert.deepEqual(all.progress.rows.map((r) => r.status), ["succeeded", "failed", "succeeded"]);
  });

  it("progress --manifest: exit 3 while a row runs; cancel --manifest aborts it (exit 1); the rerun's new attempt succeeds (exit 0)", async () => {
    const file = await batchFile("hold.jsonl", [
      JSON.stringify({ outputKey: "h/fast.json", variables: { title: "fast" } }),
      JSON.stringify({ outputKey: "h/held.json", variables: { title: "hold" } }),
      "",
    ]);
    const manifest = join(scratch, "hold.manifest.json");
    const started = await vid(["render-batch", project, "--batch", file, "--manifest", manifest]);
    assert.equal(started.code, 0, started.stderr);
    const firstManifest = join(scratch, "hold.first.manifest.json");
    await Deno.copyFile(manifest, firstManifest);
    // The held row's chunk waits in `held` (the stand-in plans 3 frames: one chunk) and the
    // fast row has succeeded, as cancel expects. (Waiting for 3 held chunks ran out its 5 s.)
    const sfnOptions = { endpoint: sfn.endpoint, region: REGION, credentials: S3_CREDENTIALS };
    const startedRows: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
    await waitFor(
      "the held row's chunk to be held and the fast row to succeed",
      async () =>
        held.length > 0 &&
        (await getBatchProgress({ rows: startedRows, sfn: sfnOptions, s3: false })).rows[0]
            .status === "succeeded",
      { timeoutMs: 20_000, intervalMs: 50 },
    );
    // A running render has no output yet: download says so and writes nothing. These
    // commands only read, while the row is held: they run at once.
    const heldRow: BatchManifestRow = JSON.parse(await Deno.readTextFile(manifest))[1];
    const target = join(scratch, "held.json");
    const [running, early, nowhere, neither] = await Promise.all([
      vid(["progress", "--manifest", manifest, "--json"]),
      vid(["download", heldRow.renderId!, "-o", target]),
      vid(["download", heldRow.renderId!, "-o", join(scratch, "no", "x.json")]),
      vid(["download", heldRow.renderId!]),
    ]);
    assert.equal(running.code, 3, running.stderr);
    assert.equal(JSON.parse(running.stdout).outcome, "running");
    assert.equal(early.code, 1);
    assert.match(early.stderr, /render b-[0-9a-f]{40} is still running; wait for it/);
    await assert.rejects(Deno.stat(target));
    assert.equal(nowhere.code, 1);
    assert.match(nowhere.stderr, /the folder .*\/no does not exist; create it or pass another -o/);
    assert.equal(neither.code, 2);

    const cancel = await vid(["cancel", "--manifest", manifest, "--json"]);
    assert.equal(cancel.code, 0, cancel.stderr);
    const results = JSON.parse(cancel.stdout).results;
    assert.deepEqual(
      results.map((r: { line: number; cancelled: boolean }) => [r.line, r.cancelled]),
      [
        [1, false],
        [2, true],
      ],
    );
    assert.equal(results[1].status, "aborted");
    const again = await vid(["cancel", "--manifest", manifest]);
    assert.match(again.stdout, /^1 \S+ already succeeded\n2 \S+ already aborted\n/);
    const aborted = await vid(["progress", "--manifest", manifest]);
    assert.equal(aborted.code, 1);
    assert.match(aborted.stdout, /\n2 h\/held\.json aborted /);
    while (held.length > 0) held.shift()!();

    // The aborted row starts again as attempt 2; the blank line (row 3) does not count.
    const holdReleased = setInterval(() => {
      while (held.length > 0) held.shift()!();
    }, 20);
    try {
      const rerun = await vid(["render-batch", project, "--batch", file, "--manifest", manifest]);
      assert.equal(rerun.code, 0, rerun.stderr);
      assert.match(
        rerun.stdout,
        /^1 started \(1 as a new attempt after a failure\), 1 already started/,
      );
      await settle(JSON.parse(await Deno.readTextFile(manifest)));
    } finally {
      clearInterval(holdReleased);
    }
    // The first run's manifest names the aborted attempt: progress follows the row to its
    // later attempt.
    const [done, old] = await Promise.all([
      vid(["progress", "--manifest", manifest]),
      vid(["progress", "--manifest", firstManifest]),
    ]);
    assert.equal(done.code, 0, done.stdout);
    assert.match(done.stdout, /\n2 h\/held\.json succeeded \(attempt 2\) /);
    assert.equal(old.code, 0, old.stdout);
    assert.match(old.stdout, /\n2 h\/held\.json succeeded \(attempt 2\) /);
  });

  it("an unreachable stack: progress (--manifest or one render) exits 4 with the hint; an unknown render is said as download says it; render-batch stops before any row, with one message", async () => {
    const file = await batchFile("down.jsonl", [
      JSON.stringify({ outputKey: "x/1.json" }),
      JSON.stringify({ outputKey: "x/2.json" }),
      JSON.stringify({ outputKey: "x/3.json" }),
    ]);
    const manifest = join(scratch, "retry.manifest.json"); // from an earlier test
    const down = { ...env, VID_SFN_ENDPOINT: "http://127.0.0.1:9" };
    // An id the workflow does not know: download's words, in all three forms, and 4 as a
    // manifest row that cannot be read.
    const unknownArn = stateMachineArn.replace(":stateMachine:", ":execution:") + ":r-nosuch";
    const noSuch = /^error: no render r-nosuch in this workflow \(.*\): check the render id/m;
    const rowManifest = join(scratch, "nosuch.manifest.json");
    await Deno.writeTextFile(
      rowManifest,
      JSON.stringify([{
        line: 1,
        outputKey: "x/nosuch.json",
        status: "started",
        executionArn: unknownArn,
        error: null,
      }]),
    );
    const before = state.starts;
    // Independent commands: they run at once.
    const [progress, json, one, progressOne, progressJsonOut, download, rows, batch] = await Promise
      .all([
        runVid(["lambda", "progress", "--manifest", manifest], { env: down }),
        runVid(["lambda", "progress", "--manifest", manifest, "--json"], { env: down }),
        runVid(["lambda", "progress", "r-any"], { env: down }),
        vid(["progress", "r-nosuch"]),
        vid(["progress", unknownArn, "--json"]),
        vid(["download", "r-nosuch", "--url"]),
        vid(["progress", "--manifest", rowManifest]),
        runVid(["lambda", "render-batch", project, "--batch", file], { env: down }),
      ]);
    assert.equal(progress.code, 4, progress.stdout + progress.stderr);
    assert.match(
      progress.stderr,
      /cannot reach the stack \(.*VID_SFN_ENDPOINT=http:\/\/127\.0\.0\.1:9\)/,
    );
    assert.doesNotMatch(progress.stdout, /unknown|done/);
    assert.equal(json.code, 4);
    assert.equal(JSON.parse(json.stdout).ok, false);
    // One render: the same code and hint as the manifest form.
    assert.equal(one.code, 4, one.stdout + one.stderr);
    assert.match(
      one.stderr,
      /cannot reach the stack \(.*VID_SFN_ENDPOINT=http:\/\/127\.0\.0\.1:9\)/,
    );

    assert.equal(progressOne.code, 4, progressOne.stdout + progressOne.stderr);
    assert.match(progressOne.stderr, noSuch);
    assert.doesNotMatch(progressOne.stderr, /Execution Does Not Exist/);
    assert.equal(progressJsonOut.code, 4);
    assert.match(JSON.parse(progressJsonOut.stdout).error.message, /^no render r-nosuch /);
    assert.match(download.stderr, noSuch);
    assert.equal(rows.code, 4, rows.stdout + rows.stderr);
    assert.match(rows.stdout, /^ {2}no render r-nosuch in this workflow/m);
    assert.doesNotMatch(rows.stdout, /Execution Does Not Exist/);

    assert.equal(batch.code, 1);
    assert.equal(batch.stdout, "");
    assert.equal(batch.stderr.match(/ECONNREFUSED/g)?.length, 1, batch.stderr);
    assert.match(batch.stderr, /is `vid lambda local` still running/);
    assert.equal(state.starts, before);
  });

  it("render --site-id: the site's own composition checks the variables (warning, or --strict-variables), projectDir optional, a mismatch said; the throttle warning", async () => {
    const created = await vid(["sites", "create", project]);
    assert.equal(created.code, 0, created.stderr);
    const siteId = created.stdout.trim();
    const before = state.starts;
    const warned = await vid([
      "render",
      "--site-id",
      siteId,
      "--variables",
      '{"title": 5, "extra": "x"}',
      "--chunk-size",
      "10",
      "--reserved-concurrency",
      "2",
      "--output-key",
      "site/warned.json",
    ]);
    assert.equal(warned.code, 0, warned.stderr);
    assert.match(warned.stderr, /^warning: "title" \(string\) expects a string, got 5$/m);
    assert.match(warned.stderr, /^warning: "extra" is not declared by the composition/m);
    // 90 frames in chunks of 10, capped by 3 grid cells: 3 chunks, more than 2 instances.
    assert.match(
      warned.stderr,
      /^warning: reserved concurrency of the render function \(2\) is lower than the render's 3 chunks/m,
    );
    assert.equal(state.starts - before, 1);

    // These two start nothing, whatever they do: they run at once.
    const [strict, neither] = await Promise.all([
      vid([
        "render",
        "--site-id",
        siteId,
        "--variables",
        '{"title": 5}',
        "--strict-variables",
        "--json",
      ]),
      vid(["render"]),
    ]);
    assert.equal(neither.code, 2);
    assert.match(neither.stderr, /pass the project directory, or --site-id/);
    assert.equal(strict.code, 1);
    const error = JSON.parse(strict.stdout).error;
    assert.equal(error.name, "StrictVariablesError");
    assert.equal(error.field, "variables.title");
    assert.equal(state.starts - before, 1, "nothing started");

    // The project changed since the upload: the uploaded site renders, and a warning says so.
    const changed = await makeProject(HTML.replace("<div></div>", "<div>changed</div>"));
    try {
      const mismatch = await vid(["render", changed, "--site-id", siteId]);
      assert.equal(mismatch.code, 0, mismatch.stderr);
      assert.match(
        mismatch.stderr,
        new RegExp(`packages as site-[0-9a-f]{16}, not ${siteId}: rendering the uploaded site`),
      );
    } finally {
      await Deno.remove(changed, { recursive: true });
    }
  });

  it("render-batch --site-id --dry-run checks the rows against the site's declarations (read from the bucket); without a bucket it says they are not checked", async () => {
    const created = await vid(["sites", "create", project]);
    assert.equal(created.code, 0, created.stderr);
    const siteId = created.stdout.trim();
    const file = await batchFile("site-dry.jsonl", [
      JSON.stringify({ outputKey: "dry/a.mp4", variables: { title: "Declared" } }),
      JSON.stringify({ outputKey: "dry/b.mp4", variables: { title: 5 } }),
    ]);
    const before = state.starts;
    const args = ["render-batch", "--site-id", siteId, "--batch", file, "--dry-run"];
    const [strict, warned, unknown] = await Promise.all([
      vid([...args, "--strict-variables", "--json"]),
      vid(args),
      // No bucket to read the site from: the variables are not checked, and that is said.
      runVid(["lambda", ...args, "--strict-variables"], {
        env: { PATH: Deno.env.get("PATH") ?? "", HOME: Deno.env.get("HOME") ?? "" },
      }),
    ]);
    assert.equal(strict.code, 1, strict.stderr); // row 2 only
    assert.deepEqual(statuses(JSON.parse(strict.stdout)), [[1, "would-invoke"], [
      2,
      "failed-to-start",
    ]]);
    assert.doesNotMatch(strict.stdout + strict.stderr, /not declared/);
    assert.equal(warned.code, 0, warned.stderr);
    assert.match(warned.stdout, /^2 would invoke, 0 failed to start, 0 skipped, 1 with warnings /m);
    assert.match(warned.stderr, /^warning: line 2: "title" \(string\) expects a string, got 5$/m);
    assert.doesNotMatch(warned.stderr, /not declared/);
    assert.equal(unknown.code, 0, unknown.stderr);
    assert.match(unknown.stdout, /^2 would invoke/m);
    assert.match(unknown.stderr, /^warning: variables are not checked: .*pass --bucket/m);
    assert.equal(state.starts, before, "a dry run starts nothing");
  });

  it("errors say what to do, before any execution starts: unknown site id, missing bucket, no credentials, missing state machine", async () => {
    const before = state.starts;
    const [bucketFile, machineFile] = await Promise.all([
      batchFile("b.jsonl", ['{"outputKey":"b.json"}']),
      batchFile("m.jsonl", ['{"outputKey":"m.json"}']),
    ]);
    // Independent commands: they run at once.
    const [site, badId, bucket, bucketBatch, listNone, noCredentials, machine] = await Promise.all([
      vid(["render", "--site-id", "site-00000000deadbeef", "--json"]),
      vid(["render", "--site-id", "../etc"]),
      vid(["render", project, "--bucket", "no-such-bucket"]),
      vid(["render-batch", project, "--batch", bucketFile, "--bucket", "no-such-bucket"]),
      vid(["sites", "list", "--bucket", "no-such-bucket"]),
      runVid(["lambda", "render", project], {
        env: {
          ...env,
          AWS_ACCESS_KEY_ID: "",
          AWS_SECRET_ACCESS_KEY: "",
          HOME: scratch,
          AWS_CONFIG_FILE: join(scratch, "none"),
          AWS_SHARED_CREDENTIALS_FILE: join(scratch, "none"),
          AWS_EC2_METADATA_DISABLED: "true", // no instance-metadata probe to wait for
        },
      }),
      vid([
        "render-batch",
        project,
        "--batch",
        machineFile,
        "--state-machine-arn",
        stateMachineArn.replace(/vid-render$/, "nope"),
      ]),
    ]);
    assert.equal(site.code, 1);
    const siteError = JSON.parse(site.stdout).error;
    assert.equal(siteError.field, "siteId");
    assert.match(
      siteError.message,
      /site site-00000000deadbeef is not in the bucket vid-renders.*vid lambda sites create/,
    );
    assert.equal(badId.code, 1);
    assert.match(badId.stderr, /siteId: must be a site id such as site-0123456789abcdef/);

    assert.equal(bucket.code, 1);
    assert.match(
      bucket.stderr,
      /^error: the bucket no-such-bucket does not exist in region us-east-1: pass --bucket \(env VID_LAMBDA_BUCKET\) the RenderBucketName/m,
    );
    assert.equal(bucketBatch.code, 1);
    assert.match(bucketBatch.stderr, /the bucket no-such-bucket does not exist/);
    assert.match(listNone.stderr, /the bucket no-such-bucket does not exist/);

    assert.equal(noCredentials.code, 1);
    assert.match(noCredentials.stderr, /^error: no AWS credentials found: set AWS_ACCESS_KEY_ID/m);
    assert.doesNotMatch(noCredentials.stderr, /Could not load credentials from any providers/);

    assert.equal(machine.code, 1);
    assert.match(machine.stderr, /stateMachine:nope does not exist: pass --state-machine-arn/);
    assert.equal(state.starts, before, "no execution started");
  });

  it("renderToLambda checks variables against the site loaded from the bucket (SDK)", async () => {
    const s3Options = { endpoint: s3.endpoint, forcePathStyle: true, credentials: S3_CREDENTIALS };
    const uploaded = await deploySite({
      projectDir: project,
      bucketName: LOCAL_BUCKET,
      s3: s3Options,
    });
    const site = await loadSite(uploaded.siteId, LOCAL_BUCKET, { s3: s3Options });
    assert.deepEqual(site.declarations.map((d) => d.id), ["title"]);
    const target = {
      bucketName: LOCAL_BUCKET,
      stateMachineArn,
      outputKey: "sdk/strict.json",
      sfn: { endpoint: sfn.endpoint, region: REGION, credentials: S3_CREDENTIALS },
    };
    await assert.rejects(
      renderToLambda({
        ...target,
        siteHandle: site,
        config: { variables: { title: 5 } },
        strictVariables: true,
      }),
      /"title" \(string\) expects a string, got 5/,
    );
    // A bare handle (no declarations) with `s3`: the declarations are read from the bucket.
    await assert.rejects(
      renderToLambda({
        ...target,
        siteHandle: siteHandleFromId(uploaded.siteId, LOCAL_BUCKET),
        s3: s3Options,
        config: { variables: { nope: 1 } },
        strictVariables: true,
      }),
      /"nope" is not declared/,
    );
    const warnings: string[] = [];
    await renderToLambda({
      ...target,
      siteHandle: uploaded,
      config: { variables: { title: 5 } },
      onWarning: (m) => warnings.push(m),
    });
    assert.deepEqual(warnings, ['"title" (string) expects a string, got 5']);
  });

  it("throttled start calls are retried with backoff; every row starts", async () => {
    const file = await batchFile(
      "throttle.jsonl",
      Array.from({ length: 12 }, (_, i) => JSON.stringify({ outputKey: `t/${i}.mp4` })),
    );
    const before = { starts: state.starts, throttled: state.throttled };
    state.throttleNext = 5;
    state.startDelayMs = 0;
    try {
      const out = await vid(["render-batch", project, "--batch", file, "--max-concurrent", "3"]);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stdout, /^12 started, 0 already started, 0 failed to start, 0 skipped\n/);
      assert.equal(state.throttled - before.throttled, 5);
      assert.equal(state.starts - before.starts, 12 + 5); // each throttled call retried once
      assert.match(out.stderr, /^5 throttled start call\(s\) were retried with backoff$/m);
    } finally {
      state.throttleNext = 0;
      state.startDelayMs = 100;
    }
  });

  it("a row throttled past the retry budget fails to start, naming throttling (SDK)", async () => {
    const file = await batchFile("budget.jsonl", [
      JSON.stringify({ outputKey: "u/ok-1.mp4" }),
      JSON.stringify({ outputKey: "u/always-throttled.mp4" }),
      JSON.stringify({ outputKey: "u/ok-2.mp4" }),
    ]);
    state.throttleKeys.add("u/always-throttled.mp4");
    const retried: number[] = [];
    try {
      const rows = await renderBatch({
        batchFile: file,
        siteHandle: siteHandleFromId("site-0123456789abcdef", LOCAL_BUCKET),
        bucketName: LOCAL_BUCKET,
        stateMachineArn,
        sfn: { endpoint: env.VID_SFN_ENDPOINT, region: REGION, credentials: S3_CREDENTIALS },
        startAttempts: 4,
        retryBaseMs: 20,
        onRetry: (line) => retried.push(line),
      });
      assert.deepEqual(statuses(rows), [[1, "started"], [2, "failed-to-start"], [3, "started"]]);
      assert.match(
        rows[1].error!,
        /^line 2: the start call was throttled on all 4 attempts \(ThrottlingException: Rate exceeded\); lower --max-concurrent/,
      );
      assert.equal(state.byKey.get("u/always-throttled.mp4"), 4);
      assert.deepEqual(retried, [2, 2, 2]);
    } finally {
      state.throttleKeys.clear();
    }
  });

  it("a dropped start call is retried; one that started anyway is started, not already-started (SDK)", async () => {
    const file = await batchFile("drops.jsonl", [
      JSON.stringify({ outputKey: "d/1.mp4" }),
      JSON.stringify({ outputKey: "d/2.mp4" }),
      JSON.stringify({ outputKey: "d/3.mp4" }),
    ]);
    const before = state.starts;
    state.closeConnections = true;
    state.dropBefore = 1; // never reaches Step Functions
    state.dropAfter = 1; // starts the execution, but the answer is lost
    const retried: string[] = [];
    try {
      const rows = await renderBatch({
        batchFile: file,
        siteHandle: siteHandleFromId("site-0123456789abcdef", LOCAL_BUCKET),
        bucketName: LOCAL_BUCKET,
        stateMachineArn,
        sfn: { endpoint: env.VID_SFN_ENDPOINT, region: REGION, credentials: S3_CREDENTIALS },
        maxConcurrent: 1,
        retryBaseMs: 20,
        onRetry: (_line, _attempt, error) => retried.push(error.message),
      });
      assert.deepEqual(statuses(rows), [[1, "started"], [2, "started"], [3, "started"]]);
      assert.ok(rows.every((r) => r.executionArn?.includes(":execution:vid-render:b-")));
      assert.equal(retried.length, 2, retried.join("; "));
      assert.equal(state.starts - before, 3 + 1); // the lost answer's row is found, not restarted
    } finally {
      state.dropBefore = 0;
      state.dropAfter = 0;
      state.closeConnections = false;
    }
  });

  it("Ctrl-C: no new rows start, calls in flight finish, the manifest is still written; a rerun resumes", async () => {
    const ROWS = 16;
    const file = await batchFile(
      "interrupt.jsonl",
      // 2 at a time, each start answered after 400 ms: 16 rows take 3 s or more, and the
      // interrupt comes after the third start.
      Array.from({ length: ROWS }, (_, i) => JSON.stringify({ outputKey: `i/${i}.mp4` })),
    );
    const manifest = join(scratch, "interrupt.manifest.json");
    const before = state.starts;
    state.startDelayMs = 400;
    let rows: BatchManifestRow[];
    try {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          `${ROOT}cli.ts`,
          "lambda",
          "render-batch",
          project,
          "--batch",
          file,
          "--max-concurrent",
          "2",
          "--manifest",
          manifest,
          "--json",
        ],
        cwd: ROOT,
        env: { NO_COLOR: "1", ...env },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      for (let i = 0; i < 600 && state.starts - before < 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.ok(state.starts - before >= 3, "the batch never started");
      child.kill("SIGINT");
      const out = await child.output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 130, stderr);
      assert.match(stderr, /interrupted: starting no more rows/);
      assert.equal(state.inFlight, 0);
      rows = JSON.parse(await Deno.readTextFile(manifest));
      assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), rows);
    } finally {
      state.startDelayMs = 100;
    }
    assert.equal(rows.length, ROWS);
    const started = rows.filter((r) => r.status === "started").length;
    const notStarted = rows.filter((r) => r.status === "not-started");
    assert.equal(started + notStarted.length, ROWS);
    assert.equal(started, state.starts - before); // every call in flight was waited for
    assert.ok(started < ROWS && started >= 3, `${started} started`);
    assert.match(notStarted[0].error!, /interrupted before this row was started/);

    const resumed = await vid(["render-batch", project, "--batch", file, "--json"]);
    assert.equal(resumed.code, 0, resumed.stderr);
    const after: BatchManifestRow[] = JSON.parse(resumed.stdout);
    assert.equal(after.filter((r) => r.status === "already-started").length, started);
    assert.equal(after.filter((r) => r.status === "started").length, ROWS - started);
    assert.equal(state.starts - before, ROWS);
  });

  it("Ctrl-C while the site uploads, before the first row: exit 130, every row not-started in the manifest and on stdout", async () => {
    const file = await batchFile(
      "early.jsonl",
      Array.from({ length: 3 }, (_, i) => JSON.stringify({ outputKey: `early/${i}.mp4` })),
    );
    const manifest = join(scratch, "early.manifest.json");
    // A project of its own (a site not yet in the bucket) behind an S3 proxy that holds
    // every answer back: the interrupt lands during the upload.
    const fresh = await makeProject(HTML.replace("<div></div>", "<div>early</div>"));
    const s3State: ProxyState = {
      starts: 0,
      inFlight: 0,
      max: 0,
      throttleNext: 0,
      throttleKeys: new Set(),
      throttled: 0,
      byKey: new Map(),
      startDelayMs: 0,
      dropBefore: 0,
      dropAfter: 0,
      closeConnections: false,
      requests: 0,
      allDelayMs: 300,
    };
    const s3Proxy = await startProxy(new URL(s3.endpoint), s3State);
    const before = state.starts;
    try {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          `${ROOT}cli.ts`,
          "lambda",
          "render-batch",
          fresh,
          "--batch",
          file,
          "--manifest",
          manifest,
          "--json",
        ],
        cwd: ROOT,
        env: { NO_COLOR: "1", ...env, VID_S3_ENDPOINT: s3Proxy.endpoint },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      for (let i = 0; i < 600 && (s3State.requests ?? 0) < 1; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      assert.ok((s3State.requests ?? 0) >= 1, "the upload never began");
      child.kill("SIGINT");
      const out = await child.output();
      const stderr = new TextDecoder().decode(out.stderr);
      assert.equal(out.code, 130, stderr);
      assert.match(stderr, /interrupted: starting no more rows/);
      const rows: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
      assert.deepEqual(JSON.parse(new TextDecoder().decode(out.stdout)), rows);
      assert.deepEqual(statuses(rows), [[1, "not-started"], [2, "not-started"], [
        3,
        "not-started",
      ]]);
      assert.match(rows[0].error!, /interrupted before this row was started/);
      assert.equal(state.starts, before, "no row started");
    } finally {
      await new Promise((resolve) => s3Proxy.server.close(resolve));
      await Deno.remove(fresh, { recursive: true });
    }
  });
});

describe("vid lambda render-batch with the real worker (local stack)", () => {
  /** Row colours: each row's video is filled with its own. */
  const COLOURS = Array.from({ length: 4 }, (_, i) => {
    const r = (i * 53) % 256;
    const g = (i * 97 + 60) % 256;
    const b = (i * 151 + 120) % 256;
    return [r, g, b];
  });
  const hex = (c: number[]) => `#${c.map((v) => v.toString(16).padStart(2, "0")).join("")}`;
  /**
   * 320x180, 0.3 s: 3 frames at 10 fps, filled with the variable `fill`. A row whose `pic`
   * names a file the project lacks fails for real: the page requests it, the worker's
   * project server answers 404, and the chunk fails with the missing file's name.
   */
  const PERSONAL = compositionHtml(`<div id="fill"></div>`, {
    id: "batch-real",
    duration: 0.3,
    variables: [
      { id: "fill", type: "color", label: "Fill", default: "#000000" },
      { id: "pic", type: "string", label: "Picture", default: "" },
    ],
    head: `<style>#fill { position: absolute; inset: 0; }</style>`,
    after: `<script>
const v = window.__vid.getVariables();
document.getElementById("fill").style.background = String(v.fill);
if (v.pic) {
  const img = document.createElement("img");
  img.src = String(v.pic);
  document.body.append(img);
}
</script>`,
  });

  let stack: LocalStack;
  let project: string;
  let scratch: string;
  let s3Client: S3Client;

  before(async () => {
    [stack, project, scratch] = await Promise.all([
      startLocalStack(),
      makeProject(PERSONAL),
      Deno.makeTempDir({ prefix: "vid-lambda-batch-real-" }),
    ]);
    s3Client = new S3Client({
      region: stack.region,
      endpoint: stack.s3Endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
  });

  after(async () => {
    s3Client?.destroy();
    await stack?.close();
    if (project) await Deno.remove(project, { recursive: true });
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  it("8 lines, 3 broken, 1 failing for real: 4 videos in their row's colour; the rerun starts only the failed row, as attempt 2; the batch file and manifest inside the project are not uploaded; download, sites list / rm", async () => {
    const lines = COLOURS.map((c, i) =>
      JSON.stringify({ outputKey: `people/${i + 1}.mp4`, variables: { fill: hex(c) } })
    );
    // Three broken lines (4, 6 and the last, 8) and one that renders and fails (7).
    lines.splice(3, 0, "{ not json");
    lines.splice(5, 0, JSON.stringify({ variables: { fill: "#ffffff" } }));
    lines.splice(
      6,
      0,
      JSON.stringify({
        outputKey: "people/pic.mp4",
        variables: { fill: "#102030", pic: "missing.png" },
      }),
    );
    lines.push(JSON.stringify({ outputKey: "people/last.mp4", variables: "not an object" }));
    assert.equal(lines.length, 8);
    // Kept inside the project: neither may change the site (or every row would start again).
    const file = join(project, "people.jsonl");
    await Deno.writeTextFile(file, lines.join("\n") + "\n");
    const manifest = join(project, "people.manifest.json");
    const batch = () =>
      runVid([
        "lambda",
        "render-batch",
        project,
        "--batch",
        file,
        "--fps",
        "10",
        "--manifest",
        manifest,
      ], { env: stack.env });
    const sfnOptions = {
      endpoint: stack.sfnEndpoint,
      region: stack.region,
      credentials: S3_CREDENTIALS,
    };
    const settle = async (rows: BatchManifestRow[]) => {
      let progress = await getBatchProgress({ rows, sfn: sfnOptions, s3: false });
      const deadline = performance.now() + 600_000;
      while (!progress.done && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        progress = await getBatchProgress({ rows, sfn: sfnOptions, s3: false });
      }
      return progress;
    };

    const t0 = performance.now();
    const out = await batch();
    assert.equal(out.code, 1, out.stderr); // some lines failed to start
    assert.match(out.stdout, /^5 started, 0 already started, 3 failed to start, 0 skipped\n/);
    const rows: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
    assert.equal(rows.length, 8); // one row per line
    assert.deepEqual(
      rows.filter((r) => r.status === "failed-to-start").map((r) => r.line),
      [4, 6, 8],
    );
    const progress = await settle(rows);
    console.log(
      `5 real renders through the local stack: ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    assert.equal(progress.succeeded, 4, JSON.stringify(progress.rows.filter((r) => r.errors[0])));
    assert.equal(progress.failed, 1);
    assert.equal(progress.rows[6].status, "failed");

    // The cost counts run time only: at most `concurrency` functions run at once, so the
    // renders' run time cannot exceed concurrency x the wall time. Counting the time tasks
    // waited for a free worker (with 5 renders on fewer workers) would.
    const wall = (performance.now() - t0) / 1000;
    let runSeconds = 0;
    for (const row of rows.filter((r) => r.executionArn)) {
      const p = await getRenderProgress({
        executionArn: row.executionArn!,
        sfn: sfnOptions,
        s3: false,
      });
      runSeconds += p.costEstimate.lambdaGbSeconds / (10240 / 1024);
    }
    assert.ok(
      runSeconds > 0 && runSeconds <= stack.concurrency * wall * 1.2,
      `${runSeconds.toFixed(1)} s of run time in ${
        wall.toFixed(1)
      } s on ${stack.concurrency} workers`,
    );

    // The failure says which file is missing, in the project's terms, not the worker's.
    const report = await runVid(["lambda", "progress", "--manifest", manifest, "--json"], {
      env: stack.env,
    });
    assert.equal(report.code, 1, report.stderr);
    const failedRow = JSON.parse(report.stdout).rows[6];
    const message = failedRow.errors.join("\n");
    assert.match(message, /missing\.png/);
    assert.doesNotMatch(message, /vid-sites|\/tmp\/|errorType/);
    // A file missing from the project fails every attempt alike: the workflow tries its
    // chunk once (it retried it twice, billing it three times).
    assert.deepEqual(failedRow.retries.map((r: { attempts: number }) => r.attempts), [1]);

    const byLine = new Map(rows.map((r) => [r.line, r]));
    // The worker names the render on its output, for a rerun whose history is gone.
    const head = await s3Client.send(
      new HeadObjectCommand({ Bucket: stack.RenderBucketName, Key: byLine.get(1)!.outputKey! }),
    );
    assert.equal(head.Metadata?.[RENDER_ID_METADATA], byLine.get(1)!.renderId);
    const colourLines = rows.filter((r) => r.status === "started" && r.line !== 7);
    assert.equal(colourLines.length, 4);
    for (const [i, row] of colourLines.entries()) {
      const object = await s3Client.send(
        new GetObjectCommand({ Bucket: stack.RenderBucketName, Key: row.outputKey! }),
      );
      const path = join(scratch, `${i + 1}.mp4`);
      await Deno.writeFile(path, await object.Body!.transformToByteArray());
      const info = await probeVideo(path);
      assert.equal(info.frames, 3, row.outputKey!);
      assert.deepEqual([info.width, info.height], [320, 180]);
      const [pixel] = await pixelSeries(path, 160, 90);
      assert.ok(
        near(pixel, COLOURS[i], 12),
        `${row.outputKey}: ${rgb(pixel)}, want ${rgb(COLOURS[i])}`,
      );
    }

    // Fix nothing and run again: only the failed row starts, as attempt 2; the site is the
    // same one (the manifest now in the project was not uploaded).
    const again = await batch();
    assert.equal(again.code, 1, again.stderr);
    assert.match(
      again.stdout,
      /^1 started \(1 as a new attempt after a failure\), 4 already started, 3 failed to start, 0 skipped\n/,
    );
    const rerun: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
    assert.equal(rerun[6].status, "started");
    assert.equal(rerun[6].attempt, 2);
    assert.equal(rerun[6].renderId, `${byLine.get(7)!.renderId}-a2`);
    assert.match(rerun[6].executionArn!, /-a2$/);
    for (const line of [1, 2, 5]) {
      assert.equal(rerun[line - 1].executionArn, byLine.get(line)!.executionArn);
    }
    const second = await settle(rerun);
    assert.equal(second.rows[6].status, "failed");
    const human = await runVid(["lambda", "progress", "--manifest", manifest], { env: stack.env });
    assert.equal(human.code, 1);
    assert.match(human.stdout, /\n7 people\/pic\.mp4 failed \(attempt 2\) /);

    // Downloading an output: to a file (temp file, then rename), or as a presigned URL.
    const first = byLine.get(1)!;
    const saved = join(scratch, "downloaded.mp4");
    const download = await runVid(["lambda", "download", first.renderId!, "-o", saved], {
      env: stack.env,
    });
    assert.equal(download.code, 0, download.stderr);
    assert.equal(download.stdout.trim(), saved);
    const [pixel] = await pixelSeries(saved, 160, 90);
    assert.ok(near(pixel, COLOURS[0], 12), rgb(pixel));
    assert.deepEqual(
      (await Array.fromAsync(Deno.readDir(scratch))).filter((e) => e.name.endsWith(".part")),
      [],
    );
    const url = await runVid(["lambda", "download", first.executionArn!, "--url", "--json"], {
      env: stack.env,
    });
    assert.equal(url.code, 0, url.stderr);
    const signed = JSON.parse(url.stdout);
    assert.match(signed.url, /X-Amz-Signature=/);
    const fetched = new Uint8Array(await (await fetch(signed.url)).arrayBuffer());
    assert.deepEqual(fetched, await Deno.readFile(saved));
    const failedDownload = await runVid(
      ["lambda", "download", rerun[6].renderId!, "-o", join(scratch, "pic.mp4")],
      { env: stack.env },
    );
    assert.equal(failedDownload.code, 1);
    assert.match(failedDownload.stderr, /render b-[0-9a-f]{40}-a2 failed, so it has no output/);
    await assert.rejects(Deno.stat(join(scratch, "pic.mp4")));

    // One site for both runs; rm deletes it.
    const list = await runVid(["lambda", "sites", "list", "--json"], { env: stack.env });
    assert.equal(list.code, 0, list.stderr);
    const sites = JSON.parse(list.stdout).sites;
    assert.equal(sites.length, 1);
    assert.equal(sites[0].complete, true);
    assert.equal(sites[0].files, 1); // index.html only: no batch file, no manifest
    const rm = await runVid(["lambda", "sites", "rm", sites[0].siteId], { env: stack.env });
    assert.equal(rm.code, 0, rm.stderr);
    assert.match(rm.stdout, new RegExp(`^removed ${sites[0].siteId} \\(2 objects\\)`));
    const empty = await runVid(["lambda", "sites", "list", "--json"], { env: stack.env });
    assert.deepEqual(JSON.parse(empty.stdout).sites, []);
  });
});
