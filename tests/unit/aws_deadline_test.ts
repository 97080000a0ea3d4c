/**
 * Unit tests of the deadline on AWS calls (src/aws/deadline.ts), against a real TCP listener
 * on loopback that accepts connections and never answers: a Step Functions call through
 * `sfnClientFor` ends with an `EndpointUnreachableError` naming the endpoint, and
 * `abortAwsCalls` ends a call in flight at once.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { ListStateMachinesCommand } from "@aws-sdk/client-sfn";
import { sfnClientFor } from "../../src/aws/clients.ts";
import {
  abortAwsCalls,
  EndpointUnreachableError,
  resumeAwsCalls,
  withAwsDeadline,
} from "../../src/aws/deadline.ts";

const CREDENTIALS = { accessKeyId: "test", secretAccessKey: "test" };

/** A listener that accepts and never answers; returns its URL and a close. */
async function silentEndpoint(): Promise<{ url: string; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Fails the test instead of hanging when `promise` does not settle in `ms`. */
async function settlesWithin<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`still waiting after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

describe("AWS call deadline", () => {
  it("a silent Step Functions endpoint is named unreachable within the deadline", async () => {
    const silent = await silentEndpoint();
    const client = sfnClientFor({
      endpoint: silent.url,
      region: "us-east-1",
      credentials: CREDENTIALS,
    });
    const previous = Deno.env.get("VID_AWS_CALL_TIMEOUT");
    Deno.env.set("VID_AWS_CALL_TIMEOUT", "1");
    try {
      const error = await settlesWithin(
        client.send(new ListStateMachinesCommand({})).then(() => undefined, (e) => e),
        15_000,
      );
      assert.ok(error instanceof EndpointUnreachableError, String(error));
      assert.equal(error.endpoint, silent.url);
      assert.match(
        error.message,
        new RegExp(`^${silent.url} is unreachable: no answer within 1 s`),
      );
    } finally {
      if (previous === undefined) Deno.env.delete("VID_AWS_CALL_TIMEOUT");
      else Deno.env.set("VID_AWS_CALL_TIMEOUT", previous);
      client.destroy();
      await silent.close();
    }
  });

  it("abortAwsCalls ends a call in flight with its reason", async () => {
    const silent = await silentEndpoint();
    const client = sfnClientFor({
      endpoint: silent.url,
      region: "us-east-1",
      credentials: CREDENTIALS,
    });
    const interrupted = new Error("interrupted");
    try {
      const pending = client.send(new ListStateMachinesCommand({})).then(() => undefined, (e) => e);
      setTimeout(() => abortAwsCalls(interrupted), 200);
      assert.equal(await settlesWithin(pending, 10_000), interrupted);
    } finally {
      resumeAwsCalls();
      client.destroy();
      await silent.close();
    }
  });

  it("the deadline ends when the call answers: a body still streaming is not cut", async () => {
    const signal = await withAwsDeadline(
      "http://127.0.0.1:9",
      (signal) => Promise.resolve(signal),
      {
        timeoutMs: 50,
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    assert.equal(signal.aborted, false);
  });

  it("a caller's own abort is not reported as unreachable", async () => {
    const controller = new AbortController();
    controller.abort(new Error("mine"));
    const error = await withAwsDeadline(
      "http://127.0.0.1:9",
      (signal) => Promise.reject(signal.reason),
      { signal: controller.signal, timeoutMs: 60_000 },
    ).catch((e) => e);
    assert.equal((error as Error).message, "mine");
  });
});
