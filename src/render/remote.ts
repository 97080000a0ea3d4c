/**
 * Remote media from variables: a string variable holding an `http(s)` URL (spec rule 6:
 * media are passed as URLs) is downloaded once per render and served to every page from
 * that local copy, so parallel workers never download it again and every frame sees the
 * same bytes.
 *
 * @module
 */

import { writeFile } from "node:fs/promises";
import { Buffer } from "node:buffer";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Variables } from "../composition/declarations.ts";
import type { CdpSession } from "./cdp.ts";

/** A downloaded remote asset. */
export interface RemoteAsset {
  url: string;
  /** Local copy. */
  file: string;
  contentType: string;
  bytes: number;
}

/** Remote assets keyed by their URL. */
export type RemoteAssets = Record<string, RemoteAsset>;

/** A remote URL in a variable could not be downloaded. */
export class RemoteMediaError extends Error {
  override name = "RemoteMediaError";
  /** The variable holding the URL. */
  readonly field: string;
  readonly url: string;
  constructor(variable: string, url: string, reason: string) {
    super(`variable "${variable}": cannot download ${url} (${reason})`);
    this.field = variable;
    this.url = url;
  }
}

/** The `http(s)` URLs among the variable values, with the first variable naming each. */
export function remoteUrlsIn(values: Variables): { variable: string; url: string }[] {
  const found = new Map<string, string>();
  for (const [variable, value] of Object.entries(values)) {
    if (typeof value !== "string" || !/^https?:\/\//i.test(value.trim())) continue;
    try {
      const url = new URL(value.trim()).href;
      if (!found.has(url)) found.set(url, variable);
    } catch {
      // not a URL after all: the composition gets the string as is
    }
  }
  return [...found].map(([url, variable]) => ({ variable, url }));
}

/**
 * Downloads every remote URL among the variables once into `workDir`.
 *
 * @example
 * ```ts
 * const assets = await fetchRemoteMedia({ logo: "https://cdn.example.com/logo.png" }, "/tmp/w");
 * ```
 */
export async function fetchRemoteMedia(
  values: Variables,
  workDir: string,
  timeoutMs = 60000,
): Promise<RemoteAssets> {
  const assets: RemoteAssets = {};
  for (const [index, { variable, url }] of remoteUrlsIn(values).entries()) {
    let response: Response;
    try {
      response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw new RemoteMediaError(variable, url, (error as Error).message);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new RemoteMediaError(variable, url, `HTTP ${response.status}`);
    }
    const body = new Uint8Array(await response.arrayBuffer());
    const file = join(workDir, `remote-${index}`);
    await writeFile(file, body);
    assets[url] = {
      url,
      file,
      contentType: response.headers.get("content-type") ?? "application/octet-stream",
      bytes: body.length,
    };
  }
  return assets;
}

function escapePattern(url: string): string {
  return url.replace(/[\\*?]/g, (c) => `\\${c}`);
}

/**
 * Answers the page's requests for the downloaded URLs from the local copies (CDP Fetch
 * interception); other requests go to the network as usual.
 */
export async function serveRemoteAssets(page: CdpSession, assets: RemoteAssets): Promise<void> {
  const urls = Object.keys(assets);
  if (urls.length === 0) return;
  const bodies = new Map<string, string>();
  page.on("Fetch.requestPaused", async (params) => {
    const requestId = params.requestId as string;
    const url = (params.request as { url: string }).url.split("#")[0];
    const asset = assets[url];
    try {
      if (!asset) {
        await page.send("Fetch.continueRequest", { requestId });
        return;
      }
      let body = bodies.get(url);
      if (body === undefined) {
        body = Buffer.from(await readFile(asset.file)).toString("base64");
        bodies.set(url, body);
      }
      await page.send("Fetch.fulfillRequest", {
        requestId,
        responseCode: 200,
        responseHeaders: [
          { name: "content-type", value: asset.contentType },
          { name: "content-length", value: String(asset.bytes) },
          { name: "access-control-allow-origin", value: "*" },
        ],
        body,
      });
    } catch {
      // the page went away mid-request
    }
  });
  await page.send("Fetch.enable", {
    patterns: urls.map((url) => ({ urlPattern: escapePattern(url), requestStage: "Request" })),
  });
}
