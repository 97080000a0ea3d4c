/**
 * Test helper: a real S3 server (s3rver) on loopback, in-process under Deno's Node
 * compatibility, with its objects in a fresh temporary folder. Clients reach it with an
 * endpoint, path-style addressing and s3rver's fixed keys ({@linkcode S3_CREDENTIALS}).
 * The code lives in `src/lambda/local/local_stack.ts` (the local stack starts the same server).
 *
 * @module
 */

export { S3_CREDENTIALS, type S3Server, startS3Server } from "../src/lambda/local/local_stack.ts";
