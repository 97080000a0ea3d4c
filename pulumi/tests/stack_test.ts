/**
 * Unit tests of the render stack under Pulumi mocks: resource types and key properties,
 * least-privilege IAM, and the state machine built from the shared definition.
 *
 * @module
 */

import assert from "node:assert/strict";
import { before, describe, it } from "node:test";
import { installMocks, list, type RecordedResource, resolved, statements } from "./mocks.ts";
import type { RenderStack, RenderStackSettings } from "../stack.ts";

/** What `vid-artifact.json` of a packaged worker says (only these fields are used). */
const ARTIFACT = {
  sha256: "3998120b7c68e015e6e8dc355af3a1a190ab74fc8b440ae2e26cca386b6654c7",
  handler: "index.handler",
};

const DEFAULTS: RenderStackSettings = {
  memory: 10240,
  timeout: 900,
  workerPath: "../dist/worker",
  handler: "index.handler",
  layers: [],
  chunkPrefix: "chunks/",
  chunkExpirationDays: 1,
  logRetentionDays: 14,
};

let recorded: RecordedResource[] = [];
let defaults: RenderStack;
let sized: RenderStack;

/** The inputs of the one resource of `type` named `name`. */
function inputsOf(type: string, name: string): Record<string, unknown> {
  const matches = recorded.filter((resource) => resource.type === type && resource.name === name);
  assert.equal(
    matches.length,
    1,
    `one ${type} named ${name}, got ${matches.length}`,
  );
  return matches[0].inputs;
}

/** Every object inside `value`, depth first, `value` included. */
function* objects(value: unknown): Generator<Record<string, unknown>> {
  if (value === null || typeof value !== "object") return;
  if (!Array.isArray(value)) yield value as Record<string, unknown>;
  for (const child of Object.values(value)) yield* objects(child);
}

before(async () => {
  recorded = await installMocks();
  const { createRenderStack } = await import("../stack.ts");
  defaults = createRenderStack("default", DEFAULTS, ARTIFACT);
  sized = createRenderStack("sized", {
    ...DEFAULTS,
    memory: 2048,
    timeout: 600,
    concurrency: 32,
    layers: ["arn:aws:lambda:us-east-1:123456789012:layer:ffmpeg:3"],
  }, { ...ARTIFACT, sha256: "f".repeat(64) });
  // The state machines are registered last; once their ARNs resolve, everything is recorded.
  await Promise.all([
    resolved(defaults.stateMachine.arn),
    resolved(sized.stateMachine.arn),
  ]);
});

describe("render bucket", () => {
  it("is an aws.s3.Bucket (v7), not the deprecated BucketV2", () => {
    const types = recorded.filter((r) => r.name === "default-renders").map((
      r,
    ) => r.type).sort();
    assert.deepEqual(types, [
      "aws:s3/bucket:Bucket",
      "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
      "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
      "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    ]);
    assert.ok(!recorded.some((r) => r.type.includes("bucketV2")));
  });

  it("blocks every kind of public access", () => {
    const inputs = inputsOf(
      "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
      "default-renders",
    );
    assert.equal(inputs.bucket, "default-renders-0a1b2c3");
    for (
      const key of ["blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls"]
    ) {
      assert.equal(inputs[key], true, key);
    }
    assert.equal(inputs.restrictPublicBuckets, true);
  });

  it("encrypts objects at rest by default", () => {
    const inputs = inputsOf(
      "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
      "default-renders",
    );
    assert.deepEqual(inputs.rules, [{
      applyServerSideEncryptionByDefault: { sseAlgorithm: "AES256" },
    }]);
  });

  it("expires temporary chunk objects under the chunk prefix only", () => {
    const inputs = inputsOf(
      "aws:s3/bucketLifecycleConfiguration:BucketLifecycleConfiguration",
      "default-renders",
    );
    const rules = inputs.rules as Record<string, unknown>[];
    const expiring = rules.filter((rule) => rule.expiration !== undefined);
    assert.deepEqual(expiring, [{
      id: "expire-temporary-chunks",
      status: "Enabled",
      filter: { prefix: "chunks/" },
      expiration: { days: 1 },
    }]);
  });
});

describe("render function", () => {
  it("runs the worker on nodejs22.x with the maximum memory, 10240 MB of /tmp and timeout", () => {
    const inputs = inputsOf(
      "aws:lambda/function:Function",
      "default-render-function",
    );
    assert.equal(inputs.runtime, "nodejs22.x");
    assert.equal(inputs.handler, "index.handler");
    assert.equal(inputs.memorySize, 10240);
    assert.equal(inputs.timeout, 900);
    // Chromium inflates to /tmp (about 200 MB), chunks and the site are written there too.
    assert.deepEqual(inputs.ephemeralStorage, { size: 10240 });
    assert.deepEqual(inputs.architectures, ["x86_64"]);
    assert.equal(
      inputs.role,
      "arn:aws:iam::123456789012:role/default-render-function",
    );
  });

  it("takes its code from the packaged artifact uploaded under its content hash", async () => {
    const object = inputsOf(
      "aws:s3/bucketObjectv2:BucketObjectv2",
      "default-worker-code",
    );
    assert.equal(object.bucket, "default-artifacts-0a1b2c3");
    assert.equal(object.key, "worker/3998120b7c68e015.zip");
    // The mocks see the archive itself; its path is a promise.
    assert.equal(
      await (object.source as { path: Promise<string> }).path,
      "../dist/worker",
    );
    const fn = inputsOf(
      "aws:lambda/function:Function",
      "default-render-function",
    );
    assert.equal(fn.s3Bucket, "default-artifacts-0a1b2c3");
    assert.equal(fn.s3Key, "worker/3998120b7c68e015.zip");
    assert.equal(fn.sourceCodeHash, ARTIFACT.sha256);
    assert.equal(
      "code" in fn,
      false,
      "no direct upload: the zip is over 50 MB",
    );
    // Another build, another object and another code hash.
    const sized = inputsOf(
      "aws:lambda/function:Function",
      "sized-render-function",
    );
    assert.equal(sized.s3Key, "worker/ffffffffffffffff.zip");
    assert.equal(sized.sourceCodeHash, "f".repeat(64));
  });

  it("keeps the code in a private, encrypted artifacts bucket", () => {
    const types = recorded.filter((r) => r.name === "default-artifacts").map((
      r,
    ) => r.type).sort();
    assert.deepEqual(types, [
      "aws:s3/bucket:Bucket",
      "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
      "aws:s3/bucketServerSideEncryptionConfiguration:BucketServerSideEncryptionConfiguration",
    ]);
    const block = inputsOf(
      "aws:s3/bucketPublicAccessBlock:BucketPublicAccessBlock",
      "default-artifacts",
    );
    for (
      const key of ["blockPublicAcls", "blockPublicPolicy", "ignorePublicAcls"]
    ) {
      assert.equal(block[key], true, key);
    }
    assert.equal(block.restrictPublicBuckets, true);
  });

  it("has no reserved concurrency and no layers unless configured", async () => {
    const inputs = inputsOf(
      "aws:lambda/function:Function",
      "default-render-function",
    );
    assert.equal("reservedConcurrentExecutions" in inputs, false);
    assert.equal("layers" in inputs, false);
    assert.equal(
      await resolved(defaults.renderFunction.reservedConcurrentExecutions),
      undefined,
    );
  });

  it("takes the configured memory, timeout, reserved concurrency and layers", () => {
    const inputs = inputsOf(
      "aws:lambda/function:Function",
      "sized-render-function",
    );
    assert.equal(inputs.memorySize, 2048);
    assert.equal(inputs.timeout, 600);
    assert.equal(inputs.reservedConcurrentExecutions, 32);
    assert.deepEqual(inputs.layers, [
      "arn:aws:lambda:us-east-1:123456789012:layer:ffmpeg:3",
    ]);
  });

  it("logs to its own log group and knows the bucket and chunk prefix", () => {
    const inputs = inputsOf(
      "aws:lambda/function:Function",
      "default-render-function",
    );
    assert.deepEqual(inputs.loggingConfig, {
      logFormat: "Text",
      logGroup: "default-render-function",
    });
    assert.deepEqual(inputs.environment, {
      variables: {
        VID_RENDER_BUCKET: "default-renders-0a1b2c3",
        VID_CHUNK_PREFIX: "chunks/",
      },
    });
  });
});

describe("state machine", () => {
  it("is a STANDARD state machine run by its own role", () => {
    const inputs = inputsOf(
      "aws:sfn/stateMachine:StateMachine",
      "default-render",
    );
    assert.equal(inputs.type, "STANDARD");
    assert.equal(
      inputs.roleArn,
      "arn:aws:iam::123456789012:role/default-state-machine",
    );
  });

  it("uses the shared definition for this render function", () => {
    const inputs = inputsOf(
      "aws:sfn/stateMachine:StateMachine",
      "default-render",
    );
    const text = String(inputs.definition);
    assert.ok(
      text.includes(
        "arn:aws:lambda:us-east-1:123456789012:function:default-render-function",
      ),
      "the definition names the render function's ARN",
    );
    const definition = JSON.parse(text) as Record<string, unknown>;
    assert.equal(typeof definition.StartAt, "string");
    const maps = [...objects(definition)].filter((state) => state.Type === "Map");
    assert.ok(maps.length > 0, "the definition has a Map state");
    assert.ok(
      maps.some((map) => "MaxConcurrency" in map || "MaxConcurrencyPath" in map),
      "a Map state bounds its concurrency",
    );
    const retries = maps.flatMap((map) => [...objects(map)])
      .filter((state) => Array.isArray(state.Retry) && state.Retry.length > 0);
    assert.ok(retries.length > 0, "a state inside the Map retries");
  });

  it("lets a task run as long as the function may", () => {
    for (
      const [name, timeout] of [["default-render", 900], [
        "sized-render",
        600,
      ]] as const
    ) {
      const definition = JSON.parse(
        String(inputsOf("aws:sfn/stateMachine:StateMachine", name).definition),
      );
      const tasks = [...objects(definition)].filter((state) => state.Type === "Task");
      assert.ok(tasks.length > 0);
      for (const task of tasks) {
        assert.equal(task.TimeoutSeconds, timeout, name);
      }
    }
  });

  it("resolves its ARN", async () => {
    assert.equal(
      await resolved(defaults.stateMachine.arn),
      "arn:aws:states:us-east-1:123456789012:stateMachine:default-render",
    );
  });
});

describe("IAM", () => {
  it("lets Lambda and Step Functions assume their own role only", () => {
    const principal = (name: string) => {
      const inputs = inputsOf("aws:iam/role:Role", name);
      const [statement] = JSON.parse(String(inputs.assumeRolePolicy)).Statement;
      assert.equal(statement.Action, "sts:AssumeRole");
      return statement.Principal;
    };
    assert.deepEqual(principal("default-render-function"), {
      Service: "lambda.amazonaws.com",
    });
    assert.deepEqual(principal("default-state-machine"), {
      Service: "states.amazonaws.com",
    });
  });

  it("gives the render function logs for its log group and objects of the bucket only", () => {
    const inputs = inputsOf(
      "aws:iam/rolePolicy:RolePolicy",
      "default-render-function",
    );
    assert.equal(inputs.role, "default-render-function");
    const bucketArn = "arn:aws:s3:::default-renders-0a1b2c3";
    const logGroupArn = "arn:aws:logs:us-east-1:123456789012:log-group:default-render-function";
    const granted = statements(inputs.policy).map((statement) => ({
      effect: statement.Effect,
      actions: list(statement.Action).sort(),
      resources: list(statement.Resource),
    }));
    assert.deepEqual(granted, [
      {
        effect: "Allow",
        actions: ["logs:CreateLogStream", "logs:PutLogEvents"],
        resources: [`${logGroupArn}:*`],
      },
      {
        effect: "Allow",
        actions: ["s3:GetObject", "s3:PutObject"],
        resources: [`${bucketArn}/*`],
      },
      { effect: "Allow", actions: ["s3:ListBucket"], resources: [bucketArn] },
    ]);
  });

  it("lets the state machine invoke the render function and nothing else", () => {
    const inputs = inputsOf(
      "aws:iam/rolePolicy:RolePolicy",
      "default-state-machine",
    );
    assert.equal(inputs.role, "default-state-machine");
    const granted = statements(inputs.policy).map((statement) => ({
      effect: statement.Effect,
      actions: list(statement.Action),
      resources: list(statement.Resource),
    }));
    assert.deepEqual(granted, [{
      effect: "Allow",
      actions: ["lambda:InvokeFunction"],
      resources: [
        "arn:aws:lambda:us-east-1:123456789012:function:default-render-function",
      ],
    }]);
  });

  it("uses no wildcard actions or resources and no managed policies", () => {
    const policies = recorded.filter((r) => r.type === "aws:iam/rolePolicy:RolePolicy");
    assert.equal(policies.length, 4, "two inline policies per stack");
    for (const policy of policies) {
      for (const statement of statements(policy.inputs.policy)) {
        for (const action of list(statement.Action)) {
          assert.ok(!action.includes("*"), `${policy.name}: action ${action}`);
        }
        for (const resource of list(statement.Resource)) {
          assert.ok(resource !== "*", `${policy.name}: resource ${resource}`);
          assert.ok(
            !/^arn:aws:[a-z0-9-]+:[^:]*:[^:]*:\*/.test(resource),
            resource,
          );
        }
      }
    }
    const iamTypes = new Set(
      recorded.map((r) => r.type).filter((t) => t.startsWith("aws:iam/")),
    );
    assert.deepEqual([...iamTypes].sort(), [
      "aws:iam/role:Role",
      "aws:iam/rolePolicy:RolePolicy",
    ]);
  });
});
