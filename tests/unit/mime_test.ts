/**
 * Unit tests of the content-type table (src/util/mime.ts), and that the project server
 * Chromium renders from answers with it: the types on the wire for a page, a module, a font,
 * a video and an unknown file.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { contentTypeOf, knownContentType } from "../../src/util/mime.ts";
import { serveProject } from "../../src/render/serve.ts";

describe("content types", () => {
  it("maps extensions case-insensitively, by the last dot of the last path segment", () => {
    assert.equal(contentTypeOf("index.html"), "text/html; charset=utf-8");
    assert.equal(contentTypeOf("renders/OUT.MP4"), "video/mp4");
    assert.equal(contentTypeOf("a.b/c.mov"), "video/quicktime");
    assert.equal(contentTypeOf("a.mp4/readme"), "application/octet-stream");
    assert.equal(contentTypeOf("x.toString"), "application/octet-stream");
    assert.equal(knownContentType("a.zip"), undefined);
  });

  it("is what the project server sends", async () => {
    const dir = await mkdtemp(join(tmpdir(), "vid-mime-"));
    try {
      for (const name of ["index.html", "app.mjs", "font.woff2", "clip.webm", "blob.xyz"]) {
        await writeFile(join(dir, name), "x");
      }
      const server = await serveProject(dir);
      try {
        const types: Record<string, string | null> = {};
        for (const name of ["index.html", "app.mjs", "font.woff2", "clip.webm", "blob.xyz"]) {
          const response = await fetch(new URL(name, server.url));
          await response.body?.cancel();
          types[name] = response.headers.get("content-type");
        }
        assert.deepEqual(types, {
          "index.html": "text/html; charset=utf-8",
          "app.mjs": "text/javascript; charset=utf-8",
          "font.woff2": "font/woff2",
          "clip.webm": "video/webm",
          "blob.xyz": "application/octet-stream",
        });
      } finally {
        await server.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
