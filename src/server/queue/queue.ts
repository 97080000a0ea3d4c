/**
 * The render queue of the hosted server: a bounded pool of workers takes queued renders
 * from SQLite and hands each to the render backend (`local`: this machine's renderer;
 * `lambda`: the distributed backend), which stores the video and a thumbnail; the queue
 * records the outcome (with its webhook delivery, sent by `webhook_outbox.ts`) and refunds a
 * failure. State lives in the database and a worker holds a render only under a lease
 * (`leases.ts`), so any number of instances share one queue, and a render whose worker died
 * is taken over by another when its lease runs out.
 *
 * @module
 */

import { mkdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import type { ServerContext } from "../context.ts";
import { now, type Queries, type Row } from "../database/mod.ts";
import {
  acquireLease,
  DEFAULT_LEASE_SECONDS,
  holdLease,
  holdsLease,
  type Lease,
  leaseExpiredSql,
  type LeaseHolder,
  leaseOwner,
  releaseLease,
} from "./leases.ts";
import {
  type RenderBackend,
  RenderDeletedError,
  type RenderJob,
  type RenderRequest,
} from "./render_backend.ts";
import { enqueueDelivery } from "./webhook_outbox.ts";
import { tenantMessage } from "../http/errors.ts";
import { errorText } from "../../errors.ts";
import { setRenderProgress, transitionRender } from "./renders.ts";
import { backoffDelay, linkSignals, sleep } from "../../util/async.ts";
import { logMemory } from "./memory_log.ts";
import { log } from "../log.ts";

/** A running queue. */
export interface RenderQueue {
  /** The name its leases are held under. */
  readonly owner: string;
  /** Looks for queued work now. */
  wake(): void;
  /** Stops a render in flight because it was deleted; a no-op for one not running. */
  cancel(renderId: string): void;
  /** Stops taking work; renders in flight are cancelled and go back to the queue. */
  stop(): Promise<void>;
}

/** Options of {@linkcode startQueue}. */
export interface QueueOptions {
  /** This run's name on the leases it takes (see `leaseOwner`). @default leaseOwner() */
  owner?: string;
  /** Length of a render's lease, ms (`vid server --lease-seconds`). @default 30000 */
  leaseMs?: number;
  /** Leases a render may be given before a lost one fails it. @default MAX_LEASE_ATTEMPTS */
  maxAttempts?: number;
}

/**
 * How many times a render may be leased before losing its lease once more fails it: its
 * first run and two take-overs. A render that kills its worker every time (a page that
 * exhausts the machine's memory) must not take the cluster's workers down one by one forever.
 */
export const MAX_LEASE_ATTEMPTS = 3;

/** What `claim` found: a render to run under a lease, or one it gave up on. */
type Claim =
  | { kind: "run"; row: Row; lease: Lease; takenOverFrom?: string }
  | { kind: "gave-up"; id: string }
  | undefined;

/**
 * Takes the next render to run, under a lease. First a render whose worker stopped renewing
 * its lease (killed, or cut off from the database) is taken over, counting an attempt; one
 * that has used {@linkcode QueueOptions.maxAttempts} is failed and refunded instead. Then
 * the queued renders go round-robin across accounts, so one account's long queue cannot
 * starve another's: of the accounts with a queued render and fewer than
 * `maxRendersPerAccount` rendering, the one whose last render started longest ago (or never)
 * goes first, with its oldest queued render; the start times live in the database, so the
 * order survives a restart. Rows are picked `for update skip locked`: on PostgreSQL two
 * workers claiming at once take different renders instead of waiting on each other (SQLite
 * has one writer at a time, and its driver drops the clause).
 */
function claim(
  ctx: ServerContext,
  owner: string,
  leaseMs: number,
  maxAttempts: number,
): Promise<Claim> {
  return ctx.db.transaction(async (tx): Promise<Claim> => {
    const stale = await tx.get(
      `select r.* from renders r
       where r.status = 'rendering' and r.deleted_at is null and ${leaseExpiredSql("r")}
       order by r.seq limit 1 for update of r skip locked`,
      Date.now(),
    ) as Row | undefined;
    if (stale) {
      const id = String(stale.id);
      if (Number(stale.attempts) >= maxAttempts) {
        await failRender(
          tx,
          stale,
          `the render was interrupted ${
            Number(stale.attempts)
          } times (its worker stopped or lost the database before it finished); it was not retried again`,
        );
        return { kind: "gave-up", id };
      }
      const lease = await acquireLease(tx, "renders", id, owner, leaseMs);
      if (!lease) return undefined;
      await tx.run("update renders set progress = 0 where id = ?", id);
      // Logged once committed: a transaction run again must not log twice.
      const from = (stale.lease_owner as string | null) ?? "a server from before leases";
      return { kind: "run", row: stale, lease, takenOverFrom: from };
    }
    const row = await tx.get(
      `with waiting as (
         select account_id, min(seq) as seq from renders
         where status = 'queued' and deleted_at is null group by account_id
       )
       select r.* from waiting w join renders r on r.seq = w.seq
       where (select count(*) from renders x
              where x.account_id = w.account_id and x.status = 'rendering') < ?
       order by (select max(started_at) from renders y where y.account_id = w.account_id) nulls first, w.seq
       limit 1 for update of r skip locked`,
      ctx.limits.maxRendersPerAccount,
    ) as Row | undefined;
    if (!row) return undefined;
    const id = String(row.id);
    if (!(await transitionRender(tx, id, "rendering", { started_at: now() }))) return undefined;
    const lease = await acquireLease(tx, "renders", id, owner, leaseMs);
    return lease ? { kind: "run", row, lease } : undefined;
  });
}

/**
 * Fails a render with `message`, refunds its credits and records its webhook, in the
 * caller's transaction. False when it was no longer rendering (deleted meanwhile).
 */
async function failRender(tx: Queries, row: Row, message: string): Promise<boolean> {
  const id = String(row.id);
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
  await tx.run(
    "update renders set lease_owner = null, lease_expires_at = null where id = ?",
    id,
  );
  await enqueueDelivery(tx, id, "failed");
  return true;
}

/** Folders of this server a render error may name, which tenants must not see. */
function serverRoots(ctx: ServerContext): string[] {
  const roots = [
    dirname(dirname(ctx.workDir)),
    tmpdir(),
    fileURLToPath(new URL("../../../", import.meta.url)),
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
        log.error(`render ${id}: progress not recorded: ${errorText(error)}`, {
          renderId: id,
          accountId: String(row.account_id),
        });
      });
    },
  };
}

/**
 * Starts the backend's `slots` render workers over the server's database: each claims
 * the next render under a lease (a take-over, else round-robin across accounts, see
 * `claim`), hands it to the backend while a heartbeat renews the lease, and records the
 * outcome with its webhook delivery (a failure refunds the credits) if it still holds the
 * lease. A worker never ends before `stop()`: errors are logged and retried.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 * import { localBackend } from "./local_backend.ts";
 *
 * async function renderPending(ctx: ServerContext): Promise<void> {
 *   const queue = startQueue(ctx, localBackend(1));
 *   queue.wake();
 *   await queue.stop();
 * }
 * ```
 */
export function startQueue(
  ctx: ServerContext,
  backend: RenderBackend,
  options: QueueOptions = {},
): RenderQueue {
  let signalWork: () => void = () => {};
  const q: QueueState = {
    ctx,
    backend,
    owner: options.owner ?? leaseOwner(),
    leaseMs: options.leaseMs ?? DEFAULT_LEASE_SECONDS * 1000,
    maxAttempts: options.maxAttempts ?? MAX_LEASE_ATTEMPTS,
    controller: new AbortController(),
    inFlight: new Map(),
    stopping: false,
    waiting: new Promise<void>((resolve) => signalWork = resolve),
  };
  const wake = () => {
    signalWork();
    q.waiting = new Promise<void>((resolve) => signalWork = resolve);
  };
  const running = Array.from(
    { length: backend.slots },
    () =>
      workerLoop(q).catch((error) => log.error(`render queue: worker ended: ${errorText(error)}`)),
  );
  return {
    owner: q.owner,
    wake,
    cancel(renderId: string): void {
      q.inFlight.get(renderId)?.abort(new RenderDeletedError(renderId));
    },
    async stop(): Promise<void> {
      q.stopping = true;
      q.controller.abort();
      wake();
      await Promise.allSettled(running);
      backend.close();
    },
  };
}

/** A running queue as its workers share it: what it renders with, and its state. */
interface QueueState {
  readonly ctx: ServerContext;
  readonly backend: RenderBackend;
  /** The name its leases are held under. */
  readonly owner: string;
  readonly leaseMs: number;
  readonly maxAttempts: number;
  /** Aborted by `stop()`: every render in flight and every pause ends. */
  readonly controller: AbortController;
  /** Renders in flight, each with its own abort (a delete stops only that one). */
  readonly inFlight: Map<string, AbortController>;
  /** Set by `stop()`: the workers end, renders in flight go back to the queue. */
  stopping: boolean;
  /** Resolves at the next `wake()` (a new promise after each). */
  waiting: Promise<void>;
}

/** What became of a claimed render: recorded, deleted meanwhile, or no longer this worker's. */
type Outcome = "recorded" | "deleted" | "lost" | undefined;

/** Waits `ms`, or less when the queue stops. */
function pause(q: QueueState, ms: number): Promise<void> {
  return sleep(ms, q.controller.signal).catch(() => {});
}

/**
 * Runs a database write until it succeeds: the outcome of a finished render must not be
 * lost to a busy database. Gives up only when the queue stops; the render is then still
 * `rendering` and is taken over when its lease runs out.
 */
async function persist<T>(
  q: QueueState,
  what: string,
  write: () => Promise<T>,
): Promise<T | undefined> {
  for (let attempt = 1;; attempt++) {
    try {
      return await write();
    } catch (error) {
      if (q.stopping) {
        log.error(`render queue: ${what} failed while stopping: ${errorText(error)}`);
        return undefined;
      }
      const delay = backoffDelay(attempt, LOOP_BACKOFF);
      log.error(`render queue: ${what} failed, retrying in ${delay} ms: ${errorText(error)}`);
      await pause(q, delay);
    }
  }
}

/** Claims and runs one render; false when nothing was waiting. */
async function step(q: QueueState): Promise<boolean> {
  const { ctx, backend } = q;
  if (backend.work && await backend.work(ctx, q.controller.signal)) return true;
  const claimed = await claim(ctx, q.owner, q.leaseMs, q.maxAttempts);
  if (!claimed) return false;
  if (claimed.kind === "gave-up") {
    log.error(`render ${claimed.id}: failed, its lease was lost ${q.maxAttempts} times`, {
      renderId: claimed.id,
    });
    ctx.wakeWebhooks?.();
    return true;
  }
  const { row, lease } = claimed;
  const id = String(row.id);
  const about = { renderId: id, accountId: String(row.account_id) };
  if (claimed.takenOverFrom !== undefined) {
    log.warn(
      `render ${id}: taken over from ${claimed.takenOverFrom}, whose lease ran out ` +
        `(attempt ${lease.attempts} of ${q.maxAttempts})`,
      { ...about, previousOwner: claimed.takenOverFrom, attempt: lease.attempts },
    );
  }
  const own = new AbortController();
  q.inFlight.set(id, own);
  // A render belongs to this worker only while the heartbeat renews its lease; once it is
  // lost another worker may be rendering it, so this one stops and records nothing.
  // A render deleted through another instance is dropped at the next renewal (this
  // instance's own deletes stop it at once through `cancel`).
  const holder = holdLease(ctx.db, lease, {
    onError: (error) => log.error(`render ${id}: lease not renewed: ${errorText(error)}`, about),
    wanted: "deleted_at is null",
  });
  // Not AbortSignal.any: under the queue's lifelong signal it would keep every render's
  // listeners (and what they hold) for the life of the process (see linkSignals).
  const linked = linkSignals(q.controller.signal, own.signal, holder.signal);
  let outcome: Outcome | "handed back";
  try {
    outcome = await renderAndRecord(q, row, lease, holder, linked.signal);
  } finally {
    linked.dispose();
    q.inFlight.delete(id);
    await holder.stop();
    logMemory(`render ${id}`);
  }
  if (outcome !== "handed back") await settle(q, row, outcome, holder);
  return true;
}

/**
 * Renders a claimed render and records how it ended while this worker still holds its
 * lease: completed, or failed (refunded). A render stopped because the queue stops goes back
 * to the queue instead (`"handed back"`).
 */
async function renderAndRecord(
  q: QueueState,
  row: Row,
  lease: Lease,
  holder: LeaseHolder,
  signal: AbortSignal,
): Promise<Outcome | "handed back"> {
  const { ctx } = q;
  const id = String(row.id);
  try {
    await q.backend.render(ctx, jobOf(ctx, row), signal);
    // A render deleted while it ran is already `deleted` (and refunded): keep it so.
    return await persist(q, `recording ${id} completed`, () =>
      ctx.db.transaction(async (tx) => {
        if (!(await holdsLease(tx, lease))) return "lost" as const;
        const completed = await transitionRender(tx, id, "completed", {
          progress: 1,
          completed_at: now(),
        });
        await releaseLease(tx, lease);
        if (!completed) return "deleted" as const;
        // The webhook is on record with the state it reports, or neither is.
        await enqueueDelivery(tx, id, "completed");
        return "recorded" as const;
      }));
  } catch (error) {
    if (holder.signal.aborted) return "lost";
    if (q.stopping) {
      // Shutting down: the render goes back to the queue, its lease released without
      // counting an attempt (should this write fail, the lease runs out and another
      // worker takes it over).
      try {
        const handed = await ctx.db.transaction(async (tx) => {
          if (!(await holdsLease(tx, lease))) return false;
          await transitionRender(tx, id, "queued", { progress: 0, started_at: null });
          return await releaseLease(tx, lease, { handBack: true });
        });
        if (handed) logHandedBack(id, String(row.account_id), "this worker is stopping");
      } catch (requeueError) {
        log.error(`render queue: re-queueing ${id} failed: ${errorText(requeueError)}`, {
          renderId: id,
          accountId: String(row.account_id),
        });
      }
      return "handed back";
    }
    const message = tenantMessage((error as Error).message, serverRoots(ctx));
    // A render's own failure (a missing file, a page that throws) would fail again:
    // it is failed and refunded once, never retried.
    return await persist(q, `recording ${id} failed`, () =>
      ctx.db.transaction(async (tx) => {
        if (!(await holdsLease(tx, lease))) return "lost" as const;
        if (await failRender(tx, row, message)) return "recorded" as const;
        await releaseLease(tx, lease);
        return "deleted" as const;
      }));
  }
}

/**
 * After a render's end: a render lost to another worker is dropped here (its files go when
 * it was deleted meanwhile), a deleted one's files go, a recorded one wakes the webhook
 * sender.
 */
async function settle(
  q: QueueState,
  row: Row,
  outcome: Outcome,
  holder: LeaseHolder,
): Promise<void> {
  const { ctx } = q;
  const id = String(row.id);
  if (outcome === "lost") {
    const current = await ctx.db.get<{ deleted_at: string | null }>(
      "select deleted_at from renders where id = ?",
      id,
    ).catch(() => undefined);
    if (current !== undefined && current.deleted_at !== null) {
      // Deleted (and refunded) through another instance: whatever it stored goes too.
      await ctx.storage.deletePrefix(`renders/${id}/`).catch(() => {});
      return;
    }
    const why = holder.signal.reason instanceof Error
      ? holder.signal.reason.message
      : `lost the lease on renders ${id}`;
    log.warn(`render ${id}: ${why}; dropped here, another worker takes it over`, {
      renderId: id,
      accountId: String(row.account_id),
      handedBack: true,
    });
    return;
  }
  if (q.stopping || outcome === undefined) return;
  if (outcome === "deleted") {
    // Whatever it stored before it stopped goes too.
    await ctx.storage.deletePrefix(`renders/${id}/`).catch(() => {});
    return;
  }
  ctx.wakeWebhooks?.();
}

/**
 * One worker: claims and runs renders until the queue stops. Nothing ends it early: an
 * error (a database busy past its timeout, a full disk) is logged and the worker carries
 * on after a backoff that grows while the errors last.
 */
async function workerLoop(q: QueueState): Promise<void> {
  let failures = 0;
  let ready = false;
  while (!q.stopping) {
    try {
      if (!ready) {
        await mkdir(q.ctx.workDir, { recursive: true, mode: 0o700 });
        ready = true;
      }
      const worked = await step(q);
      failures = 0;
      if (!worked) await Promise.race([q.waiting, pause(q, 2000)]);
    } catch (error) {
      failures++;
      const delay = backoffDelay(failures, LOOP_BACKOFF);
      log.error(`render queue: ${errorText(error)}; carrying on in ${delay} ms`);
      await pause(q, delay);
    }
  }
}

/**
 * Sends the renders `owner` holds back to the queue at once, their leases released without
 * counting an attempt: a server stopped past its deadline, whose workers could not.
 *
 * @returns How many went back.
 */
export async function handBackRenders(db: Queries, owner: string): Promise<number> {
  // Read first for the log: the renders are this run's, so nothing else moves them meanwhile.
  const held = await db.all<{ id: string; account_id: string }>(
    "select id, account_id from renders where status = 'rendering' and deleted_at is null and lease_owner = ?",
    owner,
  );
  const handed = await db.run(
    `update renders set status = 'queued', progress = 0, started_at = null, lease_owner = null,
       lease_expires_at = null, attempts = case when attempts > 0 then attempts - 1 else 0 end
     where status = 'rendering' and deleted_at is null and lease_owner = ?`,
    owner,
  );
  for (const row of held) {
    logHandedBack(row.id, row.account_id, "the server stopped past its deadline");
  }
  return handed;
}

/** The one line of a render this worker gave back to the queue (no attempt counted). */
function logHandedBack(renderId: string, accountId: string, why: string): void {
  log.info(`render ${renderId}: handed back to the queue (${why}); another worker takes it`, {
    renderId,
    accountId,
    handedBack: true,
  });
}

/** Backoff of a worker whose database or disk keeps failing: 0.5 s doubling to 30 s. */
const LOOP_BACKOFF = { baseMs: 500, maxMs: 30_000, jitter: 0.2 };
