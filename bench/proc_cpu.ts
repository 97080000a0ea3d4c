/**
 * CPU time by process role, sampled from /proc: the measuring stick of the benchmarks
 * (bench/peer_bench.ts, bench/floor_bench.ts, bench/perf_guard.ts, bench/workers_bench.ts).
 *
 * A process tree is sampled every 100 ms and each process's latest CPU time is kept, so a
 * process that exits loses at most one interval. The kernel's accounting of reaped children
 * (`getrusage`, `/usr/bin/time`) cannot be used: vid ends its browser by SIGKILL of the
 * process group, whose processes are then reaped by init, so their CPU would vanish.
 *
 * Roles: Chromium processes by their `--type` flag (`browser`, `renderer`, `gpu`,
 * `chromium other`), `ffmpeg`, the tool's own `runtime` (Deno or Node), and `other`.
 *
 * @module
 */

const CLOCK_TICKS = 100;
const SAMPLE_MS = 100;

/** CPU seconds by process role. */
export type CpuByRole = Record<string, number>;

interface ProcInfo {
  ppid: number;
  comm: string;
  ticks: number;
}

function readStat(pid: number): ProcInfo | undefined {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const close = text.lastIndexOf(")");
    const fields = text.slice(close + 2).split(" ");
    return {
      comm: text.slice(text.indexOf("(") + 1, close),
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
    };
  } catch {
    return undefined;
  }
}

/**
 * A process's role: Chromium by its --type flag, else by its command name. Chromium is
 * known by its executable (`/proc/<pid>/exe`), not only its command name: launched with
 * `--no-zygote` (as HyperFrames does) its children exec `/proc/self/exe`, so a renderer is
 * named `exe`, and a browser process can carry a thread's name (`ThreadPoolSingl`).
 */
function roleOf(pid: number, comm: string, known?: string): string {
  let argv0 = "";
  let cmdline = "";
  let exe = "";
  try {
    cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
    argv0 = cmdline.split("\0")[0];
    exe = Deno.readLinkSync(`/proc/${pid}/exe`);
  } catch {
    // gone, or not ours to read: fall back to what was read
  }
  if (!cmdline && known) return known;
  if ([exe, argv0, comm].some((name) => /chrom|headless/i.test(name))) {
    const type = cmdline.match(/--type=([\w-]+)/)?.[1];
    if (!type) return cmdline ? "browser" : "chromium other";
    if (type === "renderer") return "renderer";
    if (type === "gpu-process") return "gpu";
    return "chromium other";
  }
  if (/ffmpeg|ffprobe/.test(comm)) return "ffmpeg";
  if (/^(deno|node|MainThread)$/.test(comm) || /worker|tokio|V8/i.test(comm)) return "runtime";
  return "other";
}

/**
 * Samples the CPU time of `root` and its descendants by role until stopped. With
 * `fromNow`, the CPU the processes already running had spent before is left out (for a
 * browser that outlives the measured work); otherwise every process counts from its start.
 */
export function sampleTree(root: number, fromNow = false): { stop(): CpuByRole } {
  const seen = new Map<number, { role: string; ticks: number }>();
  const before = new Map<number, number>();
  const tick = () => {
    const all = new Map<number, ProcInfo>();
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      const info = readStat(Number(entry.name));
      if (info) all.set(Number(entry.name), info);
    }
    const inTree = (pid: number): boolean => {
      for (let p = pid, hops = 0; p > 1 && hops < 32; hops++) {
        if (p === root) return true;
        p = all.get(p)?.ppid ?? 0;
      }
      return false;
    };
    for (const [pid, info] of all) {
      if (!inTree(pid)) continue;
      const known = seen.get(pid);
      // A forked child carries its parent's command line until it execs or is set up: a
      // zygote's child looks like the zygote, a --no-zygote child like the browser.
      const settled = known && known.role !== "chromium other" && known.role !== "browser";
      // An exited (zombie) process has no command line left: it keeps the role it had.
      const role = settled ? known.role : roleOf(pid, info.comm, known?.role);
      seen.set(pid, { role, ticks: Math.max(known?.ticks ?? 0, info.ticks) });
    }
  };
  tick();
  if (fromNow) { for (const [pid, { ticks }] of seen) before.set(pid, ticks); }
  const timer = setInterval(tick, SAMPLE_MS);
  return {
    stop(): CpuByRole {
      clearInterval(timer);
      tick();
      const out: CpuByRole = {};
      for (const [pid, { role, ticks }] of seen) {
        out[role] = (out[role] ?? 0) + (ticks - (before.get(pid) ?? 0)) / CLOCK_TICKS;
      }
      return out;
    },
  };
}

/**
 * Runs one command; returns its wall time and its tree's CPU by role. Also used by the
 * perf guard (bench/perf_guard.ts).
 */
export async function timedRun(
  command: string[],
  env: Record<string, string>,
  cwd: string,
): Promise<{ wallSeconds: number; cpuSeconds: number; cpuByRole: CpuByRole }> {
  const started = performance.now();
  const child = new Deno.Command(command[0], {
    args: command.slice(1),
    cwd,
    env,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const sampler = sampleTree(child.pid);
  const out = await child.output();
  const wallSeconds = (performance.now() - started) / 1000;
  const cpuByRole = sampler.stop();
  const stderr = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${command.join(" ")} failed:\n${stderr.slice(-3000)}`);
  const cpuSeconds = Object.values(cpuByRole).reduce((sum, seconds) => sum + seconds, 0);
  return { wallSeconds, cpuSeconds, cpuByRole };
}
