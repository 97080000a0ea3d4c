/**
 * Runs the Pulumi program itself (`index.ts`) under mocks with config set, as `pulumi up`
 * would after `vid lambda deploy --memory=4096 --concurrency=8`, and checks the two outputs
 * and that the function's code is the packaged worker its manifest describes. A worker
 * folder without a manifest stops the program with the command that builds one.
 *
 * @module
 */

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { readArtifactManifest } from "../../worker/artifact_manifest.ts";
import { installMocks, type RecordedResource, resolved } from "./mocks.ts";

let recorded: RecordedResource[] = [];
let program: typeof import("../index.ts");

/** A packaged worker folder: only its manifest is read while the program is declared. */
const WORKER = mkdtempSync(join(tmpdir(), "vid-pulumi-worker-"));
const SHA256 = "0123456789abcdef".repeat(4);

before(async () => {
  writeFileSync(
    join(WORKER, "vid-artifact.json"),
    JSON.stringify({
      format: 1,
      sha256: SHA256,
      bytes: 225_888_527,
      handler: "index.handler",
    }),
  );
  recorded = await installMocks();
  pulumi.runtime.setAllConfig({
    "vid-lambda:memory": "4096",
    "vid-lambda:concurrency": "8",
    "vid-lambda:workerPath": WORKER,
  });
  program = await import("../index.ts");
});

after(() => rmSync(WORKER, { recursive: true, force: true }));

describe("the program", () => {
  it("exports RenderBucketName and RenderStateMachineArn, which resolve", async () => {
    assert.deepEqual(Object.keys(program).sort(), [
      "RenderBucketName",
      "RenderStateMachineArn",
    ]);
    assert.equal(
      await resolved(program.RenderBucketName),
      "vid-renders-0a1b2c3",
    );
    assert.equal(
      await resolved(program.RenderStateMachineArn),
      "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render",
    );
  });

  it("passes the configured memory and concurrency to the render function", () => {
    const fn = recorded.find((r) => r.type === "aws:lambda/function:Function");
    assert.equal(fn?.inputs.memorySize, 4096);
    assert.equal(fn?.inputs.reservedConcurrentExecutions, 8);
  });

  it("deploys the packaged worker named by its manifest", async () => {
    const object = recorded.find((r) => r.type === "aws:s3/bucketObjectv2:BucketObjectv2");
    assert.equal(object?.inputs.key, "worker/0123456789abcdef.zip");
    assert.equal(
      await (object?.inputs.source as { path: Promise<string> }).path,
      WORKER,
    );
    const fn = recorded.find((r) => r.type === "aws:lambda/function:Function");
    assert.equal(fn?.inputs.sourceCodeHash, SHA256);
  });

  it("refuses a worker folder without vid-artifact.json, naming the build command", () => {
    const empty = mkdtempSync(join(tmpdir(), "vid-pulumi-empty-"));
    try {
      assert.throws(() => readArtifactManifest(empty), (error: Error) => {
        assert.equal(error.name, "ArtifactManifestError");
        assert.match(error.message, /vid-artifact\.json not found/);
        assert.match(error.message, /deno task build:worker/);
        return true;
      });
      writeFileSync(join(empty, "vid-artifact.json"), "{not json");
      assert.throws(
        () => readArtifactManifest(empty),
        /not a manifest written by/,
      );
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
