/**
 * The Lambda worker's chunk upload survives a connection reset in the middle of the body:
 * the worker's `uploadFile` against real s3rver behind a loopback TCP proxy that resets the
 * first upload's connection after part of the body went through. The SDK cannot retry a
 * stream body, so before each attempt opened the file afresh, one reset (`socket hang up`
 * on a fresh CI machine) failed the chunk and Step Functions rendered it again.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { CreateBucketCommand, GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { S3_CREDENTIALS, type S3Server, startS3Server, workerEnv } from "../s3_server.ts";

const BUCKET = "vid-upload-retry";

/**
 * A TCP proxy to `target` that, once, resets a connection after more than `cutAfter` bytes
 * of its request went through (only an upload body is that long); every other connection is
 * passed through whole. Counts the resets it made.
 */
function resettingProxy(target: number, cutAfter: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const open = new Set<Deno.Conn>();
  let resets = 0;
  const pipe = async (from: Deno.Conn, to: Deno.Conn, cut?: (bytes: number) => boolean) => {
    const buffer = new Uint8Array(16 * 1024);
    try {
      while (true) {
        const n = await from.read(buffer);
        if (n === null) break;
        await to.write(buffer.subarray(0, n));
        if (cut?.(n)) {
          resets++;
          // Closed with the client's bytes unread: the kernel answers with a reset.
          from.close();
          to.close();
          return;
        }
      }
    } catch {
      // the other side went away
    }
    await to.closeWrite().catch(() => {/* closed */});
  };
  const serving = (async () => {
    for await (const client of listener) {
      const upstream = await Deno.connect({ hostname: "127.0.0.1", port: target });
      open.add(client).add(upstream);
      let seen = 0;
      void pipe(client, upstream, (bytes) => {
        seen += bytes;
        return resets === 0 && seen > cutAfter;
      });
      void pipe(upstream, client);
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    resets: () => resets,
    async close(): Promise<void> {
      listener.close();
      for (const conn of open) {
        try {
          conn.close();
        } catch {
          // already closed
        }
      }
      await serving.catch(() => {});
    },
  };
}

/**
 * Runs the worker's `uploadFile` in a process of its own whose environment is the Lambda
 * worker's (its S3 connection and TMPDIR, which the worker reads from it): set in this
 * process, they would reach every other test file the parallel run shares it with (a render
 * of another file once got this file's TMPDIR after it was removed).
 */
async function uploadInWorkerEnv(env: Record<string, string>, file: string): Promise<void> {
  const code = `import { uploadFile } from ${
    JSON.stringify(import.meta.resolve("../../worker/s3.ts"))
  };
await uploadFile(${JSON.stringify(BUCKET)}, "chunks/r-1/chunk-0.mp4", ${
    JSON.stringify(file)
  }, "video/mp4");`;
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--ext=ts", code],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
}

describe("the Lambda worker's chunk upload", () => {
  let s3: S3Server;
  let proxy: ReturnType<typeof resettingProxy>;
  let tmp: string;
  let direct: S3Client;

  before(async () => {
    s3 = await startS3Server();
    tmp = await Deno.makeTempDir({ prefix: "vid-upload-retry-" });
    direct = new S3Client({
      endpoint: s3.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    await direct.send(new CreateBucketCommand({ Bucket: BUCKET }));
    proxy = resettingProxy(Number(new URL(s3.endpoint).port), 256 * 1024);
  });

  after(async () => {
    direct?.destroy();
    await proxy?.close();
    await s3?.close();
    if (tmp) await Deno.remove(tmp, { recursive: true });
  });

  it("is sent again whole after a reset in the middle of its body", async () => {
    const file = `${tmp}/chunk-0.mp4`;
    const bytes = new Uint8Array(2 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >> 12)) & 0xff;
    await Deno.writeFile(file, bytes);
    await uploadInWorkerEnv(workerEnv(`http://127.0.0.1:${proxy.port}`, tmp), file);
    assert.equal(proxy.resets(), 1, "the proxy reset the first upload");
    const stored = await direct.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: "chunks/r-1/chunk-0.mp4" }),
    );
    const body = await stored.Body!.transformToByteArray();
    assert.equal(body.length, bytes.length);
    assert.deepEqual(body, bytes);
  });
});
