/**
 * Chromium launch flags, A/B: each named flag set (given to the launch through
 * `VID_CHROMIUM_FLAGS`, where `!--flag` leaves out one of vid's own) captures the same frames
 * of a page with vid's BeginFrame capturer (JPEG q80, as `vid render`), alternating the
 * order every round, and prints per set the median Chromium CPU ms per frame by process
 * role (bench/proc_cpu.ts), the minor page faults per frame by process type, and an MD5 of
 * every captured image: a set whose MD5 differs from the base changes pixels.
 *
 * CPU per frame, not fps, is the figure: the machine is shared and wall time follows the
 * neighbours. The bench's own Deno process (the /proc sampler's work included) is left out.
 *
 * ```sh
 * deno run -A bench/flags_bench.ts bench/fixtures/peer_css \
 *   --set 'inproc=--in-process-gpu' --set 'nogpuflag=!--disable-gpu --disable-gpu-compositing' \
 *   --rounds 3 --frames 40
 * ```
 *
 * The page must be self-contained (peer_gsap needs gsap.min.js copied in, as peer_bench does).
 *
 * @module
 */

import { createHash } from "node:crypto";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { closePage, navigate, openPage } from "../src/render/browser.ts";
import { createCapturer, seekFrame } from "../src/render/capture.ts";
import { launchForCapture } from "../src/render/capture_mode.ts";
import { serveProject } from "../src/render/serve.ts";
import { readComposition } from "../src/composition/composition.ts";
import { runtimeScript } from "../src/runtime/page_runtime.ts";
import { type CpuByRole, sampleTree } from "./proc_cpu.ts";
import { describeHost, hostLine } from "./host.ts";

const FPS = 30;
const CHROMIUM = new Set(["browser", "renderer", "gpu", "chromium other"]);

/** One capture pass of one flag set. */
interface Pass {
  chromiumMs: number;
  byRole: Record<string, number>;
  faults: Record<string, number>;
  md5: string;
  wallMs: number;
  load: number;
}

/** Minor page faults of this process's descendants, by Chromium process type. */
function faultsByType(): Record<string, number> {
  const all = new Map<number, { ppid: number; faults: number }>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      all.set(Number(entry.name), { ppid: Number(fields[1]), faults: Number(fields[7]) });
    } catch {
      // gone
    }
  }
  const out: Record<string, number> = {};
  for (const [pid, info] of all) {
    let at = pid;
    for (let hops = 0; hops < 32 && at > 1 && at !== Deno.pid; hops++) at = all.get(at)?.ppid ?? 0;
    if (at !== Deno.pid || pid === Deno.pid) continue;
    let type = "gone";
    try {
      type = Deno.readTextFileSync(`/proc/${pid}/cmdline`).match(/--type=([\w-]+)/)?.[1] ??
        "browser";
    } catch {
      // gone
    }
    out[type] = (out[type] ?? 0) + info.faults;
  }
  return out;
}

/** Captures `frames` frames of `url` in a browser launched with `flags`. */
async function capturePass(
  url: string,
  size: { width: number; height: number },
  flags: string,
  frames: number,
): Promise<Pass> {
  Deno.env.set("VID_CHROMIUM_FLAGS", flags);
  const browser = await launchForCapture("beginframe");
  try {
    const page = await openPage(browser, {
      ...size,
      initScript: runtimeScript({
        variables: {},
        seed: 1,
        epochMs: 0,
        fps: FPS,
        readyTimeoutMs: 30000,
      }),
    });
    await navigate(page, url);
    const capturer = createCapturer(page, { mode: "beginframe", format: "jpeg", fps: FPS });
    const load = loadavg()[0];
    const hash = createHash("md5");
    const started = performance.now();
    const sampler = sampleTree(Deno.pid, true);
    const faultsBefore = faultsByType();
    for (let frame = 0; frame < frames; frame++) {
      hash.update(await capturer.capture(await seekFrame(page, frame)));
    }
    const faultsAfter = faultsByType();
    const cpu: CpuByRole = sampler.stop();
    const wallMs = (performance.now() - started) / frames;
    await closePage(page).catch(() => undefined);
    const byRole: Record<string, number> = {};
    for (const [role, seconds] of Object.entries(cpu)) {
      if (CHROMIUM.has(role)) byRole[role] = seconds * 1000 / frames;
    }
    const faults: Record<string, number> = {};
    for (const [type, count] of Object.entries(faultsAfter)) {
      faults[type] = (count - (faultsBefore[type] ?? 0)) / frames;
    }
    return {
      chromiumMs: Object.values(byRole).reduce((a, b) => a + b, 0),
      byRole,
      faults,
      md5: hash.digest("hex").slice(0, 8),
      wallMs,
      load,
    };
  } finally {
    await browser.close();
    Deno.env.delete("VID_CHROMIUM_FLAGS");
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function roles(figures: Record<string, number>[]): string {
  const keys = [...new Set(figures.flatMap(Object.keys))];
  return keys.map((key) => `${key} ${median(figures.map((f) => f[key] ?? 0)).toFixed(0)}`)
    .join(", ");
}

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      set: { type: "string", multiple: true, default: [] },
      rounds: { type: "string", default: "3" },
      frames: { type: "string", default: "40" },
    },
  });
  const dir = positionals[0];
  if (!dir) throw new Error("usage: flags_bench.ts <composition dir> --set name=flags ...");
  const sets: [string, string][] = [["base", ""]];
  for (const set of values.set) {
    const at = set.indexOf("=");
    if (at < 1) throw new Error(`--set must be name=flags, got ${set}`);
    sets.push([set.slice(0, at), set.slice(at + 1)]);
  }
  const rounds = Number(values.rounds);
  const composition = await readComposition(dir);
  const frames = Math.min(Number(values.frames), Math.round(composition.duration * FPS));
  const server = await serveProject(dir);
  const passes = new Map<string, Pass[]>();
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 ? [...sets].reverse() : sets;
      for (const [name, flags] of order) {
        const pass = await capturePass(server.url + "index.html", composition, flags, frames);
        passes.set(name, [...(passes.get(name) ?? []), pass]);
        console.error(
          `${name} round ${round + 1}: Chromium ${pass.chromiumMs.toFixed(0)} CPU ms/frame (${
            roles([pass.byRole])
          }); faults/frame ${roles([pass.faults])}; ${pass.wallMs.toFixed(0)} ms/frame wall; ` +
            `load ${pass.load.toFixed(1)}; md5 ${pass.md5}`,
        );
      }
    }
  } finally {
    await server.close();
  }
  const loads = [...passes.values()].flat().map((p) => p.load);
  console.log(
    `\n${dir}, ${frames} frames, median of ${rounds} alternating rounds; load ${
      Math.min(...loads).toFixed(1)
    }-${Math.max(...loads).toFixed(1)}; ${new Date().toISOString().slice(0, 16)}Z\n`,
  );
  console.log("| set | flags | Chromium CPU ms/frame | by role | faults/frame | frames |");
  console.log("|---|---|---:|---|---|---|");
  const baseMd5 = passes.get("base")?.[0].md5;
  for (const [name, flags] of sets) {
    const list = passes.get(name) ?? [];
    const md5s = [...new Set(list.map((p) => p.md5))];
    const same = md5s.length === 1 && md5s[0] === baseMd5 ? "same as base" : md5s.join(", ");
    console.log(
      `| ${name} | ${flags || "(vid's)"} | ${median(list.map((p) => p.chromiumMs)).toFixed(0)} | ${
        roles(list.map((p) => p.byRole))
      } | ${roles(list.map((p) => p.faults))} | ${same} |`,
    );
  }
  console.log(`\n${hostLine(await describeHost())}`);
}

if (import.meta.main) await main();
