/**
 * `vid server` end to end: the real server process on loopback, driven over HTTP the way
 * `vid cloud` will drive it. Covers admin commands, auth (401s, account isolation),
 * the direct-to-storage upload flow and its checks, idempotency, render validation,
 * billing, rendering to a playable video with signed links, list/delete, restart
 * recovery and webhook delivery with its signature. Responses are checked against
 * api/openapi.yaml.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { zipSync } from "fflate";
import { compositionHtml, probeVideo, runVid } from "../helpers.ts";
import { integratedLufs } from "../audio_levels.ts";
import {
  serverDataDir,
  serverEngine,
  type ServerProcess,
  startServerProcess,
} from "../server_process.ts";
import { verifyWebhook } from "../../src/webhooks/webhooks.ts";
import { signPath, verifyPath } from "../../src/server/auth/secrets.ts";

const FADE = compositionHtml(
  `<div id="box" style="position:absolute;inset:0;animation:fade 1s linear both"></div>`,
  {
    id: "cloudfade",
    variables: [{ id: "label", type: "string", default: "hi" }, {
      id: "n",
      type: "number",
      default: 1,
    }],
    head:
      `<style>@keyframes fade { from { background: rgb(0,0,0) } to { background: rgb(255,0,0) } }</style>`,
  },
);

function projectZip(html = FADE): Uint8Array<ArrayBuffer> {
  return new Uint8Array(zipSync({ "index.html": new TextEncoder().encode(html) }));
}

describe("vid server", () => {
  let dataDir: string;
  let server: ServerProcess;
  let key: string;
  let otherKey: string;
  /** The render of "uploads, renders, polls...", which later steps read instead of rendering. */
  let firstRenderId: string | undefined;
  /** The webhook receiver the first render calls back (read by the webhook step). */
  let hook: Deno.HttpServer<Deno.NetAddr> | undefined;
  const received = Promise.withResolvers<{ body: string; signature: string | null }>();

  const api = async (
    path: string,
    init: RequestInit & { key?: string | null } = {},
  ): Promise<{ status: number; body: Record<string, unknown> }> => {
    const headers = new Headers(init.headers);
    const credential = init.key === undefined ? key : init.key;
    if (credential) headers.set("authorization", `Bearer ${credential}`);
    if (init.body && typeof init.body === "string") headers.set("content-type", "application/json");
    const response = await fetch(`${server.url}${path}`, { ...init, headers });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : {} };
  };

  const upload = async (zip: Uint8Array<ArrayBuffer>, idempotencyKey?: string): Promise<string> => {
    const created = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: zip.length }),
      headers: idempotencyKey ? { "idempotency-key": idempotencyKey } : {},
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const put = await fetch(String(created.body.upload_url), { method: "PUT", body: zip });
    const ready = await put.json();
    assert.equal(put.status, 200, JSON.stringify(ready));
    assert.equal(ready.status, "ready");
    return String(created.body.asset_id);
  };

  const waitFor = async (
    renderId: string,
    timeoutMs = 120000,
  ): Promise<Record<string, unknown>> => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const { body } = await api(`/v3/vid/renders/${renderId}`);
      if (body.status === "completed" || body.status === "failed") return body;
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`render ${renderId} did not finish`);
  };

  before(async () => {
    dataDir = await serverDataDir("vid-server-test-");
    const added = await runVid([
      "server",
      "users",
      "add",
      "ana@example.com",
      "--password",
      "correct horse",
      "--data-dir",
      dataDir,
      "--credits",
      "100",
    ]);
    assert.equal(added.code, 0, added.stderr);
    await runVid([
      "server",
      "users",
      "add",
      "bo@example.com",
      "--password",
      "battery staple",
      "--data-dir",
      dataDir,
    ]);
    const k1 = await runVid(["server", "keys", "create", "ana@example.com", "--data-dir", dataDir]);
    assert.equal(k1.code, 0, k1.stderr);
    key = k1.stdout.trim();
    assert.match(key, /^vid_sk_[0-9a-f]{48}$/);
    otherKey = (await runVid(["server", "keys", "create", "bo@example.com", "--data-dir", dataDir]))
      .stdout.trim();
    if (serverEngine() === "sqlite") assert.ok((await Deno.stat(`${dataDir}/vid.db`)).isFile);
    server = await startServerProcess(dataDir, ["--allow-http-callbacks"]);
    hook = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      async (request) => {
        received.resolve({
          body: await request.text(),
          signature: request.headers.get("vid-signature"),
        });
        return new Response("ok");
      },
    );
  });

  after(async () => {
    await hook?.shutdown();
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true });
  });

  it("answers 401 with a clear body for missing, malformed and invalid credentials", async () => {
    for (
      const [credential, pattern] of [[null, /missing credential/], [
        "vid_sk_nope",
        /invalid or revoked API key/,
      ], ["vid_at_nope", /invalid access token/]] as const
    ) {
      const { status, body } = await api("/v3/me", { key: credential });
      assert.equal(status, 401);
      const error = body.error as Record<string, string>;
      assert.equal(error.code, "vid_unauthorized");
      assert.match(error.message, pattern);
    }
    const me = await api("/v3/me");
    assert.equal(me.status, 200);
    assert.equal(me.body.email, "ana@example.com");
    assert.equal(me.body.credits, 100);
    assert.equal(me.body.credential, "api_key");
  });

  it("keeps the signing secret private (mode 0600)", async () => {
    const info = await Deno.stat(`${dataDir}/secret`);
    assert.equal(info.mode! & 0o777, 0o600);
  });

  it("uploads, renders, polls and serves a playable video through signed links", async () => {
    const assetId = await upload(projectZip());
    // Its webhook is checked by "delivers a signed webhook ...".
    const submitted = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({
        asset_id: assetId,
        fps: 5,
        variables: { label: "yo", extra: 1 },
        callback_url: `http://127.0.0.1:${hook!.addr.port}/hook`,
        callback_id: "order-42",
      }),
    });
    assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
    assert.equal(submitted.body.status, "queued");
    assert.deepEqual(submitted.body.warnings, [
      `"extra" is not declared by the composition (declared: label, n)`,
    ]);
    firstRenderId = String(submitted.body.render_id);
    const done = await waitFor(firstRenderId);
    assert.equal(done.status, "completed", String(done.error));
    assert.equal(done.progress, 1);
    const video = await fetch(String(done.video_url));
    assert.equal(video.status, 200);
    assert.equal(video.headers.get("content-type"), "video/mp4");
    const file = await Deno.makeTempFile({ suffix: ".mp4" });
    await Deno.writeFile(file, new Uint8Array(await video.arrayBuffer()));
    const info = await probeVideo(file);
    assert.equal(info.frames, 5, "1 s at the requested 5 fps");
    assert.deepEqual([info.width, info.height], [1920, 1080], "1080p 16:9 by default");
    assert.deepEqual([done.width, done.height], [1920, 1080]);
    const thumbnail = await fetch(String(done.thumbnail_url));
    assert.equal(thumbnail.headers.get("content-type"), "image/jpeg");
    assert.deepEqual([...new Uint8Array(await thumbnail.arrayBuffer()).slice(0, 2)], [0xff, 0xd8]);
    const tampered = String(done.video_url).replace(
      /sig=([0-9a-f])/,
      (_m, c) => `sig=${c === "0" ? "1" : "0"}`,
    );
    assert.equal((await fetch(tampered)).status, 403);
    const otherKind = String(done.video_url).replace("/video?", "/thumbnail?");
    assert.equal(
      (await fetch(otherKind)).status,
      403,
      "a video signature must not open the thumbnail",
    );
    await Deno.remove(file);
    const me = await api("/v3/me");
    assert.equal(me.body.credits, 99, "a 1 s render costs 1 credit");
  });

  it("isolates accounts: another account's asset and render are 404", async () => {
    const assetId = await upload(projectZip());
    const other = await api(`/v3/assets/${assetId}`, { key: otherKey });
    assert.equal(other.status, 404);
    const submitted = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: assetId }),
      key: otherKey,
    });
    assert.equal(submitted.status, 404);
    // The first step's render: this account's, and there.
    assert.ok(firstRenderId, "needs the render of the first render step");
    assert.equal((await api(`/v3/vid/renders/${firstRenderId}`)).status, 200);
    assert.equal((await api(`/v3/vid/renders/${firstRenderId}`, { key: otherKey })).status, 404);
    assert.equal(
      (await api(`/v3/vid/renders/${firstRenderId}`, { method: "DELETE", key: otherKey })).status,
      404,
    );
    assert.equal((await api(`/v3/vid/renders/${firstRenderId}`)).status, 200, "not deleted");
  });

  it("validates render requests per field, 4k alpha and strict variables", async () => {
    const assetId = await upload(projectZip());
    const cases: [Record<string, unknown>, number, string, RegExp][] = [
      [{ asset_id: assetId, fps: 0 }, 400, "fps", /1 to 240/],
      [{ asset_id: assetId, fps: 241 }, 400, "fps", /1 to 240/],
      [{ asset_id: assetId, fps: "fast" }, 400, "fps", /29\.97 \(= 30000\/1001\)/],
      [{ asset_id: assetId, fps: "30000/1003" }, 400, "fps", /denominator/],
      [{ asset_id: assetId, fps: true }, 400, "fps", /frame rate/],
      [{ asset_id: assetId, quality: "ultra" }, 400, "quality", /draft, standard, high/],
      [{ asset_id: assetId, format: "gif" }, 400, "format", /mp4, webm, mov/],
      [
        { asset_id: assetId, resolution: "4k", format: "webm" },
        400,
        "resolution",
        /no alpha channel.*mp4.*native resolution/,
      ],
      [{ asset_id: assetId, aspect_ratio: "4:3" }, 400, "aspect_ratio", /16:9, 9:16, 1:1/],
      [{ asset_id: assetId, loudness: -3 }, 400, "loudness", /from -70 to -5 LUFS .*got -3/],
      [{ asset_id: assetId, loudness: "loud" }, 400, "loudness", /from -70 to -5 LUFS/],
      [
        { asset_id: assetId, callback_url: "http://example.com/hook" },
        400,
        "callback_url",
        /https/,
      ],
      [
        { asset_id: assetId, variables: { n: "five" }, strict_variables: true },
        422,
        "variables.n",
        /"n" \(number\) expects a finite number/,
      ],
      [
        { asset_id: assetId, variables: { lable: "x" }, strict_variables: true },
        422,
        "variables.lable",
        /"lable" is not declared .*; did you mean "label"\?/,
      ],
      [{ fps: 30 }, 400, "asset_id", /required/],
    ];
    for (const [body, status, field, message] of cases) {
      const result = await api("/v3/vid/renders", { method: "POST", body: JSON.stringify(body) });
      assert.equal(result.status, status, JSON.stringify(body));
      const error = result.body.error as Record<string, string>;
      assert.equal(error.field, field, JSON.stringify(result.body));
      assert.match(error.message, message);
      if (status === 422) assert.equal(error.code, "vid_project_invalid");
    }
  });

  it("loudness: the render's soundtrack is normalised to it (ebur128 within 1 LU)", async () => {
    const tone = await Deno.makeTempFile({ suffix: ".wav" });
    const made = await new Deno.Command("ffmpeg", {
      args: ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=1", tone],
    }).output();
    assert.ok(made.success);
    const html = compositionHtml(`<audio src="tone.wav" data-volume="0.1"></audio>`, {
      id: "loud",
    });
    const zip = new Uint8Array(zipSync({
      "index.html": new TextEncoder().encode(html),
      "tone.wav": await Deno.readFile(tone),
    }));
    await Deno.remove(tone);
    const submitted = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: await upload(zip), fps: 2, loudness: -16 }),
    });
    assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
    const done = await waitFor(String(submitted.body.render_id));
    assert.equal(done.status, "completed", JSON.stringify(done));
    const file = await Deno.makeTempFile({ suffix: ".mp4" });
    await Deno.writeFile(
      file,
      new Uint8Array(await (await fetch(String(done.video_url))).arrayBuffer()),
    );
    const lufs = await integratedLufs(file);
    await Deno.remove(file);
    assert.ok(Math.abs(lufs - -16) <= 1, `integrated ${lufs} LUFS, want -16`);
  });

  it("takes the composition's data-fps when fps is absent; rational rates are exact", async () => {
    const assetId = await upload(
      // 0.2 s at 29.97 fps: round(5.994) = 6 frames, shown for 6 x 1001 / 30000 s.
      projectZip(FADE.replace('data-duration="1"', 'data-duration="0.2" data-fps="29.97"')),
    );
    const submitted = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: assetId, resolution: "1080p", aspect_ratio: "16:9" }),
    });
    assert.equal(submitted.status, 201, JSON.stringify(submitted.body));
    assert.equal(submitted.body.fps, 30000 / 1001);
    const done = await waitFor(String(submitted.body.render_id));
    assert.equal(done.status, "completed", JSON.stringify(done));
    assert.equal(done.duration_seconds, 0.2002);
  });

  it("checks uploads: 200 MB limit, bad zips, signature, single use", async () => {
    const tooBig = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: 200 * 1024 * 1024 + 1 }),
    });
    assert.equal(tooBig.status, 413);
    assert.match((tooBig.body.error as Record<string, string>).message, /200 MB/);
    const bad = new Uint8Array(
      zipSync({ "other.html": new TextEncoder().encode("<p>no composition</p>") }),
    );
    const created = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: bad.length }),
    });
    const uploadUrl = String(created.body.upload_url);
    const forged = uploadUrl.replace(/expires=(\d+)/, (_m, e) => `expires=${Number(e) + 1}`);
    assert.equal((await fetch(forged, { method: "PUT", body: bad })).status, 403);
    const rejected = await fetch(uploadUrl, { method: "PUT", body: bad });
    assert.equal(rejected.status, 422);
    const error = (await rejected.json()).error;
    assert.equal(error.code, "vid_project_invalid");
    assert.match(error.message, /index\.html/);
    // A project that fails the static part of vid check is refused with every problem.
    const broken = new Uint8Array(zipSync({
      "index.html": new TextEncoder().encode(
        '<div data-composition-id="b" data-width="320" data-height="180" data-duration="1">' +
          '<img src="Logo.png"></div>\n<script>let x = ;</script>',
      ),
      "logo.png": new Uint8Array([1]),
    }));
    const brokenAsset = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: broken.length }),
    });
    const refused = await fetch(String(brokenAsset.body.upload_url), {
      method: "PUT",
      body: broken,
    });
    assert.equal(refused.status, 422);
    const checked = (await refused.json()).error;
    assert.equal(checked.code, "vid_project_invalid");
    assert.deepEqual(
      checked.problems.map((p: { kind: string; file: string; line: number }) =>
        `${p.kind} ${p.file}:${p.line}`
      ),
      ["missing-file index.html:1", "syntax index.html:2"],
    );
    assert.match(checked.message, /the project has "logo\.png" \(letter case differs/);
    // Undeclared reads and a clip whose timing is all misspelt are refused by name and place.
    const unread = new Uint8Array(zipSync({
      "index.html": new TextEncoder().encode(
        '<div data-composition-id="u" data-width="320" data-height="180" data-duration="1" ' +
          `data-composition-variables='[{"id":"title","type":"string","default":"Hi"}]'>\n` +
          '<p data-var-text="subtitle"></p><div class="clip" data-strat="0.5">x</div></div>\n' +
          "<script>document.title = __vid.getVariables().titel;</script>",
      ),
    }));
    const unreadAsset = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: unread.length }),
    });
    const unreadRefused = await fetch(String(unreadAsset.body.upload_url), {
      method: "PUT",
      body: unread,
    });
    assert.equal(unreadRefused.status, 422);
    const reads = (await unreadRefused.json()).error;
    assert.deepEqual(
      reads.problems.map((p: { kind: string; field: string; line: number; column: number }) =>
        `${p.kind} ${p.field} ${p.line}:${p.column}`
      ),
      [
        "unknown-attribute data-strat 2:51",
        "undeclared-read titel 3:47",
        "undeclared-read subtitle 2:4",
      ],
    );
    assert.match(
      reads.message,
      /index\.html:3:47: `titel` is read at index\.html:3:47 but not declared; did you mean `title`\?/,
    );
    const good = projectZip();
    const asset = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: good.length }),
    });
    const first = await fetch(String(asset.body.upload_url), { method: "PUT", body: good });
    assert.equal(first.status, 200);
    await first.body?.cancel();
    const again = await fetch(String(asset.body.upload_url), { method: "PUT", body: good });
    assert.equal(again.status, 409);
    await again.body?.cancel();
  });

  it("replays an Idempotency-Key with the same body and refuses it with another", async () => {
    const zip = projectZip();
    const a = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: zip.length }),
      headers: { "idempotency-key": "upload:1" },
    });
    const b = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: zip.length }),
      headers: { "idempotency-key": "upload:1" },
    });
    assert.equal(a.status, 201);
    assert.equal(b.status, 200);
    assert.equal(a.body.asset_id, b.body.asset_id);
    const c = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: zip.length + 1 }),
      headers: { "idempotency-key": "upload:1" },
    });
    assert.equal(c.status, 409);
    assert.equal((c.body.error as Record<string, string>).code, "vid_idempotency_conflict");
    const badKey = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: 1 }),
      headers: { "idempotency-key": "has space" },
    });
    assert.equal(badKey.status, 400);
    await fetch(String(a.body.upload_url), { method: "PUT", body: zip }).then((r) =>
      r.body?.cancel()
    );
    const before = (await api("/v3/me")).body.credits as number;
    const body = JSON.stringify({ asset_id: a.body.asset_id, fps: 1 });
    const r1 = await api("/v3/vid/renders", {
      method: "POST",
      body,
      headers: { "idempotency-key": "render-1" },
    });
    const r2 = await api("/v3/vid/renders", {
      method: "POST",
      body,
      headers: { "idempotency-key": "render-1" },
    });
    assert.equal(r1.body.render_id, r2.body.render_id);
    assert.equal((await api("/v3/me")).body.credits, before - 1, "billed once");
    await waitFor(String(r1.body.render_id));
  });

  it("marks a render whose page throws as failed, with the error, and refunds its credits", async () => {
    const broken = compositionHtml("<div></div>", {
      id: "broken",
      after: `<script>setTimeout(() => { throw new Error("logo service down"); }, 100);</script>`,
    });
    const assetId = await upload(projectZip(broken));
    const before = (await api("/v3/me")).body.credits as number;
    const submitted = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: assetId, fps: 10 }),
    });
    assert.equal(submitted.status, 201);
    assert.equal((await api("/v3/me")).body.credits, before - 1, "charged at submission");
    const done = await waitFor(String(submitted.body.render_id));
    assert.equal(done.status, "failed");
    assert.match(String(done.error), /logo service down/);
    assert.equal(done.video_url, null);
    assert.equal((await api("/v3/me")).body.credits, before, "refunded after the failure");
  });

  it("refuses signed links once expired, and links signed for another path", async () => {
    const secret = (await Deno.readTextFile(`${dataDir}/secret`)).trim();
    const path = "/v3/files/rnd_x/video";
    const now = Math.floor(Date.now() / 1000);
    const sig = await signPath(secret, "video", path, now + 60);
    assert.ok(await verifyPath(secret, "video", path, now + 60, sig, now));
    assert.ok(!(await verifyPath(secret, "video", path, now + 60, sig, now + 61)), "expired");
    assert.ok(!(await verifyPath(secret, "video", "/v3/files/rnd_y/video", now + 60, sig, now)));
    assert.ok(!(await verifyPath(secret, "thumbnail", path, now + 60, sig, now)));
    const expired = await signPath(secret, "video", path, now - 1);
    const response = await fetch(`${server.url}${path}?expires=${now - 1}&sig=${expired}`);
    assert.equal(response.status, 403);
    assert.match((await response.json()).error.message, /expired or invalid/);
  });

  it("refuses a render the balance cannot pay with 402 before queuing", async () => {
    const long = compositionHtml("<div></div>", { id: "long", duration: 500 });
    const assetId = await upload(projectZip(long));
    const result = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: assetId }),
    });
    assert.equal(result.status, 402);
    assert.equal((result.body.error as Record<string, string>).code, "vid_insufficient_credits");
    const list = await api("/v3/vid/renders?limit=100");
    assert.ok(!(list.body.data as Record<string, unknown>[]).some((r) => r.asset_id === assetId));
  });

  it("lists with limit and token, hides soft-deleted renders unless all=true", async () => {
    const page1 = await api("/v3/vid/renders?limit=2");
    assert.equal((page1.body.data as unknown[]).length, 2);
    assert.ok(page1.body.next_token);
    const page2 = await api(`/v3/vid/renders?limit=2&token=${page1.body.next_token}`);
    const ids1 = (page1.body.data as Record<string, string>[]).map((r) => r.render_id);
    const ids2 = (page2.body.data as Record<string, string>[]).map((r) => r.render_id);
    assert.equal(ids1.filter((id) => ids2.includes(id)).length, 0);
    const victim = ids1[0];
    assert.equal((await api(`/v3/vid/renders/${victim}`, { method: "DELETE" })).status, 200);
    assert.equal((await api(`/v3/vid/renders/${victim}`)).status, 404);
    const visible = await api("/v3/vid/renders?limit=100");
    assert.ok(!(visible.body.data as Record<string, string>[]).some((r) => r.render_id === victim));
    const all = await api("/v3/vid/renders?limit=100&all=true");
    const deleted = (all.body.data as Record<string, string>[]).find((r) => r.render_id === victim);
    assert.equal(deleted?.status, "deleted");
    assert.equal((await api("/v3/vid/renders?limit=0")).status, 400);
  });

  it("delivers a signed webhook when a render terminates, echoing callback_id", async () => {
    // The first render step's render named this receiver and "order-42".
    assert.ok(firstRenderId, "needs the render of the first render step");
    const { body, signature } = await received.promise;
    const payload = JSON.parse(body);
    assert.equal(payload.render_id, firstRenderId);
    assert.equal(payload.status, "completed");
    assert.equal(payload.callback_id, "order-42");
    assert.match(payload.video_url, /\/v3\/files\//);
    const secret = (await Deno.readTextFile(`${dataDir}/secret`)).trim();
    assert.ok(await verifyWebhook(secret, signature, body));
    assert.ok(!(await verifyWebhook("wrong", signature, body)));
  });

  it("re-queues a render interrupted by a killed server and finishes it after restart", async () => {
    const slow = compositionHtml(
      `<div style="position:absolute;inset:0;animation:fade 2s linear both"></div>`,
      {
        id: "slow",
        duration: 2,
        head:
          `<style>@keyframes fade { from { background: #000 } to { background: #0f0 } }</style>`,
      },
    );
    const assetId = await upload(projectZip(slow));
    const submitted = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: assetId, fps: 10, aspect_ratio: "1:1" }),
    });
    const id = String(submitted.body.render_id);
    const deadline = Date.now() + 60000;
    while ((await api(`/v3/vid/renders/${id}`)).body.status !== "rendering") {
      if (Date.now() > deadline) throw new Error("never started rendering");
      await new Promise((r) => setTimeout(r, 50));
    }
    await server.stop("SIGKILL");
    server = await startServerProcess(dataDir, ["--allow-http-callbacks"]);
    const done = await waitFor(id);
    assert.equal(done.status, "completed", String(done.error));
    const video = await fetch(String(done.video_url));
    const file = await Deno.makeTempFile({ suffix: ".mp4" });
    await Deno.writeFile(file, new Uint8Array(await video.arrayBuffer()));
    const info = await probeVideo(file);
    assert.deepEqual([info.frames, info.width, info.height], [20, 1080, 1080]);
    await Deno.remove(file);
  });
});
