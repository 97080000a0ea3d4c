/**
 * One render's chunks across workers (`vid server --chunk-size`): a render longer than one
 * chunk is cut by the planner every path shares ({@linkcode serverChunkPlan}) and its chunks
 * become rows of `render_chunks`, which any worker of any instance sharing the database
 * claims with a lease (`leases.ts`: a heartbeat every third of the lease; a worker killed
 * mid-chunk stops renewing, and the chunk is taken over when its lease runs out, the attempt
 * counted).
 *
 * The worker that claimed the render from the queue coordinates it: it writes the rows,
 * renders chunks of its own render while any wait, reports progress as frames done over all
 * chunks, and once every chunk is stored joins them ({@linkcode assembleStoredRender}) while
 * it still holds the render, so the render is assembled, stored, charged and announced once,
 * by the queue's own completion. Should the coordinator die, the queue gives the render to
 * another worker, which finds the rows and goes on: chunks already stored are not rendered
 * again. Other workers help through the backend's `work` (the queue asks for it before it
 * claims a new render, so started renders finish first).
 *
 * A chunk that fails (a file missing from the project, a page error, a hung page) fails the
 * render at once and is not retried: the same page fails the same way on any worker. A chunk
 * whose lease is lost more than `maxAttempts` times fails it too, saying so.
 *
 * @module
 */

import type { BrowserPool } from "../../render/capture_mode.ts";
import type { Chunk } from "../../render/chunk_plan.ts";
import { linkSignals, sleep } from "../../util/async.ts";
import { errorText, EXIT_FAILED, VidError } from "../../errors.ts";
import type { ServerContext } from "../context.ts";
import { now, type Queries, type Row } from "../database/mod.ts";
import {
  acquireLease,
  holdLease,
  holdsLease,
  type Lease,
  leaseExpiredSql,
  leaseOwner,
  releaseLease,
} from "./leases.ts";
import { jobOf, MAX_LEASE_ATTEMPTS } from "./queue.ts";
import type { RenderJob } from "./render_backend.ts";
import type { RenderOutcome } from "./metrics.ts";
import { log } from "../log.ts";
import {
  assembleStoredRender,
  renderStoredChunk,
  type ServerChunkOptions,
  serverChunkPlan,
} from "./chunks.ts";

/** The table of chunk rows. */
const TABLE = "render_chunks";

/** How often a coordinator looks at its chunks while other workers render them, ms. */
const POLL_MS = 250;
/** A chunk's frames done are written at most this often, ms. */
const PROGRESS_WRITE_MS = 500;

/** How renders are spread over workers (the local backend's `chunks`). */
export interface ChunkFanOutOptions extends ServerChunkOptions {
  /** Frames per chunk: a render with more is spread over workers. */
  chunkSize: number;
  /** Length of a chunk's lease, ms (`--lease-seconds`). @default 30000 */
  leaseMs?: number;
  /**
   * This run's lease owner (`ServerContext.owner`); its workers are `<owner>/<n>`, so a start
   * on the same data folder ends the leases of a dead run's chunks too.
   * @default a new `leaseOwner()`
   */
  owner?: string;
  /** Leases of a chunk lost before the render fails. @default 3 (as a render's) */
  maxAttempts?: number;
}

/** A chunk of a render failed, so the render did (the message names the chunk and why). */
export class ChunkJobError extends VidError {
  /** Always `"ChunkJobError"`. */
  override name = "ChunkJobError";
  /** The chunk's position in its render's plan. */
  readonly index: number;
  /**
   * Creates the error.
   *
   * @param index The chunk's position.
   * @param message What happened to it.
   */
  constructor(index: number, message: string) {
    super(message, { field: "chunk", exitCode: EXIT_FAILED });
    this.index = index;
  }
}

/** A chunk row leased to a worker. */
export interface ClaimedChunk {
  /** The lease on its row (`id` = `<render id>:<index>`). */
  lease: Lease;
  /** Its render. */
  renderId: string;
  /** Its frames. */
  chunk: Chunk;
  /** The worker whose lease on it ran out, when this claim took it over. */
  takenOverFrom?: string;
}

function chunkOf(row: Row): Chunk {
  const from = Number(row.from_frame);
  const to = Number(row.to_frame);
  return { index: Number(row.idx), from, to, frames: to - from + 1 };
}

function describe(renderId: string, chunk: Chunk): string {
  return `render ${renderId}: chunk ${chunk.index} (frames ${chunk.from}-${chunk.to})`;
}

/**
 * The chunk workers of one server process: the render's coordinator ({@linkcode fanOut})
 * and the helpers ({@linkcode workOnChunk}) share its warm browsers and its name.
 */
export interface ChunkWorkers {
  readonly options: ChunkFanOutOptions;
  readonly browsers?: BrowserPool;
  readonly frameTimeoutMs?: number;
  /** Runs `work` as one of this process's workers, named `<host>:<pid>:…/<n>` in chunk rows. */
  asWorker<T>(work: (name: string) => Promise<T>): Promise<T>;
}

/**
 * The chunk workers of this process: each unit of work takes the lowest free worker number,
 * so a chunk row's `worker` says which of this process's workers rendered it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const workers = chunkWorkers({ chunkSize: 240 });
 * const names = await Promise.all([1, 2].map(() => workers.asWorker(async (name) => name)));
 * assert.notEqual(names[0], names[1]);
 * ```
 */
export function chunkWorkers(
  options: ChunkFanOutOptions,
  resources: { browsers?: BrowserPool; frameTimeoutMs?: number } = {},
): ChunkWorkers {
  const base = options.owner ?? leaseOwner();
  const busy = new Set<number>();
  return {
    options,
    browsers: resources.browsers,
    frameTimeoutMs: resources.frameTimeoutMs,
    async asWorker<T>(work: (name: string) => Promise<T>): Promise<T> {
      let n = 1;
      while (busy.has(n)) n++;
      busy.add(n);
      try {
        return await work(`${base}/${n}`);
      } finally {
        busy.delete(n);
      }
    },
  };
}

/** The chunk rows of a render, as its plan, in order. */
async function plannedChunks(ctx: ServerContext, renderId: string): Promise<Chunk[]> {
  const rows = await ctx.db.all(
    `select idx, from_frame, to_frame from ${TABLE} where render_id = ? order by idx`,
    renderId,
  );
  return rows.map(chunkOf);
}

/**
 * Writes the chunk rows of `job` unless an earlier attempt of the render wrote them (those
 * are kept, with what they hold: a chunk stored is not rendered again).
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 * import type { RenderJob } from "./render_backend.ts";
 * import { serverChunkPlan } from "./chunks.ts";
 *
 * async function plan(ctx: ServerContext, job: RenderJob): Promise<void> {
 *   await writeChunkRows(ctx, job, serverChunkPlan(job, { chunkSize: 240 }));
 * }
 * ```
 */
export async function writeChunkRows(
  ctx: ServerContext,
  job: RenderJob,
  plan: Chunk[],
): Promise<void> {
  await ctx.db.transaction(async (tx) => {
    for (const chunk of plan) {
      await tx.run(
        `insert into ${TABLE} (id, render_id, idx, from_frame, to_frame, frames, status, created_at)
         values (?, ?, ?, ?, ?, ?, 'pending', ?) on conflict (id) do nothing`,
        `${job.id}:${chunk.index}`,
        job.id,
        chunk.index,
        chunk.from,
        chunk.to,
        chunk.frames,
        now(),
      );
    }
  });
}

/**
 * Claims the next chunk waiting (of `renderId` only, when given) with a lease: a pending one,
 * or one whose worker stopped renewing its lease. A chunk lost more than `maxAttempts` times
 * is failed instead. Only chunks of renders still `rendering` are claimed.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 *
 * async function next(ctx: ServerContext): Promise<string | undefined> {
 *   const claimed = await claimChunk(ctx, "host:1:w_abc/1", { chunkSize: 240 });
 *   return claimed?.lease.id;
 * }
 * ```
 */
export function claimChunk(
  ctx: ServerContext,
  worker: string,
  options: ChunkFanOutOptions,
  renderId?: string,
): Promise<ClaimedChunk | undefined> {
  const leaseMs = options.leaseMs ?? 30_000;
  const maxAttempts = options.maxAttempts ?? MAX_LEASE_ATTEMPTS;
  return ctx.db.transaction(async (tx) => {
    for (;;) {
      const at = Date.now();
      const row = await tx.get(
        `select c.* from ${TABLE} c join renders r on r.id = c.render_id
         where r.status = 'rendering'
           and (c.status = 'pending' or (c.status = 'running' and ${leaseExpiredSql("c")}))
           ${renderId === undefined ? "" : "and c.render_id = ?"}
         order by c.created_at, c.idx limit 1 for update of c skip locked`,
        ...(renderId === undefined ? [at] : [at, renderId]),
      );
      if (!row) return undefined;
      const chunk = chunkOf(row);
      const id = String(row.id);
      if (row.status === "running" && Number(row.attempts) >= maxAttempts) {
        await tx.run(
          `update ${TABLE} set status = 'failed', error = ?, lease_owner = null, completed_at = ?
           where id = ?`,
          `${
            describe(String(row.render_id), chunk)
          } was lost by its worker ${row.attempts} times (killed, or cut off from the ` +
            "database); giving up",
          now(),
          id,
        );
        continue;
      }
      const lease = await acquireLease(tx, TABLE, id, worker, leaseMs);
      if (!lease) return undefined;
      await tx.run(
        `update ${TABLE} set status = 'running', worker = ?, frames_done = 0 where id = ?`,
        worker,
        id,
      );
      return {
        lease,
        renderId: String(row.render_id),
        chunk,
        // Logged by the worker once this transaction committed.
        ...(row.status === "running" && { takenOverFrom: String(row.lease_owner) }),
      };
    }
  });
}

/**
 * Renders a claimed chunk under its lease and records what became of it: `done`, `failed`
 * with the error (no retry), `pending` again when `stop` aborted (the worker is stopping:
 * handed back, the attempt not counted), or nothing when the lease was lost (another worker
 * has the chunk now).
 */
async function runClaimed(
  ctx: ServerContext,
  workers: ChunkWorkers,
  claimed: ClaimedChunk,
  job: RenderJob,
  stop: AbortSignal,
  onFrame: () => void = () => {},
): Promise<void> {
  const { lease, chunk } = claimed;
  const about = { renderId: job.id, chunk: chunk.index };
  if (claimed.takenOverFrom !== undefined) {
    log.warn(
      `${describe(job.id, chunk)}: taken over from ${claimed.takenOverFrom}, whose lease ran ` +
        `out (attempt ${lease.attempts})`,
      { ...about, previousOwner: claimed.takenOverFrom, attempt: lease.attempts },
    );
  }
  const holder = holdLease(ctx.db, lease, {
    onError: (error) =>
      log.error(`${describe(job.id, chunk)}: lease not renewed: ${errorText(error)}`, about),
  });
  const started = performance.now();
  // Into `vid_chunk_duration_seconds`, by how the chunk ended for this worker.
  const finished = (outcome: RenderOutcome): void =>
    ctx.metrics?.chunkFinished(outcome, (performance.now() - started) / 1000);
  let framesDone = 0;
  let lastWrite = 0;
  // An outcome is recorded only while the lease is still this worker's.
  const record = (write: (tx: Queries) => Promise<void>): Promise<void> =>
    ctx.db.transaction(async (tx) => {
      if (await holdsLease(tx, lease)) await write(tx);
    });
  // Not AbortSignal.any: `stop` lives as long as the process and would keep each chunk's
  // listeners (and what they hold) reachable (see linkSignals).
  const linked = linkSignals(holder.signal, stop);
  try {
    await renderStoredChunk(ctx, job, chunk, {
      signal: linked.signal,
      browsers: workers.browsers,
      frameTimeoutMs: workers.frameTimeoutMs,
      onFrame: () => {
        onFrame();
        framesDone++;
        const t = Date.now();
        if (t - lastWrite < PROGRESS_WRITE_MS) return;
        lastWrite = t;
        // A hint: a busy database must not fail or slow the chunk.
        ctx.db.run(
          `update ${TABLE} set frames_done = ? where id = ? and lease_owner = ?`,
          framesDone,
          lease.id,
          lease.owner,
        )
          .catch(() => {});
      },
    });
    await record(async (tx) => {
      await tx.run(
        `update ${TABLE} set status = 'done', frames_done = frames, completed_at = ? where id = ?`,
        now(),
        lease.id,
      );
      await releaseLease(tx, lease);
    });
    finished("completed");
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    log.info(`${describe(job.id, chunk)} rendered by ${lease.owner} in ${seconds} s`, about);
  } catch (error) {
    if (holder.signal.aborted || stop.aborted) finished("cancelled");
    else finished("failed");
    if (holder.signal.aborted) {
      log.warn(`${describe(job.id, chunk)}: ${errorText(holder.signal.reason)}; dropped`, about);
      return;
    }
    if (stop.aborted) {
      await record(async (tx) => {
        await tx.run(
          `update ${TABLE} set status = 'pending', frames_done = 0 where id = ?`,
          lease.id,
        );
        await releaseLease(tx, lease, { handBack: true });
      }).catch((recordError) => {
        // Not handed back: its lease runs out and another worker takes it over.
        log.error(
          `${describe(job.id, chunk)}: not handed back: ${errorText(recordError)}`,
          about,
        );
      });
      return;
    }
    await record(async (tx) => {
      await tx.run(
        `update ${TABLE} set status = 'failed', error = ?, completed_at = ? where id = ?`,
        `chunk ${chunk.index} (frames ${chunk.from}-${chunk.to}) failed: ${errorText(error)}`,
        now(),
        lease.id,
      );
      await releaseLease(tx, lease);
    });
  } finally {
    linked.dispose();
    await holder.stop();
  }
}

/**
 * One chunk of any render under way, rendered by one of this process's workers, when one
 * waits (the local backend's `work`).
 *
 * @returns Whether there was a chunk.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 *
 * async function helpOut(ctx: ServerContext, workers: ChunkWorkers): Promise<void> {
 *   while (await workOnChunk(ctx, workers, AbortSignal.timeout(60_000))) { }
 * }
 * ```
 */
export function workOnChunk(
  ctx: ServerContext,
  workers: ChunkWorkers,
  stop: AbortSignal,
): Promise<boolean> {
  return workers.asWorker(async (worker) => {
    if (stop.aborted) return false;
    const claimed = await claimChunk(ctx, worker, workers.options);
    if (!claimed) return false;
    const row = await ctx.db.get("select * from renders where id = ?", claimed.renderId);
    if (!row) {
      await releaseLease(ctx.db, claimed.lease, { handBack: true });
      return true;
    }
    // A worker helping another worker's render is busy (`vid_workers_busy`) while it holds
    // the chunk; the coordinator's own chunks are counted with its render.
    if (ctx.metrics) ctx.metrics.busy++;
    try {
      await runClaimed(ctx, workers, claimed, jobOf(ctx, row), stop);
    } finally {
      if (ctx.metrics) ctx.metrics.busy--;
    }
    // Deleted or failed meanwhile: what this chunk stored is nobody's.
    const status = await ctx.db.get<{ status: string }>(
      "select status from renders where id = ?",
      claimed.renderId,
    );
    if (status?.status !== "rendering") {
      await ctx.storage.deletePrefix(`renders/${claimed.renderId}/chunks/`).catch(() => {});
    }
    return true;
  });
}

/** Whether `job` is rendered in chunks by several workers: more frames than one chunk. */
export function spreads(job: RenderJob, options: ChunkFanOutOptions | undefined): boolean {
  return options !== undefined && serverChunkPlan(job, options).length > 1;
}

/**
 * Renders `job` in chunks spread over the workers, as its coordinator: writes the chunk rows,
 * renders its chunks while any wait, follows the others' progress, fails with the first
 * failed chunk, and joins the stored chunks into the render's video and thumbnail. Resolves
 * when the video is stored; the queue completes the render.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 * import type { RenderJob } from "./render_backend.ts";
 *
 * async function spread(ctx: ServerContext, job: RenderJob, signal: AbortSignal): Promise<void> {
 *   await fanOut(ctx, chunkWorkers({ chunkSize: 240 }), job, signal);
 * }
 * ```
 */
export async function fanOut(
  ctx: ServerContext,
  workers: ChunkWorkers,
  job: RenderJob,
  signal: AbortSignal,
): Promise<void> {
  await writeChunkRows(ctx, job, serverChunkPlan(job, workers.options));
  // The rows are the plan: an earlier attempt's, should the chunk size have changed since.
  const plan = await plannedChunks(ctx, job.id);
  // Idle workers of this process join in; other instances find the rows when they look.
  ctx.wake();
  const total = plan.reduce((sum, chunk) => sum + chunk.frames, 0);
  // Frames done over all chunks at the last look, plus this worker's since: a hint that
  // moves while the coordinator renders a chunk itself (the queue keeps it below 1).
  let done = 0;
  for (;;) {
    signal.throwIfAborted();
    const worked = await workers.asWorker(async (worker) => {
      const claimed = await claimChunk(ctx, worker, workers.options, job.id);
      if (claimed) {
        await runClaimed(ctx, workers, claimed, job, signal, () => {
          done++;
          job.setProgress(total > 0 ? done / total : 0);
        });
      }
      return claimed !== undefined;
    });
    signal.throwIfAborted();
    const rows = await ctx.db.all<
      { idx: number; status: string; frames_done: number; error: string | null }
    >(
      `select idx, status, frames_done, error from ${TABLE} where render_id = ? order by idx`,
      job.id,
    );
    const failed = rows.find((row) => row.status === "failed");
    if (failed) {
      throw new ChunkJobError(Number(failed.idx), failed.error ?? `chunk ${failed.idx} failed`);
    }
    done = rows.reduce((sum, row) => sum + Number(row.frames_done), 0);
    job.setProgress(total > 0 ? done / total : 0);
    if (rows.every((row) => row.status === "done")) break;
    if (!worked) await sleep(POLL_MS, signal);
  }
  await assembleStoredRender(ctx, job, plan, { signal });
  await ctx.storage.deletePrefix(`renders/${job.id}/chunks/`);
}
