/**
 * The hosted render API (`/v3/…`, see api/openapi.yaml) as a Hono app over the server's
 * SQLite state and storage. Handlers validate, record and answer; rendering happens in
 * the render queue.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { VariableDeclaration } from "../composition/declarations.ts";
import { checkOverrides } from "../composition/variables.ts";
import {
  frameCountOf,
  type FrameRate,
  FrameRateError,
  frameRateValue,
  frameTime,
  parseFrameRate,
} from "../composition/frame_rate.ts";
import { OUTPUT_FORMATS, QUALITIES } from "../render/encode.ts";
import { authenticate, type Caller } from "./accounts.ts";
import {
  CREDITS_PER_SECOND,
  DOWNLOAD_URL_SECONDS,
  MAX_COMPOSITION_LENGTH,
  MAX_CONCURRENT_PROJECT_CHECKS,
  MAX_FILENAME_LENGTH,
  MAX_UPLOAD_BYTES,
  OUTPUT_SIZES,
  RESOLUTION_MULTIPLIER,
  type ServerContext,
  UPLOAD_URL_SECONDS,
} from "./context.ts";
import { now, type Row, transaction } from "./db.ts";
import { ApiError, invalid, notFound, RateLimitedError } from "./errors.ts";
import { clientAddress, newThrottles } from "./throttle.ts";
import {
  claimKey,
  completeKey,
  type KeyScope,
  releaseKey,
  requestHash as hashRequest,
} from "./idempotency.ts";
import { bodyToFile, jsonBody, Slots } from "./request_body.ts";
import { oauthRoutes } from "./oauth.ts";
import { randomId, sha256Hex, signPath, verifyPath } from "./secrets.ts";
import { CallbackUrlError, checkCallbackTarget, checkCallbackUrl } from "./webhooks.ts";
import { fetchProjectUrl } from "./url_source.ts";
import { extractProjectZip, ProjectZipError } from "./zip_check.ts";
import { zipSync } from "fflate";

/** The project facts stored with a ready asset. */
export interface AssetProject {
  id: string;
  width: number;
  height: number;
  duration: number;
  /** The composition's `data-fps`, when it pins one. */
  fps?: FrameRate;
  declarations: VariableDeclaration[];
}

const IDEMPOTENCY_KEY = /^[A-Za-z0-9_:.-]{1,255}$/;
const MIME: Readonly<Record<string, string>> = {
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  jpg: "image/jpeg",
};

function loadOpenApi(): unknown {
  const text = readFileSync(new URL("../../api/openapi.yaml", import.meta.url), "utf8");
  return parseYaml(text);
}

function idempotencyKey(c: Context): string | undefined {
  const key = c.req.header("idempotency-key");
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(key)) {
    throw invalid(
      "Idempotency-Key",
      "must be 1 to 255 characters of A-Z a-z 0-9 _ : . -",
    );
  }
  return key;
}

/**
 * Runs a create request under its `Idempotency-Key` (if any): `create` runs only for the
 * first request with the key and must call `complete` with the new object's id inside its
 * final transaction; later ones get `replay` with that id. A failing `create` frees the key.
 */
async function underKey(
  ctx: ServerContext,
  where: KeyScope | undefined,
  body: Record<string, unknown>,
  create: (complete: (objectId: string) => void) => Promise<string>,
): Promise<{ id: string; replayed: boolean }> {
  if (!where) return { id: await create(() => {}), replayed: false };
  const claim = await claimKey(ctx.db, where, await hashRequest(body));
  if (claim.kind === "replay") return { id: claim.objectId, replayed: true };
  try {
    return { id: await create((id) => completeKey(ctx.db, where, id)), replayed: false };
  } catch (error) {
    releaseKey(ctx.db, where);
    throw error;
  }
}

async function assetJson(ctx: ServerContext, row: Row): Promise<Record<string, unknown>> {
  const json: Record<string, unknown> = {
    asset_id: row.id,
    status: row.status,
    size_bytes: row.size_bytes,
    composition: row.composition,
    created_at: row.created_at,
    max_bytes: MAX_UPLOAD_BYTES,
  };
  if (row.status === "pending_upload") {
    const expires = Math.floor(Date.now() / 1000) + UPLOAD_URL_SECONDS;
    const path = `/v3/uploads/${row.id}`;
    const sig = await signPath(ctx.secret, "upload", path, expires);
    json.upload_url = `${ctx.publicUrl}${path}?expires=${expires}&sig=${sig}`;
    json.upload_expires_at = new Date(expires * 1000).toISOString();
  }
  return json;
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

function enumField<T extends string>(
  body: Record<string, unknown>,
  field: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const value = body[field] ?? fallback;
  if (typeof value !== "string" || !(allowed as readonly string[]).includes(value)) {
    throw invalid(field, `must be one of ${allowed.join(", ")}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

/**
 * Checks a project zip, stores it and marks the asset ready with the facts of its
 * composition; a bad project is a 422 `vid_project_invalid` naming the problem.
 */
async function ingestProject(
  ctx: ServerContext,
  id: string,
  zip: Uint8Array,
  composition: string,
): Promise<void> {
  await mkdir(ctx.workDir, { recursive: true });
  const dir = await mkdtemp(join(ctx.workDir, "upload-"));
  try {
    let project: AssetProject;
    try {
      const extracted = await extractProjectZip(zip, join(dir, "project"), { composition });
      const parsed = extracted.composition;
      project = {
        id: parsed.id,
        width: parsed.width,
        height: parsed.height,
        duration: parsed.duration,
        ...(parsed.fps && { fps: parsed.fps }),
        declarations: parsed.declarations,
      };
    } catch (error) {
      if (error instanceof ProjectZipError) {
        const zipError: ProjectZipError = error;
        throw new ApiError(422, "vid_project_invalid", zipError.message, zipError.field);
      }
      throw error;
    }
    await ctx.storage.putBytes(`assets/${id}/project.zip`, zip, "application/zip");
    ctx.db.prepare(
      "update assets set status = 'ready', project = ?, ready_at = ? where id = ?",
    ).run(JSON.stringify(project), now(), id);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Downloads a `url` render source (SSRF-guarded) into a new ready asset of the caller's;
 * a single HTML file becomes a one-file project.
 */
async function assetFromUrl(
  ctx: ServerContext,
  who: Caller,
  url: string,
  composition: string,
): Promise<string> {
  const fetched = await fetchProjectUrl(url, {
    allowPrivate: ctx.allowPrivateUrls,
    maxBytes: MAX_UPLOAD_BYTES,
  });
  const zip = fetched.kind === "zip" ? fetched.bytes : zipSync({ [composition]: fetched.bytes });
  const id = randomId("ast");
  ctx.db.prepare(
    "insert into assets (id, account_id, status, size_bytes, filename, composition, created_at) values (?, ?, 'pending_upload', ?, ?, ?, ?)",
  ).run(id, who.account.id, zip.length, fetched.url, composition, now());
  await ingestProject(ctx, id, zip, composition);
  return id;
}

/**
 * Builds the API.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "./context.ts";
 *
 * function serve(ctx: ServerContext): Deno.HttpServer {
 *   return Deno.serve({ port: 8787 }, createApp(ctx).fetch);
 * }
 * ```
 */
export function createApp(ctx: ServerContext): Hono {
  const app = new Hono();
  const openapi = loadOpenApi();
  const throttles = newThrottles();
  // Uploads and url sources are read whole and checked: a few at a time.
  const checks = new Slots(MAX_CONCURRENT_PROJECT_CHECKS);
  // A presented credential that fails counts against the client's address; past the limit
  // no credential from there is checked until the window frees up.
  const caller = async (c: Context): Promise<Caller> => {
    const header = c.req.header("authorization");
    if (!header) return await authenticate(ctx.db, header);
    const address = clientAddress(c.env);
    const wait = throttles.keyCheckPerAddress.retryAfter(address);
    if (wait > 0) {
      throw new RateLimitedError("too many failed API key or token checks from this address", wait);
    }
    try {
      return await authenticate(ctx.db, header);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) {
        throttles.keyCheckPerAddress.fail(address);
      }
      throw error;
    }
  };

  app.onError((error, c) => {
    if (error instanceof RateLimitedError) {
      c.header("retry-after", String(error.retryAfterSeconds));
    }
    if (error instanceof ApiError) {
      return c.json(error.toJSON(), error.status as 400);
    }
    console.error(error);
    return c.json(new ApiError(500, "vid_internal", "internal error").toJSON(), 500);
  });
  app.notFound((c) =>
    c.json(
      new ApiError(404, "vid_not_found", `no route ${c.req.method} ${c.req.path}`).toJSON(),
      404,
    )
  );

  app.get("/v3/openapi.json", (c) => c.json(openapi as Record<string, unknown>));

  app.get("/v3/me", async (c) => {
    const who = await caller(c);
    return c.json({
      account_id: who.account.id,
      email: who.account.email,
      credential: who.credential,
      credits: who.account.credits,
    });
  });

  app.post("/v3/assets", async (c) => {
    const who = await caller(c);
    const key = idempotencyKey(c);
    const body = await jsonBody(c);
    const size = body.size_bytes;
    if (typeof size !== "number" || !Number.isInteger(size) || size < 1) {
      throw invalid("size_bytes", "must be the zip's size in bytes, a positive integer");
    }
    if (size > MAX_UPLOAD_BYTES) {
      throw new ApiError(
        413,
        "vid_payload_too_large",
        `size_bytes ${size} is over the ${
          MAX_UPLOAD_BYTES / 1024 / 1024
        } MB (${MAX_UPLOAD_BYTES} bytes) upload limit`,
        "size_bytes",
      );
    }
    const composition = body.composition ?? "index.html";
    if (typeof composition !== "string" || composition.trim() === "") {
      throw invalid("composition", "must be the entry HTML file's path inside the zip");
    }
    if (composition.length > MAX_COMPOSITION_LENGTH) {
      throw invalid("composition", `must be at most ${MAX_COMPOSITION_LENGTH} characters`);
    }
    if (body.sha256 !== undefined && !/^[0-9a-f]{64}$/.test(String(body.sha256))) {
      throw invalid("sha256", "must be 64 lowercase hex digits");
    }
    if (
      body.filename !== undefined && body.filename !== null &&
      (typeof body.filename !== "string" || body.filename.length > MAX_FILENAME_LENGTH)
    ) {
      throw invalid(
        "filename",
        `must be a string of at most ${MAX_FILENAME_LENGTH} characters (a label for the zip)`,
      );
    }
    const where: KeyScope | undefined = key
      ? { accountId: who.account.id, scope: "assets", key }
      : undefined;
    const made = await underKey(ctx, where, body, (complete) => {
      const id = randomId("ast");
      transaction(ctx.db, () => {
        ctx.db.prepare(
          "insert into assets (id, account_id, status, size_bytes, sha256, filename, composition, created_at) values (?, ?, 'pending_upload', ?, ?, ?, ?, ?)",
        ).run(
          id,
          who.account.id,
          size,
          (body.sha256 as string | undefined) ?? null,
          typeof body.filename === "string" ? body.filename : null,
          composition,
          now(),
        );
        complete(id);
      });
      return Promise.resolve(id);
    });
    const row = ctx.db.prepare("select * from assets where id = ?").get(made.id) as Row;
    return c.json(await assetJson(ctx, row), made.replayed ? 200 : 201);
  });

  app.get("/v3/assets/:id", async (c) => {
    const who = await caller(c);
    const row = ctx.db.prepare("select * from assets where id = ? and account_id = ?").get(
      c.req.param("id"),
      who.account.id,
    ) as Row | undefined;
    if (!row) throw notFound("asset", c.req.param("id"));
    return c.json(await assetJson(ctx, row));
  });

  app.put("/v3/uploads/:id", async (c) => {
    const id = c.req.param("id");
    const path = `/v3/uploads/${id}`;
    const expires = Number(c.req.query("expires"));
    const sig = c.req.query("sig") ?? "";
    if (!(await verifyPath(ctx.secret, "upload", path, expires, sig))) {
      throw new ApiError(
        403,
        "vid_forbidden",
        "the upload URL is expired or invalid; create the asset again",
      );
    }
    const row = ctx.db.prepare("select * from assets where id = ?").get(id) as Row | undefined;
    if (!row) throw notFound("asset", id);
    // An upload URL is single-use: the first PUT claims the asset, a concurrent or later
    // one is refused, so it can never replace a ready project.
    const claimed = ctx.db.prepare(
      "update assets set upload_started_at = ? where id = ? and status = 'pending_upload' and upload_started_at is null",
    ).run(Date.now(), id);
    if (Number(claimed.changes) !== 1) {
      throw new ApiError(
        409,
        "vid_asset_not_ready",
        row.status === "pending_upload"
          ? `asset ${id} is being uploaded by another request; an upload URL is used once`
          : `asset ${id} was uploaded already`,
      );
    }
    await mkdir(ctx.workDir, { recursive: true });
    const dir = await mkdtemp(join(ctx.workDir, "put-"));
    try {
      // The body goes to disk first: a slow sender holds a file, not a check slot.
      const limit = Math.min(Number(row.size_bytes), MAX_UPLOAD_BYTES);
      const file = join(dir, "upload.zip");
      const size = await bodyToFile(
        c,
        limit,
        file,
        () =>
          new ApiError(
            413,
            "vid_payload_too_large",
            `the upload is larger than this asset's declared size or the ${
              MAX_UPLOAD_BYTES / 1024 / 1024
            } MB limit (${limit} bytes allowed)`,
          ),
      );
      if (size !== Number(row.size_bytes)) {
        throw invalid("body", `expected ${row.size_bytes} bytes as declared, got ${size}`);
      }
      await checks.run(async () => {
        const zip = new Uint8Array(await readFile(file));
        if (row.sha256 && (await sha256Hex(zip)) !== row.sha256) {
          throw invalid("body", "the upload does not match the declared sha256");
        }
        await ingestProject(ctx, id, zip, String(row.composition));
      });
    } catch (error) {
      // A failed upload frees the URL for another try.
      ctx.db.prepare(
        "update assets set upload_started_at = null where id = ? and status = 'pending_upload'",
      ).run(id);
      throw error;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const ready = ctx.db.prepare("select * from assets where id = ?").get(id) as Row;
    return c.json(await assetJson(ctx, ready));
  });

  app.post("/v3/vid/renders", async (c) => {
    const who = await caller(c);
    const key = idempotencyKey(c);
    const body = await jsonBody(c);
    // 30, 29.97 (= 30000/1001) or "30000/1001"; the record keeps the rate's value num/den.
    let givenRate: FrameRate | undefined;
    if (body.fps !== undefined) {
      if (typeof body.fps !== "number" && typeof body.fps !== "string") {
        throw invalid(
          "fps",
          `must be a frame rate such as 30 or 29.97, got ${JSON.stringify(body.fps)}`,
        );
      }
      try {
        givenRate = parseFrameRate(body.fps, "fps");
      } catch (error) {
        if (error instanceof FrameRateError) {
          throw invalid("fps", error.message.replace(/^fps: /, ""));
        }
        throw error;
      }
    }
    const quality = enumField(body, "quality", QUALITIES, "standard");
    const format = enumField(body, "format", OUTPUT_FORMATS, "mp4");
    const resolution = enumField(body, "resolution", ["1080p", "4k"] as const, "1080p");
    const aspectRatio = enumField(body, "aspect_ratio", ["16:9", "9:16", "1:1"] as const, "16:9");
    if (resolution === "4k" && format !== "mp4") {
      throw invalid(
        "resolution",
        `4k cannot be ${format}: the 4k path has no alpha channel. Use mp4, or render alpha at native resolution`,
      );
    }
    const composition = body.composition ?? "index.html";
    if (typeof composition !== "string") throw invalid("composition", "must be a string");
    if (composition.length > MAX_COMPOSITION_LENGTH) {
      throw invalid("composition", `must be at most ${MAX_COMPOSITION_LENGTH} characters`);
    }
    const variables = body.variables ?? {};
    if (typeof variables !== "object" || variables === null || Array.isArray(variables)) {
      throw invalid("variables", "must be a JSON object of variable values");
    }
    const strict = body.strict_variables ?? false;
    if (typeof strict !== "boolean") throw invalid("strict_variables", "must be true or false");
    let callbackUrl: string | null = null;
    if (body.callback_url !== undefined && body.callback_url !== null) {
      try {
        const checked = checkCallbackUrl(String(body.callback_url), {
          allowHttpLoopback: ctx.allowHttpCallbacks,
        });
        await checkCallbackTarget(checked, {
          allowPrivate: ctx.allowPrivateUrls,
          allowLoopback: ctx.allowHttpCallbacks,
        });
        callbackUrl = checked.href;
      } catch (error) {
        if (error instanceof CallbackUrlError) throw invalid("callback_url", error.message);
        throw error;
      }
    }
    const callbackId = body.callback_id ?? null;
    if (callbackId !== null && (typeof callbackId !== "string" || callbackId.length > 255)) {
      throw invalid("callback_id", "must be a string of at most 255 characters");
    }
    if (body.url !== undefined && body.asset_id !== undefined) {
      throw invalid("url", "give asset_id or url, not both");
    }
    if (body.url === undefined && typeof body.asset_id !== "string") {
      throw invalid("asset_id", "is required (or give url)");
    }
    if (body.url !== undefined && typeof body.url !== "string") {
      throw invalid("url", "must be an http(s) URL of a zip or an HTML file");
    }
    const where: KeyScope | undefined = key
      ? { accountId: who.account.id, scope: "renders", key }
      : undefined;
    const made = await underKey(ctx, where, body, async (complete) => {
      const assetId = body.url !== undefined
        ? await checks.run(() => assetFromUrl(ctx, who, String(body.url), composition))
        : String(body.asset_id);
      const asset = ctx.db.prepare("select * from assets where id = ? and account_id = ?").get(
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
      const project = JSON.parse(String(asset.project)) as AssetProject;
      if (composition !== asset.composition) {
        throw invalid(
          "composition",
          `asset ${asset.id} was checked with entry ${asset.composition}`,
        );
      }
      const problems = checkOverrides(project.declarations, variables as Record<string, unknown>);
      if (strict && problems.length > 0) {
        throw new ApiError(
          422,
          "vid_project_invalid",
          `variables do not match the composition's declarations: ${
            problems.map((p) => p.message).join("; ")
          }`,
          `variables.${problems[0].key}`,
        );
      }
      // Without a given rate the composition's data-fps, else 30.
      const rate = givenRate ?? project.fps ?? { num: 30, den: 1 };
      const fps = frameRateValue(rate);
      const duration = frameTime(frameCountOf(project.duration, rate), rate);
      const credits =
        Math.round(duration * CREDITS_PER_SECOND * RESOLUTION_MULTIPLIER[resolution] * 100) / 100;
      const id = randomId("rnd");
      const request = {
        composition,
        fps,
        quality,
        format,
        resolution,
        aspect_ratio: aspectRatio,
        variables,
        strict_variables: strict,
      };
      transaction(ctx.db, () => {
        const balance = ctx.db.prepare("select credits from accounts where id = ?").get(
          who.account.id,
        ) as Row;
        if (Number(balance.credits) < credits) {
          throw new ApiError(
            402,
            "vid_insufficient_credits",
            `this render costs ${credits} credits and the account has ${balance.credits}`,
          );
        }
        ctx.db.prepare("update accounts set credits = credits - ? where id = ?").run(
          credits,
          who.account.id,
        );
        ctx.db.prepare(
          "insert into renders (id, account_id, asset_id, status, request, width, height, duration_seconds, credits, warnings, callback_url, callback_id, created_at) values (?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ).run(
          id,
          who.account.id,
          String(asset.id),
          JSON.stringify(request),
          OUTPUT_SIZES[resolution][aspectRatio].width,
          OUTPUT_SIZES[resolution][aspectRatio].height,
          duration,
          credits,
          JSON.stringify(problems.map((p) => p.message)),
          callbackUrl,
          callbackId as string | null,
          now(),
        );
        complete(id);
      });
      return id;
    });
    if (!made.replayed) ctx.wake();
    const row = ctx.db.prepare("select * from renders where id = ?").get(made.id) as Row;
    return c.json(await renderJson(ctx, row), made.replayed ? 200 : 201);
  });

  app.get("/v3/vid/renders", async (c) => {
    const who = await caller(c);
    const limitText = c.req.query("limit") ?? "20";
    const limit = Number(limitText);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw invalid("limit", `must be an integer from 1 to 100, got ${limitText}`);
    }
    const token = c.req.query("token");
    let before = Number.MAX_SAFE_INTEGER;
    if (token !== undefined) {
      try {
        before = Number(atob(token.replaceAll("-", "+").replaceAll("_", "/")));
      } catch {
        before = NaN; // not base64
      }
      if (!Number.isInteger(before)) throw invalid("token", "is not a token this server issued");
    }
    const all = c.req.query("all") === "true" || c.req.query("all") === "1";
    const rows = ctx.db.prepare(
      `select * from renders where account_id = ? and seq < ? ${
        all ? "" : "and deleted_at is null"
      } order by seq desc limit ?`,
    ).all(who.account.id, before, limit + 1) as Row[];
    const page = rows.slice(0, limit);
    const next = rows.length > limit
      ? btoa(String(page[page.length - 1].seq)).replaceAll("+", "-").replaceAll("/", "_")
      : null;
    return c.json({
      data: await Promise.all(page.map((row) => renderJson(ctx, row))),
      next_token: next,
    });
  });

  const ownRender = async (c: Context): Promise<Row> => {
    const who = await caller(c);
    const row = ctx.db.prepare(
      "select * from renders where id = ? and account_id = ? and deleted_at is null",
    ).get(c.req.param("id") ?? "", who.account.id) as Row | undefined;
    if (!row) throw notFound("render", c.req.param("id") ?? "");
    return row;
  };

  app.get("/v3/vid/renders/:id", async (c) => c.json(await renderJson(ctx, await ownRender(c))));

  app.delete("/v3/vid/renders/:id", async (c) => {
    const row = await ownRender(c);
    // A render that never delivered its video (queued, or stopped mid-render) gives its
    // credits back; a completed or failed one does not (a failure was refunded already).
    const refunded = transaction(ctx.db, () => {
      const current = ctx.db.prepare(
        "select status, credits, account_id from renders where id = ? and deleted_at is null",
      ).get(row.id) as Row | undefined;
      if (!current) throw notFound("render", String(row.id));
      const undelivered = current.status === "queued" || current.status === "rendering";
      ctx.db.prepare("update renders set status = 'deleted', deleted_at = ? where id = ?").run(
        now(),
        row.id,
      );
      if (!undelivered) return 0;
      ctx.db.prepare("update accounts set credits = credits + ? where id = ?").run(
        Number(current.credits),
        String(current.account_id),
      );
      return Number(current.credits);
    });
    ctx.cancelRender?.(String(row.id));
    // Files are purged in the background; the render is already gone from get and list.
    // A render stopped mid-flight purges what it wrote once it has stopped (queue).
    ctx.storage.deletePrefix(`renders/${row.id}/`).catch(() => {});
    return c.json({ render_id: row.id, deleted: true, refunded_credits: refunded });
  });

  app.get("/v3/files/:id/:kind", async (c) => {
    const id = c.req.param("id");
    const kind = c.req.param("kind");
    if (kind !== "video" && kind !== "thumbnail") throw notFound("file", kind);
    const path = `/v3/files/${id}/${kind}`;
    const expires = Number(c.req.query("expires"));
    if (!(await verifyPath(ctx.secret, kind, path, expires, c.req.query("sig") ?? ""))) {
      throw new ApiError(
        403,
        "vid_forbidden",
        "the download URL is expired or invalid; read the render again for a fresh one",
      );
    }
    const row = ctx.db.prepare("select * from renders where id = ? and deleted_at is null").get(
      id,
    ) as
      | Row
      | undefined;
    if (!row || row.status !== "completed") throw notFound("render", id);
    const format = String(JSON.parse(String(row.request)).format);
    const ext = kind === "video" ? format : "jpg";
    const object = await ctx.storage.get(`renders/${id}/${kind}.${ext}`);
    if (!object) throw notFound("file", `${id}/${kind}`);
    return new Response(object.body, {
      headers: {
        "content-type": MIME[ext],
        "content-length": String(object.size),
        "content-disposition": `attachment; filename="${id}.${ext}"`,
      },
    });
  });

  app.route("/oauth", oauthRoutes(ctx, { throttles }));

  return app;
}
