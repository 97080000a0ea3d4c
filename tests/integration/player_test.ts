/**
 * `<vid-player>` in real Chromium (puppeteer-core) on a page of another origin than the
 * composition's: the host page is served by its own loopback server and loads
 * `/player.js` from `vid preview`, which serves the compositions. Covers: ready with the
 * composition's duration; `seek(2)` draws the frame `vid still --time 2` writes (PSNR);
 * new variables change the frame without reloading the host page; a second of play moves
 * `currentTime` about a second with `timeupdate`s; `ended`; a throwing composition's
 * `error` names file:line; a bad variable value gets vid check's words. Then the same
 * composition from origins that only serve files: a plain static server (another origin,
 * `Access-Control-Allow-Origin: *`) and a Lambda site's `serveUrl` on the S3 stand-in
 * (s3rver, honouring the bucket CORS `deploySite` sets): the player fetches the HTML, puts
 * vid's runtime in it and draws it in an opaque-origin sandbox, frame-exact with `vid still`;
 * a HyperFrames page's embedded fonts load from the site's `.vid/fonts/` (fallback fonts and
 * a console warning from a host without them); and the sound plays at a playback rate of 2.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { findChromium } from "../../src/render/system.ts";
import { type PreviewProcess, runFfmpeg, startPreviewProcess } from "../preview_process.ts";
import { ROOT, runVid } from "../helpers.ts";
import { createAccount, type ServerProcess, startServerProcess } from "../server_process.ts";
import { zipSync } from "fflate";
import { S3_CREDENTIALS, type S3Server, startS3Server } from "../s3_server.ts";
import {
  CreateBucketCommand,
  GetBucketCorsCommand,
  PutBucketPolicyCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { deploySite, type SiteHandle } from "../../src/lambda/sites.ts";
import { contentTypeOf } from "../../src/util/mime.ts";
import { PAGE_RUNTIME_BUNDLE } from "../../src/runtime/page_bundle.ts";

const SHOTS = `${ROOT}.test-results/player`;

/** 320x180, 3 s at 10 fps: a box moving right across a background from a variable. */
const MAIN = `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: 320px; height: 180px; overflow: hidden; background: #000; }
#root { position: relative; width: 320px; height: 180px; }
#box { position: absolute; left: 0; top: 60px; width: 40px; height: 40px; background: #fff;
  animation: slide 3s linear both; }
#bar { position: absolute; left: 0; top: 140px; height: 20px; background: #0c4; width: 10px; }
@keyframes slide { from { transform: translateX(0); } to { transform: translateX(270px); } }
</style></head>
<body><div id="root" data-composition-id="player-main" data-width="320" data-height="180"
  data-duration="3" data-fps="10"
  data-composition-variables='[{"id": "bg", "type": "color", "label": "Background", "default": "#202080"}]'>
<div id="box"></div><div id="bar"></div>
</div>
<script>
document.getElementById("root").style.background = window.__vid.getVariables().bg;
let rounds = 0;
function grow() {
  rounds++;
  document.getElementById("bar").style.width = (10 + rounds * 4) + "px";
  requestAnimationFrame(grow);
}
requestAnimationFrame(grow);
</script></body></html>
`;

/** Throws while loading from scene.js line 3. */
const BOOM = `<!doctype html>
<html><head><meta charset="utf-8"></head>
<body><div id="root" data-composition-id="player-boom" data-width="320" data-height="180"
  data-duration="1"></div>
<script src="scene.js"></script></body></html>
`;
const SCENE_JS = `const config = undefined;
function setup() {
  return config.title;
}
setup();
`;

/** HyperFrames' clips: red for the first second, blue for the second. */
const HYPERFRAMES = `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: 320px; height: 180px; overflow: hidden; background: #000; }
.clip { position: absolute; inset: 0; }
</style></head>
<body><div id="root" data-composition-id="player-hf" data-width="320" data-height="180"
  data-duration="2">
<div class="clip" data-start="0" data-duration="1" data-track-index="0" style="background:#f00"></div>
<div class="clip" data-start="1" data-duration="1" data-track-index="0" style="background:#00f"></div>
</div></body></html>
`;

/**
 * A HyperFrames page naming fonts HyperFrames embeds, with no @font-face: Outfit, and in its
 * sub-composition Helvetica (which HyperFrames draws with Inter's files). vid embeds them as HyperFrames does.
 */
const EMBEDDED_FONTS = `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: 320px; height: 180px; overflow: hidden; background: #fff; }
.clip { position: absolute; inset: 0; color: #000; }
h1 { margin: 16px 0 0 16px; font: 700 72px "Outfit", serif; }
</style></head>
<body><div id="root" data-composition-id="player-fonts" data-width="320" data-height="180"
  data-duration="1">
<div class="clip" data-start="0" data-duration="1" data-track-index="0"><h1>Wg Qy</h1>
<div data-composition-src="caption.html" data-start="0" data-duration="1"></div></div>
</div></body></html>
`;
/** The sub-composition of {@linkcode EMBEDDED_FONTS}: the family is named in its file alone. */
const CAPTION = `<template><div data-composition-id="caption">
<p style="margin: 0 0 0 16px; font: 400 32px Helvetica, sans-serif">Rag &amp; 1234</p></div></template>
`;

/** 3 s of a 440 Hz tone, for the sound test (written by ffmpeg in `before`). */
const SOUND = `<!doctype html>
<html><head><meta charset="utf-8"></head>
<body><div id="root" data-composition-id="player-sound" data-width="320" data-height="180"
  data-duration="3" data-fps="10" style="background:#333">
<audio src="tone.wav" data-start="0"></audio>
</div></body></html>
`;

/**
 * A static file server of `dir` on loopback, as a static host is: no vid in it, CORS open to
 * any origin, byte ranges (what lets a browser seek in a sound). `plain`: files and their
 * types alone, as `python3 -m http.server` answers (no CORS, no ranges).
 */
function staticServer(dir: string, plain = false): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    let body: Uint8Array<ArrayBuffer>;
    try {
      if (path.includes("..")) throw new Error("outside");
      body = await Deno.readFile(`${dir}${path}`);
    } catch {
      return new Response("not found", { status: 404 });
    }
    if (plain) return new Response(body, { headers: { "content-type": contentTypeOf(path) } });
    const headers = {
      "content-type": contentTypeOf(path),
      "access-control-allow-origin": "*",
      "accept-ranges": "bytes",
    };
    const range = /^bytes=(\d+)-(\d*)$/.exec(request.headers.get("range") ?? "");
    if (!range) return new Response(body, { headers });
    const start = Number(range[1]);
    const end = Math.min(body.length - 1, range[2] ? Number(range[2]) : body.length - 1);
    return new Response(body.slice(start, end + 1), {
      status: 206,
      headers: { ...headers, "content-range": `bytes ${start}-${end}/${body.length}` },
    });
  });
}

/** Uploads the main composition as an asset of `vid server` at `url`; its `site_url`. */
async function uploadAsset(url: string, key: string): Promise<string> {
  const zip = zipSync({ "index.html": new TextEncoder().encode(MAIN) });
  const created = await fetch(`${url}/v3/assets`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ size_bytes: zip.length }),
  });
  assert.equal(created.status, 201);
  const put = await fetch((await created.json()).upload_url, { method: "PUT", body: zip });
  assert.equal(put.status, 200, await put.clone().text());
  const ready = await put.json();
  assert.equal(ready.status, "ready");
  return ready.site_url;
}

/** The host page: the player module from vid preview, one player of `src`. */
function hostPage(previewUrl: string, src: string, attributes = ""): string {
  return `<!doctype html><html><head><meta charset="utf-8">
<style>body { margin: 0; } vid-player { width: 320px; height: 180px; }</style>
<script type="module" src="${previewUrl}player.js"></script></head>
<body><vid-player id="p" src="${src}"${attributes}></vid-player>
<script>
window.loadedOnce = Math.random();
window.events = [];
const p = document.getElementById("p");
for (const name of ["ready", "play", "pause", "timeupdate", "ended", "error"]) {
  p.addEventListener(name, (e) => window.events.push({ name, detail: e.detail ?? null }));
}
</script></body></html>`;
}

async function elementRgb(p: Page, name: string): Promise<Uint8Array> {
  await Deno.mkdir(SHOTS, { recursive: true });
  const png = await (await p.$("#p"))!.screenshot({ type: "png" });
  await Deno.writeFile(`${SHOTS}/${name}.png`, png);
  return await toRgb(png);
}

async function toRgb(png: Uint8Array): Promise<Uint8Array> {
  return await runFfmpeg(
    ["-f", "png_pipe", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
    png,
  );
}

/** Peak signal-to-noise ratio of two same-size RGB images, in dB (Infinity when equal). */
function psnr(a: Uint8Array, b: Uint8Array): number {
  assert.equal(a.length, b.length, "same size");
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] - b[i]) ** 2;
  const mse = sum / a.length;
  return mse === 0 ? Infinity : 10 * Math.log10((255 * 255) / mse);
}

function rgbAt(rgb: Uint8Array, x: number, y: number): number[] {
  const i = (y * 320 + x) * 3;
  return [rgb[i], rgb[i + 1], rgb[i + 2]];
}

describe("<vid-player>", () => {
  let work = "";
  let preview: PreviewProcess | undefined;
  let server: ServerProcess | undefined;
  let serverData = "";
  let host: Deno.HttpServer<Deno.NetAddr> | undefined;
  let browser: Browser | undefined;
  let page: Page;
  let hostUrl = "";
  let files: Deno.HttpServer<Deno.NetAddr> | undefined;
  let filesUrl = "";
  let s3Server: S3Server | undefined;
  let s3: S3Client | undefined;
  let site: SiteHandle;
  let fontSite: SiteHandle;
  let assetSite = "";
  const stills = new Map<number, Uint8Array>();

  /** `vid still --time t` of the main composition, as RGB. */
  async function stillRgb(t: number): Promise<Uint8Array> {
    if (!stills.has(t)) {
      const file = `${work}/still-${t}.png`;
      const still = await runVid(["still", work, "--time", String(t), "--output", file]);
      assert.equal(still.code, 0, still.stderr);
      stills.set(t, await toRgb(await Deno.readFile(file)));
    }
    return stills.get(t)!;
  }

  /**
   * Opens `path` of the host server in a new tab and waits for `#p` to reach `state`; the
   * tab's console messages go to `consoled`.
   */
  async function openHost(path: string, state = "ready", consoled?: string[]): Promise<Page> {
    const tab = await browser!.newPage();
    if (consoled) tab.on("console", (message) => consoled.push(message.text()));
    await tab.setViewport({ width: 400, height: 240, deviceScaleFactor: 1 });
    await tab.goto(`${hostUrl}${path}`);
    await tab.waitForFunction(
      (want) => document.getElementById("p")?.dataset.state === want,
      { timeout: 30000 },
      state,
    );
    return tab;
  }

  before(async () => {
    work = await Deno.makeTempDir({ prefix: "vid-player-" });
    await Deno.writeTextFile(`${work}/index.html`, MAIN);
    await Deno.writeTextFile(`${work}/boom.html`, BOOM);
    await Deno.writeTextFile(`${work}/scene.js`, SCENE_JS);
    await Deno.writeTextFile(`${work}/hf.html`, HYPERFRAMES);
    await Deno.writeTextFile(`${work}/sound.html`, SOUND);
    await Deno.writeFile(
      `${work}/tone.wav`,
      await runFfmpeg(["-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-f", "wav", "-"]),
    );
    await Deno.mkdir(`${work}/site`);
    await Deno.writeTextFile(`${work}/site/index.html`, MAIN);
    await Deno.mkdir(`${work}/fonts`);
    await Deno.writeTextFile(`${work}/fonts/index.html`, EMBEDDED_FONTS);
    await Deno.writeTextFile(`${work}/fonts/caption.html`, CAPTION);
    await Deno.writeTextFile(`${work}/fonts.html`, EMBEDDED_FONTS);
    await Deno.writeTextFile(`${work}/caption.html`, CAPTION);
    serverData = await Deno.makeTempDir({ prefix: "vid-player-server-" });
    const executablePath = await findChromium();
    assert.ok(executablePath, "chromium is installed");
    [preview, server, browser, s3Server] = await Promise.all([
      startPreviewProcess(work),
      startServerProcess(serverData),
      puppeteer.launch({
        executablePath,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--force-color-profile=srgb", "--hide-scrollbars"],
      }),
      startS3Server(),
    ]);
    files = staticServer(work);
    filesUrl = `http://127.0.0.1:${files.addr.port}/`;
    s3 = new S3Client({
      endpoint: s3Server.endpoint,
      region: "us-east-1",
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
    });
    await s3.send(new CreateBucketCommand({ Bucket: "player-sites" }));
    site = await deploySite({ projectDir: `${work}/site`, bucketName: "player-sites", s3 });
    fontSite = await deploySite({ projectDir: `${work}/fonts`, bucketName: "player-sites", s3 });
    assetSite = await uploadAsset(
      server.url,
      await createAccount(serverData, "player@example.com"),
    );
    const pages: Record<string, string> = {
      "/main.html": hostPage(preview.url, `${preview.url}index.html`),
      "/boom.html": hostPage(preview.url, `${preview.url}boom.html`),
      "/server.html": hostPage(`${server.url}/`, `${preview.url}index.html`),
      "/static.html": hostPage(preview.url, `${filesUrl}index.html`),
      "/static-boom.html": hostPage(preview.url, `${filesUrl}boom.html`),
      "/static-sound.html": hostPage(
        preview.url,
        `${filesUrl}sound.html`,
        " playback-rate=2 muted",
      ),
      "/site.html": hostPage(`${server.url}/`, `${site.serveUrl}index.html`),
      "/asset.html": hostPage(`${server.url}/`, assetSite),
      "/fonts-site.html": hostPage(`${server.url}/`, `${fontSite.serveUrl}index.html`),
      "/fonts-static.html": hostPage(`${server.url}/`, `${filesUrl}fonts/index.html`),
      "/fonts-preview.html": hostPage(preview.url, `${preview.url}fonts.html`),
    };
    host = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (request) => {
      const body = pages[new URL(request.url).pathname];
      return body === undefined
        ? new Response("not found", { status: 404 })
        : new Response(body, { headers: { "content-type": "text/html; charset=utf-8" } });
    });
    hostUrl = `http://127.0.0.1:${host.addr.port}`;
    page = await browser.newPage();
    await page.setViewport({ width: 400, height: 240, deviceScaleFactor: 1 });
    await page.goto(`${hostUrl}/main.html`);
    await page.waitForFunction(() => document.getElementById("p")?.dataset.state === "ready", {
      timeout: 30000,
    });
  });

  after(async () => {
    await browser?.close();
    await host?.shutdown();
    await files?.shutdown();
    s3?.destroy();
    await s3Server?.close();
    await server?.stop();
    try {
      preview?.child.kill("SIGINT");
    } catch {
      // already gone
    }
    await preview?.done;
    await Deno.remove(work, { recursive: true });
    if (serverData) await Deno.remove(serverData, { recursive: true });
  });

  it("becomes ready with the composition's duration, from another origin than its own", async () => {
    const state = await page.$eval("#p", (el) => {
      const p = el as unknown as {
        readyState: string;
        duration: number;
        currentTime: number;
        src: string;
      };
      return {
        readyState: p.readyState,
        duration: p.duration,
        currentTime: p.currentTime,
        origins: [location.origin, new URL(el.getAttribute("src")!).origin],
        ready: (window as unknown as { events: { name: string }[] }).events
          .filter((e) => e.name === "ready").length,
      };
    });
    assert.equal(state.readyState, "ready");
    assert.equal(state.duration, 3);
    assert.equal(state.currentTime, 0);
    assert.equal(state.ready, 1);
    assert.notEqual(state.origins[0], state.origins[1], "the host page is of another origin");
    const script = await fetch(`${preview!.url}player.js`);
    assert.equal(script.headers.get("access-control-allow-origin"), "*");
    assert.match(script.headers.get("content-type") ?? "", /javascript/);
    await script.body?.cancel();
  });

  it("runs from vid server's /player.js as from vid preview's", async () => {
    const served = await fetch(`${server!.url}/player.js`);
    assert.equal(served.headers.get("access-control-allow-origin"), "*");
    await served.body?.cancel();
    const other = await browser!.newPage();
    try {
      await other.goto(`${hostUrl}/server.html`);
      await other.waitForFunction(
        () => document.getElementById("p")?.dataset.state === "ready",
        { timeout: 30000 },
      );
      const duration = await other.$eval(
        "#p",
        (el) => (el as unknown as { duration: number }).duration,
      );
      assert.equal(duration, 3);
    } finally {
      await other.close();
    }
  });

  it("seek(2) draws the frame vid still --time 2 writes", async () => {
    await page.$eval("#p", (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(2));
    const shown = await elementRgb(page, "seek-2");
    const file = `${work}/still-2.png`;
    const still = await runVid(["still", work, "--time", "2", "--output", file]);
    assert.equal(still.code, 0, still.stderr);
    const expected = await toRgb(await Deno.readFile(file));
    const db = psnr(shown, expected);
    assert.ok(db >= 40, `PSNR ${db.toFixed(1)} dB (want >= 40)`);
    // The frame is not frame 0's: the box has moved and the bar has grown.
    const first = `${work}/still-0.png`;
    assert.equal((await runVid(["still", work, "--time", "0", "--output", first])).code, 0);
    assert.ok(psnr(shown, await toRgb(await Deno.readFile(first))) < 30, "frame 0 differs");
  });

  it("draws the frame again with new variables, without reloading the page", async () => {
    const before = await page.evaluate(() =>
      (window as unknown as { loadedOnce: number }).loadedOnce
    );
    await page.$eval("#p", (el) => {
      (el as unknown as { variables: Record<string, unknown> }).variables = { bg: "#ff0000" };
    });
    await page.waitForFunction(
      () => {
        const el = document.getElementById("p")!;
        return el.shadowRoot!.querySelectorAll("iframe").length === 1 &&
          (el as unknown as { variables: { bg?: string } }).variables.bg === "#ff0000";
      },
      { timeout: 20000 },
    );
    // The redraw is queued behind the attribute change: a seek to the same frame waits for it.
    await page.$eval("#p", (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(2));
    const rgb = await elementRgb(page, "variables");
    const corner = rgbAt(rgb, 300, 10);
    assert.ok(corner[0] > 200 && corner[1] < 40 && corner[2] < 40, `red corner, got ${corner}`);
    const state = await page.evaluate(() => ({
      loadedOnce: (window as unknown as { loadedOnce: number }).loadedOnce,
      time: (document.getElementById("p") as unknown as { currentTime: number }).currentTime,
    }));
    assert.equal(state.loadedOnce, before, "the host page was not reloaded");
    assert.equal(state.time, 2, "the same frame");
  });

  it("plays in real time: a second moves currentTime about a second, with timeupdates", async () => {
    await page.$eval("#p", (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(0));
    await page.evaluate(() => (window as unknown as { events: unknown[] }).events.length = 0);
    const from = await page.$eval("#p", async (el) => {
      const p = el as unknown as { play(): Promise<void>; currentTime: number };
      await p.play();
      return performance.now();
    });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const result = await page.$eval("#p", (el, start) => {
      const p = el as unknown as { pause(): void; currentTime: number; paused: boolean };
      const elapsed = (performance.now() - (start as number)) / 1000;
      const time = p.currentTime;
      p.pause();
      return {
        elapsed,
        time,
        paused: p.paused,
        names: (window as unknown as { events: { name: string }[] }).events.map((e) => e.name),
      };
    }, from);
    assert.equal(result.paused, true);
    assert.equal(result.names[0], "play");
    assert.ok(result.names.includes("pause"));
    const updates = result.names.filter((n) => n === "timeupdate").length;
    assert.ok(updates >= 3, `timeupdate fired ${updates} times`);
    // Generous: a loaded host may draw late, never ahead of the clock.
    assert.ok(
      result.time >= 0.5 && result.time <= result.elapsed + 0.1,
      `currentTime ${result.time} after ${result.elapsed.toFixed(2)} s of play`,
    );
  });

  it("fires ended at the end", async () => {
    await page.$eval("#p", (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(2.5));
    await page.$eval("#p", (el) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error("no ended within 15 s")), 15000);
        el.addEventListener("ended", () => {
          clearTimeout(timer);
          resolve();
        }, { once: true });
        void (el as unknown as { play(): Promise<void> }).play();
      }));
    const state = await page.$eval("#p", (el) => {
      const p = el as unknown as { paused: boolean; currentFrame: number };
      return { paused: p.paused, frame: p.currentFrame };
    });
    assert.deepEqual(state, { paused: true, frame: 29 });
  });

  it("names a bad variable value in vid check's words", async () => {
    await page.$eval("#p", (el) => {
      (el as unknown as { variables: Record<string, unknown> }).variables = { bg: 12 };
    });
    await page.waitForFunction(() => document.getElementById("p")!.dataset.state === "error", {
      timeout: 20000,
    });
    const { detail, shown } = await page.$eval("#p", (el) => ({
      detail: (window as unknown as { events: { name: string; detail: { message: string } }[] })
        .events.filter((e) => e.name === "error").at(-1)?.detail.message,
      shown: el.shadowRoot!.querySelector("[part=message]")!.textContent,
    }));
    assert.match(detail ?? "", /variables do not match the composition's declarations/);
    assert.match(detail ?? "", /bg/);
    assert.equal(shown, detail, "the player shows the message");
  });

  it("steps with the keyboard and plays from labelled controls", async () => {
    await page.$eval("#p", (el) => {
      (el as unknown as { variables: Record<string, unknown> }).variables = {};
      el.setAttribute("controls", "");
    });
    await page.$eval("#p", (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(1));
    await page.focus("#p");
    await page.keyboard.press("ArrowRight");
    await page.waitForFunction(() => document.getElementById("p")!.dataset.frame === "11");
    await page.keyboard.down("Shift");
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.up("Shift");
    await page.waitForFunction(() => document.getElementById("p")!.dataset.frame === "1");
    await page.keyboard.press("End");
    await page.waitForFunction(() => document.getElementById("p")!.dataset.frame === "29");
    const labels = await page.$eval(
      "#p",
      (el) =>
        [...el.shadowRoot!.querySelectorAll("[part=controls] [aria-label]")].map((c) =>
          c.getAttribute("aria-label")
        ),
    );
    assert.deepEqual(labels, ["Play", "Seek", "Mute"]);
    await page.keyboard.press("Home");
    await page.waitForFunction(() => document.getElementById("p")!.dataset.frame === "0");
    await page.keyboard.press(" ");
    await page.waitForFunction(() =>
      !(document.getElementById("p") as unknown as { paused: boolean }).paused
    );
    const button = await page.$eval(
      "#p",
      (el) => el.shadowRoot!.querySelector("[part=play]")!.getAttribute("aria-label"),
    );
    assert.equal(button, "Pause");
    await page.keyboard.press(" ");
    await page.waitForFunction(() =>
      (document.getElementById("p") as unknown as { paused: boolean }).paused
    );
  });

  it("shows a poster until the first frame, and HyperFrames clips in their windows", async () => {
    const hfUrl = `${preview!.url}hf.html`;
    const posterShown = await page.evaluate(() => {
      const hf = document.createElement("vid-player");
      hf.id = "hf";
      hf.style.cssText = "display:block;width:320px;height:180px";
      hf.setAttribute("poster", "data:image/gif;base64,R0lGODlhAQABAAAAACw=");
      document.body.append(hf);
      return !hf.shadowRoot!.querySelector<HTMLElement>("[part=poster]")!.hidden;
    });
    assert.ok(posterShown, "the poster shows before any frame");
    await page.$eval("#hf", (el, src) => el.setAttribute("src", src as string), hfUrl);
    await page.waitForFunction(() => document.getElementById("hf")?.dataset.state === "ready", {
      timeout: 30000,
    });
    const colours: number[][] = [];
    for (const t of [0.5, 1.5]) {
      await page.$eval(
        "#hf",
        (el, s) => (el as unknown as { seek(s: number): Promise<void> }).seek(s as number),
        t,
      );
      const png = await (await page.$("#hf"))!.screenshot({ type: "png" });
      colours.push(rgbAt(await toRgb(png), 160, 90));
    }
    const hidden = await page.$eval(
      "#hf",
      (el) => el.shadowRoot!.querySelector<HTMLElement>("[part=poster]")!.hidden,
    );
    assert.ok(hidden, "the poster is gone once a frame is drawn");
    assert.ok(colours[0][0] > 200 && colours[0][2] < 40, `red at 0.5 s, got ${colours[0]}`);
    assert.ok(colours[1][2] > 200 && colours[1][0] < 40, `blue at 1.5 s, got ${colours[1]}`);
    await page.$eval("#hf", (el) => el.remove());
  });

  it("examples/player binds its form to the template's variables", async () => {
    const example = await startPreviewProcess(`${ROOT}examples/player`, [
      "--composition",
      "card.html",
    ]);
    const demo = await browser!.newPage();
    try {
      await demo.goto(`${example.url}index.html`);
      await demo.waitForFunction(
        () => document.getElementById("player")?.dataset.state === "ready",
        { timeout: 30000 },
      );
      await demo.click("input[name=name]", { count: 3 });
      await demo.keyboard.type("Grace");
      await demo.waitForFunction(
        () => {
          const p = document.getElementById("player") as unknown as {
            variables: { name?: string };
            readyState: string;
          };
          return p.variables.name === "Grace" && p.readyState === "ready" &&
            (document.getElementById("player")!.shadowRoot!.querySelectorAll("iframe").length ===
              1);
        },
        { timeout: 30000 },
      );
      const status = await demo.$eval("#status", (el) => el.textContent);
      assert.equal(status, "", "no error shown");
    } finally {
      await demo.close();
      try {
        example.child.kill("SIGINT");
      } catch {
        // already gone
      }
      await example.done;
    }
  });

  it("examples/player works from a plain static server: ready, and the form changes the frame", async () => {
    // The folder as it is checked in (player.js beside index.html), served with no vid in it.
    const plain = staticServer(`${ROOT}examples/player`, true);
    const demo = await browser!.newPage();
    /** The player paused at 2 s, as RGB (640x360), and the band's colour at (10, 180). */
    const band = async (name: string) => {
      await demo.$eval("#player", async (el) => {
        const p = el as unknown as { pause(): void; seek(s: number): Promise<void> };
        p.pause();
        await p.seek(2);
      });
      await Deno.mkdir(SHOTS, { recursive: true });
      const png = await (await demo.$("#player"))!.screenshot({ type: "png" });
      await Deno.writeFile(`${SHOTS}/${name}.png`, png);
      const rgb = await toRgb(png);
      assert.equal(rgb.length, 640 * 360 * 3, "the player's box is 640x360");
      const i = (180 * 640 + 10) * 3;
      return [rgb[i], rgb[i + 1], rgb[i + 2]];
    };
    try {
      await demo.setViewport({ width: 1000, height: 480, deviceScaleFactor: 1 });
      await demo.goto(`http://127.0.0.1:${plain.addr.port}/index.html`);
      await demo.waitForFunction(
        () => document.getElementById("player")?.dataset.state === "ready",
        { timeout: 30000 },
      );
      const state = await demo.$eval("#player", (el) => ({
        duration: (el as unknown as { duration: number }).duration,
        srcdoc: el.shadowRoot!.querySelector("iframe")!.hasAttribute("srcdoc"),
      }));
      assert.deepEqual(state, { duration: 3, srcdoc: true }, "drawn from the fetched card.html");
      const pink = await band("example-static-default");
      // The form's default accent, #ff3d7f.
      assert.ok(pink[0] > 230 && pink[1] < 90 && pink[2] > 100 && pink[2] < 160, `got ${pink}`);
      await demo.$eval("input[name=accent]", (el) => {
        (el as HTMLInputElement).value = "#00ff00";
        el.dispatchEvent(new Event("input", { bubbles: true }));
      });
      await demo.waitForFunction(
        () => {
          const el = document.getElementById("player")!;
          const p = el as unknown as { variables: { accent?: string }; readyState: string };
          return p.variables.accent === "#00ff00" && p.readyState === "ready" &&
            el.shadowRoot!.querySelectorAll("iframe").length === 1;
        },
        { timeout: 30000 },
      );
      const green = await band("example-static-green");
      assert.ok(green[1] > 230 && green[0] < 40 && green[2] < 40, `green band, got ${green}`);
      assert.equal(await demo.$eval("#status", (el) => el.textContent), "", "no error shown");
    } finally {
      await demo.close();
      await plain.shutdown();
    }
  });

  it("fires error with file:line when the composition throws, and shows it", async () => {
    const boom = await browser!.newPage();
    try {
      await boom.goto(`${hostUrl}/boom.html`);
      await boom.waitForFunction(
        () => document.getElementById("p")?.dataset.state === "error",
        { timeout: 30000 },
      );
      const { detail, shown, readyState } = await boom.$eval("#p", (el) => ({
        detail: (window as unknown as { events: { name: string; detail: { message: string } }[] })
          .events.find((e) => e.name === "error")?.detail.message,
        shown: el.shadowRoot!.querySelector("[part=message]")!.textContent,
        readyState: (el as unknown as { readyState: string }).readyState,
      }));
      assert.equal(readyState, "error");
      assert.match(detail ?? "", /the page threw while loading: TypeError/);
      assert.match(detail ?? "", /scene\.js:3:/);
      assert.equal(shown, detail);
    } finally {
      await boom.close();
    }
  });

  it("draws a composition from a plain static host, frame-exact with vid still", async () => {
    const tab = await openHost("/static.html");
    try {
      const state = await tab.$eval("#p", (el) => {
        const iframe = el.shadowRoot!.querySelector("iframe")!;
        return {
          duration: (el as unknown as { duration: number }).duration,
          sandbox: iframe.getAttribute("sandbox"),
          srcdoc: iframe.hasAttribute("srcdoc"),
          origins: [location.origin, new URL(el.getAttribute("src")!).origin],
        };
      });
      assert.equal(state.duration, 3);
      assert.equal(state.sandbox, "allow-scripts", "an opaque origin: scripts alone");
      assert.ok(state.srcdoc, "the player loaded the HTML it fetched");
      // The runtime it put there is the render's, byte for byte (the player's own code is
      // minified; the runtime is a string in it).
      const loader = await tab.$eval("#p", (el) => {
        const srcdoc = el.shadowRoot!.querySelector("iframe")!.getAttribute("srcdoc")!;
        return /<script src="data:text\/javascript;charset=utf-8,([^"]*)"/.exec(srcdoc)?.[1];
      });
      assert.ok(decodeURIComponent(loader ?? "").includes(PAGE_RUNTIME_BUNDLE), "the runtime");
      assert.notEqual(state.origins[0], state.origins[1]);
      await tab.$eval("#p", (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(2));
      const db = psnr(await elementRgb(tab, "static-seek-2"), await stillRgb(2));
      assert.ok(db >= 40, `PSNR ${db.toFixed(1)} dB (want >= 40)`);
      assert.ok(psnr(await elementRgb(tab, "static-seek-2"), await stillRgb(0)) < 30);
      // A bad value reads as the CLI prints it, from vid's own checks in the player.
      await tab.$eval("#p", (el) => {
        (el as unknown as { variables: Record<string, unknown> }).variables = { bg: 12 };
      });
      await tab.waitForFunction(() => document.getElementById("p")!.dataset.state === "error");
      const message = await tab.$eval(
        "#p",
        (el) => el.shadowRoot!.querySelector("[part=message]")!.textContent,
      );
      assert.match(message ?? "", /variables do not match the composition's declarations/);
      assert.match(message ?? "", /"bg" \(color\) expects/);
    } finally {
      await tab.close();
    }
  });

  it("names file:line of a composition that throws on a static host", async () => {
    const tab = await openHost("/static-boom.html", "error");
    try {
      const message = await tab.$eval(
        "#p",
        (el) => el.shadowRoot!.querySelector("[part=message]")!.textContent,
      );
      assert.match(message ?? "", /the page threw while loading: TypeError/);
      assert.match(message ?? "", /scene\.js:3:/);
    } finally {
      await tab.close();
    }
  });

  it("plays a Lambda site's serveUrl (S3 stand-in) with the bucket CORS deploySite set", async () => {
    const cors = await s3!.send(new GetBucketCorsCommand({ Bucket: "player-sites" }));
    assert.deepEqual(cors.CORSRules?.map((r) => [r.AllowedOrigins, r.AllowedMethods]), [
      [["*"], ["GET", "HEAD"]],
    ]);
    assert.equal(site.playerCors, undefined);
    // An unsigned read, as the browser's are (no credentials): what a public-read bucket
    // answers. s3rver answers every unsigned request and has no bucket policy, ACL or Block
    // Public Access (those calls answer NotImplemented), so the policy a real bucket needs
    // (docs/player.md, A Lambda site) cannot be tested here: this pins why.
    assert.doesNotMatch(site.serveUrl, /[?&]X-Amz-/i, "a plain URL, not a presigned one");
    const read = await fetch(`${site.serveUrl}index.html`, { headers: { origin: "null" } });
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("access-control-allow-origin"), "*");
    await read.body?.cancel();
    await assert.rejects(
      s3!.send(
        new PutBucketPolicyCommand({
          Bucket: "player-sites",
          Policy: JSON.stringify({
            Version: "2012-10-17",
            Statement: [{
              Effect: "Allow",
              Principal: "*",
              Action: "s3:GetObject",
              Resource: "arn:aws:s3:::player-sites/sites/*",
            }],
          }),
        }),
      ),
      (error: Error) => error.name === "NotImplemented",
    );
    const tab = await openHost("/site.html");
    try {
      await tab.$eval("#p", (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(2));
      const state = await tab.$eval("#p", (el) => ({
        readyState: (el as unknown as { readyState: string }).readyState,
        duration: (el as unknown as { duration: number }).duration,
        srcdoc: el.shadowRoot!.querySelector("iframe")!.hasAttribute("srcdoc"),
        origins: [location.origin, new URL(el.getAttribute("src")!).origin],
      }));
      assert.equal(state.readyState, "ready");
      assert.equal(state.duration, 3);
      assert.ok(state.srcdoc, "the player read the site's HTML (the bucket's CORS let it)");
      assert.notEqual(state.origins[0], state.origins[1], "the page is of another origin");
      const db = psnr(await elementRgb(tab, "site-seek-2"), await stillRgb(2));
      assert.ok(db >= 40, `PSNR ${db.toFixed(1)} dB (want >= 40)`);
    } finally {
      await tab.close();
    }
  });

  it("draws the fonts HyperFrames embeds from a Lambda site's .vid/fonts, as vid preview does", async () => {
    // The packager put the faces vid embeds into the site, as for a render on Lambda.
    const packaged = fontSite.files.map((f) => f.path).filter((p) => p.startsWith(".vid/fonts/"));
    assert.ok(packaged.includes(".vid/fonts/outfit-latin-700-normal.woff2"), packaged.join(", "));
    assert.ok(packaged.includes(".vid/fonts/inter-latin-400-normal.woff2"), packaged.join(", "));
    const file = `${work}/fonts-still.png`;
    const still = await runVid(["still", `${work}/fonts`, "--time", "0.5", "--output", file]);
    assert.equal(still.code, 0, still.stderr);
    assert.doesNotMatch(still.stderr, /font "/, "the render embeds Outfit and Inter");
    const rendered = await toRgb(await Deno.readFile(file));
    const seek = async (path: string, name: string, consoled: string[]) => {
      const tab = await openHost(path, "ready", consoled);
      try {
        await tab.$eval(
          "#p",
          (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(0.5),
        );
        return await elementRgb(tab, name);
      } finally {
        await tab.close();
      }
    };

    // vid preview embeds the fonts itself: the player's frame of it is the reference drawn by
    // this browser. Against vid still, text is compared by how near it is: this headless
    // Chromium antialiases glyph edges unlike the render's (the page opened directly, with
    // @font-faces of the same files, is 29.6 dB from the still), so no text frame reaches
    // 40 dB there; a fallback face is much further.
    const reference = await seek("/fonts-preview.html", "fonts-preview-seek-0.5", []);
    const siteConsole: string[] = [];
    const site = await seek("/fonts-site.html", "fonts-site-seek-0.5", siteConsole);
    const db = psnr(site, reference);
    assert.ok(db >= 40, `PSNR ${db.toFixed(1)} dB against vid preview's (want >= 40)`);
    assert.deepEqual(siteConsole.filter((m) => /fallback font/.test(m)), []);
    const near = psnr(site, rendered);
    assert.ok(near >= 25, `the glyphs of the render: ${near.toFixed(1)} dB from vid still`);

    // The same folder from a static host, unpackaged (no .vid/fonts): the player still draws,
    // in fallback fonts as it did for every host before it read .vid/fonts, and says so.
    const staticConsole: string[] = [];
    const fallback = await seek("/fonts-static.html", "fonts-static-seek-0.5", staticConsole);
    const far = psnr(fallback, rendered);
    assert.ok(
      far < 20,
      `fallback glyphs, unlike the render's: ${far.toFixed(1)} dB from vid still`,
    );
    const warnings = staticConsole.filter((m) => /fallback font/.test(m));
    assert.equal(warnings.length, 2, warnings.join("\n"));
    assert.match(warnings[0], /"Outfit", a font HyperFrames embeds.*\/fonts\/\.vid\/fonts\//);
    assert.match(warnings[1], /"Helvetica"/);
  });

  it("plays a vid server asset's site_url, frame-exact with vid still", async () => {
    const tab = await openHost("/asset.html");
    try {
      await tab.$eval("#p", (el) => (el as unknown as { seek(s: number): Promise<void> }).seek(2));
      const state = await tab.$eval("#p", (el) => ({
        duration: (el as unknown as { duration: number }).duration,
        srcdoc: el.shadowRoot!.querySelector("iframe")!.hasAttribute("srcdoc"),
      }));
      assert.deepEqual(state, { duration: 3, srcdoc: true });
      const db = psnr(await elementRgb(tab, "asset-seek-2"), await stillRgb(2));
      assert.ok(db >= 40, `PSNR ${db.toFixed(1)} dB (want >= 40)`);
    } finally {
      await tab.close();
    }
  });

  it("plays the sound at playback-rate 2", async () => {
    const tab = await openHost("/static-sound.html");
    try {
      await tab.$eval("#p", (el) => (el as unknown as { play(): Promise<void> }).play());
      await tab.waitForFunction(
        () => {
          const audio = document.getElementById("p")!.shadowRoot!.querySelector("audio");
          return audio !== null && !audio.paused && audio.currentTime > 0.2;
        },
        { timeout: 20000 },
      );
      const sound = await tab.$eval("#p", (el) => {
        const audio = el.shadowRoot!.querySelector("audio")!;
        (el as unknown as { pause(): void }).pause();
        return { rate: audio.playbackRate, src: audio.src, paused: audio.paused };
      });
      assert.equal(sound.rate, 2, "the sound plays at the picture's rate");
      assert.equal(sound.src, `${filesUrl}tone.wav`);
      assert.equal(sound.paused, true, "pause stops the sound");
    } finally {
      await tab.close();
    }
  });
});
