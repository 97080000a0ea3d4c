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
 * @module
 */

import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { basename, extname, join, resolve } from "node:path";
import { type Composition, readComposition } from "../composition/composition.ts";
import { hyperframesFonts, runtimeFontFaces } from "../composition/fonts.ts";
import type { VariableDeclaration, Variables } from "../composition/declarations.ts";
import { StrictVariablesError, type VariableProblem } from "../composition/errors.ts";
import { checkOverrides, mergeVariables } from "../composition/variables.ts";
import { DEFAULT_FRAME_RATE } from "../render/render.ts";
import {
  frameCountOf,
  type FrameRate,
  frameRateValue,
  parseFrameRate,
} from "../composition/frame_rate.ts";
import { type ProjectServer, serveProject } from "../render/serve.ts";
import { injectRuntime, RUNTIME_LOADER_PATH, runtimeLoaderScript } from "./inject.ts";
import {
  createRenderJobs,
  type PreviewRenderStatus,
  RENDER_EXTENSIONS,
  RenderBusyError,
  type RenderJobs,
  renderRequestFrom,
  STUDIO_FORMATS,
} from "./render_job.ts";
import { QUALITIES } from "../render/encode.ts";
import { checkOption, MAX_SCALE, OPTIONS } from "../request/options.ts";
import { studioPage } from "./studio_page.ts";
import { PLAYER_PATH, playerScript } from "../player/serve.ts";
import { createPreviewVideoProxies, type PreviewVideoProxies } from "./video_proxies.ts";
import { type ProjectWatcher, watchProject } from "./watch.ts";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** The port `vid preview` listens on unless told otherwise. */
export const DEFAULT_PREVIEW_PORT = 4700;

/** Prefix of the studio's own routes; everything else is the project. */
export const PREVIEW_PREFIX = "/__preview/";

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

/** What `GET /__preview/composition` answers. */
export interface PreviewComposition {
  id: string;
  entry: string;
  width: number;
  height: number;
  duration: number;
  aspectRatio: string | null;
  fps: number;
  frames: number;
  declarations: VariableDeclaration[];
  dropped: Composition["dropped"];
  defaults: Variables;
  /** What the render dialog offers. */
  render: { formats: readonly string[]; qualities: readonly string[]; scales: readonly string[] };
}

/** One composition of the project, as `GET /__preview/compositions` lists it. */
export interface PreviewCompositionEntry {
  /** File name relative to the project, e.g. `index.html`. */
  entry: string;
  /** `data-composition-id`, or null when the file cannot be read right now. */
  id: string | null;
  /** Why it cannot be read (mid-edit), when it cannot. */
  error?: string;
}

/** What `POST /__preview/variables` answers. */
export interface VariablesCheck {
  /** The same problems (and messages) `vid render --variables` reports. */
  problems: VariableProblem[];
  /** The values that differ from the defaults: what `--variables` needs. */
  overrides: Variables;
  /** `overrides` as the JSON text for `--variables`. */
  variablesJson: string;
}

/**
 * Checks studio values with the CLI's checks and finds the overrides worth passing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const check = checkStudioValues(
 *   [{ id: "n", type: "number", label: "n", default: 1 }],
 *   { n: "x" },
 * );
 * assert.equal(check.problems[0].message, '"n" (number) expects a finite number, got "x"');
 * ```
 */
export function checkStudioValues(
  declarations: readonly VariableDeclaration[],
  values: Variables,
  projectDir?: string,
): VariablesCheck {
  const defaults = mergeVariables(declarations, {});
  const overrides: Variables = {};
  for (const [key, value] of Object.entries(values)) {
    if (!(key in defaults) || defaults[key] !== value) overrides[key] = value;
  }
  return {
    problems: checkOverrides(declarations, values, { projectDir }),
    overrides,
    variablesJson: JSON.stringify(overrides),
  };
}

function describeComposition(c: Composition, rate: FrameRate): PreviewComposition {
  return {
    id: c.id,
    entry: c.entry,
    width: c.width,
    height: c.height,
    duration: c.duration,
    aspectRatio: c.aspectRatio,
    fps: frameRateValue(rate),
    frames: frameCountOf(c.duration, rate),
    declarations: c.declarations,
    dropped: c.dropped,
    defaults: mergeVariables(c.declarations, {}),
    render: {
      formats: STUDIO_FORMATS,
      qualities: QUALITIES,
      // Every --scale the render option takes.
      scales: Array.from({ length: MAX_SCALE }, (_, i) => String(i + 1)),
    },
  };
}

/** A composition root in the markup: the attribute every composition root carries. */
const COMPOSITION_ROOT = /\sdata-composition-id\s*=/i;

function errorBody(error: unknown): { ok: false; error: Record<string, unknown> } {
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

const NO_STORE = { "cache-control": "no-store" };

function json(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...NO_STORE },
  });
}

/** Reads a JSON object body; undefined when it is not one. */
async function readObject(request: Request): Promise<Record<string, unknown> | undefined> {
  try {
    const body: unknown = await request.json();
    return isPlainObject(body) ? body : undefined;
  } catch {
    return undefined;
  }
}

/** The stage's `fps` query parameter (the rate's value, as the client got it), parsed once. */
function fpsParam(raw: string | null, fallback: FrameRate): FrameRate {
  try {
    return raw !== null ? parseFrameRate(raw) : fallback;
  } catch {
    return fallback;
  }
}

/** Host names the server answers to: loopback only, against DNS rebinding. */
function isLoopbackHost(host: string | null, port: number): boolean {
  return host !== null &&
    [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`].includes(host.toLowerCase());
}

/** The server-sent event streams of the studio pages, and the edit count they start from. */
interface EventHub {
  /** File edits seen so far; the `hello` event tells a new stream. */
  changes: number;
  /** Sends one event to every open stream (dropping the ones that went away). */
  broadcast(event: string, data: unknown): void;
  /** Opens a stream: `GET /__preview/events`. */
  respond(): Response;
  /** Sends the keep-alive comment line to every open stream. */
  ping(): void;
  /** Ends every open stream. */
  close(): void;
}

function createEventHub(): EventHub {
  const encoder = new TextEncoder();
  const streams = new Set<ReadableStreamDefaultController<Uint8Array>>();
  const send = (chunk: Uint8Array): void => {
    for (const stream of streams) {
      try {
        stream.enqueue(chunk);
      } catch {
        streams.delete(stream);
      }
    }
  };
  const hub: EventHub = {
    changes: 0,
    broadcast: (event, data) =>
      send(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)),
    respond: () => {
      let own: ReadableStreamDefaultController<Uint8Array> | undefined;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          own = controller;
          streams.add(controller);
          controller.enqueue(
            encoder.encode(`event: hello\ndata: ${JSON.stringify({ changes: hub.changes })}\n\n`),
          );
        },
        cancel() {
          if (own) streams.delete(own);
        },
      });
      return new Response(body, {
        headers: {
          "content-type": "text/event-stream",
          "connection": "keep-alive",
          ...NO_STORE,
        },
      });
    },
    ping: () => send(encoder.encode(": ping\n\n")),
    close: () => {
      for (const stream of streams) {
        try {
          stream.close();
        } catch {
          // the client went away first
        }
      }
      streams.clear();
    },
  };
  return hub;
}

/** What the request handlers of one preview server share. */
interface PreviewContext {
  readonly target: string;
  readonly options: PreviewOptions;
  readonly projectDir: string;
  readonly defaultEntry: string;
  readonly rendersDir: string;
  /** Date.now() at time 0 stays put while the server runs, so reloads look the same. */
  readonly epochMs: number;
  /** `options.fps`, parsed once when the server starts. */
  readonly frameRate?: FrameRate;
  readonly log: (message: string) => void;
  readonly hub: EventHub;
  readonly jobs: RenderJobs;
  project?: ProjectServer;
  videos?: PreviewVideoProxies;
  server?: Deno.HttpServer<Deno.NetAddr>;
}

/** --fps wins over the composition's data-fps, read afresh as the file changes. */
function rateOf(ctx: PreviewContext, c?: Composition): FrameRate {
  return ctx.frameRate ?? c?.fps ?? DEFAULT_FRAME_RATE;
}

/** Reads a composition of the project: the one the server started with by default. */
function readEntry(ctx: PreviewContext, entry = ctx.defaultEntry): Promise<Composition> {
  return entry === ctx.defaultEntry
    ? readComposition(ctx.target, ctx.options.composition)
    : readComposition(ctx.projectDir, entry);
}

/**
 * The entry a request names: the starting one, or an `.html` file at the project root
 * (only there, so no request reaches outside the project).
 */
function entryOf(ctx: PreviewContext, raw: string | null | undefined): string {
  if (raw === null || raw === undefined || raw === "" || raw === ctx.defaultEntry) {
    return ctx.defaultEntry;
  }
  if (raw !== basename(raw) || raw.startsWith(".") || !/\.html?$/i.test(raw)) {
    throw new PreviewEntryError(raw);
  }
  return raw;
}

async function listCompositions(ctx: PreviewContext): Promise<PreviewCompositionEntry[]> {
  const names = (await readdir(ctx.projectDir, { withFileTypes: true }))
    .filter((d) => d.isFile() && /^[^.].*\.html?$/i.test(d.name))
    .map((d) => d.name);
  const found: PreviewCompositionEntry[] = [];
  // The starting entry may sit in a subfolder (`--composition scenes/a.html`).
  const nested = names.includes(ctx.defaultEntry) ? [] : [ctx.defaultEntry];
  for (const entry of [...nested, ...names.sort()]) {
    const html = await readFile(join(ctx.projectDir, entry), "utf8").catch(() => "");
    if (entry !== ctx.defaultEntry && !COMPOSITION_ROOT.test(html)) continue;
    try {
      found.push({ entry, id: (await readEntry(ctx, entry)).id });
    } catch (error) {
      found.push({ entry, id: null, error: (error as Error).message });
    }
  }
  return found;
}

async function isComposition(ctx: PreviewContext, entry: string): Promise<boolean> {
  const html = await readFile(join(ctx.projectDir, entry), "utf8").catch(() => "");
  return COMPOSITION_ROOT.test(html);
}

/** The origin a request's page lives on (the host is checked to be loopback first). */
function originOf(request: Request): string {
  return `http://${request.headers.get("host")}`;
}

/** A render's status for the event stream, a few updates a second and every change of state. */
function renderStatusReporter(
  hub: EventHub,
  log: (message: string) => void,
): (status: PreviewRenderStatus) => void {
  let lastRenderEvent = 0;
  let lastRenderState = "";
  return (status) => {
    // Every frame reports progress; the studio needs a few updates a second.
    const now = performance.now();
    if (status.state === lastRenderState && now - lastRenderEvent < 100) return;
    lastRenderEvent = now;
    lastRenderState = status.state;
    hub.broadcast("render", status);
    if (status.state === "done") log(`rendered ${status.output}`);
    if (status.state === "failed") log(`render failed: ${status.error?.message}`);
  };
}

async function stageHtml(
  ctx: PreviewContext,
  request: Request,
  url: URL,
  entry: string,
): Promise<Response> {
  const html = await readFile(join(ctx.projectDir, entry), "utf8");
  let values: Variables = {};
  const raw = url.searchParams.get("vars");
  if (raw !== null) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (isPlainObject(parsed)) values = parsed;
    } catch {
      return new Response(`vars: not a JSON object of variable values`, { status: 400 });
    }
  }
  // A composition mid-edit may not parse; its page still loads with the values given.
  const current = await readEntry(ctx, entry).catch(() => undefined);
  const declarations = current?.declarations ?? [];
  const pageRate = fpsParam(url.searchParams.get("fps"), rateOf(ctx, current));
  const marks: Record<string, string> = { "vid-proxies": String(ctx.videos?.version ?? 0) };
  if (current) {
    // What `<vid-player>` reads through its page bridge (src/runtime/player_bridge.ts):
    // the composition as vid reads it, and a bad value in the words of --strict-variables.
    marks["vid-composition"] = JSON.stringify({
      id: current.id,
      width: current.width,
      height: current.height,
      duration: current.duration,
      fps: frameRateValue(pageRate),
      frames: frameCountOf(current.duration, pageRate),
    });
    const problems = checkOverrides(declarations, values, { projectDir: ctx.projectDir });
    if (problems.length > 0) marks["vid-problem"] = new StrictVariablesError(problems).message;
  }
  const page = injectRuntime(
    html,
    {
      variables: mergeVariables(declarations, values),
      seed: 1,
      epochMs: ctx.epochMs,
      fps: frameRateValue(pageRate),
      frameRate: pageRate,
      readyTimeoutMs: 30000,
      // The same frame-exact stand-ins a render uses, as far as they are prepared: the
      // studio reports the page's videos and reloads it when this set was behind.
      videoProxies: ctx.videos?.config(originOf(request)),
      // The faces a render embeds for HyperFrames' fonts, so the stage draws the same glyphs
      // (a composition mid-edit that cannot be read for them still loads, with the render's
      // warning to come).
      fonts: await runtimeFontFaces(
        (await hyperframesFonts(join(ctx.projectDir, entry), ctx.projectDir).catch(() => ({
          faces: [],
        }))).faces,
      ),
    },
    marks,
    RUNTIME_LOADER_PATH,
  );
  return new Response(page, {
    headers: { "content-type": "text/html; charset=utf-8", ...NO_STORE },
  });
}

async function proxy(project: ProjectServer, request: Request, url: URL): Promise<Response> {
  const headers = new Headers();
  const range = request.headers.get("range");
  if (range) headers.set("range", range);
  const answer = await fetch(project.url + url.pathname.slice(1) + url.search, {
    method: request.method === "HEAD" ? "HEAD" : "GET",
    headers,
  });
  const out = new Headers();
  for (const name of ["content-type", "content-length", "content-range", "accept-ranges"]) {
    const value = answer.headers.get(name);
    if (value !== null) out.set(name, value);
  }
  out.set("cache-control", "no-store");
  return new Response(answer.body, { status: answer.status, headers: out });
}

async function download(rendersDir: string, name: string): Promise<Response> {
  const file = join(rendersDir, name);
  const type = RENDER_EXTENSIONS[extname(name).slice(1)];
  // A render is a file in the folder, or a frame of a PNG sequence's folder (`clip/00000.png`).
  const parts = name.split("/");
  const safe = parts.length <= 2 && parts.every((p) => p !== "" && !p.startsWith(".")) &&
    (parts.length === 1 || extname(name) === ".png") && !name.includes("\\");
  if (!safe || type === undefined) {
    return json(errorBody(new Error(`not a render: ${name}`)), 404);
  }
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) return json(errorBody(new Error(`no such render: ${name}`)), 404);
  const data = await Deno.open(file, { read: true });
  return new Response(data.readable, {
    headers: {
      "content-type": type,
      "content-length": String(info.size),
      "content-disposition": `attachment; filename="${basename(name)}"`,
      ...NO_STORE,
    },
  });
}

/** `POST /__preview/media`: prepares the proxies of a stage page's videos. */
async function prepareMedia(ctx: PreviewContext, request: Request): Promise<Response> {
  const body = await readObject(request);
  const media = body?.media;
  if (
    !Array.isArray(media) ||
    !media.every((m) => isPlainObject(m) && typeof m.src === "string")
  ) {
    return json(errorBody(new Error('send {"media": __vid.media()}')), 400);
  }
  try {
    const version = await ctx.videos!.prepare(media as MediaDescriptor[], originOf(request));
    return json({ ok: true, version });
  } catch (error) {
    ctx.log(`video preparation failed: ${(error as Error).message}`);
    return json(errorBody(error), 422);
  }
}

/** `POST /__preview/render`: checks the values, then starts one render. */
async function startRender(ctx: PreviewContext, request: Request): Promise<Response> {
  const body = await readObject(request);
  if (!body || !isPlainObject(body.values)) {
    return json(errorBody(new Error('send {"values": {…}}')), 400);
  }
  try {
    const entry = entryOf(ctx, body.entry as string | undefined);
    const c = await readEntry(ctx, entry);
    const problems = checkOverrides(c.declarations, body.values, { projectDir: ctx.projectDir });
    if (problems.length > 0) {
      return json({
        ok: false,
        error: {
          name: "StrictVariablesError",
          message: `fix the marked values before rendering: ${
            problems.map((p) => p.message).join("; ")
          }`,
          field: problems[0].key,
          problems,
        },
      }, 400);
    }
    const status = ctx.jobs.start(renderRequestFrom(body, {
      values: body.values,
      fps: frameRateValue(rateOf(ctx, c)),
      compositionId: c.id,
      composition: entry === ctx.defaultEntry ? undefined : entry,
      frames: frameCountOf(c.duration, rateOf(ctx, c)),
      duration: c.duration,
    }));
    ctx.log(`rendering ${c.id} into ${ctx.rendersDir}`);
    return json({ ok: true, status }, 202);
  } catch (error) {
    const status = error instanceof RenderBusyError ? 409 : error instanceof PreviewEntryError ||
        (error instanceof VidError && error.field !== undefined)
      ? 400
      : 422;
    return json(errorBody(error), status);
  }
}

/** Extensions the studio's image picker offers. */
const IMAGE_EXTENSIONS = new Set([".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".avif"]);
/** Most images the picker lists. */
const MAX_PICKER_IMAGES = 200;

/**
 * The project's image files as project paths (`img/logo.png`), sorted, for the studio's
 * image picker: hidden folders, `node_modules` and `renders` left out, at most
 * {@linkcode MAX_PICKER_IMAGES}.
 */
async function projectImages(projectDir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, prefix: string, depth: number): Promise<void> => {
    if (depth > 6 || found.length >= MAX_PICKER_IMAGES) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name.startsWith(".") || entry.name === "node_modules") continue;
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory()) {
        if (path !== "renders") await walk(join(dir, entry.name), `${path}/`, depth + 1);
      } else if (entry.isFile() && IMAGE_EXTENSIONS.has(extname(entry.name).toLowerCase())) {
        if (found.length < MAX_PICKER_IMAGES) found.push(path);
      }
    }
  };
  await walk(projectDir, "", 0);
  return found;
}

/** The studio's JSON API: `route` is the path after {@linkcode PREVIEW_PREFIX}. */
async function api(ctx: PreviewContext, request: Request, route: string): Promise<Response> {
  if (request.method === "POST" && !request.headers.get("content-type")?.includes("json")) {
    // Also keeps other sites' plain form posts out: JSON needs a CORS preflight.
    return json(errorBody(new Error("send the body as application/json")), 415);
  }
  if (route === "runtime.js" && request.method === "GET") {
    return new Response(runtimeLoaderScript(), {
      headers: { "content-type": "text/javascript; charset=utf-8", ...NO_STORE },
    });
  }
  if (route === "compositions" && request.method === "GET") {
    return json({ ok: true, entry: ctx.defaultEntry, compositions: await listCompositions(ctx) });
  }
  if (route === "composition" && request.method === "GET") {
    try {
      const entry = entryOf(ctx, new URL(request.url).searchParams.get("entry"));
      const c = await readEntry(ctx, entry);
      return json({ ok: true, composition: describeComposition(c, rateOf(ctx, c)) });
    } catch (error) {
      return json(errorBody(error), error instanceof PreviewEntryError ? 400 : 422);
    }
  }
  if (route === "variables" && request.method === "POST") {
    const body = await readObject(request);
    if (!body || !isPlainObject(body.values)) {
      return json(errorBody(new Error('send {"values": {…}}')), 400);
    }
    try {
      const c = await readEntry(ctx, entryOf(ctx, body.entry as string | undefined));
      return json({
        ok: true,
        ...checkStudioValues(c.declarations, body.values, ctx.projectDir),
      });
    } catch (error) {
      return json(errorBody(error), 422);
    }
  }
  if (route === "images" && request.method === "GET") {
    return json({ ok: true, images: await projectImages(ctx.projectDir) });
  }
  if (route === "check" && request.method === "GET") {
    // The static and media parts of vid check, for the Check panel (no browser: the
    // stage is the browser part, and its errors show on the stage).
    try {
      const c = await readEntry(ctx, entryOf(ctx, new URL(request.url).searchParams.get("entry")));
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
  if (route === "events" && request.method === "GET") return ctx.hub.respond();
  if (route === "media" && request.method === "POST") return await prepareMedia(ctx, request);
  if (route === "render" && request.method === "GET") return json(ctx.jobs.status());
  if (route === "render/cancel" && request.method === "POST") {
    const cancelled = await ctx.jobs.cancel();
    return json({ ok: true, cancelled, status: ctx.jobs.status() });
  }
  if (route === "render" && request.method === "POST") return await startRender(ctx, request);
  if (route.startsWith("renders/") && request.method === "GET") {
    return await download(ctx.rendersDir, decodeURIComponent(route.slice("renders/".length)));
  }
  return json(
    errorBody(new Error(`no such route: ${request.method} ${PREVIEW_PREFIX}${route}`)),
    404,
  );
}

/** Every request: the studio, its API, a stage page, or one of the project's files. */
async function handle(ctx: PreviewContext, request: Request): Promise<Response> {
  const port = ctx.server?.addr.port ?? 0;
  if (!isLoopbackHost(request.headers.get("host"), port)) {
    return new Response("vid preview answers only on 127.0.0.1 and localhost", { status: 403 });
  }
  const url = new URL(request.url);
  try {
    if (url.pathname === "/" && request.method === "GET") {
      return new Response(studioPage(), {
        headers: { "content-type": "text/html; charset=utf-8", ...NO_STORE },
      });
    }
    if (url.pathname === PLAYER_PATH && request.method === "GET") return playerScript();
    if (url.pathname.startsWith(PREVIEW_PREFIX)) {
      return await api(ctx, request, url.pathname.slice(PREVIEW_PREFIX.length));
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      return new Response("method not allowed", { status: 405 });
    }
    const path = decodeURIComponent(url.pathname).slice(1);
    if (
      path === ctx.defaultEntry ||
      (/^[^/.][^/]*\.html?$/i.test(path) && await isComposition(ctx, path))
    ) {
      return await stageHtml(ctx, request, url, path);
    }
    return await proxy(ctx.project!, request, url);
  } catch (error) {
    return json(errorBody(error), 500);
  }
}

/** Listens on 127.0.0.1:`port`; a taken port is a {@linkcode PreviewPortError}. */
function listen(
  port: number,
  handler: (request: Request) => Promise<Response>,
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
    options,
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
    ctx.server = listen(options.port ?? DEFAULT_PREVIEW_PORT, (request) => handle(ctx, request));
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
