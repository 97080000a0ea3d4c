/**
 * The render queue of the hosted server: a bounded pool of workers takes queued renders
 * from SQLite and hands each to the render backend (`local`: this machine's renderer;
 * `lambda`: the distributed backend), which stores the video and a thumbnail; the queue
 * records the outcome, refunds a failure and fires the webhook. State lives in the
 * database, so a restart re-queues renders that were in flight.
 *
 * @module
 */

import { mkdir } from "node:fs/promises";
import type { ServerContext } from "./context.ts";
import { now, type Row, transaction } from "./db.ts";
import type { RenderBackend, RenderJob, RenderRequest } from "./render_backend.ts";
import { deliverWebhook, type WebhookPayload } from "./webhooks.ts";
import { randomId } from "./secrets.ts";

/** A running queue. */
export interface RenderQueue {
  /** Looks for queued work now. */
  wake(): void;
  /** Stops taking work; renders in flight are cancelled and go back to the queue. */
  stop(): Promise<void>;
}

/**
 * Puts renders that were in flight when the server stopped back in the queue. A render
 * handed to the distributed backend keeps its `execution_arn`, so it resumes polling that
 * execution instead of starting another.
 */
export function requeueInterrupted(ctx: Pick<ServerContext, "db">): number {
  const result = ctx.db.prepare(
    "update renders set status = 'queued', progress = 0, started_at = null where status = 'rendering'",
  ).run();
  return Number(result.changes);
}

function claim(ctx: ServerContext): Row | undefined {
  return transaction(ctx.db, () => {
    const row = ctx.db.prepare(
      "select * from renders where status = 'queued' and deleted_at is null order by seq limit 1",
    ).get() as Row | undefined;
    if (!row) return undefined;
    ctx.db.prepare("update renders set status = 'rendering', started_at = ? where id = ?").run(
      now(),
      row.id,
    );
    return row;
  });
}

/** Progress is written at most this often per render. */
const PROGRESS_WRITE_MS = 500;

/** The job a backend gets for a claimed row. */
function jobOf(ctx: ServerContext, row: Row): RenderJob {
  const id = String(row.id);
  let lastWrite = 0;
  return {
    id,
    assetId: String(row.asset_id),
    request: JSON.parse(String(row.request)) as RenderRequest,
    width: Number(row.width),
    height: Number(row.height),
    durationSeconds: Number(row.duration_seconds ?? 0),
    executionArn: (row.execution_arn as string | null | undefined) ?? null,
    setProgress(fraction: number): void {
      const t = Date.now();
      if (t - lastWrite < PROGRESS_WRITE_MS) return;
      lastWrite = t;
      // 1 only once the video is stored and the render completed.
      const progress = Math.min(0.99, Math.max(0, Number.isFinite(fraction) ? fraction : 0));
      ctx.db.prepare("update renders set progress = ? where id = ?").run(progress, id);
    },
  };
}

async function notify(ctx: ServerContext, id: string): Promise<void> {
  const row = ctx.db.prepare("select * from renders where id = ?").get(id) as Row;
  if (!row.callback_url) return;
  const { renderJson } = await import("./app.ts");
  const record = await renderJson(ctx, row);
  const payload: WebhookPayload = {
    render_id: id,
    status: row.status === "completed" ? "completed" : "failed",
    callback_id: (row.callback_id as string | null) ?? null,
    video_url: (record.video_url as string | null) ?? null,
    error: (row.error as string | null) ?? null,
  };
  const delivery = randomId("whd");
  ctx.db.prepare(
    "insert into webhook_deliveries (id, render_id, url, status, created_at) values (?, ?, ?, 'pending', ?)",
  ).run(delivery, id, String(row.callback_url), now());
  const result = await deliverWebhook({
    url: String(row.callback_url),
    payload,
    secret: ctx.secret,
    // Re-checked at send time: DNS can change after the render was submitted.
    target: { allowPrivate: ctx.allowPrivateUrls, allowLoopback: ctx.allowHttpCallbacks },
  });
  ctx.db.prepare(
    "update webhook_deliveries set status = ?, attempts = ?, last_status = ?, last_error = ?, finished_at = ? where id = ?",
  ).run(
    result.delivered ? "delivered" : "failed",
    result.attempts,
    result.status ?? null,
    result.error ?? null,
    now(),
    delivery,
  );
}

/**
 * Starts the backend's `slots` render workers over the server's database: each claims
 * the oldest queued render, hands it to the backend, records the outcome (a failure
 * refunds the credits) and fires the webhook.
 *
 * @example
 * ```ts
 * const queue = startQueue(ctx, localBackend(1));
 * queue.wake();
 * await queue.stop();
 * ```
 */
export function startQueue(ctx: ServerContext, backend: RenderBackend): RenderQueue {
  const controller = new AbortController();
  let stopping = false;
  let signalWork: () => void = () => {};
  let waiting = new Promise<void>((resolve) => signalWork = resolve);
  const wake = () => {
    signalWork();
    waiting = new Promise<void>((resolve) => signalWork = resolve);
  };
  const loop = async (): Promise<void> => {
    await mkdir(ctx.workDir, { recursive: true });
    while (!stopping) {
      const row = claim(ctx);
      if (!row) {
        await Promise.race([waiting, new Promise((r) => setTimeout(r, 2000))]);
        continue;
      }
      const id = String(row.id);
      try {
        await backend.render(ctx, jobOf(ctx, row), controller.signal);
        ctx.db.prepare(
          "update renders set status = 'completed', progress = 1, completed_at = ? where id = ?",
        ).run(now(), id);
      } catch (error) {
        if (stopping) {
          // Shutting down: the render goes back to the queue for the next start.
          ctx.db.prepare(
            "update renders set status = 'queued', progress = 0, started_at = null where id = ?",
          ).run(id);
          break;
        }
        transaction(ctx.db, () => {
          ctx.db.prepare(
            "update renders set status = 'failed', error = ?, completed_at = ? where id = ?",
          ).run((error as Error).message, now(), id);
          ctx.db.prepare("update accounts set credits = credits + ? where id = ?").run(
            Number(row.credits),
            String(row.account_id),
          );
        });
      }
      notify(ctx, id).catch((error) => console.error(`webhook for ${id}: ${error}`));
    }
  };
  const running = Array.from({ length: backend.slots }, loop);
  return {
    wake,
    async stop(): Promise<void> {
      stopping = true;
      controller.abort();
      wake();
      await Promise.allSettled(running);
      backend.close();
    },
  };
}
