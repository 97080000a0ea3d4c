/**
 * Failure handling of `vid render` under outside interference, with real processes: a
 * browser killed mid-render is relaunched and its chunks retried once; Ctrl-C (SIGINT)
 * stops the browser and ffmpeg and leaves no output or temp files; a page that busy-loops
 * fails the render within the host's frame deadline (--frame-timeout), and Ctrl-C during
 * that hang still stops it at once; an encoder aborted mid-chunk has ended its ffmpeg runs
 * and removed their cell files when its abort resolves. Its time bounds are far from what
 * they bound (a 3 s frame deadline checked within 30 s, a stop within 10 s, 320x180 frames
 * of milliseconds), and it looks only at the processes it starts, so it runs in parallel
 * with other files.
 *
 * @module
 */

import { describe, it } from "node:test";
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
} from "../helpers.ts";
import { startEncoder } from "../../src/render/encode.ts";

const FPS = 60;
const SECONDS = 4;

/** A 4 s fade so the render runs long enough to be interrupted. */
function fadeProject(): Promise<string> {
  return makeProject(compositionHtml(
    `<div style="position:absolute;inset:0;animation:fade ${SECONDS}s linear both"></div>`,
    {
      duration: SECONDS,
      head:
        `<style>@keyframes fade { from { background: rgb(0,0,0) } to { background: rgb(0,0,255) } }</style>`,
    },
  ));
}

/** A 1 s page whose script busy-loops from 0.3 s (virtual time: frame 9 at 30 fps). */
function busyLoopProject(): Promise<string> {
  return makeProject(
    compositionHtml(`<div style="position:absolute;inset:0;background:#00f"></div>`, {
      after: "<script>setTimeout(() => { while (true) {} }, 300);</script>",
    }),
  );
}

/** Waits up to 3 s for `pids` to end; fails naming any still running. */
async function assertGone(pids: number[]): Promise<void> {
  // SIGKILL is delivered at once but a loaded kernel may take a moment to tear a
  // process down, so allow up to 3 s before calling it a leak.
  const deadline = Date.now() + 3000;
  let running = pids.filter(alive);
  while (running.length > 0 && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    running = running.filter(alive);
  }
  for (const pid of running) {
    assert.fail(`child process ${pid} (${await commandLine(pid)}) still runs`);
  }
}

/** Pids of the direct children of `pid`. */
async function childrenOf(pid: number): Promise<number[]> {
  const out = await new Deno.Command("pgrep", { args: ["-P", String(pid)], stdout: "piped" })
    .output();
  return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean).map(Number);
}

async function commandLine(pid: number): Promise<string> {
  try {
    return (await Deno.readTextFile(`/proc/${pid}/cmdline`)).replaceAll("\0", " ");
  } catch {
    return "";
  }
}

/** Whether `pid` runs (a zombie waiting to be reaped by init does not count). */
function alive(pid: number): boolean {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    return !/^State:\s+Z/m.test(status);
  } catch {
    return false;
  }
}

/** Starts `vid render` and resolves once it reports rendering progress on stderr. */
async function startRender(args: string[], env: Record<string, string> = {}) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, "render", ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...env },
  }).spawn();
  let stderr = "";
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  const stderrDone = (async () => {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += value;
    }
  })();
  const deadline = Date.now() + 60000;
  while (!/rendering \d+\//.test(stderr)) {
    if (Date.now() > deadline) throw new Error(`render never started:\n${stderr}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    child,
    stderr: () => stderr,
    finish: async () => {
      const [status, stdout] = await Promise.all([
        child.status,
        new Response(child.stdout).text(),
        stderrDone,
      ]);
      return { code: status.code, signal: status.signal, stdout, stderr };
    },
  };
}

describe("vid render under interference", () => {
  it("retries the chunks of a browser killed mid-render and still writes every frame", async () => {
    const dir = await fadeProject();
    const output = `${dir}/out.mp4`;
    const render = await startRender([
      dir,
      "--output",
      output,
      "--fps",
      String(FPS),
      "--workers",
      "2",
      "--json",
    ]);
    // The first worker's browser (the first launched: a further worker's may still be
    // starting, and one killed then is launched again, with no chunk to retry).
    let browser: number | undefined;
    for (const pid of (await childrenOf(render.child.pid)).sort((a, b) => a - b)) {
      if ((await commandLine(pid)).includes("--remote-debugging-port")) browser ??= pid;
    }
    assert.ok(browser, "the render's browser process was not found");
    Deno.kill(browser, "SIGKILL");
    const result = await render.finish();
    assert.equal(result.code, 0, result.stderr + result.stdout);
    const summary = JSON.parse(result.stdout);
    assert.ok(summary.retries >= 1, `expected a retry, got ${summary.retries}`);
    const info = await probeVideo(output);
    assert.equal(info.frames, FPS * SECONDS);
    const series = await pixelSeries(output, 160, 90);
    for (const frame of [0, 60, 120, 239]) {
      const expected = [0, 0, Math.round((255 * frame) / (FPS * SECONDS))];
      assert.ok(near(series[frame], expected, 6), `frame ${frame}: ${rgb(series[frame])}`);
    }
    await Deno.remove(dir, { recursive: true });
  });

  it("stops on SIGINT: exit 130, browser and ffmpeg gone, no output, no temp files", async () => {
    const dir = await fadeProject();
    const output = `${dir}/renders/out.mp4`;
    // A private TMPDIR shows exactly what this render leaves behind.
    const temp = await Deno.makeTempDir({ prefix: "vid-tmpdir-" });
    const render = await startRender([dir, "--output", output, "--fps", String(FPS)], {
      TMPDIR: temp,
    });
    const children = await childrenOf(render.child.pid);
    const grandchildren = (await Promise.all(children.map(childrenOf))).flat();
    assert.ok(children.length >= 2, "expected the browser and ffmpeg to be running");
    render.child.kill("SIGINT");
    const result = await render.finish();
    assert.equal(result.code, 130, result.stderr);
    assert.match(result.stderr, /cancelled/);
    await assertGone([...children, ...grandchildren]);
    const left = [];
    try {
      for await (const entry of Deno.readDir(`${dir}/renders`)) left.push(entry.name);
    } catch {
      // no renders folder at all is fine
    }
    assert.deepEqual(left, []);
    const leftovers = [];
    for await (const entry of Deno.readDir(temp)) leftovers.push(entry.name);
    assert.deepEqual(leftovers, [], "temp files left behind");
    await Deno.remove(temp, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  });

  it("fails a page that busy-loops within --frame-timeout: exit 1, the frame named, nothing left running", async () => {
    const dir = await busyLoopProject();
    const output = `${dir}/renders/out.mp4`;
    const temp = await Deno.makeTempDir({ prefix: "vid-tmpdir-" });
    const render = await startRender([dir, "--output", output, "--frame-timeout", "3"], {
      TMPDIR: temp,
    });
    const children = await childrenOf(render.child.pid);
    const grandchildren = (await Promise.all(children.map(childrenOf))).flat();
    assert.ok(
      (await Promise.all(children.map(commandLine))).some((c) => c.includes("ffmpeg")),
      "expected ffmpeg to be running",
    );
    // Rendering has begun: the page hangs at frame 9 and the deadline is 3 s from there.
    // Generous slack for a loaded machine; without the watchdog it would never end.
    const started = performance.now();
    const timeout = setTimeout(() => render.child.kill("SIGKILL"), 30000);
    const result = await render.finish();
    clearTimeout(timeout);
    const seconds = (performance.now() - started) / 1000;
    assert.equal(result.code, 1, result.stderr);
    assert.ok(seconds < 30, `the render was killed after ${seconds.toFixed(1)} s, not failed`);
    assert.match(
      result.stderr,
      /error: frame 9: the page stopped responding \(its seek and capture did not finish within 3 s\)/,
    );
    assert.match(result.stderr, /--frame-timeout/);
    await assertGone([...children, ...grandchildren]);
    assert.deepEqual(await childrenOf(render.child.pid), []);
    const leftovers = [];
    for await (const entry of Deno.readDir(temp)) leftovers.push(entry.name);
    assert.deepEqual(leftovers, [], "temp files left behind");
    await assert.rejects(Deno.stat(output));
    await Deno.remove(temp, { recursive: true });
    await Deno.remove(dir, { recursive: true });
  });

  it("stops on SIGINT while the page hangs: the hung CDP call does not hold it", async () => {
    const dir = await busyLoopProject();
    // The default 30 s deadline: only the signal can end this render soon.
    const render = await startRender([dir, "--output", `${dir}/out.mp4`]);
    const children = await childrenOf(render.child.pid);
    const grandchildren = (await Promise.all(children.map(childrenOf))).flat();
    // Frame 9 is reached within moments of the first progress line; then the page spins.
    await new Promise((r) => setTimeout(r, 1500));
    const started = performance.now();
    render.child.kill("SIGINT");
    const result = await render.finish();
    const seconds = (performance.now() - started) / 1000;
    assert.equal(result.code, 130, result.stderr);
    assert.ok(seconds < 10, `SIGINT took ${seconds.toFixed(1)} s to stop the render`);
    await assertGone([...children, ...grandchildren]);
    await Deno.remove(dir, { recursive: true });
  });

  it("an aborted encoder has killed its ffmpeg runs and removed their .cell- files when abort() resolves", async () => {
    const dir = await Deno.makeTempDir({ prefix: "vid-encoder-abort-" });
    const jpeg = await new Deno.Command("ffmpeg", {
      args: [
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "color=c=blue:s=320x180",
        "-frames:v",
        "1",
        "-f",
        "image2pipe",
        "-c:v",
        "mjpeg",
        "pipe:1",
      ],
      stdout: "piped",
    }).output();
    const encoder = startEncoder({
      ffmpeg: "ffmpeg",
      output: join(dir, "chunk.mp4"),
      frameRate: { num: 10, den: 1 },
      format: "mp4",
      quality: "draft",
      width: 320,
      height: 180,
      frameFormat: "jpeg",
      cellFrames: 2,
      frames: 6,
    });
    // Three frames: the first cell is finishing and the second one runs.
    for (let i = 0; i < 3; i++) await encoder.write(jpeg.stdout);
    await encoder.abort();
    assert.deepEqual(await Array.fromAsync(Deno.readDir(dir), (e) => e.name), []);
    // No late ffmpeg writes a cell again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.deepEqual(await Array.fromAsync(Deno.readDir(dir), (e) => e.name), []);
    await Deno.remove(dir, { recursive: true });
  });
});
