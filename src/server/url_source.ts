/**
 * Renders from a URL (`url` instead of `asset_id`): the server downloads the project (a
 * zip, or a single HTML file) with an SSRF guard. Every hop's host must resolve only to
 * public addresses: loopback, private, link-local, unique-local, CGNAT, multicast and
 * unspecified ranges are refused unless the server runs with `--allow-private-urls`
 * (development). Redirects are followed by hand (at most 5) so each hop is checked.
 *
 * @module
 */

import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { ApiError } from "./errors.ts";

/** What a URL source gave. */
export interface UrlProject {
  kind: "zip" | "html";
  bytes: Uint8Array;
  /** The final URL after redirects. */
  url: string;
}

function ipv4Parts(ip: string): number[] {
  return ip.split(".").map(Number);
}

/**
 * Whether an IP address is publicly routable (not loopback, private, link-local,
 * unique-local, CGNAT, multicast, reserved or unspecified).
 *
 * @example
 * ```ts
 * isPublicAddress("8.8.8.8"); // true
 * isPublicAddress("10.0.0.1"); // false
 * ```
 */
export function isPublicAddress(ip: string): boolean {
  const version = isIP(ip);
  if (version === 4) {
    const [a, b] = ipv4Parts(ip);
    if (a === 0 || a === 10 || a === 127 || a >= 224) return false;
    if (a === 100 && b >= 64 && b <= 127) return false;
    if (a === 169 && b === 254) return false;
    if (a === 172 && b >= 16 && b <= 31) return false;
    if (a === 192 && b === 168) return false;
    if (a === 192 && b === 0) return false;
    if (a === 198 && (b === 18 || b === 19)) return false;
    return true;
  }
  if (version === 6) {
    const lower = ip.toLowerCase();
    if (lower === "::" || lower === "::1") return false;
    const mapped = lower.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/);
    if (mapped) return isPublicAddress(mapped[1]);
    const first = parseInt(lower.split(":")[0] || "0", 16);
    if ((first & 0xfe00) === 0xfc00) return false; // fc00::/7 unique local
    if ((first & 0xffc0) === 0xfe80) return false; // fe80::/10 link local
    if ((first & 0xff00) === 0xff00) return false; // multicast
    return true;
  }
  return false;
}

async function checkHost(url: URL, allowPrivate: boolean): Promise<void> {
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ApiError(400, "vid_invalid_request", "url: must be an http(s) URL", "url");
  }
  if (url.username || url.password) {
    throw new ApiError(400, "vid_invalid_request", "url: must not carry credentials", "url");
  }
  if (allowPrivate) return;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  try {
    addresses = isIP(host)
      ? [host]
      : (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch {
    throw new ApiError(400, "vid_invalid_request", `url: cannot resolve ${host}`, "url");
  }
  const blocked = addresses.find((address) => !isPublicAddress(address));
  if (blocked !== undefined) {
    throw new ApiError(
      400,
      "vid_invalid_request",
      `url: ${host} resolves to ${blocked}, a private or loopback address; the server only ` +
        `fetches public URLs`,
      "url",
    );
  }
}

/**
 * Downloads a project from `source`, refusing private addresses and anything over
 * `maxBytes`.
 */
export async function fetchProjectUrl(
  source: string,
  options: { allowPrivate: boolean; maxBytes: number; timeoutMs?: number },
): Promise<UrlProject> {
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    throw new ApiError(400, "vid_invalid_request", "url: is not a URL", "url");
  }
  const signal = AbortSignal.timeout(options.timeoutMs ?? 60000);
  for (let hop = 0; hop <= 5; hop++) {
    await checkHost(url, options.allowPrivate);
    let response: Response;
    try {
      response = await fetch(url, { redirect: "manual", signal });
    } catch (error) {
      throw new ApiError(
        422,
        "vid_project_invalid",
        `url: cannot download ${url.href} (${(error as Error).message})`,
        "url",
      );
    }
    if (response.status >= 300 && response.status < 400 && response.headers.has("location")) {
      await response.body?.cancel();
      url = new URL(response.headers.get("location")!, url);
      continue;
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new ApiError(
        422,
        "vid_project_invalid",
        `url: ${url.href} answered HTTP ${response.status}`,
        "url",
      );
    }
    const declared = Number(response.headers.get("content-length"));
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      await response.body?.cancel();
      throw new ApiError(
        413,
        "vid_payload_too_large",
        `url: ${url.href} is ${declared} bytes, over the ${options.maxBytes} byte limit`,
        "url",
      );
    }
    const bytes = new Uint8Array(await response.arrayBuffer());
    if (bytes.length > options.maxBytes) {
      throw new ApiError(
        413,
        "vid_payload_too_large",
        `url: ${url.href} is over the ${options.maxBytes} byte limit`,
        "url",
      );
    }
    const isZip = bytes[0] === 0x50 && bytes[1] === 0x4b;
    return { kind: isZip ? "zip" : "html", bytes, url: url.href };
  }
  throw new ApiError(422, "vid_project_invalid", "url: more than 5 redirects", "url");
}
