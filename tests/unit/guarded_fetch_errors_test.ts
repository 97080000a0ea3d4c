/**
 * A failed download is a `DownloadError` (a `VidError` naming the field and URL) that keeps
 * what went wrong: the network error as `cause`, the server's status as `httpStatus`.
 * Before, these were plain `Error`s whose message was all that was left. Real loopback
 * servers: one that answers 404, one port nobody listens on.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { VidError } from "../../src/errors.ts";
import { DownloadError, guardedGet } from "../../src/net/guarded_fetch.ts";

/** A loopback port that was free a moment ago: nothing listens there. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe("guardedGet's failures", () => {
  it("an unreachable server: DownloadError with the network error as cause", async () => {
    const url = `http://127.0.0.1:${await closedPort()}/logo.png`;
    const error = await guardedGet(url, { field: "logo", maxBytes: 1000, allowPrivate: true })
      .then(() => assert.fail("the download succeeded"), (e: unknown) => e);
    assert.ok(error instanceof DownloadError, String(error));
    assert.ok(error instanceof VidError);
    assert.equal(error.field, "logo");
    assert.equal(error.url, url);
    assert.match(error.message, /^logo: cannot download http:\/\/127\.0\.0\.1:\d+\/logo\.png \(/);
    assert.ok(error.cause instanceof Error, `cause: ${error.cause}`);
    assert.equal(error.exitCode, 1);
  });

  it("an error status: DownloadError with the status", async () => {
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response("gone", { status: 404 }),
    );
    const url = `http://127.0.0.1:${server.addr.port}/logo.png`;
    const error = await guardedGet(url, { field: "logo", maxBytes: 1000, allowPrivate: true })
      .then(() => assert.fail("the download succeeded"), (e: unknown) => e);
    assert.ok(error instanceof DownloadError, String(error));
    assert.equal(error.httpStatus, 404);
    assert.equal(error.message, `logo: ${url} answered HTTP 404`);
  });
});
