/**
 * Renders from a URL (`url` instead of `asset_id`): the server downloads the project (a
 * zip, or a single HTML file) under the address policy of `src/net/address_policy.ts`:
 * every hop's host must resolve only to public addresses, in any IP notation, unless the
 * server runs with `--allow-private-urls` (development). Redirects are followed by hand
 * (at most 5), each hop checked, and the body streams with the upload limit as a cap: the
 * download is aborted as soon as it passes it.
 *
 * @module
 */

import { BlockedAddressError } from "../../net/address_policy.ts";
import { DownloadTooLargeError, guardedGet, UnsupportedUrlError } from "../../net/guarded_fetch.ts";
import { ApiError } from "./errors.ts";

export { isPublicAddress } from "../../net/address_policy.ts";

/** What a URL source gave. */
export interface UrlProject {
  kind: "zip" | "html";
  bytes: Uint8Array;
  /** The final URL after redirects. */
  url: string;
}

/**
 * Downloads a project from `source`, refusing private addresses and anything over
 * `maxBytes`.
 */
export async function fetchProjectUrl(
  source: string,
  options: { allowPrivate: boolean; maxBytes: number; timeoutMs?: number },
): Promise<UrlProject> {
  try {
    const got = await guardedGet(source, {
      field: "url",
      allowPrivate: options.allowPrivate,
      maxBytes: options.maxBytes,
      timeoutMs: options.timeoutMs ?? 60000,
    });
    const bytes = new Uint8Array(got.bytes);
    let at = 0;
    for (const chunk of got.chunks) {
      bytes.set(chunk, at);
      at += chunk.length;
    }
    const isZip = bytes[0] === 0x50 && bytes[1] === 0x4b;
    return { kind: isZip ? "zip" : "html", bytes, url: got.url };
  } catch (error) {
    if (error instanceof BlockedAddressError || error instanceof UnsupportedUrlError) {
      throw new ApiError(400, "vid_invalid_request", error.message, "url");
    }
    if (error instanceof DownloadTooLargeError) {
      throw new ApiError(413, "vid_payload_too_large", error.message, "url");
    }
    throw new ApiError(422, "vid_project_invalid", (error as Error).message, "url");
  }
}
