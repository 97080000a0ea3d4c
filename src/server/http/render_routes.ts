/**
 * `POST /v3/vid/renders`: submit a render. The steps are kept apart so each can be read
 * alone: the body's check (`render_request.ts`, from the render request's declarations),
 * the idempotency key (`under_key.ts`), the asset and variable checks, the price, the
 * server's limits (`--max-duration`, `--max-frames`, `--max-queued-per-account`), and the
 * one transaction that charges the account and records the render.
 *
 * @module
 */

import { addLogContext } from "../log.ts";
import type { Context, Hono } from "hono";
import type { VariableProblem } from "../../composition/errors.ts";
import { checkOverrides } from "../../composition/variables.ts";
import { frameCountOf, frameRateValue, frameTime } from "../../composition/frame_rate.ts";
import type { Caller } from "../auth/accounts.ts";
import type { AssetProject } from "./project_check.ts";
import {
  CREDITS_PER_SECOND,
  OUTPUT_SIZES,
  QUEUE_FULL_RETRY_SECONDS,
  RESOLUTION_MULTIPLIER,
  type ServerContext,
  type ServerLimits,
} from "../context.ts";
import { now, type Queries, type Row } from "../database/mod.ts";
import { ApiError, invalid, LimitExceededError, notFound, TooManyRendersError } from "./errors.ts";
import type { KeyScope } from "./idempotency.ts";
import { jsonBody } from "./request_body.ts";
import { randomId } from "../auth/secrets.ts";
import { checkRenderRequest, type RenderRequest } from "./render_request.ts";
import { idempotencyKey, underKey } from "./under_key.ts";

/** What the render route needs from the app around it. */
export interface RenderRouteDeps {
  /** Authenticates the request's caller. */
  caller(c: Context): Promise<Caller>;
  /** Fetches a `url` source into a new ready asset of the caller's; returns its id. */
  assetFromUrl(who: Caller, url: string, composition: string): Promise<string>;
  /** A render row as the API shows it. */
  renderJson(row: Row): Promise<Record<string, unknown>>;
}

/** The caller's ready asset the render reads, with the facts of its composition. */
async function readyAsset(
  ctx: ServerContext,
  who: Caller,
  assetId: string,
  composition: string,
): Promise<{ asset: Row; project: AssetProject }> {
  const asset = await ctx.db.get(
    "select * from assets where id = ? and account_id = ?",
    assetId,
    who.account.id,
  ) as Row | undefined;
  if (!asset) throw notFound("asset", assetId);
  if (asset.status !== "ready") {
    throw new ApiError(
      409,
      "vid_asset_not_ready",
      `asset ${asset.id} has not been uploaded yet`,
      "asset_id",
    );
  }
  if (composition !== asset.composition) {
    throw invalid("composition", `asset ${asset.id} was checked with entry ${asset.composition}`);
  }
  return { asset, project: JSON.parse(String(asset.project)) as AssetProject };
}

/** The variable problems; with `strict_variables` any problem is a 422 naming the first. */
function variableProblems(request: RenderRequest, project: AssetProject): VariableProblem[] {
  const problems = checkOverrides(project.declarations, request.variables);
  if (request.strict && problems.length > 0) {
    throw new ApiError(
      422,
      "vid_project_invalid",
      `variables do not match the composition's declarations: ${
        problems.map((p) => p.message).join("; ")
      }`,
      `variables.${problems[0].key}`,
    );
  }
  return problems;
}

/** The render's length and price: seconds x credits per second x the resolution's multiplier. */
function price(request: RenderRequest, project: AssetProject): {
  fps: number;
  frames: number;
  duration: number;
  credits: number;
} {
  // Without a given rate the composition's data-fps, else 30.
  const rate = request.rate ?? project.fps ?? { num: 30, den: 1 };
  const frames = frameCountOf(project.duration, rate);
  const duration = frameTime(frames, rate);
  const credits = Math.round(
    duration * CREDITS_PER_SECOND * RESOLUTION_MULTIPLIER[request.resolution] * 100,
  ) / 100;
  return { fps: frameRateValue(rate), frames, duration, credits };
}

/**
 * Refuses a render longer than the server's `--max-duration` or with more frames than its
 * `--max-frames` (422 naming the limit and the flag), before anything is charged: a
 * `data-duration="86400"` would otherwise be billed and hold a worker for a day.
 */
function checkLimits(
  limits: ServerLimits,
  facts: { fps: number; frames: number; duration: number },
): void {
  if (facts.duration > limits.maxDurationSeconds) {
    throw new LimitExceededError(
      `the composition is ${facts.duration} s long; this server renders at most ` +
        `${limits.maxDurationSeconds} s (vid server --max-duration). Shorten its data-duration ` +
        "or split it into several renders",
      "composition",
      "--max-duration",
    );
  }
  if (facts.frames > limits.maxFrames) {
    throw new LimitExceededError(
      `the render has ${facts.frames} frames (${facts.duration} s at ${
        Math.round(facts.fps * 1000) / 1000
      } fps); this ` +
        `server renders at most ${limits.maxFrames} frames (vid server --max-frames). Lower fps ` +
        "or shorten the composition",
      "fps",
      "--max-frames",
    );
  }
}

/**
 * Refuses a render of an account that has `--max-queued-per-account` renders waiting
 * already (429 `vid_too_many_renders` with `Retry-After`), so one account cannot fill the
 * queue. Called before a `url` source is fetched, and again in the charging transaction.
 */
async function checkQueueRoom(
  ctx: ServerContext,
  db: Queries,
  accountId: string,
): Promise<void> {
  const max = ctx.limits.maxQueuedPerAccount;
  const queued = Number(
    (await db.get(
      "select count(*) as n from renders where account_id = ? and status = 'queued'",
      accountId,
    ) as Row).n,
  );
  if (queued >= max) {
    throw new TooManyRendersError(
      `this account has ${queued} renders queued, the most this server takes ` +
        `(vid server --max-queued-per-account ${max}); submit more as they start`,
      QUEUE_FULL_RETRY_SECONDS,
    );
  }
}

/**
 * Charges the account and records the queued render in one transaction; an account short
 * of credits is a 402 and nothing is written.
 */
async function chargeAndRecord(
  ctx: ServerContext,
  who: Caller,
  assetId: string,
  request: RenderRequest,
  facts: { fps: number; duration: number; credits: number; warnings: string[] },
  complete: (tx: Queries, id: string) => Promise<void>,
): Promise<string> {
  const id = randomId("rnd");
  const size = OUTPUT_SIZES[request.resolution][request.aspectRatio];
  const record = {
    composition: request.composition,
    fps: facts.fps,
    quality: request.quality,
    format: request.format,
    resolution: request.resolution,
    aspect_ratio: request.aspectRatio,
    variables: request.variables,
    strict_variables: request.strict,
    ...(request.loudness !== undefined ? { loudness: request.loudness } : {}),
  };
  await ctx.db.transaction(async (tx) => {
    await checkQueueRoom(ctx, tx, who.account.id);
    const balance = await tx.get(
      "select credits from accounts where id = ?",
      who.account.id,
    ) as Row;
    if (Number(balance.credits) < facts.credits) {
      throw new ApiError(
        402,
        "vid_insufficient_credits",
        `this render costs ${facts.credits} credits and the account has ${balance.credits}`,
      );
    }
    await tx.run(
      "update accounts set credits = credits - ? where id = ?",
      facts.credits,
      who.account.id,
    );
    await tx.run(
      "insert into renders (id, account_id, asset_id, status, request, width, height, duration_seconds, credits, warnings, callback_url, callback_id, created_at) values (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
      id,
      who.account.id,
      assetId,
      JSON.stringify(record),
      size.width,
      size.height,
      facts.duration,
      facts.credits,
      JSON.stringify(facts.warnings),
      request.callbackUrl,
      request.callbackId,
      now(),
    );
    await complete(tx, id);
  });
  return id;
}

/** Registers `POST /v3/vid/renders` on `app`. */
export function renderRoutes(app: Hono, ctx: ServerContext, deps: RenderRouteDeps): void {
  app.post("/v3/vid/renders", async (c) => {
    const who = await deps.caller(c);
    const key = idempotencyKey(c);
    const body = await jsonBody(c);
    const request = await checkRenderRequest(body, {
      allowHttpCallbacks: ctx.allowHttpCallbacks,
      allowPrivateUrls: ctx.allowPrivateUrls,
    });
    const where: KeyScope | undefined = key
      ? { accountId: who.account.id, scope: "renders", key }
      : undefined;
    const made = await underKey(ctx, where, body, async (complete) => {
      await checkQueueRoom(ctx, ctx.db, who.account.id);
      const assetId = "url" in request.source
        ? await deps.assetFromUrl(who, request.source.url, request.composition)
        : request.source.assetId;
      const { asset, project } = await readyAsset(ctx, who, assetId, request.composition);
      const warnings = variableProblems(request, project).map((p) => p.message);
      const facts = { ...price(request, project), warnings };
      checkLimits(ctx.limits, facts);
      return await chargeAndRecord(ctx, who, String(asset.id), request, facts, complete);
    });
    // Read before waking the workers: a new render is answered in state `queued` (the spec's
    // submit row), not in whatever state a fast worker has already moved it to.
    addLogContext({ renderId: made.id });
    const row = await ctx.db.get("select * from renders where id = ?", made.id) as Row;
    if (!made.replayed) ctx.wake();
    return c.json(await deps.renderJson(row), made.replayed ? 200 : 201);
  });
}
