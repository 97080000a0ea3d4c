/**
 * Render sources given as `url`: the SSRF guard (address classes, loopback refused by
 * default) and a real render from a URL through a server started with
 * `--allow-private-urls`, the development flag.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { fetchProjectUrl, isPublicAddress } from "../../src/server/http/url_source.ts";
import type { ApiError } from "../../src/server/http/errors.ts";
import { compositionHtml, probeVideo } from "../helpers.ts";
import { createAccount, startServerProcess } from "../server_process.ts";

async function serveBytes(body: Uint8Array | string, type: string) {
  const server = createServer((_request, response) => {
    response.writeHead(200, { "content-type": type }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/project`,
    close: () => server.close(),
  };
}

describe("url render sources", () => {
  it("classifies addresses: only public ones may be fetched", () => {
    for (const ip of ["8.8.8.8", "1.1.1.1", "2606:4700::1111", "172.32.0.1", "100.128.0.1"]) {
      assert.ok(isPublicAddress(ip), ip);
    }
    for (
      const ip of [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "::",
        "fc00::1",
        "fe80::1",
        "::ffff:127.0.0.1",
        "not-an-ip",
      ]
    ) {
      assert.ok(!isPublicAddress(ip), ip);
    }
  });

  it("refuses loopback URLs unless allowed, and bodies over the limit", async () => {
    const source = await serveBytes("<html></html>", "text/html");
    try {
      await assert.rejects(
        fetchProjectUrl(source.url, { allowPrivate: false, maxBytes: 1000 }),
        (error: ApiError) =>
          error.status === 400 &&
          /^url: 127\.0\.0\.1 is not a public address; /.test(error.message),
      );
      const fetched = await fetchProjectUrl(source.url, { allowPrivate: true, maxBytes: 1000 });
      assert.equal(fetched.kind, "html");
      await assert.rejects(
        fetchProjectUrl(source.url, { allowPrivate: true, maxBytes: 5 }),
        (error: ApiError) => error.status === 413,
      );
      await assert.rejects(
        fetchProjectUrl("ftp://example.com/x", { allowPrivate: true, maxBytes: 5 }),
        (error: ApiError) => error.field === "url" && /http\(s\)/.test(error.message),
      );
    } finally {
      source.close();
    }
  });

  it("renders a single-HTML-file URL on a server started with --allow-private-urls", async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "vid-server-url-" });
    const source = await serveBytes(
      compositionHtml(`<div style="position:absolute;inset:0;background:#00f"></div>`, {
        id: "fromurl",
        duration: 0.5,
      }),
      "text/html",
    );
    const key = await createAccount(dataDir, "u@example.com");
    const server = await startServerProcess(dataDir, ["--allow-private-urls"]);
    try {
      const base = server.url;
      const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
      const submitted = await fetch(`${base}/v3/vid/renders`, {
        method: "POST",
        headers,
        body: JSON.stringify({ url: source.url, fps: 10 }),
      });
      const created = await submitted.json();
      assert.equal(submitted.status, 201, JSON.stringify(created));
      let render: Record<string, unknown> = created;
      const deadline = Date.now() + 60000;
      while (render.status !== "completed" && render.status !== "failed" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200));
        render = await (await fetch(`${base}/v3/vid/renders/${created.render_id}`, { headers }))
          .json();
      }
      assert.equal(render.status, "completed", String(render.error));
      const file = await Deno.makeTempFile({ suffix: ".mp4" });
      await Deno.writeFile(
        file,
        new Uint8Array(await (await fetch(String(render.video_url))).arrayBuffer()),
      );
      assert.equal((await probeVideo(file)).frames, 5);
      await Deno.remove(file);
    } finally {
      await server.stop();
      source.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  });
});
