/**
 * What running `vid server` as a cluster costs and what spreading a render gains (issue 26),
 * side by side in one run, through real `vid server` processes on loopback with real renders:
 *
 * 1. Renders per minute for a batch of tiny renders (1 s at 10 fps) on one single-process
 *    server (SQLite, `--workers 1`), on 1 API + 1 worker and on 1 API + 2 workers (`--role`,
 *    one PostgreSQL from the OS package, one shared storage folder, workers with
 *    `--chunk-size 240` as docs/cluster.md sets them up). One worker against the single
 *    server is the per-render overhead of the cluster (goal: under 5%): the database over
 *    loopback, the leases, the separate API process.
 * 2. The chunk-level speed-up a long render would get: one render of `--long` seconds cut
 *    into 1-second chunks, rendered by one worker so every chunk's time is measured alone
 *    (the worker logs each), then scheduled greedily over 1, 2, 4 and 8 workers plus the
 *    measured join: what that many machines would give. This 2-core machine cannot show it
 *    by running more workers, which would only share its two cores.
 * 3. Memory over the batch: each rendering process logs its memory after each render
 *    (`VID_DEBUG_MEMORY=1`, after a full collection forced through `--v8-flags=--expose-gc`):
 *    the resident set and V8's heap, first ten against last ten, the trend over the last half
 *    of the batch as MB per 100 renders (flat: under the thresholds in docs/cluster.md), and
 *    the peak resident set (VmHWM). A rising resident set with a flat heap is V8 and the
 *    allocator growing into their working size; a rising heap is a leak.
 *
 * ```sh
 * deno task bench:cluster                 # 100 renders per server, a 20 s long render
 * deno task bench:cluster --renders 20    # a quicker look
 * deno task bench:cluster --renders 300 --memory-only   # 1 API + 1 worker only: does it level off?
 * deno task bench:cluster --memory-only --no-gc         # … with V8 collecting when it sees fit
 * ```
 *
 * @module
 */

import { zipSync } from "fflate";
import { startPostgres } from "../tests/postgres_server.ts";

const ROOT = new URL("../", import.meta.url).pathname;

function numberArg(name: string, fallback: number): number {
  const at = Deno.args.indexOf(name);
  if (at < 0) return fallback;
  const value = Number(Deno.args[at + 1]);
  if (!Number.isInteger(value) || value < 1) {
    console.error(`${name} must be a positive integer, got ${Deno.args[at + 1]}`);
    Deno.exit(2);
  }
  return value;
}

const RENDERS = numberArg("--renders", 100);
/** Only the 1 API + 1 worker batch and its memory: the long look at flatness. */
const MEMORY_ONLY = Deno.args.includes("--memory-only");
/**
 * No forced GC before each memory line: the resident set as a worker runs normally, V8
 * collecting when it sees fit (the heap figures then include garbage).
 */
const NO_GC = Deno.args.includes("--no-gc");
const LONG_SECONDS = numberArg("--long", 20);
const FPS = 10;

/** A box crossing the frame over `seconds`, so every frame differs. */
function page(seconds: number): string {
  return `<!doctype html><html><head><style>
html, body { margin: 0; width: 320px; height: 180px; background: #000; overflow: hidden; }
#box { position: absolute; left: 0; top: 60px; width: 60px; height: 60px; background: #f00;
  animation: slide ${seconds}s linear forwards; }
@keyframes slide { to { left: 260px; background: #00f; } }
</style></head><body><div id="root" data-composition-id="bench" data-width="320"
data-height="180" data-duration="${seconds}"><div id="box"></div></div></body></html>`;
}

/** Adds the bench's account where `where` points (`--data-dir …` or `--database …`); its key. */
async function benchAccount(where: string[]): Promise<string> {
  await vid([
    "server",
    "users",
    "add",
    "bench@example.com",
    "--password",
    "a long enough password",
    "--credits",
    "1000000",
    ...where,
  ]);
  return await vid(["server", "keys", "create", "bench@example.com", ...where]);
}

async function vid(args: string[]): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`vid ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout).trim();
}

/** Kilobytes of a /proc status field of `pid` (VmRSS, VmHWM). */
function statusKb(pid: number, field: string): number {
  const text = Deno.readTextFileSync(`/proc/${pid}/status`);
  return Number(text.match(new RegExp(`^${field}:\\s+(\\d+)`, "m"))?.[1] ?? 0);
}

/** One `vid server` process. */
interface Instance {
  url: string;
  pid: number;
  output(): string;
  close(): Promise<void>;
}

/** Starts `vid server --port 0 …flags` on `dataDir` (by default a new folder of its own). */
async function startInstance(flags: string[], dataDir?: string): Promise<Instance> {
  const own = dataDir === undefined;
  const folder = dataDir ?? await Deno.makeTempDir({ prefix: "vid-cluster-bench-" });
  const child = new Deno.Command(Deno.execPath(), {
    // Each render's memory in the log, after a forced full collection (src/server/queue/memory_log.ts).
    env: { VID_DEBUG_MEMORY: "1" },
    args: [
      "run",
      "-A",
      ...(NO_GC ? [] : ["--v8-flags=--expose-gc"]),
      `${ROOT}cli.ts`,
      "server",
      "--port",
      "0",
      "--data-dir",
      folder,
      "--max-queued-per-account",
      "10000",
      ...flags,
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!/listening on (\S+)/.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`vid server exited: ${out}`);
    out += value;
  }
  const reading = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      out += value;
    }
  })();
  return {
    url: out.match(/listening on (\S+)/)![1],
    pid: child.pid,
    output: () => out,
    async close(): Promise<void> {
      child.kill("SIGTERM");
      await child.status;
      await reading;
      if (own) await Deno.remove(folder, { recursive: true });
    },
  };
}

/** A deployment under test: where the API answers, and the processes that render. */
interface Server {
  api(path: string, init?: RequestInit): Promise<Record<string, unknown>>;
  /** The processes that render (the single server, or the workers). */
  workers: Instance[];
  /** Every process's output, for the chunk log lines. */
  output(): string;
  close(): Promise<void>;
}

/**
 * `workers` = 0: one `vid server` (SQLite, API and renders in one process). Otherwise one
 * `--role api` and `workers` `--role worker` processes on a PostgreSQL of their own (the OS
 * package, as the tests start it) and one shared storage folder.
 */
async function deploy(workers: number, workerFlags: string[] = []): Promise<Server> {
  const cleanups: (() => Promise<void>)[] = [];
  const instances: Instance[] = [];
  let key: string;
  let api: Instance;
  let renderers: Instance[];
  if (workers === 0) {
    const dataDir = await Deno.makeTempDir({ prefix: "vid-cluster-bench-single-" });
    cleanups.push(() => Deno.remove(dataDir, { recursive: true }));
    key = await benchAccount(["--data-dir", dataDir]);
    api = await startInstance(["--workers", "1", ...workerFlags], dataDir);
    instances.push(api);
    renderers = [api];
  } else {
    const postgres = await startPostgres();
    cleanups.push(() => postgres.close());
    const storage = await Deno.makeTempDir({ prefix: "vid-cluster-bench-storage-" });
    cleanups.push(() => Deno.remove(storage, { recursive: true }));
    const shared = ["--database", postgres.url, "--storage", `file://${storage}`];
    key = await benchAccount(shared.slice(0, 2));
    api = await startInstance(["--role", "api", ...shared]);
    instances.push(api);
    renderers = [];
    for (let i = 0; i < workers; i++) {
      const worker = await startInstance([
        "--role",
        "worker",
        "--workers",
        "1",
        ...shared,
        ...workerFlags,
      ]);
      instances.push(worker);
      renderers.push(worker);
    }
  }
  return {
    workers: renderers,
    output: () => instances.map((i) => i.output()).join("\n"),
    async api(path: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
      const response = await fetch(`${api.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      });
      return await response.json();
    },
    async close(): Promise<void> {
      // Processes first (they hold the database and folders), then what they used.
      for (const instance of instances.reverse()) await instance.close();
      for (const cleanup of cleanups.reverse()) await cleanup();
    },
  };
}

async function upload(server: Server, html: string): Promise<string> {
  const zip = zipSync({ "index.html": new TextEncoder().encode(html) });
  const created = await server.api("/v3/assets", {
    method: "POST",
    body: JSON.stringify({ size_bytes: zip.length }),
  });
  const put = await fetch(String(created.upload_url), { method: "PUT", body: zip });
  await put.body?.cancel();
  return String(created.asset_id);
}

async function submit(server: Server, asset: string): Promise<string> {
  const render = await server.api("/v3/vid/renders", {
    method: "POST",
    body: JSON.stringify({ asset_id: asset, fps: FPS, aspect_ratio: "1:1", resolution: "1080p" }),
  });
  if (typeof render.render_id !== "string") throw new Error(JSON.stringify(render));
  return render.render_id;
}

/** Waits for `id` to complete (an hour at most); throws if it failed. */
async function completion(server: Server, id: string): Promise<void> {
  const deadline = Date.now() + 3_600_000;
  while (Date.now() < deadline) {
    const render = await server.api(`/v3/vid/renders/${id}`);
    if (render.status === "completed") return;
    if (render.status === "failed") throw new Error(`render ${id} failed: ${render.error}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`render ${id} did not finish within an hour`);
}

/** The `memory after render …` lines of one process's output (src/server/queue/memory_log.ts). */
function memoryLog(output: string): { rss: number[]; heap: number[] } {
  const lines = [
    ...output.matchAll(/memory after render \S+: rss ([\d.]+) MB, heap_used ([\d.]+) MB/g),
  ];
  return { rss: lines.map((m) => Number(m[1])), heap: lines.map((m) => Number(m[2])) };
}

/** Least-squares slope of `series` over its last half, per 100 entries (MB per 100 renders). */
function trend(series: number[]): number {
  const tail = series.slice(Math.floor(series.length / 2));
  if (tail.length < 2) return 0;
  const xs = tail.map((_, i) => i);
  const mx = mean(xs);
  const my = mean(tail);
  const num = xs.reduce((sum, x, i) => sum + (x - mx) * (tail[i] - my), 0);
  const den = xs.reduce((sum, x) => sum + (x - mx) ** 2, 0);
  return num / den * 100;
}

interface Batch {
  label: string;
  seconds: number;
  perMinute: number;
  /** Resident set of each rendering process after each of its renders, MB. */
  rss: number[][];
  /** V8 heap used by each rendering process after each of its renders (after a full GC), MB. */
  heap: number[][];
  /** Peak resident set of each rendering process (VmHWM), MB. */
  peakMb: number[];
}

/** Submits `RENDERS` tiny renders at once and waits for each in turn. */
async function batch(label: string, workers: number, flags: string[] = []): Promise<Batch> {
  const server = await deploy(workers, flags);
  try {
    const asset = await upload(server, page(1));
    // One render per worker first, so every run starts measuring with warm browsers.
    const warm = [];
    for (let i = 0; i < Math.max(1, workers); i++) warm.push(await submit(server, asset));
    for (const id of warm) await completion(server, id);
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < RENDERS; i++) ids.push(await submit(server, asset));
    for (const id of ids) await completion(server, id);
    const seconds = (performance.now() - started) / 1000;
    // The warm-up renders' lines included: a process's series starts at its first render.
    const logged = server.workers.map((w) => memoryLog(w.output()));
    return {
      label,
      seconds,
      perMinute: RENDERS / seconds * 60,
      rss: logged.map((l) => l.rss),
      heap: logged.map((l) => l.heap),
      peakMb: server.workers.map((w) => statusKb(w.pid, "VmHWM") / 1024),
    };
  } finally {
    await server.close();
  }
}

/**
 * Seconds each chunk of one long render took on one worker, from the worker's log, and the
 * whole render's, through 1 API + 1 worker.
 */
async function longRender(): Promise<{ chunks: number[]; total: number }> {
  const server = await deploy(1, ["--chunk-size", String(FPS)]);
  try {
    const asset = await upload(server, page(LONG_SECONDS));
    const id = await submit(server, asset);
    // Timed from the worker's claim: an idle worker looks for work every 2 s.
    while ((await server.api(`/v3/vid/renders/${id}`)).status === "queued") {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const started = performance.now();
    await completion(server, id);
    const total = (performance.now() - started) / 1000;
    const chunks = [
      ...server.output().matchAll(
        new RegExp(
          `render ${id}: chunk \\d+ \\(frames [\\d-]+\\) rendered by \\S+ in ([\\d.]+) s`,
          "g",
        ),
      ),
    ].map((m) => Number(m[1]));
    return { chunks, total };
  } finally {
    await server.close();
  }
}

/** Wall time of `times` on `workers` workers, each taking the next chunk when free. */
function makespan(times: number[], workers: number): number {
  const free = Array<number>(workers).fill(0);
  for (const t of times) {
    const next = free.indexOf(Math.min(...free));
    free[next] += t;
  }
  return Math.max(...free);
}

/** Thresholds of a flat worker, MB per 100 renders (docs/cluster.md "measured"). */
const HEAP_FLAT_MB = 1;
const RSS_FLAT_MB = 5;

const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / values.length;

// Workers as docs/cluster.md sets them up: one render each, renders spread past 240 frames.
const WORKER = ["--chunk-size", "240"];

/** Each rendering process's memory over the batch, resident set and heap side by side. */
function reportMemory(runs: Batch[]): void {
  console.log(
    `\nMemory of each rendering process over its renders (MB; heap = V8 heap used ` +
      `${
        NO_GC ? "as V8 left it (--no-gc)" : "after a forced full GC"
      }; trend = slope over the last half, MB per 100 renders):`,
  );
  for (const run of runs) {
    run.rss.forEach((rss, i) => {
      const heap = run.heap[i];
      const figures = (series: number[]): string =>
        `${mean(series.slice(0, 10)).toFixed(1)} -> ${mean(series.slice(-10)).toFixed(1)}, ` +
        `trend ${trend(series) >= 0 ? "+" : ""}${trend(series).toFixed(2)}`;
      console.log(
        `  ${run.label.padEnd(18)} #${i + 1} (${rss.length} renders): rss ${figures(rss)}; ` +
          `heap ${figures(heap)}; peak rss ${run.peakMb[i].toFixed(0)}`,
      );
    });
  }
  console.log(
    `  flat: heap trend under ${HEAP_FLAT_MB} MB and rss trend under ${RSS_FLAT_MB} MB per 100 ` +
      `renders (docs/cluster.md)`,
  );
  if (Deno.env.get("VID_BENCH_SERIES") === "1") {
    for (const run of runs) {
      run.rss.forEach((rss, i) =>
        console.log(
          `  series ${run.label} #${i + 1}: rss ${rss.join(" ")} | heap ${run.heap[i].join(" ")}`,
        )
      );
    }
  }
}

if (MEMORY_ONLY) {
  reportMemory([await batch("1 API + 1 worker", 1, WORKER)]);
  Deno.exit(0);
}
const single = await batch("1 server", 0);
const one = await batch("1 API + 1 worker", 1, WORKER);
const two = await batch("1 API + 2 workers", 2, WORKER);
const long = await longRender();

console.log(`\n${RENDERS} renders of 1 s at ${FPS} fps (1080x1080), one at a time per worker:`);
for (const run of [single, one, two]) {
  console.log(
    `  ${run.label.padEnd(18)} ${run.perMinute.toFixed(1).padStart(6)} renders/min ` +
      `(${(run.seconds / RENDERS).toFixed(2)} s each)`,
  );
}
const overhead = (single.perMinute / one.perMinute - 1) * 100;
console.log(
  `  per-render overhead of the cluster (1 API + 1 worker on PostgreSQL against one server on ` +
    `SQLite): ${overhead.toFixed(1)}% (goal: under 5%)`,
);
console.log(
  `  2 workers against 1 on this 2-core machine: ${(two.perMinute / one.perMinute).toFixed(2)}x`,
);

const serial = long.chunks.reduce((a, b) => a + b, 0);
const joinSeconds = Math.max(0, long.total - serial);
console.log(
  `\nA ${LONG_SECONDS} s render in ${long.chunks.length} chunks, on one worker: ` +
    `${long.total.toFixed(1)} s (chunks ${serial.toFixed(1)} s, mean ` +
    `${mean(long.chunks).toFixed(2)} s; the join and the claims ${joinSeconds.toFixed(1)} s)`,
);
for (const workers of [1, 2, 4, 8]) {
  const wall = makespan(long.chunks, workers) + joinSeconds;
  console.log(
    `  ${String(workers).padStart(2)} worker machine(s): ${wall.toFixed(1)} s, speed-up ` +
      `${(long.total / wall).toFixed(2)}x`,
  );
}

reportMemory([single, one, two]);
