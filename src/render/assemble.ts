/**
 * The last step of every video render: join the chunks (concat demuxer, `-c copy`, exact
 * timestamps at the joins), mix the soundtrack once for the whole timeline, and mux it in.
 * A local render (`render.ts`) and the Lambda worker's `assemble` task both call
 * {@linkcode assembleVideo}, so a distributed render's file is made exactly as a local one.
 *
 * Chunks never carry audio (so seams cannot click); the soundtrack is mixed from the media
 * the page declared. The caller owns where the result goes: it passes a temp `output` path
 * and renames it into place. {@linkcode mixSoundtrack} is the mix alone, for a caller whose
 * join runs elsewhere: `vid server`'s chunk fan-out mixes it on the worker that has the page
 * and its media, and the assembler, which has neither, muxes that file
 * ({@linkcode AssembleVideoOptions.soundtrack}).
 *
 * @module
 */

import { rename } from "node:fs/promises";
import { join } from "node:path";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import { concatChunks, type ConcatTiming, type OutputFormat } from "./encode.ts";
import { mixAudio, muxAudio, normalizeLoudness } from "./media.ts";

/** What {@linkcode mixSoundtrack} mixes: the page's media over the output's time span. */
export interface SoundtrackOptions {
  /** Path of ffmpeg. */
  ffmpeg: string;
  /** Path of ffprobe (to probe the media of the soundtrack). */
  ffprobe: string;
  /** The page's `<video>`/`<audio>` elements; none means a silent video. */
  media: readonly MediaDescriptor[];
  /** Seconds of the output. */
  duration: number;
  /** Timeline time the output starts at (a `--frames` sub-range). @default 0 */
  startAt?: number;
  /** Seconds of the whole composition (where an unbounded element's fade-out ends). */
  timelineEnd?: number;
  /** Integrated loudness of the soundtrack, LUFS (`--loudness`); as mixed when unset. */
  loudness?: number;
  /** Maps a media `src` to what ffmpeg reads (a local copy, a loopback URL). */
  input?: (src: string) => string;
  /** Options before each media input (a guarded render's `-protocol_whitelist file`). */
  inputArgs?: readonly string[];
  /** Ends the ffmpeg or ffprobe run in progress (killed) when it aborts. */
  signal?: AbortSignal;
}

/** What {@linkcode assembleVideo} joins and mixes. */
export interface AssembleVideoOptions extends SoundtrackOptions {
  /** The encoded chunks, in timeline order. */
  chunkFiles: readonly string[];
  /** Frame rate and frames of each chunk, for exact timestamps at the joins. */
  timing: ConcatTiming;
  /** The container of the chunks and the result. */
  format: OutputFormat;
  /**
   * A soundtrack {@linkcode mixSoundtrack} already wrote for this output (elsewhere, from the
   * same media and span): muxed as it is, and `media` is not mixed again. `null` when that
   * mix found nothing audible. @default mixed here from `media`
   */
  soundtrack?: string | null;
  /** A scratch folder for the concat list, the joined video and the soundtrack. */
  workDir: string;
  /** Where the finished video is written. */
  output: string;
}

/**
 * Mixes the soundtrack of `media` for the output's span into `output` (a WAV file),
 * normalised to `loudness` when one is set.
 *
 * @returns Whether anything was audible (else no file is written).
 *
 * @example
 * ```ts no_run
 * import type { MediaDescriptor } from "../runtime/page_runtime.ts";
 *
 * async function soundtrackOf(media: MediaDescriptor[]): Promise<boolean> {
 *   return await mixSoundtrack(
 *     { ffmpeg: "ffmpeg", ffprobe: "ffprobe", media, duration: 3 },
 *     "/tmp/soundtrack.wav",
 *   );
 * }
 * ```
 */
export async function mixSoundtrack(options: SoundtrackOptions, output: string): Promise<boolean> {
  const audio = options.media.length > 0 && await mixAudio(options.media, {
    ffmpeg: options.ffmpeg,
    ffprobe: options.ffprobe,
    duration: options.duration,
    startAt: options.startAt,
    timelineEnd: options.timelineEnd,
    output,
    input: options.input,
    inputArgs: options.inputArgs,
    signal: options.signal,
  });
  if (audio && options.loudness !== undefined) {
    await normalizeLoudness(options.ffmpeg, output, options.loudness, options.signal);
  }
  return audio;
}

/** What {@linkcode assembleVideo} made. */
export interface AssembleVideoResult {
  /** Whether a soundtrack was mixed and muxed in. */
  audio: boolean;
}

/**
 * Joins `chunkFiles` into `output`, with the soundtrack of `media` mixed once and muxed in
 * when anything is audible. A single chunk is moved, not copied (its bytes are already the
 * video); more are joined by the concat demuxer without re-encoding.
 *
 * @param options The chunks, their timing, the media, and where to write.
 * @returns Whether the result has audio.
 *
 * @example
 * ```ts
 * // Two chunks of a 3-second, 30 fps silent video, joined into a temp file.
 * async function join(work: string): Promise<void> {
 *   await assembleVideo({
 *     ffmpeg: "ffmpeg",
 *     ffprobe: "ffprobe",
 *     chunkFiles: [`${work}/chunk-0.mp4`, `${work}/chunk-1.mp4`],
 *     timing: { fps: 30, frames: [60, 30] },
 *     format: "mp4",
 *     media: [],
 *     duration: 3,
 *     workDir: work,
 *     output: `${work}/.video.partial.mp4`,
 *   });
 * }
 * ```
 */
export async function assembleVideo(options: AssembleVideoOptions): Promise<AssembleVideoResult> {
  const { ffmpeg, format, workDir, signal } = options;
  let soundtrack = join(workDir, "soundtrack.wav");
  let audio: boolean;
  if (options.soundtrack === undefined) audio = await mixSoundtrack(options, soundtrack);
  else {
    audio = options.soundtrack !== null;
    if (options.soundtrack !== null) soundtrack = options.soundtrack;
  }
  const joined = audio ? join(workDir, `joined.${format}`) : options.output;
  const files = [...options.chunkFiles];
  const list = join(workDir, "chunks.txt");
  if (files.length === 1) {
    await rename(files[0], joined).catch(async () => {
      await concatChunks(ffmpeg, files, list, joined, format, options.timing, signal);
    });
  } else {
    await concatChunks(ffmpeg, files, list, joined, format, options.timing, signal);
  }
  if (audio) await muxAudio(ffmpeg, joined, soundtrack, options.output, format, signal);
  return { audio };
}
