/**
 * What every render of a composition sets up before capturing frames, shared by
 * `renderComposition` and `renderStill`: the composition with its merged variables, a
 * loopback server for the project, a capture browser, a temp folder, and frame-exact
 * stand-ins for the page's videos.
 *
 * @module
 */

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { type Composition, readComposition } from "../composition/composition.ts";
import type { DroppedDeclaration, Variables } from "../composition/declarations.ts";
import type { FrameRate } from "../composition/frame_rate.ts";
import {
  type EmbeddedFontFace,
  hyperframesFonts,
  runtimeFontFaces,
  unresolvedFontMessage,
} from "../composition/fonts.ts";
import { StrictVariablesError, type VariableProblem } from "../composition/errors.ts";
import { hyperframesTextRendering } from "../composition/text_rendering.ts";
import { checkOverrides, mergeVariables, resolveVariables } from "../composition/variables.ts";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import { type Browser, launchBrowser } from "./browser.ts";
import { workFolderPrefix } from "./work_folder.ts";
import { type BrowserPool, type CapturePreference, launchForCapture } from "./capture_mode.ts";
import { prepareEncoder, type RenderFormat } from "./encode.ts";
import type { CaptionTrack } from "../runtime/captions.ts";
import { listCaptionSources, loadCaptionTracks } from "./captions.ts";
import { checkMediaAudio, listMedia, type MediaProgress, prepareVideoProxies } from "./media.ts";
import { grantToProcessUser } from "./process_runner.ts";
import { failedFonts, fontFailureMessage } from "./fonts.ts";
import { fetchRemoteMedia } from "./remote.ts";
import { GUARDED_INPUT_ARGS, guardedMediaInputs } from "./guarded_media.ts";
import { guardLaunchFlags, type GuardProxy, startGuardProxy } from "../net/guard_proxy.ts";
import { type CompositionPage, openComposition, type PageSpec } from "./render_chunk.ts";
import { type ProjectServer, serveProject } from "./serve.ts";
import { requireFfmpeg, requireFfprobe } from "./system.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import {
  DEFAULT_FRAME_TIMEOUT_MS,
  FrameTimeoutError,
  PAGE_LOAD_TIMEOUT_MS,
  underDeadline,
} from "./watchdog.ts";

/** Where the composition and its variables come from. */
export interface CompositionSource {
  /** Project directory or HTML file. @default "." */
  target?: string;
  /** Entry HTML file inside the project directory. @default "index.html" */
  composition?: string;
  /** Inline JSON overrides (`--variables`). */
  variables?: string;
  /** JSON/JSONC overrides file (`--variables-file`). */
  variablesFile?: string;
  /** Overrides as an object (SDK), keyed by variable id; merged over the file and inline ones. */
  values?: Record<string, unknown>;
  /** Fail on undeclared keys or wrong types. */
  strictVariables?: boolean;
  /** Called once per variable problem in warn mode and per dropped declaration. */
  onWarning?: (message: string) => void;
}

/** A composition with the values its page will see. */
export interface PreparedComposition {
  composition: Composition;
  values: Variables;
  /** Variable problems (warnings; strict mode throws instead). */
  problems: VariableProblem[];
  /** Faces vid embeds for fonts HyperFrames embeds that the project does not declare. */
  fonts?: EmbeddedFontFace[];
  /**
   * A HyperFrames project's pages get HyperFrames' text rule, as its compiler gives them
   * (`src/composition/text_rendering.ts`).
   */
  hyperframesTextRendering?: boolean;
}

/**
 * Reads the composition, warns about dropped declarations and merges the overrides.
 *
 * @example
 * ```ts no_run
 * const { composition, values } = await prepareComposition({ target: "examples/hello" });
 * ```
 */
export async function prepareComposition(source: CompositionSource): Promise<PreparedComposition> {
  const composition = await readComposition(source.target ?? ".", source.composition);
  const fonts = await hyperframesFonts(composition.file, composition.projectDir);
  for (const font of fonts.unresolved) source.onWarning?.(unresolvedFontMessage(font));
  const resolved = await resolveVariables(composition.declarations, {
    variables: source.variables,
    variablesFile: source.variablesFile,
    strict: source.strictVariables,
    projectDir: composition.projectDir,
  });
  let { values, problems } = resolved;
  if (source.values) {
    const overrides = { ...resolved.overrides, ...source.values };
    problems = checkOverrides(composition.declarations, overrides, {
      projectDir: composition.projectDir,
    });
    if (source.strictVariables && problems.length > 0) throw new StrictVariablesError(problems);
    values = mergeVariables(composition.declarations, overrides);
  }
  for (const d of composition.dropped) source.onWarning?.(droppedMessage(d, values));
  for (const problem of problems) source.onWarning?.(problem.message);
  const textRendering = await hyperframesTextRendering(composition.file);
  return {
    composition,
    values,
    problems,
    fonts: fonts.faces,
    ...(textRendering && { hyperframesTextRendering: true }),
  };
}

/**
 * A dropped declaration's warning: which one, why, and what the page reads instead (the
 * declaration is gone, so `getVariables()` has no default for it).
 */
function droppedMessage(d: DroppedDeclaration, values: Variables): string {
  const head = `declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} dropped: ${d.reason}`;
  if (d.id === undefined) return head;
  const read = values[d.id] === undefined
    ? "undefined"
    : `the override ${JSON.stringify(values[d.id])}, unchecked`;
  return `${head}; the page reads getVariables().${d.id} as ${read}`;
}

/** A render session was used before its browser started or after it closed (a bug). */
export class RenderSessionStateError extends VidError {
  override name = "RenderSessionStateError";
  constructor(message: string) {
    super(message, { exitCode: EXIT_FAILED });
  }
}

/** The page asked for project files that do not exist. */
export class MissingAssetError extends VidError {
  override name = "MissingAssetError";
  /** The first missing path. */
  override readonly field: string;
  readonly paths: string[];
  constructor(file: string, paths: string[]) {
    super(
      `${file} uses ${paths.length === 1 ? "a file" : "files"} missing from the project: ` +
        `${paths.join(", ")} (check the path and letter case, and that no ignore rule drops it)`,
      { exitCode: EXIT_FAILED },
    );
    this.field = paths[0];
    this.paths = paths;
  }
}

/** Throws when the project server answered 404 to the page (favicon aside). */
function checkMissingAssets(server: ProjectServer, file: string): void {
  const paths = [...new Set(server.missing)].filter((p) => p !== "/favicon.ico");
  if (paths.length > 0) throw new MissingAssetError(file, paths);
}

/** Options of {@linkcode openRenderSession}. */
export interface SessionOptions {
  prepared: PreparedComposition;
  /** The render's exact rate, parsed once where the request came in. */
  frameRate: FrameRate;
  format: RenderFormat;
  /** @default "auto" */
  capture?: CapturePreference;
  /** @default 1 */
  seed?: number;
  /** @default the current time, whole seconds */
  epochMs?: number;
  /** Final frame size; the page is captured at the scale that fits it, then centred. */
  outputSize?: { width: number; height: number };
  /** Told when the capture path falls back. */
  onWarning?: (message: string) => void;
  /** Warm browsers to take the capture browser from (and give it back to) instead of launching one. */
  browsers?: BrowserPool;
  /** Told when the session starts preparing media, then as each video source advances. */
  onStage?: (stage: "preparing media", media?: MediaProgress) => void;
  /**
   * A running browser to render in, kept open by {@linkcode RenderSession.close} (one warm
   * browser shared by the renders of a batch). Not used with `blockPrivateNetwork`, whose
   * browser is launched through the guard proxy. @default a browser launched for the session
   */
  browser?: Browser;
  /**
   * Keep the render off private networks (server-side renders): every request of the
   * page (navigation, sub-resources, iframes, fetch/XHR, WebSocket, each redirect hop)
   * goes through a guard proxy that lets through only public addresses and this render's
   * own project server; remote media and media ffmpeg reads are held to the same rule.
   * @default false
   */
  blockPrivateNetwork?: boolean;
  /**
   * The session serves `vid check`, which reports missing files and failing fonts itself
   * and goes on to look at the frames: it opens even when the page asked for files the
   * project lacks, and does not warn about fonts.
   * @default false: throw {@linkcode MissingAssetError}, warn about fonts
   */
  checking?: boolean;
  /**
   * The host's deadline of one frame's seek and capture, milliseconds (see watchdog.ts);
   * the page's media listing gets it too. @default 30000
   */
  frameTimeoutMs?: number;
  /**
   * Ends the set-up at once (a page load or media listing in flight included): whatever
   * was started is closed and the call rejects with the signal's reason.
   */
  signal?: AbortSignal;
}

/** A ready-to-capture render environment. Close it when done. */
export interface RenderSession {
  readonly spec: PageSpec;
  readonly server: ProjectServer;
  /** Temp folder, removed by {@linkcode RenderSession.close}. */
  readonly workDir: string;
  readonly ffmpeg: string;
  /** Path of ffprobe; only looked up when the page has media. */
  readonly ffprobe: string;
  /** The page's `<video>` and `<audio>` elements. */
  readonly media: MediaDescriptor[];
  /** The page's `data-captions` files, parsed (a bad one failed the session). */
  readonly captions: CaptionTrack[];
  /** What ffmpeg reads for a page URL (the local copy of a remote one). */
  input(src: string): string;
  /** ffmpeg options before each media input (the guard's protocol whitelist). */
  readonly inputArgs: readonly string[];
  /** Throws {@linkcode MissingAssetError} if the page asked for files the project lacks. */
  checkMissingAssets(): void;
  /** The current browser (replaced after a crash). */
  readonly browser: Browser;
  /**
   * The page media discovery loaded, once, when it can render as it is (no `<video>` needed
   * a stand-in): loaded, never captured, so it renders a chunk exactly as a fresh page. The
   * taker closes it; undefined afterwards or when there is none.
   */
  takePage(): CompositionPage | undefined;
  /** Relaunches a crashed browser once, however many workers saw it crash. */
  replaceBrowser(crashed: Browser): Promise<Browser>;
  /**
   * Launches one more capture browser of the session's mode, scale and network guard, for
   * one more worker: a browser's compositor takes one BeginFrame at a time, so windows of
   * one browser capture in turn while windows of separate browsers capture in parallel.
   * Closed with the session.
   */
  addBrowser(): Promise<Browser>;
  /**
   * Closes (or gives back to the pool) every browser of the session, early: the join needs
   * none, so the browsers go down while ffmpeg joins. Never throws; safe to call twice.
   */
  closeBrowsers(): Promise<void>;
  /** Closes the browsers and server and removes the temp folder; never throws. */
  close(): Promise<void>;
  /** {@linkcode RenderSession.close}, for `await using`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** The smallest device scale factor Chromium captures at; below it ffmpeg scales down. */
const MIN_CAPTURE_SCALE = 0.5;

/**
 * Readiness gate timeout per frame, inside the page: `VID_READY_TIMEOUT_MS` when it is a
 * positive number (tests use a short one), else 30 s; either way shorter than the host's
 * frame deadline, so a page that holds a `__vid.delay()` handle (but still answers) is
 * reported by the runtime, naming what it waited for, before the host calls it hung.
 */
function readyTimeoutMs(frameTimeoutMs: number): number {
  const ms = Number(process.env.VID_READY_TIMEOUT_MS);
  const wanted = Number.isFinite(ms) && ms > 0 ? ms : 30000;
  return Math.min(wanted, Math.max(frameTimeoutMs * 0.8, frameTimeoutMs - 5000));
}

/**
 * The capture browsers of one session: the first one (shared, from the pool, or launched at
 * once, see {@linkcode SessionBrowsers.start}), one more per extra worker, and the ones
 * relaunched after a crash; all closed (or given back to the pool) together.
 */
interface SessionBrowsers {
  /** The first browser; throws before {@linkcode SessionBrowsers.start} resolved. */
  readonly main: Browser;
  /**
   * Resolves with the first browser. A guarded render's browser is launched here with the
   * guard's `networkFlags` (they need the project server's address); any other was already
   * launching since the session began.
   */
  start(networkFlags?: string[]): Promise<Browser>;
  add(): Promise<Browser>;
  replace(crashed: Browser): Promise<Browser>;
  /** Closes every browser; safe to call twice, never throws. */
  close(): Promise<void>;
}

function sessionBrowsers(
  options: SessionOptions,
  scale: number,
  beforeClose: () => Promise<void>,
): SessionBrowsers {
  const preference = options.capture ?? "auto";
  const onFallback = (reason: string) =>
    options.onWarning?.(`BeginFrame capture unavailable (${reason}); using screenshots`);
  let main: Browser | undefined;
  let networkFlags: string[] = [];
  /** Browsers launched for more workers and relaunched after crashes. */
  const extra = new Set<Browser>();
  const relaunches = new WeakMap<Browser, Promise<Browser>>();
  let closed: Promise<void> | undefined;
  const pooled = options.browsers && !options.blockPrivateNetwork ? options.browsers : undefined;
  // Started at once, while the project server starts and ffmpeg is looked up.
  const launching = options.blockPrivateNetwork
    ? undefined
    : options.browser
    ? Promise.resolve(options.browser)
    : pooled
    ? pooled.acquire(preference, onFallback, scale)
    : launchForCapture(preference, onFallback, scale);
  launching?.then((launched) => main = launched, () => undefined);
  return {
    get main(): Browser {
      if (!main) throw new RenderSessionStateError("the session's browser is not started");
      return main;
    },
    async start(flags: string[] = []): Promise<Browser> {
      networkFlags = flags;
      main = launching
        ? await launching
        : await launchForCapture(preference, onFallback, scale, networkFlags);
      return main;
    },
    async add(): Promise<Browser> {
      if (closed || !main) {
        throw new RenderSessionStateError("the render session's browsers are closed");
      }
      // The mode is known from the first browser: no second BeginFrame probe.
      const added = await launchBrowser({ mode: main.mode, scale, networkFlags });
      extra.add(added);
      if (closed) await added.close();
      return added;
    },
    async replace(crashed: Browser): Promise<Browser> {
      let next = relaunches.get(crashed);
      if (!next) {
        next = crashed.close().then(() =>
          launchBrowser({ mode: crashed.mode, scale, networkFlags })
        );
        relaunches.set(crashed, next);
        const wasMain = crashed === main;
        extra.delete(crashed);
        next.then((relaunched) => {
          if (wasMain) main = relaunched;
          else extra.add(relaunched);
          // Launched after the session closed its browsers: nobody else will close it.
          if (closed) void relaunched.close();
        }, () => undefined);
      }
      return await next;
    },
    close(): Promise<void> {
      closed ??= (async () => {
        await beforeClose().catch(() => undefined);
        // A launch still under way is closed once it is up.
        const first = main ?? await launching?.catch(() => undefined);
        const done = first === options.browser
          ? undefined
          : first && pooled
          ? pooled.release(first)
          : first?.close();
        await Promise.allSettled([done, ...[...extra].map((b) => b.close())]);
      })();
      return closed;
    },
  };
}

/** The scale frames are captured at: sharp at the output size, never stretched. */
function captureScale(composition: Composition, size?: { width: number; height: number }): number {
  // Chromium clamps a device scale factor below 0.5 to 0.5 (a 1920x1080 page asked for at
  // 1/6 comes back 960x540), so smaller outputs are captured at 0.5 and ffmpeg scales them.
  return size
    ? Math.max(
      MIN_CAPTURE_SCALE,
      Math.min(size.width / composition.width, size.height / composition.height),
    )
    : 1;
}

/**
 * What every page of a session loads and how it renders: the composition's URL on the
 * project server, its size, the frame rate, variables, seed and clock, and the deadlines.
 */
function pageSpec(
  options: SessionOptions,
  serverUrl: string,
  scale: number,
  frameTimeoutMs: number,
): PageSpec {
  const { composition, values } = options.prepared;
  const size = options.outputSize;
  return {
    url: serverUrl + encodeURI(composition.entry),
    width: composition.width,
    height: composition.height,
    frameRate: options.frameRate,
    format: options.format,
    variables: values,
    seed: options.seed ?? 1,
    epochMs: options.epochMs ?? Math.floor(Date.now() / 1000) * 1000,
    readyTimeoutMs: readyTimeoutMs(frameTimeoutMs),
    frameTimeoutMs,
    ...(size ? { outputSize: size, scale } : {}),
    ...(options.checking && { skipMissingSubCompositions: true }),
    ...(options.prepared.hyperframesTextRendering && { hyperframesTextRendering: true }),
  };
}

/**
 * What the first page load shows is wrong before any frame: project files it asked for that
 * do not exist (an error), and fonts that failed to load (a warning: the browser falls back
 * without a word).
 */
async function checkLoadedPage(
  options: SessionOptions,
  server: ProjectServer,
  page: CompositionPage,
): Promise<void> {
  checkMissingAssets(server, options.prepared.composition.file);
  for (const failure of await failedFonts(page.page).catch(() => [])) {
    options.onWarning?.(fontFailureMessage(failure));
  }
}

/**
 * Starts the server and browser for a prepared composition and readies its media.
 *
 * @example
 * ```ts no_run
 * const prepared = await prepareComposition({ target: "examples/hello" });
 * await using session = await openRenderSession({
 *   prepared,
 *   frameRate: { num: 30, den: 1 },
 *   format: "mp4",
 * });
 * // render chunks with session.browser and session.spec; closed when the scope ends
 * ```
 */
export async function openRenderSession(options: SessionOptions): Promise<RenderSession> {
  const { composition, values } = options.prepared;
  const size = options.outputSize;
  const scale = captureScale(composition, size);
  let server: ProjectServer | undefined;
  let discovery: CompositionPage | undefined;
  let proxy: GuardProxy | undefined;
  const browsers = sessionBrowsers(options, scale, async () => {
    await discovery?.close();
    discovery = undefined;
  });
  let workDir: string | undefined;
  const close = async (): Promise<void> => {
    // Each step runs even when an earlier one fails, so nothing is left behind.
    await Promise.allSettled([browsers.close(), server?.close(), proxy?.close()]);
    if (workDir) await rm(workDir, { recursive: true, force: true });
  };
  const signal = options.signal;
  const frameTimeoutMs = options.frameTimeoutMs ?? DEFAULT_FRAME_TIMEOUT_MS;
  try {
    // Started together, and each recorded as it is made: all three settle before a failure
    // of one (ffmpeg missing) goes on, so close() finds the temp folder and the server that
    // the others made meanwhile.
    const started = await Promise.allSettled([
      requireFfmpeg().then(async (path) => {
        await prepareEncoder(path);
        return path;
      }),
      // Handed to the process policy's user (vid server's --render-user), whose ffmpeg
      // writes its chunks, proxies and soundtrack here.
      mkdtemp(join(tmpdir(), workFolderPrefix())).then(async (dir) => {
        workDir = dir;
        await grantToProcessUser(dir);
      }),
      serveProject(composition.projectDir).then((started) => server = started),
    ]);
    const failed = started.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
    const ffmpeg = (started[0] as PromiseFulfilledResult<string>).value;
    const work = workDir!;
    const projectServer = server!;
    signal?.throwIfAborted();
    let networkFlags: string[] = [];
    if (options.blockPrivateNetwork) {
      const origin = new URL(projectServer.url).host;
      proxy = await startGuardProxy({ allowHosts: [origin] });
      networkFlags = guardLaunchFlags(proxy.url, [origin]);
    }
    const browser = await browsers.start(networkFlags);
    const spec = pageSpec(options, projectServer.url, scale, frameTimeoutMs);
    spec.fonts = await runtimeFontFaces(options.prepared.fonts ?? []);
    options.onStage?.("preparing media");
    spec.remote = await fetchRemoteMedia(values, work, {
      blockPrivateNetwork: options.blockPrivateNetwork,
    });
    const remote = spec.remote;
    // The page media are discovered on the page that renders the first frames when no
    // `<video>` needs a stand-in (the usual case): one page load fewer per render.
    signal?.throwIfAborted();
    discovery = await openComposition(browser, { ...spec, videoProxies: undefined }, signal);
    const listing = discovery;
    // The page's scripts run from here on: a page that hangs now answers no listing.
    const listingMs = Math.max(PAGE_LOAD_TIMEOUT_MS, frameTimeoutMs);
    const listed = <T>(work: Promise<T>): Promise<T> =>
      underDeadline(work, {
        timeoutMs: listingMs,
        signal,
        expired: () => new FrameTimeoutError(null, listingMs),
        stop: () => listing.stop(),
      });
    const media = await listed(listMedia(listing));
    const captions = await loadCaptionTracks(
      await listed(listCaptionSources(listing)),
      (url) => projectServer.localFile(url),
    );
    if (!options.checking) await checkLoadedPage(options, projectServer, discovery);
    // ffmpeg reads media outside the browser, so the guard applies to its inputs too: a
    // guarded render hands ffmpeg checked local files only.
    const ffmpegInputs = options.blockPrivateNetwork
      ? await guardedMediaInputs(
        media,
        { url: projectServer.url, dir: composition.projectDir },
        work,
        remote,
      )
      : {};
    const inputArgs = options.blockPrivateNetwork ? GUARDED_INPUT_ARGS : [];
    // ffmpeg reads project media straight from disk: over the project server it crawled
    // (20-30 s for a clip ffmpeg converts from the file in under 3).
    const input = (src: string): string =>
      ffmpegInputs[src] ?? remote[src]?.file ?? projectServer.localFile(src) ?? src;
    const ffprobe = media.length > 0 ? await requireFfprobe() : "ffprobe";
    if (media.length > 0) {
      await checkMediaAudio(media, {
        ffprobe,
        timelineEnd: composition.duration,
        input,
        inputArgs,
        signal,
      });
    }
    spec.videoProxies = await prepareVideoProxies(media, {
      ffmpeg,
      ffprobe,
      workDir: work,
      input,
      label: (src) =>
        src.startsWith(projectServer.url)
          ? decodeURIComponent(new URL(src).pathname.slice(1))
          : src,
      inputArgs,
      serve: (name, file) => projectServer.mount(name, file),
      onProgress: (progress) => options.onStage?.("preparing media", progress),
      signal,
    });
    if (Object.keys(spec.videoProxies).length > 0) {
      await discovery.close();
      discovery = undefined;
    }
    return {
      spec,
      server: projectServer,
      workDir: work,
      ffmpeg,
      ffprobe,
      media,
      captions,
      input,
      inputArgs,
      checkMissingAssets: () => checkMissingAssets(projectServer, composition.file),
      get browser(): Browser {
        return browsers.main;
      },
      takePage(): CompositionPage | undefined {
        const page = discovery;
        discovery = undefined;
        return page;
      },
      replaceBrowser: (crashed) => browsers.replace(crashed),
      addBrowser: () => browsers.add(),
      closeBrowsers: () => browsers.close(),
      close,
      [Symbol.asyncDispose]: close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
