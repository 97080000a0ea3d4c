/**
 * Test helper: a real S3 server (s3rver) on loopback, in-process under Deno's Node
 * compatibility, with its objects in a fresh temporary folder. Clients reach it with an
 * endpoint, path-style addressing and s3rver's fixed keys ({@linkcode S3_CREDENTIALS}).
 *
 * @module
 */

import S3rver from "s3rver";

/** Access keys s3rver accepts (it checks request signatures against its one account). */
export const S3_CREDENTIALS: { accessKeyId: string; secretAccessKey: string } = {
  accessKeyId: "S3RVER",
  secretAccessKey: "S3RVER",
};

/** A running local S3 server. */
export interface S3Server {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** Stops the server and removes its folder. */
  close(): Promise<void>;
}

/** The part of s3rver's (untyped) API the helper uses. */
interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}

type S3rverConstructor = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
}) => S3rverInstance;

/** Starts s3rver on 127.0.0.1 with a free port and an empty temporary folder. */
export async function startS3Server(): Promise<S3Server> {
  const directory = await Deno.makeTempDir({ prefix: "vid-s3rver-" });
  const server = new (S3rver as S3rverConstructor)({
    address: "127.0.0.1",
    port: 0,
    directory,
    silent: true,
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async close(): Promise<void> {
      await server.close();
      await Deno.remove(directory, { recursive: true });
    },
  };
}
