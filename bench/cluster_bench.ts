/**
 * What spreading renders over workers costs and would gain (issue 26), side by side in one
 * run, through real `vid server` processes on loopback with real renders:
 *
 * 1. Renders per minute for a batch of tiny renders (1 s at 10 fps) on a single-process
 *    server, and on a server that spreads renders in chunks (`--chunk-size`), whose queue
 *    also looks for chunks of renders under way before it claims one: the per-render
 *    overhead of the chunked path (goal: under 5%).
 * 2. The chunk-level speed-up a long render would get: one render of `--long` seconds cut
 *    into 1-second chunks, rendered by one worker so every chunk's time is measured alone
 *    (the server logs each), then scheduled greedily over 1, 2, 4 and 8 workers plus the
 *    measured join: what that many machines would give. This 2-core machine cannot show it
 *    by running more workers, which would only share its two cores.
 * 3. Memory over the batch: the server process's resident set after each render, first ten
 *    against last ten (flat means no leak), and its peak (VmHWM).
 *
 * ```sh
 * deno task bench:cluster                 # 100 renders per server, a 20 s long render
 * deno task bench:cluster --renders 20    # a quicker look
 * ```
 *
 * @module
 */

import { zipSync } from "fflate";

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

interface Server {
  url: string;
  pid: number;
  output(): string;
  api(path: string, init?: RequestInit): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

async function startServer(label: string, flags: string[]): Promise<Server> {
  const dataDir = await Deno.makeTempDir({ prefix: `vid-cluster-bench-${label}-` });
  await vid([
    "server",
    "users",
    "add",
    "bench@example.com",
    "--password",
    "a long enough password",
    "--credits",
    "1000000",
    "--data-dir",
    dataDir,
  ]);
  const key = await vid(["server", "keys", "create", "bench@example.com", "--data-dir", dataDir]);
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${ROOT}cli.ts`,
      "server",
      "--port",
      "0",
      "--data-dir",
      dataDir,
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
  const url = out.match(/listening on (\S+)/)![1];
  return {
    url,
    pid: child.pid,
    output: () => out,
    async api(path: string, init: RequestInit = {}): Promise<Record<string, unknown>> {
      const response = await fetch(`${url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      });
      return await response.json();
    },
    async close(): Promise<void> {
      child.kill("SIGTERM");
      await child.status;
      await reading;
      await Deno.remove(dataDir, { recursive: true });
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

interface Batch {
  label: string;
  seconds: number;
  perMinute: number;
  /** Resident set of the server after each render, MB, in order of completion. */
  rss: number[];
  peakMb: number;
}

/** Submits `RENDERS` tiny renders at once and waits for each in turn. */
async function batch(label: string, flags: string[]): Promise<Batch> {
  const server = await startServer(label, flags);
  try {
    const asset = await upload(server, page(1));
    // One render first, so both servers start measuring with a warm browser.
    await completion(server, await submit(server, asset));
    const started = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < RENDERS; i++) ids.push(await submit(server, asset));
    const rss: number[] = [];
    for (const id of ids) {
      await completion(server, id);
      rss.push(statusKb(server.pid, "VmRSS") / 1024);
    }
    const seconds = (performance.now() - started) / 1000;
    return {
      label,
      seconds,
      perMinute: RENDERS / seconds * 60,
      rss,
      peakMb: statusKb(server.pid, "VmHWM") / 1024,
    };
  } finally {
    await server.close();
  }
}

/** Seconds each chunk of one long render took, from the server's log, and the whole render's. */
async function longRender(): Promise<{ chunks: number[]; total: number }> {
  const server = await startServer("long", ["--workers", "1", "--chunk-size", String(FPS)]);
  try {
    const asset = await upload(server, page(LONG_SECONDS));
    const started = performance.now();
    const id = await submit(server, asset);
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

const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / values.length;

const single = await batch("single", ["--workers", "1"]);
const chunked = await batch("chunked", ["--workers", "1", "--chunk-size", "240"]);
const long = await longRender();

console.log(`\n${RENDERS} renders of 1 s at ${FPS} fps (1080x1080), one worker each:`);
for (const run of [single, chunked]) {
  console.log(
    `  ${run.label.padEnd(8)} ${run.perMinute.toFixed(1).padStart(6)} renders/min ` +
      `(${(run.seconds / RENDERS).toFixed(2)} s each)`,
  );
}
const overhead = (single.perMinute / chunked.perMinute - 1) * 100;
console.log(`  per-render overhead of the chunked path: ${overhead.toFixed(1)}% (goal: under 5%)`);

const serial = long.chunks.reduce((a, b) => a + b, 0);
const joinSeconds = Math.max(0, long.total - serial);
console.log(
  `\nA ${LONG_SECONDS} s render in ${long.chunks.length} chunks of 1 s: ${
    long.total.toFixed(1)
  } s ` +
    `on one worker (chunks ${serial.toFixed(1)} s, mean ${mean(long.chunks).toFixed(2)} s; ` +
    `join, queue and set-up ${joinSeconds.toFixed(1)} s)`,
);
for (const workers of [1, 2, 4, 8]) {
  const wall = makespan(long.chunks, workers) + joinSeconds;
  console.log(
    `  ${String(workers).padStart(2)} worker machine(s): ${wall.toFixed(1)} s, speed-up ` +
      `${(long.total / wall).toFixed(2)}x`,
  );
}

console.log(`\nServer memory over ${RENDERS} renders (resident set after each, MB):`);
for (const run of [single, chunked]) {
  const first = mean(run.rss.slice(0, 10));
  const last = mean(run.rss.slice(-10));
  console.log(
    `  ${run.label.padEnd(8)} first 10: ${first.toFixed(0)}, last 10: ${last.toFixed(0)} ` +
      `(${((last / first - 1) * 100).toFixed(1)}%), peak ${run.peakMb.toFixed(0)}`,
  );
}
