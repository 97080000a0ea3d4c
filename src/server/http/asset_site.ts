/**
 * An asset's files as a site `<vid-player>` can draw: `GET /v3/sites/<token>/<path>` answers
 * the file at `<path>` of a ready asset's project zip, with `Access-Control-Allow-Origin: *`
 * (the player fetches the composition, and its sandboxed page, of origin `null`, its fonts
 * and modules, with CORS). The token is `<asset id>.<expires>.<signature>`, signed as the
 * download URLs are: it sits in the path, not the query, so the composition's relative URLs
 * keep it. `GET /v3/assets/:id` gives a ready asset's `site_url` (its composition), valid
 * for {@linkcode SITE_URL_SECONDS}; whoever holds it reads the project's files until then.
 *
 * @module
 */

import type { Hono } from "hono";
import { unzipSync } from "fflate";
import type { Row } from "../database/mod.ts";
import { ApiError } from "./errors.ts";
import { signPath, verifyPath } from "../auth/secrets.ts";
import { contentTypeOf } from "../../util/mime.ts";
import type { ServerContext } from "../context.ts";

/** How long a `site_url` stays valid: a day. */
export const SITE_URL_SECONDS = 24 * 3600;

/** The prefix of the site routes. */
const SITES = "/v3/sites/";

/** Project zips read lately, by asset id: a player asks for several files in a row. */
const recent = new Map<string, Uint8Array>();
/** What the recent zips may hold together; a larger zip is read again for each file. */
const RECENT_BYTES = 64 * 1024 * 1024;

/**
 * The signed site URL of asset `id`'s `composition`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const ctx = { secret: "s", publicUrl: "https://api.example" };
 * const url = await siteUrl(ctx, "ast_0123", "scenes/a b.html", 1000);
 * assert.match(url, /^https:\/\/api\.example\/v3\/sites\/ast_0123\.87400\.[0-9a-f]+\/scenes\/a%20b\.html$/);
 * ```
 */
export async function siteUrl(
  ctx: Pick<ServerContext, "secret" | "publicUrl">,
  id: string,
  composition: string,
  now: number = Math.floor(Date.now() / 1000),
): Promise<string> {
  const expires = now + SITE_URL_SECONDS;
  const sig = await signPath(ctx.secret, "site", `${SITES}${id}`, expires);
  const path = composition.split("/").map(encodeURIComponent).join("/");
  return `${ctx.publicUrl}${SITES}${id}.${expires}.${sig}/${path}`;
}

/** The asset's project zip, from the recent ones or storage. */
async function projectZip(ctx: ServerContext, id: string): Promise<Uint8Array | undefined> {
  const known = recent.get(id);
  if (known) return known;
  const object = await ctx.storage.get(`assets/${id}/project.zip`);
  if (!object) return undefined;
  const zip = new Uint8Array(await new Response(object.body).arrayBuffer());
  if (zip.length > RECENT_BYTES) return zip;
  recent.set(id, zip);
  let held = [...recent.values()].reduce((sum, z) => sum + z.length, 0);
  for (const [old, z] of recent) {
    if (held <= RECENT_BYTES) break;
    recent.delete(old);
    held -= z.length;
  }
  return zip;
}

/**
 * Headers of every site answer: readable from any origin, not sniffed, and a page opened
 * from here directly runs sandboxed in an opaque origin (`sandbox allow-scripts`): a
 * tenant's HTML never runs as the API's origin (its sign-in page, its cookies).
 */
const SITE_HEADERS = {
  "access-control-allow-origin": "*",
  "content-security-policy": "sandbox allow-scripts",
  "x-content-type-options": "nosniff",
  "cache-control": "private, max-age=300",
};

/** An error answer the player can read (with CORS), so it shows why. */
function refusal(status: 403 | 404, message: string): Response {
  const code = status === 403 ? "vid_forbidden" : "vid_not_found";
  return Response.json(new ApiError(status, code, message).toJSON(), {
    status,
    headers: SITE_HEADERS,
  });
}

/**
 * `GET /v3/sites/<token>/<path>`: a file of a ready asset through its signed site URL.
 *
 * @example
 * ```ts no_run
 * import { Hono } from "hono";
 * import type { ServerContext } from "../context.ts";
 *
 * const mount = (ctx: ServerContext): void => siteRoutes(new Hono(), ctx);
 * ```
 */
export function siteRoutes(app: Hono, ctx: ServerContext): void {
  app.get(`${SITES}:token/*`, async (c) => {
    const token = c.req.param("token");
    const match = /^([A-Za-z0-9_-]+)\.(\d+)\.([0-9a-f]+)$/.exec(token);
    const id = match?.[1] ?? "";
    const signed = match &&
      await verifyPath(ctx.secret, "site", `${SITES}${id}`, Number(match[2]), match[3]);
    if (!signed) {
      return refusal(
        403,
        "the site URL is expired or invalid; read the asset again for its site_url",
      );
    }
    const row = await ctx.db.get("select * from assets where id = ?", id) as Row | undefined;
    if (!row || row.status !== "ready") return refusal(404, `no ready asset ${id}`);
    const rest = c.req.path.slice(SITES.length + token.length + 1);
    let path = rest;
    try {
      path = rest.split("/").map(decodeURIComponent).join("/");
    } catch {
      // not a path of the zip: answered below
    }
    const zip = await projectZip(ctx, id);
    const file = zip && !path.endsWith("/")
      ? unzipSync(zip, { filter: (entry) => entry.name === path })[path]
      : undefined;
    if (!file) return refusal(404, `no file ${path} in asset ${id}`);
    return new Response(file, {
      headers: { "content-type": contentTypeOf(path), ...SITE_HEADERS },
    });
  });
}
