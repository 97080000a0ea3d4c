/**
 * `vid server` on a full data disk: a real server process whose `--data-dir` is a real 8 MiB
 * tmpfs (mounted by the test; it runs as root) that the test fills with a file. Uploads and
 * writes that find no space answer 507 `vid_insufficient_storage` with `Retry-After` instead
 * of a 500; a render submission whose transaction fails on the full disk charges nothing and
 * logs no rollback error; `/readyz` is 503 with the disk's reason while the free space is
 * under `--min-free-space` and 200 again once the file is gone; the upload then succeeds on
 * the same URL. Skipped, saying so, where a tmpfs cannot be mounted (not root).
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { statfs } from "node:fs/promises";
import { zipSync } from "fflate";
import { compositionHtml } from "../helpers.ts";
import { createAccount, type ServerProcess, startServerProcess } from "../server_process.ts";

/** Mounts an 8 MiB tmpfs on a new folder; `undefined` where this machine does not allow it. */
async function mountTmpfs(): Promise<string | undefined> {
  const dir = await Deno.makeTempDir({ prefix: "vid-full-" });
  const mount = await new Deno.Command("mount", {
    args: ["-t", "tmpfs", "-o", "size=8m,mode=0700", "tmpfs", dir],
    stdout: "null",
    stderr: "null",
  }).output().catch(() => ({ code: -1 }));
  if (mount.code === 0) return dir;
  await Deno.remove(dir);
  return undefined;
}

/** Unmounts and removes a folder of {@linkcode mountTmpfs}. */
async function unmount(dir: string): Promise<void> {
  const result = await new Deno.Command("umount", { args: [dir] }).output();
  assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
  await Deno.remove(dir);
}

/** Bytes free on the file system of `dir`. */
async function freeBytes(dir: string): Promise<number> {
  const stats = await statfs(dir);
  return stats.bavail * stats.bsize;
}

/** Writes a file into `dir` that leaves about `leave` bytes free (0: fills the disk). */
async function fill(dir: string, name: string, leave: number): Promise<void> {
  const file = await Deno.open(`${dir}/${name}`, { write: true, create: true, truncate: true });
  try {
    let left = (await freeBytes(dir)) - leave;
    const block = new Uint8Array(64 * 1024);
    while (left > 0) {
      try {
        left -= await file.write(block.subarray(0, Math.min(block.length, left)));
      } catch (error) {
        if (leave === 0 && (error as { code?: string }).code === "ENOSPC") return;
        throw error;
      }
    }
  } finally {
    file.close();
  }
}

/** A stored (uncompressed) project zip of about `padding` bytes. */
function projectZip(padding: number): Uint8Array<ArrayBuffer> {
  const html = compositionHtml(`<div style="position:absolute;inset:0;background:#0a0"></div>`, {
    duration: 1,
  });
  const pad = new Uint8Array(padding).map((_, i) => (i * 7919) & 255);
  return new Uint8Array(
    zipSync({ "index.html": new TextEncoder().encode(html), "pad.bin": pad }, { level: 0 }),
  );
}

const dataDir = await mountTmpfs();

describe("vid server on a full data disk (a real 8 MiB tmpfs)", () => {
  const skip = dataDir === undefined
    ? "cannot mount a tmpfs here (needs root): the full disk is not tested"
    : false;
  let server: ServerProcess | undefined;
  let key = "";

  before(async () => {
    if (dataDir === undefined) return;
    key = await createAccount(dataDir, "full@example.com", { credits: 1000 });
    // --role api: requests are what is tested; no renders run. 2 MiB: the readiness bar.
    server = await startServerProcess(dataDir, ["--role", "api", "--min-free-space", "2M"]);
  });

  after(async () => {
    await server?.stop("SIGKILL");
    if (dataDir !== undefined) await unmount(dataDir);
  });

  const api = async (path: string, init: RequestInit = {}) => {
    const response = await fetch(`${server!.url}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    });
    return { status: response.status, headers: response.headers, body: await response.json() };
  };

  const readyz = async () => {
    const response = await fetch(`${server!.url}/readyz`);
    return { status: response.status, body: await response.json() };
  };

  it(
    "answers 507 with a code, says not ready below --min-free-space, and recovers",
    { skip },
    async () => {
      const dir = dataDir!;
      const zip = projectZip(400_000);
      // A ready asset, uploaded while there is room.
      const first = await api("/v3/assets", {
        method: "POST",
        body: JSON.stringify({ size_bytes: zip.length }),
      });
      assert.equal((await fetch(first.body.upload_url, { method: "PUT", body: zip })).status, 200);
      assert.equal((await readyz()).status, 200);
      const credits = (await api("/v3/me")).body.credits;

      // Room for the upload's body, not for its unpacked and stored copies.
      const second = await api("/v3/assets", {
        method: "POST",
        body: JSON.stringify({ size_bytes: zip.length }),
      });
      assert.equal(second.status, 201);
      await fill(dir, "filler-1", Math.round(zip.length * 1.5));
      const unready = await readyz();
      assert.equal(unready.status, 503);
      assert.equal(unready.body.checks.database, "ok");
      assert.match(
        unready.body.checks.disk,
        /free on the data folder.s disk, under --min-free-space 2\.0 MiB/,
      );
      const put = await fetch(second.body.upload_url, { method: "PUT", body: zip });
      const putBody = await put.json();
      assert.equal(put.status, 507, JSON.stringify(putBody));
      assert.equal(putBody.error.code, "vid_insufficient_storage");
      assert.match(putBody.error.message, /out of disk space.+try again after Retry-After/);
      assert.equal(put.headers.get("retry-after"), "60");

      // No room at all: a new asset is refused before anything is written, and a render
      // submission's transaction fails on the disk, charging nothing.
      await fill(dir, "filler-2", 0);
      const refused = await api("/v3/assets", {
        method: "POST",
        body: JSON.stringify({ size_bytes: zip.length }),
      });
      assert.equal(refused.status, 507);
      assert.equal(refused.body.error.code, "vid_insufficient_storage");
      assert.match(refused.body.error.message, /less than the .+ of this project zip/);
      const render = await api("/v3/vid/renders", {
        method: "POST",
        body: JSON.stringify({ asset_id: first.body.asset_id, fps: 10, aspect_ratio: "1:1" }),
      });
      assert.equal(render.status, 507, `${JSON.stringify(render.body)}\n${server!.errors()}`);
      assert.equal(render.body.error.code, "vid_insufficient_storage");

      // Space is back: ready again, the same upload URL works, nothing was charged.
      await Deno.remove(`${dir}/filler-2`);
      await Deno.remove(`${dir}/filler-1`);
      const back = await readyz();
      assert.equal(back.status, 200, JSON.stringify(back.body));
      assert.equal(back.body.checks.disk, "ok");
      const retried = await fetch(second.body.upload_url, { method: "PUT", body: zip });
      assert.equal(retried.status, 200, await retried.text());
      assert.equal((await api("/v3/me")).body.credits, credits);

      const running = server!;
      const status = await running.stop("SIGTERM");
      server = undefined;
      assert.equal(status.code, 0);
      // The log: one line per refusal and per readiness change; no rollback error, no 500.
      const log = running.errors();
      assert.match(log, /out of disk space on PUT \/v3\/uploads\/ast_\w+: /);
      assert.match(log, /out of disk space on POST \/v3\/vid\/renders: /);
      assert.match(log, /not ready: disk: /);
      assert.match(log, /ready again/);
      assert.doesNotMatch(log, /cannot rollback|internal error/);
      assert.doesNotMatch(log, /^\s+at .+:\d+:\d+\)?$/m, `a stack trace in the log:\n${log}`);
    },
  );
});
