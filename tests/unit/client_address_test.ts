/**
 * `--trusted-proxy` and the client address the throttles count against: which
 * `X-Forwarded-For` hop is believed, in IPv4 and IPv6, and which values are refused.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  clientAddress,
  parseTrustedProxies,
  TrustedProxyError,
} from "../../src/server/http/client_address.ts";

const peer = (hostname: string) => ({ remoteAddr: { hostname } });
const forwarded = (value: string) => new Headers({ "x-forwarded-for": value });

describe("clientAddress", () => {
  const proxies = parseTrustedProxies(["10.0.0.0/8", "fd00::/8", "192.0.2.7"]);

  it("is the peer when no proxy is trusted or the peer is not one", () => {
    assert.equal(clientAddress(peer("10.1.2.3"), forwarded("198.51.100.1"), []), "10.1.2.3");
    assert.equal(
      clientAddress(peer("198.51.100.9"), forwarded("198.51.100.1"), proxies),
      "198.51.100.9",
    );
    assert.equal(clientAddress(undefined, forwarded("198.51.100.1"), proxies), "unknown");
  });

  it("takes the rightmost hop that is not a trusted proxy, in either family", () => {
    const via = (xff: string, from = "10.0.0.1") =>
      clientAddress(peer(from), forwarded(xff), proxies);
    assert.equal(via("6.6.6.6, 198.51.100.1"), "198.51.100.1");
    assert.equal(via("198.51.100.1, 10.9.9.9, 192.0.2.7"), "198.51.100.1");
    assert.equal(via("2001:db8::1, fd00::2", "fd12::1"), "2001:db8::1");
    // A v4-mapped peer (a dual-stack socket) matches the IPv4 range.
    assert.equal(via("198.51.100.1", "::ffff:10.0.0.1"), "198.51.100.1");
  });

  it("stops at the proxy that passed on a hop that is not an address, or at the peer", () => {
    const via = (xff: string) => clientAddress(peer("10.0.0.1"), forwarded(xff), proxies);
    assert.equal(via("198.51.100.1, nonsense, 10.2.2.2"), "10.2.2.2");
    assert.equal(via(""), "10.0.0.1");
    // Only proxies: the leftmost is as far as anyone vouches.
    assert.equal(via("10.3.3.3, 10.2.2.2"), "10.3.3.3");
  });
});

describe("parseTrustedProxies", () => {
  it("refuses what is not an address or a CIDR range, naming the flag", () => {
    for (const value of ["10.0.0.0/33", "fd00::/129", "10.0.0/8", "proxy.local", "10.0.0.0/8/1"]) {
      assert.throws(
        () => parseTrustedProxies([value]),
        (error: unknown) =>
          error instanceof TrustedProxyError && error.flag === "--trusted-proxy" &&
          error.message.includes(`"${value}"`),
        value,
      );
    }
  });
});
