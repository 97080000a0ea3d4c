/**
 * What ffmpeg may read in a guarded (server-side) render. ffmpeg opens media outside the
 * browser and its guard proxy, and its demuxers follow references (an HLS or DASH
 * playlist's segments, a concat list's files), so a guarded render hands it checked local
 * files only, with `-protocol_whitelist file`: project files from the project folder,
 * remote media from their copies, any other http(s) source downloaded first under the
 * address policy; other sources and playlists are refused.
 *
 * @module
 */

import { open, realpath } from "node:fs/promises";
import { join, sep } from "node:path";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import { downloadRemote, type RemoteAssets } from "./remote.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** A media source a guarded render refuses to hand to ffmpeg. */
export class BlockedMediaError extends VidError {
  override name = "BlockedMediaError";
  /** The media source. */
  override readonly field: string;
  constructor(src: string, why: string) {
    super(`media source ${src} is not allowed on this server: ${why}`, { exitCode: EXIT_FAILED });
    this.field = src;
  }
}

/**
 * ffmpeg options before every input of a guarded render: local files only, so no
 * container (an HLS or DASH playlist, a concat list) can make ffmpeg open a URL.
 */
export const GUARDED_INPUT_ARGS: readonly string[] = ["-protocol_whitelist", "file"];

/**
 * Refuses a playlist (HLS, DASH, concat, IMF) as a guarded render's media: even limited
 * to local files, it would make ffmpeg read other files by absolute path.
 *
 * @throws {BlockedMediaError} When `file` starts like a playlist.
 */
export async function refusePlaylist(src: string, file: string): Promise<void> {
  const handle = await open(file, "r");
  try {
    const head = new Uint8Array(4096);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    const text = new TextDecoder("latin1").decode(head.subarray(0, bytesRead));
    if (/#EXTM3U|<MPD|ffconcat|<CompositionPlaylist/i.test(text)) {
      throw new BlockedMediaError(src, "playlists (HLS, DASH, concat) are not rendered");
    }
  } finally {
    await handle.close();
  }
}

/**
 * The local file ffmpeg reads for each media source of a guarded render: project files
 * from the project folder (never outside it), remote media from their copies, other
 * http(s) sources downloaded now under the address policy; anything else (file:, data:,
 * blob:...) and any playlist is refused.
 *
 * @example
 * ```ts no_run
 * import type { MediaDescriptor } from "../runtime/page_runtime.ts";
 * import type { ProjectServer } from "./serve.ts";
 * import type { RemoteAssets } from "./remote.ts";
 *
 * async function inputs(
 *   media: MediaDescriptor[],
 *   server: ProjectServer,
 *   remote: RemoteAssets,
 * ): Promise<Record<string, string>> {
 *   return await guardedMediaInputs(media, { url: server.url, dir: "project" }, "work", remote);
 * }
 * ```
 */
export async function guardedMediaInputs(
  media: readonly MediaDescriptor[],
  project: { url: string; dir: string },
  workDir: string,
  remote: RemoteAssets,
): Promise<Record<string, string>> {
  const inputs: Record<string, string> = {};
  const root = await realpath(project.dir);
  for (const [index, src] of [...new Set(media.map((m) => m.src))].entries()) {
    let file: string;
    if (src.startsWith(project.url)) {
      const path = decodeURIComponent(new URL(src).pathname);
      file = await realpath(join(root, path)).catch(() => "");
      if (!file.startsWith(root + sep)) throw new BlockedMediaError(src, "not a project file");
    } else if (remote[src]) {
      file = remote[src].file;
    } else if (/^https?:\/\//i.test(src)) {
      file = (await downloadRemote(src, src, join(workDir, `media-${index}`), {
        blockPrivateNetwork: true,
      })).file;
    } else {
      throw new BlockedMediaError(src, "only project files and public http(s) URLs are read");
    }
    await refusePlaylist(src, file);
    inputs[src] = file;
  }
  return inputs;
}
