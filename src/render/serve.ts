/**
 * A static file server on loopback that serves the project directory to the capture
 * browser. Pages load over http (not file://) so fetch, fonts and modules behave as in
 * production. Paths never escape the project directory.
 *
 * @module
 */

import { createServer, type Server } from "node:http";
import { createReadStream } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import { extname, join, sep } from "node:path";

const MIME_TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".avif": "image/avif",
  ".ico": "image/x-icon",
  ".woff": "font/woff",
  ".woff2": "font/woff2",
  ".ttf": "font/ttf",
  ".otf": "font/otf",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
  ".mov": "video/quicktime",
  ".mp3": "audio/mpeg",
  ".m4a": "audio/mp4",
  ".wav": "audio/wav",
  ".ogg": "audio/ogg",
  ".txt": "text/plain; charset=utf-8",
};

/** A running project server. */
export interface ProjectServer {
  /** Base URL ending in `/`, e.g. `http://127.0.0.1:41234/`. */
  readonly url: string;
  /** Paths requested that did not exist (for missing-asset errors). */
  readonly missing: string[];
  close(): Promise<void>;
}

/**
 * Serves `root` on 127.0.0.1 at a free port.
 *
 * @example
 * ```ts
 * const server = await serveProject("examples/hello");
 * console.log(server.url + "index.html");
 * await server.close();
 * ```
 */
export async function serveProject(root: string): Promise<ProjectServer> {
  const base = await realpath(root);
  const missing: string[] = [];
  const server: Server = createServer(async (request, response) => {
    try {
      const url = new URL(request.url ?? "/", "http://localhost");
      let path = decodeURIComponent(url.pathname);
      if (path.endsWith("/")) path += "index.html";
      const file = await realpath(join(base, path)).catch(() => undefined);
      if (!file || (file !== base && !file.startsWith(base + sep))) {
        missing.push(path);
        response.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${path}`);
        return;
      }
      const info = await stat(file);
      if (!info.isFile()) {
        response.writeHead(404).end();
        return;
      }
      response.writeHead(200, {
        "content-type": MIME_TYPES[extname(file).toLowerCase()] ?? "application/octet-stream",
        "content-length": String(info.size),
        "cache-control": "no-store",
        "access-control-allow-origin": "*",
      });
      if (request.method === "HEAD") {
        response.end();
        return;
      }
      createReadStream(file).pipe(response);
    } catch (error) {
      response.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/`,
    missing,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
