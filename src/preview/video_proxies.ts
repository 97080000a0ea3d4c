/**
 * Frame-exact `<video>` stand-ins for the preview stage, made by the renderer's own
 * {@linkcode prepareVideoProxies} (one intra-coded VP8 copy per source at its own frame
 * rate), so a paused studio frame shows the very source frame a render shows.
 *
 * No browser of its own: the stage's iframe reports the sources its runtime found
 * (`window.__vid.media()`, the list rendering's `discoverMedia` reads too) after it
 * loaded; the preview server prepares the missing proxies and bumps {@linkcode
 * PreviewVideoProxies.version}; the stage reloads once with the proxies in its runtime
 * config. Conversions are cached per source file (path, mtime and size), so an edit that
 * leaves the video alone never converts it again, and a changed video converts once more.
 * A remote `http(s)` source is downloaded once per preview session (as a render downloads
 * it once per render) and converted from that copy.
 *
 * @module
 */

import { mkdir, mkdtemp, realpath, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, sep } from "node:path";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import { prepareVideoProxies, type VideoProxy } from "../render/media.ts";
import { fetchRemoteMedia } from "../render/remote.ts";
import type { ProjectServer } from "../render/serve.ts";
import { requireFfmpeg, requireFfprobe } from "../render/system.ts";

/** One prepared source as the stage's runtime needs it, before its origin is known. */
interface Prepared {
  /** Path on the preview server, e.g. `/__vid/p0-video-0.webm`. */
  path: string;
  fps: number;
}

/** A conversion of one source file (or remote URL), cached by its identity. */
interface CacheEntry {
  /** `mtime:size` of a project file; the URL of a remote source. */
  identity: string;
  /** Folder of its files, removed when the source changed. */
  dir: Promise<string>;
  result: Promise<Prepared>;
}

/** Options of {@linkcode createPreviewVideoProxies}. */
export interface PreviewVideoProxyOptions {
  /** Absolute, real path of the project directory. */
  projectDir: string;
  /** The project server the preview server forwards to; proxies are mounted on it. */
  project: ProjectServer;
  /** Told about each conversion (one line). */
  onLog?: (message: string) => void;
}

/** The preview server's video proxies. */
export interface PreviewVideoProxies {
  /** Bumped whenever a source gets a new proxy; the stage reloads when it moved on. */
  readonly version: number;
  /**
   * The proxies for the runtime config, keyed by the sources as pages on `origin` name
   * them, with absolute URLs on `origin` (the runtime compares `el.src` with them).
   */
  config(origin: string): Record<string, VideoProxy>;
  /**
   * Brings the proxies of the `<video>` sources a stage page on `origin` reported up to
   * date (converting new or changed files) and returns {@linkcode version}. Sources that
   * are not project files or `http(s)` URLs, or project files that do not exist, are left
   * to the page (which then fails to load them as a render would).
   */
  prepare(media: readonly MediaDescriptor[], origin: string): Promise<number>;
  /** Removes every prepared file. */
  close(): Promise<void>;
}

/** The state of one proxy store: what it prepared and where. */
interface ProxyStore {
  readonly projectDir: string;
  readonly project: ProjectServer;
  readonly log: (message: string) => void;
  /** Source key (origin-relative path of a project file, or a remote URL) -> prepared. */
  readonly current: Map<string, Prepared>;
  /** Absolute file path or remote URL -> its conversion. */
  readonly cache: Map<string, CacheEntry>;
  version: number;
  count: number;
  root?: Promise<string>;
  tools?: Promise<{ ffmpeg: string; ffprobe: string }>;
}

/** The project file a same-origin source names, undefined when there is none. */
async function projectFile(projectDir: string, pathname: string): Promise<string | undefined> {
  let path: string;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  const file = await realpath(join(projectDir, path)).catch(() => undefined);
  if (!file || !file.startsWith(projectDir + sep)) return undefined;
  return (await stat(file).catch(() => undefined))?.isFile() ? file : undefined;
}

/** ffmpeg and ffprobe, looked up once per store (and again after a failed look-up). */
function storeTools(store: ProxyStore): Promise<{ ffmpeg: string; ffprobe: string }> {
  store.tools ??= Promise.all([requireFfmpeg(), requireFfprobe()]).then(([ffmpeg, ffprobe]) => ({
    ffmpeg,
    ffprobe,
  }));
  return store.tools.catch((error: Error) => {
    store.tools = undefined; // looked up again next time, e.g. after installing ffmpeg
    throw error;
  });
}

/** Converts one source in `dir` with the renderer's proxy maker, mounted as `p<n>-…`. */
async function convertSource(
  store: ProxyStore,
  n: number,
  src: string,
  label: string,
  dir: Promise<string>,
  input: (dir: string) => Promise<string>,
): Promise<Prepared> {
  const { ffmpeg, ffprobe } = await storeTools(store);
  const workDir = await dir;
  const source = await input(workDir);
  const started = performance.now();
  let path = "";
  const proxies = await prepareVideoProxies([{
    kind: "video",
    src,
    start: 0,
    mediaStart: 0,
    duration: null,
    volume: 1,
    muted: true,
    loop: false,
    playbackRate: 1,
  }], {
    ffmpeg,
    ffprobe,
    workDir,
    input: () => source,
    serve: (name, file) => {
      path = new URL(store.project.mount(`p${n}-${name}`, file)).pathname;
      return path;
    },
  });
  const fps = proxies[src].fps;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  store.log(`prepared video ${label} (${fps} fps) in ${seconds} s`);
  return { path, fps };
}

function convert(
  store: ProxyStore,
  src: string,
  identity: string,
  label: string,
  input: (dir: string) => Promise<string>,
): CacheEntry {
  const n = store.count++;
  store.root ??= mkdtemp(join(tmpdir(), "vid-preview-"));
  const dir = store.root.then(async (r) => {
    const d = join(r, `p${n}`);
    await mkdir(d, { recursive: true });
    return d;
  });
  // Awaited by the conversion below; this only keeps an early failure from going unhandled.
  dir.catch(() => undefined);
  const result = convertSource(store, n, src, label, dir, input);
  return { identity, dir, result };
}

/** Drops a superseded conversion once it settled. */
function discard(entry: CacheEntry): void {
  void entry.result.catch(() => undefined).then(async () => {
    await rm(await entry.dir, { recursive: true, force: true }).catch(() => undefined);
  });
}

async function entryFor(
  store: ProxyStore,
  src: string,
  origin: string,
): Promise<{ key: string; entry: CacheEntry } | undefined> {
  const { projectDir, cache } = store;
  let url: URL;
  try {
    url = new URL(src);
  } catch {
    return undefined;
  }
  if (url.origin === origin) {
    if (url.pathname.startsWith("/__preview/") || url.pathname.startsWith("/__vid/")) {
      return undefined;
    }
    const file = await projectFile(projectDir, url.pathname);
    const info = file ? await stat(file).catch(() => undefined) : undefined;
    if (!file || !info) return undefined;
    // Exactly as the page names it (the runtime looks its source up by that string).
    const key = src.slice(origin.length);
    const identity = `${info.mtimeMs}:${info.size}`;
    const known = cache.get(file);
    if (known?.identity === identity) return { key, entry: known };
    if (known) discard(known);
    const label = file.slice(projectDir.length + 1);
    const entry = convert(store, src, identity, label, () => Promise.resolve(file));
    cache.set(file, entry);
    return { key, entry };
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return undefined;
  const known = cache.get(url.href);
  if (known) return { key: src, entry: known };
  // Downloaded once, as a render downloads the URLs among its variables.
  const entry = convert(store, src, url.href, url.href, async (dir) => {
    const assets = await fetchRemoteMedia({ "<video src>": url.href }, dir);
    return assets[url.href].file;
  });
  cache.set(url.href, entry);
  return { key: src, entry };
}

/**
 * Creates the (empty) proxy store of a preview server.
 *
 * @example
 * ```ts no_run
 * import type { MediaDescriptor, RuntimeConfig } from "../runtime/page_runtime.ts";
 * import type { ProjectServer } from "../render/serve.ts";
 * import { injectRuntime } from "./inject.ts";
 *
 * async function page(
 *   project: ProjectServer,
 *   media: MediaDescriptor[],
 *   html: string,
 *   config: RuntimeConfig,
 * ): Promise<string> {
 *   const proxies = createPreviewVideoProxies({ projectDir: "/work/my-video", project });
 *   await proxies.prepare(media, "http://127.0.0.1:4700");
 *   return injectRuntime(html, { ...config, videoProxies: proxies.config("http://127.0.0.1:4700") });
 * }
 * ```
 */
export function createPreviewVideoProxies(options: PreviewVideoProxyOptions): PreviewVideoProxies {
  const store: ProxyStore = {
    projectDir: options.projectDir,
    project: options.project,
    log: options.onLog ?? (() => {}),
    current: new Map(),
    cache: new Map(),
    version: 0,
    count: 0,
  };
  const { current, cache } = store;
  return {
    get version() {
      return store.version;
    },
    config(origin: string): Record<string, VideoProxy> {
      const out: Record<string, VideoProxy> = {};
      for (const [key, prepared] of current) {
        const src = key.startsWith("/") ? origin + key : key;
        out[src] = { url: origin + prepared.path, fps: prepared.fps };
      }
      return out;
    },
    async prepare(media: readonly MediaDescriptor[], origin: string): Promise<number> {
      const sources = [...new Set(media.filter((m) => m.kind === "video").map((m) => m.src))];
      // One at a time, as a render converts them: the machine is shared with the stage.
      for (const src of sources) {
        const found = await entryFor(store, src, origin);
        if (!found) continue;
        const prepared = await found.entry.result.catch((error: Error) => {
          // A failed conversion is tried again after the next edit, not served forever.
          for (const [k, e] of cache) if (e === found.entry) cache.delete(k);
          discard(found.entry);
          throw error;
        });
        if (current.get(found.key) !== prepared) {
          current.set(found.key, prepared);
          store.version++;
        }
      }
      return store.version;
    },
    async close(): Promise<void> {
      const dir = await store.root?.catch(() => undefined);
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}
