/**
 * End-to-end tests of the in-page runtime through the real `vid render` command in real
 * Chromium and ffmpeg: every seek adapter (CSS animations and transitions, WAAPI, GSAP
 * timelines, requestAnimationFrame, timers, Date, seeded Math.random, `__vid.onSeek`)
 * shows frame n at exactly t = n / fps, `window.__vid.getVariables()` behaves as the spec
 * says, both capture paths agree, parallel chunks are bit-identical to one worker, and the
 * readiness gate and page errors fail a render with a message naming the frame.
 *
 * Fixtures are 320x180 at 30 fps, 1 s long (the variables fixture 0.2 s, the chunked copy
 * 2.5 s). Colours are read from the decoded video and compared
 * with what the page's own maths gives at t = n / 30, within the loss of JPEG + H.264.
 *
 * @module
 */

import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  compositionHtml,
  frameHashes as decodeFrameHashes,
  gsapSource,
  makeProject,
  near,
  rgb,
  type Rgba,
  runVid,
} from "../helpers.ts";

const FPS = 30;
const FRAMES = 30;
/**
 * Largest channel difference accepted after JPEG capture and H.264 encoding (measured: 2).
 * The ramps move at least 8 levels per frame, so a frame early or late fails.
 */
const TOLERANCE = 4;

const tempDirs: string[] = [];

/** Runs `fn` once, on first use, and hands every caller the same promise. */
function once<T>(fn: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => (result ??= fn());
}

async function project(html: string, files: Record<string, string> = {}): Promise<string> {
  const dir = await makeProject(html, files);
  tempDirs.push(dir);
  return dir;
}

/** What `vid render --json` printed, with the output path. */
interface Rendered {
  output: string;
  captureMode: string;
  workers: number;
  chunks: number;
  frames: number;
}

/** Renders `dir` to `name` inside it with `vid render --json`; asserts success. */
async function render(
  dir: string,
  name: string,
  args: string[] = [],
  env: Record<string, string> = {},
  frames = FRAMES,
): Promise<Rendered> {
  const output = `${dir}/${name}`;
  const result = await runVid(["render", dir, "--output", output, "--json", ...args], { env });
  assert.equal(
    result.code,
    0,
    `vid render ${args.join(" ")} failed:\n${result.stdout}\n${result.stderr}`,
  );
  const summary = JSON.parse(result.stdout) as Rendered & { ok: boolean };
  assert.equal(summary.ok, true);
  assert.equal(summary.frames, frames);
  return { ...summary, output };
}

const clamp01 = (x: number): number => Math.min(1, Math.max(0, x));
/** The page paints grey levels rounded and clamped like this. */
const level = (v: number): number => Math.round(Math.min(255, Math.max(0, v)));

/** One region of the adapters fixture and the grey level the page's maths gives at frame n. */
interface Probe {
  name: string;
  x: number;
  y: number;
  expected: (n: number) => number;
}

const ms = (n: number): number => (n * 1000) / FPS;

/**
 * The adapters fixture is a 4x3 grid of 80x60 cells, each painted a grey level by one
 * time source. These are the centres of the cells (the Date cell has two halves).
 */
const PROBES: Record<string, Probe> = {
  keyframes: { name: "CSS @keyframes", x: 40, y: 30, expected: (n) => 255 * (n / FPS) },
  keyframesDelayed: {
    name: "CSS @keyframes with animation-delay",
    x: 120,
    y: 30,
    expected: (n) => 255 * clamp01((n / FPS - 0.3) / 0.5),
  },
  transition: {
    // Started between frames 9 and 10: it runs from 310 ms, not from the next frame.
    name: "CSS transition started by a timer at 310 ms",
    x: 200,
    y: 30,
    expected: (n) => 255 * clamp01((ms(n) - 310) / 500),
  },
  waapi: { name: "WAAPI el.animate", x: 280, y: 30, expected: (n) => 255 * (1 - n / FPS) },
  gsap: {
    name: "GSAP timeline",
    x: 40,
    y: 90,
    expected: (n) => 255 * clamp01((n / FPS - 0.2) / 0.5),
  },
  canvas: { name: "canvas drawn in rAF", x: 120, y: 90, expected: (n) => (255 * ms(n)) / 1000 },
  timeoutChain: {
    name: "setTimeout chain",
    x: 200,
    y: 90,
    expected: (n) => 25 * (Math.floor(ms(n) / 100) % 10),
  },
  interval: {
    name: "setInterval",
    x: 280,
    y: 90,
    expected: (n) => 12 * (Math.floor(ms(n) / 50) % 20),
  },
  dateNow: { name: "Date.now()", x: 20, y: 150, expected: (n) => (255 * ms(n)) / 1000 },
  newDate: { name: "new Date()", x: 60, y: 150, expected: (n) => (255 * ms(n)) / 1000 },
  random: { name: "Math.random", x: 120, y: 150, expected: () => Number.NaN },
  hook: {
    name: "__vid.onSeek hook",
    x: 200,
    y: 150,
    expected: (n) => 127.5 + 127.5 * Math.sin(2 * Math.PI * (n / FPS)),
  },
  counter: { name: "rAF frame counter", x: 280, y: 150, expected: (n) => (8 * (n + 1)) % 256 },
};

/**
 * A composition that drives one cell per time source; see {@linkcode PROBES}. The timer
 * cells wrap around so that a longer copy keeps changing after the first second.
 */
function adaptersHtml(duration = 1): string {
  const cells: [string, number, number, number?][] = [
    ["keyframes", 0, 0],
    ["keyframes-delayed", 80, 0],
    ["transition", 160, 0],
    ["waapi", 240, 0],
    ["gsap", 0, 60],
    ["timeout-chain", 160, 60],
    ["interval", 240, 60],
    ["date-now", 0, 120, 40],
    ["new-date", 40, 120, 40],
    ["random", 80, 120],
    ["hook", 160, 120],
    ["counter", 240, 120],
  ];
  const body =
    cells.map(([id, x, y, w]) =>
      `<div id="${id}" class="cell" style="left:${x}px;top:${y}px;width:${w ?? 80}px"></div>`
    ).join("") +
    `<canvas id="canvas" width="80" height="60" style="position:absolute;left:80px;top:60px"></canvas>`;
  const head = `<style>
.cell { position: absolute; height: 60px; background: rgb(0, 0, 0); }
@keyframes ramp { from { background: rgb(0, 0, 0) } to { background: rgb(255, 255, 255) } }
#keyframes { animation: ramp 1s linear both; }
#keyframes-delayed { animation: ramp 0.5s linear 0.3s both; }
#transition { transition: background-color 500ms linear; }
#transition.on { background: rgb(255, 255, 255); }
</style><script src="gsap.min.js"></script>`;
  const script = `<script>
function paint(id, v) {
  v = Math.round(Math.min(255, Math.max(0, v)));
  document.getElementById(id).style.background = "rgb(" + v + "," + v + "," + v + ")";
}
function everyFrame(fn) {
  requestAnimationFrame(function loop() { fn(); requestAnimationFrame(loop); });
}
setTimeout(function () { document.getElementById("transition").classList.add("on"); }, 310);
document.getElementById("waapi").animate(
  [{ backgroundColor: "rgb(255, 255, 255)" }, { backgroundColor: "rgb(0, 0, 0)" }],
  { duration: 1000, easing: "linear", fill: "both" },
);
// Paused: only the runtime seeking window.__timelines moves it, not the GSAP ticker.
var tl = gsap.timeline({ paused: true });
tl.fromTo("#gsap", { backgroundColor: "rgb(0, 0, 0)" },
  { backgroundColor: "rgb(255, 255, 255)", duration: 0.5, ease: "none" }, 0.2);
window.__timelines = { main: tl };
var ctx = document.getElementById("canvas").getContext("2d");
everyFrame(function () {
  var v = Math.round(Math.min(255, 255 * performance.now() / 1000));
  ctx.fillStyle = "rgb(" + v + "," + v + "," + v + ")";
  ctx.fillRect(0, 0, 80, 60);
});
var steps = 0;
setTimeout(function step() {
  steps++;
  paint("timeout-chain", 25 * (steps % 10));
  setTimeout(step, 100);
}, 100);
var ticks = 0;
setInterval(function () { ticks++; paint("interval", 12 * (ticks % 20)); }, 50);
var start = Date.now();
everyFrame(function () {
  paint("date-now", 255 * (Date.now() - start) / 1000);
  paint("new-date", 255 * (new Date().getTime() - start) / 1000);
});
everyFrame(function () { paint("random", Math.floor(Math.random() * 256)); });
window.__vid.onSeek(function (t) { paint("hook", 127.5 + 127.5 * Math.sin(2 * Math.PI * t)); });
var count = 0;
everyFrame(function () { count++; paint("counter", (8 * count) % 256); });
</script>`;
  return compositionHtml(body, { id: "adapters", duration, head, after: script });
}

const adaptersProject = once(async () =>
  await project(adaptersHtml(), { "gsap.min.js": await gsapSource() })
);

/** The adapters fixture as mp4, one worker, per capture path. */
const adaptersMp4 = {
  beginframe: once(async () =>
    await render(await adaptersProject(), "beginframe.mp4", [
      "--capture",
      "beginframe",
      "--workers",
      "1",
    ])
  ),
  screenshot: once(async () =>
    await render(await adaptersProject(), "screenshot.mp4", [
      "--capture",
      "screenshot",
      "--workers",
      "1",
    ])
  ),
};

/**
 * Frames of the long copy of the adapters fixture: more than one chunk (a local chunk is
 * 2 s, 60 frames), so the second chunk starts at frame 60 in a browser of its own.
 */
const LONG_FRAMES = 75;

const longAdaptersProject = once(async () =>
  await project(adaptersHtml(LONG_FRAMES / FPS), { "gsap.min.js": await gsapSource() })
);

/**
 * A 2.5 s copy of the adapters fixture as ProRes 4444 (`mov`), long enough to be split into
 * chunks: captured as PNG and encoded intra-only, so equal pages give equal decoded frames.
 */
function longMov(name: string, workers: number): () => Promise<Rendered> {
  return once(async () =>
    await render(
      await longAdaptersProject(),
      name,
      ["--format", "mov", "--workers", String(workers)],
      {},
      LONG_FRAMES,
    )
  );
}

/** The same input rendered twice, by one worker and by one per chunk. */
const adaptersMov = {
  oneWorker: longMov("one.mov", 1),
  threeWorkers: longMov("three.mov", 3),
};

/** Width and height of every fixture, so of every decoded frame. */
const WIDTH = 320;
const HEIGHT = 180;

const decoded = new Map<string, Promise<Uint8Array>>();

/**
 * Every frame of a render as RGBA bytes, decoded by ffmpeg once per file (as the helpers'
 * `pixelSeries` decodes: the whole frame through `format=rgba`) and then read from memory:
 * the probes read a dozen pixels of each render.
 */
function rgbaVideo(file: string): Promise<Uint8Array> {
  let bytes = decoded.get(file);
  if (!bytes) {
    bytes = new Deno.Command("ffmpeg", {
      args: [
        "-v",
        "error",
        "-i",
        file,
        "-vf",
        "format=rgba",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgba",
        "-",
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output().then((out) => {
      assert.equal(out.code, 0, `ffmpeg ${file}: ${new TextDecoder().decode(out.stderr)}`);
      return out.stdout;
    });
    decoded.set(file, bytes);
  }
  return bytes;
}

const hashed = new Map<string, Promise<string[]>>();

/** Per-frame MD5s of `file` (ffmpeg's framemd5), computed once per file. */
function frameHashes(file: string): Promise<string[]> {
  let hashes = hashed.get(file);
  if (!hashes) hashed.set(file, hashes = decodeFrameHashes(file));
  return hashes;
}

/** The colour of pixel (x, y) in every frame of `file`, in frame order. */
async function pixelSeries(file: string, x: number, y: number): Promise<Rgba[]> {
  const bytes = await rgbaVideo(file);
  const frameSize = WIDTH * HEIGHT * 4;
  assert.equal(bytes.length % frameSize, 0, `${file}: not ${WIDTH}x${HEIGHT} RGBA frames`);
  const colours: Rgba[] = [];
  for (let at = (y * WIDTH + x) * 4; at < bytes.length; at += frameSize) {
    colours.push([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
  }
  return colours;
}

/** Asserts that the grey level of `probe` matches its expectation on every frame. */
async function assertProbe(
  file: string,
  probe: Probe,
  frames = FRAMES,
  tolerance = TOLERANCE,
): Promise<void> {
  const series = await pixelSeries(file, probe.x, probe.y);
  assert.equal(series.length, frames, `${file}: frames decoded`);
  const misses: string[] = [];
  for (let n = 0; n < frames; n++) {
    const v = level(probe.expected(n));
    if (!near(series[n], [v, v, v], tolerance)) {
      misses.push(`frame ${n}: ${rgb(series[n])}, expected rgb(${v}, ${v}, ${v})`);
    }
  }
  assert.deepEqual(misses, [], `${probe.name} at t = n / ${FPS}`);
}

/** Frames of the variables fixture (0.2 s): its first and last frame are read. */
const VARIABLES_FRAMES = 6;

/** What the variables fixture paints for a check that passed (red means failed). */
const PASS: Rgba = [0, 255, 0, 255];

/**
 * A composition whose first script, in `<head>`, reads `window.__vid.getVariables()` and
 * paints: the `bg` colour (top left), the `level` number as grey (top right), whether the
 * result is frozen and fresh per call (bottom left) and whether `__vid` existed before the
 * first script ran (bottom right), green for pass and red for fail.
 */
function variablesHtml(): string {
  const head = `<script>
(function () {
  var early = typeof window.__vid === "object" && window.__vid !== null &&
    typeof window.__vid.getVariables === "function";
  var v = early ? window.__vid.getVariables() : {};
  var fresh = early && window.__vid.getVariables() !== window.__vid.getVariables();
  var frozen = early && Object.isFrozen(v);
  var before = v.bg;
  try { v.bg = "#123456"; } catch (e) { /* strict code would throw */ }
  var immutable = early && v.bg === before && window.__vid.getVariables().bg === before;
  document.addEventListener("DOMContentLoaded", function () {
    var pass = "rgb(0, 255, 0)", fail = "rgb(255, 0, 0)";
    document.getElementById("bg").style.background = v.bg;
    var l = v.level;
    document.getElementById("level").style.background = "rgb(" + l + "," + l + "," + l + ")";
    document.getElementById("frozen").style.background = frozen && fresh && immutable ? pass : fail;
    document.getElementById("early").style.background = early ? pass : fail;
  });
})();
</script>
<style>.q { position: absolute; width: 160px; height: 90px; }</style>`;
  const body = [["bg", 0, 0], ["level", 160, 0], ["frozen", 0, 90], ["early", 160, 90]]
    .map(([id, x, y]) => `<div id="${id}" class="q" style="left:${x}px;top:${y}px"></div>`)
    .join("");
  return compositionHtml(body, {
    id: "variables",
    duration: VARIABLES_FRAMES / FPS,
    head,
    variables: [
      { id: "bg", type: "color", label: "Background", default: "#ff0000" },
      { id: "level", type: "number", label: "Grey level", default: 64 },
    ],
  });
}

/** The four quadrant colours of the first and last frame of a variables render. */
async function quadrants(file: string): Promise<Record<string, [Rgba, Rgba]>> {
  const points: Record<string, [number, number]> = {
    bg: [80, 45],
    level: [240, 45],
    frozen: [80, 135],
    early: [240, 135],
  };
  const result: Record<string, [Rgba, Rgba]> = {};
  for (const [name, [x, y]] of Object.entries(points)) {
    const series = await pixelSeries(file, x, y);
    assert.equal(series.length, VARIABLES_FRAMES, `${file}: frames decoded`);
    result[name] = [series[0], series[VARIABLES_FRAMES - 1]];
  }
  return result;
}

function assertQuadrants(
  actual: Record<string, [Rgba, Rgba]>,
  expected: Record<string, readonly number[]>,
): void {
  for (const [name, colour] of Object.entries(expected)) {
    for (const [i, frame] of [0, VARIABLES_FRAMES - 1].entries()) {
      assert.ok(
        near(actual[name][i], colour, 8),
        `${name} at frame ${frame}: ${rgb(actual[name][i])}, expected ${rgb(colour)}`,
      );
    }
  }
}

/** What a render that is expected to fail left behind. */
interface Failed {
  code: number;
  stderr: string;
  /** Entries of the output directory, or undefined when it was never created. */
  outputDir?: string[];
}

async function renderExpectingFailure(
  dir: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Failed> {
  const outDir = `${dir}/out`;
  const result = await runVid(["render", dir, "--output", `${outDir}/video.mp4`, ...args], {
    env,
  });
  let outputDir: string[] | undefined;
  try {
    outputDir = [];
    for await (const entry of Deno.readDir(outDir)) outputDir.push(entry.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    outputDir = undefined;
  }
  return { code: result.code, stderr: result.stderr, outputDir };
}

/** The `error: ...` line the CLI printed. */
function errorLine(stderr: string): string {
  return stderr.split("\n").find((line) => line.startsWith("error: ")) ?? stderr;
}

describe("the page runtime, through vid render in Chromium and ffmpeg", () => {
  after(async () => {
    for (const dir of tempDirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
  });

  describe("seek adapters: frame n shows t = n / fps", () => {
    for (
      const key of [
        "keyframes",
        "keyframesDelayed",
        "transition",
        "waapi",
        "gsap",
        "canvas",
        "timeoutChain",
        "interval",
        "dateNow",
        "newDate",
        "hook",
        "counter",
      ]
    ) {
      const probe = PROBES[key];
      it(probe.name, async () => {
        const { output } = await adaptersMp4.beginframe();
        await assertProbe(output, probe);
      });
    }

    it("a CSS animation the page removes or replaces stops applying", async () => {
      const dir = await project(compositionHtml(
        `<div id="removed" class="half spin" style="left:0"></div>` +
          `<div id="replaced" class="half enter" style="left:160px"></div>`,
        {
          id: "cancelled",
          head: `<style>
.half { position: absolute; top: 0; width: 160px; height: 180px; background: rgb(40, 40, 40); }
@keyframes ramp { from { background: rgb(0, 0, 0) } to { background: rgb(255, 255, 255) } }
@keyframes hold { from, to { background: rgb(100, 100, 100) } }
.spin, .enter { animation: ramp 1s linear both; }
.exit { animation: hold 1s linear both; }
</style>`,
          after: `<script>
setTimeout(function () {
  document.getElementById("removed").classList.remove("spin");
  document.getElementById("replaced").classList.replace("enter", "exit");
}, 500);
</script>`,
        },
      ));
      const { output } = await render(dir, "cancelled.mp4", ["--workers", "1"]);
      const ramp = (n: number) => (255 * n) / FPS;
      await assertProbe(output, {
        name: "animation removed at 500 ms",
        x: 80,
        y: 90,
        expected: (n) => n < 15 ? ramp(n) : 40,
      });
      await assertProbe(output, {
        name: "animation replaced at 500 ms",
        x: 240,
        y: 90,
        expected: (n) => n < 15 ? ramp(n) : 100,
      });
    });

    it("Math.random is seeded: two renders are identical and the colour changes per frame", async () => {
      // Two renders of the same input, in separate browsers (one of them split in chunks).
      const [a, b] = await Promise.all([adaptersMov.oneWorker(), adaptersMov.threeWorkers()]);
      const [seriesA, seriesB] = await Promise.all([
        pixelSeries(a.output, PROBES.random.x, PROBES.random.y),
        pixelSeries(b.output, PROBES.random.x, PROBES.random.y),
      ]);
      assert.deepEqual(seriesA, seriesB);
      const distinct = new Set(seriesA.map((c) => c[0]));
      assert.ok(
        distinct.size >= 20,
        `only ${distinct.size} distinct random levels in ${seriesA.length} frames`,
      );
      for (const c of seriesA) assert.ok(c[0] === c[1] && c[1] === c[2], `grey: ${rgb(c)}`);
      assert.deepEqual(await frameHashes(a.output), await frameHashes(b.output));
    });
  });

  describe("capture paths", () => {
    it("BeginFrame and screenshot capture show the same frames", async () => {
      const beginframe = await adaptersMp4.beginframe();
      const screenshot = await adaptersMp4.screenshot();
      assert.equal(beginframe.captureMode, "beginframe");
      assert.equal(screenshot.captureMode, "screenshot");
      for (const key of ["keyframes", "transition", "gsap", "canvas", "timeoutChain", "hook"]) {
        await assertProbe(screenshot.output, PROBES[key]);
      }
      for (const probe of Object.values(PROBES)) {
        const [a, b] = await Promise.all([
          pixelSeries(beginframe.output, probe.x, probe.y),
          pixelSeries(screenshot.output, probe.x, probe.y),
        ]);
        const differing = a.flatMap((c, n) => near(c, b[n], TOLERANCE) ? [] : [n]);
        assert.deepEqual(differing, [], `${probe.name}: frames that differ between capture paths`);
      }
    });
  });

  describe("parallel rendering", () => {
    it("two renders of the same input (--workers 1 and --workers 3) give bit-identical frames", async () => {
      const one = await adaptersMov.oneWorker();
      const three = await adaptersMov.threeWorkers();
      assert.equal(one.workers, 1);
      assert.ok(
        three.chunks >= 2 && three.workers >= 2,
        `${three.chunks} chunks, ${three.workers} workers`,
      );
      const [a, b] = await Promise.all([frameHashes(one.output), frameHashes(three.output)]);
      assert.equal(a.length, LONG_FRAMES);
      assert.equal(
        new Set(a).size,
        LONG_FRAMES,
        "every frame of the fixture differs from the others",
      );
      assert.deepEqual(b, a);
    });

    it("later chunks start in the state a render from frame 0 reaches", async () => {
      const one = await adaptersMov.oneWorker();
      const three = await adaptersMov.threeWorkers();
      // The rAF counter counts callbacks, not time: a chunk that started by jumping to its
      // first frame would be behind.
      const { x, y } = PROBES.counter;
      assert.deepEqual(await pixelSeries(three.output, x, y), await pixelSeries(one.output, x, y));
      for (const probe of Object.values(PROBES)) {
        if (probe !== PROBES.random) await assertProbe(three.output, probe, LONG_FRAMES);
      }
    });
  });

  describe("window.__vid.getVariables() in the page", () => {
    const variablesProject = once(() => project(variablesHtml()));

    it("returns the declared defaults with no overrides, before the first page script", async () => {
      const dir = await variablesProject();
      const { output } = await render(
        dir,
        "defaults.mp4",
        ["--workers", "1"],
        {},
        VARIABLES_FRAMES,
      );
      assertQuadrants(await quadrants(output), {
        bg: [255, 0, 0],
        level: [64, 64, 64],
        frozen: PASS,
        early: PASS,
      });
    });

    it("returns --variables overrides merged over the defaults", async () => {
      const dir = await variablesProject();
      const [{ output }, { output: both }] = await Promise.all([
        render(
          dir,
          "overrides.mp4",
          ["--workers", "1", "--variables", '{"bg":"#00ff00"}'],
          {},
          VARIABLES_FRAMES,
        ),
        render(
          dir,
          "both.mp4",
          ["--workers", "1", "--variables", '{"bg":"#0000ff","level":200}'],
          {},
          VARIABLES_FRAMES,
        ),
      ]);
      assertQuadrants(await quadrants(output), {
        bg: [0, 255, 0],
        level: [64, 64, 64],
        frozen: PASS,
        early: PASS,
      });
      assertQuadrants(await quadrants(both), { bg: [0, 0, 255], level: [200, 200, 200] });
    });
  });

  describe("readiness gate and page failures", () => {
    it("holds capture on __vid.delay() until a real async load releases it", async () => {
      // The release comes from a real fetch plus 300 ms of real time (a worker's timer is not
      // virtual), so without the gate frame 0 would be captured black.
      const dir = await project(
        compositionHtml(`<div id="logo" style="position:absolute;inset:0"></div>`, {
          id: "delay",
          after: `<script>
var release = window.__vid.delay("logo");
fetch("logo.json").then(function (r) { return r.json(); }).then(function (data) {
  return new Promise(function (resolve) {
    var source = "setTimeout(function () { postMessage(0); }, 300);";
    var worker = new Worker(URL.createObjectURL(new Blob([source], { type: "text/javascript" })));
    worker.onmessage = function () { worker.terminate(); resolve(data); };
  });
}).then(function (data) {
  document.getElementById("logo").style.background = data.color;
  release();
});
</script>`,
        }),
        { "logo.json": JSON.stringify({ color: "rgb(0, 0, 255)" }) },
      );
      const { output } = await render(dir, "delay.mp4", ["--workers", "2"], {
        VID_READY_TIMEOUT_MS: "10000",
      });
      const series = await pixelSeries(output, 160, 90);
      const wrong = series.flatMap((c, n) => near(c, [0, 0, 255], 8) ? [] : [`${n}: ${rgb(c)}`]);
      assert.deepEqual(wrong, [], "frames not showing the loaded colour");
    });

    it("fails when a __vid.delay() is never released, naming the label and the frame", async () => {
      const dir = await project(compositionHtml("", {
        id: "stuck",
        after: `<script>setTimeout(function () { window.__vid.delay("logo"); }, 200);</script>`,
      }));
      const started = performance.now();
      const failed = await renderExpectingFailure(dir, ["--workers", "1"], {
        VID_READY_TIMEOUT_MS: "1000",
      });
      assert.equal(failed.code, 1, failed.stderr);
      const line = errorLine(failed.stderr);
      assert.match(line, /frame 6\b/, line);
      assert.match(line, /"logo"/, line);
      assert.match(line, /1000 ms/, line);
      assert.ok(performance.now() - started < 20000, "the timeout came from VID_READY_TIMEOUT_MS");
      assert.equal(failed.outputDir?.length ?? 0, 0, `left behind: ${failed.outputDir}`);
    });

    it("fails when an onSeek handler never settles (it awaits a frame-clock timer), naming the frame", async () => {
      const dir = await project(compositionHtml("", {
        id: "hook-stuck",
        after: `<script>
window.__vid.onSeek(function (t) {
  if (t < 0.2) return;
  return new Promise(function (resolve) { setTimeout(resolve, 100); });
});
</script>`,
      }));
      const started = performance.now();
      const failed = await renderExpectingFailure(dir, ["--workers", "1"], {
        VID_READY_TIMEOUT_MS: "1000",
      });
      assert.equal(failed.code, 1, failed.stderr);
      const line = errorLine(failed.stderr);
      assert.match(line, /frame 6: an onSeek handler did not settle within 1000 ms/, line);
      assert.ok(performance.now() - started < 20000, "the timeout came from VID_READY_TIMEOUT_MS");
      assert.equal(failed.outputDir?.length ?? 0, 0, `left behind: ${failed.outputDir}`);
    });

    it("fails when the page throws, naming the frame and the message, leaving no file", async () => {
      const dir = await project(compositionHtml("", {
        id: "throws",
        after: `<script>
setTimeout(function () { throw new Error("boom at 200 ms"); }, 200);
</script>`,
      }));
      const failed = await renderExpectingFailure(dir, ["--workers", "2"]);
      assert.equal(failed.code, 1, failed.stderr);
      const line = errorLine(failed.stderr);
      assert.match(line, /frame 6\b/, line);
      assert.match(line, /boom at 200 ms/, line);
      assert.equal(failed.outputDir?.length ?? 0, 0, `left behind: ${failed.outputDir}`);
    });
  });
});
