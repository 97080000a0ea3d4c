/**
 * Uploading a local file to S3, with retries the SDK cannot make. A file goes up as a stream
 * of known length; the SDK does not retry a stream body (the failed attempt spent it), so a
 * dropped connection ("socket hang up", ECONNRESET), a call past its deadline or a 5xx
 * failed the whole upload at once: a Lambda chunk was rendered again, a server's finished
 * render was marked failed. Here each attempt opens the file afresh.
 *
 * One uploader for the Lambda worker (`worker/s3.ts`) and the server's S3 storage
 * (`src/server/storage/storage_s3.ts`). Node built-ins only: it runs in the Lambda bundle.
 *
 * @module
 */

import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { retry } from "../util/async.ts";
import { EndpointUnreachableError } from "./deadline.ts";

/** Attempts of one upload, the first included (see {@linkcode uploadFile}). */
export const UPLOAD_ATTEMPTS = 4;

/**
 * Whether a failed upload is worth another attempt: the connection dropped or timed out
 * (the SDK says so as "an error was encountered in a non-retryable streaming request", the
 * network error its cause), the call had no answer within its deadline
 * ({@linkcode EndpointUnreachableError}), or S3 answered with a throttle or a server error.
 * A refusal (403, 404) is not.
 *
 * @param error What the upload threw.
 * @returns True when another attempt may succeed.
 *
 * @example
 * ```ts
 * import { retryableUpload } from "./upload_file.ts";
 *
 * retryableUpload(new Error("socket hang up")); // true
 * retryableUpload(Object.assign(new Error("Forbidden"), { $metadata: { httpStatusCode: 403 } })); // false
 * ```
 */
export function retryableUpload(error: unknown): boolean {
  for (let at = error, depth = 0; at && depth < 4; depth++) {
    if (at instanceof EndpointUnreachableError) return true;
    const e = at as {
      name?: string;
      code?: string;
      message?: string;
      cause?: unknown;
      $metadata?: { httpStatusCode?: number };
    };
    const status = e.$metadata?.httpStatusCode;
    if (status !== undefined && (status >= 500 || status === 429)) return true;
    const text = `${e.name ?? ""} ${e.code ?? ""} ${e.message ?? ""}`;
    if (
      /ECONNRESET|EPIPE|ETIMEDOUT|ECONNREFUSED|socket hang up|TimeoutError|timed out|non-retryable streaming request/i
        .test(text)
    ) return true;
    at = e.cause;
  }
  return false;
}

/** What {@linkcode uploadFile} puts: the object's place and headers. */
export interface UploadTarget {
  /** The bucket. */
  Bucket: string;
  /** The object key. */
  Key: string;
  /** The object's Content-Type. */
  ContentType: string;
  /** User metadata (`x-amz-meta-*`). */
  Metadata?: Record<string, string>;
}

/**
 * Streams a local file to an object, up to {@linkcode UPLOAD_ATTEMPTS} attempts with a
 * jittered backoff (0.2-2 s), each from a new stream of the file.
 *
 * @param client The S3 client (its calls carry the deadline of `src/aws/deadline.ts`).
 * @param target Bucket, key, content type and metadata.
 * @param file The local file.
 * @throws The last attempt's error, or the first one that is not {@linkcode retryableUpload}.
 *
 * @example
 * ```ts no_run
 * import { s3ClientFor } from "./clients.ts";
 * import { uploadFile } from "./upload_file.ts";
 *
 * const s3 = s3ClientFor({ region: "us-east-1" });
 * await uploadFile(s3, { Bucket: "vid", Key: "out.mp4", ContentType: "video/mp4" }, "out.mp4");
 * ```
 */
export async function uploadFile(
  client: S3Client,
  target: UploadTarget,
  file: string,
): Promise<void> {
  const { size } = await stat(file);
  await retry(async () => {
    const body = createReadStream(file);
    try {
      await client.send(new PutObjectCommand({ ...target, Body: body, ContentLength: size }));
    } finally {
      body.destroy();
    }
  }, {
    attempts: UPLOAD_ATTEMPTS,
    baseMs: 200,
    maxMs: 2000,
    jitter: "full",
    retryable: retryableUpload,
  });
}
