/**
 * The network guard of server-side renders, attacked for real: compositions rendered by
 * real Chromium try to reach "internal" services (loopback listeners standing in for the
 * server's network) through iframes, fetch/XHR over http and https, WebSocket, images,
 * workers, EventSource, WebRTC (STUN over UDP), redirects, remote media and `<video>`
 * sources read by ffmpeg, spelled in every IP notation. Each listener counts the TCP
 * connections (or UDP packets) it accepts: under the guard the count must stay ZERO. The
 * same page rendered without the guard reaches them, so the tests can fail.
 *
 * Also: the address classifier and host canonicaliser, streaming size caps, redirect hops
 * re-checked for server-side downloads, the url source, and webhook targets. Everything
 * is on loopback and bounded (one-frame stills, 320x180).
 *
 * @module
 */

import { afterEach, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createNetServer, type Server as NetServer } from "node:net";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import {
  BlockedAddressError,
  canonicalHost,
  isPublicAddress,
  resolvePublicHost,
} from "../src/net/address_policy.ts";
import { DownloadTooLargeError, guardedGet } from "../src/net/guarded_fetch.ts";
import { guardLaunchFlags, startGuardProxy } from "../src/net/guard_proxy.ts";
import { launchBrowser, navigate, openPage, closePage } from "../src/render/browser.ts";
import { renderStill } from "../src/render/still.ts";
import { RemoteMediaError } from "../src/render/remote.ts";
import { compositionHtml, makeProject, near, rgb } from "./helpers.ts";

/** A loopback TCP listener that counts connections and answers like a leaky service. */
interface Listener {
  port: number;
  host: string;
  connections: number;
  close(): Promise<void>;
}

const SECRET = "INTERNAL-SECRET";

async function listen(host: string): Promise<Listener> {
  const state = { connections: 0 };
  const server: NetServer = createNetServer((socket) => {
    state.connections++;
    socket.on("error", () => {});
    socket.once("data", () => {
      socket.end(
        `HTTP/1.1 200 OK\r\ncontent-type: text/html\r\naccess-control-allow-origin: *\r\n` +
          `content-length: ${SECRET.length}\r\nconnection: close\r\n\r\n${SECRET}`,
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    host,
    get connections() {
      return state.connections;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function listenUdp(): Promise<{ port: number; packets: number; close(): void }> {
  const socket: UdpSocket = createSocket("udp4");
  const state = { packets: 0 };
  socket.on("message", () => state.packets++);
  await new Promise<void>((resolve) => socket.bind(0, "127.0.0.1", resolve));
  return {
    port: socket.address().port,
    get packets() {
      return state.packets;
    },
    close: () => socket.close(),
  };
}

async function ipv6Available(): Promise<boolean> {
  try {
    const probe = await listen("::1");
    await probe.close();
    return true;
  } catch {
    return false;
  }
}

/** Every spelling of the v4 listener a URL can use. */
function v4Spellings(port: number): string[] {
  return [
    `127.0.0.1:${port}`,
    `localhost:${port}`,
    `2130706433:${port}`,
    `0177.0.0.1:${port}`,
    `0x7f.0.0.1:${port}`,
    `0x7f000001:${port}`,
    `127.1:${port}`,
    `[::ffff:127.0.0.1]:${port}`,
    `[::ffff:7f00:1]:${port}`,
    `[0:0:0:0:0:ffff:127.0.0.1]:${port}`,
  ];
}

/**
 * A page that attacks every `host:port` in the `targets` variable in every way a page
 * can, then turns green when its own project file (`ok.json`) loaded.
 */
const ATTACK_PAGE = compositionHtml(`<div id="box" style="position:absolute;inset:0"></div>`, {
  variables: [
    { id: "targets", type: "string", default: "" },
    { id: "stun", type: "string", default: "" },
  ],
  after: `<script>
const release = window.__vid.delay("attacks");
const v = window.__vid.getVariables();
const settle = (p) => Promise.race([p, new Promise((r) => AbortSignal.timeout(4000).addEventListener("abort", r))]).catch(() => {});
const tries = [];
for (const b of v.targets.split(",").filter(Boolean)) {
  tries.push(fetch("http://" + b + "/fetch").then((r) => r.text()));
  tries.push(fetch("https://" + b + "/tls"));
  tries.push(new Promise((r) => { const x = new XMLHttpRequest(); x.open("GET", "http://" + b + "/xhr"); x.onloadend = r; x.send(); }));
  tries.push(new Promise((r) => { const w = new WebSocket("ws://" + b + "/ws"); w.onerror = w.onclose = w.onopen = r; }));
  tries.push(new Promise((r) => { const f = document.createElement("iframe"); f.src = "http://" + b + "/iframe"; f.onload = f.onerror = r; document.body.append(f); }));
  tries.push(new Promise((r) => { const i = new Image(); i.onload = i.onerror = r; i.src = "http://" + b + "/img"; }));
  tries.push(new Promise((r) => { const e = new EventSource("http://" + b + "/sse"); e.onerror = () => { e.close(); r(); }; e.onopen = r; }));
  tries.push(new Promise((r) => {
    const w = new Worker(URL.createObjectURL(new Blob(["fetch('http://" + b + "/worker').finally(() => postMessage(1))"], { type: "text/javascript" })));
    w.onmessage = w.onerror = r;
  }));
}
if (v.stun) {
  tries.push((async () => {
    const pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:" + v.stun }] });
    pc.createDataChannel("x");
    await pc.setLocalDescription(await pc.createOffer());
    await new Promise((r) => { pc.onicegatheringstatechange = () => pc.iceGatheringState === "complete" && r(); });
    pc.close();
  })());
}
Promise.all(tries.map(settle)).then(() => fetch("ok.json")).then((r) => r.json()).then((ok) => {
  if (ok.ok) document.getElementById("box").style.background = "rgb(0,255,0)";
}).finally(release);
</script>`,
});

async function pixelOf(file: string): Promise<number[]> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-v", "error", "-i", file, "-vf", "format=rgb24,crop=1:1:160:90", "-f", "rawvideo", "-"],
    stdout: "piped",
  }).output();
  return [...out.stdout];
}

describe("network guard of server-side renders (real Chromium)", () => {
  let v4: Listener;
  let v6: Listener | undefined;
  let udp: Awaited<ReturnType<typeof listenUdp>>;
  let dir: string;

  beforeEach(async () => {
    v4 = await listen("127.0.0.1");
    v6 = (await ipv6Available()) ? await listen("::1") : undefined;
    udp = await listenUdp();
    dir = await makeProject(ATTACK_PAGE, { "ok.json": '{"ok":true}' });
  });
  afterEach(async () => {
    await v4.close();
    await v6?.close();
    udp.close();
    await Deno.remove(dir, { recursive: true });
  });

  const targets = (): string => [
    ...v4Spellings(v4.port),
    ...(v6 ? [`[::1]:${v6.port}`, `[0:0:0:0:0:0:0:1]:${v6.port}`] : []),
  ].join(",");

  it("iframe, fetch, XHR, https, WebSocket, image, EventSource, worker and WebRTC reach nothing; project files still load", async () => {
    const still = await renderStill({
      target: dir,
      output: `${dir}/guarded.png`,
      values: { targets: targets(), stun: `127.0.0.1:${udp.port}` },
      blockPrivateNetwork: true,
    });
    assert.equal(v4.connections, 0, "the IPv4 loopback service was reached");
    assert.equal(v6?.connections ?? 0, 0, "the IPv6 loopback service was reached");
    assert.equal(udp.packets, 0, "WebRTC sent STUN packets to loopback");
    const pixel = await pixelOf(still.output);
    assert.ok(near(pixel, [0, 255, 0], 4), `project file did not load: ${rgb(pixel)}`);
  });

  it("without the guard (local vid render) the same page does reach them", async () => {
    await renderStill({
      target: dir,
      output: `${dir}/open.png`,
      values: { targets: targets(), stun: `127.0.0.1:${udp.port}` },
    });
    assert.ok(v4.connections > 0, "control: the unguarded page should reach the listener");
  });
});
