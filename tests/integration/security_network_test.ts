/**
 * The network guard of server-side renders, attacked for real: compositions rendered by
 * real Chromium try to reach "internal" services (loopback listeners standing in for the
 * server's network) through iframes, fetch/XHR over http and https, WebSocket, images,
 * workers, EventSource, WebRTC (STUN over UDP), redirects, remote media and `<video>`
 * sources read by ffmpeg, spelled in every IP notation. Each listener counts the TCP
 * connections (or UDP packets) it accepts: under the guard the count must stay ZERO. The
 * same page rendered without the guard reaches them, so the tests can fail.
 *
 * Also: streaming size caps, redirect hops re-checked for server-side downloads, the url
 * source, and webhook targets. Everything is on loopback and bounded (one-frame stills,
 * 320x180). The address classifier and host canonicaliser are in
 * tests/unit/address_policy_test.ts.
 *
 * @module
 */

import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import { existsSync } from "node:fs";
import assert from "node:assert/strict";
import { createServer as createHttpServer, type Server } from "node:http";
import { createServer as createNetServer, type Server as NetServer } from "node:net";
import { createSocket, type Socket as UdpSocket } from "node:dgram";
import { BlockedAddressError } from "../../src/net/address_policy.ts";
import { DownloadTooLargeError, guardedGet } from "../../src/net/guarded_fetch.ts";
import { guardLaunchFlags, startGuardProxy } from "../../src/net/guard_proxy.ts";
import {
  closePage,
  launchBrowser,
  navigate,
  openPage,
  recordBrowsersIn,
} from "../../src/render/browser.ts";
import { killLiveProcesses } from "../../src/render/process_runner.ts";
import { renderStill } from "../../src/render/still.ts";
import { renderComposition } from "../../src/render/render.ts";
import { RemoteMediaError } from "../../src/render/remote.ts";
import { BlockedMediaError } from "../../src/render/guarded_media.ts";
import { fetchProjectUrl } from "../../src/server/http/url_source.ts";
import type { ApiError } from "../../src/server/http/errors.ts";
import {
  CallbackUrlError,
  checkCallbackTarget,
  deliverWebhook,
} from "../../src/webhooks/webhooks.ts";
import { zipSync } from "fflate";
import { compositionHtml, makeProject, near, probeVideo, rgb, ROOT, waitFor } from "../helpers.ts";
import { join } from "node:path";
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { S3_CREDENTIALS, startS3Server, workerEnv } from "../s3_server.ts";
import { node22 } from "../../src/lambda/local/local_stack.ts";
import { createAccount, startServerProcess } from "../server_process.ts";

/** A loopback TCP listener that counts connections and answers like a leaky service. */
interface Listener {
  port: number;
  host: string;
  connections: number;
  /** Request paths seen (first line of plain-http requests). */
  paths: Set<string>;
  close(): Promise<void>;
}

const SECRET = "INTERNAL-SECRET";

async function listen(host: string): Promise<Listener> {
  const state = { connections: 0, paths: new Set<string>() };
  const server: NetServer = createNetServer((socket) => {
    state.connections++;
    socket.on("error", () => {});
    socket.once("data", (data: Uint8Array) => {
      const line = new TextDecoder().decode(data.subarray(0, 200)).split("\r\n")[0];
      const path = line.match(/^[A-Z]+ (\/\S*) HTTP/)?.[1];
      state.paths.add(path ?? "(not http: TLS)");
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
    paths: state.paths,
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
    { id: "quic", type: "string", default: "" },
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
if (v.quic) {
  tries.push((async () => {
    const wt = new WebTransport("https://" + v.quic + "/wt");
    await wt.ready;
  })());
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

/** Folders of this file's projects: an ffmpeg or ffprobe naming one is this file's. */
const projects = new Set<string>();

/** `makeProject`, remembering the folder for {@linkcode leftovers}. */
async function project(html: string, files: Record<string, string> = {}): Promise<string> {
  const dir = await makeProject(html, files);
  projects.add(dir);
  return dir;
}

/**
 * What this file started that still runs (browsers, ffmpeg), after a grace period: the
 * browsers it launched (the launcher's records, see `recordBrowsersIn` in the describe's
 * set-up), the ffmpeg and ffprobe children of this process whose command line names one of
 * its projects, and its encoders (`killLiveProcesses` counts those of this file's renders
 * still running, and ends them). This file's, not every child of the test process: the
 * files running alongside share the process, with browsers and ffmpeg of their own.
 */
async function leftovers(records: string): Promise<string[]> {
  let left: string[] = [];
  for (let i = 0; i < 30; i++) {
    left = ownProcesses(records);
    if (left.length === 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const encoders = killLiveProcesses();
  if (encoders > 0) left.push(`${encoders} ffmpeg encoder(s)`);
  return left;
}

/** This file's browsers and ffmpeg processes that exist now (zombies included). */
function ownProcesses(records: string): string[] {
  const left: string[] = [];
  for (const entry of Deno.readDirSync(records)) {
    const pid = /^browser-(\d+)\.json$/.exec(entry.name)?.[1];
    if (pid && existsSync(`/proc/${pid}`)) left.push(`browser ${pid}`);
  }
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(stat.indexOf("(") + 1, close);
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      if (ppid !== Deno.pid || !/^ff(mpeg|probe)$/.test(comm)) continue;
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).replaceAll("\0", " ");
      if ([...projects].some((dir) => cmdline.includes(dir))) {
        left.push(`${comm} ${entry.name}: ${cmdline}`);
      }
    } catch {
      // exited meanwhile
    }
  }
  return left;
}

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
  let quic: Awaited<ReturnType<typeof listenUdp>>;
  let dir: string;
  let records: string;

  before(() => {
    records = Deno.makeTempDirSync({ prefix: "vid-guard-browsers-" });
    recordBrowsersIn(records);
  });
  after(() => {
    recordBrowsersIn(undefined);
    Deno.removeSync(records, { recursive: true });
  });

  beforeEach(async () => {
    v4 = await listen("127.0.0.1");
    v6 = (await ipv6Available()) ? await listen("::1") : undefined;
    udp = await listenUdp();
    quic = await listenUdp();
    dir = await project(ATTACK_PAGE, { "ok.json": '{"ok":true}' });
  });
  afterEach(async () => {
    await v4.close();
    await v6?.close();
    udp.close();
    quic.close();
    await Deno.remove(dir, { recursive: true });
  });

  /**
   * `it`, and then nothing of this file left running. In the test itself, not in
   * `afterEach`: deno's node:test does not report a failure of an `afterEach` hook.
   */
  const itLeavesNothing = (name: string, body: () => Promise<void>): void => {
    it(name, async () => {
      await body();
      assert.deepEqual(await leftovers(records), [], "browser or ffmpeg processes left running");
    });
  };

  const targets = (): string =>
    [
      ...v4Spellings(v4.port),
      ...(v6 ? [`[::1]:${v6.port}`, `[0:0:0:0:0:0:0:1]:${v6.port}`] : []),
    ].join(",");

  for (const capture of ["beginframe", "screenshot"] as const) {
    itLeavesNothing(
      `${capture}: iframe, fetch, XHR, https, WebSocket, image, EventSource, worker, WebRTC and WebTransport reach nothing; project files still load`,
      async () => {
        const still = await renderStill({
          target: dir,
          output: `${dir}/guarded.png`,
          values: {
            targets: targets(),
            stun: `127.0.0.1:${udp.port}`,
            quic: `127.0.0.1:${quic.port}`,
          },
          capture,
          blockPrivateNetwork: true,
        });
        assert.equal(still.captureMode, capture);
        assert.equal(v4.connections, 0, "the IPv4 loopback service was reached");
        assert.equal(v6?.connections ?? 0, 0, "the IPv6 loopback service was reached");
        assert.equal(udp.packets, 0, "WebRTC sent STUN packets to loopback");
        assert.equal(quic.packets, 0, "WebTransport sent QUIC packets to loopback");
        const pixel = await pixelOf(still.output);
        assert.ok(near(pixel, [0, 255, 0], 4), `project file did not load: ${rgb(pixel)}`);
      },
    );
  }

  itLeavesNothing(
    "remote media in a variable, <video> sources and file: media are refused, reaching nothing",
    async () => {
      for (const host of ["127.0.0.1", "[::ffff:7f00:1]", "2130706433"]) {
        await assert.rejects(
          renderStill({
            target: dir,
            output: `${dir}/remote.png`,
            values: { stun: `http://${host}:${v4.port}/logo.png` },
            blockPrivateNetwork: true,
          }),
          (error: RemoteMediaError) =>
            error instanceof RemoteMediaError && error.field === "stun" &&
            /is not a public address/.test(error.message),
          host,
        );
      }
      const video = await project(
        compositionHtml(`<video src="http://0x7f.1:${v4.port}/clip.mp4"></video>`),
      );
      const file = await project(compositionHtml(`<video src="file:///etc/hostname"></video>`));
      // An HLS playlist dressed as an mp4: ffmpeg would fetch its segment from loopback.
      const playlist = await project(compositionHtml(`<video src="clip.mp4"></video>`), {
        "clip.mp4": `#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n` +
          `http://127.0.0.1:${v4.port}/segment.ts\n#EXT-X-ENDLIST\n`,
      });
      try {
        await assert.rejects(
          renderStill({ target: video, output: `${video}/v.png`, blockPrivateNetwork: true }),
          (error: RemoteMediaError) =>
            error instanceof RemoteMediaError && /private/.test(error.message),
        );
        await assert.rejects(
          renderStill({ target: file, output: `${file}/v.png`, blockPrivateNetwork: true }),
          (error: BlockedMediaError) => error instanceof BlockedMediaError,
        );
        await assert.rejects(
          renderStill({ target: playlist, output: `${playlist}/v.png`, blockPrivateNetwork: true }),
          (error: BlockedMediaError) =>
            error instanceof BlockedMediaError && /playlists/.test(error.message),
        );
      } finally {
        await Deno.remove(video, { recursive: true });
        await Deno.remove(file, { recursive: true });
        await Deno.remove(playlist, { recursive: true });
      }
      assert.equal(v4.connections, 0, "the loopback service was reached");
    },
  );

  itLeavesNothing(
    "project video and audio still render under the guard (ffmpeg reads local files only)",
    async () => {
      const media = await project(
        compositionHtml(
          `<video src="clip.mp4" style="position:absolute;inset:0;width:320px;height:180px"></video>
         <audio src="tone.wav"></audio>`,
        ),
      );
      try {
        const make = async (args: string[]) => {
          const out = await new Deno.Command("ffmpeg", { args: ["-v", "error", "-y", ...args] })
            .output();
          assert.equal(out.code, 0);
        };
        await make([
          "-f",
          "lavfi",
          "-i",
          "color=c=0xff0000:s=320x180:d=1:r=5",
          `${media}/clip.mp4`,
        ]);
        await make(["-f", "lavfi", "-i", "sine=f=440:d=1", `${media}/tone.wav`]);
        const result = await renderComposition({
          target: media,
          output: `${media}/out.mp4`,
          fps: 5,
          blockPrivateNetwork: true,
        });
        assert.equal(result.frames, 5);
        const info = await probeVideo(result.output);
        assert.equal(info.frames, 5);
        assert.ok(info.hasAudio, "the soundtrack is missing");
        const pixel = await pixelOf(result.output);
        assert.ok(near(pixel, [255, 0, 0], 24), `video frame not shown: ${rgb(pixel)}`);
      } finally {
        await Deno.remove(media, { recursive: true });
      }
    },
  );

  itLeavesNothing(
    "redirects: an allowed origin redirecting the page inward is stopped at the hop",
    async () => {
      let redirects = 0;
      const redirector: Server = createHttpServer((req, res) => {
        redirects++;
        res.writeHead(302, {
          location: `http://[::ffff:127.0.0.1]:${v4.port}${req.url}`,
          "access-control-allow-origin": "*",
        }).end();
      });
      await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
      const hop = `127.0.0.1:${(redirector.address() as { port: number }).port}`;
      const project: Server = createHttpServer((_req, res) => {
        res.writeHead(200, { "content-type": "text/html" }).end(`<script>
        fetch("http://${hop}/fetch").catch(() => {});
        const f = document.createElement("iframe"); f.src = "http://${hop}/iframe"; document.documentElement.append(f);
        const i = new Image(); i.src = "http://${hop}/img";
      </script>`);
      });
      await new Promise<void>((resolve) => project.listen(0, "127.0.0.1", resolve));
      const origin = `127.0.0.1:${(project.address() as { port: number }).port}`;
      // The redirector is allowed like a public host would be, but not bypassed.
      const proxy = await startGuardProxy({ allowHosts: [origin, hop] });
      const browser = await launchBrowser({
        mode: "screenshot",
        networkFlags: guardLaunchFlags(proxy.url, [origin]),
      });
      try {
        const page = await openPage(browser, { width: 64, height: 64, initScript: "" });
        await navigate(page, `http://${origin}/`);
        const deadline = Date.now() + 5000;
        while (redirects < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
        // Deliberate: time for a hop that got through to reach a listener (it must not).
        await new Promise((r) => setTimeout(r, 300));
        await closePage(page);
        assert.equal(redirects, 3, "the page's requests did not reach the allowed redirector");
        assert.equal(v4.connections, 0, "a redirect hop reached the loopback service");
        assert.ok(proxy.blocked.some((b) => b.target === `[::ffff:7f00:1]:${v4.port}`));
      } finally {
        await browser.close();
        await proxy.close();
        await new Promise((resolve) => redirector.close(resolve));
        project.closeAllConnections();
        await new Promise((resolve) => project.close(resolve));
      }
    },
  );

  itLeavesNothing(
    "without the guard (local vid render) the same page does reach them",
    async () => {
      await renderStill({
        target: dir,
        output: `${dir}/open.png`,
        values: {
          targets: targets(),
          stun: `127.0.0.1:${udp.port}`,
          quic: `127.0.0.1:${quic.port}`,
        },
      });
      // Every vector of the guarded test is live: without the guard each one gets through.
      assert.deepEqual(
        [...v4.paths].sort(),
        ["(not http: TLS)", "/fetch", "/iframe", "/img", "/sse", "/worker", "/ws", "/xhr"],
      );
      assert.ok(udp.packets > 0, "control: WebRTC should send STUN to the listener");
      assert.ok(quic.packets > 0, "control: WebTransport should send QUIC to the listener");
    },
  );
});

describe("server-side downloads", () => {
  let forbidden: Listener;
  beforeEach(async () => {
    forbidden = await listen("127.0.0.1");
  });
  afterEach(() => forbidden.close());

  it("re-checks every redirect hop: an allowed host redirecting inward reaches nothing", async () => {
    const redirector: Server = createHttpServer((_req, res) => {
      res.writeHead(302, { location: `http://[::ffff:127.0.0.1]:${forbidden.port}/secret` }).end();
    });
    await new Promise<void>((resolve) => redirector.listen(0, "127.0.0.1", resolve));
    const port = (redirector.address() as { port: number }).port;
    try {
      await assert.rejects(
        guardedGet(`http://127.0.0.1:${port}/start`, {
          field: "logo",
          maxBytes: 1000,
          allowHosts: [`127.0.0.1:${port}`],
        }),
        (error: BlockedAddressError) =>
          error instanceof BlockedAddressError && error.field === "logo",
      );
      assert.equal(forbidden.connections, 0);
    } finally {
      await new Promise((resolve) => redirector.close(resolve));
    }
  });

  it("streams with a cap: an endless body is aborted at the limit, not read in full", async () => {
    let written = 0;
    let closed = false;
    const endless: Server = createHttpServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const chunk = new Uint8Array(64 * 1024);
      const pump = (): void => {
        while (!closed && written < 512 * 1024 * 1024) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      res.on("close", () => closed = true);
      pump();
    });
    await new Promise<void>((resolve) => endless.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(endless.address() as { port: number }).port}/big`;
    try {
      await assert.rejects(
        guardedGet(url, { field: "video", maxBytes: 1024 * 1024, allowPrivate: true }),
        (error: DownloadTooLargeError) =>
          error instanceof DownloadTooLargeError && error.limit === 1024 * 1024,
      );
      await waitFor("the connection to be cut at the limit", () => closed, { timeoutMs: 5000 });
      assert.ok(written < 64 * 1024 * 1024, `the server wrote ${written} bytes`);
    } finally {
      endless.closeAllConnections();
      await new Promise((resolve) => endless.close(resolve));
    }
  });

  it("url sources refuse v4-mapped and numeric spellings of loopback with a 400 on url", async () => {
    for (
      const host of ["[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "2130706433", "0177.0.0.1", "127.1"]
    ) {
      await assert.rejects(
        fetchProjectUrl(`http://${host}:${forbidden.port}/p.zip`, {
          allowPrivate: false,
          maxBytes: 1000,
        }),
        (error: ApiError) => error.status === 400 && error.field === "url",
        host,
      );
    }
    assert.equal(forbidden.connections, 0);
  });

  it("webhook targets: refused up front, and re-checked before sending", async () => {
    await assert.rejects(
      checkCallbackTarget(new URL(`https://[::ffff:127.0.0.1]:${forbidden.port}/hook`)),
      (error: CallbackUrlError) =>
        error instanceof CallbackUrlError && error.field === "callback_url",
    );
    await checkCallbackTarget(new URL(`https://127.0.0.1:${forbidden.port}/hook`), {
      allowLoopback: true,
    });
    const result = await deliverWebhook({
      url: `https://127.0.0.1:${forbidden.port}/hook`,
      secret: "s",
      target: {},
      payload: {
        render_id: "r",
        status: "completed",
        callback_id: null,
        video_url: null,
        error: null,
      },
    });
    assert.equal(result.delivered, false);
    assert.equal(result.attempts, 0);
    assert.match(result.error ?? "", /^callback_url: 127\.0\.0\.1 is not a public address; /);
    assert.equal(forbidden.connections, 0);
  });
});

describe("vid server (real process, default flags)", () => {
  it("renders a hostile composition without reaching loopback; refuses inward url and callback_url", async () => {
    const forbidden = await listen("127.0.0.1");
    const dataDir = await Deno.makeTempDir({ prefix: "vid-security-server-" });
    const key = await createAccount(dataDir, "tenant@example.com", { credits: 100 });
    const server = await startServerProcess(dataDir);
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const api = async (path: string, body?: unknown) => {
      const response = await fetch(`${server.url}${path}`, {
        method: body === undefined ? "GET" : "POST",
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, body: await response.json() };
    };
    try {
      const zip = zipSync({
        "index.html": new TextEncoder().encode(ATTACK_PAGE),
        "ok.json": new TextEncoder().encode('{"ok":true}'),
      });
      const asset = await api("/v3/assets", { size_bytes: zip.length });
      assert.equal(asset.status, 201, JSON.stringify(asset.body));
      const put = await fetch(String(asset.body.upload_url), { method: "PUT", body: zip });
      assert.equal(put.status, 200, await put.text());

      const inward = await api("/v3/vid/renders", {
        url: `http://[::ffff:7f00:1]:${forbidden.port}/project.zip`,
      });
      assert.equal(inward.status, 400, JSON.stringify(inward.body));
      assert.match(JSON.stringify(inward.body), /url/);
      const hook = await api("/v3/vid/renders", {
        asset_id: asset.body.asset_id,
        callback_url: `https://0x7f.1:${forbidden.port}/hook`,
      });
      assert.equal(hook.status, 400, JSON.stringify(hook.body));
      assert.match(JSON.stringify(hook.body), /callback_url.*is not a public address/);
      // Bodies on the wire: one generic message, never what a name resolves to (a tenant
      // could map the server's internal DNS), and the field named once.
      const notPublic = (field: string, host: string) =>
        `${field}: ${host} is not a public address; this server reaches public addresses ` +
        "only (operators allow private ones with `vid server --allow-private-urls`, or " +
        "VID_ALLOW_PRIVATE_URLS=1 on the Lambda function)";
      const byName = await api("/v3/vid/renders", {
        url: `http://localhost:${forbidden.port}/project.zip`,
      });
      assert.equal(byName.status, 400);
      assert.deepEqual(byName.body, {
        error: {
          code: "vid_invalid_request",
          message: notPublic("url", "localhost"),
          field: "url",
        },
      });
      const unknownName = await api("/v3/vid/renders", {
        url: "https://no-such-host.invalid/project.zip",
      });
      assert.equal(unknownName.body.error.message, notPublic("url", "no-such-host.invalid"));
      const hookByName = await api("/v3/vid/renders", {
        asset_id: asset.body.asset_id,
        callback_url: `https://localhost:${forbidden.port}/hook`,
      });
      assert.equal(hookByName.body.error.message, notPublic("callback_url", "localhost"));
      const plainHttp = await api("/v3/vid/renders", {
        asset_id: asset.body.asset_id,
        callback_url: "http://example.com/hook",
      });
      assert.equal(
        plainHttp.body.error.message,
        'callback_url must be an https:// URL, got "http://example.com/hook"',
      );

      const targets = v4Spellings(forbidden.port).join(",");
      const created = await api("/v3/vid/renders", {
        asset_id: asset.body.asset_id,
        fps: 5,
        variables: { targets },
      });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      let render: Record<string, unknown> = created.body;
      const deadline = Date.now() + 90000;
      while (render.status !== "completed" && render.status !== "failed" && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 250));
        render = (await api(`/v3/vid/renders/${created.body.render_id}`)).body;
      }
      assert.equal(render.status, "completed", String(render.error));
      assert.equal(forbidden.connections, 0, "the server's render reached a loopback service");
      const video = await Deno.makeTempFile({ suffix: ".mp4" });
      try {
        await Deno.writeFile(
          video,
          new Uint8Array(await (await fetch(String(render.video_url))).arrayBuffer()),
        );
        const pixel = await pixelOf(video);
        assert.ok(near(pixel, [0, 255, 0], 8), `project file did not load: ${rgb(pixel)}`);
      } finally {
        await Deno.remove(video);
      }
    } finally {
      await server.stop();
      await forbidden.close();
      await Deno.remove(dataDir, { recursive: true });
    }
  });
});

/** Runs the worker bundle's handler for plan and chunk 0 under Node 22; prints the results. */
const WORKER_DRIVER = `
import process from "node:process";
const { handler } = await import(process.argv[2]);
const input = JSON.parse(process.argv[3]);
const executionStartTime = new Date().toISOString();
const plan = await handler({ task: "plan", input, executionStartTime });
const chunk = await handler({
  task: "renderChunk", input, chunk: plan.chunks[0], totalFrames: plan.totalFrames, executionStartTime,
});
process.stdout.write(JSON.stringify({ plan, chunk }));
process.exit(0);
`;

describe("Lambda worker bundle (Node 22, s3rver): pages under the guard by default", () => {
  it("renders the hostile page's chunk without reaching loopback", async () => {
    const forbidden = await listen("127.0.0.1");
    const s3 = await startS3Server();
    const scratch = await Deno.makeTempDir({ prefix: "vid-security-worker-" });
    const client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    try {
      const bucket = "vid-security";
      const siteId = "site-security0001";
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      const files = { "index.html": ATTACK_PAGE, "ok.json": '{"ok":true}' };
      for (const [name, body] of Object.entries(files)) {
        await client.send(
          new PutObjectCommand({ Bucket: bucket, Key: `sites/${siteId}/${name}`, Body: body }),
        );
      }
      const bundle = join(scratch, "bundle");
      const built = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "scripts/build_worker.ts", "--bundle-only", "--outdir", bundle],
        cwd: ROOT,
        stdout: "null",
        stderr: "piped",
      }).output();
      assert.ok(built.success, new TextDecoder().decode(built.stderr));
      await Deno.writeTextFile(join(scratch, "driver.mjs"), WORKER_DRIVER);
      await Deno.mkdir(join(scratch, "tmp"));
      const input = {
        renderId: "r-security",
        bucketName: bucket,
        siteId,
        serveUrl: `${s3.endpoint}/${bucket}/sites/${siteId}/`,
        composition: "index.html",
        outputKey: "renders/r-security/out.mp4",
        config: {
          fps: 5,
          format: "mp4",
          chunkSize: 5,
          variables: { targets: v4Spellings(forbidden.port).join(",") },
        },
      };
      const out = await new Deno.Command(await node22(), {
        args: [join(scratch, "driver.mjs"), join(bundle, "index.mjs"), JSON.stringify(input)],
        env: {
          ...workerEnv(s3.endpoint, join(scratch, "tmp")),
        },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
      const result = JSON.parse(new TextDecoder().decode(out.stdout));
      assert.equal(result.plan.totalFrames, 5);
      assert.equal(forbidden.connections, 0, "the worker's page reached a loopback service");
      const object = await client.send(
        new GetObjectCommand({ Bucket: bucket, Key: result.chunk.key }),
      );
      const chunkFile = join(scratch, "chunk.mp4");
      await Deno.writeFile(chunkFile, await object.Body!.transformToByteArray());
      assert.equal((await probeVideo(chunkFile)).frames, 5);
      const pixel = await pixelOf(chunkFile);
      assert.ok(near(pixel, [0, 255, 0], 8), `project file did not load: ${rgb(pixel)}`);
    } finally {
      client.destroy();
      await s3.close();
      await forbidden.close();
      await Deno.remove(scratch, { recursive: true });
    }
  });
});
