/**
 * The preview server behind `vid preview`: serves the studio page, the composition (with
 * the vid runtime injected, so the stage seeks exactly as capture does), the project's
 * files, a JSON API (composition, variable checks, renders), and a server-sent event
 * stream that tells the studio about file edits and render progress. Loopback only.
 *
 * Routes:
 *
 * - `GET /`: the studio.
 * - `GET /player.js`: the `<vid-player>` module, loadable from any origin.
 * - `GET /__preview/compositions`: every `.html` file at the project root with a
 *   composition root (and the entry it started with), for the studio's switcher.
 * - `GET /__preview/composition?entry=<file>`: size, duration, fps, frames, declarations,
 *   defaults, and the render formats and qualities.
 * - `POST /__preview/variables`: `{values, entry?}` checked with the CLI's own checks.
 * - `GET /__preview/runtime.js`: the page runtime the stage pages load.
 * - `GET /__preview/images`: the project's image files, for the image variables' picker.
 * - `GET /__preview/events`: server-sent events `change` and `render`.
 * - `POST /__preview/media`: `{media}`, the `__vid.media()` list of a stage page; prepares
 *   the frame-exact proxies of its `<video>` sources and answers their `version`.
 * - `POST /__preview/render` (`{values, entry?, format?, quality?, from?, to?, name?}`),
 *   `GET /__preview/render`: start one render, read its status (with progress and ETA).
 * - `POST /__preview/render/cancel`: stop the running render (no file is left).
 * - `GET /__preview/renders/<file>`: a finished render, for download (a PNG sequence's
 *   frames as `renders/<folder>/<frame>.png`).
 * - anything else: the project's files; a composition HTML gets the runtime with the
 *   variables of its `vars` query parameter (JSON) at the frame rate of `fps`, and the
 *   video proxies prepared so far (their version in the runtime element's
 *   `data-vid-proxies`); proxies themselves are served at `/__vid/<name>`.
 *
 * This module starts and stops the server; its jobs are the modules beside it: the routes
 * as a Hono app, the router `vid server` uses (`routes.ts`), what the handlers share
 * (`context.ts`), the event stream (`events.ts`), the compositions and variables' check
 * (`compositions.ts`), stage pages and project files (`project_files.ts`), the videos'
 * proxies (`media_route.ts`), renders (`render_routes.ts`) and the image picker
 * (`image_picker.ts`).
 *
 * @module
 */

import { realpath } from "node:fs/promises";
import { join, resolve } from "node:path";
import { readComposition } from "../composition/composition.ts";
import { parseFrameRate } from "../composition/frame_rate.ts";
import { serveProject } from "../render/serve.ts";
import { createRenderJobs } from "./render_job.ts";
import { checkOption, OPTIONS } from "../request/options.ts";
import { createPreviewVideoProxies } from "./video_proxies.ts";
import { type ProjectWatcher, watchProject } from "./watch.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import type { PreviewContext } from "./context.ts";
import { createEventHub, renderStatusReporter } from "./events.ts";
import { createPreviewApp } from "./routes.ts";

export { PreviewEntryError } from "./context.ts";
export { PREVIEW_PREFIX } from "./routes.ts";
export {
  checkStudioValues,
  type PreviewComposition,
  type PreviewCompositionEntry,
  type VariablesCheck,
} from "./compositions.ts";

/** The port `vid preview` listens on unless told otherwise. */
export const DEFAULT_PREVIEW_PORT = 4700;

/** The port is taken, or not a port. */
export class PreviewPortError extends VidError {
  override name = "PreviewPortError";
  /** The flag at fault. */
  override readonly field = "--port";
  /** The port asked for. */
  readonly port: number;
  constructor(port: number, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.port = port;
  }
}

/** Options of {@linkcode startPreview}. */
export interface PreviewOptions {
  /** Project directory or HTML file. @default "." */
  target?: string;
  /** Entry HTML file inside the project directory. @default "index.html" */
  composition?: string;
  /** Port on 127.0.0.1; 0 picks a free one. @default DEFAULT_PREVIEW_PORT (4700) */
  port?: number;
  /**
   * Frames per second of the stage and of renders, 1-240 (29.97 means 30000/1001).
   * @default the composition's data-fps, else 30
   */
  fps?: number;
  /** Folder the render dialog writes to. @default "<project>/renders" */
  rendersDir?: string;
  /** Quiet period after file edits before the stage reloads, in ms. @default 120 */
  debounceMs?: number;
  /** Parallel workers of a render, each a browser of its own. @default as `vid render` */
  workers?: number;
  /**
   * The host's deadline of one frame's seek and capture in a render, ms.
   * @default as `vid render`
   */
  frameTimeoutMs?: number;
  /** Told about file edits, renders and watcher failures (one line each). */
  onLog?: (message: string) => void;
}

/** A running preview server. */
export interface PreviewServer {
  /** The studio's address, e.g. `http://127.0.0.1:4700/`. */
  readonly url: string;
  readonly port: number;
  /** Absolute path of the project directory. */
  readonly projectDir: string;
  /** Absolute path of the folder renders go to. */
  readonly rendersDir: string;
  /** Stops a running render, the watcher and the server. Safe to call twice. */
  close(): Promise<void>;
}

/** Listens on 127.0.0.1:`port`; a taken port is a {@linkcode PreviewPortError}. */
function listen(
  port: number,
  handler: (request: Request) => Response | Promise<Response>,
): Deno.HttpServer<Deno.NetAddr> {
  try {
    return Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, handler);
  } catch (error) {
    if (error instanceof Deno.errors.AddrInUse) {
      throw new PreviewPortError(
        port,
        `--port ${port}: the port is already in use on 127.0.0.1 (another vid preview?); ` +
          `pass --port <n> for another port, or --port 0 for any free one`,
      );
    }
    throw error;
  }
}

/**
 * Starts the preview server for a composition on 127.0.0.1. The composition is read
 * first, so an invalid one fails here with its {@linkcode CompositionError}.
 *
 * @example
 * ```ts no_run
 * const preview = await startPreview({ target: "examples/hello", port: 0 });
 * console.log(`vid preview: ${preview.url}`);
 * // … later
 * await preview.close();
 * ```
 */
export async function startPreview(options: PreviewOptions = {}): Promise<PreviewServer> {
  // The rate is parsed here, once, with --fps's words for a bad one.
  const frameRate = options.fps === undefined
    ? undefined
    : parseFrameRate(checkOption(OPTIONS.fps, options.fps)!, "fps");
  const target = options.target ?? ".";
  const first = await readComposition(target, options.composition);
  const projectDir = await realpath(first.projectDir);
  const rendersDir = resolve(options.rendersDir ?? join(projectDir, "renders"));
  const log = options.onLog ?? (() => {});
  const hub = createEventHub();
  const jobs = createRenderJobs({
    target,
    composition: options.composition,
    projectDir,
    rendersDir,
    workers: options.workers,
    frameTimeoutMs: options.frameTimeoutMs,
    onStatus: renderStatusReporter(hub, log),
  });
  const ctx: PreviewContext = {
    target,
    ...(options.composition !== undefined && { composition: options.composition }),
    projectDir,
    defaultEntry: first.entry,
    rendersDir,
    epochMs: Math.floor(Date.now() / 1000) * 1000,
    ...(frameRate && { frameRate }),
    log,
    hub,
    jobs,
  };

  let watcher: ProjectWatcher | undefined;
  let ping: ReturnType<typeof setInterval> | undefined;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      watcher?.close();
      if (ping !== undefined) clearInterval(ping);
      await jobs.close();
      hub.close();
      await Promise.allSettled([ctx.server?.shutdown(), ctx.project?.close(), ctx.videos?.close()]);
    })();
    return closing;
  };

  try {
    ctx.project = await serveProject(projectDir);
    ctx.videos = createPreviewVideoProxies({ projectDir, project: ctx.project, onLog: log });
    const app = createPreviewApp(ctx);
    ctx.server = listen(options.port ?? DEFAULT_PREVIEW_PORT, (request) => app.fetch(request));
    watcher = watchProject(projectDir, (paths) => {
      hub.changes++;
      log(`changed: ${paths.join(", ")}`);
      hub.broadcast("change", { paths, changes: hub.changes });
    }, {
      debounceMs: options.debounceMs,
      ignoreDirs: [rendersDir],
      onError: (error) => log(`file watching failed: ${error.message}`),
    });
    // Proxies drop idle streams; a comment line every 15 s keeps the event stream open.
    ping = setInterval(() => hub.ping(), 15000);
  } catch (error) {
    await close();
    throw error;
  }
  const port = ctx.server.addr.port;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    projectDir,
    rendersDir,
    close,
  };
}
