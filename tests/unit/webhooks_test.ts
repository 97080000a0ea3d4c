/**
 * Tests of render webhooks against a real HTTP receiver on 127.0.0.1: the exact bytes
 * and headers delivered, signature verification as a receiver would do it, retry and
 * give-up rules, timeouts, aborting, and `callback_url` validation.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  ATTEMPT_HEADER,
  backoffDelay,
  CallbackUrlError,
  checkCallbackUrl,
  deliverWebhook,
  DELIVERY_ID_HEADER,
  SIGNATURE_HEADER,
  signWebhook,
  verifyWebhook,
  type WebhookPayload,
} from "../../src/webhooks/webhooks.ts";

const SECRET = "whsec_test_7f3a";

const PAYLOAD: WebhookPayload = {
  render_id: "r_0123",
  status: "failed",
  callback_id: "order-42",
  video_url: null,
  error: "composition « intro » failed: frame 12 timed out",
};

const EXPECTED_BODY = '{"render_id":"r_0123","status":"failed","callback_id":"order-42",' +
  '"video_url":null,"error":"composition « intro » failed: frame 12 timed out"}';

/** One request as the receiver saw it. */
interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: Uint8Array;
}

/** How the receiver answers one request: a status, or hold the response open. */
type Answer = number | "hang";

/** A real HTTP receiver answering from a script; 200 once the script runs out. */
class Receiver {
  readonly requests: Received[] = [];
  #answers: Answer[] = [];
  #server: Server = createServer((request, response) => {
    const chunks: Uint8Array[] = [];
    request.on("data", (chunk: Uint8Array) => chunks.push(chunk));
    request.on("end", () => {
      this.requests.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        body: new Uint8Array(Buffer.concat(chunks)),
      });
      const answer = this.#answers.shift() ?? 200;
      if (answer === "hang") return;
      const headers = answer >= 300 && answer < 400 ? { location: "/elsewhere" } : {};
      response.writeHead(answer, headers).end(`answer ${answer}`);
    });
  });

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
  }

  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}/hooks/vid`;
  }

  /** Sets the answers for the next requests and forgets earlier requests. */
  script(...answers: Answer[]): void {
    this.#answers = answers;
    this.requests.length = 0;
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

/** A port nothing listens on: bound, then released. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const noWait = (): Promise<void> => Promise.resolve();

describe("deliverWebhook to a real receiver", () => {
  const receiver = new Receiver();
  before(() => receiver.start());
  after(() => receiver.stop());

  it("POSTs the payload bytes in field order with the documented headers", async () => {
    receiver.script(200);
    const now = 1_767_225_600_123;
    const result = await deliverWebhook({
      url: receiver.url,
      payload: {
        error: PAYLOAD.error,
        video_url: null,
        callback_id: "order-42",
        status: "failed",
        render_id: "r_0123",
      },
      secret: SECRET,
      now: () => now,
    });
    assert.deepEqual(result, { delivered: true, attempts: 1, status: 200, retryable: false });
    assert.equal(receiver.requests.length, 1);
    const [request] = receiver.requests;
    assert.equal(request.method, "POST");
    assert.equal(request.url, "/hooks/vid");
    assert.deepEqual(request.body, new TextEncoder().encode(EXPECTED_BODY));
    assert.equal(request.headers["content-type"], "application/json");
    assert.equal(request.headers["user-agent"], "vid-webhooks/1");
    assert.equal(request.headers[ATTEMPT_HEADER], "1");
    assert.equal(
      request.headers[SIGNATURE_HEADER],
      await signWebhook(SECRET, 1_767_225_600, EXPECTED_BODY),
    );
    assert.match(String(request.headers[SIGNATURE_HEADER]), /^t=1767225600,v1=[0-9a-f]{64}$/);
    assert.equal(request.headers[DELIVERY_ID_HEADER], undefined, "no id was given");
  });

  it("carries a delivery id in the signed body and its header, and numbers a later call's attempts on", async () => {
    receiver.script(503, 200);
    const result = await deliverWebhook({
      url: receiver.url,
      payload: { ...PAYLOAD, delivery_id: "whd_0042" },
      secret: SECRET,
      firstAttempt: 3,
      sleep: noWait,
    });
    assert.deepEqual(result, { delivered: true, attempts: 2, status: 200, retryable: false });
    const expected = EXPECTED_BODY.replace(/}$/, ',"delivery_id":"whd_0042"}');
    for (const [i, request] of receiver.requests.entries()) {
      assert.equal(new TextDecoder().decode(request.body), expected);
      assert.equal(request.headers[DELIVERY_ID_HEADER], "whd_0042");
      assert.equal(request.headers[ATTEMPT_HEADER], String(3 + i));
      assert.ok(
        await verifyWebhook(SECRET, String(request.headers[SIGNATURE_HEADER]), expected),
        "the body with its delivery id is what is signed",
      );
    }
  });

  it("says a final answer is not worth retrying and a 5xx is", async () => {
    receiver.script(404);
    const final = await deliverWebhook({ url: receiver.url, payload: PAYLOAD, secret: SECRET });
    assert.equal(final.retryable, false);
    receiver.script(502);
    const again = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      attempts: 1,
    });
    assert.deepEqual({ ...again }, {
      delivered: false,
      attempts: 1,
      status: 502,
      error: "callback_url answered HTTP 502",
      retryable: true,
    });
  });

  it("signs so that the receiver verifies with the same secret only", async () => {
    receiver.script(200);
    await deliverWebhook({ url: receiver.url, payload: PAYLOAD, secret: SECRET });
    const [request] = receiver.requests;
    const header = String(request.headers[SIGNATURE_HEADER]);
    const body = new TextDecoder().decode(request.body);
    const t = Number(/^t=(\d+),/.exec(header)![1]);
    assert.ok(Math.abs(t - Date.now() / 1000) < 5, "timestamp is the current unix time");

    assert.equal(await verifyWebhook(SECRET, header, body), true);
    assert.equal(await verifyWebhook("whsec_other", header, body), false, "another secret");
    assert.equal(
      await verifyWebhook(SECRET, header, body.replace("r_0123", "r_0124")),
      false,
      "tampered body",
    );
    assert.equal(await verifyWebhook(SECRET, header, body + " "), false, "extra byte");
    assert.equal(
      await verifyWebhook(SECRET, header, body, { now: t + 301 }),
      false,
      "stale by 301 s",
    );
    assert.equal(await verifyWebhook(SECRET, header, body, { now: t + 300 }), true, "300 s ok");
    assert.equal(
      await verifyWebhook(SECRET, header, body, { now: t - 301 }),
      false,
      "from the future",
    );
    assert.equal(
      await verifyWebhook(SECRET, header, body, { now: t + 3600, toleranceSeconds: 7200 }),
      true,
      "custom tolerance",
    );
    assert.equal(
      await verifyWebhook(SECRET, header.replace(/^t=\d+/, `t=${t + 1}`), body, { now: t }),
      false,
      "timestamp rewritten",
    );
  });

  it("retries 500 with backoff and delivers on the third attempt", async () => {
    receiver.script(500, 503, 200);
    const delays: number[] = [];
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      backoffMs: (attempt) => attempt * 5,
      sleep: (ms) => {
        delays.push(ms);
        return new Promise((resolve) => setTimeout(resolve, ms));
      },
    });
    assert.deepEqual(result, { delivered: true, attempts: 3, status: 200, retryable: false });
    assert.deepEqual(delays, [5, 10]);
    assert.deepEqual(receiver.requests.map((r) => r.headers[ATTEMPT_HEADER]), ["1", "2", "3"]);
    for (const request of receiver.requests) {
      const body = new TextDecoder().decode(request.body);
      assert.equal(body, EXPECTED_BODY, "same body every attempt");
      assert.ok(await verifyWebhook(SECRET, String(request.headers[SIGNATURE_HEADER]), body));
    }
  });

  it("retries 408 and 429", async () => {
    receiver.script(408, 429, 204);
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      sleep: noWait,
    });
    assert.deepEqual(result, { delivered: true, attempts: 3, status: 204, retryable: false });
  });

  it("gives up at once on 400", async () => {
    receiver.script(400, 200);
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      sleep: noWait,
    });
    assert.equal(result.delivered, false);
    assert.equal(result.attempts, 1);
    assert.equal(result.status, 400);
    assert.match(result.error ?? "", /HTTP 400/);
    assert.equal(receiver.requests.length, 1);
  });

  it("does not follow redirects, nor retry them", async () => {
    receiver.script(302, 200);
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      sleep: noWait,
    });
    assert.equal(result.delivered, false);
    assert.equal(result.attempts, 1);
    assert.equal(result.status, 302);
    assert.match(result.error ?? "", /redirects are not followed/);
    assert.equal(receiver.requests.length, 1, "the Location was not requested");
  });

  it("stops after the configured attempts when the receiver keeps failing", async () => {
    receiver.script(500, 500, 500, 500);
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      attempts: 3,
      sleep: noWait,
    });
    assert.deepEqual(result, {
      delivered: false,
      attempts: 3,
      status: 500,
      error: "callback_url answered HTTP 500",
      retryable: true,
    });
    assert.equal(receiver.requests.length, 3);
  });

  it("times out a receiver that never answers, then retries", async () => {
    receiver.script("hang", 200);
    const started = performance.now();
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      // Long enough for the answering attempt on a loaded machine (at 150 ms the 200 once
      // timed out too: a third attempt); the hanging one still ends at this deadline.
      timeoutMs: 1000,
      sleep: noWait,
    });
    assert.deepEqual(result, { delivered: true, attempts: 2, status: 200, retryable: false });
    assert.ok(performance.now() - started < 5000, "did not wait for the receiver");
    assert.equal(receiver.requests.length, 2);
  });

  it("reports the timeout when every attempt times out", async () => {
    receiver.script("hang", "hang");
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      attempts: 2,
      timeoutMs: 100,
      sleep: noWait,
    });
    assert.deepEqual(result, {
      delivered: false,
      attempts: 2,
      status: undefined,
      error: "timed out after 100 ms",
      retryable: true,
    });
  });

  it("stops when the signal aborts during backoff", async () => {
    receiver.script(500, 500, 500);
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(), 50);
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      backoffMs: () => 60_000,
      signal: controller.signal,
    });
    assert.equal(result.delivered, false);
    assert.equal(result.attempts, 1);
    assert.equal(result.error, "aborted");
    assert.ok(performance.now() - started < 5000, "the 60 s backoff was cut short");
  });

  it("stops when the signal aborts an in-flight request", async () => {
    receiver.script("hang");
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const result = await deliverWebhook({
      url: receiver.url,
      payload: PAYLOAD,
      secret: SECRET,
      signal: controller.signal,
      sleep: noWait,
    });
    assert.deepEqual(result, {
      delivered: false,
      attempts: 1,
      status: undefined,
      error: "aborted",
      retryable: true,
    });
  });
});

describe("deliverWebhook to an unreachable receiver", () => {
  it("exhausts its attempts and reports the network error", async () => {
    const port = await closedPort();
    const delays: number[] = [];
    const result = await deliverWebhook({
      url: `http://127.0.0.1:${port}/hook`,
      payload: PAYLOAD,
      secret: SECRET,
      attempts: 3,
      sleep: (ms) => {
        delays.push(ms);
        return Promise.resolve();
      },
    });
    assert.equal(result.delivered, false);
    assert.equal(result.attempts, 3);
    assert.equal(result.status, undefined);
    assert.match(result.error ?? "", /^request failed: /);
    assert.equal(delays.length, 2, "no wait after the last attempt");
    for (const [i, ms] of delays.entries()) {
      const base = 1000 * 2 ** i;
      assert.ok(ms >= base * 0.8 && ms <= base * 1.2, `default backoff ${i + 1}: ${ms}`);
    }
  });

  it("rejects invalid retry settings", async () => {
    const base = { url: "https://example.com/", payload: PAYLOAD, secret: SECRET };
    await assert.rejects(deliverWebhook({ ...base, attempts: 0 }), /attempts must be/);
    await assert.rejects(deliverWebhook({ ...base, timeoutMs: -1 }), /timeoutMs must be/);
  });
});

describe("backoffDelay", () => {
  it("doubles from 1 s with ±20 % jitter and caps at 60 s", () => {
    assert.equal(backoffDelay(1, () => 0.5), 1000);
    assert.equal(backoffDelay(2, () => 0.5), 2000);
    assert.equal(backoffDelay(3, () => 0.5), 4000);
    assert.equal(backoffDelay(1, () => 0), 800);
    assert.equal(backoffDelay(1, () => 0.999999), 1200);
    assert.equal(backoffDelay(6, () => 0.5), 32_000);
    assert.equal(backoffDelay(7, () => 0.5), 60_000);
    assert.equal(backoffDelay(30, () => 0.999999), 60_000);
    assert.equal(backoffDelay(30, () => 0), 48_000);
  });
});

describe("signWebhook and verifyWebhook", () => {
  it("matches an independently computed HMAC-SHA256", async () => {
    assert.equal(
      await signWebhook("secret", 1_700_000_000, '{"a":1}'),
      "t=1700000000,v1=" + await referenceHmac("secret", '1700000000.{"a":1}'),
    );
  });

  it("rejects missing and malformed headers", async () => {
    const body = '{"a":1}';
    const now = 1_700_000_000;
    const good = await signWebhook(SECRET, now, body);
    const v1 = good.split(",v1=")[1];
    assert.equal(await verifyWebhook(SECRET, good, body, { now }), true);
    for (
      const header of [
        null,
        "",
        "garbage",
        `v1=${v1}`,
        `t=${now}`,
        `t=abc,v1=${v1}`,
        `t=${now},t=${now},v1=${v1}`,
        `t=${now},v1=${v1.slice(0, 63)}`,
        `t=${now},v0=${v1}`,
      ]
    ) {
      assert.equal(await verifyWebhook(SECRET, header, body, { now }), false, String(header));
    }
  });

  it("accepts any matching v1 among several, with spaces and upper-case hex", async () => {
    const body = "{}";
    const now = 1_700_000_000;
    const v1 = (await signWebhook(SECRET, now, body)).split(",v1=")[1];
    const header = `t=${now}, v1=${"0".repeat(64)}, v1=${v1.toUpperCase()}`;
    assert.equal(await verifyWebhook(SECRET, header, body, { now }), true);
  });

  it("refuses an empty secret and a fractional timestamp", async () => {
    await assert.rejects(signWebhook("", 1, "{}"), TypeError);
    await assert.rejects(verifyWebhook("", "t=1,v1=00", "{}"), TypeError);
    await assert.rejects(signWebhook(SECRET, 1.5, "{}"), /non-negative integer/);
  });
});

/** HMAC-SHA256 hex via node:crypto, independent of the Web Crypto path under test. */
async function referenceHmac(secret: string, message: string): Promise<string> {
  const { createHmac } = await import("node:crypto");
  return createHmac("sha256", secret).update(message).digest("hex");
}

describe("checkCallbackUrl", () => {
  it("accepts https URLs", () => {
    assert.equal(
      checkCallbackUrl("https://example.com/hooks/vid?x=1").href,
      "https://example.com/hooks/vid?x=1",
    );
    assert.equal(checkCallbackUrl("HTTPS://Example.COM:8443/h").host, "example.com:8443");
  });

  it("rejects http with a clear message", () => {
    assert.throws(
      () => checkCallbackUrl("http://example.com/hooks/vid"),
      (error: unknown) => {
        assert.ok(error instanceof CallbackUrlError);
        assert.equal(error.field, "callback_url");
        assert.equal(error.name, "CallbackUrlError");
        assert.match(error.message, /^callback_url must be an https:\/\/ URL/);
        return true;
      },
    );
    assert.throws(() => checkCallbackUrl("http://127.0.0.1:8080/h"), /must be an https:\/\/ URL/);
  });

  it("accepts http to loopback only with allowHttpLoopback", () => {
    const allow = { allowHttpLoopback: true };
    for (const url of ["http://127.0.0.1:8080/h", "http://[::1]:9000/h", "http://localhost/h"]) {
      assert.equal(checkCallbackUrl(url, allow).href, url);
      assert.throws(() => checkCallbackUrl(url), CallbackUrlError, url);
    }
    for (
      const url of [
        "http://example.com/h",
        "http://10.0.0.1/h",
        "http://127.0.0.2/h",
        "http://localhost.example.com/h",
      ]
    ) {
      assert.throws(() => checkCallbackUrl(url, allow), /must be an https:\/\/ URL/, url);
    }
    assert.equal(checkCallbackUrl("https://example.com/", allow).protocol, "https:");
  });

  it("rejects garbage, other schemes, credentials and overlong URLs", () => {
    for (const url of ["", "not a url", "/relative/path", "example.com/hook", "https://"]) {
      assert.throws(() => checkCallbackUrl(url), /callback_url is not a valid absolute URL/, url);
    }
    for (const url of ["ftp://example.com/h", "javascript:alert(1)", "file:///etc/passwd"]) {
      assert.throws(() => checkCallbackUrl(url), /must be an https:\/\/ URL/, url);
    }
    assert.throws(
      () => checkCallbackUrl("https://user:hunter2@example.com/h"),
      (error: unknown) => {
        assert.ok(error instanceof CallbackUrlError);
        assert.match(error.message, /user name or password/);
        assert.doesNotMatch(error.message, /hunter2/);
        return true;
      },
    );
    assert.throws(() => checkCallbackUrl("https://user@example.com/h"), /user name or password/);
    const long = "https://example.com/" + "a".repeat(2048 - 20);
    assert.equal(long.length, 2048);
    assert.equal(checkCallbackUrl(long).href, long);
    assert.throws(() => checkCallbackUrl(long + "a"), /2049 characters long; the limit is 2048/);
  });
});
