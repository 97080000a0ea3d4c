/**
 * Remote media from variables: a string variable holding an `http(s)` URL (media are passed
 * as URL references, never inlined as base64) is downloaded once per render and served to every page from
 * that local copy, so parallel workers never download it again and every frame sees the
 * same bytes. Downloads stream to disk with a byte cap; server-side renders also refuse
 * private and loopback hosts at every redirect hop (`src/net/address_policy.ts`).
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { open, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Variables } from "../composition/declarations.ts";
import { BlockedAddressError } from "../net/address_policy.ts";
import { DownloadTooLargeError, guardedGet } from "../net/guarded_fetch.ts";
import type { CdpSession } from "./cdp.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

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
export class RemoteMediaError extends VidError {
  override name = "RemoteMediaError";
  /** The variable holding the URL. */
  override readonly field: string;
  readonly url: string;
  constructor(variable: string, url: string, reason: string) {
    super(`variable "${variable}": cannot download ${url} (${reason})`, { exitCode: EXIT_FAILED });
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

/** Largest remote media file a render downloads, by default: 512 MiB. */
export const MAX_REMOTE_MEDIA_BYTES = 512 * 1024 * 1024;

/** Options of {@linkcode fetchRemoteMedia}. */
export interface RemoteMediaOptions {
  /** Per download, redirects included. @default 60000 */
  timeoutMs?: number;
  /** Per file; the download is aborted as soon as it passes this. @default 512 MiB */
  maxBytes?: number;
  /**
   * Refuse URLs whose host is (or resolves to) a private or loopback address, at every
   * redirect hop (server-side renders). @default false
   */
  blockPrivateNetwork?: boolean;
}

/**
 * Downloads every remote URL among the variables once into `workDir`, streaming each to
 * its file and aborting at `maxBytes`; redirects are followed by hand (at most 5), each
 * hop checked when `blockPrivateNetwork` is set.
 *
 * @example
 * ```ts no_run
 * const assets = await fetchRemoteMedia({ logo: "https://cdn.example.com/logo.png" }, "/tmp/w");
 * ```
 */
export async function fetchRemoteMedia(
  values: Variables,
  workDir: string,
  options: RemoteMediaOptions = {},
): Promise<RemoteAssets> {
  const assets: RemoteAssets = {};
  for (const [index, { variable, url }] of remoteUrlsIn(values).entries()) {
    assets[url] = await downloadRemote(variable, url, join(workDir, `remote-${index}`), options);
  }
  return assets;
}

/**
 * Downloads one remote URL into `file` (see {@linkcode fetchRemoteMedia}); `variable` is
 * named in errors.
 */
export async function downloadRemote(
  variable: string,
  url: string,
  file: string,
  options: RemoteMediaOptions = {},
): Promise<RemoteAsset> {
  const handle = await open(file, "w");
  try {
    const got = await guardedGet(url, {
      field: variable,
      maxBytes: options.maxBytes ?? MAX_REMOTE_MEDIA_BYTES,
      timeoutMs: options.timeoutMs ?? 60000,
      allowPrivate: options.blockPrivateNetwork !== true,
      sink: async (chunk) => {
        for (let at = 0; at < chunk.length;) {
          at += (await handle.write(chunk, at, chunk.length - at)).bytesWritten;
        }
      },
    });
    await handle.close();
    return { url, file, contentType: got.contentType, bytes: got.bytes };
  } catch (error) {
    await handle.close().catch(() => {});
    await rm(file, { force: true });
    const reason = error instanceof DownloadTooLargeError
      ? `over the ${error.limit} byte limit`
      : error instanceof BlockedAddressError
      ? error.message.slice(variable.length + 2)
      : (error as Error).message.replace(/^.*\((.*)\)$/s, "$1")
        .replace(`${variable}: ${url} answered`, "answered");
    throw new RemoteMediaError(variable, url, reason);
  }
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
