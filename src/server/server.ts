/**
 * `vid server`: the hosted render API on this host. Opens the data folder (SQLite
 * database, signing secret, storage), kills the browsers and removes the work folders a
 * previous run killed with SIGKILL left behind, ends the leases that run still held (so its
 * renders are taken over at once), starts the render workers over the chosen render backend
 * (this machine, or the distributed Step Functions + Lambda backend) and serves the API.
 *
 * Its role (`--role`) says which of those it does: `api` serves `/v3` and enqueues, `worker`
 * renders and serves only the probes and metrics, `all` (the default) both. Instances of
 * either role share the work through the database (`leases.ts`), however many there are.
 *
 * @module
 */

import { chmod, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createApp } from "./http/app.ts";
import { type ServerContext, type ServerLimits, serverLimits, type ServerRole } from "./context.ts";
import type { Database } from "./database/mod.ts";
import { openDataDir } from "./database/data_dir.ts";
import { startQueue } from "./queue/queue.ts";
import { startWebhookSender } from "./queue/webhook_outbox.ts";
import { lambdaBackend } from "./queue/lambda_backend.ts";
import { localBackend } from "./queue/local_backend.ts";
import type { RenderBackendConfig } from "./queue/render_backend.ts";
import { randomId } from "./auth/secrets.ts";
import { releaseKeysOfDeadRuns } from "./http/idempotency.ts";
import { reapPredecessors } from "./queue/reaper.ts";
import { DEFAULT_LEASE_SECONDS, expireLeasesOfDeadRuns, leaseOwner } from "./queue/leases.ts";
import { handBackRenders } from "./queue/queue.ts";
import { listProcesses } from "../render/browser_records.ts";
import { opsApp } from "./http/ops_routes.ts";
import { killLiveBrowsers, recordBrowsersIn } from "../render/browser.ts";
import {
  killLiveProcesses,
  openPathToProcessUser,
  processPolicy,
  setProcessPolicy,
} from "../render/process_runner.ts";
import { traversableBy } from "../render/browser.ts";
import { configureServerSandbox } from "../render/sandbox.ts";
import type { Storage } from "./storage/storage.ts";
import { DatabaseUnavailableError } from "./database/url.ts";
import { FsStorage } from "./storage/storage_file.ts";
import { storageFromUrl } from "./storage/storage_url.ts";
import { parseTrustedProxies } from "./http/client_address.ts";
import { queueDepth, ServerMetrics } from "./queue/metrics.ts";
import { meteredBackend } from "./queue/metered_backend.ts";
import { configureLog, log } from "./log.ts";
import { withRequestId } from "./http/request_id.ts";
import { DEFAULT_MIN_FREE_BYTES, DiskSpace } from "./storage/disk_space.ts";
import { Drain } from "./http/drain.ts";

export { SERVER_ROLES, type ServerRole } from "./context.ts";
export { openDataDir } from "./database/data_dir.ts";

/** How a stopping server waits for webhook deliveries in flight. */
const WEBHOOK_DRAIN_MS = 10_000;

/** How long the listener's close waits on connections of requests cut off at the drain deadline. */
const CUT_OFF_CLOSE_MS = 500;

/** Default of {@linkcode ServerOptions.drainSeconds}. */
export const DEFAULT_DRAIN_SECONDS = 15;

/** Options of {@linkcode startServer}. */
export interface ServerOptions {
  /** Port on 127.0.0.1 (or `hostname`); 0 picks a free one. @default 8787 */
  port?: number;
  /** Address to listen on. @default "127.0.0.1" */
  hostname?: string;
  /** Folder for the database, secret and (by default) stored files. */
  dataDir: string;
  /**
   * A PostgreSQL URL (`postgres://user:password@host:5432/db`) to keep the server's state in
   * instead of the SQLite file in `dataDir` (`vid server --database`, env `VID_DATABASE_URL`).
   */
  database?: string;
  /** Parallel renders of the local backend. @default 1 */
  workers?: number;
  /**
   * What this instance does (`--role`): `api` serves `/v3` and enqueues renders, `worker`
   * renders them and serves only `/healthz`, `/readyz` and `/metrics`. @default "all"
   */
  role?: ServerRole;
  /**
   * Length of a render's lease, seconds (`--lease-seconds`): a render whose worker stops
   * renewing it for this long is taken over by another. @default 30
   */
  leaseSeconds?: number;
  /**
   * Where renders run: on this machine, or handed to the distributed backend (see
   * `resolveRenderBackend`, which validates flags and environment into this).
   * @default { kind: "local" }
   */
  renderBackend?: RenderBackendConfig;
  /** Base URL clients use; signed links point there. @default the listening address */
  publicUrl?: string;
  /** Storage URL (`file:///…` or `s3://bucket?endpoint=…`). @default <dataDir>/storage */
  storage?: string;
  /** Accept http:// callback URLs to loopback (development only). */
  allowHttpCallbacks?: boolean;
  /**
   * What one render and one account may ask; each one not given takes its default (see
   * `serverLimits`: 600 s, 36,000 frames, half the backend's slots, 100 queued).
   */
  limits?: Partial<ServerLimits>;
  /**
   * Lift the network guard: `url` sources, render pages, remote media and webhooks may
   * reach private and loopback addresses (development only).
   */
  allowPrivateUrls?: boolean;
  /**
   * The host's deadline of one frame's seek and capture, ms (the local backend's renders, the
   * lambda backend's chunk workers). @default 30000
   */
  frameTimeoutMs?: number;
  /**
   * Wall-clock budget of one render, seconds, on either backend (lambda: its execution is
   * stopped). @default 120 + 1 per frame (see `renderBudgetSeconds`)
   */
  maxRenderSeconds?: number;
  /**
   * Frames per chunk of a render spread over the workers of every instance sharing the
   * database (local backend, `--chunk-size`; see `chunk_jobs.ts`). @default a render renders
   * whole on the worker that claimed it
   */
  chunkSize?: number;
  /**
   * Account the render browsers run as when the server runs as root. @default "vid-render",
   * else "nobody" (see `src/render/sandbox.ts`)
   */
  renderUser?: string;
  /** Render without Chromium's sandbox where it cannot start, instead of refusing to start. */
  allowNoSandbox?: boolean;
  /** Told about a degraded set-up (no sandbox). @default console.error */
  onWarning?: (message: string) => void;
  /**
   * Bearer token `GET /metrics` requires; without one `/metrics` is open (it reports counts,
   * no tenant data) and belongs behind the network's own boundary.
   */
  metricsToken?: string;
  /**
   * Addresses or CIDR ranges of reverse proxies whose `X-Forwarded-For` is believed
   * (`--trusted-proxy`), so the throttles count each client, not the proxy. @default none
   */
  trustedProxies?: readonly string[];
  /**
   * Free space `/readyz` asks of the data folder (and a `file://` storage folder) to say
   * ready (`--min-free-space`): bytes, or a share of the disk; `{ bytes: 0 }` turns the check
   * off. @default 512 MiB
   */
  minFreeSpace?: { bytes: number } | { percent: number };
  /**
   * How long {@linkcode RunningServer.close} lets requests in flight (uploads, downloads)
   * finish before cutting them off; new requests are answered 503 meanwhile (see
   * `drain.ts`). `vid server` derives it from `--shutdown-timeout`. @default 15
   */
  drainSeconds?: number;
}

/** A running server. */
export interface RunningServer {
  /** Base URL it listens at, e.g. `http://127.0.0.1:8787`. */
  url: string;
  /**
   * Renders a previous run on this data folder held when it was killed, now free for any
   * worker to take over.
   */
  requeued: number;
  /** What this instance does. */
  role: ServerRole;
  /** What a previous run killed with SIGKILL left and this start cleaned up. */
  reaped: { browsers: number; folders: number };
  /** The render backend in use and how many renders it runs at once. */
  backend: { kind: RenderBackendConfig["kind"]; slots: number };
  /**
   * Stops taking requests (new ones are answered 503 with `Retry-After`), lets those in
   * flight finish for up to {@linkcode ServerOptions.drainSeconds} (then cuts them off, one log
   * line each), sends in-flight renders back to the queue and closes the database.
   */
  close(): Promise<void>;
  /**
   * Ends the server's work now, for a stop past its deadline ({@linkcode close} still
   * waiting): kills every render browser (with its process group) and ffmpeg, puts
   * in-flight renders back in the queue and closes the database. The process should exit
   * right after. Returns the processes killed. The database is given
   * {@linkcode KILL_DATABASE_MS} to take the re-queue; what it missed is taken over when
   * its leases run out (at once by the next start on this data folder).
   */
  kill(): Promise<{ browsers: number; encoders: number }>;
}

/** How long a forced stop waits for the database to take the re-queue of in-flight renders. */
export const KILL_DATABASE_MS = 2000;

/**
 * The signing secret every instance on the database shares: the first to start writes one
 * (an insert that does nothing when another won the race), and all read the one stored. The
 * data folder's `secret` file (from before the secret lived in the database, or another
 * instance's) is carried over when the database has none, and is (re)written with the stored
 * one, so webhook receivers keep reading it where docs/server.md says it is.
 */
async function loadSecret(db: Database, dataDir: string): Promise<string> {
  const file = join(dataDir, "secret");
  const existing = await readFile(file, "utf8").then((text) => text.trim(), () => undefined);
  await db.run(
    "insert into settings (name, value) values ('secret', ?) on conflict (name) do nothing",
    existing || randomId("sec", 32),
  );
  const row = await db.get<{ value: string }>("select value from settings where name = 'secret'");
  if (row === undefined) {
    throw new DatabaseUnavailableError("the signing secret could not be stored or read back");
  }
  if (row.value !== existing) {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await writeFile(file, row.value + "\n", { mode: 0o600 });
    await chmod(file, 0o600);
  }
  return row.value;
}

/**
 * This data folder's name on the leases its runs hold (`<dataDir>/instance`, made once): a
 * start recognises the leases of its own dead predecessors by it, and ends them at once.
 */
async function loadInstance(dataDir: string): Promise<string> {
  const file = join(dataDir, "instance");
  const existing = await readFile(file, "utf8").then((text) => text.trim(), () => "");
  if (existing !== "") return existing;
  const made = `${hostname().replaceAll(":", "-")}-${randomId("d", 4).slice(2)}`;
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await writeFile(file, made + "\n", { mode: 0o600 });
  return made;
}

/**
 * The render user's ffmpeg writes into the server's work folder and each render's temporary
 * folder; when a folder above them is closed to that user (a private TMPDIR or data folder of
 * root's, mode 0700), its processes could not reach their own files and every render would
 * fail on its last step. They then run as this process's user, under the same limits, and
 * the start says so with the folder to open (browsers keep the render user: their profiles
 * fall back to /tmp).
 */
function keepProcessesReachable(dirs: readonly string[], onWarning?: (line: string) => void): void {
  const { user, limits } = processPolicy();
  if (!user) return;
  const closed = dirs.find((dir) => !traversableBy(dir, user));
  if (closed === undefined) return;
  setProcessPolicy({ limits });
  (onWarning ?? log.warn)(
    `warning: --render-user ${user.name} cannot pass through a folder above ${closed}, so ` +
      "ffmpeg and ffprobe run as this user (under the same limits); give the folders above " +
      "--data-dir and TMPDIR mode 0711 or wider to run them as the render user",
  );
}

/** {@linkcode RunningServer.kill}: the processes first, then the re-queue, within a bound. */
async function killNow(
  db: Database,
  owner: string,
): Promise<{ browsers: number; encoders: number }> {
  const killed = { browsers: killLiveBrowsers(), encoders: killLiveProcesses() };
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      (async () => {
        await handBackRenders(db, owner);
        await db.close();
      })(),
      new Promise((resolve) => timer = setTimeout(resolve, KILL_DATABASE_MS)),
    ]);
  } catch {
    // closed by a close() that finished meanwhile; the next start ends the leases anyway
  } finally {
    clearTimeout(timer);
  }
  return killed;
}

/**
 * Closes the listener after requests were cut off at the drain deadline. Their clients may
 * still hold their connections open mid-body, which a graceful close waits on: it gets
 * {@linkcode CUT_OFF_CLOSE_MS}, and the listener then no longer keeps the process alive
 * (the connections end with it).
 */
async function closeCutOff(server: Deno.HttpServer): Promise<void> {
  server.unref();
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    server.shutdown(),
    new Promise((resolve) => timer = setTimeout(resolve, CUT_OFF_CLOSE_MS)),
  ]);
  clearTimeout(timer);
}

/**
 * Starts the API and the render queue.
 *
 * @example
 * ```ts no_run
 * const server = await startServer({ dataDir: "./vid-data", port: 0 });
 * console.log(server.url);
 * await server.close();
 * ```
 */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const config = options.renderBackend ?? { kind: "local" };
  const role = options.role ?? "all";
  const renders = role !== "api";
  const serves = role !== "worker";
  // Before anything is opened: a bad range is the operator's typo, said at once.
  const trustedProxies = parseTrustedProxies(options.trustedProxies ?? []);
  // Before anything is opened: a host where tenants' pages would run unsandboxed is refused.
  await configureServerSandbox({
    renderUser: options.renderUser,
    allowNoSandbox: options.allowNoSandbox,
    probe: config.kind === "local" && renders,
    onWarning: options.onWarning,
  });
  const dataDir = resolve(options.dataDir);
  const db = await openDataDir(dataDir, options.database);
  const secret = await loadSecret(db, dataDir);
  const storage: Storage = options.storage
    ? storageFromUrl(options.storage)
    : new FsStorage(join(dataDir, "storage"));
  // The folder exists from the start, so /readyz reports one that goes missing later.
  if (storage instanceof FsStorage) await mkdir(storage.root, { recursive: true, mode: 0o700 });
  const disk = new DiskSpace(
    storage instanceof FsStorage ? [dataDir, storage.root] : [dataDir],
    options.minFreeSpace ?? { bytes: DEFAULT_MIN_FREE_BYTES },
  );
  const drain = new Drain((line) => log.warn(line));
  const workRoot = join(dataDir, "work");
  const reaped = await reapPredecessors(workRoot);
  const workDir = join(workRoot, `run-${Deno.pid}`);
  await rm(workDir, { recursive: true, force: true });
  await mkdir(join(workRoot, "browsers"), { recursive: true, mode: 0o700 });
  await mkdir(workDir, { recursive: true, mode: 0o700 });
  // The render user's ffmpeg reaches its render folders through these, and nothing else.
  await openPathToProcessUser([dataDir, workRoot, workDir]);
  keepProcessesReachable([workDir, tmpdir()], options.onWarning);
  recordBrowsersIn(join(workRoot, "browsers"));
  const instance = await loadInstance(dataDir);
  const owner = leaseOwner(instance);
  // Log lines name this run as its leases do, so a take-over's line and its row agree.
  configureLog({ instance: owner });
  // What runs of this data folder that were killed still hold is free at once; other
  // instances' leases are left to run out, since their processes cannot be seen from here.
  const processes = await listProcesses();
  const alive = new Set([...(processes ?? []).map((p) => p.pid), Deno.pid]);
  const requeued = processes ? await expireLeasesOfDeadRuns(db, "renders", instance, alive) : 0;
  if (processes) await expireLeasesOfDeadRuns(db, "render_chunks", instance, alive);
  if (processes) await releaseKeysOfDeadRuns(db, instance, alive);
  await db.run("update assets set upload_started_at = null where status = 'pending_upload'");
  const metrics = new ServerMetrics(() => queueDepth(db));
  // Both backends hold a render to the same frame deadline and wall-clock budget.
  const limits = {
    frameTimeoutMs: options.frameTimeoutMs,
    maxRenderSeconds: options.maxRenderSeconds,
  };
  const backend = renders
    ? meteredBackend(
      config.kind === "lambda"
        ? lambdaBackend(config, limits)
        : localBackend(options.workers ?? 1, {
          ...limits,
          ...(options.chunkSize !== undefined && {
            chunks: {
              chunkSize: options.chunkSize,
              leaseMs: (options.leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000,
              owner,
            },
          }),
        }),
      metrics,
    )
    : undefined;
  let queueCancel: (id: string) => void = () => {};
  let queueWake: () => void = () => {};
  const ctx: ServerContext = {
    db,
    storage,
    secret,
    publicUrl: "",
    workDir,
    allowHttpCallbacks: options.allowHttpCallbacks === true,
    allowPrivateUrls: options.allowPrivateUrls === true,
    limits: serverLimits(options.limits ?? {}, backend?.slots ?? 1),
    wake: () => queueWake(),
    cancelRender: (id) => queueCancel(id),
    metrics,
    owner,
    ...(options.metricsToken !== undefined && { metricsToken: options.metricsToken }),
    trustedProxies,
    disk,
    stopping: () => drain.stopping,
  };
  const app = serves ? createApp(ctx) : opsApp(ctx, role);
  const hostname = options.hostname ?? "127.0.0.1";
  const listening = Promise.withResolvers<Deno.NetAddr>();
  const server = Deno.serve({
    port: options.port ?? 8787,
    hostname,
    onListen: (addr) => listening.resolve(addr as Deno.NetAddr),
  }, withRequestId(drain.handler(app.fetch)));
  const addr = await listening.promise;
  const host = addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname;
  const url = `http://${host}:${addr.port}`;
  ctx.publicUrl = (options.publicUrl ?? url).replace(/\/+$/, "");
  const queue = backend
    ? startQueue(ctx, backend, {
      owner,
      leaseMs: (options.leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000,
    })
    : undefined;
  if (queue) {
    queueWake = () => queue.wake();
    queueCancel = (id) => queue.cancel(id);
    queue.wake();
  }
  // Deliveries a previous run left pending (killed during a retry's backoff) go out now.
  // A delivery whose sender dies mid-attempt is sent again once this lease ran out.
  const webhooks = startWebhookSender(ctx, {
    leaseMs: (options.leaseSeconds ?? DEFAULT_LEASE_SECONDS) * 1000,
  });
  ctx.wakeWebhooks = () => webhooks.wake();
  return {
    url,
    requeued,
    role,
    reaped,
    backend: { kind: backend?.kind ?? config.kind, slots: backend?.slots ?? 0 },
    async close(): Promise<void> {
      // Together: a client holding a request open must not keep renders running. The
      // listener closes once the requests in flight are over (or cut off): closing it first
      // would end their bodies mid-stream.
      const drainMs = (options.drainSeconds ?? DEFAULT_DRAIN_SECONDS) * 1000;
      await Promise.all([
        drain.drain(drainMs, "stopping: draining the requests in flight").then(({ cutOff }) =>
          cutOff === 0 ? server.shutdown() : closeCutOff(server)
        ),
        queue?.stop(),
      ]);
      // Deliveries in flight get to finish; the rest stay pending for the next start.
      await webhooks.stop(WEBHOOK_DRAIN_MS);
      await db.close();
      await rm(workDir, { recursive: true, force: true });
    },
    kill: () => killNow(db, owner),
  };
}
