/**
 * The preview server's routes, as a Hono app (the router `vid server` uses): the studio page,
 * `/player.js`, the studio's JSON API under {@linkcode PREVIEW_PREFIX} and, for anything
 * else, the project's files. Loopback host names only (against DNS rebinding); a POST to
 * the API must be JSON (other sites' plain form posts need no CORS preflight, JSON does).
 *
 * The paths are matched as the request wrote them (not percent-decoded), and a route of
 * `GET` does not answer `HEAD`: that request goes on to what follows it, the API's 404 or
 * the project's files, as the server answered before it used a router.
 *
 * @module
 */

import { type Context, Hono, type MiddlewareHandler } from "hono";
import { runtimeLoaderScript } from "./inject.ts";
import { studioPage } from "./studio_page.ts";
import { PLAYER_PATH, playerScript } from "../player/serve.ts";
import {
  entryOf,
  errorBody,
  json,
  NO_STORE,
  type PreviewContext,
  PreviewEntryError,
  rateOf,
  readEntry,
  readObject,
} from "./context.ts";
import { isPlainObject } from "../util/json_shape.ts";
import {
  checkStudioValues,
  describeComposition,
  isComposition,
  listCompositions,
} from "./compositions.ts";
import { projectImages } from "./image_picker.ts";
import { prepareMedia } from "./media_route.ts";
import { download, startRender } from "./render_routes.ts";
import { proxy, stageHtml } from "./project_files.ts";

/** Prefix of the studio's own routes; everything else is the project. */
export const PREVIEW_PREFIX = "/__preview/";

/** Host names the server answers to: loopback only, against DNS rebinding. */
function isLoopbackHost(host: string | null, port: number): boolean {
  return host !== null &&
    [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(host.toLowerCase());
}

/** The path as the request wrote it. */
function rawPath(request: Request): string {
  return new URL(request.url).pathname;
}

/** The `entry` query parameter. */
function entryParam(request: Request): string | null {
  return new URL(request.url).searchParams.get("entry");
}

/** A handler of GET only: a HEAD request (which Hono routes as GET) goes on to the next. */
function getOnly(handler: (c: Context) => Response | Promise<Response>): MiddlewareHandler {
  return async (c, next) => {
    if (c.req.method !== "HEAD") return await handler(c);
    await next();
  };
}

/** The studio's JSON API, `/__preview/…`. */
function apiRoutes(app: Hono, ctx: PreviewContext): void {
  const api = (route: string): string => `${PREVIEW_PREFIX}${route}`;
  app.get(
    api("runtime.js"),
    getOnly(() =>
      new Response(runtimeLoaderScript(), {
        headers: { "content-type": "text/javascript; charset=utf-8", ...NO_STORE },
      })
    ),
  );
  app.get(
    api("compositions"),
    getOnly(async () =>
      json({ ok: true, entry: ctx.defaultEntry, compositions: await listCompositions(ctx) })
    ),
  );
  app.get(
    api("composition"),
    getOnly(async (c) => {
      try {
        const composition = await readEntry(ctx, entryOf(ctx, entryParam(c.req.raw)));
        return json({
          ok: true,
          composition: describeComposition(composition, rateOf(ctx, composition)),
        });
      } catch (error) {
        return json(errorBody(error), error instanceof PreviewEntryError ? 400 : 422);
      }
    }),
  );
  app.post(api("variables"), async (c) => {
    const body = await readObject(c.req.raw);
    if (!body || !isPlainObject(body.values)) {
      return json(errorBody(new Error('send {"values": {…}}')), 400);
    }
    try {
      const composition = await readEntry(ctx, entryOf(ctx, body.entry as string | undefined));
      return json({
        ok: true,
        ...checkStudioValues(composition.declarations, body.values, ctx.projectDir),
      });
    } catch (error) {
      return json(errorBody(error), 422);
    }
  });
  app.get(
    api("images"),
    getOnly(async () => json({ ok: true, images: await projectImages(ctx.projectDir) })),
  );
  app.get(api("check"), getOnly((c) => projectCheck(ctx, entryParam(c.req.raw))));
  app.get(api("events"), getOnly(() => ctx.hub.respond()));
  app.post(api("media"), (c) => prepareMedia(ctx, c.req.raw));
  app.get(api("render"), getOnly(() => json(ctx.jobs.status())));
  app.post(api("render/cancel"), async () => {
    const cancelled = await ctx.jobs.cancel();
    return json({ ok: true, cancelled, status: ctx.jobs.status() });
  });
  app.post(api("render"), (c) => startRender(ctx, c.req.raw));
  app.get(
    api("renders/*"),
    getOnly((c) =>
      download(
        ctx.rendersDir,
        decodeURIComponent(rawPath(c.req.raw).slice(api("renders/").length)),
      )
    ),
  );
  // `/__preview` itself (no slash) is a file of the project.
  app.all(api("*"), async (c, next) => {
    const path = rawPath(c.req.raw);
    if (!path.startsWith(PREVIEW_PREFIX)) return await next();
    return json(errorBody(new Error(`no such route: ${c.req.method} ${path}`)), 404);
  });
}

/**
 * `GET /__preview/check`: the static and media parts of vid check, for the Check panel (no
 * browser: the stage is the browser part, and its errors show on the stage).
 */
async function projectCheck(ctx: PreviewContext, entry: string | null): Promise<Response> {
  try {
    const c = await readEntry(ctx, entryOf(ctx, entry));
    const { projectProblems } = await import("../check/check.ts");
    const { formatProblem } = await import("../check/problems.ts");
    const problems = (await projectProblems(c)).map((p) => ({
      ...p,
      text: formatProblem(p).split("\n")[0],
    }));
    return json({ ok: true, problems });
  } catch (error) {
    return json(errorBody(error), error instanceof PreviewEntryError ? 400 : 422);
  }
}

/** The project's files: a composition as a stage page, anything else as it is. */
async function projectFile(ctx: PreviewContext, request: Request): Promise<Response> {
  if (request.method !== "GET" && request.method !== "HEAD") {
    return new Response("method not allowed", { status: 405 });
  }
  const url = new URL(request.url);
  const path = decodeURIComponent(url.pathname).slice(1);
  if (
    path === ctx.defaultEntry ||
    (/^[^/.][^/]*\.html?$/i.test(path) && await isComposition(ctx, path))
  ) {
    return await stageHtml(ctx, request, url, path);
  }
  return await proxy(ctx.project!, request, url);
}

/**
 * The preview server's app: every request is the studio, its API, a stage page, or one of
 * the project's files.
 *
 * @example
 * ```ts no_run
 * import type { PreviewContext } from "./context.ts";
 *
 * declare const ctx: PreviewContext;
 * Deno.serve({ hostname: "127.0.0.1", port: 0 }, createPreviewApp(ctx).fetch);
 * ```
 */
export function createPreviewApp(ctx: PreviewContext): Hono {
  // Matched on the path as written, as the routes were before a router: `%2F` is no `/`.
  const app = new Hono({ getPath: rawPath });
  app.use("*", async (c, next) => {
    const port = ctx.server?.addr.port ?? 0;
    if (!isLoopbackHost(c.req.header("host") ?? null, port)) {
      return new Response("vid preview answers only on 127.0.0.1 and localhost", { status: 403 });
    }
    await next();
  });
  app.use(`${PREVIEW_PREFIX}*`, async (c, next) => {
    const underApi = rawPath(c.req.raw).startsWith(PREVIEW_PREFIX);
    if (
      underApi && c.req.method === "POST" && !c.req.header("content-type")?.includes("json")
    ) {
      // Also keeps other sites' plain form posts out: JSON needs a CORS preflight.
      return json(errorBody(new Error("send the body as application/json")), 415);
    }
    await next();
  });
  app.onError((error) => json(errorBody(error), 500));
  app.get(
    "/",
    getOnly(() =>
      new Response(studioPage(), {
        headers: { "content-type": "text/html; charset=utf-8", ...NO_STORE },
      })
    ),
  );
  app.get(PLAYER_PATH, getOnly(() => playerScript()));
  apiRoutes(app, ctx);
  app.all("*", (c) => projectFile(ctx, c.req.raw));
  return app;
}
