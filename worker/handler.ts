/**
 * The Lambda worker of `vid lambda`: one function serving the three tasks of the state
 * machine (`src/lambda/state_machine.ts`), dispatched on the payload's `task`.
 *
 * - `plan`: reads the composition, returns {@linkcode planChunks} for
 *   `round(duration x fps)` frames and writes `renders/<renderId>/progress.json`.
 * - `renderChunk`: renders one chunk with the shared chunk renderer (`renderChunk` of
 *   `src/render/render_chunk.ts`, the same code as `vid render`), uploads it to
 *   `<VID_CHUNK_PREFIX><renderId>/chunk-<index>.<format>` and writes
 *   `renders/<renderId>/chunks/<index>.json` (one object per chunk, so parallel chunks
 *   never race on one progress object).
 *   Chunk 0 also returns the composition's media as its page found them
 *   (`ChunkResult.media`).
 * - `assemble`: downloads the chunks in order, joins them with the concat demuxer
 *   (`-c copy`), mixes the soundtrack once for the whole timeline from chunk 0's media
 *   (site files read from the site's local copy; no browser) and muxes it, uploads
 *   the result to `outputKey`, writes the final `progress.json` and sends the optional
 *   signed webhook.
 *
 * How the page is loaded: the site lives in the bucket under `sites/<siteId>/<path>`, one
 * object per project file, and is private, so Chromium cannot load `serveUrl` without
 * presigning every sub-resource. The worker instead downloads the site to
 * `<tmpdir>/vid-sites/<siteId>` and serves it on loopback with `serveProject`, exactly as
 * a local render does. Site ids are content addresses, so the copy is kept for the warm
 * container's later invocations. `serveUrl` is not fetched.
 *
 * Binaries: `worker/lambda_runtime.ts` chooses them once per process, before the first
 * render: the `VID_*` variables win, then (on AWS, `AWS_LAMBDA_FUNCTION_NAME` set) the
 * Chromium, ffmpeg and ffprobe packaged beside the bundle, then the system's, as locally.
 *
 * Progress objects (JSON) in the bucket:
 *
 * ```
 * renders/<renderId>/progress.json      { renderId, status: "rendering" | "done", framesTotal,
 *                                         chunksTotal, updatedAt, outputKey?, outputUrl?, bytes? }
 * renders/<renderId>/chunks/<index>.json { index, from, to, frames, key, bytes, renderedAt,
 *                                         capture: "beginframe" | "screenshot" }
 * ```
 *
 * Network guard: the pages of a render (and its remote media, the media ffmpeg reads and
 * the webhook) reach public addresses only, like `vid server`'s renders, since the
 * function runs inside the operator's VPC. `VID_ALLOW_PRIVATE_URLS=1` on the function
 * lifts it, as `vid server --allow-private-urls` does.
 *
 * Failures are thrown (the message names the chunk); the state machine's catch records
 * them. Node built-ins and web standards only: this file is bundled for Node 22.
 *
 * @module
 */

import { mkdir, mkdtemp, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve, sep } from "node:path";
import process from "node:process";
import { frameCount } from "../src/render/render.ts";
import { frameRateValue } from "../src/composition/frame_rate.ts";
import { configFrameRate } from "../src/request/execution_input.ts";
import { OPTIONS } from "../src/request/options.ts";
import { scaledSize } from "../src/request/rules.ts";
import { renderChunk } from "../src/render/render_chunk.ts";
import type { OutputFormat, Quality } from "../src/render/encode.ts";
import { assembleVideo } from "../src/render/assemble.ts";
import {
  openRenderSession,
  prepareComposition,
  type RenderSession,
} from "../src/render/session.ts";
import {
  BlockedMediaError,
  GUARDED_INPUT_ARGS,
  refusePlaylist,
} from "../src/render/guarded_media.ts";
import { downloadRemote, fetchRemoteMedia } from "../src/render/remote.ts";
import { requireFfmpeg, requireFfprobe } from "../src/render/system.ts";
import { pool } from "../src/util/async.ts";
import { CONTENT_TYPES } from "../src/util/mime.ts";
import { deliverWebhook } from "../src/webhooks/webhooks.ts";
import type { ExecutionInput } from "../src/lambda/config.ts";
import { RENDER_ID_METADATA } from "../src/batch/manifest.ts";
import {
  type AssemblePayload,
  type ChunkMedia,
  type ChunkResult,
  planChunks,
  type PlanPayload,
  type PlanResult,
  type RenderChunkPayload,
  type TaskPayload,
} from "../src/lambda/state_machine.ts";
import { prepareRuntime } from "./lambda_runtime.ts";
import { downloadFile, listKeys, objectUrl, putJson, uploadFile } from "./s3.ts";

/** Result of the `assemble` task. */
export interface AssembleResult {
  bucketName: string;
  outputKey: string;
  /** Where the video can be fetched (the endpoint's path-style URL, or the AWS one). */
  outputUrl: string;
  /** Size of the output object. */
  bytes: number;
  /** Frames of the video. */
  frames: number;
  /** Whether a soundtrack was mixed in. */
  audio: boolean;
}

/** What the worker returns for each task. */
export type TaskResult = PlanResult | ChunkResult | AssembleResult;

/** Lambda entry point (`index.handler` in the bundle). */
export async function handler(event: PlanPayload): Promise<PlanResult>;
export async function handler(event: RenderChunkPayload): Promise<ChunkResult>;
export async function handler(event: AssemblePayload): Promise<AssembleResult>;
export async function handler(event: TaskPayload): Promise<TaskResult>;
export async function handler(event: TaskPayload): Promise<TaskResult> {
  switch (event?.task) {
    case "plan":
      return await plan(event);
    case "renderChunk":
      await prepareRuntime();
      return await renderOneChunk(event);
    case "assemble":
      await prepareRuntime();
      return await assemble(event);
    default:
      throw new TypeError(
        `unknown task ${JSON.stringify((event as { task?: unknown })?.task)}; ` +
          `expected "plan", "renderChunk" or "assemble"`,
      );
  }
}

// ---------------------------------------------------------------------------------------
// Tasks

async function plan(event: PlanPayload): Promise<PlanResult> {
  const { input } = event;
  const site = await siteDir(input);
  const { composition } = await prepareComposition({
    target: site,
    composition: input.composition,
    values: input.config.variables,
  });
  const rate = configFrameRate(input.config);
  const totalFrames = frameCount(composition.duration, rate);
  const result = planChunks(input, totalFrames, rate);
  await putJson(input.bucketName, progressKey(input), {
    renderId: input.renderId,
    status: "rendering",
    framesTotal: totalFrames,
    chunksTotal: result.chunks.length,
    updatedAt: new Date().toISOString(),
  });
  return result;
}

async function renderOneChunk(event: RenderChunkPayload): Promise<ChunkResult> {
  const { input, chunk } = event;
  const format = formatOf(input);
  const key = `${chunkPrefix()}${input.renderId}/chunk-${chunk.index}.${format}`;
  let bytes = 0;
  let capture = "";
  let media: ChunkMedia[] | undefined;
  try {
    const session = await openSession(input, event.executionStartTime);
    try {
      capture = session.browser.mode;
      if (chunk.index === 0) media = portableMedia(session);
      const output = join(session.workDir, `chunk-${chunk.index}.${format}`);
      await renderChunk(session.browser, session.spec, {
        chunk,
        output,
        quality: qualityOf(input),
        ffmpeg: session.ffmpeg,
      });
      session.checkMissingAssets();
      bytes = (await stat(output)).size;
      await uploadFile(input.bucketName, key, output, CONTENT_TYPES[format]);
    } finally {
      await session.close();
    }
  } catch (error) {
    throw chunkError(`chunk ${chunk.index} (frames ${chunk.from}-${chunk.to})`, error);
  }
  await putJson(input.bucketName, `renders/${input.renderId}/chunks/${chunk.index}.json`, {
    index: chunk.index,
    from: chunk.from,
    to: chunk.to,
    frames: chunk.frames,
    key,
    bytes,
    renderedAt: new Date().toISOString(),
    capture,
  });
  return media ? { index: chunk.index, key, media } : { index: chunk.index, key };
}

async function assemble(event: AssemblePayload): Promise<AssembleResult> {
  const { input } = event;
  const format = formatOf(input);
  const rate = configFrameRate(input.config);
  const fps = frameRateValue(rate);
  const chunks = [...event.chunks].sort((a, b) => a.index - b.index);
  chunks.forEach((c, i) => {
    if (c.index !== i) throw new Error(`assemble: chunk ${i} is missing from the results`);
  });
  const work = await mkdtemp(join(tmpdir(), "vid-assemble-"));
  try {
    const files = await Promise.all(chunks.map(async (c) => {
      const file = join(work, `chunk-${c.index}.${format}`);
      try {
        await downloadFile(input.bucketName, c.key, file);
      } catch (error) {
        throw chunkError(`chunk ${c.index} (s3://${input.bucketName}/${c.key})`, error);
      }
      return file;
    }));
    // The same plan as the plan task made (one planner), for exact timestamps at the joins.
    const planned = planChunks(input, event.totalFrames, rate).chunks;
    if (planned.length !== chunks.length) {
      throw new Error(
        `assemble: ${chunks.length} chunk results for a plan of ${planned.length} chunks`,
      );
    }
    // The soundtrack is mixed once, for the whole timeline, from the media chunk 0's page
    // found: no browser here.
    const media = chunks.find((c) => c.media)?.media;
    if (!media) {
      throw new Error(
        "assemble: no chunk result carries the composition's media (chunk 0 should); " +
          "were the chunks rendered by an older worker? Render again",
      );
    }
    const final = join(work, `final.${format}`);
    const { audio } = await assembleVideo({
      ffmpeg: await requireFfmpeg(),
      ffprobe: await requireFfprobe(),
      chunkFiles: files,
      timing: { fps, frames: planned.map((c) => c.frames) },
      format,
      media,
      duration: event.totalFrames / fps,
      loudness: input.config.loudness,
      input: media.length > 0 ? await mediaInputs(input, media, work) : undefined,
      inputArgs: blockPrivateNetwork() ? GUARDED_INPUT_ARGS : [],
      workDir: work,
      output: final,
    });
    const bytes = (await stat(final)).size;
    // The render id names the inputs (a batch row's is derived from them): a batch rerun
    // whose execution history is gone finds the output rendered from the same row by it.
    await uploadFile(input.bucketName, input.outputKey, final, CONTENT_TYPES[format], {
      [RENDER_ID_METADATA]: input.renderId,
    });
    const outputUrl = objectUrl(input.bucketName, input.outputKey);
    await putJson(input.bucketName, progressKey(input), {
      renderId: input.renderId,
      status: "done",
      framesTotal: event.totalFrames,
      chunksTotal: chunks.length,
      outputKey: input.outputKey,
      outputUrl,
      bytes,
      updatedAt: new Date().toISOString(),
    });
    const webhook = input.config.webhook;
    if (webhook) {
      const delivery = await deliverWebhook({
        url: webhook.url,
        secret: webhook.secret,
        attempts: 3,
        target: { allowPrivate: !blockPrivateNetwork() },
        payload: {
          render_id: input.renderId,
          status: "completed",
          callback_id: null,
          video_url: outputUrl,
          error: null,
        },
      });
      if (!delivery.delivered) {
        console.warn(
          `webhook ${webhook.url} not delivered after ${delivery.attempts} attempts: ` +
            delivery.error,
        );
      }
    }
    return {
      bucketName: input.bucketName,
      outputKey: input.outputKey,
      outputUrl,
      bytes,
      frames: event.totalFrames,
      audio,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------
// Helpers

function formatOf(input: ExecutionInput): OutputFormat {
  return input.config.format ?? OPTIONS.videoFormat.default!;
}

function qualityOf(input: ExecutionInput): Quality {
  return input.config.quality ?? OPTIONS.quality.default!;
}

function chunkPrefix(): string {
  return process.env.VID_CHUNK_PREFIX ?? "chunks/";
}

function progressKey(input: ExecutionInput): string {
  return `renders/${input.renderId}/progress.json`;
}

/** An error whose message names `what`, keeping the original error's name as its type. */
function chunkError(what: string, error: unknown): Error {
  const cause = error instanceof Error ? error : new Error(String(error));
  const wrapped = new Error(`${what} failed: ${cause.message}`, { cause });
  wrapped.name = cause.name;
  return wrapped;
}

/** The session's media with site sources as paths inside the site (see `ChunkMedia`). */
function portableMedia(session: RenderSession): ChunkMedia[] {
  const base = session.server.url;
  return session.media.map((item) => {
    if (!item.src.startsWith(base)) return { ...item, site: false };
    const path = decodeURIComponent(new URL(item.src).pathname.slice(1));
    return { ...item, src: path, site: true };
  });
}

/**
 * Where ffmpeg reads each media source in `assemble`: site files from the site's local copy
 * (never outside it), remote URLs from the copies `fetchRemoteMedia` makes, as a render
 * session would.
 */
async function mediaInputs(
  input: ExecutionInput,
  media: ChunkMedia[],
  work: string,
): Promise<(src: string) => string> {
  const site = resolve(await siteDir(input));
  const guard = blockPrivateNetwork();
  const remote = media.some((item) => !item.site)
    ? await fetchRemoteMedia(input.config.variables ?? {}, work, { blockPrivateNetwork: guard })
    : {};
  const siteSources = new Set(media.filter((item) => item.site).map((item) => item.src));
  // Under the guard ffmpeg never reads a URL itself: other http(s) sources are downloaded
  // through the address policy first, anything else is refused.
  if (guard) {
    for (const [index, { src }] of media.filter((item) => !item.site).entries()) {
      if (remote[src]) continue;
      if (!/^https?:\/\//i.test(src)) {
        throw new BlockedMediaError(src, "only project files and public http(s) URLs are read");
      }
      remote[src] = await downloadRemote(src, src, join(work, `media-${index}`), {
        blockPrivateNetwork: true,
      });
    }
  }
  const inputOf = (src: string): string => {
    if (!siteSources.has(src)) return remote[src]?.file ?? src;
    const file = resolve(site, src);
    if (!file.startsWith(site + sep)) throw new Error(`media source outside the site: ${src}`);
    return file;
  };
  if (guard) { for (const { src } of media) await refusePlaylist(src, inputOf(src)); }
  return inputOf;
}

/** The render session of a task: the same set-up as `vid render` (server, browser, media). */
async function openSession(
  input: ExecutionInput,
  executionStartTime: string,
): Promise<RenderSession> {
  const site = await siteDir(input);
  const prepared = await prepareComposition({
    target: site,
    composition: input.composition,
    values: input.config.variables,
    onWarning: (message) => console.warn(message),
  });
  const { composition } = prepared;
  const { width, height } = scaledSize(
    {
      width: input.config.width ?? composition.width,
      height: input.config.height ?? composition.height,
    },
    input.config.scale ?? OPTIONS.scale.default!,
    "config.scale",
  );
  const outputSize = width !== composition.width || height !== composition.height
    ? { width, height }
    : undefined;
  const started = Date.parse(executionStartTime);
  const epochMs = input.config.epochMs ??
    (Number.isFinite(started) ? Math.floor(started / 1000) * 1000 : undefined);
  return await openRenderSession({
    prepared,
    frameRate: configFrameRate(input.config),
    format: formatOf(input),
    seed: input.config.seed,
    epochMs,
    frameTimeoutMs: input.config.frameTimeoutMs,
    outputSize,
    blockPrivateNetwork: blockPrivateNetwork(),
    onWarning: (message) => console.warn(message),
  });
}

/**
 * Whether this function keeps renders off private networks: yes unless the operator set
 * `VID_ALLOW_PRIVATE_URLS=1` (or `true`) on it.
 */
function blockPrivateNetwork(): boolean {
  return !/^(1|true)$/i.test(process.env.VID_ALLOW_PRIVATE_URLS ?? "");
}

/** Downloads of sites in progress or done in this container, by site id. */
const sites = new Map<string, Promise<string>>();

/** The local copy of the input's site, downloaded once per container. */
function siteDir(input: ExecutionInput): Promise<string> {
  const { bucketName, siteId } = input;
  const cacheKey = `${bucketName}/${siteId}`;
  let pending = sites.get(cacheKey);
  if (!pending) {
    pending = downloadSite(bucketName, siteId);
    sites.set(cacheKey, pending);
    pending.catch(() => sites.delete(cacheKey));
  }
  return pending;
}

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

async function downloadSite(bucket: string, siteId: string): Promise<string> {
  if (!/^[A-Za-z0-9_-]+$/.test(siteId)) throw new Error(`invalid site id ${siteId}`);
  const root = join(tmpdir(), "vid-sites");
  const dir = join(root, siteId);
  const marker = `${dir}.complete`;
  if (await exists(marker)) return dir;
  const prefix = `sites/${siteId}/`;
  const keys = (await listKeys(bucket, prefix)).filter((k) => !k.endsWith("/"));
  if (keys.length === 0) {
    throw new Error(`site ${siteId} not found: no objects under s3://${bucket}/${prefix}`);
  }
  await mkdir(root, { recursive: true });
  const staging = await mkdtemp(join(root, `.${siteId}-`));
  try {
    const base = resolve(staging);
    await pool(keys, 8, async (key) => {
      const file = resolve(base, key.slice(prefix.length));
      if (!file.startsWith(base + sep)) throw new Error(`unsafe key in site: ${key}`);
      await downloadFile(bucket, key, file);
    });
    await rm(dir, { recursive: true, force: true });
    await mkdir(dirname(dir), { recursive: true });
    await rename(staging, dir);
    await writeFile(marker, `${keys.length}\n`);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return dir;
}
