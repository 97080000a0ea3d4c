/**
 * `vid preview`'s routing on the wire (src/preview/routes.ts, a Hono app): the guards every
 * request passes (loopback host names only, JSON bodies for the API's POSTs), the API's 404
 * for what it does not know, and the edges where the API ends and the project's files begin.
 * A real preview server on loopback, in this process (no browser: these are HTTP answers).
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { startPreview } from "../../src/preview/server.ts";
import { compositionHtml, makeProject } from "../helpers.ts";

type PreviewServer = Awaited<ReturnType<typeof startPreview>>;

/** One request over a raw connection, so the `Host` header is ours to choose. */
async function rawRequest(port: number, head: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(head));
    const chunks: Uint8Array[] = [];
    const buffer = new Uint8Array(4096);
    for (;;) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(buffer.slice(0, n));
    }
    return new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c])));
  } finally {
    conn.close();
  }
}

describe("vid preview routes", () => {
  let project: string;
  let preview: PreviewServer;
  let base: string;

  before(async () => {
    project = await makeProject(compositionHtml("<p>hi</p>"), { "__preview": "a project file" });
    preview = await startPreview({ target: project, port: 0 });
    base = preview.url.slice(0, -1);
  });

  after(async () => {
    await preview.close();
    await Deno.remove(project, { recursive: true });
  });

  it("answers only to loopback host names", async () => {
    const foreign = await rawRequest(
      preview.port,
      "GET / HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n",
    );
    assert.match(foreign, /^HTTP\/1\.1 403 /);
    assert.match(foreign, /vid preview answers only on 127\.0\.0\.1 and localhost/);
    const local = await rawRequest(
      preview.port,
      `GET / HTTP/1.1\r\nHost: localhost:${preview.port}\r\nConnection: close\r\n\r\n`,
    );
    assert.match(local, /^HTTP\/1\.1 200 /);
  });

  it("refuses an API POST that is not JSON, known route or not", async () => {
    for (const route of ["variables", "render", "no-such-route"]) {
      const response = await fetch(`${base}/__preview/${route}`, {
        method: "POST",
        headers: { "content-type": "text/plain" },
        body: "{}",
      });
      assert.equal(response.status, 415, route);
      assert.equal((await response.json()).error.message, "send the body as application/json");
    }
  });

  it("answers what the API does not know with a JSON 404 naming the request", async () => {
    const cases: [string, string][] = [
      ["GET", "/__preview/nothing"],
      ["PUT", "/__preview/render"],
      ["GET", "/__preview/"],
      // Paths are matched as written: an encoded letter or slash names no route.
      ["GET", "/__preview/compo%73itions"],
      ["GET", "/__preview/render%2Fcancel"],
      // A GET route does not answer HEAD.
      ["HEAD", "/__preview/compositions"],
    ];
    for (const [method, path] of cases) {
      const response = await fetch(`${base}${path}`, { method });
      assert.equal(response.status, 404, `${method} ${path}`);
      assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
      const text = await response.text();
      if (method !== "HEAD") {
        assert.equal(JSON.parse(text).error.message, `no such route: ${method} ${path}`);
      }
    }
  });

  it("leaves the project's files to the project: /__preview itself, other methods, HEAD", async () => {
    const file = await fetch(`${base}/__preview`);
    assert.equal(file.status, 200);
    assert.equal(await file.text(), "a project file");
    const post = await fetch(`${base}/index.html`, { method: "POST", body: "x" });
    assert.equal(post.status, 405);
    assert.equal(await post.text(), "method not allowed");
    const head = await fetch(`${base}/index.html`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-type"), "text/html; charset=utf-8");
    const missing = await fetch(`${base}/missing.css`);
    assert.equal(missing.status, 404);
    await missing.body?.cancel();
  });

  it("serves the studio, its API and a stage page with their types, never cached", async () => {
    const cases: [string, number, string][] = [
      ["/", 200, "text/html; charset=utf-8"],
      ["/__preview/compositions", 200, "application/json; charset=utf-8"],
      ["/__preview/composition?entry=../x.html", 400, "application/json; charset=utf-8"],
      ["/__preview/runtime.js", 200, "text/javascript; charset=utf-8"],
      ["/__preview/renders/..%2Fx.mp4", 404, "application/json; charset=utf-8"],
      ["/index.html?vars=%7B%7D", 200, "text/html; charset=utf-8"],
    ];
    for (const [path, status, type] of cases) {
      const response = await fetch(`${base}${path}`);
      assert.equal(response.status, status, path);
      assert.equal(response.headers.get("content-type"), type, path);
      assert.equal(response.headers.get("cache-control"), "no-store", path);
      await response.body?.cancel();
    }
    const render = await fetch(`${base}/__preview/render/cancel`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.deepEqual(await render.json(), {
      ok: true,
      cancelled: false,
      status: { state: "idle", id: 0 },
    });
  });
});
