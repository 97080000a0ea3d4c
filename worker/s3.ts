/**
 * The worker's S3 access: one client configured from the environment, so the same code
 * talks to AWS (inside Lambda: region and role credentials from the runtime) and to an
 * S3-compatible server on loopback (s3rver in the tests, the local stack).
 *
 * | variable                        | meaning                                                  |
 * | ------------------------------- | -------------------------------------------------------- |
 * | `VID_S3_ENDPOINT`               | endpoint of an S3-compatible service (unset on AWS)       |
 * | `VID_S3_FORCE_PATH_STYLE=0`     | `<bucket>.<endpoint>` addressing (default: by path)       |
 * | `AWS_REGION`                    | region (then `AWS_DEFAULT_REGION`), default `us-east-1`   |
 * | `AWS_ACCESS_KEY_ID` etc.        | credentials; the SDK's default chain reads them          |
 *
 * The client comes from the shared factory (src/aws/clients.ts), which reads these.
 * Node built-ins only (no `Deno.*`): this module runs in the Lambda bundle under Node 22.
 *
 * @module
 */

import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from "@aws-sdk/client-s3";
import { defaultRegion, objectUrlFor, s3ClientFor, s3OptionsFromEnv } from "../src/aws/clients.ts";
import { retry } from "../src/util/async.ts";

let client: S3Client | undefined;

/** The worker's S3 client, created once per container from the environment. */
export function s3Client(): S3Client {
  if (client) return client;
  client = s3ClientFor(s3OptionsFromEnv());
  return client;
}

/** Keys of every object under `prefix`, following continuation tokens. */
export async function listKeys(bucket: string, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  do {
    const page = await s3Client().send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    for (const item of page.Contents ?? []) if (item.Key) keys.push(item.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return keys;
}

/** Streams an object to a local file, creating its folder. */
export async function downloadFile(bucket: string, key: string, file: string): Promise<void> {
  const response = await s3Client().send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  if (!response.Body) throw new Error(`s3://${bucket}/${key} has no body`);
  await mkdir(dirname(file), { recursive: true });
  await pipeline(response.Body as Readable, createWriteStream(file));
}

/** Attempts of one upload, the first included (see {@linkcode uploadFile}). */
export const UPLOAD_ATTEMPTS = 4;

/**
 * Whether a failed upload is worth another attempt: the connection dropped or timed out
 * (the SDK says so as "an error was encountered in a non-retryable streaming request", the
 * network error its cause), or S3 answered with a throttle or a server error. A refusal
 * (403, 404) is not.
 */
function retryableUpload(error: unknown): boolean {
  for (let at = error, depth = 0; at && depth < 4; depth++) {
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

/**
 * Streams a local file to an object. The SDK cannot retry a stream body (it is spent by the
 * failed attempt), so one reset connection failed the chunk and Step Functions rendered the
 * whole chunk again: each attempt here opens the file afresh, up to
 * {@linkcode UPLOAD_ATTEMPTS}, with a jittered backoff.
 */
export async function uploadFile(
  bucket: string,
  key: string,
  file: string,
  contentType: string,
  metadata?: Record<string, string>,
): Promise<void> {
  const { size } = await stat(file);
  await retry(async () => {
    await s3Client().send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: key,
        Body: createReadStream(file),
        ContentLength: size,
        ContentType: contentType,
        ...(metadata ? { Metadata: metadata } : {}),
      }),
    );
  }, {
    attempts: UPLOAD_ATTEMPTS,
    baseMs: 200,
    maxMs: 2000,
    jitter: "full",
    retryable: retryableUpload,
  });
}

/** Writes a small JSON object. */
export async function putJson(bucket: string, key: string, value: unknown): Promise<void> {
  await s3Client().send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: JSON.stringify(value),
      ContentType: "application/json",
    }),
  );
}

/** Where an object can be fetched: the endpoint's path-style URL, or the AWS one. */
export function objectUrl(bucket: string, key: string): string {
  const path = key.split("/").map(encodeURIComponent).join("/");
  return objectUrlFor(bucket, path, { region: defaultRegion(), ...s3OptionsFromEnv() });
}
