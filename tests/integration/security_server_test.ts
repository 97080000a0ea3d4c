/**
 * `vid server` under hostile tenants: the real server process on loopback, attacked the
 * way a tenant could. Bounded bodies (413 before parsing), deep folder zips (422),
 * concurrent idempotent requests and upload PUTs, deleting queued and in-flight renders
 * (refund, `deleted`, files purged), a 1-frame render's thumbnail and errors without server
 * paths, key revocation, `vid.db` modes, key-check throttling, and `kill -9` of a server
 * mid-render (its Chromium process group dies with it; the restart removes what the killed
 * run left). Every attack is bounded in count and time, and none is timed: this file runs
 * in parallel with others. The attacks whose answer or end is timed (zip bombs against a
 * concurrent GET, hung pages against the server's deadlines) are in
 * security_server_deadlines_test.ts; the checks that need no server process are in
 * tests/unit/server_hardening_test.ts.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { near, pixelSeries, runVid } from "../helpers.ts";
import { createAccount, type ServerProcess, startServerProcess } from "../server_process.ts";
import { groupAlive, page, projectZip, rawZip, storedEntry, until } from "../security_fixtures.ts";

type Json = Record<string, unknown>;

const encoder = new TextEncoder();
const MiB = 1024 * 1024;

/** A Chromium process: its command line, real uid and seccomp mode (`/proc/<pid>/status`). */
interface BrowserProcess {
  pid: number;
  args: string;
  uid: number;
  seccomp: number;
}

/** The Chromium processes descending from `owner` (Linux `/proc`). */
function browserProcesses(owner: number): BrowserProcess[] {
  const parent = new Map<number, number>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      parent.set(Number(entry.name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited meanwhile
    }
  }
  const descends = (pid: number): boolean => {
    for (let at = parent.get(pid); at !== undefined && at > 1; at = parent.get(at)) {
      if (at === owner) return true;
    }
    return false;
  };
  const found: BrowserProcess[] = [];
  for (const pid of parent.keys()) {
    if (!descends(pid)) continue;
    try {
      const args = Deno.readTextFileSync(`/proc/${pid}/cmdline`).split("\0").join(" ");
      if (!/chrom/.test(args)) continue;
      const status = Deno.readTextFileSync(`/proc/${pid}/status`);
      found.push({
        pid,
        args,
        uid: Number(status.match(/^Uid:\s+(\d+)/m)![1]),
        seccomp: Number(status.match(/^Seccomp:\s+(\d+)/m)?.[1] ?? -1),
      });
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

describe("vid server against hostile tenants", () => {
  let dataDir: string;
  /** `--storage file://…` outside the data folder, made by the server (modes test). */
  let storageDir: string;
  let server: ServerProcess;
  let key: string;

  const api = async (
    path: string,
    init: RequestInit & { key?: string | null } = {},
  ): Promise<{ status: number; body: Json; headers: Headers }> => {
    const headers = new Headers(init.headers);
    const credential = init.key === undefined ? key : init.key;
    if (credential) headers.set("authorization", `Bearer ${credential}`);
    if (typeof init.body === "string") headers.set("content-type", "application/json");
    const response = await fetch(`${server.url}${path}`, { ...init, headers });
    const text = await response.text();
    return {
      status: response.status,
      body: text ? JSON.parse(text) : {},
      headers: response.headers,
    };
  };

  const createAsset = async (size: number): Promise<Json> => {
    const created = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: size }),
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body;
  };

  const upload = async (zip: Uint8Array<ArrayBuffer>): Promise<{ status: number; body: Json }> => {
    const created = await createAsset(zip.length);
    const put = await fetch(String(created.upload_url), { method: "PUT", body: zip });
    return { status: put.status, body: await put.json() };
  };

  const credits = async (): Promise<number> => Number((await api("/v3/me")).body.credits);

  const renderRow = (id: string): Json => {
    const db = new DatabaseSync(`${dataDir}/vid.db`, { readOnly: true });
    try {
      return db.prepare("select status, deleted_at from renders where id = ?").get(id) as Json;
    } finally {
      db.close();
    }
  };

  before(async () => {
    dataDir = await Deno.makeTempDir({ prefix: "vid-security-test-" });
    key = await createAccount(dataDir, "ana@example.com", { credits: 1000 });
    await createAccount(dataDir, "broke@example.com", { credits: 0 });
    storageDir = `${await Deno.makeTempDir({ prefix: "vid-security-storage-" })}/objects`;
    server = await startServerProcess(dataDir, [
      "--allow-private-urls",
      "--storage",
      `file://${storageDir}`,
    ]);
  });

  after(async () => {
    await server?.stop();
    if (dataDir) await Deno.remove(dataDir, { recursive: true });
    if (storageDir) await Deno.remove(`${storageDir}/..`, { recursive: true });
  });

  it("refuses a JSON body over 1 MiB with 413 before parsing it, declared or streamed", async () => {
    const brokeKey = (await runVid([
      "server",
      "keys",
      "create",
      "broke@example.com",
      "--data-dir",
      dataDir,
    ])).stdout.trim();
    const big = JSON.stringify({ size_bytes: 10, filename: "x".repeat(2 * MiB) });
    const declared = await api("/v3/assets", { method: "POST", body: big, key: brokeKey });
    assert.equal(declared.status, 413, JSON.stringify(declared.body).slice(0, 300));
    assert.equal((declared.body.error as Json).code, "vid_payload_too_large");
    assert.equal((declared.body.error as Json).field, "body");
    assert.match(String((declared.body.error as Json).message), /1 MiB \(1048576 bytes\)/);

    // 100 MB sent chunked (no Content-Length): the server stops reading at 1 MiB.
    let sent = 0;
    const chunk = encoder.encode(" ".repeat(64 * 1024));
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 100 * MiB) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
    let status = 0;
    try {
      const response = await fetch(`${server.url}/v3/vid/renders`, {
        method: "POST",
        body: stream,
        headers: { authorization: `Bearer ${brokeKey}`, "content-type": "application/json" },
      });
      status = response.status;
      await response.body?.cancel();
    } catch {
      // the server may close the connection while the client still sends
    }
    if (status !== 0) assert.equal(status, 413);
    assert.ok(sent < 100 * MiB, `the client sent all ${sent} bytes: the server read them`);

    const longName = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: 10, filename: "n".repeat(256) }),
    });
    assert.equal(longName.status, 400);
    assert.equal((longName.body.error as Json).field, "filename");
  });

  it("refuses a zip nested 2,500 folders deep with 422, not 500", async () => {
    const deep = "d/".repeat(2500) + "f.txt";
    const zip = rawZip([storedEntry("index.html", page()), storedEntry(deep, "x")]);
    const result = await upload(zip);
    assert.equal(result.status, 422, JSON.stringify(result.body).slice(0, 300));
    assert.equal((result.body.error as Json).code, "vid_project_invalid");
    assert.match(String((result.body.error as Json).message), /2500 folders deep, over the limit/);
  });

  it("makes one render and one asset for concurrent identical url requests with one Idempotency-Key", async () => {
    let fetches = 0;
    const site = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, async () => {
      fetches++;
      await new Promise((resolve) => setTimeout(resolve, 300));
      return new Response(page(1, "fromurl"), { headers: { "content-type": "text/html" } });
    });
    try {
      const db = new DatabaseSync(`${dataDir}/vid.db`, { readOnly: true });
      const assetsBefore = Number(
        (db.prepare("select count(*) as n from assets").get() as Json).n,
      );
      const url = `http://127.0.0.1:${site.addr.port}/page.html`;
      const send = (body: Json) =>
        api("/v3/vid/renders", {
          method: "POST",
          body: JSON.stringify(body),
          headers: { "idempotency-key": "race-1" },
        });
      const results = await Promise.all(
        Array.from({ length: 5 }, () => send({ url, fps: 1, quality: "draft" })),
      );
      const statuses = results.map((r) => r.status).sort();
      assert.deepEqual(
        statuses,
        [200, 200, 200, 200, 201],
        JSON.stringify(results.map((r) => r.body)),
      );
      const ids = new Set(results.map((r) => r.body.render_id));
      assert.equal(ids.size, 1);
      // The same body with its keys in another order is the same request.
      const reordered = await send({ quality: "draft", fps: 1, url });
      assert.equal(reordered.status, 200, JSON.stringify(reordered.body));
      assert.equal(reordered.body.render_id, results[0].body.render_id);
      const other = await send({ url, fps: 2 });
      assert.equal(other.status, 409);
      assert.equal(fetches, 1);
      const assetsAfter = Number(
        (db.prepare("select count(*) as n from assets").get() as Json).n,
      );
      db.close();
      assert.equal(assetsAfter, assetsBefore + 1);
      await api(`/v3/vid/renders/${results[0].body.render_id}`, { method: "DELETE" });
    } finally {
      await site.shutdown();
    }
  });

  it("takes one PUT per upload URL, also when two arrive at once", async () => {
    const first = rawZip([storedEntry("index.html", page(1, "first1"))]);
    const second = rawZip([storedEntry("index.html", page(1, "second"))]);
    assert.equal(first.length, second.length);
    const created = await createAsset(first.length);
    // The first PUT sends slowly, so the second arrives while it is in progress.
    const slow = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(first.subarray(0, 10));
        await new Promise((resolve) => setTimeout(resolve, 400));
        controller.enqueue(first.subarray(10));
        controller.close();
      },
    });
    const a = fetch(String(created.upload_url), { method: "PUT", body: slow });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const b = await fetch(String(created.upload_url), { method: "PUT", body: second });
    const bBody = await b.json();
    assert.equal(b.status, 409, JSON.stringify(bBody));
    const aResponse = await a;
    const aBody = await aResponse.json();
    assert.equal(aResponse.status, 200, JSON.stringify(aBody));
    const again = await fetch(String(created.upload_url), { method: "PUT", body: second });
    assert.equal(again.status, 409);
    await again.body?.cancel();
    const stored = await Deno.readFile(`${storageDir}/assets/${created.asset_id}/project.zip`);
    assert.deepEqual(stored, first);
  });

  it("keeps serving uploads while slow senders hold upload URLs open", async () => {
    const slowSenders = await Promise.all(Array.from({ length: 6 }, async () => {
      const zip = projectZip(page(1, "slow"));
      const created = await createAsset(zip.length);
      let stop: () => void = () => {};
      const stopped = new Promise<void>((resolve) => stop = resolve);
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(zip.subarray(0, 10));
          await stopped;
          controller.close();
        },
      });
      const answer = fetch(String(created.upload_url), { method: "PUT", body })
        .then(async (r) => (await r.body?.cancel(), r.status)).catch(() => 0);
      return { stop, answer };
    }));
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      const started = performance.now();
      const quick = await upload(projectZip(page(1, "quick")));
      assert.equal(quick.status, 200, JSON.stringify(quick.body));
      assert.ok(performance.now() - started < 5000);
    } finally {
      for (const sender of slowSenders) sender.stop();
      // Cut short, each is the wrong size: a 400, nothing stored.
      for (const sender of slowSenders) assert.equal(await sender.answer, 400);
    }
  });

  it("refunds a deleted queued render and marks it deleted; purges a render deleted mid-flight", async () => {
    const long = await upload(projectZip(page(3, "long")));
    assert.equal(long.status, 200);
    const short = await upload(projectZip(page(1, "short")));
    const before = await credits();
    const running = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: long.body.asset_id, fps: 10 }),
    });
    assert.equal(running.status, 201);
    const queued = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: short.body.asset_id, fps: 1 }),
    });
    assert.equal(queued.status, 201);
    assert.equal(await credits(), before - 3 - 1);
    await until(
      "the long render to start",
      async () =>
        (await api(`/v3/vid/renders/${running.body.render_id}`)).body.status === "rendering",
    );
    assert.equal((await api(`/v3/vid/renders/${queued.body.render_id}`)).body.status, "queued");

    const deleted = await api(`/v3/vid/renders/${queued.body.render_id}`, { method: "DELETE" });
    assert.deepEqual(deleted.body, {
      render_id: queued.body.render_id,
      deleted: true,
      refunded_credits: 1,
    });
    assert.equal(await credits(), before - 3);
    assert.equal(renderRow(String(queued.body.render_id)).status, "deleted");
    const listed = await api("/v3/vid/renders?all=1&limit=100");
    const shown = (listed.body.data as Json[]).find((r) => r.render_id === queued.body.render_id);
    assert.equal(shown?.status, "deleted");

    const stopped = await api(`/v3/vid/renders/${running.body.render_id}`, { method: "DELETE" });
    assert.equal(stopped.body.refunded_credits, 3);
    assert.equal(await credits(), before);
    // The render stops; nothing it wrote stays, and the row stays deleted. Its work folder
    // (work/run-<pid>/render-<id>-…) goes when the render has stopped; the capture browser
    // itself may stay warm for the next render.
    const renderFolders = async (): Promise<string[]> => {
      const found: string[] = [];
      for await (const run of Deno.readDir(`${dataDir}/work`)) {
        if (!run.isDirectory || !run.name.startsWith("run-")) continue;
        for await (const entry of Deno.readDir(`${dataDir}/work/${run.name}`)) {
          if (entry.name.startsWith(`render-${running.body.render_id}`)) found.push(entry.name);
        }
      }
      return found;
    };
    await until("the deleted render to stop", async () => (await renderFolders()).length === 0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(renderRow(String(running.body.render_id)).status, "deleted");
    const files = await Array.fromAsync(
      Deno.readDir(`${storageDir}/renders/${running.body.render_id}`),
    ).catch(() => []);
    assert.deepEqual(files, []);
    assert.equal(await credits(), before);
  });

  it("thumbnails a 1-frame render (fps 1, 1 s) and never shows server paths in errors", async () => {
    const one = await upload(projectZip(page(1, "oneframe")));
    const render = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: one.body.asset_id, fps: 1 }),
    });
    assert.equal(render.status, 201);
    let done: Json = {};
    await until("the 1-frame render", async () => {
      done = (await api(`/v3/vid/renders/${render.body.render_id}`)).body;
      return done.status === "completed" || done.status === "failed";
    }, 120000);
    assert.equal(done.status, "completed", String(done.error));
    const thumbnail = new Uint8Array(await (await fetch(String(done.thumbnail_url))).arrayBuffer());
    assert.deepEqual([...thumbnail.subarray(0, 3)], [0xff, 0xd8, 0xff]);

    // A project that names a missing file is refused at upload (vid check's static part),
    // naming the project file only.
    const refused = await upload(projectZip(
      page(1, "missing").replace(
        "</div></body>",
        `<video src="clips/missing.mp4" data-start="0"></video></div></body>`,
      ),
    ));
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    const refusal = JSON.stringify(refused.body);
    assert.match(refusal, /"code":"vid_project_invalid".*clips\/missing\.mp4/);
    assert.ok(!refusal.includes(dataDir), refusal);
    assert.ok(!/\/(tmp|home|root|usr|work)\//.test(refusal), refusal);

    // A render that fails on a file only its script asks for (no static look finds it): the
    // message names the project file only.
    const missing = await upload(projectZip(
      page(1, "missing").replace(
        "</div></body>",
        `</div><script>document.body.append(Object.assign(new Image(), ` +
          `{ src: "img/" + "gone.png" }));</script></body>`,
      ),
    ));
    assert.equal(missing.status, 200, JSON.stringify(missing.body));
    const failing = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: missing.body.asset_id, fps: 1 }),
    });
    let failed: Json = {};
    await until("the failing render", async () => {
      failed = (await api(`/v3/vid/renders/${failing.body.render_id}`)).body;
      return failed.status === "completed" || failed.status === "failed";
    }, 120000);
    assert.equal(failed.status, "failed");
    const error = String(failed.error);
    assert.match(error, /index\.html uses a file missing from the project/);
    assert.ok(!error.includes(dataDir), error);
    assert.ok(!/\/(tmp|home|root|usr|work)\//.test(error), error);
  });

  it("lists keys without secrets and revokes one: its next request is a 401", async () => {
    const created = await runVid([
      "server",
      "keys",
      "create",
      "ana@example.com",
      "--name",
      "ci",
      "--json",
      "--data-dir",
      dataDir,
    ]);
    const { id, key: secret } = JSON.parse(created.stdout);
    assert.equal((await api("/v3/me", { key: secret })).status, 200);
    for (const args of [[], ["--json"], ["ana@example.com", "--json"]]) {
      const listed = await runVid(["server", "keys", "list", ...args, "--data-dir", dataDir]);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, new RegExp(id));
      assert.ok(!listed.stdout.includes("vid_sk_"), "a key was printed");
      assert.ok(!/[0-9a-f]{64}/.test(listed.stdout), "a key hash was printed");
    }
    const json = JSON.parse(
      (await runVid(["server", "keys", "list", "--json", "--data-dir", dataDir])).stdout,
    );
    assert.equal(json.ok, true);
    const entry = json.keys.find((k: Json) => k.id === id);
    assert.deepEqual(Object.keys(entry).sort(), [
      "created_at",
      "email",
      "id",
      "name",
      "revoked_at",
    ]);
    assert.equal(entry.revoked_at, null);

    const revoked = await runVid(["server", "keys", "revoke", id, "--data-dir", dataDir]);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`revoked ${id} \\(ci\\) of ana@example.com`));
    const refused = await api("/v3/me", { key: secret });
    assert.equal(refused.status, 401);
    assert.match(String((refused.body.error as Json).message), /revoked/);
    const unknown = await runVid([
      "server",
      "keys",
      "revoke",
      "key_000000000000",
      "--data-dir",
      dataDir,
    ]);
    assert.notEqual(unknown.code, 0);
    assert.match(unknown.stderr, /no API key key_000000000000/);
  });

  it("keeps vid.db and its -wal and -shm mode 0600", async () => {
    for (const suffix of ["", "-wal", "-shm"]) {
      const info = await Deno.stat(`${dataDir}/vid.db${suffix}`);
      assert.equal(info.mode! & 0o777, 0o600, `vid.db${suffix}`);
    }
  });

  it("runs its render browsers in Chromium's sandbox, as an unprivileged account when root", async () => {
    // Runs after the renders above: the server keeps its capture browser warm.
    const processes = browserProcesses(server.child.pid);
    const main = processes.find((p) => !p.args.includes("--type="));
    assert.ok(main, "a warm browser runs");
    assert.match(main.args, /--enable-begin-frame-control/, "BeginFrame capture, as before");
    for (const p of processes) {
      assert.ok(!p.args.includes("--no-sandbox"), p.args);
      if (Deno.uid() === 0) assert.notEqual(p.uid, 0, `${p.pid} runs as root: ${p.args}`);
    }
    // The sandbox is in force, not only asked for: renderers run under seccomp-bpf.
    const renderers = processes.filter((p) => p.args.includes("--type=renderer"));
    for (const p of renderers) assert.equal(p.seccomp, 2, p.args);
    // And its pictures are unchanged: every stored video is the compositions' blue.
    let videos = 0;
    for await (const render of Deno.readDir(`${storageDir}/renders`)) {
      const video = `${storageDir}/renders/${render.name}/video.mp4`;
      if (!(await Deno.stat(video).catch(() => undefined))) continue;
      videos++;
      for (const colour of await pixelSeries(video, 960, 540)) {
        assert.ok(near(colour, [0, 0, 255, 255]), `${render.name}: ${colour}`);
      }
    }
    assert.ok(videos > 0, "the renders above stored videos");
  });

  it("keeps stored objects 0600 in 0700 folders, with --storage outside the data folder too", async () => {
    // Runs after the renders above: projects, videos and thumbnails are all stored by now.
    const modes: string[] = [];
    const walk = async (dir: string): Promise<void> => {
      modes.push(
        `${dir.slice(storageDir.length) || "/"} ${
          ((await Deno.stat(dir)).mode! & 0o777).toString(8)
        }`,
      );
      for await (const entry of Deno.readDir(dir)) {
        const path = `${dir}/${entry.name}`;
        if (entry.isDirectory) await walk(path);
        else {modes.push(
            `${path.slice(storageDir.length)} ${
              ((await Deno.stat(path)).mode! & 0o777).toString(8)
            }`,
          );}
      }
    };
    await walk(storageDir);
    assert.ok(modes.some((line) => line.endsWith("video.mp4 600")), modes.join("\n"));
    assert.ok(modes.some((line) => line.endsWith("project.zip 600")), modes.join("\n"));
    const loose = modes.filter((line) => !/ (600|700)$/.test(line));
    assert.deepEqual(loose, []);
    // Run as root, the render user's ffmpeg passes through the data folder, the work folder
    // and this run's folder to the render folders handed to it: 0710, that user's group.
    const passable = Deno.uid() === 0 ? 0o710 : 0o700;
    for (const dir of [dataDir, `${dataDir}/work`]) {
      assert.equal((await Deno.stat(dir)).mode! & 0o777, passable, dir);
    }
    assert.equal((await Deno.stat(`${dataDir}/work/browsers`)).mode! & 0o777, 0o700);
    for await (const run of Deno.readDir(`${dataDir}/work`)) {
      if (run.name === "browsers") continue;
      const mode = (await Deno.stat(`${dataDir}/work/${run.name}`)).mode! & 0o777;
      assert.equal(mode, passable, run.name);
    }
  });

  // Last: it locks this address out of failing credential checks for a minute.
  it("serves a valid key after 31 bogus keys from its address; the bogus ones get 429 with Retry-After", async () => {
    let failures = 0;
    for (; failures < 40; failures++) {
      // Without --trusted-proxy the header is ignored: every guess counts against loopback.
      const result = await api("/v3/me", {
        key: `vid_sk_guess${failures}`,
        headers: { "x-forwarded-for": `203.0.113.${failures + 1}` },
      });
      if (result.status === 429) break;
      assert.equal(result.status, 401);
    }
    // 30 in all: the revoked key's 401 above counted too.
    assert.ok(failures >= 1 && failures <= 30, `locked out after ${failures} more failures`);
    const bogus = await api("/v3/me", { key: "vid_sk_one_more" });
    assert.equal(bogus.status, 429);
    assert.equal((bogus.body.error as Json).code, "vid_rate_limited");
    const retryAfter = Number(bogus.headers.get("retry-after"));
    assert.ok(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
    // Someone else's failures never refuse a valid key (a proxy or NAT shares one address).
    const valid = await api("/v3/me");
    assert.equal(valid.status, 200, JSON.stringify(valid.body));
    assert.equal(valid.body.email, "ana@example.com");
  });
});

describe("vid server --trusted-proxy", () => {
  let dataDir: string;
  let server: ServerProcess;

  before(async () => {
    dataDir = await Deno.makeTempDir({ prefix: "vid-proxy-test-" });
    // An API instance: no render worker, no browser to probe.
    server = await startServerProcess(dataDir, [
      "--role",
      "api",
      "--trusted-proxy",
      "127.0.0.1/32",
    ]);
  });

  after(async () => {
    await server?.stop();
    if (dataDir) await Deno.remove(dataDir, { recursive: true });
  });

  /** GET /v3/me with a bogus key, as the proxy on loopback forwards it from `forwardedFor`. */
  const guess = async (forwardedFor: string): Promise<number> => {
    const response = await fetch(`${server.url}/v3/me`, {
      headers: { authorization: "Bearer vid_sk_bogus", "x-forwarded-for": forwardedFor },
    });
    await response.body?.cancel();
    return response.status;
  };

  it("throttles each X-Forwarded-For client on its own, by the rightmost untrusted hop", async () => {
    for (let i = 0; i < 30; i++) assert.equal(await guess("198.51.100.1"), 401, `guess ${i + 1}`);
    assert.equal(await guess("198.51.100.1"), 429);
    // Another client behind the same proxy is not locked out by the first one's guesses...
    assert.equal(await guess("198.51.100.2"), 401);
    // ...and the first cannot step out of its lock by writing its own hop to the left.
    assert.equal(await guess("198.51.100.2, 198.51.100.1"), 429);
    // A trusted hop is skipped: the client is the one before it.
    assert.equal(await guess("198.51.100.1, 127.0.0.1"), 429);
  });

  it("refuses a value that is not an address or a CIDR range, naming the flag", async () => {
    const bad = await runVid(["server", "--role", "api", "--trusted-proxy", "10.0.0.0/33"]);
    assert.equal(bad.code, 2, bad.stderr);
    assert.match(
      bad.stderr,
      /--trusted-proxy must be an address or a CIDR range.*"10\.0\.0\.0\/33"/,
    );
  });
});

describe("vid server where Chromium's sandbox cannot start (stand-in browser that fails its sandbox)", () => {
  it("refuses to start and says why, unless --allow-no-sandbox is given", async () => {
    // The stand-in fails as Chromium does on a host without user namespaces, unless it is
    // told --no-sandbox; then it is the real chromium-headless-shell.
    const bin = await Deno.makeTempDir({ prefix: "vid-nosandbox-" });
    const dataDir = await Deno.makeTempDir({ prefix: "vid-nosandbox-data-" });
    await Deno.chmod(bin, 0o755); // the render user runs it
    const shell = `${bin}/chromium-headless-shell`;
    await Deno.writeTextFile(
      shell,
      `#!/bin/sh
case " $* " in *" --no-sandbox "*) exec /usr/bin/chromium-headless-shell "$@";; esac
echo "[1:1:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! Update your kernel." >&2
exit 1
`,
    );
    await Deno.chmod(shell, 0o755);
    const env = { VID_HEADLESS_SHELL: shell };
    try {
      const refused = await runVid(["server", "--port", "0", "--data-dir", dataDir], { env });
      assert.equal(refused.code, 1, refused.stderr);
      assert.doesNotMatch(refused.stdout, /listening/);
      assert.match(
        refused.stderr,
        /^error: Chromium's sandbox cannot start on this host \(No usable sandbox! Update your kernel\.\)\. Render pages run tenants' JavaScript/,
      );
      assert.match(refused.stderr, /or start with --allow-no-sandbox to accept the risk\n$/);
      // SIGTERM the moment "listening" is read: the stop handler is in place before that line
      // (this start, with no sandbox probe, is quick enough that it once lost the race half the
      // time: exit 143 without "stopping").
      for (let attempt = 0; attempt < 4; attempt++) {
        const allowed = await startServerProcess(dataDir, ["--allow-no-sandbox"], env);
        const stopped = await allowed.stop();
        assert.equal(stopped.code, 0, `${allowed.output()}\n${allowed.errors()}`);
        assert.match(allowed.output(), /\nstopping: /);
      }
      // And one that serves first, then stops as cleanly.
      const serving = await startServerProcess(dataDir, ["--allow-no-sandbox"], env);
      const health = await fetch(`${serving.url}/healthz`).then(
        async (response) => (await response.body?.cancel(), response.status),
        (error) => `${error}`,
      );
      const stopped = await serving.stop();
      assert.equal(health, 200);
      assert.equal(stopped.code, 0, serving.errors());
    } finally {
      await Deno.remove(bin, { recursive: true });
      await Deno.remove(dataDir, { recursive: true });
    }
  });

  it("refuses a --render-user that does not exist, naming the flag (exit 2)", async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "vid-renderuser-" });
    try {
      const result = await runVid([
        "server",
        "--port",
        "0",
        "--data-dir",
        dataDir,
        "--render-user",
        "no-such-vid-user",
      ]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(
        result.stderr,
        Deno.uid() === 0
          ? /^error: --render-user: no account "no-such-vid-user" on this host; create it/
          : /^error: --render-user: only a server run as root/,
      );
    } finally {
      await Deno.remove(dataDir, { recursive: true });
    }
  });
});

describe("vid server after kill -9 mid-render", () => {
  it("its browser dies with it; the next start removes the records, profiles and work folders it left", async () => {
    const dataDir = await Deno.makeTempDir({ prefix: "vid-reap-test-" });
    const key = await createAccount(dataDir, "ana@example.com");
    let server = await startServerProcess(dataDir);
    const api = async (path: string, init: RequestInit = {}): Promise<Json> => {
      const response = await fetch(`${server.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      });
      return await response.json();
    };
    let browserPids: number[] = [];
    let renderId = "";
    try {
      const zip = projectZip(page(4, "reap"));
      const created = await api("/v3/assets", {
        method: "POST",
        body: JSON.stringify({ size_bytes: zip.length }),
      });
      await (await fetch(String(created.upload_url), { method: "PUT", body: zip })).body?.cancel();
      const render = await api("/v3/vid/renders", {
        method: "POST",
        body: JSON.stringify({ asset_id: created.asset_id, fps: 10 }),
      });
      renderId = String(render.render_id);
      const records = `${dataDir}/work/browsers`;
      await until(
        "the render's browser",
        async () => (await Array.fromAsync(Deno.readDir(records))).length > 0,
      );
      const browsers = await Promise.all(
        (await Array.fromAsync(Deno.readDir(records))).map(async (entry) => ({
          record: `${records}/${entry.name}`,
          ...JSON.parse(await Deno.readTextFile(`${records}/${entry.name}`)) as {
            pid: number;
            owner: number;
            profile: string;
          },
        })),
      );
      for (const browser of browsers) assert.equal(browser.owner, server.child.pid);
      const oldRun = `${dataDir}/work/run-${server.child.pid}`;
      assert.ok(
        (await Array.fromAsync(Deno.readDir(oldRun))).some((e) => e.name.startsWith("render-")),
      );

      await server.stop("SIGKILL");
      // Its own process group does not keep a browser alive: it dies with the server (its
      // parent-death signal), before anything else starts.
      for (const browser of browsers) {
        await until("the browser to die with the server", () => !groupAlive(browser.pid), 10000);
      }

      // The next start removes what the killed run left: records, profiles, its work folder.
      server = await startServerProcess(dataDir);
      await until("the clean-up report", () => /cleaned up/.test(server.output()), 5000);
      const report = server.output().match(/killed (\d+) browser\(s\), removed (\d+) work folder/);
      assert.deepEqual(report?.slice(1), ["0", "1"], server.output());
      for (const browser of browsers) {
        await assert.rejects(Deno.stat(browser.profile));
        await assert.rejects(Deno.stat(browser.record));
      }
      await assert.rejects(Deno.stat(oldRun));

      // The render was re-queued; stop it, then the server, and nothing may be left. A render
      // that ends before its browser is seen fails the wait at once with its state.
      const recorded = async () =>
        (await Array.fromAsync(Deno.readDir(records))).filter((e) =>
          /^browser-\d+\.json$/.test(e.name)
        );
      await until("the re-queued render's browser", async () => {
        if ((await recorded()).length > 0) return true;
        const state = await api(`/v3/vid/renders/${renderId}`);
        if (state.status === "failed" || state.status === "completed") {
          throw new Error(`the re-queued render ended before its browser was seen`);
        }
        return false;
      });
      browserPids = await Promise.all(
        (await recorded()).map(async (e) =>
          JSON.parse(await Deno.readTextFile(`${records}/${e.name}`)).pid as number
        ),
      );
      await api(`/v3/vid/renders/${render.render_id}`, { method: "DELETE" });
    } catch (error) {
      // What the server said (its clean-up report, a render that failed) is the diagnosis.
      const status = await api(`/v3/vid/renders/${renderId}`).catch((e) => ({
        unreachable: `${e}`,
      }));
      await server.stop();
      throw new Error(
        `${error instanceof Error ? error.message : error}\nthe render: ${
          JSON.stringify(status)
        }\nvid server printed:\n${server.output()}${server.errors()}`,
        { cause: error },
      );
    } finally {
      await server.stop();
      for (const pid of browserPids) {
        await until(`browser ${pid} to end`, () => !groupAlive(pid), 5000);
      }
      await Deno.remove(dataDir, { recursive: true });
    }
  });
});
