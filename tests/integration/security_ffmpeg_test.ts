/**
 * ffmpeg and ffprobe in `vid server` read tenants' media, so they run as its browsers do: as
 * the unprivileged `--render-user` when the server runs as root, under resource limits, and
 * tracked, so that a deleted render's conversion ends at once. The real server process, a
 * real proxy conversion (a 2-minute clip the proxy step converts whole), `ps` and
 * `/proc/<pid>/limits` of the running ffmpeg. The user checks need root (the machine this
 * suite runs on is); the limits hold for any user.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { zipSync } from "fflate";
import { compositionHtml, lavfi, near, pixelSeries, probeVideo } from "../helpers.ts";
import { createAccount, type ServerProcess, startServerProcess } from "../server_process.ts";
import { until } from "../security_fixtures.ts";
import { SERVER_PROCESS_LIMITS } from "../../src/render/process_runner.ts";

type Json = Record<string, unknown>;

/** An ffmpeg or ffprobe process under `owner`: pid, user (from `ps`) and command line. */
interface MediaProcess {
  pid: number;
  user: string;
  args: string;
}

/** The ffmpeg/ffprobe children of `owner` whose command line mentions `needle`. */
async function mediaProcesses(owner: number, needle: string): Promise<MediaProcess[]> {
  const out = await new Deno.Command("ps", {
    args: ["-o", "pid=,user:32=,args=", "--ppid", String(owner)],
    stdout: "piped",
  }).output();
  return new TextDecoder().decode(out.stdout).split("\n").flatMap((line) => {
    const match = line.trim().match(/^(\d+)\s+(\S+)\s+(.*)$/);
    if (!match || !/^\S*ff(mpeg|probe)\s/.test(match[3]) || !match[3].includes(needle)) {
      return [];
    }
    return [{ pid: Number(match[1]), user: match[2], args: match[3] }];
  });
}

/** `Max <name>` soft and hard limits of `/proc/<pid>/limits`. */
function limitOf(limits: string, name: string): [string, string] {
  const line = limits.split("\n").find((l) => l.startsWith(`Max ${name}`));
  assert.ok(line, `no "Max ${name}" in:\n${limits}`);
  const [soft, hard] = line.slice(26).trim().split(/\s+/);
  return [soft, hard];
}

describe("vid server's ffmpeg and ffprobe", () => {
  let dataDir: string;
  let cacheDir: string;
  let media: string;
  let server: ServerProcess;
  let key: string;

  const api = async (
    path: string,
    init: RequestInit = {},
  ): Promise<{ status: number; body: Json }> => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${key}`);
    if (typeof init.body === "string") headers.set("content-type", "application/json");
    const response = await fetch(`${server.url}${path}`, { ...init, headers });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : {} };
  };

  /** Uploads a project of `html` and `files`, starts a render of it; returns its id. */
  const submit = async (html: string, files: Record<string, string>): Promise<string> => {
    const entries: Record<string, Uint8Array> = { "index.html": new TextEncoder().encode(html) };
    for (const [name, path] of Object.entries(files)) entries[name] = await Deno.readFile(path);
    const zip = zipSync(entries, { level: 0 });
    const asset = await api("/v3/assets", {
      method: "POST",
      body: JSON.stringify({ size_bytes: zip.length }),
    });
    assert.equal(asset.status, 201, JSON.stringify(asset.body));
    const put = await fetch(String(asset.body.upload_url), { method: "PUT", body: zip });
    assert.equal(put.status, 200, await put.text());
    const render = await api("/v3/vid/renders", {
      method: "POST",
      body: JSON.stringify({ asset_id: asset.body.asset_id, fps: 10 }),
    });
    assert.equal(render.status, 201, JSON.stringify(render.body));
    return String(render.body.render_id);
  };

  before(async () => {
    dataDir = await Deno.makeTempDir({ prefix: "vid-ffmpeg-user-" });
    cacheDir = await Deno.makeTempDir({ prefix: "vid-ffmpeg-cache-" });
    media = await Deno.makeTempDir({ prefix: "vid-ffmpeg-media-" });
    key = await createAccount(dataDir, "ana@example.com", { credits: 100 });
    // Two minutes of one colour: a few hundred KiB, but its proxy (every frame a keyframe)
    // takes the converter far longer than the test waits for its end.
    await lavfi("color=red:s=640x360:r=30:d=120", `${media}/long.mp4`, [
      "-c:v",
      "libx264",
      "-preset",
      "ultrafast",
      "-g",
      "3600",
    ]);
    // A green clip with a tone: probed, converted, mixed and muxed as the render user.
    await lavfi("color=green:s=320x180:r=10:d=1", `${media}/clip.mp4`, [
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=1",
      "-c:v",
      "libx264",
      "-c:a",
      "aac",
      "-shortest",
    ]);
    server = await startServerProcess(dataDir, [], { VID_CACHE_DIR: cacheDir });
  });

  after(async () => {
    await server?.stop();
    for (const dir of [dataDir, cacheDir, media]) {
      if (dir) await Deno.remove(dir, { recursive: true });
    }
  });

  it("run as the render user under limits, and a deleted render's proxy conversion dies at once", async () => {
    const id = await submit(
      compositionHtml(`<video src="long.mp4" style="width:100%;height:100%"></video>`),
      { "long.mp4": `${media}/long.mp4` },
    );
    let converting: MediaProcess | undefined;
    await until("the proxy conversion of long.mp4 to run", async () => {
      converting = (await mediaProcesses(server.child.pid, "long.mp4"))
        .find((p) => p.args.includes(".webm"));
      return converting !== undefined;
    });
    const pid = converting!.pid;
    if (Deno.uid() === 0) assert.equal(converting!.user, "vid-render", converting!.args);
    const limits = await Deno.readTextFile(`/proc/${pid}/limits`);
    const { cpuSeconds, addressSpaceBytes, fileSizeBytes, openFiles } = SERVER_PROCESS_LIMITS;
    assert.deepEqual(limitOf(limits, "cpu time"), [String(cpuSeconds), String(cpuSeconds)]);
    assert.deepEqual(limitOf(limits, "address space"), [
      String(addressSpaceBytes),
      String(addressSpaceBytes),
    ]);
    assert.deepEqual(limitOf(limits, "file size"), [String(fileSizeBytes), String(fileSizeBytes)]);
    assert.deepEqual(limitOf(limits, "open files"), [String(openFiles), String(openFiles)]);

    const deleted = await api(`/v3/vid/renders/${id}`, { method: "DELETE" });
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    // The conversion has most of two minutes of frames left: gone within seconds means
    // killed, not finished.
    await until("the conversion to be killed", () => {
      try {
        const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
        return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
      } catch {
        return true;
      }
    }, 10_000);
  });

  it("render a video with sound as the render user: picture and audio as composed", async () => {
    const id = await submit(
      compositionHtml(`<video src="clip.mp4" style="width:100%;height:100%"></video>`),
      { "clip.mp4": `${media}/clip.mp4` },
    );
    let status: Json = {};
    await until("the render to finish", async () => {
      status = (await api(`/v3/vid/renders/${id}`)).body;
      return status.status === "completed" || status.status === "failed";
    }, 180_000).catch((error) => {
      throw new Error(`${error.message}: ${JSON.stringify(status)}\n${server.errors()}`);
    });
    assert.equal(status.status, "completed", `${JSON.stringify(status)}\n${server.errors()}`);
    const video = `${dataDir}/storage/renders/${id}/video.mp4`;
    const info = await probeVideo(video);
    assert.ok(info.frames >= 9, JSON.stringify(info));
    const streams = await new Deno.Command("ffprobe", {
      args: ["-v", "error", "-show_entries", "stream=codec_type", "-of", "csv=p=0", video],
      stdout: "piped",
    }).output();
    assert.deepEqual(new TextDecoder().decode(streams.stdout).trim().split("\n").sort(), [
      "audio",
      "video",
    ]);
    for (const colour of await pixelSeries(video, 960, 540)) {
      assert.ok(near(colour, [0, 128, 0, 255], 24), `${colour}`);
    }
    // The render user wrote it; the server keeps it to itself.
    const thumbnail = await Deno.stat(`${dataDir}/storage/renders/${id}/thumbnail.jpg`);
    assert.equal(thumbnail.mode! & 0o777, 0o600);
  });
});
