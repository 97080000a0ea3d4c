/**
 * The hosted render's life as a type: its states ({@linkcode RenderStatus}), the moves
 * allowed between them ({@linkcode RENDER_TRANSITIONS}), and every write of a render row's
 * state. The states used to live only as SQL strings spread over the queue, the routes and
 * the database module, so nothing stopped a completed render from being set `rendering`
 * again; here a move that is not in the table is refused (the row is left as it was) and
 * logged. The API's view of a row ({@linkcode renderJson}) lives here too, beside the
 * states it shows.
 *
 * The list of states is the schema's (`database/schema.ts`, the `renders.status` check),
 * re-exported here, so the database imports nothing of the queue.
 *
 * @module
 */

import { log as serverLog } from "../log.ts";
import type { Queries, Row } from "../database/mod.ts";
import { DOWNLOAD_URL_SECONDS, type ServerContext } from "../context.ts";
import { signPath } from "../auth/secrets.ts";
import { RENDER_STATUSES } from "../database/schema.ts";

/** Every state of a hosted render, in the order of its life (the schema's list). */
export { RENDER_STATUSES };

/** A hosted render's state. */
export type RenderStatus = typeof RENDER_STATUSES[number];

/**
 * The moves allowed from each state. `rendering -> queued` is a render handed back to the
 * queue by a worker that stops. (A worker that dies leaves it `rendering`: its lease runs
 * out and another worker takes it over, see `queue.ts`.) `completed` and `failed` are final but for
 * deletion; `deleted` is final.
 */
export const RENDER_TRANSITIONS: Readonly<Record<RenderStatus, readonly RenderStatus[]>> = {
  queued: ["rendering", "deleted"],
  rendering: ["completed", "failed", "queued", "deleted"],
  completed: ["deleted"],
  failed: ["deleted"],
  deleted: [],
};

/**
 * Whether a render may move from `from` to `to`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.ok(canTransition("queued", "rendering"));
 * assert.ok(!canTransition("completed", "rendering"));
 * ```
 */
export function canTransition(from: RenderStatus, to: RenderStatus): boolean {
  return RENDER_TRANSITIONS[from].includes(to);
}

/** The states a render may move to `to` from. */
export function sourcesOf(to: RenderStatus): RenderStatus[] {
  return RENDER_STATUSES.filter((from) => canTransition(from, to));
}

/** Columns a transition may set besides `status`. */
export interface TransitionFields {
  progress?: number;
  error?: string | null;
  started_at?: string | null;
  completed_at?: string | null;
  deleted_at?: string | null;
}

/** Where refused transitions are reported; tests replace it. */
export type TransitionLog = (message: string, renderId?: string) => void;

let log: TransitionLog = (message, renderId) => serverLog.warn(message, { renderId });

/**
 * Replaces the reporter of refused transitions and returns the previous one (for tests).
 *
 * @example
 * ```ts
 * const seen: string[] = [];
 * const previous = setTransitionLog((message) => seen.push(message));
 * setTransitionLog(previous);
 * ```
 */
export function setTransitionLog(next: TransitionLog): TransitionLog {
  const previous = log;
  log = next;
  return previous;
}

/**
 * Moves render `id` to `to`, setting `fields` with it, if the move is allowed from its
 * current state; a render already deleted (`deleted_at` set) never moves again. A move that
 * is not allowed changes nothing and is logged (`render rnd_…: completed -> rendering
 * refused`). Run it inside the caller's transaction when more must change with it.
 *
 * @returns Whether the render moved.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * await db.run("insert into renders (id, account_id, status, request, created_at) values ('r', 'a', 'queued', '{}', 'now')");
 * const previous = setTransitionLog(() => {});
 * assert.ok(await transitionRender(db, "r", "rendering", { started_at: "now" }));
 * assert.ok(await transitionRender(db, "r", "completed", { progress: 1 }));
 * assert.ok(!(await transitionRender(db, "r", "rendering")));
 * setTransitionLog(previous);
 * await db.close();
 * ```
 */
export async function transitionRender(
  db: Queries,
  id: string,
  to: RenderStatus,
  fields: TransitionFields = {},
): Promise<boolean> {
  const from = sourcesOf(to);
  const names = Object.keys(fields) as (keyof TransitionFields)[];
  const sets = ["status = ?", ...names.map((name) => `${name} = ?`)].join(", ");
  const values = names.map((name) => fields[name] ?? null);
  const changed = await db.run(
    `update renders set ${sets} where id = ? and deleted_at is null and status in (${
      from.map(() => "?").join(", ")
    })`,
    to,
    ...values,
    id,
    ...from,
  );
  if (changed === 1) return true;
  const current = await db.get<Row>("select status, deleted_at from renders where id = ?", id);
  const state = current === undefined
    ? "missing"
    : current.deleted_at !== null
    ? "deleted"
    : String(current.status);
  log(`render ${id}: ${state} -> ${to} refused (allowed from: ${from.join(", ") || "none"})`, id);
  return false;
}

/** Records how far a render in flight is (0 to 1); a render no longer rendering keeps its own. */
export async function setRenderProgress(
  db: Queries,
  id: string,
  progress: number,
): Promise<void> {
  await db.run(
    "update renders set progress = ? where id = ? and status = 'rendering'",
    progress,
    id,
  );
}

/** Records the distributed workflow execution of a render (see `lambda_backend.ts`). */
export async function setExecutionArn(
  db: Queries,
  renderId: string,
  executionArn: string,
): Promise<void> {
  await db.run("update renders set execution_arn = ? where id = ?", executionArn, renderId);
}

/** A render row as the API shows it, with freshly minted signed URLs. */
export async function renderJson(ctx: ServerContext, row: Row): Promise<Record<string, unknown>> {
  const request = JSON.parse(String(row.request)) as Record<string, unknown>;
  const mint = async (kind: "video" | "thumbnail"): Promise<string> => {
    const expires = Math.floor(Date.now() / 1000) + DOWNLOAD_URL_SECONDS;
    const path = `/v3/files/${row.id}/${kind}`;
    return `${ctx.publicUrl}${path}?expires=${expires}&sig=${await signPath(
      ctx.secret,
      kind,
      path,
      expires,
    )}`;
  };
  const completed = row.status === "completed" && row.deleted_at === null;
  return {
    render_id: row.id,
    asset_id: row.asset_id,
    status: row.deleted_at !== null ? "deleted" : row.status,
    progress: Number(row.progress),
    error: row.error,
    composition: request.composition,
    fps: request.fps,
    quality: request.quality,
    format: request.format,
    resolution: request.resolution,
    aspect_ratio: request.aspect_ratio,
    width: row.width,
    height: row.height,
    duration_seconds: row.duration_seconds,
    credits: Number(row.credits),
    warnings: JSON.parse(String(row.warnings)),
    callback_id: row.callback_id,
    video_url: completed ? await mint("video") : null,
    thumbnail_url: completed ? await mint("thumbnail") : null,
    created_at: row.created_at,
    completed_at: row.completed_at,
  };
}
