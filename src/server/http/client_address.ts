/**
 * Whose request is this: the address the throttles count failures against. By default it is
 * the connection's peer. Behind a reverse proxy every client would share the proxy's address
 * (and one guesser would lock everyone out), so `vid server --trusted-proxy <cidr>` names
 * the proxies whose `X-Forwarded-For` is believed: only when the peer is one of them, the
 * header's hops are read from the right (each proxy appends the address it saw), skipping
 * trusted proxies, and the first hop that is not one is the client. Anything left of that
 * hop was written by the client and is never believed, so a client cannot pick its address
 * by sending the header itself.
 *
 * @module
 */

import { isIP } from "node:net";
import { VidError } from "../../errors.ts";
import { ipv4Bytes, ipv6Bytes } from "../../net/address_policy.ts";

/** A `--trusted-proxy` value that is not an address or a CIDR range. */
export class TrustedProxyError extends VidError {
  override name = "TrustedProxyError";
  constructor(value: string) {
    super(
      `--trusted-proxy must be an address or a CIDR range such as 10.0.0.0/8 or fd00::/8, ` +
        `not "${value}"`,
      { field: "trustedProxies", flag: "--trusted-proxy" },
    );
  }
}

/** One trusted range, as 16 bytes (IPv4 as v4-mapped IPv6) and a prefix length in bits. */
interface Range {
  bytes: number[];
  bits: number;
}

/** The parsed `--trusted-proxy` ranges; empty: no proxy is trusted. */
export type TrustedProxies = readonly Range[];

/** An address's 16 bytes (IPv4 as `::ffff:a.b.c.d`, so both spellings match), or none. */
function addressBytes(text: string): number[] | undefined {
  const bare = text.trim().replace(/^\[|\]$/g, "");
  if (isIP(bare) === 4) {
    const v4 = ipv4Bytes(bare);
    return v4 && [...Array(10).fill(0), 0xff, 0xff, ...v4];
  }
  return isIP(bare) === 6 ? ipv6Bytes(bare) : undefined;
}

/**
 * Parses `--trusted-proxy` values: addresses (`10.0.0.7`, one host) or CIDR ranges
 * (`10.0.0.0/8`, `fd00::/8`).
 *
 * @throws {TrustedProxyError} A value that is neither.
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(parseTrustedProxies(["127.0.0.1/32", "fd00::/8"]).length, 2);
 * assert.throws(() => parseTrustedProxies(["10.0.0.0/33"]), TrustedProxyError);
 * ```
 */
export function parseTrustedProxies(values: readonly string[]): TrustedProxies {
  return values.map((value) => {
    const [address, prefix, extra] = value.trim().split("/");
    const bytes = addressBytes(address);
    const v4 = isIP(address) === 4;
    const max = v4 ? 32 : 128;
    const given = prefix === undefined ? max : /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    if (!bytes || extra !== undefined || !(given >= 0 && given <= max)) {
      throw new TrustedProxyError(value);
    }
    return { bytes, bits: v4 ? given + 96 : given };
  });
}

/** Whether `address` falls in one of `ranges`. */
function trusted(address: string, ranges: TrustedProxies): boolean {
  const bytes = addressBytes(address);
  if (!bytes) return false;
  return ranges.some((range) => {
    for (let bit = 0; bit < range.bits; bit += 8) {
      const mask = range.bits - bit >= 8 ? 0xff : (0xff << (8 - (range.bits - bit))) & 0xff;
      if ((bytes[bit / 8] & mask) !== (range.bytes[bit / 8] & mask)) return false;
    }
    return true;
  });
}

/**
 * The client address of a request served by `Deno.serve` (Hono passes the serve info as the
 * context's env): the peer, or, when the peer is a trusted proxy, the rightmost
 * `X-Forwarded-For` hop that is not one (a hop that is not an address ends the walk at the
 * proxy that passed it on). `"unknown"` for in-process requests.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const env = { remoteAddr: { hostname: "10.0.0.2" } };
 * const via = (xff: string) => new Headers({ "x-forwarded-for": xff });
 * const proxies = parseTrustedProxies(["10.0.0.0/8"]);
 * assert.equal(clientAddress(env, via("1.2.3.4, 203.0.113.9"), proxies), "203.0.113.9");
 * assert.equal(clientAddress(env, via("203.0.113.9, 10.0.0.1"), proxies), "203.0.113.9");
 * assert.equal(clientAddress(env, via("203.0.113.9"), []), "10.0.0.2"); // no proxy trusted
 * ```
 */
export function clientAddress(env: unknown, headers: Headers, proxies: TrustedProxies): string {
  const info = env as { remoteAddr?: { hostname?: unknown } } | undefined;
  const host = info?.remoteAddr?.hostname;
  if (typeof host !== "string") return "unknown";
  if (proxies.length === 0 || !trusted(host, proxies)) return host;
  const hops = (headers.get("x-forwarded-for") ?? "").split(",").map((hop) => hop.trim())
    .filter((hop) => hop !== "");
  let client = host;
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!addressBytes(hops[i])) return client;
    client = hops[i].replace(/^\[|\]$/g, "");
    if (!trusted(client, proxies)) return client;
  }
  return client;
}
