/**
 * Unit tests of `validateConfig`, the SDK's check of a distributed render's execution
 * input: the 256 KiB input limit (message, sizes, no network call), HDR rejected, the
 * throttling warning, field errors naming the field, and chunk options reported by the
 * shared chunk planner.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  ConfigError,
  type ExecutionInput,
  ExecutionInputTooLargeError,
  HdrNotSupportedError,
  MAX_EXECUTION_INPUT_BYTES,
  serializedBytes,
  validateConfig,
} from "../../src/lambda/config.ts";

function baseInput(config: ExecutionInput["config"] = {}): ExecutionInput {
  return {
    renderId: "r-test-1",
    bucketName: "vid-renders-test",
    siteId: "site-0123456789abcdef",
    serveUrl: "https://vid-renders-test.s3.us-east-1.amazonaws.com/sites/site-0123456789abcdef/",
    composition: "index.html",
    outputKey: "renders/r-test-1/out.mp4",
    config: { fps: 30, width: 1920, height: 1080, format: "mp4", ...config },
  };
}

/** Runs `body` with `globalThis.fetch` replaced by a spy; returns how often it was called. */
function withFetchSpy(body: () => void): number {
  const original = globalThis.fetch;
  let calls = 0;
  globalThis.fetch = ((..._args: Parameters<typeof fetch>) => {
    calls++;
    return Promise.reject(new Error("network call during validateConfig"));
  }) as typeof fetch;
  try {
    body();
  } finally {
    globalThis.fetch = original;
  }
  return calls;
}

describe("validateConfig: execution input limit (262144 bytes)", () => {
  it("rejects a 300 KiB inlined base64 variable before any network call", () => {
    const logo = "data:image/png;base64," + "A".repeat(300 * 1024);
    const input = baseInput({ variables: { title: "Hello", logo } });
    const bytes = new TextEncoder().encode(JSON.stringify(input)).byteLength;
    let thrown: unknown;
    const calls = withFetchSpy(() => {
      try {
        validateConfig(input);
      } catch (error) {
        thrown = error;
      }
    });
    assert.equal(calls, 0, "validateConfig made no network call");
    assert.ok(thrown instanceof ExecutionInputTooLargeError, `got ${thrown}`);
    assert.ok(thrown instanceof ConfigError);
    const message = thrown.message;
    assert.ok(message.startsWith("[validateConfig] config:"), message);
    assert.ok(message.includes(`${bytes} bytes`), `states the byte size ${bytes}: ${message}`);
    assert.ok(message.includes("262144"), `states the limit: ${message}`);
    assert.match(message, /media as URLs/);
    assert.match(message, /base64/);
    assert.match(message, /config\.variables\.logo/, "points at the inlined field");
    assert.equal(thrown.field, "config");
    assert.equal(thrown.bytes, bytes);
    assert.equal(thrown.limit, MAX_EXECUTION_INPUT_BYTES);
    assert.equal(MAX_EXECUTION_INPUT_BYTES, 262144);
  });

  it("counts UTF-8 bytes, not characters", () => {
    // 100000 three-byte characters: 300000 bytes but only 100000 UTF-16 code units.
    const input = baseInput({ variables: { text: "€".repeat(100_000) } });
    assert.ok(JSON.stringify(input).length < MAX_EXECUTION_INPUT_BYTES);
    assert.throws(() => validateConfig(input), ExecutionInputTooLargeError);
  });

  it("accepts an input just under the limit, and rejects one byte more", () => {
    const input = baseInput({ variables: { note: "" } });
    const pad = MAX_EXECUTION_INPUT_BYTES - serializedBytes(input);
    input.config.variables = { note: "x".repeat(pad) };
    assert.equal(serializedBytes(input), MAX_EXECUTION_INPUT_BYTES);
    const calls = withFetchSpy(() => assert.equal(validateConfig(input), input));
    assert.equal(calls, 0);
    input.config.variables = { note: "x".repeat(pad + 1) };
    assert.throws(() => validateConfig(input), ExecutionInputTooLargeError);
  });
});

describe("validateConfig: high-dynamic-range output", () => {
  it("rejects hdr: true with the in-process advice", () => {
    assert.throws(
      () => validateConfig(baseInput({ hdr: true })),
      (error: unknown) => {
        assert.ok(error instanceof HdrNotSupportedError);
        assert.equal(error.field, "config.hdr");
        assert.match(
          error.message,
          /High-dynamic-range mp4 in distributed mode is rejected; render HDR in-process with vid render --hdr/,
        );
        return true;
      },
    );
  });

  it("accepts hdr: false", () => {
    validateConfig(baseInput({ hdr: false }));
  });
});

describe("validateConfig: reserved concurrency", () => {
  it("warns that renders will be throttled when reserved concurrency < maxParallelChunks", () => {
    const warnings: string[] = [];
    validateConfig(baseInput({ maxParallelChunks: 16 }), {
      reservedConcurrency: 8,
      onWarning: (m) => warnings.push(m),
    });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /throttled/);
    assert.match(warnings[0], /\(8\)/);
    assert.match(warnings[0], /\(16\)/);
  });

  it("compares with the default of 16 when maxParallelChunks is unset", () => {
    const warnings: string[] = [];
    validateConfig(baseInput(), { reservedConcurrency: 10, onWarning: (m) => warnings.push(m) });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /maxParallelChunks \(16\)/);
  });

  it("does not warn when reserved concurrency covers maxParallelChunks, or is unknown", () => {
    const warnings: string[] = [];
    const onWarning = (m: string) => warnings.push(m);
    validateConfig(baseInput({ maxParallelChunks: 4 }), { reservedConcurrency: 4, onWarning });
    validateConfig(baseInput(), { onWarning });
    assert.deepEqual(warnings, []);
  });
});

describe("validateConfig: fields", () => {
  const rejects = (config: Record<string, unknown>, field: string, pattern: RegExp) => {
    assert.throws(
      () => validateConfig(baseInput(config as ExecutionInput["config"])),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError, `${error}`);
        assert.equal(error.field, field);
        assert.ok(error.message.startsWith(`[validateConfig] ${field}:`), error.message);
        assert.match(error.message, pattern);
        return true;
      },
    );
  };

  it("fps must be a rate from 1 to 240: an integer, 29.97 or a fraction", () => {
    rejects({ fps: 0 }, "config.fps", /1 to 240, got 0/);
    rejects({ fps: 241 }, "config.fps", /got 241/);
    rejects({ fps: "30fps" }, "config.fps", /got "30fps"/);
    rejects({ fps: true as unknown as number }, "config.fps", /got true/);
    validateConfig(baseInput({ fps: 1 }));
    validateConfig(baseInput({ fps: 240 }));
    validateConfig(baseInput({ fps: 29.97 }));
    validateConfig(baseInput({ fps: "30000/1001" }));
  });

  it("width and height must be positive integers", () => {
    rejects({ width: 0 }, "config.width", /integer/);
    rejects({ height: -1080 }, "config.height", /integer/);
    rejects({ width: "1920" }, "config.width", /"1920"/);
    rejects({ width: 1920.5 }, "config.width", /1920.5/);
  });

  it("format must be mp4, webm or mov", () => {
    rejects({ format: "gif" }, "config.format", /mp4, webm, mov/);
    for (const format of ["mp4", "webm", "mov"] as const) validateConfig(baseInput({ format }));
  });

  it("variables must be an object; unknown config fields are named", () => {
    rejects({ variables: ["a"] }, "config.variables", /object/);
    rejects({ maxParalelChunks: 4 }, "config.maxParalelChunks", /not a render configuration field/);
  });

  it("webhook needs an https url and a secret", () => {
    rejects(
      { webhook: { url: "http://example.com/hook", secret: "s" } },
      "config.webhook.url",
      /https/,
    );
    rejects(
      { webhook: { url: "https://example.com/hook" } },
      "config.webhook.secret",
      /secret|string/,
    );
    validateConfig(baseInput({ webhook: { url: "https://example.com/hook", secret: "s" } }));
  });

  it("top-level fields are required and named", () => {
    const input = baseInput() as unknown as Record<string, unknown>;
    for (const field of ["renderId", "bucketName", "siteId", "serveUrl", "outputKey"]) {
      const copy = { ...input, [field]: undefined };
      assert.throws(
        () => validateConfig(copy as unknown as ExecutionInput),
        (error: unknown) => error instanceof ConfigError && error.field === field,
        field,
      );
    }
    assert.throws(
      () => validateConfig({ ...baseInput(), renderId: "has space" }),
      (error: unknown) => error instanceof ConfigError && error.field === "renderId",
    );
    assert.throws(
      () => validateConfig({ ...baseInput(), serveUrl: "s3://bucket/site/" }),
      (error: unknown) => error instanceof ConfigError && error.field === "serveUrl",
    );
  });

  it("chunk options are checked by their declarations", () => {
    for (
      const [config, field] of [
        [{ chunkSize: 0 }, "chunkSize"],
        [{ maxParallelChunks: 2.5 }, "maxParallelChunks"],
        [{ targetChunkFrames: -1 }, "targetChunkFrames"],
        [{ frameTimeoutMs: 0 }, "frameTimeoutMs"],
      ] as const
    ) {
      assert.throws(
        () => validateConfig(baseInput(config)),
        (error: unknown) => error instanceof ConfigError && error.field === `config.${field}`,
        field,
      );
    }
    validateConfig(baseInput({ chunkSize: 240, maxParallelChunks: 16, targetChunkFrames: 60 }));
    validateConfig(baseInput({ frameTimeoutMs: 5000 }));
  });
});
