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
import type { Composition } from "../../composition/composition.ts";
import { authenticate, type Caller } from "../auth/accounts.ts";
import {
  MAX_COMPOSITION_LENGTH,
  MAX_CONCURRENT_PROJECT_CHECKS,
  MAX_FILENAME_LENGTH,
  MAX_UPLOAD_BYTES,
  type ServerContext,
  UPLOAD_URL_SECONDS,
} from "../context.ts";
import { DatabaseUnavailableError, now, type Row } from "../database/mod.ts";
import { ApiError, apiErrorFor, invalid, notFound, RateLimitedError } from "./errors.ts";
import { DatabaseThrottleStore, newThrottles } from "../auth/throttle.ts";
import { clientAddress } from "./client_address.ts";
import type { KeyScope } from "./idempotency.ts";
import { bodyToFile, jsonBody, Slots } from "./request_body.ts";
import { oauthRoutes } from "../auth/oauth.ts";
import { randomId, sha256Hex, signPath, verifyPath } from "../auth/secrets.ts";
import { fetchProjectUrl } from "./url_source.ts";
import { type AssetProject, checkUploadedProject } from "./project_check.ts";
import { extractProjectZip, ProjectZipError } from "./zip_check.ts";
import { zipSync } from "fflate";
import { OPTIONS } from "../../request/options.ts";
import { renderRoutes } from "./render_routes.ts";
import { opsRoutes } from "./ops_routes.ts";
import { PLAYER_PATH, playerScript } from "../../player/serve.ts";
import { renderJson, transitionRender } from "../queue/renders.ts";
import { siteRoutes, siteUrl } from "./asset_site.ts";
import { idempotencyKey, underKey } from "./under_key.ts";
import { contentTypeOf } from "../../util/mime.ts";
import { addLogContext, log } from "../log.ts";
import { insufficientStorageFor } from "../storage/disk_space.ts";
import { errorText } from "../../errors.ts";

function loadOpenApi(): unknown {
  const text = readFileSync(new URL("../../../api/openapi.yaml", import.meta.url), "utf8");
  return parseYaml(text);
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
  if (row.status === "ready") {
    // What <vid-player> draws the asset from (asset_site.ts).
    json.site_url = await siteUrl(ctx, String(row.id), String(row.composition));
  }
  return json;
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
  await mkdir(ctx.workDir, { recursive: true, mode: 0o700 });
  const dir = await mkdtemp(join(ctx.workDir, "upload-"));
  try {
    let project: AssetProject;
    let extracted: Composition;
    try {
      extracted = (await extractProjectZip(zip, join(dir, "project"), { composition }))
        .composition;
      const parsed = extracted;
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
    await checkUploadedProject(extracted);
    await ctx.storage.putBytes(`assets/${id}/project.zip`, zip, "application/zip");
    await ctx.db.run(
      "update assets set status = 'ready', project = ?, ready_at = ? where id = ?",
      JSON.stringify(project),
      now(),
      id,
    );
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
  await ctx.db.run(
    "insert into assets (id, account_id, status, size_bytes, filename, composition, created_at) values (?, ?, 'pending_upload', ?, ?, ?, ?)",
    id,
    who.account.id,
    zip.length,
    fetched.url,
    composition,
    now(),
  );
  await ingestProject(ctx, id, zip, composition);
  return id;
}

/**
 * Builds the API.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 *
 * function serve(ctx: ServerContext): Deno.HttpServer {
 *   return Deno.serve({ port: 8787 }, createApp(ctx).fetch);
 * }
 * ```
 */
export function createApp(ctx: ServerContext): Hono {
  const app = new Hono();
  const openapi = loadOpenApi();
  const throttles = newThrottles(new DatabaseThrottleStore(ctx.db));
  // Uploads and url sources are read whole and checked: a few at a time.
  const checks = new Slots(MAX_CONCURRENT_PROJECT_CHECKS);
  // A presented credential is always checked, so a valid one is served whatever others at
  // its address failed (a proxy or NAT shares one); a failing one counts against the
  // address, and past the limit is answered 429 instead of 401 (see throttle.ts).
  const caller = async (c: Context): Promise<Caller> => {
    const header = c.req.header("authorization");
    try {
      const who = await authenticate(ctx.db, header);
      addLogContext({ accountId: who.account.id });
      return who;
    } catch (error) {
      // No credential at all guesses nothing: a plain 401.
      if (!header || !(error instanceof ApiError && error.status === 401)) throw error;
      const address = clientAddress(c.env, c.req.raw.headers, ctx.trustedProxies ?? []);
      const wait = await throttles.keyCheckPerAddress.retryAfter(address);
      if (wait > 0) {
        throw new RateLimitedError(
          "too many failed API key or token checks from this address",
          wait,
        );
      }
      await throttles.keyCheckPerAddress.fail(address);
      throw error;
    }
  };

  app.onError((error, c) => {
    // The database is away (restarting, network): a client's retry will likely succeed. The
    // reason (a host and port) is the operator's, logged here, not the tenant's.
    if (error instanceof DatabaseUnavailableError) {
      log.error(`vid server: ${error.message}`);
      c.header("retry-after", String(DatabaseUnavailableError.RETRY_AFTER_SECONDS));
      return c.json(
        new ApiError(
          503,
          "vid_unavailable",
          "the server's database is not answering; try again after Retry-After seconds",
        ).toJSON(),
        503,
      );
    }
    // A full disk is the operator's to fix, said on one line; the client is told to retry.
    const full = insufficientStorageFor(error);
    if (full !== undefined) {
      log.error(
        `vid server: out of disk space on ${c.req.method} ${c.req.path}: ${
          errorText(full.cause ?? full)
        }`,
      );
      c.header("retry-after", String(full.retryAfterSeconds));
      return c.json(full.toJSON(), 507);
    }
    const answer = apiErrorFor(error);
    if (answer === undefined) {
      log.error(Deno.inspect(error));
      return c.json(new ApiError(500, "vid_internal", "internal error").toJSON(), 500);
    }
    if (answer instanceof RateLimitedError) {
      c.header("retry-after", String(answer.retryAfterSeconds));
    }
    return c.json(answer.toJSON(), answer.status as 400);
  });
  app.notFound((c) =>
    c.json(
      new ApiError(404, "vid_not_found", `no route ${c.req.method} ${c.req.path}`).toJSON(),
      404,
    )
  );

  app.get("/v3/openapi.json", (c) => c.json(openapi as Record<string, unknown>));
  // <vid-player>, loadable as a module from any origin (docs/player.md).
  app.get(PLAYER_PATH, () => playerScript());

  app.get("/v3/me", async (c) => {
    const who = await caller(c);
    return c.json({
      account_id: who.account.id,
      email: who.account.email,
      credential: who.credential,
      credits: who.account.credits,
    });
  });

  const deps: RouteDeps = { caller, checks };
  assetRoutes(app, ctx, deps);
  uploadRoute(app, ctx, deps);
  renderRoutes(app, ctx, {
    caller,
    assetFromUrl: (who, url, composition) =>
      checks.run(() => assetFromUrl(ctx, who, url, composition)),
    renderJson: (row) => renderJson(ctx, row),
  });
  renderReadRoutes(app, ctx, deps);
  fileRoutes(app, ctx);
  siteRoutes(app, ctx);

  app.route("/oauth", oauthRoutes(ctx, { throttles }));
  opsRoutes(app, ctx);

  return app;
}

/** What the route groups share: the caller check and the project-check slots. */
interface RouteDeps {
  /** Authenticates the request's caller (throttling failed credentials). */
  caller(c: Context): Promise<Caller>;
  /** Uploads and url sources are read whole and checked: a few at a time. */
  checks: Slots;
}

/** `POST /v3/assets` and `GET /v3/assets/:id`. */
function assetRoutes(app: Hono, ctx: ServerContext, { caller }: RouteDeps): void {
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
    await ctx.disk?.ensureRoom(size, "this project zip");
    const composition = body.composition ?? OPTIONS.composition.default;
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
    const made = await underKey(ctx, where, body, async (complete) => {
      const id = randomId("ast");
      await ctx.db.transaction(async (tx) => {
        await tx.run(
          "insert into assets (id, account_id, status, size_bytes, sha256, filename, composition, created_at) values (?, ?, 'pending_upload', ?, ?, ?, ?, ?)",
          id,
          who.account.id,
          size,
          (body.sha256 as string | undefined) ?? null,
          typeof body.filename === "string" ? body.filename : null,
          composition,
          now(),
        );
        await complete(tx, id);
      });
      return id;
    });
    const row = await ctx.db.get("select * from assets where id = ?", made.id) as Row;
    return c.json(await assetJson(ctx, row), made.replayed ? 200 : 201);
  });

  app.get("/v3/assets/:id", async (c) => {
    const who = await caller(c);
    const row = await ctx.db.get(
      "select * from assets where id = ? and account_id = ?",
      c.req.param("id"),
      who.account.id,
    ) as Row | undefined;
    if (!row) throw notFound("asset", c.req.param("id"));
    return c.json(await assetJson(ctx, row));
  });
}

/** `GET /v3/vid/renders` (a page), `GET` and `DELETE /v3/vid/renders/:id`. */
function renderReadRoutes(app: Hono, ctx: ServerContext, { caller }: RouteDeps): void {
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
    const rows = await ctx.db.all(
      `select * from renders where account_id = ? and seq < ? ${
        all ? "" : "and deleted_at is null"
      } order by seq desc limit ?`,
      who.account.id,
      before,
      limit + 1,
    ) as Row[];
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
    const row = await ctx.db.get(
      "select * from renders where id = ? and account_id = ? and deleted_at is null",
      c.req.param("id") ?? "",
      who.account.id,
    ) as Row | undefined;
    if (!row) throw notFound("render", c.req.param("id") ?? "");
    addLogContext({ renderId: String(row.id) });
    return row;
  };

  app.get("/v3/vid/renders/:id", async (c) => c.json(await renderJson(ctx, await ownRender(c))));

  app.delete("/v3/vid/renders/:id", async (c) => {
    const row = await ownRender(c);
    // A render that never delivered its video (queued, or stopped mid-render) gives its
    // credits back; a completed or failed one does not (a failure was refunded already).
    const refunded = await ctx.db.transaction(async (tx) => {
      const current = await tx.get(
        "select status, credits, account_id from renders where id = ? and deleted_at is null",
        row.id,
      ) as Row | undefined;
      if (!current) throw notFound("render", String(row.id));
      const undelivered = current.status === "queued" || current.status === "rendering";
      await transitionRender(tx, String(row.id), "deleted", { deleted_at: now() });
      if (!undelivered) return 0;
      await tx.run(
        "update accounts set credits = credits + ? where id = ?",
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
}

/** `GET /v3/files/:id/:kind`: the signed download of a video or its thumbnail. */
function fileRoutes(app: Hono, ctx: ServerContext): void {
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
    const row = await ctx.db.get("select * from renders where id = ? and deleted_at is null", id) as
      | Row
      | undefined;
    if (!row || row.status !== "completed") throw notFound("render", id);
    const format = String(JSON.parse(String(row.request)).format);
    const ext = kind === "video" ? format : "jpg";
    const object = await ctx.storage.get(`renders/${id}/${kind}.${ext}`);
    if (!object) throw notFound("file", `${id}/${kind}`);
    return new Response(object.body, {
      headers: {
        "content-type": contentTypeOf(`${kind}.${ext}`),
        "content-length": String(object.size),
        "content-disposition": `attachment; filename="${id}.${ext}"`,
      },
    });
  });
}

/** The 413 of an upload larger than its asset's declared size or the upload limit. */
function uploadTooLarge(limit: number): ApiError {
  return new ApiError(
    413,
    "vid_payload_too_large",
    `the upload is larger than this asset's declared size or the ${
      MAX_UPLOAD_BYTES / 1024 / 1024
    } MB limit (${limit} bytes allowed)`,
  );
}

/**
 * `PUT /v3/uploads/:id`: the signed, single-use upload of an asset's zip, written to disk,
 * checked against the declared size and sha256, then ingested.
 */
function uploadRoute(app: Hono, ctx: ServerContext, { checks }: RouteDeps): void {
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
    const row = await ctx.db.get("select * from assets where id = ?", id) as Row | undefined;
    if (!row) throw notFound("asset", id);
    // Before the body is read and the URL claimed: an upload larger than the free space
    // could not be kept.
    if (row.status === "pending_upload") {
      await ctx.disk?.ensureRoom(Number(row.size_bytes), "this upload");
    }
    // A PUT that cannot be the upload (another is under way, or its Content-Length is not the
    // declared size) is refused before it claims the URL: claiming and then failing would
    // free the URL under the upload that holds it.
    if (row.status === "pending_upload" && row.upload_started_at != null) {
      throw new ApiError(
        409,
        "vid_asset_not_ready",
        `asset ${id} is being uploaded by another request; an upload URL is used once`,
      );
    }
    const declared = c.req.header("content-length");
    if (row.status === "pending_upload" && declared !== undefined) {
      const limit = Math.min(Number(row.size_bytes), MAX_UPLOAD_BYTES);
      if (Number(declared) > limit) throw uploadTooLarge(limit);
      if (Number(declared) !== Number(row.size_bytes)) {
        throw invalid(
          "body",
          `expected ${row.size_bytes} bytes as declared, got a Content-Length of ${declared}`,
        );
      }
    }
    // An upload URL is single-use: the first PUT claims the asset, a concurrent or later
    // one is refused, so it can never replace a ready project.
    const claimed = await ctx.db.run(
      "update assets set upload_started_at = ? where id = ? and status = 'pending_upload' and upload_started_at is null",
      Date.now(),
      id,
    );
    if (claimed !== 1) {
      throw new ApiError(
        409,
        "vid_asset_not_ready",
        row.status === "pending_upload"
          ? `asset ${id} is being uploaded by another request; an upload URL is used once`
          : `asset ${id} was uploaded already`,
      );
    }
    await mkdir(ctx.workDir, { recursive: true, mode: 0o700 });
    const dir = await mkdtemp(join(ctx.workDir, "put-"));
    try {
      // The body goes to disk first: a slow sender holds a file, not a check slot.
      const limit = Math.min(Number(row.size_bytes), MAX_UPLOAD_BYTES);
      const file = join(dir, "upload.zip");
      const size = await bodyToFile(
        c,
        limit,
        file,
        () => uploadTooLarge(limit),
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
      await ctx.db.run(
        "update assets set upload_started_at = null where id = ? and status = 'pending_upload'",
        id,
      );
      throw error;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const ready = await ctx.db.get("select * from assets where id = ?", id) as Row;
    return c.json(await assetJson(ctx, ready));
  });
}
