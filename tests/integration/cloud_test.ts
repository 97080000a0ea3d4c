/**
 * `vid cloud` end to end: the real `vid` command against the real `vid server` process
 * on loopback. Covers the render pipeline (default output path, aspect-ratio detection,
 * `--asset-id`, idempotent re-runs billed once), the OAuth 401 refresh-and-replay,
 * strict variables, webhooks and `--no-wait`, `--dry-run` and the 200 MB limit, flag
 * validation before any network call, list/get/delete, retries through a flaky proxy,
 * the not-signed-in message and `--max-wait`.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  compositionHtml,
  makeProject,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  ROOT,
  type RunResult,
  runVid,
} from "../helpers.ts";

interface Server {
  url: string;
  stop(): Promise<void>;
}

async function startServer(dataDir: string): Promise<Server> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${ROOT}cli.ts`,
      "server",
      "--port",
      "0",
      "--data-dir",
      dataDir,
      "--allow-http-callbacks",
      "--workers",
      "2",
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!/listening on (\S+)/.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`server exited: ${out}`);
    out += value;
  }
  const url = out.match(/listening on (\S+)/)![1];
  (async () => {
    while (!(await reader.read()).done) { /* drain */ }
  })();
  child.stderr.pipeTo(new WritableStream());
  return {
    url,
    async stop() {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      await child.status;
    },
  };
}

/** A loopback address nothing listens on: any request to it fails to connect. */
function closedUrl(): string {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return `http://127.0.0.1:${port}`;
}

/** The Deno cache of this process: children get it, as HOME points at a temp dir. */
async function denoDir(): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  return JSON.parse(new TextDecoder().decode(output.stdout)).denoDir;
}

// --- OAuth through the real PKCE flow (as tests/oauth_test.ts drives it) ---

const EMAIL = "cloud@example.com";
const PASSWORD = "correct horse";
const REDIRECT = "http://127.0.0.1:53682/callback";

function base64Url(bytes: ArrayBuffer | Uint8Array): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function unescapeHtml(text: string): string {
  return text.replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

async function oauthLogin(
  baseUrl: string,
): Promise<{ access_token: string; refresh_token: string; expires_in: number }> {
  const verifier = base64Url(crypto.getRandomValues(new Uint8Array(32)));
  const challenge = base64Url(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)),
  );
  const authorize = new URL(`${baseUrl}/oauth/authorize`);
  for (
    const [name, value] of Object.entries({
      response_type: "code",
      client_id: "vid-cli",
      redirect_uri: REDIRECT,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state: "cloud-test",
    })
  ) authorize.searchParams.set(name, value);
  const page = await fetch(authorize);
  const html = await page.text();
  assert.equal(page.status, 200, html);
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
  const fields: Record<string, string> = {};
  for (
    const [, name, value] of html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)
  ) fields[name] = unescapeHtml(value);
  const approved = await fetch(`${baseUrl}/oauth/authorize`, {
    method: "POST",
    redirect: "manual",
    headers: { cookie },
    body: new URLSearchParams({ ...fields, email: EMAIL, password: PASSWORD }),
  });
  await approved.body?.cancel();
  assert.equal(approved.status, 302);
  const code = new URL(approved.headers.get("location")!).searchParams.get("code")!;
  const exchanged = await fetch(`${baseUrl}/oauth/token`, {
    method: "POST",
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
      code_verifier: verifier,
    }),
  });
  const tokens = await exchanged.json();
  assert.equal(exchanged.status, 200, JSON.stringify(tokens));
  return tokens;
}

// --- fixtures ---

const VARIABLES = [
  { id: "label", type: "string", default: "hi" },
  { id: "n", type: "number", default: 1 },
];

/** 320x180 (16:9), 1 s, a red full-frame box. */
const WIDE = compositionHtml(
  `<div style="position:absolute;inset:0;background:rgb(255,0,0)"></div>`,
  { id: "wide", variables: VARIABLES },
);

/** 1080x1920 (9:16), 1 s, a green full-frame box. */
const TALL = compositionHtml(
  `<div style="position:absolute;inset:0;background:rgb(0,255,0)"></div>`,
  { id: "tall", width: 1080, height: 1920 },
);

/** 320x180, 2 s: slower to render than a poll interval. */
const SLOW = compositionHtml(
  `<div style="position:absolute;inset:0;animation:fade 2s linear both"></div>`,
  {
    id: "slow",
    duration: 2,
    head: `<style>@keyframes fade { from { background: #000 } to { background: #00f } }</style>`,
  },
);

interface RenderJson {
  ok: boolean;
  dryRun: boolean;
  renderId: string;
  assetId: string;
  status: string;
  output: string;
  uploadedBytes: number;
  render: Record<string, unknown>;
}

function parseJson<T = Record<string, unknown>>(result: RunResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(
      `stdout is not JSON (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`,
    );
  }
}

function describeRun(result: RunResult): string {
  return `exit ${result.code}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`;
}

describe("vid cloud", () => {
  const temps: string[] = [];
  let dataDir: string;
  let server: Server;
  let key: string;
  let home: string;
  let cache: string;
  /** The asset of the 9:16 project, once uploaded. */
  let tallAssetId: string | undefined;

  const tempDir = async (): Promise<string> => {
    const dir = await Deno.makeTempDir({ prefix: "vid-cloud-test-" });
    temps.push(dir);
    return dir;
  };
  const project = async (
    html: string,
    files: Record<string, string | Uint8Array> = {},
  ): Promise<string> => {
    const dir = await makeProject(html, files);
    temps.push(dir);
    return dir;
  };

  /** `vid cloud <args>` with the server's URL and the API key, unless `env` says otherwise. */
  const cloud = (
    args: string[],
    options: { cwd?: string; env?: Record<string, string> } = {},
  ): Promise<RunResult> =>
    runVid(["cloud", ...args], {
      cwd: options.cwd,
      env: {
        HOME: home,
        DENO_DIR: cache,
        CLOUD_API_URL: server.url,
        CLOUD_API_KEY: key,
        VID_API_KEY: "",
        VID_CREDENTIALS_FILE: "",
        ...options.env,
      },
    });

  /** `vid cloud <args>` that can only work without the network: no credential, closed port. */
  const offline = (args: string[]): Promise<RunResult> =>
    cloud(args, { env: { CLOUD_API_URL: closedUrl(), CLOUD_API_KEY: "" } });

  const me = async (): Promise<{ credits: number; email: string }> => {
    const response = await fetch(`${server.url}/v3/me`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assert.equal(response.status, 200);
    return await response.json();
  };

  const renderRecord = async (
    id: string,
  ): Promise<{ status: number; body: RenderJson["render"] }> => {
    const response = await fetch(`${server.url}/v3/vid/renders/${id}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    return { status: response.status, body: await response.json() };
  };

  before(async () => {
    cache = await denoDir();
    dataDir = await tempDir();
    home = await tempDir();
    const added = await runVid([
      "server",
      "users",
      "add",
      EMAIL,
      "--password",
      PASSWORD,
      "--data-dir",
      dataDir,
      "--credits",
      "100000",
    ]);
    assert.equal(added.code, 0, added.stderr);
    const created = await runVid(["server", "keys", "create", EMAIL, "--data-dir", dataDir]);
    assert.equal(created.code, 0, created.stderr);
    key = created.stdout.trim();
    server = await startServer(dataDir);
  });

  after(async () => {
    await server?.stop();
    for (const dir of temps) await Deno.remove(dir, { recursive: true }).catch(() => {});
  });

  it("renders a project end to end to renders/<render_id>.mp4 by default", async () => {
    const dir = await project(WIDE);
    const cwd = await tempDir();
    const result = await cloud(["render", dir, "--poll-interval", "0.2", "--fps", "2"], { cwd });
    assert.equal(result.code, 0, describeRun(result));
    const match = result.stdout.match(/^rendered (.+) \((rnd_\w+)\)$/m);
    assert.ok(match, result.stdout);
    const [, output, renderId] = match;
    assert.equal(output, join(cwd, "renders", `${renderId}.mp4`));
    assert.match(result.stderr, /uploading \d+(\.\d+)? (B|KB)/);
    assert.match(result.stderr, new RegExp(`submitted ${renderId}`));
    assert.match(result.stderr, /completed 100%/);
    const info = await probeVideo(output);
    assert.equal(info.frames, 2);
    assert.deepEqual([info.width, info.height], [1920, 1080], "16:9 composition -> 1920x1080");
    const red = await pixelSeries(output, 960, 540);
    assert.ok(near(red[0], [255, 0, 0, 255], 24), rgb(red[0]));

    const json = await cloud(
      ["render", dir, "--poll-interval", "0.2", "--fps", "2", "--json", "-o", `${cwd}/out.webm`],
      { cwd },
    );
    assert.equal(json.code, 0, describeRun(json));
    const body = parseJson<RenderJson>(json);
    assert.equal(body.ok, true);
    assert.equal(body.status, "completed");
    assert.match(body.renderId, /^rnd_\w+$/);
    assert.notEqual(body.renderId, renderId, "a re-run without a key is a new render");
    assert.match(body.assetId, /^ast_\w+$/);
    assert.equal(body.output, `${cwd}/out.webm`);
    assert.ok(body.uploadedBytes > 0);
    // Without --format the -o extension picks the format, as with vid render.
    const webm = await probeVideo(body.output);
    assert.equal(webm.frames, 2);
    assert.equal(webm.codec, "vp9");
    assert.doesNotMatch(json.stderr, /uploading|submitted/, "no progress lines with --json");
  });

  it("detects 9:16 from data-width/data-height; --aspect-ratio overrides", async () => {
    const dir = await project(TALL);
    const cwd = await tempDir();
    const [tall, square] = await Promise.all([
      cloud(["render", dir, "--poll-interval", "0.2", "--fps", "1", "--json"], { cwd }),
      cloud(
        ["render", dir, "--poll-interval", "0.2", "--fps", "1", "--json", "--aspect-ratio", "1:1"],
        { cwd },
      ),
    ]);
    assert.equal(tall.code, 0, describeRun(tall));
    assert.equal(square.code, 0, describeRun(square));
    const t = parseJson<RenderJson>(tall);
    assert.equal(t.render.aspect_ratio, "9:16");
    const tallInfo = await probeVideo(t.output);
    assert.deepEqual([tallInfo.width, tallInfo.height], [1080, 1920]);
    assert.equal(tallInfo.frames, 1);
    const s = parseJson<RenderJson>(square);
    assert.equal(s.render.aspect_ratio, "1:1");
    const squareInfo = await probeVideo(s.output);
    assert.deepEqual([squareInfo.width, squareInfo.height], [1080, 1080]);
    tallAssetId = t.assetId;
  });

  it("--asset-id re-renders without uploading, at 16:9 unless told (letterboxed)", async () => {
    assert.ok(tallAssetId, "needs the 9:16 asset of the previous test");
    const cwd = await tempDir();
    const result = await cloud(
      ["render", "--asset-id", tallAssetId, "--poll-interval", "0.2", "--fps", "1", "--json"],
      { cwd },
    );
    assert.equal(result.code, 0, describeRun(result));
    const body = parseJson<RenderJson>(result);
    assert.equal(body.uploadedBytes, 0);
    assert.equal(body.assetId, tallAssetId);
    assert.equal(body.render.aspect_ratio, "16:9");
    assert.equal(body.output, join(cwd, "renders", `${body.renderId}.mp4`));
    const info = await probeVideo(body.output);
    assert.deepEqual([info.width, info.height], [1920, 1080]);
    const centre = await pixelSeries(body.output, 960, 540);
    const side = await pixelSeries(body.output, 100, 540);
    assert.ok(near(centre[0], [0, 255, 0, 255], 24), `centre ${rgb(centre[0])}`);
    assert.ok(near(side[0], [0, 0, 0, 255], 24), `letterbox bar ${rgb(side[0])}`);
  });

  it("re-running with the same --idempotency-key gives the same render and bills once", async () => {
    const dir = await project(WIDE);
    const cwd = await tempDir();
    const idempotencyKey = `cloud-test:${crypto.randomUUID()}`;
    const before = (await me()).credits;
    const args = [
      "render",
      dir,
      "--poll-interval",
      "0.2",
      "--fps",
      "1",
      "--json",
      "--idempotency-key",
      idempotencyKey,
    ];
    const first = await cloud(args, { cwd });
    assert.equal(first.code, 0, describeRun(first));
    const second = await cloud(args, { cwd });
    assert.equal(second.code, 0, describeRun(second));
    const a = parseJson<RenderJson>(first);
    const b = parseJson<RenderJson>(second);
    assert.equal(a.renderId, b.renderId);
    assert.equal(a.assetId, b.assetId);
    assert.ok(a.uploadedBytes > 0);
    assert.equal(b.uploadedBytes, 0, "the replayed asset is ready: nothing to upload");
    const cost = Number(a.render.credits);
    assert.ok(cost > 0);
    assert.equal((await me()).credits, before - cost, "billed once");
  });

  it("refreshes an OAuth sign-in once on 401 and replays; a dead refresh token says sign in", async () => {
    const tokens = await oauthLogin(server.url);
    const dir = await tempDir();
    const file = join(dir, "credentials");
    const stale = `vid_at_${"0".repeat(64)}`;
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        version: 1,
        base_url: server.url,
        type: "oauth",
        access_token: stale,
        refresh_token: tokens.refresh_token,
        expires_at: Math.floor(Date.now() / 1000) - 60,
        email: EMAIL,
      }),
      { mode: 0o600 },
    );
    const env = { CLOUD_API_KEY: "", VID_CREDENTIALS_FILE: file };
    const listed = await cloud(["list", "--limit", "1", "--json"], { env });
    assert.equal(listed.code, 0, describeRun(listed));
    assert.ok(Array.isArray(parseJson(listed).data));
    assert.doesNotMatch(listed.stderr, /warning/);
    const stored = JSON.parse(await Deno.readTextFile(file));
    assert.equal(stored.type, "oauth");
    assert.notEqual(stored.access_token, stale);
    assert.notEqual(stored.refresh_token, tokens.refresh_token, "the refresh token rotated");
    assert.equal(stored.email, EMAIL);
    assert.ok(stored.expires_at > Date.now() / 1000);
    assert.equal((await Deno.stat(file)).mode! & 0o777, 0o600);
    const check = await fetch(`${server.url}/v3/me`, {
      headers: { authorization: `Bearer ${stored.access_token}` },
    });
    assert.equal(check.status, 200);
    assert.equal((await check.json()).credential, "oauth");

    await Deno.writeTextFile(
      file,
      JSON.stringify({
        ...stored,
        access_token: stale,
        refresh_token: `vid_rt_${"0".repeat(64)}`,
      }),
      { mode: 0o600 },
    );
    const refused = await cloud(["list"], { env });
    assert.equal(refused.code, 1, describeRun(refused));
    assert.match(refused.stderr, /vid auth login/);
  });

  it("--strict-variables fails on a mismatch before any network call", async () => {
    const dir = await project(WIDE);
    const strict = await offline(
      ["render", dir, "--variables", '{"n":"five"}', "--strict-variables"],
    );
    assert.equal(strict.code, 1, describeRun(strict));
    assert.match(strict.stderr, /--strict-variables/);
    assert.match(strict.stderr, /"n" \(number\) expects a finite number, got "five"/);
    assert.doesNotMatch(strict.stderr, /retrying|network|connect/i);
    const json = await offline(
      ["render", dir, "--variables", '{"n":"five"}', "--strict-variables", "--json"],
    );
    assert.equal(json.code, 1, describeRun(json));
    const error = parseJson<{ ok: boolean; error: Record<string, unknown> }>(json).error;
    assert.equal(error.name, "StrictVariablesError");
    // The SDK path of the override, as the server's 422 names it.
    assert.equal(error.field, "variables.n");
    const [problem] = error.problems as Record<string, string>[];
    assert.deepEqual([problem.key, problem.expected, problem.given], [
      "n",
      "a finite number",
      '"five"',
    ]);
  });

  it("--no-wait prints the render_id at once; the webhook echoes --callback-id", async () => {
    const received = Promise.withResolvers<Record<string, unknown>>();
    const hook = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      async (request) => {
        received.resolve(await request.json());
        return new Response("ok");
      },
    );
    try {
      const dir = await project(SLOW);
      const result = await cloud([
        "render",
        dir,
        "--fps",
        "2",
        "--no-wait",
        "--callback-url",
        `http://127.0.0.1:${hook.addr.port}/hook`,
        "--callback-id",
        "order-7",
      ]);
      assert.equal(result.code, 0, describeRun(result));
      assert.match(result.stdout, /^rnd_\w+\n$/, "just the render_id");
      const renderId = result.stdout.trim();
      const now = await renderRecord(renderId);
      assert.equal(now.status, 200);
      assert.notEqual(now.body.status, "completed", "the CLI returned before completion");
      const timeout = setTimeout(() => received.reject(new Error("no webhook in 60 s")), 60000);
      const payload = await received.promise.finally(() => clearTimeout(timeout));
      assert.equal(payload.render_id, renderId);
      assert.equal(payload.status, "completed");
      assert.equal(payload.callback_id, "order-7");
    } finally {
      await hook.shutdown();
    }
  });

  it("--dry-run needs no sign-in and reports the zip, counting only included files", async () => {
    const sizes = Array.from({ length: 12 }, (_, i) => 1000 + i * 700);
    const assets: Record<string, Uint8Array> = {};
    sizes.forEach((size, i) =>
      assets[`assets/a${String(i).padStart(2, "0")}.bin`] = new Uint8Array(size).fill(i)
    );
    const big = new Uint8Array(500_000).fill(7);
    const dir = await project(WIDE, {
      ...assets,
      "renders/old.mp4": big,
      "node_modules/dep/index.js": big,
      ".env": "SECRET=1\n",
      "design.psd": big,
      "scenes/renders/kept.txt": "nested renders/ is kept",
      ".vidignore": "*.psd\n",
    });
    const result = await offline(["render", dir, "--dry-run", "--json"]);
    assert.equal(result.code, 0, describeRun(result));
    const report = parseJson<{
      ok: boolean;
      dryRun: boolean;
      compressedBytes: number;
      uncompressedBytes: number;
      fileCount: number;
      largest: { path: string; size: number }[];
      siteId: string;
      aspectRatio: string;
    }>(result);
    assert.equal(report.ok, true);
    assert.equal(report.dryRun, true);
    assert.equal(report.fileCount, 14, "index.html, 12 assets, scenes/renders/kept.txt");
    const html = new TextEncoder().encode(WIDE).length;
    assert.equal(
      report.uncompressedBytes,
      html + sizes.reduce((a, b) => a + b, 0) + "nested renders/ is kept".length,
    );
    assert.ok(report.compressedBytes > 0 && report.compressedBytes < report.uncompressedBytes);
    assert.match(report.siteId, /^site-[0-9a-f]{16}$/);
    assert.equal(report.aspectRatio, "16:9");
    assert.equal(report.largest.length, 10);
    assert.deepEqual(
      report.largest.map((f) => f.size),
      [...sizes].sort((a, b) => b - a).slice(0, 10),
    );
    assert.equal(report.largest[0].path, "assets/a11.bin");
    for (const excluded of ["renders/", "node_modules/", ".env", ".psd", ".vidignore"]) {
      assert.ok(!report.largest.some((f) => f.path.includes(excluded)), excluded);
    }
    const again = await offline(["render", dir, "--dry-run"]);
    assert.equal(again.code, 0, describeRun(again));
    assert.match(again.stdout, /14 files, site site-[0-9a-f]{16}/);
    assert.match(again.stdout, /largest files:\n\s+\d+\.\d KB {2}assets\/a11\.bin/);
    const key255 = await offline(
      ["render", dir, "--dry-run", "--json", "--idempotency-key", "k".repeat(255)],
    );
    assert.equal(key255.code, 0, describeRun(key255));
  });

  it("--dry-run refuses a project over 200 MB, naming the largest files", async () => {
    const dir = await project(WIDE);
    // 201 MB of zeros, sparse on disk: an .mp4 goes into the zip stored, not deflated (media
    // do not compress), so the zip is over the limit whatever the bytes are.
    await Deno.writeFile(join(dir, "huge.mp4"), new Uint8Array());
    await Deno.truncate(join(dir, "huge.mp4"), 201 * 1024 * 1024);
    try {
      const result = await offline(["render", dir, "--dry-run"]);
      assert.notEqual(result.code, 0, describeRun(result));
      // 200 MB is 200 x 1024 x 1024 bytes, as the server counts it.
      assert.match(result.stderr, /over the limit of [\d.]+ MB \(209715200 bytes\)/);
      assert.match(result.stderr, /ten largest included files:\n\s+[\d.]+ MB {2}huge\.mp4\n/);
      assert.match(result.stderr, /index\.html/);
    } finally {
      await Deno.remove(join(dir, "huge.mp4"));
    }
  });

  it("rejects bad flags with exit 2 before any network call", async () => {
    const dir = await project(WIDE);
    const cases: [string[], RegExp][] = [
      [["--fps", "0"], /--fps/],
      [["--fps", "241"], /--fps/],
      [["--fps", "0.5"], /--fps/],
      [["--fps", "29,97"], /--fps/],
      [["--quality", "x"], /--quality/],
      [["--format", "gif"], /--format/],
      [["-o", "out.gif"], /--output: the hosted service renders mp4, webm, mov/],
      [["-o", "out.webm", "--format", "mp4"], /--format mp4 conflicts with the output extension/],
      [
        ["--resolution", "4k", "--format", "webm"],
        /--resolution: 4k cannot be webm: the 4k path has no alpha channel\. Use mp4, or render alpha at native resolution/,
      ],
      [["--resolution", "4k", "--format", "mov"], /no alpha channel/],
      [["--resolution", "8k"], /--resolution/],
      [["--aspect-ratio", "4:3"], /--aspect-ratio/],
      [["--asset-id", "a", "--url", "https://x"], /--asset-id/],
      [["--callback-url", "http://example.com/x"], /--callback-url.*https/],
      [["--idempotency-key", "bad key"], /--idempotency-key/],
      [["--idempotency-key", "k".repeat(256)], /--idempotency-key/],
      [["--poll-interval", "0"], /--poll-interval/],
      [["--max-wait", "-1"], /--max-wait/],
    ];
    const results = await Promise.all(cases.map(([flags]) => offline(["render", dir, ...flags])));
    results.forEach((result, i) => {
      const [flags, pattern] = cases[i];
      const label = `${flags.join(" ")}: ${describeRun(result)}`;
      assert.equal(result.code, 2, label);
      assert.match(result.stderr, pattern, label);
      assert.doesNotMatch(result.stderr, /not signed in|retrying|connect/i, label);
    });
  });

  it("lists with --limit/--token, gets a fresh video_url, deletes only when confirmed", async () => {
    const first = await cloud(["list", "--limit", "1", "--json"]);
    assert.equal(first.code, 0, describeRun(first));
    const page1 = parseJson<{ data: Record<string, string>[]; next_token: string | null }>(first);
    assert.equal(page1.data.length, 1);
    assert.ok(page1.next_token, "more renders exist than one page");
    const second = await cloud(["list", "--limit", "1", "--token", page1.next_token, "--json"]);
    assert.equal(second.code, 0, describeRun(second));
    const page2 = parseJson<{ data: Record<string, string>[] }>(second);
    assert.equal(page2.data.length, 1);
    assert.notEqual(page2.data[0].render_id, page1.data[0].render_id);
    const text = await cloud(["list", "--limit", "1"]);
    assert.match(text.stdout, /^rnd_\w+ +\w+ +\S+ +mp4$/m);
    assert.match(text.stdout, /more: vid cloud list --token \S+/);

    const all = parseJson<{ data: Record<string, string>[] }>(
      await cloud(["list", "--limit", "100", "--json"]),
    );
    const victim = all.data.find((r) => r.status === "completed")?.render_id;
    assert.ok(victim, "a completed render to inspect");
    const got = await cloud(["get", victim, "--json"]);
    assert.equal(got.code, 0, describeRun(got));
    const detail = parseJson<Record<string, string>>(got);
    assert.equal(detail.render_id, victim);
    assert.equal(detail.status, "completed");
    const video = await fetch(detail.video_url);
    assert.equal(video.status, 200);
    assert.equal(video.headers.get("content-type"), "video/mp4");
    await video.body?.cancel();
    const described = await cloud(["get", victim]);
    assert.equal(described.code, 0, describeRun(described));
    assert.match(described.stdout, new RegExp(`^${victim}  completed`));
    assert.match(described.stdout, /video_url +http/);

    const refused = await cloud(["delete", victim]);
    assert.equal(refused.code, 2, describeRun(refused));
    assert.match(refused.stderr, /refusing to delete .*no terminal.*--no-confirm/);
    assert.equal((await renderRecord(victim)).status, 200, "still there");

    const deleted = await cloud(["delete", victim, "--no-confirm"]);
    assert.equal(deleted.code, 0, describeRun(deleted));
    assert.equal(deleted.stdout.trim(), `deleted ${victim}`);
    const visible = parseJson<{ data: Record<string, string>[] }>(
      await cloud(["list", "--limit", "100", "--json"]),
    );
    assert.ok(!visible.data.some((r) => r.render_id === victim));
    const withDeleted = parseJson<{ data: Record<string, string>[] }>(
      await cloud(["list", "--limit", "100", "--all", "--json"]),
    );
    assert.equal(withDeleted.data.find((r) => r.render_id === victim)?.status, "deleted");
    const gone = await cloud(["get", victim]);
    assert.equal(gone.code, 1, describeRun(gone));
    assert.match(gone.stderr, new RegExp(`no render ${victim}|not found`, "i"));
  });

  it("retries a 503 upload, warning of double billing only without --idempotency-key; without --strict-variables a mismatch is a warning and the render proceeds", async () => {
    let failNext = true;
    const proxy = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      async (request) => {
        const url = new URL(request.url);
        if (failNext && request.method === "POST" && url.pathname === "/v3/assets") {
          failNext = false;
          await request.body?.cancel();
          return Response.json(
            { error: { code: "vid_unavailable", message: "try again" } },
            { status: 503 },
          );
        }
        const headers = new Headers(request.headers);
        headers.delete("host");
        const upstream = await fetch(`${server.url}${url.pathname}${url.search}`, {
          method: request.method,
          headers,
          body: request.body ? await request.arrayBuffer() : undefined,
          redirect: "manual",
        });
        const answer = new Headers(upstream.headers);
        for (const name of ["content-encoding", "content-length", "transfer-encoding"]) {
          answer.delete(name);
        }
        return new Response(await upstream.arrayBuffer(), {
          status: upstream.status,
          headers: answer,
        });
      },
    );
    try {
      const env = { CLOUD_API_URL: `http://127.0.0.1:${proxy.addr.port}` };
      const dir = await project(WIDE);
      const cwd = await tempDir();
      // Its variables do not match the declarations: a warning, not a refusal.
      const plain = await cloud(
        ["render", dir, "--variables", '{"n":"five"}', "--poll-interval", "0.2", "--fps", "1"],
        { cwd, env },
      );
      assert.equal(plain.code, 0, describeRun(plain));
      assert.match(plain.stderr, /warning: "n" \(number\) expects a finite number, got "five"/);
      assert.equal(failNext, false, "the proxy answered 503 once");
      assert.match(plain.stderr, /create the asset failed \(HTTP 503\); retrying \(attempt 2\)/);
      assert.match(plain.stderr, /duplicate asset and bill twice/);
      assert.match(plain.stderr, /--idempotency-key/);
      assert.match(plain.stdout, /^rendered .+\.mp4 \(rnd_\w+\)$/m);

      failNext = true;
      const keyed = await cloud(
        [
          "render",
          dir,
          "--poll-interval",
          "0.2",
          "--fps",
          "1",
          "--idempotency-key",
          `retry-${crypto.randomUUID()}`,
        ],
        { cwd, env },
      );
      assert.equal(keyed.code, 0, describeRun(keyed));
      assert.equal(failNext, false);
      assert.match(keyed.stderr, /create the asset failed \(HTTP 503\); retrying/);
      assert.doesNotMatch(keyed.stderr, /bill twice/);
    } finally {
      await proxy.shutdown();
    }
  });

  it("Ctrl-C before the submit submits nothing; after it, names the render; exit 130", async () => {
    // A proxy that holds the asset creation until the CLI has been interrupted.
    const arrived = Promise.withResolvers<void>();
    const release = Promise.withResolvers<void>();
    const proxy = Deno.serve(
      { port: 0, hostname: "127.0.0.1", onListen: () => {} },
      async (request) => {
        const url = new URL(request.url);
        const body = request.body ? await request.arrayBuffer() : undefined;
        if (request.method === "POST" && url.pathname === "/v3/assets") {
          arrived.resolve();
          await release.promise;
        }
        const headers = new Headers(request.headers);
        headers.delete("host");
        const upstream = await fetch(`${server.url}${url.pathname}${url.search}`, {
          method: request.method,
          headers,
          body,
        });
        return new Response(await upstream.arrayBuffer(), {
          status: upstream.status,
          headers: { "content-type": upstream.headers.get("content-type") ?? "text/plain" },
        });
      },
    );
    const spawn = (args: string[], env: Record<string, string> = {}) => {
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", `${ROOT}cli.ts`, "cloud", ...args],
        env: {
          NO_COLOR: "1",
          HOME: home,
          DENO_DIR: cache,
          CLOUD_API_URL: server.url,
          CLOUD_API_KEY: key,
          VID_API_KEY: "",
          VID_CREDENTIALS_FILE: "",
          ...env,
        },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const state = { stderr: "" };
      const done = (async () => {
        const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
        while (true) {
          const { value, done } = await reader.read();
          if (done) break;
          state.stderr += value;
        }
        const [status, stdout] = await Promise.all([
          child.status,
          new Response(child.stdout).text(),
        ]);
        return { code: status.code, stdout, stderr: state.stderr };
      })();
      return { child, state, done };
    };
    try {
      const dir = await project(WIDE);
      const cwd = await tempDir();
      const countRenders = async () =>
        parseJson<{ data: unknown[] }>(await cloud(["list", "--limit", "100", "--all", "--json"]))
          .data.length;
      const before = await countRenders();
      const early = spawn(["render", dir, "--fps", "2", "-o", `${cwd}/early.mp4`], {
        CLOUD_API_URL: `http://127.0.0.1:${proxy.addr.port}`,
      });
      await arrived.promise;
      early.child.kill("SIGINT");
      // Deliberate: the signal lands while the upload is held (the CLI shows nothing to poll).
      await new Promise((r) => setTimeout(r, 200));
      release.resolve();
      const stopped = await early.done;
      assert.equal(stopped.code, 130, describeRun(stopped));
      assert.match(stopped.stderr, /cancelled; no render was submitted/);
      assert.equal(await countRenders(), before, "nothing was submitted or billed");

      const late = spawn(["render", dir, "--fps", "2", "--poll-interval", "0.1"]);
      const deadline = Date.now() + 30000;
      while (!/submitted rnd_\w+/.test(late.state.stderr)) {
        if (Date.now() > deadline) throw new Error(`never submitted: ${late.state.stderr}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const renderId = late.state.stderr.match(/submitted (rnd_\w+)/)![1];
      late.child.kill("SIGINT");
      const cancelled = await late.done;
      assert.equal(cancelled.code, 130, describeRun(cancelled));
      assert.match(
        cancelled.stderr,
        new RegExp(`cancelled; render ${renderId} .*vid cloud get ${renderId}`),
      );
      assert.equal(cancelled.stdout, "");
    } finally {
      release.resolve();
      await proxy.shutdown();
    }
  });

  it("says how to sign in when there is no credential", async () => {
    const emptyHome = await tempDir();
    const env = { HOME: emptyHome, CLOUD_API_KEY: "", VID_API_KEY: "", VID_CREDENTIALS_FILE: "" };
    const listed = await cloud(["list"], { env });
    assert.equal(listed.code, 1, describeRun(listed));
    assert.match(listed.stderr, /not signed in/);
    assert.match(listed.stderr, /vid auth login/);
    assert.match(listed.stderr, /CLOUD_API_KEY/);
    assert.match(listed.stderr, new RegExp(`${emptyHome}/\\.cloud/credentials`));
    const dir = await project(WIDE);
    const rendered = await cloud(["render", dir], { env });
    assert.equal(rendered.code, 1, describeRun(rendered));
    assert.match(rendered.stderr, /vid auth login/);
  });

  it("API errors carry their code and status; an unreachable server names the address to fix", async () => {
    const missing = await cloud(["get", "rnd_doesnotexist"]);
    assert.equal(missing.code, 1, describeRun(missing));
    assert.match(missing.stderr, /^error: .*\(vid_not_found, HTTP 404\)$/m);
    const json = await cloud(["get", "rnd_doesnotexist", "--json"]);
    const body = parseJson<{ error: { code: string; status: number } }>(json);
    assert.deepEqual([body.error.code, body.error.status], ["vid_not_found", 404]);
    const away = await cloud(["list"], { env: { CLOUD_API_URL: "http://127.0.0.1:9" } });
    assert.equal(away.code, 1, describeRun(away));
    assert.match(away.stderr, /check that the server at http:\/\/127\.0\.0\.1:9 runs/);
  });

  it("--max-wait gives up on a render that is still going, saying how to check later", async () => {
    const dir = await project(SLOW);
    const result = await cloud([
      "render",
      dir,
      "--fps",
      "2",
      "--max-wait",
      "0.0005",
      "--poll-interval",
      "0.1",
    ]);
    assert.equal(result.code, 1, describeRun(result));
    const match = result.stderr.match(
      /render (rnd_\w+) is still (queued|rendering) after 0\.0005 min; check it later with: vid cloud get (rnd_\w+)/,
    );
    assert.ok(match, result.stderr);
    assert.equal(match[1], match[3]);
  });
});
