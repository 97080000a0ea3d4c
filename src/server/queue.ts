/**
 * The render queue of the hosted server: a bounded pool of workers takes queued renders
 * from SQLite and hands each to the render backend (`local`: this machine's renderer;
 * `lambda`: the distributed backend), which stores the video and a thumbnail; the queue
 * records the outcome (with its webhook delivery, sent by `webhook_outbox.ts`) and refunds a
 * failure. State lives in the database, so a restart re-queues renders that were in flight.
 *
 * @module
 */

import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { ServerContext } from "./context.ts";
import { now, type Row } from "./db.ts";
import {
  type RenderBackend,
  RenderDeletedError,
  type RenderJob,
  type RenderRequest,
} from "./render_backend.ts";
import { enqueueDelivery } from "./webhook_outbox.ts";
import { tenantMessage } from "./errors.ts";
import { setRenderProgress, transitionRender } from "./renders.ts";
import { backoffDelay, sleep } from "../util/async.ts";

/** A running queue. */
export interface RenderQueue {
  /** Looks for queued work now. */
  wake(): void;
  /** Stops a render in flight because it was deleted; a no-op for one not running. */
  cancel(renderId: string): void;
  /** Stops taking work; renders in flight are cancelled and go back to the queue. */
  stop(): Promise<void>;
}

/**
 * Takes the next render to run: round-robin across accounts, so one account's long queue
 * cannot starve another's. Of the accounts with a queued render and fewer than
 * `maxRendersPerAccount` rendering, the one whose last render started longest ago (or never)
 * goes first, with its oldest queued render; the start times live in the database, so the
 * order survives a restart.
 */
function claim(ctx: ServerContext): Promise<Row | undefined> {
  return ctx.db.transaction(async (tx) => {
    const row = await tx.get(
      `with waiting as (
         select account_id, min(seq) as seq from renders
         where status = 'queued' and deleted_at is null group by account_id
       )
       select r.* from waiting w join renders r on r.seq = w.seq
       where (select count(*) from renders x
              where x.account_id = w.account_id and x.status = 'rendering') < ?
       order by (select max(started_at) from renders y where y.account_id = w.account_id) nulls first, w.seq
       limit 1`,
      ctx.limits.maxRendersPerAccount,
    ) as Row | undefined;
    if (!row) return undefined;
    return await transitionRender(tx, String(row.id), "rendering", { started_at: now() })
      ? row
      : undefined;
  });
}

/** Folders of this server a render error may name, which tenants must not see. */
function serverRoots(ctx: ServerContext): string[] {
  const roots = [
    dirname(dirname(ctx.workDir)),
    tmpdir(),
    fileURLToPath(new URL("../../", import.meta.url)),
    Deno.cwd(),
    Deno.env.get("HOME") ?? "",
  ];
  // Longest first, so a folder inside another is replaced whole.
  return roots.filter((root) => root.length > 1).sort((a, b) => b.length - a.length);
}

/**
 * The page clock's start of a render: its creation time in whole seconds (the time of the
 * claim when a row has none), as `vid render` takes its start time in whole seconds.
 */
function renderEpochMs(createdAt: unknown): number {
  const created = Date.parse(String(createdAt ?? ""));
  return Math.floor((Number.isFinite(created) ? created : Date.now()) / 1000) * 1000;
}

/** Progress is written at most this often per render. */
const PROGRESS_WRITE_MS = 500;

/** The job a backend gets for a claimed row (also a chunk worker's, of its render's row). */
export function jobOf(ctx: ServerContext, row: Row): RenderJob {
  const id = String(row.id);
  let lastWrite = 0;
  return {
    id,
    assetId: String(row.asset_id),
    request: JSON.parse(String(row.request)) as RenderRequest,
    width: Number(row.width),
    height: Number(row.height),
    durationSeconds: Number(row.duration_seconds ?? 0),
    epochMs: renderEpochMs(row.created_at),
    executionArn: (row.execution_arn as string | null | undefined) ?? null,
    setProgress(fraction: number): void {
      const t = Date.now();
      if (t - lastWrite < PROGRESS_WRITE_MS) return;
      lastWrite = t;
      // 1 only once the video is stored and the render completed.
      const progress = Math.min(0.99, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
      // Not awaited: progress is a hint, and a busy database must not fail or slow the render.
      setRenderProgress(ctx.db, id, progress).catch((error) => {
        console.error(`render ${id}: progress not recorded: ${errorText(error)}`);
      });
    },
  };
}

/**
 * Starts the backend's `slots` render workers over the server's database: each claims
 * the next queued render (round-robin across accounts, see `claim`), hands it to the
 * backend, and records the outcome with its webhook delivery (a failure refunds the
 * credits). A worker never ends before `stop()`: errors are logged and retried.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "./context.ts";
 * import { localBackend } from "./local_backend.ts";
 *
 * async function renderPending(ctx: ServerContext): Promise<void> {
 *   const queue = startQueue(ctx, localBackend(1));
 *   queue.wake();
 *   await queue.stop();
 * }
 * ```
 */
export function startQueue(ctx: ServerContext, backend: RenderBackend): RenderQueue {
  const controller = new AbortController();
  /** Renders in flight, each with its own abort (a delete stops only that one). */
  const inFlight = new Map<string, AbortController>();
  let stopping = false;
  let signalWork: () => void = () => {};
  let waiting = new Promise<void>((resolve) => signalWork = resolve);
  const wake = () => {
    signalWork();
    waiting = new Promise<void>((resolve) => signalWork = resolve);
  };
  /** Waits `ms`, or less when the queue stops. */
  const pause = (ms: number): Promise<void> => sleep(ms, controller.signal).catch(() => {});
  /**
   * Runs a database write until it succeeds: the outcome of a finished render must not be
   * lost to a busy database. Gives up only when the queue stops; the render is then still
   * `rendering` and goes back to the queue on the next start.
   */
  const persist = async <T>(what: string, write: () => Promise<T>): Promise<T | undefined> => {
    for (let attempt = 1;; attempt++) {
      try {
        return await write();
      } catch (error) {
        if (stopping) {
          console.error(`render queue: ${what} failed while stopping: ${errorText(error)}`);
          return undefined;
        }
        const delay = backoffDelay(attempt, LOOP_BACKOFF);
        console.error(`render queue: ${what} failed, retrying in ${delay} ms: ${errorText(error)}`);
        await pause(delay);
      }
    }
  };
  /** Claims and runs one render; false when nothing was waiting. */
  const step = async (): Promise<boolean> => {
    if (backend.work && await backend.work(ctx, controller.signal)) return true;
    const row = await claim(ctx);
    if (!row) return false;
    const id = String(row.id);
    const own = new AbortController();
    inFlight.set(id, own);
    const signal = AbortSignal.any([controller.signal, own.signal]);
    let deleted = false;
    try {
      await backend.render(ctx, jobOf(ctx, row), signal);
      // A render deleted while it ran is already `deleted` (and refunded): keep it so.
      deleted = !(await persist(`recording ${id} completed`, () =>
        ctx.db.transaction(async (tx) => {
          if (
            !(await transitionRender(tx, id, "completed", { progress: 1, completed_at: now() }))
          ) {
            return false;
          }
          // The webhook is on record with the state it reports, or neither is.
          await enqueueDelivery(tx, id, "completed");
          return true;
        })) ?? true);
    } catch (error) {
      if (stopping) {
        // Shutting down: the render goes back to the queue for the next start (a restart
        // re-queues it too, should this write fail).
        try {
          await transitionRender(ctx.db, id, "queued", { progress: 0, started_at: null });
        } catch (requeueError) {
          console.error(`render queue: re-queueing ${id} failed: ${errorText(requeueError)}`);
        }
        return true;
      }
      const message = tenantMessage((error as Error).message, serverRoots(ctx));
      deleted = !(await persist(`recording ${id} failed`, () =>
        ctx.db.transaction(async (tx) => {
          const failed = await transitionRender(tx, id, "failed", {
            error: message,
            completed_at: now(),
          });
          if (!failed) return false;
          await tx.run(
            "update accounts set credits = credits + ? where id = ?",
            Number(row.credits),
            String(row.account_id),
          );
          await enqueueDelivery(tx, id, "failed");
          return true;
        })) ?? true);
    } finally {
      inFlight.delete(id);
    }
    if (stopping) return true;
    if (deleted) {
      // Whatever it stored before it stopped goes too.
      await ctx.storage.deletePrefix(`renders/${id}/`).catch(() => {});
      return true;
    }
    ctx.wakeWebhooks?.();
    return true;
  };
  /**
   * One worker: claims and runs renders until the queue stops. Nothing ends it early: an
   * error (a database busy past its timeout, a full disk) is logged and the worker carries
   * on after a backoff that grows while the errors last.
   */
  const loop = async (): Promise<void> => {
    let failures = 0;
    let ready = false;
    while (!stopping) {
      try {
        if (!ready) {
          await mkdir(ctx.workDir, { recursive: true, mode: 0o700 });
          ready = true;
        }
        const worked = await step();
        failures = 0;
        if (!worked) await Promise.race([waiting, pause(2000)]);
      } catch (error) {
        failures++;
        const delay = backoffDelay(failures, LOOP_BACKOFF);
        console.error(`render queue: ${errorText(error)}; carrying on in ${delay} ms`);
        await pause(delay);
      }
    }
  };
  const running = Array.from(
    { length: backend.slots },
    () => loop().catch((error) => console.error(`render queue: worker ended: ${errorText(error)}`)),
  );
  return {
    wake,
    cancel(renderId: string): void {
      inFlight.get(renderId)?.abort(new RenderDeletedError(renderId));
    },
    async stop(): Promise<void> {
      stopping = true;
      controller.abort();
      wake();
      await Promise.allSettled(running);
      backend.close();
    },
  };
}

/** Backoff of a worker whose database or disk keeps failing: 0.5 s doubling to 30 s. */
const LOOP_BACKOFF = { baseMs: 500, maxMs: 30_000, jitter: 0.2 };

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
