/**
 * The render queue of the hosted server: a bounded pool of workers takes queued renders
 * from SQLite, renders them with the local renderer (the same `renderComposition` as
 * `vid render`), stores the video and a thumbnail, and fires the webhook. State lives in
 * the database, so a restart re-queues renders that were in flight.
 *
 * @module
 */

import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import type { OutputFormat, Quality } from "../render/encode.ts";
import { renderComposition } from "../render/render.ts";
import { renderStill } from "../render/still.ts";
import type { ServerContext } from "./context.ts";
import { now, type Row, transaction } from "./db.ts";
import { deliverWebhook, type WebhookPayload } from "./webhooks.ts";
import { extractProjectZip } from "./zip_check.ts";
import { randomId } from "./secrets.ts";

/** The stored request of a render. */
interface RenderRequest {
  composition: string;
  fps: number;
  quality: Quality;
  format: OutputFormat;
  variables: Record<string, unknown>;
  strict_variables: boolean;
}

/** A running queue. */
export interface RenderQueue {
  /** Looks for queued work now. */
  wake(): void;
  /** Stops taking work; renders in flight are cancelled and go back to the queue. */
  stop(): Promise<void>;
}

/** Puts renders that were in flight when the server stopped back in the queue. */
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

async function renderOne(ctx: ServerContext, row: Row, signal: AbortSignal): Promise<void> {
  const id = String(row.id);
  const request = JSON.parse(String(row.request)) as RenderRequest;
  const dir = await mkdtemp(join(ctx.workDir, `render-${id}-`));
  try {
    const zip = await ctx.storage.get(`assets/${row.asset_id}/project.zip`);
    if (!zip) throw new Error(`the project of asset ${row.asset_id} is missing from storage`);
    const bytes = new Uint8Array(await new Response(zip.body).arrayBuffer());
    const project = join(dir, "project");
    await extractProjectZip(bytes, project, { composition: request.composition });
    let lastWrite = 0;
    const video = join(dir, `video.${request.format}`);
    await renderComposition({
      target: project,
      composition: request.composition,
      output: video,
      fps: request.fps,
      format: request.format,
      quality: request.quality,
      values: request.variables,
      strictVariables: request.strict_variables,
      outputSize: { width: Number(row.width), height: Number(row.height) },
      signal,
      onProgress: (p) => {
        const t = Date.now();
        if (t - lastWrite < 500) return;
        lastWrite = t;
        const progress = p.framesTotal > 0 ? p.framesDone / p.framesTotal : 0;
        ctx.db.prepare("update renders set progress = ? where id = ?").run(
          Math.min(0.99, progress),
          id,
        );
      },
    });
    const thumbnail = join(dir, "thumbnail.jpg");
    await renderStill({
      target: project,
      composition: request.composition,
      time: Math.min(1, Number(row.duration_seconds ?? 0) / 2),
      fps: request.fps,
      output: thumbnail,
      values: request.variables,
    });
    await ctx.storage.putFile(`renders/${id}/video.${request.format}`, video);
    await ctx.storage.putFile(`renders/${id}/thumbnail.jpg`, thumbnail, "image/jpeg");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
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
 * Starts `workers` render workers over the server's database.
 *
 * @example
 * ```ts
 * const queue = startQueue(ctx, 1);
 * queue.wake();
 * await queue.stop();
 * ```
 */
export function startQueue(ctx: ServerContext, workers: number): RenderQueue {
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
        await renderOne(ctx, row, controller.signal);
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
  const running = Array.from({ length: workers }, loop);
  return {
    wake,
    async stop(): Promise<void> {
      stopping = true;
      controller.abort();
      wake();
      await Promise.allSettled(running);
    },
  };
}
