/**
 * The routes an operator's tooling calls rather than tenants: `GET /healthz` (the process
 * answers), `GET /readyz` (the database and the storage answer, so a load balancer or
 * Kubernetes sends requests here) and `GET /metrics` (Prometheus). None touches an account,
 * so they stay out of the `/v3` API and its credentials; `/metrics` takes a bearer token of
 * its own when the server was started with `--metrics-token`.
 *
 * @module
 */

import { log } from "../log.ts";
import { type Context, Hono } from "hono";
import type { ServerContext } from "../context.ts";
import { ApiError } from "./errors.ts";
import { METRICS_CONTENT_TYPE, ServerMetrics } from "../queue/metrics.ts";
import { safeEqual } from "../auth/secrets.ts";

/** How long `/readyz` waits for the storage before calling it unreachable. */
export const READY_CHECK_MS = 2000;

/**
 * How long `/readyz` waits for its database read: a liveness or readiness probe with a 1 s
 * timeout must get an answer, also while the read waits behind statements that wait for
 * another process's lock.
 */
export const READY_DATABASE_MS = 900;

/**
 * How long another process may hold the database's write lock while statements wait
 * before `/readyz` says not ready (they fail at `BUSY_WAIT_MS` of `database/sqlite.ts`).
 */
export const READY_LOCKED_MS = 1000;

/** `Retry-After` of a 503 from `/readyz`, in seconds: about one probe period. */
const UNREADY_RETRY_SECONDS = 5;

/** What `/readyz` found for each dependency: `"ok"` or why not. */
export interface Readiness {
  /** Whether every dependency answered. */
  ready: boolean;
  /**
   * `database`, `storage` and `disk` (free space against `--min-free-space`), each `"ok"` or
   * the reason it is not; `server` only while this instance stops (it drains its requests).
   */
  checks: { database: string; storage: string; disk: string; server?: string };
}

/** Runs `check` with a deadline the host enforces; resolves to `"ok"` or the reason. */
async function within(check: () => Promise<void> | void, ms: number): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${ms} ms`), ms);
  });
  try {
    return await Promise.race([
      (async () => {
        await check();
        return "ok";
      })(),
      timeout,
    ]);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Checks what a request needs: a read of the database within {@linkcode READY_DATABASE_MS}
 * (not ready at once while another process has held its lock past
 * {@linkcode READY_LOCKED_MS}), the storage's own check (the folder is there and
 * writable, or the bucket answers) within {@linkcode READY_CHECK_MS}, and the data folder's
 * free space against `--min-free-space`. A stopping instance is not ready.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 *
 * async function report(ctx: ServerContext): Promise<void> {
 *   const { ready, checks } = await readiness(ctx);
 *   console.log(ready ? "ready" : `not ready: ${JSON.stringify(checks)}`);
 * }
 * ```
 */
export async function readiness(ctx: ServerContext): Promise<Readiness> {
  const locked = ctx.db.lockedForMs?.() ?? 0;
  const [database, storage, disk] = await Promise.all([
    locked > READY_LOCKED_MS
      ? `locked by another process: statements have waited ${
        Math.round(locked)
      } ms for its write lock`
      : within(
        async () => void await ctx.db.get("select seq from renders limit 1"),
        READY_DATABASE_MS,
      ),
    within(() => ctx.storage.ready(), READY_CHECK_MS),
    ctx.disk ? within(() => ctx.disk?.ready(), READY_CHECK_MS) : "ok",
  ]);
  const stopping = ctx.stopping?.();
  return {
    ready: database === "ok" && storage === "ok" && disk === "ok" && stopping === undefined,
    checks: { database, storage, disk, ...(stopping !== undefined && { server: stopping }) },
  };
}

/**
 * Adds `/healthz`, `/readyz` and `/metrics` to the server's app. A dependency that stops
 * answering is logged once when `/readyz` first sees it, and once when it is back.
 *
 * @example
 * ```ts no_run
 * import { Hono } from "hono";
 * import type { ServerContext } from "../context.ts";
 *
 * function withProbes(ctx: ServerContext): Hono {
 *   const app = new Hono();
 *   opsRoutes(app, ctx);
 *   return app;
 * }
 * ```
 */
export function opsRoutes(app: Hono, ctx: ServerContext): void {
  const metrics = ctx.metrics ?? new ServerMetrics();
  let lastProblem = "";

  app.get("/healthz", (c) => c.json({ status: "ok" }));

  app.get("/readyz", async (c) => {
    const { ready, checks } = await readiness(ctx);
    const problem = ready
      ? ""
      : Object.entries(checks).filter(([, v]) => v !== "ok").map(([k, v]) => `${k}: ${v}`)
        .join("; ");
    if (problem !== lastProblem) {
      log.error(problem ? `not ready: ${problem}` : "ready again");
      lastProblem = problem;
    }
    if (ready) return c.json({ status: "ready", checks });
    c.header("retry-after", String(UNREADY_RETRY_SECONDS));
    return c.json({ status: "unready", checks }, 503);
  });

  app.get("/metrics", async (c: Context) => {
    if (ctx.metricsToken !== undefined) {
      const given = /^Bearer (.+)$/i.exec(c.req.header("authorization") ?? "")?.[1] ?? "";
      if (!safeEqual(given, ctx.metricsToken)) {
        throw new ApiError(
          401,
          "vid_unauthorized",
          "this server's /metrics needs its metrics token: send Authorization: Bearer <token>",
        );
      }
    }
    return c.body(await metrics.text(), 200, { "content-type": METRICS_CONTENT_TYPE });
  });
}

/**
 * The whole HTTP surface of a `--role worker` instance: the probes and metrics, and a 404
 * that says where the API is for anything else.
 *
 * @example
 * ```ts no_run
 * import type { ServerContext } from "../context.ts";
 *
 * function serveProbes(ctx: ServerContext): Deno.HttpServer {
 *   return Deno.serve({ port: 8788 }, opsApp(ctx, "worker").fetch);
 * }
 * ```
 */
export function opsApp(ctx: ServerContext, role: string): Hono {
  const app = new Hono();
  app.onError((error, c) => {
    const answer = error instanceof ApiError ? error : undefined;
    if (answer === undefined) {
      log.error(Deno.inspect(error));
      return c.json(new ApiError(500, "vid_internal", "internal error").toJSON(), 500);
    }
    return c.json(answer.toJSON(), answer.status as 401);
  });
  opsRoutes(app, ctx);
  app.notFound((c) =>
    c.json(
      new ApiError(
        404,
        "vid_not_found",
        `no route ${c.req.method} ${c.req.path}: this instance runs --role ${role}, which serves only /healthz, /readyz and /metrics; send API requests to an instance with --role api or all`,
      ).toJSON(),
      404,
    )
  );
  return app;
}
