/**
 * Start-up benchmark: how long a one-frame render takes as a whole process, and where the
 * time goes. Whole processes (median of `--runs`, alternating): an empty `deno run`,
 * `vid --version`, `vid info`, and `vid render --frames 0-0` of a tiny 320x180 page; then,
 * in this process, the render path's stages one after the other (module load, project
 * server, browser launch, page load, seek + capture, ffmpeg start to finished file; a
 * render overlaps some of them: the browser launch with the project server and the ffmpeg
 * option probe, the ffmpeg start with the page load). The render is asked to be under 1 s whole-process on an idle machine;
 * the load average is printed with the figures, since the machine is shared.
 *
 * ```sh
 * deno run -A bench/startup_bench.ts            # 5 rounds
 * deno run -A bench/startup_bench.ts --runs 9 --json
 * deno run -A bench/startup_bench.ts --base /tmp/base   # and another checkout's render
 * ```
 *
 * @module
 */

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** A 320x180, 1 s page with one CSS animation: the smallest real render. */
const TINY_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: 320px; height: 180px; background: #123; }
#box { position: absolute; left: 20px; top: 60px; width: 60px; height: 60px;
  background: #f80; animation: move 1s linear both; }
@keyframes move { to { transform: translateX(220px); } }
</style></head>
<body><div id="root" data-composition-id="tiny" data-width="320" data-height="180"
  data-duration="1"><div id="box"></div></div></body></html>
`;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Wall seconds of one whole process; throws with its stderr when it fails. */
async function wall(args: string[], cwd: string): Promise<number> {
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args,
    cwd,
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const seconds = (performance.now() - started) / 1000;
  if (!output.success) {
    throw new Error(`${args.join(" ")} failed:\n${new TextDecoder().decode(output.stderr)}`);
  }
  return seconds;
}

/** Milliseconds of each stage of a one-frame render, run in this process. */
async function stages(dir: string, output: string): Promise<Record<string, number>> {
  const times: Record<string, number> = {};
  let mark = performance.now();
  const lap = (name: string) => {
    const now = performance.now();
    times[name] = now - mark;
    mark = now;
  };
  const { readComposition } = await import("../src/composition/composition.ts");
  const { openPage, navigate } = await import("../src/render/browser.ts");
  const { launchForCapture } = await import("../src/render/capture_mode.ts");
  const { createCapturer, seekFrame } = await import("../src/render/capture.ts");
  const { prepareEncoder, startEncoder } = await import("../src/render/encode.ts");
  const { serveProject } = await import("../src/render/serve.ts");
  const { requireFfmpeg } = await import("../src/render/system.ts");
  const { runtimeScript } = await import("../src/runtime/page_runtime.ts");
  lap("module load (render path)");
  const composition = await readComposition(dir);
  const ffmpeg = await requireFfmpeg();
  lap("read composition + find ffmpeg");
  await prepareEncoder(ffmpeg);
  lap("ffmpeg option probe (overlapped)");
  const server = await serveProject(dir);
  lap("project server");
  // The BeginFrame probe runs only the first time a binary is met (remembered after).
  const browser = await launchForCapture("auto");
  lap("browser launch");
  try {
    const page = await openPage(browser, {
      width: composition.width,
      height: composition.height,
      initScript: runtimeScript({
        variables: {},
        seed: 1,
        epochMs: 0,
        fps: 30,
        readyTimeoutMs: 30000,
      }),
    });
    lap("open window");
    await navigate(page, server.url + "index.html");
    lap("page load");
    const capturer = createCapturer(page, { mode: browser.mode, format: "jpeg", fps: 30 });
    await seekFrame(page, 0);
    lap("seek frame 0");
    const image = await capturer.capture();
    lap("capture frame 0");
    const encoder = startEncoder({
      ffmpeg,
      output,
      frameRate: { num: 30, den: 1 },
      format: "mp4",
      quality: "standard",
      width: composition.width,
      height: composition.height,
      frameFormat: "jpeg",
    });
    await encoder.write(image);
    await encoder.finish();
    lap("ffmpeg: start to finished file");
  } finally {
    await browser.close();
    await server.close();
  }
  lap("browser + server close");
  return times;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      runs: { type: "string", default: "5" },
      json: { type: "boolean" },
      base: { type: "string" },
    },
  });
  const runs = Number(values.runs);
  const work = await mkdtemp(join(tmpdir(), "vid-startup-bench-"));
  try {
    const dir = join(work, "tiny");
    await Deno.mkdir(dir);
    await writeFile(join(dir, "index.html"), TINY_PAGE);
    const empty = join(work, "empty.ts");
    await writeFile(empty, "");
    const cli = join(ROOT, "cli.ts");
    const commands: Record<string, string[]> = {
      "empty deno run": ["run", "-A", empty],
      "vid --version": ["run", "-A", cli, "--version"],
      "vid info": ["run", "-A", cli, "info", dir],
      "vid render, 1 frame": [
        "run",
        "-A",
        cli,
        "render",
        dir,
        "--frames",
        "0-0",
        "-o",
        join(work, "one.mp4"),
      ],
    };
    if (values.base) {
      // Another checkout's render of the same frame, side by side (see workers_bench.ts).
      commands["base: vid render, 1 frame"] = commands["vid render, 1 frame"]
        .map((arg) => arg === cli ? join(values.base!, "cli.ts") : arg);
    }
    const loadStart = loadavg()[0];
    // One unmeasured run of each warms Deno's module cache and the page cache.
    for (const args of Object.values(commands)) await wall(args, work);
    const seconds: Record<string, number[]> = {};
    for (let round = 0; round < runs; round++) {
      const names = Object.keys(commands);
      if (round % 2 === 1) names.reverse();
      for (const name of names) (seconds[name] ??= []).push(await wall(commands[name], work));
    }
    const stageRuns: Record<string, number>[] = [];
    for (let round = 0; round < runs; round++) {
      stageRuns.push(await stages(dir, join(work, `stage-${round}.mp4`)));
    }
    const load = [loadStart, loadavg()[0]];
    const wholes = Object.fromEntries(
      Object.entries(seconds).map(([name, list]) => [name, median(list)]),
    );
    const stageMedians = Object.fromEntries(
      Object.keys(stageRuns[0]).map((name) => [name, median(stageRuns.map((s) => s[name]))]),
    );
    if (values.json) {
      console.log(JSON.stringify({ runs, load, wholeSeconds: wholes, stageMs: stageMedians }));
    } else {
      const base = wholes["empty deno run"];
      console.log(`whole process, median of ${runs} (load ${load.map((l) => l.toFixed(1))}):`);
      for (const [name, s] of Object.entries(wholes)) {
        console.log(`  ${name.padEnd(22)} ${s.toFixed(3)} s  ${(s / base).toFixed(1)}x empty`);
      }
      console.log(`stages of a 1-frame render in one process, median of ${runs}:`);
      for (const [name, ms] of Object.entries(stageMedians)) {
        console.log(`  ${name.padEnd(32)} ${ms.toFixed(0).padStart(5)} ms`);
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
