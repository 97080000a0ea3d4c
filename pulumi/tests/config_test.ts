/**
 * Unit tests of reading the stack settings from Pulumi config: defaults and limits.
 *
 * @module
 */

import assert from "node:assert/strict";
import { beforeEach, describe, it } from "node:test";
import * as pulumi from "@pulumi/pulumi";
import { readStackSettings } from "../config.ts";
import { installMocks } from "./mocks.ts";

/** The settings read with exactly `values` (keys without the project prefix) configured. */
function settingsWith(values: Record<string, string>) {
  const entries = Object.entries(values).map(([key, value]) => [`vid-lambda:${key}`, value]);
  pulumi.runtime.setAllConfig(Object.fromEntries(entries));
  return readStackSettings(new pulumi.Config());
}

describe("readStackSettings", () => {
  beforeEach(async () => {
    await installMocks();
  });

  it("defaults to 10240 MB, 900 s, unreserved concurrency and ../dist/worker", () => {
    assert.deepEqual(settingsWith({}), {
      memory: 10240,
      timeout: 900,
      concurrency: undefined,
      workerPath: "../dist/worker",
      handler: "index.handler",
      layers: [],
      chunkPrefix: "chunks/",
      chunkExpirationDays: 1,
      logRetentionDays: 14,
    });
  });

  it("reads memory, concurrency, timeout, worker path and layers", () => {
    const settings = settingsWith({
      memory: "3008",
      concurrency: "100",
      timeout: "600",
      workerPath: "/tmp/worker",
      layers: '["arn:aws:lambda:eu-west-1:123456789012:layer:ffmpeg:1"]',
    });
    assert.equal(settings.memory, 3008);
    assert.equal(settings.concurrency, 100);
    assert.equal(settings.timeout, 600);
    assert.equal(settings.workerPath, "/tmp/worker");
    assert.deepEqual(settings.layers, ["arn:aws:lambda:eu-west-1:123456789012:layer:ffmpeg:1"]);
  });

  it("accepts memory at both ends of 128-10240 MB", () => {
    assert.equal(settingsWith({ memory: "128" }).memory, 128);
    assert.equal(settingsWith({ memory: "10240" }).memory, 10240);
  });

  it("rejects memory outside 128-10240 MB", () => {
    assert.throws(
      () => settingsWith({ memory: "127" }),
      /vid-lambda:memory.*outside of the legal range/,
    );
    assert.throws(
      () => settingsWith({ memory: "10241" }),
      /vid-lambda:memory.*outside of the legal range/,
    );
  });

  it("rejects a timeout above the 15-minute cap", () => {
    assert.throws(
      () => settingsWith({ timeout: "901" }),
      /vid-lambda:timeout.*outside of the legal range/,
    );
  });

  it("rejects zero, fractional or non-numeric concurrency", () => {
    assert.throws(() => settingsWith({ concurrency: "0" }), /vid-lambda:concurrency/);
    assert.throws(() => settingsWith({ concurrency: "1.5" }), /not a whole number/);
    assert.throws(() => settingsWith({ concurrency: "many" }), /vid-lambda:concurrency/);
  });

  it("rejects layers that are not a JSON array of strings", () => {
    assert.throws(() => settingsWith({ layers: '"arn"' }), /JSON array of strings/);
  });
});
