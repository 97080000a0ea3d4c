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

import { createWriteStream } from "node:fs";
import { mkdir } from "node:fs/promises";
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
import { uploadFile as uploadFileWithRetry } from "../src/aws/upload_file.ts";

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

/**
 * Streams a local file to an object, retrying a dropped connection with a fresh stream
 * (the shared uploader, src/aws/upload_file.ts): one reset connection used to fail the
 * chunk, and Step Functions rendered the whole chunk again.
 */
export async function uploadFile(
  bucket: string,
  key: string,
  file: string,
  contentType: string,
  metadata?: Record<string, string>,
): Promise<void> {
  await uploadFileWithRetry(
    s3Client(),
    {
      Bucket: bucket,
      Key: key,
      ContentType: contentType,
      ...(metadata ? { Metadata: metadata } : {}),
    },
    file,
  );
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
