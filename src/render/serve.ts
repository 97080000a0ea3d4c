/**
 * A static file server on loopback that serves the project directory to the capture
 * browser. Pages load over http (not file://) so fetch, fonts and modules behave as in
 * production. Paths never escape the project directory.
 *
 * @module
 */

import { createServer, type Server } from "node:http";
import { createReadStream, realpathSync, statSync } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import { join, sep } from "node:path";
import { contentTypeOf } from "../util/mime.ts";

/** A running project server. */
export interface ProjectServer {
  /** Base URL ending in `/`, e.g. `http://127.0.0.1:41234/`. */
  readonly url: string;
  /** Paths requested that did not exist (for missing-asset errors). */
  readonly missing: string[];
  /**
   * Serves `file` (outside the project, e.g. a prepared media proxy) at `/__vid/<name>`;
   * returns its absolute URL.
   */
  mount(name: string, file: string): string;
  /**
   * The file a URL of this server serves (a project file or a mounted one); undefined for
   * other URLs and missing files. Lets ffmpeg read media straight from disk.
   */
  localFile(url: string): string | undefined;
  close(): Promise<void>;
}

/** Parses a single `bytes=a-b` range against `size`; undefined when absent or unusable. */
export function parseRange(
  header: string | undefined,
  size: number,
): { start: number; end: number } | undefined {
  const match = header?.match(/^bytes=(\d*)-(\d*)$/);
  if (!match || (match[1] === "" && match[2] === "")) return undefined;
  let start: number;
  let end: number;
  if (match[1] === "") {
    start = Math.max(0, size - Number(match[2]));
    end = size - 1;
  } else {
    start = Number(match[1]);
    end = match[2] === "" ? size - 1 : Math.min(Number(match[2]), size - 1);
  }
  return start <= end && start < size ? { start, end } : undefined;
}

/**
 * Serves `root` on 127.0.0.1 at a free port.
 *
 * @example
 * ```ts no_run
 * const server = await serveProject("examples/hello");
 * console.log(server.url + "index.html");
 * await server.close();
 * ```
 */
export async function serveProject(root: string): Promise<ProjectServer> {
  const base = await realpath(root);
  const missing: string[] = [];
  const mounts = new Map<string, string>();
  const server: Server = createServer(async (request, response) => {
    try {
      const url = new URL(request.url ?? "/", "http://localhost");
      let path = decodeURIComponent(url.pathname);
      if (path.endsWith("/")) path += "index.html";
      const mounted = mounts.get(path);
      const file = mounted ?? await realpath(join(base, path)).catch(() => undefined);
      if (!file || (!mounted && file !== base && !file.startsWith(base + sep))) {
        missing.push(path);
        response.writeHead(404, { "content-type": "text/plain" }).end(`not found: ${path}`);
        return;
      }
      const info = await stat(file);
      if (!info.isFile()) {
        response.writeHead(404).end();
        return;
      }
      const headers: Record<string, string> = {
        "content-type": contentTypeOf(file),
        "accept-ranges": "bytes",
        "cache-control": "no-store",
        "access-control-allow-origin": "*",
      };
      // Media elements seek with range requests.
      const range = parseRange(request.headers.range, info.size);
      if (request.headers.range && !range) {
        response.writeHead(416, { "content-range": `bytes */${info.size}` }).end();
        return;
      }
      const start = range?.start ?? 0;
      const end = range?.end ?? info.size - 1;
      headers["content-length"] = String(info.size === 0 ? 0 : end - start + 1);
      if (range) headers["content-range"] = `bytes ${start}-${end}/${info.size}`;
      response.writeHead(range ? 206 : 200, headers);
      if (request.method === "HEAD" || info.size === 0) {
        response.end();
        return;
      }
      createReadStream(file, { start, end }).pipe(response);
    } catch (error) {
      response.writeHead(500).end(String(error));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}/`;
  return {
    url,
    missing,
    mount(name: string, file: string): string {
      mounts.set(`/__vid/${name}`, file);
      return `${url}__vid/${encodeURIComponent(name)}`;
    },
    localFile(src: string): string | undefined {
      if (!src.startsWith(url)) return undefined;
      try {
        const path = decodeURIComponent(new URL(src).pathname);
        const mounted = mounts.get(path);
        const file = mounted ?? realpathSync(join(base, path));
        if (!mounted && !file.startsWith(base + sep)) return undefined;
        return statSync(file).isFile() ? file : undefined;
      } catch {
        return undefined;
      }
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
