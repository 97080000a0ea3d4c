/**
 * The address policy of server-side fetches and renders (src/net/address_policy.ts): which
 * addresses are public, every notation of loopback and the forms that embed it (v4-mapped,
 * NAT64, 6to4), and names that resolve inward. The attacks with real Chromium, servers and
 * the Lambda worker are in tests/integration/security_network_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  BlockedAddressError,
  canonicalHost,
  isPublicAddress,
  resolvePublicHost,
} from "../../src/net/address_policy.ts";

describe("address policy", () => {
  it("canonicalises every IPv4 notation a URL accepts to the address a browser dials", () => {
    for (
      const host of ["2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "127.0.1"]
    ) {
      assert.deepEqual(canonicalHost(host), { host: "127.0.0.1", ip: 4 }, host);
    }
    assert.deepEqual(canonicalHost("[::ffff:127.0.0.1]"), { host: "::ffff:7f00:1", ip: 6 });
    assert.deepEqual(canonicalHost("::1"), { host: "::1", ip: 6 });
    assert.deepEqual(canonicalHost("Example.COM"), { host: "example.com", ip: 0 });
  });

  it("classifies v4, v6, v4-mapped, NAT64 and 6to4 forms", () => {
    const open = [
      "8.8.8.8",
      "1.1.1.1",
      "172.32.0.1",
      "100.128.0.1",
      "2606:4700::1111",
      "::ffff:8.8.8.8",
      "64:ff9b::808:808",
      "2002:808:808::1",
    ];
    for (const ip of open) assert.ok(isPublicAddress(ip), ip);
    const closed = [
      "127.0.0.1",
      "127.255.255.254",
      "10.0.0.1",
      "172.16.0.1",
      "192.168.0.1",
      "169.254.169.254",
      "100.64.0.1",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "198.18.0.1",
      "192.0.2.1",
      "::",
      "::1",
      "0:0:0:0:0:0:0:1",
      "[::1]",
      "fc00::1",
      "fd12:3456::1",
      "fe80::1%eth0",
      "fec0::1",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:7f00:1",
      "::ffff:a00:1",
      "::127.0.0.1",
      "::ffff:0:7f00:1",
      "64:ff9b::7f00:1",
      "64:ff9b::a9fe:a9fe",
      "64:ff9b:1::1",
      "2002:7f00:1::1",
      "2002:a00:1::",
      "2001:db8::1",
      "2001::1",
      "100::1",
      "not-an-ip",
      "1.2.3",
      "",
    ];
    for (const ip of closed) assert.ok(!isPublicAddress(ip), ip);
  });

  it("refuses names that resolve to loopback, and every notation of it", async () => {
    for (const host of ["localhost", "127.1", "0x7f.1", "2130706433", "[::ffff:7f00:1]", "[::1]"]) {
      await assert.rejects(resolvePublicHost(host, "url"), (error: BlockedAddressError) => {
        assert.ok(error instanceof BlockedAddressError, String(error));
        assert.equal(error.field, "url");
        // The host as given, never what it resolves to (a tenant could map internal DNS).
        assert.ok(error.message.startsWith(`url: ${host} is not a public address; `));
        assert.doesNotMatch(error.message.slice(`url: ${host}`.length), /127\.0\.0\.1|::1/);
        return true;
      }, host);
    }
    // A name that does not resolve gets the same message, so existence is not told either.
    await assert.rejects(
      resolvePublicHost("no-such-host.invalid", "url"),
      (error: BlockedAddressError) =>
        error.message.startsWith("url: no-such-host.invalid is not a public address; "),
    );
    assert.equal((await resolvePublicHost("8.8.8.8", "url"))[0].address, "8.8.8.8");
  });
});
