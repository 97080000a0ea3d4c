/**
 * The one network policy of server-side renders: a request may reach a host only when
 * every address it resolves to is publicly routable. Loopback, private, link-local,
 * unique-local, CGNAT, multicast, reserved, documentation and unspecified ranges are
 * refused, in every notation a URL can spell them (`2130706433`, `0177.0.0.1`,
 * `0x7f.0.0.1`, `127.1`, `[::ffff:127.0.0.1]`, `[::ffff:7f00:1]`, NAT64 and 6to4 forms of
 * private IPv4, ...): hosts are parsed with the WHATWG URL parser (as browsers do), IPv6
 * addresses byte by byte, and names resolved with `node:dns` `lookup` (`all: true`), so a
 * name with one private address among public ones is refused too.
 *
 * The URL-source download, remote media, webhooks and the render browser's proxy
 * (`guard_proxy.ts`) all decide with {@linkcode resolvePublicHost}, and connect to the
 * addresses it checked (never resolving again), so DNS rebinding cannot slip past.
 *
 * Node built-ins only: the Lambda worker bundles this file for Node 22.
 *
 * @module
 */

import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** A host was refused because it is (or resolves to) a non-public address. */
export class BlockedAddressError extends VidError {
  override name = "BlockedAddressError";
  /** The field (or variable) holding the URL. */
  override readonly field: string;
  /** The host as the URL names it. */
  readonly host: string;
  /**
   * The refused address, when the host resolved: for the operator's logs only; the
   * message never carries it.
   */
  readonly address?: string;
  constructor(field: string, host: string, message: string, address?: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
    this.host = host;
    this.address = address;
  }
}

/** A resolved, checked address to connect to. */
export interface CheckedAddress {
  address: string;
  family: 4 | 6;
}

/** Parses dotted-decimal IPv4 (already canonical) into 4 bytes. */
export function ipv4Bytes(ip: string): number[] | undefined {
  const parts = ip.split(".");
  if (parts.length !== 4) return undefined;
  const bytes = parts.map((part) => /^\d{1,3}$/.test(part) ? Number(part) : NaN);
  return bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255) ? bytes : undefined;
}

/** Parses any IPv6 text form (`::`, embedded IPv4 tail, zone id) into 16 bytes. */
export function ipv6Bytes(text: string): number[] | undefined {
  let ip = text.replace(/^\[|\]$/g, "").toLowerCase();
  const zone = ip.indexOf("%");
  if (zone >= 0) ip = ip.slice(0, zone);
  let tail: number[] = [];
  const lastColon = ip.lastIndexOf(":");
  if (ip.slice(lastColon + 1).includes(".")) {
    const v4 = ipv4Bytes(ip.slice(lastColon + 1));
    if (!v4) return undefined;
    tail = v4;
    ip = ip.slice(0, lastColon + 1) + "0:0";
  }
  const halves = ip.split("::");
  if (halves.length > 2) return undefined;
  const groups = (half: string): number[] | undefined => {
    if (half === "") return [];
    const out: number[] = [];
    for (const group of half.split(":")) {
      if (!/^[0-9a-f]{1,4}$/.test(group)) return undefined;
      out.push(parseInt(group, 16));
    }
    return out;
  };
  const head = groups(halves[0]);
  const rest = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !rest) return undefined;
  const missing = 8 - head.length - rest.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const words = [...head, ...Array(halves.length === 2 ? missing : 0).fill(0), ...rest];
  const bytes = words.flatMap((w) => [w >> 8, w & 0xff]);
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

function publicV4(bytes: readonly number[]): boolean {
  const [a, b, c] = bytes;
  if (a === 0 || a === 10 || a === 127 || a >= 224) return false; // this-net, private, loopback, multicast, reserved
  if (a === 100 && b >= 64 && b <= 127) return false; // CGNAT 100.64/10
  if (a === 169 && b === 254) return false; // link-local (cloud metadata)
  if (a === 172 && b >= 16 && b <= 31) return false; // private 172.16/12
  if (a === 192 && b === 168) return false; // private 192.168/16
  if (a === 192 && b === 0 && (c === 0 || c === 2)) return false; // IETF, TEST-NET-1
  if (a === 192 && b === 88 && c === 99) return false; // 6to4 relay anycast
  if (a === 198 && (b === 18 || b === 19)) return false; // benchmarking 198.18/15
  if (a === 198 && b === 51 && c === 100) return false; // TEST-NET-2
  if (a === 203 && b === 0 && c === 113) return false; // TEST-NET-3
  return true;
}

function publicV6(bytes: readonly number[]): boolean {
  const word = (i: number): number => (bytes[2 * i] << 8) | bytes[2 * i + 1];
  const zeros = (from: number, to: number): boolean => bytes.slice(from, to).every((b) => b === 0);
  // ::ffff:a.b.c.d (v4-mapped): the IPv4 address decides.
  if (zeros(0, 10) && word(5) === 0xffff) return publicV4(bytes.slice(12));
  // 64:ff9b::/96 (NAT64 well-known prefix): the embedded IPv4 address decides.
  if (word(0) === 0x64 && word(1) === 0xff9b && zeros(4, 12)) return publicV4(bytes.slice(12));
  // 2002::/16 (6to4): the embedded IPv4 address decides.
  if (word(0) === 0x2002) return publicV4(bytes.slice(2, 6));
  // Only 2000::/3 is global unicast: ::, ::1, v4-compatible, 64:ff9b:1::/48, 100::/64,
  // fc00::/7, fe80::/10, fec0::/10 and ff00::/8 all fall outside it.
  if ((bytes[0] & 0xe0) !== 0x20) return false;
  if (word(0) === 0x2001 && word(1) < 0x0200) return false; // 2001::/23 IETF (Teredo, ORCHID...)
  if (word(0) === 0x2001 && word(1) === 0x0db8) return false; // documentation
  if (word(0) === 0x3fff && word(1) < 0x1000) return false; // documentation 3fff::/20
  return true;
}

/**
 * Whether an IP address is publicly routable. Accepts dotted IPv4 and any IPv6 text form
 * (bracketed or not); anything else is not an address and not public.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(isPublicAddress("8.8.8.8"), true);
 * assert.equal(isPublicAddress("10.0.0.1"), false);
 * assert.equal(isPublicAddress("::ffff:7f00:1"), false); // 127.0.0.1, v4-mapped
 * ```
 */
export function isPublicAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, "");
  const v4 = isIP(bare) === 4 ? ipv4Bytes(bare) : undefined;
  if (v4) return publicV4(v4);
  const v6 = ipv6Bytes(bare);
  return v6 ? publicV6(v6) : false;
}

/**
 * Whether an address is loopback (`127.0.0.0/8`, `::1`, or v4-mapped loopback), in any
 * text form.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(isLoopbackAddress("127.0.0.2"), true);
 * assert.equal(isLoopbackAddress("::ffff:7f00:1"), true);
 * ```
 */
export function isLoopbackAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, "");
  const v4 = isIP(bare) === 4 ? ipv4Bytes(bare) : undefined;
  if (v4) return v4[0] === 127;
  const v6 = ipv6Bytes(bare);
  if (!v6) return false;
  if (v6.slice(0, 15).every((b) => b === 0) && v6[15] === 1) return true;
  return v6.slice(0, 10).every((b) => b === 0) && v6[10] === 0xff && v6[11] === 0xff &&
    v6[12] === 127;
}

/**
 * A URL host in canonical form, as a browser would connect to it: `0x7f.1`, `2130706433`
 * and `0177.0.0.1` all become `127.0.0.1`, IPv6 loses its brackets. `ip` tells whether
 * it is an address (no DNS needed).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(canonicalHost("0x7f.1"), { host: "127.0.0.1", ip: 4 });
 * assert.deepEqual(canonicalHost("[::ffff:127.0.0.1]"), { host: "::ffff:7f00:1", ip: 6 });
 * ```
 */
export function canonicalHost(host: string): { host: string; ip: 0 | 4 | 6 } {
  let hostname = host;
  try {
    hostname =
      new URL(`http://${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}/`)
        .hostname;
  } catch {
    // not a URL host: checked as given (resolution fails)
  }
  const bare = hostname.replace(/^\[|\]$/g, "");
  return { host: bare, ip: isIP(bare) as 0 | 4 | 6 };
}

/**
 * Resolves `host` (any notation) and returns its addresses when every one is public.
 *
 * @param host A URL host (`example.com`, `127.1`, `[::1]`).
 * @param field The field named in the error (`url`, `callback_url`, a variable).
 * @param options `allowLoopback` also accepts loopback addresses (development).
 * @throws {BlockedAddressError} When the host cannot be resolved or any address it
 * resolves to is not public; the message is the same in both cases (`<field>: <host> is
 * not a public address; …`) and never names the resolved address.
 *
 * @example
 * ```ts no_run
 * await resolvePublicHost("example.com", "url"); // [{ address: "93.184.215.14", family: 4 }]
 * await resolvePublicHost("0x7f.1", "url"); // throws BlockedAddressError
 * ```
 */
export async function resolvePublicHost(
  host: string,
  field: string,
  options: { allowLoopback?: boolean } = {},
): Promise<CheckedAddress[]> {
  const canonical = canonicalHost(host);
  // One message whatever went wrong: saying what a name resolves to, or that it does not
  // resolve, would let a tenant map the server's internal DNS through error messages.
  const refused = (address?: string): BlockedAddressError =>
    new BlockedAddressError(
      field,
      host,
      `${field}: ${host} is not a public address; this server reaches public addresses ` +
        `only (operators allow private ones with \`vid server --allow-private-urls\`, or ` +
        `VID_ALLOW_PRIVATE_URLS=1 on the Lambda function)`,
      address,
    );
  let addresses: CheckedAddress[];
  if (canonical.ip !== 0) {
    addresses = [{ address: canonical.host, family: canonical.ip }];
  } else {
    try {
      addresses = (await lookup(canonical.host, { all: true, verbatim: true }))
        .map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
    } catch {
      throw refused();
    }
    if (addresses.length === 0) throw refused();
  }
  const blocked = addresses.find((entry) =>
    !isPublicAddress(entry.address) &&
    !(options.allowLoopback && isLoopbackAddress(entry.address))
  );
  if (blocked) throw refused(blocked.address);
  return addresses;
}
