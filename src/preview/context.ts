/**
 * What the preview server's handlers share: the {@linkcode PreviewContext} of one running
 * server (project, entry, renders folder, frame rate, the event hub, the render jobs, the
 * project's file server and video proxies), which composition a request names, and the
 * JSON answers and error bodies every route gives.
 *
 * @module
 */

import { basename } from "node:path";
import { type Composition, readComposition } from "../composition/composition.ts";
import { DEFAULT_FRAME_RATE } from "../render/render.ts";
import type { FrameRate } from "../composition/frame_rate.ts";
import type { ProjectServer } from "../render/serve.ts";
import type { RenderJobs } from "./render_job.ts";
import type { PreviewVideoProxies } from "./video_proxies.ts";
import type { EventHub } from "./events.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** A request named a composition that is not an `.html` file at the project root. */
export class PreviewEntryError extends VidError {
  override name = "PreviewEntryError";
  /** The field at fault. */
  override readonly field = "entry";
  constructor(entry: string) {
    super(
      `entry ${JSON.stringify(entry)}: not an .html file at the project root; ` +
        `pick one of GET /__preview/compositions`,
      { exitCode: EXIT_FAILED },
    );
  }
}

/** What the request handlers of one preview server share. */
export interface PreviewContext {
  /** The project directory or HTML file `vid preview` was given. */
  readonly target: string;
  /** `--composition`: the entry inside the project directory. */
  readonly composition?: string;
  readonly projectDir: string;
  readonly defaultEntry: string;
  readonly rendersDir: string;
  /** Date.now() at time 0 stays put while the server runs, so reloads look the same. */
  readonly epochMs: number;
  /** `--fps`, parsed once when the server starts. */
  readonly frameRate?: FrameRate;
  readonly log: (message: string) => void;
  readonly hub: EventHub;
  readonly jobs: RenderJobs;
  project?: ProjectServer;
  videos?: PreviewVideoProxies;
  server?: Deno.HttpServer<Deno.NetAddr>;
}

/** --fps wins over the composition's data-fps, read afresh as the file changes. */
export function rateOf(ctx: PreviewContext, c?: Composition): FrameRate {
  return ctx.frameRate ?? c?.fps ?? DEFAULT_FRAME_RATE;
}

/** Reads a composition of the project: the one the server started with by default. */
export function readEntry(ctx: PreviewContext, entry = ctx.defaultEntry): Promise<Composition> {
  return entry === ctx.defaultEntry
    ? readComposition(ctx.target, ctx.composition)
    : readComposition(ctx.projectDir, entry);
}

/**
 * The entry a request names: the starting one, or an `.html` file at the project root
 * (only there, so no request reaches outside the project).
 */
export function entryOf(ctx: PreviewContext, raw: string | null | undefined): string {
  if (raw === null || raw === undefined || raw === "" || raw === ctx.defaultEntry) {
    return ctx.defaultEntry;
  }
  if (raw !== basename(raw) || raw.startsWith(".") || !/\.html?$/i.test(raw)) {
    throw new PreviewEntryError(raw);
  }
  return raw;
}

/** The origin a request's page lives on (the host is checked to be loopback first). */
export function originOf(request: Request): string {
  return `http://${request.headers.get("host")}`;
}

/** The body of a failed request: `{ok: false, error: {name, message, field?}}`. */
export function errorBody(error: unknown): { ok: false; error: Record<string, unknown> } {
  const err = error instanceof Error ? error : new Error(String(error));
  const field = err instanceof VidError ? err.field : undefined;
  return {
    ok: false,
    error: {
      name: err.name,
      message: err.message,
      ...(field !== undefined ? { field } : {}),
    },
  };
}

/** Nothing the preview server answers is cached: the project changes under it. */
export const NO_STORE = { "cache-control": "no-store" };

/** A JSON answer, never cached. */
export function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...NO_STORE },
  });
}

/** Reads a JSON object body; undefined when it is not one. */
export async function readObject(request: Request): Promise<Record<string, unknown> | undefined> {
  try {
    const body: unknown = await request.json();
    return isPlainObject(body) ? body : undefined;
  } catch {
    return undefined;
  }
}
