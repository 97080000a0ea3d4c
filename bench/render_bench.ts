/**
 * Render benchmark: vid's frames per second on a 1920x1080, 10 s, 30 fps composition
 * (`bench/fixtures/bench10s`) side by side with this machine's raw limit for the same
 * page, all measured in one run:
 *
 * - capture-only: `launchForCapture("auto")`, `openPage`, `navigate`, then `seekFrame` +
 *   `capturer.capture()` for every frame in one window, the JPEGs kept in memory and
 *   nothing encoded (and, for context, the same with as many windows as vid used workers);
 * - encode-only: those same JPEGs piped through `startEncoder` with the settings of the
 *   vid render (mp4, quality "standard": libx264 veryfast, CRF 20);
 * - vid: `renderComposition` (the SDK, whole call) with the default worker count, then
 *   with `workers: 1`.
 *
 * The limit is the throughput of the stages run alone, frame loops only (browser launch
 * and page load are reported apart): min(capture fps, encode fps) is the optimistic
 * ceiling, reached only if capture and encode overlapped perfectly on free cores;
 * frames / (capture s + encode s) is the serial figure, for when they cannot overlap.
 * Both stages need the same cores, so a third figure divides the cores by the CPU time
 * per frame of the two stages (cores x 1000 / (capture + encode CPU ms per frame)): the
 * ceiling when every core does our work. It moves less than wall times when neighbours
 * are busy, but it does move: contention makes the same work cost more CPU time too.
 * vid's fps is the whole call (start-up, frames, join), so ratios are conservative.
 *
 * Resources are sampled every 200 ms from /proc (Linux), on a worker thread so the reads
 * never block the event loop that drives the browser and ffmpeg: this process's RSS
 * (`Deno.memoryUsage()`), and the PSS/RSS and CPU time of its child processes (Chromium,
 * ffmpeg), plus the CPU that other processes on the machine used meanwhile, since a busy
 * neighbour skews every figure.
 *
 * Run with `deno task bench`; options: `--seconds N` (default 10), `--width W --height H`
 * (default 1920x1080) for a quicker variant, `--fps N` (default 30), `--repeat N` (default
 * 1: run every stage N times, interleaved, and report each stage's median round; worth it
 * on a machine shared with other work), `--json`.
 *
 * @module
 */

import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { readComposition, renderComposition } from "../mod.ts";
import { parseFrameRate } from "../src/composition/frame_rate.ts";
import { closePage, navigate, openPage } from "../src/render/browser.ts";
import { createCapturer, seekFrame } from "../src/render/capture.ts";
import { type CapturePreference, launchForCapture } from "../src/render/capture_mode.ts";
import { chunkPlan } from "../src/render/chunk_plan.ts";
import { codecArgs, startEncoder } from "../src/render/encode.ts";
import { serveProject } from "../src/render/serve.ts";
import { requireFfmpeg, requireFfprobe } from "../src/render/system.ts";
import { runtimeScript } from "../src/runtime/page_runtime.ts";
import { describeHost, type HostInfo, hostLine } from "./host.ts";

const FIXTURE_DIR = fileURLToPath(new URL("./fixtures/bench10s/", import.meta.url));
const FORMAT = "mp4";
const QUALITY = "standard";
/** JPEG quality vid captures opaque output with (createCapturer's default). */
const JPEG_QUALITY = 80;
const SAMPLE_INTERVAL_MS = 200;
/** Linux's USER_HZ: the unit of CPU times in /proc. */
const CLOCK_TICKS = 100;
const MB = 1024 * 1024;

/** Command-line options of the benchmark. */
interface BenchOptions {
  /** Seconds of video. @default 10 */
  seconds: number;
  /** @default 1920 */
  width: number;
  /** @default 1080 */
  height: number;
  /** @default 30 */
  fps: number;
  /** Rounds of all stages; each stage reports its median round. @default 1 */
  repeat: number;
  /** Capture path of every stage. @default "auto" */
  capture: CapturePreference;
  /** Print one JSON object instead of tables. @default false */
  json: boolean;
}

/** CPU and memory of one group of child processes during a stage. */
interface GroupUsage {
  /** CPU seconds (user + system), from sampled /proc/<pid>/stat. */
  cpuSeconds: number;
  /** Highest sum of the group's PSS at one sample, in MB. */
  peakPssMb: number;
  /** Highest sum of the group's RSS at one sample, in MB (shared pages counted per process). */
  peakRssMb: number;
  /** Processes of the group seen during the stage. */
  processes: number;
  /** CPU seconds by process type (Chromium's `--type`, "browser" for the main process). */
  cpuByType: Record<string, number>;
}

/** What one stage cost besides time. */
interface StageResources {
  wallSeconds: number;
  /** Peak `Deno.memoryUsage().rss` of this process seen during the stage, in MB. */
  denoPeakRssMb: number;
  /** CPU seconds of this process (`process.cpuUsage()`), less the sampler's. */
  denoCpuSeconds: number;
  chromium: GroupUsage;
  ffmpeg: GroupUsage;
  /** Highest sum of PSS of all child processes at one sample, in MB. */
  childrenPeakPssMb: number;
  /** Average cores busy on the whole machine (/proc/stat). */
  machineBusyCores: number;
  /** Average cores busy outside this process and its children. */
  otherProcessesCores: number;
  samples: number;
  /**
   * CPU time of the sampler worker thread (/proc/thread-self/stat), in ms; taken out of
   * `denoCpuSeconds` and out of "other processes".
   */
  samplerMs: number;
}

/** The capture-only loop. */
interface CaptureResult {
  /** Capture path the browser was launched for. */
  mode: string;
  windows: number;
  frames: number;
  /** Launch with the capture-mode probe, in seconds. */
  launchSeconds: number;
  /** Opening the windows and loading the page, in seconds. */
  loadSeconds: number;
  /** The frame loop alone, in seconds. */
  loopSeconds: number;
  /** CPU of this process (less the sampler) and the browser during the frame loop. */
  loopCpuSeconds: number;
  fps: number;
  /** Mean `seekFrame` time per frame, in ms. */
  seekMs: number;
  /** Mean `capturer.capture()` time per frame, in ms. */
  captureMs: number;
  /** Frames where BeginFrame reported no damage and the previous image was reused. */
  reusedFrames: number;
  meanFrameKb: number;
  resources: StageResources;
}

/** The encode-only run. */
interface EncodeResult {
  frames: number;
  /** ffmpeg start to finished file, in seconds. */
  seconds: number;
  /** Until the last frame was accepted by ffmpeg's stdin, in seconds. */
  writeSeconds: number;
  /** CPU of ffmpeg, exact: this process's cutime + cstime once ffmpeg was reaped. */
  ffmpegCpuSeconds: number;
  fps: number;
  outputFrames: number;
  resources: StageResources;
}

/** One `renderComposition` call. */
interface RenderRun {
  /** What the call asked for: a count, or the SDK default. */
  requested: number | "default";
  /** Workers the render used (vid caps them at its chunk count). */
  workers: number;
  frames: number;
  /** The whole call, in seconds. */
  seconds: number;
  /** Frames per second of the whole call. */
  fps: number;
  /** Call to first frame done (options, browser launch, page load), in seconds. */
  startupSeconds: number;
  /** First frame done to last frame done, in seconds. */
  framesSeconds: number;
  /** Last frame done to the "joining" progress event (the encoders finishing), in seconds. */
  flushSeconds: number;
  /** "joining" to "done": concatenating the chunks into the output file, in seconds. */
  joinSeconds: number;
  /** "done" to return: closing the browser and the server, removing temp files, in seconds. */
  cleanupSeconds: number;
  captureMode: string;
  outputFrames: number;
  resources: StageResources;
}

/** The stages of one round. */
interface Round {
  renders: RenderRun[];
  capture: CaptureResult;
  encode: EncodeResult;
  captureParallel?: CaptureResult;
}

/** The item with the median value (the lower one of the middle two). */
function median<T>(items: T[], value: (item: T) => number): T {
  const sorted = [...items].sort((a, b) => value(a) - value(b));
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** Everything the benchmark measured. */
interface BenchReport {
  composition: { id: string; width: number; height: number; seconds: number; fps: number };
  frames: number;
  /** Capture path of each stage; they differ when BeginFrame failed its probe in some. */
  machine: HostInfo & { captureModes: Record<string, string> };
  encoder: { format: string; quality: string; args: string[]; frameFormat: string };
  /** Times every stage ran (`--repeat`); each stage below is its median round by fps. */
  rounds: number;
  fpsByRound: { stage: string; fps: number[] }[];
  capture: CaptureResult;
  captureParallel?: CaptureResult;
  encode: EncodeResult;
  renders: RenderRun[];
  limit: {
    /** min(capture fps, encode fps). */
    optimisticFps: number;
    /** frames / (capture loop s + encode s). */
    serialFps: number;
    /** CPU ms per frame of the capture loop (this process and the browser). */
    captureCpuMsPerFrame: number;
    /** CPU ms per frame of encode-only (ffmpeg and this process). */
    encodeCpuMsPerFrame: number;
    /** cores x 1000 / (capture + encode CPU ms per frame): all cores busy, none wasted. */
    cpuBoundFps: number;
  };
  ratios: {
    run: string;
    fps: number;
    vsOptimistic: number;
    vsSerial: number;
    vsCpuBound: number;
  }[];
  /** Lifetime peak RSS of this process (/proc/self/status VmHWM), in MB. */
  denoLifetimePeakRssMb?: number;
}

function captureOption(text: string): CapturePreference {
  if (text === "auto" || text === "beginframe" || text === "screenshot") return text;
  throw new Error(`--capture must be auto, beginframe or screenshot, got ${text}`);
}

function parseOptions(args: string[]): BenchOptions {
  const { values } = parseArgs({
    args,
    options: {
      seconds: { type: "string", default: "10" },
      width: { type: "string", default: "1920" },
      height: { type: "string", default: "1080" },
      fps: { type: "string", default: "30" },
      repeat: { type: "string", default: "1" },
      capture: { type: "string", default: "auto" },
      json: { type: "boolean", default: false },
    },
    strict: true,
  });
  const positive = (name: string, text: string, integer: boolean): number => {
    const value = Number(text);
    if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value))) {
      throw new Error(
        `--${name} must be a positive ${integer ? "integer" : "number"}, got ${text}`,
      );
    }
    return value;
  };
  return {
    seconds: positive("seconds", values.seconds, false),
    width: positive("width", values.width, true),
    height: positive("height", values.height, true),
    fps: positive("fps", values.fps, true),
    repeat: positive("repeat", values.repeat, true),
    capture: captureOption(values.capture),
    json: values.json,
  };
}

// --- resource sampling (/proc) ---
//
// /proc is read on a worker thread (this same module, started with SAMPLER_WORKER as its
// name) so that the reads never block the event loop that drives Chromium and ffmpeg.
// smaps_rollup (PSS) costs about 1.5 ms per Chromium process, so PSS is read every
// PSS_EVERY samples; new processes (stat of pids not seen before) and the stat and status
// of children at every sample.

const SAMPLER_WORKER = "vid-bench-sampler";
const PSS_EVERY = 5;

interface ProcStat {
  pid: number;
  ppid: number;
  comm: string;
  /** utime + stime. */
  ticks: number;
  /** cutime + cstime: CPU of the children this process has reaped. */
  reapedTicks: number;
}

function readProcStat(pid: number | "self" | "thread-self"): ProcStat | undefined {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // comm is in parentheses and may contain spaces: parse after the last ")".
    const close = text.lastIndexOf(")");
    const fields = text.slice(close + 2).split(" ");
    return {
      pid: Number(text.slice(0, text.indexOf(" "))),
      comm: text.slice(text.indexOf("(") + 1, close),
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      reapedTicks: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return undefined;
  }
}

function readKb(path: string, key: string): number {
  try {
    const match = Deno.readTextFileSync(path).match(new RegExp(`^${key}:\\s+(\\d+) kB`, "m"));
    return match ? Number(match[1]) : 0;
  } catch {
    return 0;
  }
}

/** Busy ticks of the whole machine (everything but idle and iowait). */
function machineBusyTicks(): number {
  try {
    const line = Deno.readTextFileSync("/proc/stat").split("\n")[0];
    const [user, nice, system, _idle, _iowait, irq, softirq, steal] = line.trim().split(/\s+/)
      .slice(1).map(Number);
    return user + nice + system + irq + softirq + (steal || 0);
  } catch {
    return 0;
  }
}

/** CPU ticks of the calling thread: the sampler worker measures its own cost with it. */
function threadTicks(): number {
  return readProcStat("thread-self")?.ticks ?? 0;
}

type Group = "chromium" | "ffmpeg" | "other";
const GROUPS: readonly Group[] = ["chromium", "ffmpeg", "other"];

function groupOf(comm: string): Group {
  if (/chrom|headless/i.test(comm)) return "chromium";
  if (/ffmpeg/i.test(comm)) return "ffmpeg";
  return "other";
}

/**
 * A Chromium process's role: its `--type` flag (renderer, gpu-process, ...) or "browser".
 * Chromium rewrites its command line into one space-separated string, hence the regex.
 */
function chromiumType(pid: number): string {
  try {
    const match = Deno.readTextFileSync(`/proc/${pid}/cmdline`).match(/--type=([\w-]+)/);
    return match ? match[1] : "browser";
  } catch {
    return "unknown";
  }
}

interface Tracked {
  group: Group;
  type: string;
  baseTicks: number;
  lastTicks: number;
  alive: boolean;
  /** Last PSS read, in kB; refreshed every PSS_EVERY samples. */
  pssKb: number;
}

/** What the sampler worker reports for a stage. */
interface ChildrenUsage {
  chromium: GroupUsage;
  ffmpeg: GroupUsage;
  childrenPeakPssMb: number;
  childrenCpuSeconds: number;
  machineBusySeconds: number;
  samples: number;
  samplerMs: number;
}

/**
 * Samples the descendants of `root`. A child's CPU time is its last sampled value, so a
 * process that exits loses up to one interval of CPU, and one that lives less than an
 * interval may be missed.
 */
class ChildrenSampler {
  #root: number;
  #tracked = new Map<number, Tracked>();
  /** Every process on the machine by pid, read once (a pid's parent does not change). */
  #known = new Map<number, ProcStat>();
  #machineStart = machineBusyTicks();
  #peaks = { chromium: { pss: 0, rss: 0 }, ffmpeg: { pss: 0, rss: 0 }, other: { pss: 0, rss: 0 } };
  #childrenPeakPss = 0;
  #samples = 0;
  #threadStart = threadTicks();

  constructor(root: number) {
    this.#root = root;
    this.sample(true);
  }

  /** Finds descendants not tracked yet; processes alive at the start count from then. */
  #scan(first: boolean): void {
    const listed = new Set<number>();
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      const pid = Number(entry.name);
      listed.add(pid);
      if (this.#known.has(pid)) continue;
      const stat = readProcStat(pid);
      if (stat) this.#known.set(pid, stat);
    }
    for (const pid of this.#known.keys()) if (!listed.has(pid)) this.#known.delete(pid);
    const children = new Map<number, ProcStat[]>();
    for (const stat of this.#known.values()) {
      const list = children.get(stat.ppid) ?? [];
      list.push(stat);
      children.set(stat.ppid, list);
    }
    const queue = [...(children.get(this.#root) ?? [])];
    while (queue.length > 0) {
      const stat = queue.shift()!;
      queue.push(...(children.get(stat.pid) ?? []));
      if (this.#tracked.has(stat.pid)) continue;
      const current = readProcStat(stat.pid);
      if (!current) continue;
      const group = groupOf(current.comm);
      this.#tracked.set(stat.pid, {
        group,
        type: group === "chromium" ? chromiumType(stat.pid) : group,
        baseTicks: first ? current.ticks : 0,
        lastTicks: current.ticks,
        alive: true,
        pssKb: readKb(`/proc/${stat.pid}/smaps_rollup`, "Pss"),
      });
    }
  }

  sample(first = false, readPss = false): void {
    const pss = first || readPss || this.#samples % PSS_EVERY === 0;
    this.#samples++;
    this.#scan(first);
    const sums = {
      chromium: { pss: 0, rss: 0 },
      ffmpeg: { pss: 0, rss: 0 },
      other: { pss: 0, rss: 0 },
    };
    for (const [pid, tracked] of this.#tracked) {
      if (!tracked.alive) continue;
      const stat = readProcStat(pid);
      if (!stat) {
        tracked.alive = false;
        continue;
      }
      tracked.lastTicks = Math.max(tracked.lastTicks, stat.ticks);
      // A process forked by a zygote carries the zygote's command line until it is set up.
      if (tracked.type === "zygote") tracked.type = chromiumType(pid);
      sums[tracked.group].rss += readKb(`/proc/${pid}/status`, "VmRSS");
      if (pss) tracked.pssKb = readKb(`/proc/${pid}/smaps_rollup`, "Pss");
      sums[tracked.group].pss += tracked.pssKb;
    }
    let total = 0;
    for (const group of GROUPS) {
      this.#peaks[group].rss = Math.max(this.#peaks[group].rss, sums[group].rss);
      this.#peaks[group].pss = Math.max(this.#peaks[group].pss, sums[group].pss);
      total += sums[group].pss;
    }
    this.#childrenPeakPss = Math.max(this.#childrenPeakPss, total);
  }

  /** CPU seconds of the children so far, and of the sampler thread in ms. */
  cpuNow(): { childrenCpuSeconds: number; samplerMs: number } {
    this.sample();
    let ticks = 0;
    for (const tracked of this.#tracked.values()) ticks += tracked.lastTicks - tracked.baseTicks;
    return {
      childrenCpuSeconds: ticks / CLOCK_TICKS,
      samplerMs: (threadTicks() - this.#threadStart) * 1000 / CLOCK_TICKS,
    };
  }

  finish(): ChildrenUsage {
    this.sample(false, true);
    const usage = (group: Group): GroupUsage => {
      const result: GroupUsage = {
        cpuSeconds: 0,
        peakPssMb: this.#peaks[group].pss / 1024,
        peakRssMb: this.#peaks[group].rss / 1024,
        processes: 0,
        cpuByType: {},
      };
      for (const tracked of this.#tracked.values()) {
        if (tracked.group !== group) continue;
        const seconds = (tracked.lastTicks - tracked.baseTicks) / CLOCK_TICKS;
        result.cpuSeconds += seconds;
        result.processes++;
        result.cpuByType[tracked.type] = (result.cpuByType[tracked.type] ?? 0) + seconds;
      }
      return result;
    };
    const chromium = usage("chromium");
    const ffmpeg = usage("ffmpeg");
    return {
      chromium,
      ffmpeg,
      childrenPeakPssMb: this.#childrenPeakPss / 1024,
      childrenCpuSeconds: chromium.cpuSeconds + ffmpeg.cpuSeconds + usage("other").cpuSeconds,
      machineBusySeconds: (machineBusyTicks() - this.#machineStart) / CLOCK_TICKS,
      samples: this.#samples,
      samplerMs: (threadTicks() - this.#threadStart) * 1000 / CLOCK_TICKS,
    };
  }
}

type SamplerRequest = { type: "start"; root: number } | { type: "mark" } | { type: "stop" };
type SamplerReply =
  | { type: "started" }
  | { type: "mark"; childrenCpuSeconds: number; samplerMs: number }
  | { type: "stopped"; usage: ChildrenUsage };

/** The worker side: samples between "start" and "stop"; "mark" reports CPU so far. */
function runSamplerWorker(): void {
  const scope = globalThis as unknown as {
    onmessage: (event: MessageEvent<SamplerRequest>) => void;
    postMessage(message: SamplerReply): void;
  };
  let sampler: ChildrenSampler | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  scope.onmessage = (event) => {
    if (event.data.type === "start") {
      sampler = new ChildrenSampler(event.data.root);
      timer = setInterval(() => sampler?.sample(), SAMPLE_INTERVAL_MS);
      scope.postMessage({ type: "started" });
    } else if (event.data.type === "mark" && sampler) {
      scope.postMessage({ type: "mark", ...sampler.cpuNow() });
    } else if (sampler) {
      clearInterval(timer);
      scope.postMessage({ type: "stopped", usage: sampler.finish() });
      sampler = undefined;
    }
  };
}

/** The main side: this process's RSS and CPU, and the worker's figures for the children. */
class ResourceSampler {
  #worker?: Worker;
  #timer?: ReturnType<typeof setInterval>;
  #started = 0;
  #cpuStart = process.cpuUsage();
  #denoPeak = 0;
  readonly #proc = readProcStat("self") !== undefined;

  #request(message: SamplerRequest): Promise<SamplerReply> {
    const worker = this.#worker!;
    return new Promise((resolve, reject) => {
      worker.onmessage = (event: MessageEvent<SamplerReply>) => resolve(event.data);
      worker.onerror = (event) => {
        event.preventDefault();
        reject(new Error(`resource sampler: ${event.message}`));
      };
      worker.postMessage(message);
    });
  }

  async start(): Promise<void> {
    if (this.#proc) {
      this.#worker = new Worker(import.meta.url, { type: "module", name: SAMPLER_WORKER });
      await this.#request({ type: "start", root: Deno.pid });
    }
    this.#started = performance.now();
    this.#cpuStart = process.cpuUsage();
    this.#denoPeak = Deno.memoryUsage().rss;
    this.#timer = setInterval(() => {
      this.#denoPeak = Math.max(this.#denoPeak, Deno.memoryUsage().rss);
    }, SAMPLE_INTERVAL_MS);
  }

  /** CPU seconds used by this process (less the sampler) and its children since start. */
  async cpuSeconds(): Promise<number> {
    const cpu = process.cpuUsage(this.#cpuStart);
    const deno = (cpu.user + cpu.system) / 1e6;
    if (!this.#worker) return deno;
    const reply = await this.#request({ type: "mark" });
    if (reply.type !== "mark") return Number.NaN;
    return deno - reply.samplerMs / 1000 + reply.childrenCpuSeconds;
  }

  async stop(): Promise<StageResources> {
    clearInterval(this.#timer);
    const wallSeconds = (performance.now() - this.#started) / 1000;
    const cpu = process.cpuUsage(this.#cpuStart);
    this.#denoPeak = Math.max(this.#denoPeak, Deno.memoryUsage().rss);
    let children: ChildrenUsage | undefined;
    if (this.#worker) {
      try {
        const reply = await this.#request({ type: "stop" });
        if (reply.type === "stopped") children = reply.usage;
      } finally {
        this.#worker.terminate();
      }
    }
    const empty: GroupUsage = {
      cpuSeconds: Number.NaN,
      peakPssMb: Number.NaN,
      peakRssMb: Number.NaN,
      processes: 0,
      cpuByType: {},
    };
    const samplerMs = children?.samplerMs ?? 0;
    // process.cpuUsage() counts every thread of this process, the sampler's too.
    const denoCpuSeconds = Math.max(0, (cpu.user + cpu.system) / 1e6 - samplerMs / 1000);
    const ours = denoCpuSeconds + samplerMs / 1000 + (children?.childrenCpuSeconds ?? 0);
    return {
      wallSeconds,
      denoPeakRssMb: this.#denoPeak / MB,
      denoCpuSeconds,
      chromium: children?.chromium ?? empty,
      ffmpeg: children?.ffmpeg ?? empty,
      childrenPeakPssMb: children?.childrenPeakPssMb ?? Number.NaN,
      machineBusyCores: children ? children.machineBusySeconds / wallSeconds : Number.NaN,
      otherProcessesCores: children
        ? Math.max(0, children.machineBusySeconds - ours) / wallSeconds
        : Number.NaN,
      samples: children?.samples ?? 0,
      samplerMs,
    };
  }
}

async function measured<T>(
  run: (sampler: ResourceSampler) => Promise<T>,
): Promise<[T, StageResources]> {
  const sampler = new ResourceSampler();
  await sampler.start();
  try {
    const result = await run(sampler);
    return [result, await sampler.stop()];
  } catch (error) {
    // Stop on failure too, so that the worker does not keep the process alive.
    await sampler.stop().catch(() => undefined);
    throw error;
  }
}

// --- stages ---

/** Copies the fixture with other root attributes when the size or length differ. */
async function prepareComposition(options: BenchOptions, work: string): Promise<string> {
  if (options.width === 1920 && options.height === 1080 && options.seconds === 10) {
    return FIXTURE_DIR;
  }
  const dir = join(work, "bench-variant");
  await mkdir(dir, { recursive: true });
  const html = (await readFile(join(FIXTURE_DIR, "index.html"), "utf8"))
    .replace('data-width="1920"', `data-width="${options.width}"`)
    .replace('data-height="1080"', `data-height="${options.height}"`)
    .replace('data-duration="10"', `data-duration="${options.seconds}"`);
  await writeFile(join(dir, "index.html"), html);
  return dir;
}

interface CaptureJob {
  dir: string;
  width: number;
  height: number;
  fps: number;
  frames: number;
  windows: number;
  capture: CapturePreference;
  log: (message: string) => void;
}

/**
 * The capture-only loop: what vid's chunk renderer does per frame minus the encoder,
 * the frames split into `windows` contiguous ranges, one window each.
 */
async function captureOnly(job: CaptureJob): Promise<[CaptureResult, Uint8Array[]]> {
  const images: Uint8Array[] = new Array(job.frames);
  let launchSeconds = 0;
  let loadSeconds = 0;
  let mode = "";
  let loopSeconds = 0;
  let loopCpuSeconds = 0;
  let seekMs = 0;
  let captureMs = 0;
  let reusedFrames = 0;
  const [, resources] = await measured(async (sampler) => {
    const server = await serveProject(job.dir);
    const launched = performance.now();
    const browser = await launchForCapture(
      job.capture,
      (reason) => job.log(`BeginFrame unavailable, screenshots instead: ${reason}`),
    );
    mode = browser.mode;
    try {
      const loading = performance.now();
      launchSeconds = (loading - launched) / 1000;
      const initScript = runtimeScript({
        variables: {},
        seed: 1,
        epochMs: Math.floor(Date.now() / 1000) * 1000,
        fps: job.fps,
        readyTimeoutMs: 30000,
      });
      const chunks = chunkPlan({
        from: 0,
        frames: job.frames,
        targetChunkFrames: Math.ceil(job.frames / job.windows),
        maxParallelChunks: job.windows,
      });
      const pages = await Promise.all(chunks.map(async () => {
        const page = await openPage(browser, {
          width: job.width,
          height: job.height,
          initScript,
        });
        await navigate(page, server.url + "index.html");
        return page;
      }));
      const cpuBefore = await sampler.cpuSeconds();
      const looping = performance.now();
      loadSeconds = (looping - loading) / 1000;
      await Promise.all(chunks.map(async (chunk, i) => {
        const page = pages[i];
        const capturer = createCapturer(page, {
          mode: browser.mode,
          format: "jpeg",
          quality: JPEG_QUALITY,
          fps: job.fps,
        });
        let previous: Uint8Array | undefined;
        for (let frame = chunk.from; frame <= chunk.to; frame++) {
          const t0 = performance.now();
          await seekFrame(page, frame);
          const t1 = performance.now();
          const image = await capturer.capture();
          captureMs += performance.now() - t1;
          seekMs += t1 - t0;
          // The capturer hands back the very same buffer when BeginFrame saw no damage.
          if (image === previous) reusedFrames++;
          previous = image;
          images[frame] = image;
        }
      }));
      loopSeconds = (performance.now() - looping) / 1000;
      loopCpuSeconds = (await sampler.cpuSeconds()) - cpuBefore;
      await Promise.all(pages.map(closePage));
    } finally {
      await browser.close();
      await server.close();
    }
  });
  const bytes = images.reduce((sum, image) => sum + image.byteLength, 0);
  return [{
    mode,
    windows: job.windows,
    frames: job.frames,
    launchSeconds,
    loadSeconds,
    loopSeconds,
    loopCpuSeconds,
    fps: job.frames / loopSeconds,
    seekMs: seekMs / job.frames,
    captureMs: captureMs / job.frames,
    reusedFrames,
    meanFrameKb: bytes / job.frames / 1024,
    resources,
  }, images];
}

async function countFrames(ffprobe: string, file: string): Promise<number> {
  const { stdout } = await new Deno.Command(ffprobe, {
    args: [
      "-v",
      "error",
      "-select_streams",
      "v:0",
      "-count_packets",
      "-show_entries",
      "stream=nb_read_packets",
      "-of",
      "csv=p=0",
      file,
    ],
    stdout: "piped",
    stderr: "null",
  }).output();
  return Number(new TextDecoder().decode(stdout).trim()) || 0;
}

/** The captured JPEGs through vid's encoder, nothing else running. */
async function encodeOnly(
  images: Uint8Array[],
  job: { width: number; height: number; fps: number; output: string; ffmpeg: string },
): Promise<Omit<EncodeResult, "outputFrames">> {
  let seconds = 0;
  let writeSeconds = 0;
  let ffmpegCpuSeconds = Number.NaN;
  const [, resources] = await measured(async () => {
    // ffmpeg is the only child process reaped during this stage.
    const reapedBefore = readProcStat("self")?.reapedTicks;
    const started = performance.now();
    const encoder = startEncoder({
      ffmpeg: job.ffmpeg,
      output: job.output,
      frameRate: parseFrameRate(job.fps),
      format: FORMAT,
      quality: QUALITY,
      width: job.width,
      height: job.height,
      frameFormat: "jpeg",
    });
    for (const image of images) await encoder.write(image);
    writeSeconds = (performance.now() - started) / 1000;
    await encoder.finish();
    seconds = (performance.now() - started) / 1000;
    const reapedAfter = readProcStat("self")?.reapedTicks;
    if (reapedBefore !== undefined && reapedAfter !== undefined) {
      ffmpegCpuSeconds = (reapedAfter - reapedBefore) / CLOCK_TICKS;
    }
  });
  return {
    frames: images.length,
    seconds,
    writeSeconds,
    ffmpegCpuSeconds,
    fps: images.length / seconds,
    resources,
  };
}

async function renderRun(
  dir: string,
  output: string,
  fps: number,
  requested: number | "default",
  capture: CapturePreference,
): Promise<Omit<RenderRun, "outputFrames">> {
  let firstFrame = 0;
  let lastFrame = 0;
  let joining = 0;
  let done = 0;
  let called = 0;
  let returned = 0;
  const [result, resources] = await measured(async () => {
    called = performance.now();
    const result = await renderComposition({
      target: dir,
      output,
      fps,
      format: FORMAT,
      quality: QUALITY,
      capture,
      workers: requested === "default" ? undefined : requested,
      onProgress: (progress) => {
        const now = performance.now();
        if (progress.stage === "joining") joining = now;
        if (progress.stage === "done") done = now;
        if (progress.framesDone === 0 || progress.stage !== "rendering") return;
        if (firstFrame === 0) firstFrame = now;
        lastFrame = now;
      },
    });
    returned = performance.now();
    return result;
  });
  const seconds = (returned - called) / 1000;
  return {
    requested,
    workers: result.workers,
    frames: result.frames,
    seconds,
    fps: result.frames / seconds,
    startupSeconds: (firstFrame - called) / 1000,
    framesSeconds: (lastFrame - firstFrame) / 1000,
    flushSeconds: (joining - lastFrame) / 1000,
    joinSeconds: (done - joining) / 1000,
    cleanupSeconds: (returned - done) / 1000,
    captureMode: result.captureMode,
    resources,
  };
}

// --- report ---

function runLabel(run: RenderRun): string {
  return run.requested === "default"
    ? `default workers (${run.workers})`
    : `workers=${run.requested}${run.workers !== run.requested ? ` (${run.workers} used)` : ""}`;
}

/**
 * The per-stage tables of the report: peak memory with the machine's load, and CPU time
 * per frame by process.
 */
function resourceTables(stages: [string, StageResources, number][]): string[] {
  const lines: string[] = [];
  const memoryRows = [[
    "stage",
    "deno RSS",
    "chromium PSS (RSS)",
    "ffmpeg PSS (RSS)",
    "children PSS",
    "cores busy: all / other processes",
  ]];
  for (const [name, r] of stages) {
    memoryRows.push([
      name,
      `${fixed(r.denoPeakRssMb, 0)} MB`,
      `${fixed(r.chromium.peakPssMb, 0)} (${fixed(r.chromium.peakRssMb, 0)}) MB`,
      `${fixed(r.ffmpeg.peakPssMb, 0)} (${fixed(r.ffmpeg.peakRssMb, 0)}) MB`,
      `${fixed(r.childrenPeakPssMb, 0)} MB`,
      `${fixed(r.machineBusyCores, 2)} / ${fixed(r.otherProcessesCores, 2)}`,
    ]);
  }
  lines.push(
    `peak memory per stage (from /proc: RSS every ${SAMPLE_INTERVAL_MS} ms, each process's ` +
      `PSS when it appears and every ${SAMPLE_INTERVAL_MS * PSS_EVERY} ms; PSS splits shared ` +
      "pages between processes, RSS counts them in each) and machine load:",
    table(memoryRows, [false, true, true, true, true, true]),
    "",
  );
  const perFrame = (seconds: number, frames: number) => fixed((seconds * 1000) / frames, 0);
  const cpuRows = [[
    "stage",
    "deno",
    "chromium browser",
    "renderer",
    "gpu-process",
    "other chromium",
    "ffmpeg",
    "total",
  ]];
  for (const [name, r, frames] of stages) {
    const byType = r.chromium.cpuByType;
    const named = (byType.browser ?? 0) + (byType.renderer ?? 0) + (byType["gpu-process"] ?? 0);
    cpuRows.push([
      name,
      perFrame(r.denoCpuSeconds, frames),
      perFrame(byType.browser ?? 0, frames),
      perFrame(byType.renderer ?? 0, frames),
      perFrame(byType["gpu-process"] ?? 0, frames),
      perFrame(r.chromium.cpuSeconds - named, frames),
      perFrame(r.ffmpeg.cpuSeconds, frames),
      fixed(cpuMsPerFrame(r, frames), 0),
    ]);
  }
  const samplerMs = stages.reduce((sum, [, r]) => sum + r.samplerMs, 0);
  const wall = stages.reduce((sum, [, r]) => sum + r.wallSeconds, 0);
  lines.push(
    "CPU time per frame in ms, by process (sampled; whole stage, start-up included; " +
      `deno's excludes the sampler thread, which used ${fixed(samplerMs / 1000, 2)} s, ` +
      `${fixed(samplerMs / 10 / wall)}% of one core):`,
    table(cpuRows, [false, true, true, true, true, true, true, true]),
  );
  return lines;
}

/** CPU milliseconds per frame of this process and its children during a stage. */
function cpuMsPerFrame(r: StageResources, frames: number): number {
  const seconds = r.denoCpuSeconds + r.chromium.cpuSeconds + r.ffmpeg.cpuSeconds;
  return (seconds * 1000) / frames;
}

function fixed(value: number, digits = 1): string {
  return Number.isFinite(value) ? value.toFixed(digits) : "-";
}

function table(rows: string[][], rightAligned: boolean[]): string {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => (r[c] ?? "").length)));
  return rows.map((row) =>
    row.map((cell, c) => rightAligned[c] ? cell.padStart(widths[c]) : cell.padEnd(widths[c])).join(
      "  ",
    ).trimEnd()
  ).join("\n");
}

function printReport(report: BenchReport): void {
  const { composition: comp, capture, encode, renders, limit } = report;
  const modes = [
    ...new Set(Object.values(report.machine.captureModes).flatMap((m) => m.split("/"))),
  ];
  const lines: string[] = [];
  lines.push(
    `vid render benchmark: ${comp.id} ${comp.width}x${comp.height}, ${comp.seconds} s at ` +
      `${comp.fps} fps = ${report.frames} frames`,
    `${hostLine(report.machine)}; capture mode ` +
      `${modes.join("/")}, JPEG q${JPEG_QUALITY}; encoder ${report.encoder.format}/` +
      `${report.encoder.quality} (${report.encoder.args.join(" ")})`,
  );
  if (modes.length > 1) {
    lines.push(
      "warning: the stages did not all capture the same way (BeginFrame failed its probe in " +
        "some), so they do not compare: " +
        Object.entries(report.machine.captureModes).map(([stage, mode]) => `${stage}: ${mode}`)
          .join("; "),
    );
  }
  lines.push("");
  const captureRow = (name: string, c: CaptureResult): string[] => [
    name,
    fixed(c.loopSeconds, 2),
    fixed(c.fps),
    fixed(1000 / c.fps),
    fixed(c.resources.otherProcessesCores, 2),
    `launch ${fixed(c.launchSeconds, 2)} s + load ${fixed(c.loadSeconds, 2)} s before the loop;` +
    ` per frame: seek ${fixed(c.seekMs)} ms + capture ${fixed(c.captureMs)} ms` +
    (c.windows > 1 ? " (per window, overlapping)" : "") +
    `, ${fixed((c.loopCpuSeconds * 1000) / c.frames, 0)} CPU ms` +
    `; ${c.reusedFrames} reused; ${fixed(c.meanFrameKb, 0)} KB/frame`,
  ];
  const rows: string[][] = [
    ["stage", "seconds", "fps", "ms/frame", "neighbours", "notes"],
    captureRow("capture-only, 1 window", capture),
    [
      "encode-only",
      fixed(encode.seconds, 2),
      fixed(encode.fps),
      fixed(1000 / encode.fps),
      fixed(encode.resources.otherProcessesCores, 2),
      `ffmpeg start to finished file (last frame taken at ${fixed(encode.writeSeconds, 2)} s);` +
      ` ffmpeg ${fixed((encode.ffmpegCpuSeconds * 1000) / encode.frames, 0)} CPU ms/frame;` +
      ` ${encode.outputFrames} frames in the file`,
    ],
  ];
  if (report.captureParallel) {
    rows.push(
      captureRow(`capture-only, ${report.captureParallel.windows} windows`, report.captureParallel),
    );
  }
  for (const run of renders) {
    rows.push([
      `vid renderComposition, ${runLabel(run)}`,
      fixed(run.seconds, 2),
      fixed(run.fps),
      fixed(1000 / run.fps),
      fixed(run.resources.otherProcessesCores, 2),
      `whole call: start-up ${fixed(run.startupSeconds, 2)} s + frames ` +
      `${fixed(run.framesSeconds, 2)} s (${fixed((run.frames - 1) / run.framesSeconds)} fps)` +
      ` + encoder flush ${fixed(run.flushSeconds, 2)} s + join ${fixed(run.joinSeconds, 2)} s` +
      ` + clean-up ${fixed(run.cleanupSeconds, 2)} s; ${run.outputFrames} frames in the file`,
    ]);
  }
  lines.push(
    table(rows, [false, true, true, true, true, false]),
    "(neighbours: cores that other processes on the machine kept busy during the stage, " +
      "on average)",
  );
  if (report.rounds > 1) {
    lines.push(`${report.rounds} rounds; each row is its stage's median round. fps by round:`);
    for (const { stage, fps } of report.fpsByRound) {
      lines.push(`  ${stage}: ${fps.map((f) => fixed(f)).join(", ")}`);
    }
  }
  lines.push("");
  lines.push(
    "raw limit of this machine for this page (frame loops of the stages run alone):",
    `  optimistic  min(capture ${fixed(capture.fps)}, encode ${fixed(encode.fps)})` +
      `  = ${fixed(limit.optimisticFps)} fps  (only if capture and encode overlapped perfectly)`,
    `  serial      ${report.frames} / (${fixed(capture.loopSeconds, 2)} s + ` +
      `${fixed(encode.seconds, 2)} s)  = ${fixed(limit.serialFps)} fps`,
    `  CPU-bound   ${report.machine.cores} cores x 1000 / (capture ` +
      `${fixed(limit.captureCpuMsPerFrame, 0)} + encode ${fixed(limit.encodeCpuMsPerFrame, 0)}` +
      ` CPU ms/frame)  = ${fixed(limit.cpuBoundFps)} fps  (every core busy with our work)`,
    "",
  );
  const ratioRows = [[
    "vid renderComposition",
    "fps",
    "/ optimistic",
    "/ serial",
    "/ CPU-bound",
  ]];
  for (const ratio of report.ratios) {
    ratioRows.push([
      ratio.run,
      fixed(ratio.fps),
      fixed(ratio.vsOptimistic, 2),
      fixed(ratio.vsSerial, 2),
      fixed(ratio.vsCpuBound, 2),
    ]);
  }
  lines.push(table(ratioRows, [false, true, true, true, true]), "");
  const stages: [string, StageResources, number][] = [
    ["capture-only, 1 window", capture.resources, capture.frames],
    ["encode-only", encode.resources, encode.frames],
  ];
  if (report.captureParallel) {
    const parallel = report.captureParallel;
    stages.push([`capture-only, ${parallel.windows} windows`, parallel.resources, parallel.frames]);
  }
  for (const run of renders) stages.push([`vid, ${runLabel(run)}`, run.resources, run.frames]);
  lines.push(...resourceTables(stages));
  if (report.denoLifetimePeakRssMb !== undefined) {
    lines.push(
      `deno process lifetime peak RSS (VmHWM): ${fixed(report.denoLifetimePeakRssMb, 0)} MB` +
        " (includes the captured frames held in memory for encode-only)",
    );
  }
  const busiest = Math.max(
    capture.resources.otherProcessesCores,
    encode.resources.otherProcessesCores,
    ...renders.map((r) => r.resources.otherProcessesCores),
  );
  if (busiest > 0.15) {
    lines.push(
      `warning: other processes kept up to ${fixed(busiest, 2)} cores busy during a stage; ` +
        "figures are skewed by the neighbours",
    );
  }
  console.log(lines.join("\n"));
}

// --- main ---

async function main(): Promise<void> {
  const options = parseOptions(Deno.args);
  const log = (message: string) => console.error(`bench: ${message}`);
  const work = await mkdtemp(join(tmpdir(), "vid-bench-"));
  try {
    const dir = await prepareComposition(options, work);
    const composition = await readComposition(dir);
    const frames = Math.max(1, Math.round(composition.duration * options.fps));
    const ffmpeg = await requireFfmpeg();
    const ffprobe = await requireFfprobe();
    const job = {
      dir,
      capture: options.capture,
      log,
      width: composition.width,
      height: composition.height,
      fps: options.fps,
      frames,
    };

    log("warming up (one browser launch, not measured)");
    const warm = await launchForCapture(options.capture);
    await warm.close();

    const rounds: Round[] = [];
    for (let round = 1; round <= options.repeat; round++) {
      const tag = options.repeat > 1 ? ` (round ${round} of ${options.repeat})` : "";
      // The vid renders run first so that their memory figures are not inflated by the
      // frames the capture-only stage keeps in this process.
      const renders: RenderRun[] = [];
      for (const requested of ["default", 1] as const) {
        // vid caps workers at its chunk count: a default run that used one worker was the
        // workers=1 run already.
        if (requested === 1 && renders[0]?.workers === 1) break;
        log(`vid renderComposition, workers=${requested}${tag}`);
        const output = join(work, `vid-workers-${requested}.mp4`);
        const run = await renderRun(dir, output, options.fps, requested, options.capture);
        renders.push({ ...run, outputFrames: await countFrames(ffprobe, output) });
        await rm(output, { force: true });
      }

      log(`capture-only, 1 window${tag}`);
      const [capture, images] = await captureOnly({ ...job, windows: 1 });
      log(`encode-only${tag}`);
      const encodeOutput = join(work, "encode-only.mp4");
      const encodeRun = await encodeOnly(images, { ...job, output: encodeOutput, ffmpeg });
      const encode = { ...encodeRun, outputFrames: await countFrames(ffprobe, encodeOutput) };
      images.length = 0;
      let captureParallel: CaptureResult | undefined;
      const parallel = renders[0].workers;
      if (parallel > 1) {
        log(`capture-only, ${parallel} windows (context for the parallel render)${tag}`);
        [captureParallel] = await captureOnly({ ...job, windows: parallel });
      }
      rounds.push({ renders, capture, encode, captureParallel });
    }

    // With several rounds, each stage reports its median round (by fps).
    const capture = median(rounds.map((r) => r.capture), (c) => c.fps);
    const encode = median(rounds.map((r) => r.encode), (e) => e.fps);
    const parallelRounds = rounds.flatMap((r) => r.captureParallel ? [r.captureParallel] : []);
    const captureParallel = parallelRounds.length > 0
      ? median(parallelRounds, (c) => c.fps)
      : undefined;
    const renders = rounds[0].renders.map((_, i) =>
      median(rounds.map((r) => r.renders[i]), (run) => run.fps)
    );
    const modes = (list: { mode: string }[]) => [...new Set(list.map((c) => c.mode))].join("/");
    const captureModes: Record<string, string> = {
      "capture-only, 1 window": modes(rounds.map((r) => r.capture)),
      ...(captureParallel
        ? { [`capture-only, ${captureParallel.windows} windows`]: modes(parallelRounds) }
        : {}),
      ...Object.fromEntries(renders.map((run, i) => [
        `vid renderComposition, ${runLabel(run)}`,
        modes(rounds.map((r) => ({ mode: r.renders[i].captureMode }))),
      ])),
    };
    const fpsByRound = [
      { stage: "capture-only, 1 window", fps: rounds.map((r) => r.capture.fps) },
      { stage: "encode-only", fps: rounds.map((r) => r.encode.fps) },
      ...(captureParallel
        ? [{
          stage: `capture-only, ${captureParallel.windows} windows`,
          fps: parallelRounds.map((c) => c.fps),
        }]
        : []),
      ...renders.map((run, i) => ({
        stage: `vid renderComposition, ${runLabel(run)}`,
        fps: rounds.map((r) => r.renders[i].fps),
      })),
    ];

    const optimisticFps = Math.min(capture.fps, encode.fps);
    const serialFps = frames / (capture.loopSeconds + encode.seconds);
    const cores = availableParallelism();
    const captureCpuMsPerFrame = (capture.loopCpuSeconds * 1000) / frames;
    const encodeCpuMsPerFrame =
      ((encode.ffmpegCpuSeconds + encode.resources.denoCpuSeconds) * 1000) / frames;
    const cpuBoundFps = (cores * 1000) / (captureCpuMsPerFrame + encodeCpuMsPerFrame);
    const hwm = readKb("/proc/self/status", "VmHWM");
    const report: BenchReport = {
      composition: {
        id: composition.id,
        width: composition.width,
        height: composition.height,
        seconds: composition.duration,
        fps: options.fps,
      },
      frames,
      machine: { ...await describeHost(), captureModes },
      encoder: {
        format: FORMAT,
        quality: QUALITY,
        args: codecArgs(FORMAT, QUALITY),
        frameFormat: `jpeg q${JPEG_QUALITY}`,
      },
      rounds: options.repeat,
      fpsByRound,
      capture,
      captureParallel,
      encode,
      renders,
      limit: {
        optimisticFps,
        serialFps,
        captureCpuMsPerFrame,
        encodeCpuMsPerFrame,
        cpuBoundFps,
      },
      ratios: renders.map((run) => ({
        run: runLabel(run),
        fps: run.fps,
        vsOptimistic: run.fps / optimisticFps,
        vsSerial: run.fps / serialFps,
        vsCpuBound: run.fps / cpuBoundFps,
      })),
      denoLifetimePeakRssMb: hwm > 0 ? hwm / 1024 : undefined,
    };
    if (options.json) console.log(JSON.stringify(report, null, 2));
    else printReport(report);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

// import.meta.main is true in a worker too: the worker's name tells them apart.
if ((globalThis as { name?: string }).name === SAMPLER_WORKER) {
  runSamplerWorker();
} else if (import.meta.main) {
  await main();
}
