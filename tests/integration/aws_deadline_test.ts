/**
 * `vid lambda render-batch` against a Step Functions endpoint that accepts connections and
 * never answers (a real TCP listener on loopback; S3 is a real s3rver, so the site upload
 * goes through). The CLI runs as its own process: it must exit on its own naming the
 * endpoint as unreachable within the call deadline (`VID_AWS_CALL_TIMEOUT`), and a Ctrl-C
 * during the hang must end it within seconds with the manifest written. Every wait here
 * has a host-side deadline that kills the process, so a regression fails instead of hanging.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { join } from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import type { BatchManifestRow } from "../../src/batch/manifest.ts";
import {
  LOCAL_BUCKET,
  S3_CREDENTIALS,
  type S3Server,
  startS3Server,
} from "../../src/lambda/local/local_stack.ts";
import { compositionHtml, makeProject, ROOT } from "../helpers.ts";

const REGION = "us-east-1";
const STATE_MACHINE_ARN = `arn:aws:states:${REGION}:000000000000:stateMachine:vid-render`;

/** A listener that accepts every connection and never writes a byte. */
interface SilentEndpoint {
  url: string;
  /** Bytes of requests received (so a test knows a call is in flight). */
  received: () => number;
  close: () => Promise<void>;
}

async function silentEndpoint(): Promise<SilentEndpoint> {
  const sockets = new Set<net.Socket>();
  let received = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("data", (chunk) => received += chunk.length);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    received: () => received,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** The child's exit, or a kill and a failure after `ms` (the host's deadline). */
async function exitWithin(
  child: Deno.ChildProcess,
  ms: number,
): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
  const started = performance.now();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let late = false;
  timer = setTimeout(() => {
    late = true;
    child.kill("SIGKILL");
  }, ms);
  const out = await child.output();
  clearTimeout(timer);
  timer = undefined;
  const decoder = new TextDecoder();
  const result = {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
    ms: performance.now() - started,
  };
  assert.ok(!late, `still running after ${ms} ms, killed; stderr:\n${result.stderr}`);
  return result;
}

describe("render-batch against a Step Functions endpoint that never answers", () => {
  let s3: S3Server;
  let silent: SilentEndpoint;
  let project: string;
  let scratch: string;
  let env: Record<string, string>;

  before(async () => {
    [s3, silent, project, scratch] = await Promise.all([
      startS3Server(),
      silentEndpoint(),
      makeProject(compositionHtml(`<div></div>`, { id: "silent", duration: 1 })),
      Deno.makeTempDir({ prefix: "vid-aws-deadline-" }),
    ]);
    const client = new S3Client({
      region: REGION,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    await client.send(new CreateBucketCommand({ Bucket: LOCAL_BUCKET }));
    client.destroy();
    env = {
      NO_COLOR: "1",
      VID_LAMBDA_BUCKET: LOCAL_BUCKET,
      VID_LAMBDA_STATE_MACHINE_ARN: STATE_MACHINE_ARN,
      VID_S3_ENDPOINT: s3.endpoint,
      VID_SFN_ENDPOINT: silent.url,
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    };
  });

  after(async () => {
    await silent?.close();
    await s3?.close();
    if (project) await Deno.remove(project, { recursive: true });
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  const batch = async (name: string): Promise<string> => {
    const path = join(scratch, name);
    const rows = [0, 1, 2].map((i) => JSON.stringify({ outputKey: `${name}/${i}.mp4` }));
    await Deno.writeTextFile(path, rows.join("\n") + "\n");
    return path;
  };

  const spawn = (args: string[], extra: Record<string, string> = {}): Deno.ChildProcess =>
    new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}cli.ts`,
        "lambda",
        "render-batch",
        project,
        "--no-check",
        ...args,
      ],
      cwd: ROOT,
      env: { ...env, ...extra },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();

  it("exits 1 within the call deadline, naming the endpoint as unreachable", async () => {
    const file = await batch("deadline");
    const out = await exitWithin(spawn(["--batch", file], { VID_AWS_CALL_TIMEOUT: "2" }), 60_000);
    assert.equal(out.code, 1, out.stderr);
    assert.equal(out.stdout, "");
    assert.match(
      out.stderr,
      new RegExp(`${silent.url.replaceAll(".", "\\.")} is unreachable: no answer within 2 s`),
    );
  });

  it("Ctrl-C during the hang ends it within seconds: exit 130, every row not-started in the manifest", async () => {
    const file = await batch("interrupt");
    const manifest = join(scratch, "interrupt.manifest.json");
    // The default 30 s deadline: the interrupt, not the deadline, must end the call.
    const child = spawn(["--batch", file, "--manifest", manifest, "--json"]);
    const before = silent.received();
    for (let i = 0; i < 1200 && silent.received() === before; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    if (silent.received() === before) {
      child.kill("SIGKILL");
      await child.output();
      assert.fail("render-batch never called the Step Functions endpoint");
    }
    child.kill("SIGINT");
    const out = await exitWithin(child, 20_000);
    assert.equal(out.code, 130, out.stderr);
    assert.match(out.stderr, /interrupted: starting no more rows/);
    const rows: BatchManifestRow[] = JSON.parse(await Deno.readTextFile(manifest));
    assert.deepEqual(rows.map((r) => [r.line, r.status]), [
      [1, "not-started"],
      [2, "not-started"],
      [3, "not-started"],
    ]);
    assert.match(rows[0].error!, /interrupted before this row was started/);
    assert.deepEqual(JSON.parse(out.stdout), rows);
  });
});
