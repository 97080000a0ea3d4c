/**
 * Unit tests of the AWS client factory (src/aws/clients.ts): the region chain as the made
 * clients resolve it (explicit, ARN, AWS_REGION, AWS_DEFAULT_REGION, us-east-1), the
 * S3-compatible endpoint settings read from the environment, object URLs, and execution
 * ARNs. No request is sent.
 *
 * @module
 */

import { afterEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import process from "node:process";
import {
  executionArnFor,
  objectUrlFor,
  s3ClientFor,
  s3OptionsFromEnv,
  sfnClientFor,
} from "../../src/aws/clients.ts";

const SAVED = ["AWS_REGION", "AWS_DEFAULT_REGION", "VID_S3_ENDPOINT", "VID_S3_FORCE_PATH_STYLE"]
  .map((name) => [name, process.env[name]] as const);

function setEnv(values: Record<string, string | undefined>): void {
  for (const [name] of SAVED) delete process.env[name];
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined) process.env[name] = value;
  }
}

const ARN = "arn:aws:states:ap-south-1:123456789012:stateMachine:vid-render";

describe("AWS client factory", () => {
  afterEach(() => {
    for (const [name, value] of SAVED) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  it("resolves the region: explicit, then the ARN's, then AWS_REGION, AWS_DEFAULT_REGION, us-east-1", async () => {
    const regionOf = (client: { config: { region: () => Promise<string> } }) =>
      client.config.region();
    setEnv({ AWS_REGION: "eu-west-1", AWS_DEFAULT_REGION: "eu-central-1" });
    assert.equal(await regionOf(sfnClientFor({ region: "us-west-2" }, ARN)), "us-west-2");
    assert.equal(await regionOf(sfnClientFor({}, ARN)), "ap-south-1");
    assert.equal(await regionOf(sfnClientFor()), "eu-west-1");
    assert.equal(await regionOf(s3ClientFor({}, "ap-south-1")), "ap-south-1");
    assert.equal(await regionOf(s3ClientFor()), "eu-west-1");
    setEnv({ AWS_DEFAULT_REGION: "eu-central-1" });
    assert.equal(await regionOf(s3ClientFor()), "eu-central-1");
    setEnv({});
    assert.equal(await regionOf(s3ClientFor()), "us-east-1");
  });

  it("reads VID_S3_ENDPOINT and VID_S3_FORCE_PATH_STYLE (path-style by default with an endpoint)", () => {
    setEnv({ VID_S3_ENDPOINT: "http://127.0.0.1:4568" });
    assert.deepEqual(s3OptionsFromEnv("eu-west-1"), {
      region: "eu-west-1",
      endpoint: "http://127.0.0.1:4568",
      forcePathStyle: true,
    });
    setEnv({ VID_S3_ENDPOINT: "http://127.0.0.1:4568", VID_S3_FORCE_PATH_STYLE: "false" });
    assert.equal(s3OptionsFromEnv().forcePathStyle, false);
    setEnv({});
    assert.deepEqual(s3OptionsFromEnv(), { endpoint: undefined, forcePathStyle: false });
  });

  it("builds object URLs for endpoints and AWS, by path or by virtual host", () => {
    const local = { region: "us-east-1", endpoint: "http://127.0.0.1:4568", forcePathStyle: true };
    assert.equal(objectUrlFor("b", "out/a.mp4", local), "http://127.0.0.1:4568/b/out/a.mp4");
    assert.equal(
      objectUrlFor("b", "k", { region: "us-east-1", endpoint: "http://minio.test:9000" }),
      "http://b.minio.test:9000/k",
    );
    assert.equal(
      objectUrlFor("b", "k", { region: "eu-west-1" }),
      "https://b.s3.eu-west-1.amazonaws.com/k",
    );
  });

  it("derives execution ARNs, and refuses what is not a state machine ARN", () => {
    assert.equal(
      executionArnFor(ARN, "r1"),
      "arn:aws:states:ap-south-1:123456789012:execution:vid-render:r1",
    );
    assert.equal(executionArnFor("arn:aws:s3:::bucket", "r1"), undefined);
  });
});
