/**
 * Test helper: a real S3 server (s3rver) on loopback, in-process under Deno's Node
 * compatibility, with its objects in a fresh temporary folder. Clients reach it with an
 * endpoint, path-style addressing and s3rver's fixed keys ({@linkcode S3_CREDENTIALS}).
 * The code lives in `src/lambda/local/local_stack.ts` (the local stack starts the same server).
 *
 * @module
 */

import { S3_CREDENTIALS } from "../src/lambda/local/local_stack.ts";

export { S3_CREDENTIALS };
export { type S3Server, startS3Server } from "../src/lambda/local/local_stack.ts";

/**
 * The environment the Lambda worker (a function's handler, run here under Node or Deno) reads
 * to reach the S3 server at `endpoint`: path-style addressing, s3rver's keys, a region, the
 * chunk prefix, and `tmp` as its TMPDIR (a function's /tmp).
 */
export function workerEnv(endpoint: string, tmp: string): Record<string, string> {
  return {
    VID_S3_ENDPOINT: endpoint,
    VID_S3_FORCE_PATH_STYLE: "1",
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
    VID_CHUNK_PREFIX: "chunks/",
    TMPDIR: tmp,
  };
}
