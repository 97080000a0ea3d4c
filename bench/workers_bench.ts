/**
 * Worker curve: `vid render` of one peer benchmark composition (1920x1080, 5 s, 30 fps) at
 * each worker count asked for, whole processes, alternating (the order rotates every round),
 * medians: fps of the command and CPU milliseconds per frame by process, sampled from /proc
 * as bench/peer_bench.ts does. `--base <checkout>` adds the same runs of another vid
 * checkout (e.g. the previous commit, `git archive` into a folder) to compare a change side
 * by side under the same load.
 *
 * ```sh
 * deno run -A bench/workers_bench.ts                         # gsap, workers 1,2, 3 rounds
 * deno run -A bench/workers_bench.ts --workers 1,2,4 --only css --quality standard
 * deno run -A bench/workers_bench.ts --base /tmp/base --workers 1 --runs 5
 * deno run -A bench/workers_bench.ts --format webm --quality standard   # PNG capture path
 * ```
 *
 * @module
 */

import { copyFile, mkdir, mkdtemp, rm } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { timedRun } from "./proc_cpu.ts";
import { describeHost, hostLine } from "./host.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FRAMES = 150;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** One configuration measured: a checkout and a worker count. */
interface Config {
  label: string;
  root: string;
  workers: number;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      workers: { type: "string", default: "1,2" },
      runs: { type: "string", default: "3" },
      only: { type: "string", default: "gsap" },
      quality: { type: "string", default: "high" },
      format: { type: "string", default: "mp4" },
      base: { type: "string" },
      json: { type: "boolean", default: false },
    },
  });
  const counts = values.workers.split(",").map(Number);
  const runs = Number(values.runs);
  const work = await mkdtemp(join(tmpdir(), "vid-workers-bench-"));
  try {
    const dir = join(work, values.only);
    await mkdir(dir);
    const fixture = join(ROOT, "bench", "fixtures", `peer_${values.only}`);
    await copyFile(join(fixture, "index.html"), join(dir, "index.html"));
    if (values.only === "gsap") {
      await copyFile(join(ROOT, "node_modules/gsap/dist/gsap.min.js"), join(dir, "gsap.min.js"));
    }
    const configs: Config[] = counts.flatMap((workers) => [
      { label: `vid, ${workers} worker${workers > 1 ? "s" : ""}`, root: ROOT, workers },
      ...(values.base
        ? [{
          label: `base, ${workers} worker${workers > 1 ? "s" : ""}`,
          root: values.base,
          workers,
        }]
        : []),
    ]);
    const env = { ...Deno.env.toObject(), NO_COLOR: "1" };
    const results = new Map<Config, { wall: number; cpu: Record<string, number> }[]>();
    const loads: number[] = [];
    for (let round = 0; round < runs; round++) {
      const shift = round % configs.length;
      const order = [...configs.slice(shift), ...configs.slice(0, shift)];
      for (const config of order) {
        loads.push(loadavg()[0]);
        const out = join(work, `out.${values.format}`);
        const run = await timedRun(
          [
            Deno.execPath(),
            "run",
            "-A",
            join(config.root, "cli.ts"),
            "render",
            dir,
            "--quality",
            values.quality,
            "--workers",
            String(config.workers),
            "-o",
            out,
          ],
          env,
          work,
        );
        const list = results.get(config) ?? [];
        list.push({ wall: run.wallSeconds, cpu: run.cpuByRole });
        results.set(config, list);
      }
    }
    const rows = configs.map((config) => {
      const list = results.get(config)!;
      const roles = [...new Set(list.flatMap((r) => Object.keys(r.cpu)))].sort();
      const byRole = Object.fromEntries(
        roles.map((role) => [role, median(list.map((r) => (r.cpu[role] ?? 0) * 1000 / FRAMES))]),
      );
      return {
        label: config.label,
        fps: FRAMES / median(list.map((r) => r.wall)),
        cpuMsPerFrame: median(
          list.map((r) => Object.values(r.cpu).reduce((a, b) => a + b, 0) * 1000 / FRAMES),
        ),
        byRole,
      };
    });
    const load = [Math.min(...loads), Math.max(...loads)];
    const host = await describeHost();
    if (values.json) {
      console.log(JSON.stringify({ composition: values.only, runs, load, rows, host }));
    } else {
      console.log(
        `${values.only}, ${values.format} --quality ${values.quality}, median of ${runs}, load ${
          load.map((l) => l.toFixed(1)).join("-")
        }`,
      );
      for (const row of rows) {
        const roles = Object.entries(row.byRole).map(([r, ms]) => `${r} ${ms.toFixed(0)}`);
        console.log(
          `  ${row.label.padEnd(18)} ${row.fps.toFixed(2).padStart(6)} fps  ${
            row.cpuMsPerFrame.toFixed(0).padStart(4)
          } CPU ms/frame (${roles.join(", ")})`,
        );
      }
      console.log(hostLine(host));
    }
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
