/**
 * The render backend of `vid server` without a stack: the `VID_*` variables `vid lambda
 * local` prints configure it (flags win; the region comes from the state machine ARN), and
 * the queue runs at most the backend's slots at once, the rest staying queued (real
 * SQLite, a stand-in backend in this process). The server with the real local stack is in
 * tests/integration/server_lambda_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { addUser } from "../../src/server/auth/accounts.ts";
import { type ServerContext, serverLimits } from "../../src/server/context.ts";
import { now, openDatabase } from "../../src/server/database/mod.ts";
import { startQueue } from "../../src/server/queue/queue.ts";
import {
  type RenderBackend,
  RenderBackendConfigError,
  resolveRenderBackend,
} from "../../src/server/queue/render_backend.ts";
import { FsStorage } from "../../src/server/storage/storage_file.ts";
import { waitFor } from "../helpers.ts";

describe("render backend configuration and the in-flight bound (no stack)", () => {
  const ARN = "arn:aws:states:eu-west-1:123456789012:stateMachine:vid-render";

  it("reads the VID_* variables vid lambda local prints; flags win; region from the ARN", () => {
    const env: Record<string, string> = {
      VID_RENDER_BACKEND: "lambda",
      VID_LAMBDA_BUCKET: "vid-renders",
      VID_LAMBDA_STATE_MACHINE_ARN: ARN,
      VID_S3_ENDPOINT: "http://127.0.0.1:4568/",
      VID_SFN_ENDPOINT: "http://127.0.0.1:4569",
      AWS_REGION: "us-east-1",
    };
    const config = resolveRenderBackend({ lambdaBucket: "other-bucket" }, (n) => env[n]);
    assert.deepEqual(config, {
      kind: "lambda",
      bucketName: "other-bucket",
      stateMachineArn: ARN,
      region: "eu-west-1",
      s3Endpoint: "http://127.0.0.1:4568",
      s3ForcePathStyle: true,
      sfnEndpoint: "http://127.0.0.1:4569",
      chunkSize: undefined,
      maxParallelChunks: undefined,
      maxInFlight: 20,
      pollIntervalMs: 2000,
    });
    assert.deepEqual(resolveRenderBackend({}, () => undefined), { kind: "local" });
    // The VID_LAMBDA_* connection variables alone do not switch the backend.
    const { VID_RENDER_BACKEND: _, ...connectionOnly } = env;
    assert.deepEqual(resolveRenderBackend({}, (n) => connectionOnly[n]), { kind: "local" });
    assert.throws(
      () =>
        resolveRenderBackend({ renderBackend: "lambda", lambdaMaxInFlight: "0" }, (n) => env[n]),
      (error: unknown) =>
        error instanceof RenderBackendConfigError && error.field === "--lambda-max-in-flight" &&
        /VID_LAMBDA_MAX_IN_FLIGHT\) must be an integer from 1/.test(error.message),
    );
  });

  it("runs at most the backend's slots at once (--lambda-max-in-flight), the rest stay queued", async () => {
    const dir = await Deno.makeTempDir({ prefix: "vid-queue-bound-" });
    const db = await openDatabase(`${dir}/vid.db`);
    const account = await addUser(db, "q@example.com", "long enough password", 100);
    for (let i = 0; i < 5; i++) {
      await db.run(
        "insert into renders (id, account_id, asset_id, status, request, width, height, duration_seconds, credits, created_at) values (?, ?, 'ast_x', 'queued', ?, 320, 180, 1, 1, ?)",
        `rnd_${i}`,
        account.id,
        JSON.stringify({ composition: "index.html", fps: 30, format: "mp4", variables: {} }),
        now(),
      );
    }
    let inFlight = 0;
    let most = 0;
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => release = resolve);
    const backend: RenderBackend = {
      kind: "lambda",
      slots: 2,
      async render(): Promise<void> {
        inFlight++;
        most = Math.max(most, inFlight);
        await gate;
        inFlight--;
      },
      close: () => {},
    };
    const ctx: ServerContext = {
      db,
      storage: new FsStorage(`${dir}/storage`),
      secret: "s",
      publicUrl: "http://127.0.0.1",
      workDir: `${dir}/work`,
      allowHttpCallbacks: false,
      allowPrivateUrls: false,
      // One account here: the bound under test is the backend's, not the account's.
      limits: serverLimits({ maxRendersPerAccount: 2 }, 2),
      wake: () => {},
    };
    const queue = startQueue(ctx, backend);
    try {
      await waitFor("two renders in flight", () => inFlight === 2, { timeoutMs: 10_000 });
      await new Promise((r) => setTimeout(r, 300));
      const counts = async () =>
        Object.fromEntries(
          (await db.all<{ status: string; n: number }>(
            "select status, count(*) as n from renders group by status",
          )).map((r) => [r.status, r.n]),
        );
      assert.deepEqual(await counts(), { rendering: 2, queued: 3 });
      release();
      await waitFor("all five completed", async () => (await counts()).completed === 5, {
        timeoutMs: 10_000,
      });
      assert.equal(most, 2);
    } finally {
      release();
      await queue.stop();
      await db.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
});
