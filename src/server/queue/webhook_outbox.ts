/**
 * Durable render webhooks of the hosted server: a transactional outbox. When a render
 * ends, its delivery row is written in the same transaction as its `completed` or `failed`
 * state ({@linkcode enqueueDelivery}), so a render never ends without its webhook on
 * record. A sender ({@linkcode startWebhookSender}) makes one attempt at a time and keeps
 * the count and the next attempt's time in the row, so a server stopped or killed during a
 * retry's backoff resends on its next start instead of losing the webhook. Every attempt of
 * a delivery carries the same id (`delivery_id`, signed, and `vid-delivery-id`), so a
 * receiver drops the duplicates that at-least-once delivery brings. Every instance on the
 * database runs a sender; one takes a delivery by counting the attempt and pushing its next
 * attempt's time a lease ahead (`vid server --lease-seconds`, renewed every third of it while
 * the attempt lasts), so instances do not send the same attempt together, and a delivery
 * whose sender was killed mid-attempt is sent again by any instance once that lease ran out.
 * Each resend writes one log line.
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
import { DEFAULT_LEASE_SECONDS } from "./leases.ts";
import { log } from "../log.ts";
import { errorText } from "../../errors.ts";

/** Attempts of one delivery in all, across restarts; then it is `failed`. */
export const MAX_DELIVERY_ATTEMPTS = 6;
/** Deliveries sent at once. */
const MAX_SENDS = 8;
/** How often the sender looks for deliveries whose backoff has passed. */
const POLL_MS = 1000;
/**
 * What a delivery's `last_error` says while an attempt is under way: still there when the
 * next sender takes the delivery, it tells that the attempt before was cut off (its sender
 * killed, or stopped past its deadline) rather than answered.
 */
const INTERRUPTED = "interrupted: the sender stopped during attempt";
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

/** Options of {@linkcode startWebhookSender}. */
export interface WebhookSenderOptions {
  /**
   * How long a sender holds a delivery it is sending, ms (the server's lease length): others
   * skip it meanwhile, and send it again once it ran out unrenewed (the sender died).
   * @default 30000
   */
  leaseMs?: number;
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

/** Sends the attempt `row` was just taken for (`row.attempts` counts it already). */
async function sendAttempt(
  ctx: ServerContext,
  row: Row,
  leaseMs: number,
  signal: AbortSignal,
): Promise<void> {
  const id = String(row.id);
  const attempt = Number(row.attempts);
  // Every write about this attempt is conditional on it: a sender whose lease ran out and
  // was taken over must not overwrite the newer attempt's state.
  const mine = "id = ? and status = 'pending' and attempts = ?";
  const render = await ctx.db.get("select * from renders where id = ?", String(row.render_id)) as
    | Row
    | undefined;
  if (!render) {
    await ctx.db.run(
      `update webhook_deliveries set status = 'failed', last_error = 'the render is gone', finished_at = ? where ${mine}`,
      now(),
      id,
      attempt,
    );
    return;
  }
  const about = {
    renderId: String(render.id),
    accountId: String(render.account_id),
    deliveryId: id,
    attempt,
  };
  if (attempt > 1) log.info(resendLine(row, attempt), about);
  const holder = holdDelivery(ctx.db, id, attempt, leaseMs);
  let result: Awaited<ReturnType<typeof deliverWebhook>>;
  try {
    result = await deliverWebhook({
      url: String(row.url),
      payload: await payloadOf(ctx, row, render),
      secret: ctx.secret,
      attempts: 1,
      firstAttempt: attempt,
      signal,
      // Re-checked at send time: DNS can change after the render was submitted.
      target: { allowPrivate: ctx.allowPrivateUrls, allowLoopback: ctx.allowHttpCallbacks },
    });
  } finally {
    await holder.stop();
  }
  // Cut short by the shutdown deadline: still pending, due again at once for any sender.
  if (signal.aborted && !result.delivered) {
    await ctx.db.run(
      `update webhook_deliveries set next_attempt_at = null where ${mine}`,
      id,
      attempt,
    );
    return;
  }
  const final = result.delivered || !result.retryable || attempt >= MAX_DELIVERY_ATTEMPTS;
  await ctx.db.run(
    `update webhook_deliveries set status = ?, last_status = ?, last_error = ?, next_attempt_at = ?, finished_at = ? where ${mine}`,
    result.delivered ? "delivered" : final ? "failed" : "pending",
    result.status ?? null,
    result.error ?? null,
    final ? null : Date.now() + backoffDelay(attempt),
    final ? now() : null,
    id,
    attempt,
  );
  if (!result.delivered) {
    log.warn(
      `webhook ${id} of render ${row.render_id}: attempt ${attempt} failed (${result.error})` +
        (final ? "; giving up" : "; will retry"),
      about,
    );
  }
}

/**
 * Keeps attempt `attempt` of delivery `id` this sender's while it lasts: its lease is
 * pushed a lease ahead every third of it, so a slow receiver is not sent the same attempt
 * by another instance meanwhile.
 */
function holdDelivery(
  db: Queries,
  id: string,
  attempt: number,
  leaseMs: number,
): { stop(): Promise<void> } {
  const done = new AbortController();
  const every = Math.max(1, Math.floor(leaseMs / 3));
  const renewing = (async () => {
    while (!done.signal.aborted) {
      await sleep(every, done.signal).catch(() => {});
      if (done.signal.aborted) return;
      await db.run(
        "update webhook_deliveries set next_attempt_at = ? where id = ? and status = 'pending' and attempts = ?",
        Date.now() + leaseMs,
        id,
        attempt,
      ).catch(() => {
        // The database away: the lease runs out and another sender may resend (at least once).
      });
    }
  })();
  return {
    async stop(): Promise<void> {
      done.abort();
      await renewing;
    },
  };
}

/**
 * Takes due delivery `row` for this sender: counts the attempt, marks it under way and
 * holds it for a lease. Undefined when another sender took it first.
 */
async function takeDelivery(db: Queries, row: Row, leaseMs: number): Promise<Row | undefined> {
  const at = Date.now();
  const attempt = Number(row.attempts) + 1;
  const taken = await db.run(
    `update webhook_deliveries set attempts = ?, next_attempt_at = ?, last_error = ?
     where id = ? and status = 'pending' and attempts = ? and coalesce(next_attempt_at, 0) <= ?`,
    attempt,
    at + leaseMs,
    `${INTERRUPTED} ${attempt}`,
    String(row.id),
    Number(row.attempts),
    at,
  );
  return taken === 1 ? { ...row, attempts: attempt } : undefined;
}

/** Fails a delivery whose attempts are used up, the last one cut off. */
async function giveUpDelivery(db: Queries, row: Row): Promise<void> {
  const failed = await db.run(
    "update webhook_deliveries set status = 'failed', next_attempt_at = null, finished_at = ? where id = ? and status = 'pending' and attempts = ?",
    now(),
    String(row.id),
    Number(row.attempts),
  );
  if (failed !== 1) return;
  log.warn(
    `webhook ${row.id} of render ${row.render_id}: attempt ${row.attempts} was cut off and ` +
      `was the last (${MAX_DELIVERY_ATTEMPTS}); giving up`,
    {
      renderId: String(row.render_id),
      deliveryId: String(row.id),
      attempt: Number(row.attempts),
    },
  );
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
export function startWebhookSender(
  ctx: ServerContext,
  options: WebhookSenderOptions = {},
): WebhookSender {
  const leaseMs = options.leaseMs ?? DEFAULT_LEASE_SECONDS * 1000;
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
          // Its last attempt was cut off with the attempts used up: none is left to make.
          if (Number(row.attempts) >= MAX_DELIVERY_ATTEMPTS) {
            await giveUpDelivery(ctx.db, row);
            continue;
          }
          const taken = await takeDelivery(ctx.db, row, leaseMs);
          // Another instance is sending it.
          if (taken === undefined) continue;
          // A send that failed (its row could not be written) waits for the next poll.
          const sending = sendAttempt(ctx, taken, leaseMs, controller.signal).then(
            () => true,
            (error) => {
              log.error(`webhook ${id}: ${errorText(error)}`, {
                renderId: String(row.render_id),
                deliveryId: id,
              });
              return false;
            },
          ).then((sent) => {
            inFlight.delete(id);
            if (sent) wake();
          });
          inFlight.set(id, sending);
        }
        failures = 0;
      } catch (error) {
        failures++;
        const delay = sharedBackoff(failures, LOOP_BACKOFF);
        log.error(`webhook sender: ${errorText(error)}; carrying on in ${delay} ms`);
        await pause(delay);
        continue;
      }
      await Promise.race([waiting, pause(POLL_MS)]);
    }
  };
  const running = loop().catch((error) => log.error(`webhook sender ended: ${errorText(error)}`));

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

/**
 * The one log line of attempt `attempt` (2 or later) of delivery `row`, saying why it is sent
 * again: the previous attempt's answer, or that its sender stopped during it (its lease ran
 * out, or it was cut off by a shutdown).
 */
function resendLine(row: Row, attempt: number): string {
  const last = row.last_error === null || row.last_error === undefined
    ? undefined
    : String(row.last_error);
  const why = last?.startsWith(INTERRUPTED)
    ? `attempt ${attempt - 1} was cut off: its sender stopped during it`
    : `attempt ${attempt - 1} failed (${
      row.last_status === null || row.last_status === undefined
        ? last ?? "no answer"
        : `HTTP ${row.last_status}`
    })`;
  return `webhook ${row.id} of render ${row.render_id}: resending, attempt ${attempt} of ` +
    `${MAX_DELIVERY_ATTEMPTS}; ${why}`;
}
