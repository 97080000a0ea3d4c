/**
 * Runs the Pulumi program itself (`index.ts`) under mocks with config set, as `pulumi up`
 * would after `vid lambda deploy --memory=4096 --concurrency=8`, and checks the two outputs.
 *
 * @module
 */

import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { installMocks, type RecordedResource, resolved } from "./mocks.ts";

let recorded: RecordedResource[] = [];
let program: typeof import("../index.ts");

before(async () => {
  recorded = await installMocks();
  pulumi.runtime.setAllConfig({ "vid-lambda:memory": "4096", "vid-lambda:concurrency": "8" });
  program = await import("../index.ts");
});

describe("the program", () => {
  it("exports RenderBucketName and RenderStateMachineArn, which resolve", async () => {
    assert.deepEqual(Object.keys(program).sort(), ["RenderBucketName", "RenderStateMachineArn"]);
    assert.equal(await resolved(program.RenderBucketName), "vid-renders-0a1b2c3");
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
});
