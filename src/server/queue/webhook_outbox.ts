/**
 * Durable render webhooks of the hosted server: a transactional outbox. When a render
 * ends, its delivery row is written in the same transaction as its `completed` or `failed`
 * state ({@linkcode enqueueDelivery}), so a render never ends without its webhook on
 * record. A sender ({@linkcode startWebhookSender}) makes one attempt at a time and keeps
 * the count and the next attempt's time in the row, so a server stopped or killed during a
 * retry's backoff resends on its next start instead of losing the webhook. Every attempt of
 * a delivery carries the same id (`delivery_id`, signed, and `vid-delivery-id`), so a
 * receiver drops the duplicates that at-least-once delivery brings. Every instance on the
 * database runs a sender; one takes a delivery by pushing its next attempt's time past the
 * attempt it makes (a short lease), so instances do not send the same attempt together.
 *
 * Signing, the retry rules of one attempt and the address checks stay in
 * `src/webhooks/webhooks.ts`.
 *
 * @module
 */

import type { ServerContext } from "../context.ts";
import { now, type Queries, type Row } from "../database/mod.ts";
import { renderJson } from "./renders.ts";
import { randomId } from "../auth/secrets.ts";
import { backoffDelay as sharedBackoff, sleep } from "../../util/async.ts";
import { backoffDelay, deliverWebhook, type WebhookPayload } from "../../webhooks/webhooks.ts";

/** Attempts of one delivery in all, across restarts; then it is `failed`. */
export const MAX_DELIVERY_ATTEMPTS = 6;
/** Deliveries sent at once. */
const MAX_SENDS = 8;
/** How often the sender looks for deliveries whose backoff has passed. */
const POLL_MS = 1000;
/**
 * How long a sender holds a delivery it is sending: other instances on the database skip it
 * meanwhile (one attempt takes at most 10 s), and take it if the sender dies.
 */
const SEND_CLAIM_MS = 60_000;
/** Backoff of a sender whose database keeps failing: 0.5 s doubling to 30 s. */
const LOOP_BACKOFF = { baseMs: 500, maxMs: 30_000, jitter: 0.2 };

/** How a render ended, as its webhook says. */
export type DeliveryEvent = "completed" | "failed";

/**
 * Records the webhook of a render that just ended, if it has a `callback_url`: a `pending`
 * delivery due now. Call it inside the transaction that moves the render to `event`.
 *
 * @returns The delivery id, or undefined when the render has no `callback_url`.
 */
export async function enqueueDelivery(
  db: Queries,
  renderId: string,
  event: DeliveryEvent,
): Promise<string | undefined> {
  const render = await db.get("select callback_url from renders where id = ?", renderId) as
    | Row
    | undefined;
  if (!render?.callback_url) return undefined;
  const id = randomId("whd");
  await db.run(
    "insert into webhook_deliveries (id, render_id, url, status, event, next_attempt_at, created_at) values (?, ?, ?, 'pending', ?, ?, ?)",
    id,
    renderId,
    String(render.callback_url),
    event,
    Date.now(),
    now(),
  );
  return id;
}

/** A running webhook sender. */
export interface WebhookSender {
  /** Looks for due deliveries now (a render just ended). */
  wake(): void;
  /**
   * Stops starting attempts and waits up to `deadlineMs` for those in flight; any still
   * running then are cancelled and stay pending, for the next start.
   */
  stop(deadlineMs: number): Promise<void>;
}

/** The payload of delivery `row`, from its render as it is now (a fresh `video_url`). */
async function payloadOf(ctx: ServerContext, row: Row, render: Row): Promise<WebhookPayload> {
  const event = row.event === "completed" || row.event === "failed"
    ? row.event
    : render.status === "completed"
    ? "completed"
    : "failed";
  const record = await renderJson(ctx, render);
  return {
    render_id: String(render.id),
    status: event,
    callback_id: (render.callback_id as string | null) ?? null,
    video_url: event === "completed" ? (record.video_url as string | null) ?? null : null,
    error: event === "failed" ? (render.error as string | null) ?? null : null,
    delivery_id: String(row.id),
  };
}

/**
 * Starts sending the server's pending webhook deliveries: those left by a previous run
 * first, then each one as its render ends or its backoff passes. One attempt per call of
 * `deliverWebhook`; the outcome goes to the row (`delivered`; `failed` after a final answer
 * or {@linkcode MAX_DELIVERY_ATTEMPTS}; else `pending` with the next attempt's time). The
 * loop never ends early: a database error is logged and retried with backoff.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 *
 * async function sendPending(ctx: ServerContext): Promise<void> {
 *   const sender = startWebhookSender(ctx);
 *   sender.wake();
 *   await sender.stop(10_000);
 * }
 * ```
 */
export function startWebhookSender(ctx: ServerContext): WebhookSender {
  const controller = new AbortController();
  const stopped = new AbortController();
  const inFlight = new Map<string, Promise<void>>();
  let stopping = false;
  let signalWork: () => void = () => {};
  let waiting = new Promise<void>((resolve) => signalWork = resolve);
  const wake = (): void => {
    signalWork();
    waiting = new Promise<void>((resolve) => signalWork = resolve);
  };
  const pause = (ms: number): Promise<void> => sleep(ms, stopped.signal).catch(() => {});

  const send = async (row: Row): Promise<void> => {
    const id = String(row.id);
    const render = await ctx.db.get("select * from renders where id = ?", String(row.render_id)) as
      | Row
      | undefined;
    if (!render) {
      await ctx.db.run(
        "update webhook_deliveries set status = 'failed', last_error = 'the render is gone', finished_at = ? where id = ?",
        now(),
        id,
      );
      return;
    }
    const attempt = Number(row.attempts) + 1;
    const result = await deliverWebhook({
      url: String(row.url),
      payload: await payloadOf(ctx, row, render),
      secret: ctx.secret,
      attempts: 1,
      firstAttempt: attempt,
      signal: controller.signal,
      // Re-checked at send time: DNS can change after the render was submitted.
      target: { allowPrivate: ctx.allowPrivateUrls, allowLoopback: ctx.allowHttpCallbacks },
    });
    // Cut short by the shutdown deadline: still pending, due again at once for any sender.
    if (controller.signal.aborted && !result.delivered) {
      await ctx.db.run(
        "update webhook_deliveries set next_attempt_at = null where id = ? and status = 'pending'",
        id,
      );
      return;
    }
    const final = result.delivered || !result.retryable || attempt >= MAX_DELIVERY_ATTEMPTS;
    await ctx.db.run(
      "update webhook_deliveries set status = ?, attempts = ?, last_status = ?, last_error = ?, next_attempt_at = ?, finished_at = ? where id = ?",
      result.delivered ? "delivered" : final ? "failed" : "pending",
      attempt,
      result.status ?? null,
      result.error ?? null,
      final ? null : Date.now() + backoffDelay(attempt),
      final ? now() : null,
      id,
    );
    if (!result.delivered) {
      console.error(
        `webhook ${id} of render ${row.render_id}: attempt ${attempt} failed (${result.error})` +
          (final ? "; giving up" : "; will retry"),
      );
    }
  };

  const loop = async (): Promise<void> => {
    let failures = 0;
    while (!stopping) {
      try {
        const due = await ctx.db.all(
          "select * from webhook_deliveries where status = 'pending' and coalesce(next_attempt_at, 0) <= ? order by created_at limit ?",
          Date.now(),
          MAX_SENDS + inFlight.size,
        ) as Row[];
        for (const row of due) {
          const id = String(row.id);
          if (inFlight.size >= MAX_SENDS || stopping) break;
          if (inFlight.has(id)) continue;
          const at = Date.now();
          const taken = await ctx.db.run(
            "update webhook_deliveries set next_attempt_at = ? where id = ? and status = 'pending' and coalesce(next_attempt_at, 0) <= ?",
            at + SEND_CLAIM_MS,
            id,
            at,
          );
          // Another instance is sending it.
          if (taken !== 1) continue;
          // A send that failed (its row could not be written) waits for the next poll.
          const sending = send(row).then(() => true, (error) => {
            console.error(`webhook ${id}: ${error instanceof Error ? error.message : error}`);
            return false;
          }).then((sent) => {
            inFlight.delete(id);
            if (sent) wake();
          });
          inFlight.set(id, sending);
        }
        failures = 0;
      } catch (error) {
        failures++;
        const delay = sharedBackoff(failures, LOOP_BACKOFF);
        console.error(
          `webhook sender: ${
            error instanceof Error ? error.message : error
          }; carrying on in ${delay} ms`,
        );
        await pause(delay);
        continue;
      }
      await Promise.race([waiting, pause(POLL_MS)]);
    }
  };
  const running = loop().catch((error) => console.error(`webhook sender ended: ${error}`));

  return {
    wake,
    async stop(deadlineMs: number): Promise<void> {
      stopping = true;
      stopped.abort();
      wake();
      await running;
      const all = Promise.allSettled([...inFlight.values()]);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => timer = setTimeout(resolve, deadlineMs));
      await Promise.race([all, late]);
      clearTimeout(timer);
      controller.abort();
      await all;
    },
  };
}
