/**
 * The performance guard: `vid render` against the raw capture+encode pipeline
 * (bench/raw_pipeline.ts) on the render benchmark's page scaled down to 640x360 and 1 s
 * (30 frames), both whole processes, run alternately, medians of a few rounds. Two ratios
 * come out, independent of how fast the machine is:
 *
 * - `fpsRatio`: vid's fps / the raw pipeline's fps (1.0 = vid adds nothing);
 * - `cpuRatio`: vid's CPU per frame / the raw pipeline's (all processes, sampled from
 *   /proc as bench/peer_bench.ts does).
 *
 * The figures recorded in `bench/perf_guard.json` are what `deno task bench:guard` (`--check`)
 * holds the code to: it exits 1 when fpsRatio falls more than 20% below the recorded one or
 * cpuRatio rises more than 20% above it. A timing ratio, so it runs apart from the
 * correctness suite (`deno task test`), on a machine not busy with other work; its
 * judgement ({@linkcode guardProblems}) is unit-tested (tests/unit/perf_guard_test.ts).
 * Re-record after a deliberate change:
 *
 * ```sh
 * deno run -A bench/perf_guard.ts            # measure and print
 * deno task bench:guard                      # measure (5 rounds) and judge: exit 1 if off
 * deno run -A bench/perf_guard.ts --record   # measure and write bench/perf_guard.json
 * ```
 *
 * @module
 */

import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { timedRun } from "./proc_cpu.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
/** Where the recorded ratios live. */
export const GUARD_FILE: string = join(ROOT, "bench", "perf_guard.json");
/** How far a ratio may fall behind the recorded one before the guard fails. */
export const TOLERANCE = 0.2;

/** The ratios of one guard measurement. */
export interface GuardFigures {
  /** vid fps / raw pipeline fps. */
  fpsRatio: number;
  /** vid CPU per frame / raw pipeline CPU per frame. */
  cpuRatio: number;
  /** Rounds measured (each runs both, alternating). */
  rounds: number;
  /** 1-minute load average at the start and the end. */
  load: [number, number];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** The benchmark page at 640x360, 1 s, in a temp project; returns its folder. */
async function guardProject(work: string): Promise<string> {
  const html = (await readFile(join(ROOT, "bench", "fixtures", "bench10s", "index.html"), "utf8"))
    .replace('data-width="1920"', 'data-width="640"')
    .replace('data-height="1080"', 'data-height="360"')
    .replace('data-duration="10"', 'data-duration="1"');
  const dir = join(work, "page");
  await Deno.mkdir(dir);
  await writeFile(join(dir, "index.html"), html);
  return dir;
}

/**
 * Measures the guard's ratios: `rounds` alternating runs of each (order flips per round).
 *
 * @example
 * ```ts
 * const figures = await measureGuard(3);
 * console.log(figures.fpsRatio.toFixed(2));
 * ```
 */
export async function measureGuard(rounds = 3): Promise<GuardFigures> {
  const work = await mkdtemp(join(tmpdir(), "vid-perf-guard-"));
  const startLoad = loadavg()[0];
  try {
    const dir = await guardProject(work);
    const env = { ...Deno.env.toObject(), NO_COLOR: "1" };
    const vid = [Deno.execPath(), "run", "-A", join(ROOT, "cli.ts"), "render", dir];
    const raw = [Deno.execPath(), "run", "-A", join(ROOT, "bench", "raw_pipeline.ts"), dir];
    const runs: Record<"vid" | "raw", { wall: number; cpu: number }[]> = { vid: [], raw: [] };
    // One unmeasured run of each warms Deno's module cache and the page cache.
    await timedRun([...vid, "--workers", "1", "-o", join(work, "warm-vid.mp4")], env, work);
    await timedRun([...raw, join(work, "warm-raw.mp4")], env, work);
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ["vid", "raw"] as const : ["raw", "vid"] as const;
      for (const which of order) {
        const out = join(work, `${which}-${round}.mp4`);
        const command = which === "vid" ? [...vid, "--workers", "1", "-o", out] : [...raw, out];
        const result = await timedRun(command, env, work);
        runs[which].push({ wall: result.wallSeconds, cpu: result.cpuSeconds });
      }
    }
    return {
      fpsRatio: median(runs.raw.map((r) => r.wall)) / median(runs.vid.map((r) => r.wall)),
      cpuRatio: median(runs.vid.map((r) => r.cpu)) / median(runs.raw.map((r) => r.cpu)),
      rounds,
      load: [startLoad, loadavg()[0]],
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The recorded figures. */
export async function recordedGuard(): Promise<GuardFigures> {
  return JSON.parse(await readFile(GUARD_FILE, "utf8")) as GuardFigures;
}

/** What is wrong with `measured` against `recorded`; empty when within tolerance. */
export function guardProblems(measured: GuardFigures, recorded: GuardFigures): string[] {
  const problems: string[] = [];
  if (measured.fpsRatio < recorded.fpsRatio * (1 - TOLERANCE)) {
    problems.push(
      `fps ratio to the raw pipeline fell to ${measured.fpsRatio.toFixed(2)} ` +
        `(recorded ${recorded.fpsRatio.toFixed(2)}, floor ${
          (recorded.fpsRatio * (1 - TOLERANCE)).toFixed(2)
        })`,
    );
  }
  if (measured.cpuRatio > recorded.cpuRatio * (1 + TOLERANCE)) {
    problems.push(
      `CPU ratio to the raw pipeline rose to ${measured.cpuRatio.toFixed(2)} ` +
        `(recorded ${recorded.cpuRatio.toFixed(2)}, ceiling ${
          (recorded.cpuRatio * (1 + TOLERANCE)).toFixed(2)
        })`,
    );
  }
  return problems;
}

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const rounds = Number(Deno.env.get("VID_GUARD_ROUNDS") ?? (check ? 5 : 3));
  const figures = await measureGuard(rounds);
  console.log(JSON.stringify(figures, null, 2));
  if (Deno.args.includes("--record")) {
    await writeFile(GUARD_FILE, JSON.stringify(figures, null, 2) + "\n");
    console.error(`recorded in ${GUARD_FILE}`);
  }
  if (check) {
    const recorded = await recordedGuard();
    const problems = guardProblems(figures, recorded);
    console.error(
      `perf guard: fps ratio ${figures.fpsRatio.toFixed(2)} (recorded ${
        recorded.fpsRatio.toFixed(2)
      }), CPU ratio ${figures.cpuRatio.toFixed(2)} (recorded ${recorded.cpuRatio.toFixed(2)}), ` +
        `load ${figures.load.map((l) => l.toFixed(1)).join("-")}`,
    );
    for (const problem of problems) console.error(`perf guard: ${problem}`);
    if (problems.length > 0) Deno.exit(1);
  }
}
