/**
 * Render thumbnails of `vid server`, for both render backends: one frame of the finished
 * video, taken with ffmpeg 1 s in (or halfway through a shorter video). No second browser
 * session: the video already holds the frame.
 *
 * @module
 */

import { dirname } from "node:path";
import { runFfmpeg } from "../../render/encode.ts";
import { grantToProcessUser } from "../../render/process_runner.ts";
import { requireFfmpeg } from "../../render/system.ts";

/**
 * When in the video the thumbnail is taken: 1 s in, or the middle of a shorter video. With
 * `fps`, the time is moved back to the start of the frame showing then, never past the
 * last frame: a 1 s video at 1 fps has one frame, at 0 s, and a seek to 0.5 s finds none.
 */
export function thumbnailTime(durationSeconds: number, fps?: number): number {
  const time = Math.min(1, durationSeconds / 2);
  if (fps === undefined || !(fps > 0)) return time;
  const frames = Math.max(1, Math.round(durationSeconds * fps));
  return Math.min(Math.floor(time * fps + 1e-9), frames - 1) / fps;
}

/**
 * Writes a JPEG thumbnail of `video` to `output`. A transparent video (webm with VP9 alpha,
 * mov ProRes 4444) is laid on white first, as a browser shows a page without a background.
 *
 * @example
 * ```ts no_run
 * await thumbnailFromVideo("video.mp4", 5, "thumbnail.jpg", 30);
 * ```
 *
 * @param fps The video's frame rate, so the frame is one the video has.
 * @param signal Ends the run (ffmpeg killed) when it aborts.
 */
export async function thumbnailFromVideo(
  video: string,
  durationSeconds: number,
  output: string,
  fps?: number,
  signal?: AbortSignal,
): Promise<void> {
  const alpha = /\.(webm|mov)$/i.test(video);
  // ffmpeg runs as the render user on a server run as root: it reads the video and writes
  // the thumbnail beside it.
  await grantToProcessUser(video, dirname(output));
  await runFfmpeg(
    await requireFfmpeg(),
    [
      // libvpx decodes VP9's alpha channel; ffmpeg's own VP9 decoder drops it.
      ...(/\.webm$/i.test(video) ? ["-c:v", "libvpx-vp9"] : []),
      "-ss",
      String(thumbnailTime(durationSeconds, fps)),
      "-i",
      video,
      ...(alpha
        ? [
          "-filter_complex",
          "[0:v]format=rgba[v];[v]split[a][b];[a]drawbox=c=white:t=fill[bg];" +
          "[bg][b]overlay=format=auto,format=yuvj420p",
        ]
        : []),
      "-frames:v",
      "1",
      "-q:v",
      "3",
      output,
    ],
    output,
    { signal },
  );
}
