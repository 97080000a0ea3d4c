/**
 * The hosted render API (`/v3/…`, see api/openapi.yaml) as a Hono app over the server's
 * SQLite state and storage. Handlers validate, record and answer; rendering happens in
 * the render queue.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
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
  MAX_UPLOAD_BYTES,
  OUTPUT_SIZES,
  RESOLUTION_MULTIPLIER,
  type ServerContext,
  UPLOAD_URL_SECONDS,
} from "./context.ts";
import { now, type Row, transaction } from "./db.ts";
import { ApiError, invalid, notFound } from "./errors.ts";
import { oauthRoutes } from "./oauth.ts";
import { randomId, sha256Hex, signPath, verifyPath } from "./secrets.ts";
import { CallbackUrlError, checkCallbackUrl } from "./webhooks.ts";
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

async function jsonBody(c: Context): Promise<Record<string, unknown>> {
  let body: unknown;
  try {
    body = await c.req.json();
  } catch {
    throw invalid("body", "must be a JSON object");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalid("body", "must be a JSON object");
  }
  return body as Record<string, unknown>;
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

/** The object an earlier request with this key made, or a 409 if its body differed. */
function replayed(
  ctx: ServerContext,
  caller: Caller,
  scope: string,
  key: string | undefined,
  requestHash: string,
): string | undefined {
  if (key === undefined) return undefined;
  const row = ctx.db.prepare(
    "select request_hash, object_id from idempotency where account_id = ? and scope = ? and key = ?",
  ).get(caller.account.id, scope, key) as Row | undefined;
  if (!row) return undefined;
  if (row.request_hash !== requestHash) {
    throw new ApiError(
      409,
      "vid_idempotency_conflict",
      `Idempotency-Key "${key}" was used with a different request body; use a new key`,
      "Idempotency-Key",
    );
  }
  return String(row.object_id);
}

function remember(
  ctx: ServerContext,
  caller: Caller,
  scope: string,
  key: string | undefined,
  requestHash: string,
  objectId: string,
): void {
  if (key === undefined) return;
  ctx.db.prepare(
    "insert into idempotency (account_id, scope, key, request_hash, object_id, created_at) values (?, ?, ?, ?, ?, ?)",
  ).run(caller.account.id, scope, key, requestHash, objectId, now());
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

/** Reads a request body up to `limit` bytes; a 413 past it. */
async function readLimited(c: Context, limit: number): Promise<Uint8Array> {
  const declared = Number(c.req.header("content-length"));
  const tooLarge = () =>
    new ApiError(
      413,
      "vid_payload_too_large",
      `the upload is larger than this asset's declared size or the ${
        MAX_UPLOAD_BYTES / 1024 / 1024
      } MB limit (${limit} bytes allowed)`,
    );
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const reader = c.req.raw.body?.getReader();
  if (!reader) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel();
      throw tooLarge();
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.length;
  }
  return bytes;
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
 * ```ts
 * const app = createApp(ctx);
 * Deno.serve({ port: 8787 }, app.fetch);
 * ```
 */
export function createApp(ctx: ServerContext): Hono {
  const app = new Hono();
  const openapi = loadOpenApi();
  const caller = (c: Context) => authenticate(ctx.db, c.req.header("authorization"));

  app.onError((error, c) => {
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
    if (body.sha256 !== undefined && !/^[0-9a-f]{64}$/.test(String(body.sha256))) {
      throw invalid("sha256", "must be 64 lowercase hex digits");
    }
    const requestHash = await sha256Hex(JSON.stringify(body));
    const earlier = replayed(ctx, who, "assets", key, requestHash);
    if (earlier) {
      const row = ctx.db.prepare("select * from assets where id = ?").get(earlier) as Row;
      return c.json(await assetJson(ctx, row), 200);
    }
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
      remember(ctx, who, "assets", key, requestHash, id);
    });
    const row = ctx.db.prepare("select * from assets where id = ?").get(id) as Row;
    return c.json(await assetJson(ctx, row), 201);
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
    if (row.status !== "pending_upload") {
      throw new ApiError(409, "vid_asset_not_ready", `asset ${id} was uploaded already`);
    }
    const zip = await readLimited(c, Math.min(Number(row.size_bytes), MAX_UPLOAD_BYTES));
    if (zip.length !== Number(row.size_bytes)) {
      throw invalid("body", `expected ${row.size_bytes} bytes as declared, got ${zip.length}`);
    }
    if (row.sha256 && (await sha256Hex(zip)) !== row.sha256) {
      throw invalid("body", "the upload does not match the declared sha256");
    }
    await ingestProject(ctx, id, zip, String(row.composition));
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
    const variables = body.variables ?? {};
    if (typeof variables !== "object" || variables === null || Array.isArray(variables)) {
      throw invalid("variables", "must be a JSON object of variable values");
    }
    const strict = body.strict_variables ?? false;
    if (typeof strict !== "boolean") throw invalid("strict_variables", "must be true or false");
    let callbackUrl: string | null = null;
    if (body.callback_url !== undefined && body.callback_url !== null) {
      try {
        callbackUrl = checkCallbackUrl(String(body.callback_url), {
          allowHttpLoopback: ctx.allowHttpCallbacks,
        }).href;
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
    const requestHash = await sha256Hex(JSON.stringify(body));
    const earlier = replayed(ctx, who, "renders", key, requestHash);
    if (earlier) {
      const row = ctx.db.prepare("select * from renders where id = ?").get(earlier) as Row;
      return c.json(await renderJson(ctx, row), 200);
    }
    const assetId = body.url !== undefined
      ? await assetFromUrl(ctx, who, String(body.url), composition)
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
      throw invalid("composition", `asset ${asset.id} was checked with entry ${asset.composition}`);
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
      remember(ctx, who, "renders", key, requestHash, id);
    });
    ctx.wake();
    const row = ctx.db.prepare("select * from renders where id = ?").get(id) as Row;
    return c.json(await renderJson(ctx, row), 201);
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
    ctx.db.prepare("update renders set deleted_at = ? where id = ?").run(now(), row.id);
    // Files are purged in the background; the render is already gone from get and list.
    ctx.storage.deletePrefix(`renders/${row.id}/`).catch(() => {});
    return c.json({ render_id: row.id, deleted: true });
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

  app.route("/oauth", oauthRoutes(ctx));

  return app;
}
