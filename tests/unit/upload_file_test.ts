/**
 * Which failed uploads the shared uploader (src/aws/upload_file.ts) tries again: the
 * connection errors the SDK gives, a call past its deadline, throttles and 5xx; never a
 * refusal. The retries themselves run against a real endpoint in storage_test.ts.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { EndpointUnreachableError } from "../../src/aws/deadline.ts";
import { retryableUpload } from "../../src/aws/upload_file.ts";

const withStatus = (message: string, httpStatusCode: number): Error =>
  Object.assign(new Error(message), { $metadata: { httpStatusCode } });

describe("retryableUpload", () => {
  it("retries a dropped connection, as the SDK reports it", () => {
    assert.equal(retryableUpload(new Error("socket hang up")), true);
    assert.equal(retryableUpload(Object.assign(new Error("read"), { code: "ECONNRESET" })), true);
    assert.equal(
      retryableUpload(
        new Error("An error was encountered in a non-retryable streaming request.", {
          cause: new Error("socket hang up"),
        }),
      ),
      true,
    );
  });

  it("retries a call that had no answer within its deadline (the server's ci4 failure)", () => {
    const cause = new DOMException("aborted", "AbortError");
    assert.equal(
      retryableUpload(new EndpointUnreachableError("http://127.0.0.1:1", 31000, cause)),
      true,
    );
  });

  it("retries throttles and server errors, never a refusal or a missing bucket", () => {
    assert.equal(retryableUpload(withStatus("SlowDown", 503)), true);
    assert.equal(retryableUpload(withStatus("Too Many Requests", 429)), true);
    assert.equal(retryableUpload(withStatus("Access Denied", 403)), false);
    assert.equal(retryableUpload(withStatus("NoSuchBucket", 404)), false);
    assert.equal(retryableUpload(new Error("bad key")), false);
  });
});
