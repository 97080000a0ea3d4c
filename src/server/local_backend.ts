/**
 * The `local` render backend of `vid server`: renders on this machine with the same
 * `renderComposition` as `vid render`; the thumbnail is a frame of the finished video.
 *
 * @module
 */

import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { type BrowserPool, createBrowserPool } from "../render/capture_mode.ts";
import { renderComposition } from "../render/render.ts";
import type { ServerContext } from "./context.ts";
import type { RenderBackend, RenderJob } from "./render_backend.ts";
import { thumbnailFromVideo } from "./thumbnail.ts";
import { extractProjectZip } from "./zip_check.ts";

/**
 * Reads a render's project zip from storage and unpacks it into `dir/project`.
 *
 * @returns The project folder.
 */
export async function unpackProject(
  ctx: ServerContext,
  job: RenderJob,
  dir: string,
): Promise<string> {
  const zip = await ctx.storage.get(`assets/${job.assetId}/project.zip`);
  if (!zip) throw new Error(`the project of asset ${job.assetId} is missing from storage`);
  const bytes = new Uint8Array(await new Response(zip.body).arrayBuffer());
  const project = join(dir, "project");
  await extractProjectZip(bytes, project, { composition: job.request.composition });
  return project;
}

async function renderLocally(
  ctx: ServerContext,
  job: RenderJob,
  signal: AbortSignal,
  browsers?: BrowserPool,
) {
  const { request } = job;
  const dir = await mkdtemp(join(ctx.workDir, `render-${job.id}-`));
  try {
    const project = await unpackProject(ctx, job, dir);
    const video = join(dir, `video.${request.format}`);
    await renderComposition({
      target: project,
      composition: request.composition,
      output: video,
      fps: request.fps,
      format: request.format,
      quality: request.quality,
      values: request.variables,
      strictVariables: request.strict_variables,
      loudness: request.loudness,
      outputSize: { width: job.width, height: job.height },
      // Tenants' compositions never reach the server's own network.
      blockPrivateNetwork: !ctx.allowPrivateUrls,
      signal,
      browsers,
      onProgress: (p) => job.setProgress(p.framesTotal > 0 ? p.framesDone / p.framesTotal : 0),
    });
    const thumbnail = join(dir, "thumbnail.jpg");
    await thumbnailFromVideo(video, job.durationSeconds, thumbnail, job.request.fps);
    await ctx.storage.putFile(`renders/${job.id}/video.${request.format}`, video);
    await ctx.storage.putFile(`renders/${job.id}/thumbnail.jpg`, thumbnail, "image/jpeg");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The local backend with `workers` renders in parallel.
 *
 * @example
 * ```ts no_run
 * import { localBackend } from "./local_backend.ts";
 * import { startQueue } from "./queue.ts";
 * import type { ServerContext } from "./context.ts";
 *
 * function startLocalQueue(ctx: ServerContext) {
 *   return startQueue(ctx, localBackend(2));
 * }
 * ```
 */
export function localBackend(workers: number): RenderBackend {
  // Browsers stay warm between renders: a render skips the browser launch and probe.
  const browsers = createBrowserPool();
  return {
    kind: "local",
    slots: workers,
    render: (ctx, job, signal) => renderLocally(ctx, job, signal, browsers),
    close: () => void browsers.close(),
  };
}
