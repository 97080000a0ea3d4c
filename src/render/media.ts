/**
 * Media in compositions: finds the page's `<video>` and `<audio>` elements, prepares
 * frame-exact video stand-ins with ffmpeg, mixes the soundtrack once for the whole
 * timeline and muxes it into the finished video. Chunks never carry audio, so chunk seams
 * cannot click.
 *
 * @module
 */

import { spawn } from "node:child_process";
import { join } from "node:path";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import type { Browser } from "./browser.ts";
import { evaluate } from "./capture.ts";
import { type OutputFormat, runFfmpeg } from "./encode.ts";
import { openComposition, type PageSpec } from "./render_chunk.ts";

/** A media source could not be read or converted. */
export class MediaError extends Error {
  override name = "MediaError";
  /** The source URL at fault. */
  readonly field: string;
  constructor(message: string, src: string) {
    super(message);
    this.field = src;
  }
}

/** What ffprobe says of a media source. */
export interface MediaProbe {
  /** Frames per second of the first video stream; 0 without video. */
  fps: number;
  /** Seconds; 0 when unknown. */
  duration: number;
  hasVideo: boolean;
  hasAudio: boolean;
  /** Channels of the first audio stream; 0 without audio. */
  audioChannels: number;
}

/**
 * Runs ffprobe on a file or URL. `inputArgs` go before the input (a guarded render's
 * `-protocol_whitelist file`).
 */
export function probeMedia(
  ffprobe: string,
  src: string,
  inputArgs: readonly string[] = [],
): Promise<MediaProbe> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffprobe, [
      "-v",
      "error",
      ...inputArgs,
      "-show_entries",
      "stream=codec_type,avg_frame_rate,r_frame_rate,channels:format=duration",
      "-of",
      "json",
      src,
    ], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.setEncoding("utf8").on("data", (t: string) => out += t);
    child.stderr.setEncoding("utf8").on("data", (t: string) => err += t);
    child.on(
      "error",
      (error) => reject(new MediaError(`cannot run ffprobe: ${error.message}`, src)),
    );
    child.on("exit", (code) => {
      if (code !== 0) {
        reject(new MediaError(`cannot read media ${src}: ${err.trim() || `exit ${code}`}`, src));
        return;
      }
      const json = JSON.parse(out) as {
        streams?: {
          codec_type: string;
          avg_frame_rate?: string;
          r_frame_rate?: string;
          channels?: number;
        }[];
        format?: { duration?: string };
      };
      const streams = json.streams ?? [];
      const video = streams.find((s) => s.codec_type === "video");
      const audio = streams.find((s) => s.codec_type === "audio");
      const rate = (text?: string) => {
        const [n, d] = (text ?? "0/1").split("/").map(Number);
        return d > 0 && Number.isFinite(n / d) ? n / d : 0;
      };
      resolve({
        fps: video ? rate(video.avg_frame_rate) || rate(video.r_frame_rate) : 0,
        duration: Number(json.format?.duration ?? 0) || 0,
        hasVideo: video !== undefined,
        hasAudio: audio !== undefined,
        audioChannels: audio ? Number(audio.channels) || 0 : 0,
      });
    });
  });
}

/**
 * Loads the composition once and lists its `<video>` and `<audio>` elements after its
 * scripts ran (sources may come from variables).
 */
export async function discoverMedia(browser: Browser, spec: PageSpec): Promise<MediaDescriptor[]> {
  const composition = await openComposition(browser, { ...spec, videoProxies: undefined });
  try {
    // Let every element request its source (or fail) first, so a missing file is known.
    // AbortSignal.timeout runs on a real timer; the page's setTimeout is virtual.
    return await evaluate(
      composition.page,
      `(async () => {
        const pending = [...document.querySelectorAll("video, audio")]
          .filter((el) => el.readyState < 1 && !el.error && (el.currentSrc || el.src));
        await Promise.all(pending.map((el) => new Promise((settle) => {
          el.addEventListener("loadedmetadata", settle, { once: true });
          el.addEventListener("error", settle, { once: true });
          AbortSignal.timeout(10000).addEventListener("abort", settle);
        })));
        return window.__vid.media();
      })()`,
    ) as MediaDescriptor[];
  } finally {
    await composition.close();
  }
}

/** A prepared stand-in of a video source. */
export interface VideoProxy {
  /** URL the page loads instead of the source. */
  url: string;
  /** The source's frame rate. */
  fps: number;
}

/**
 * Converts every distinct `<video>` source to an intra-coded VP8 copy at its own frame
 * rate (every frame a keyframe), so the browser can show any frame exactly and fast.
 * `serve` makes a prepared file reachable by the page and returns its URL.
 */
export async function prepareVideoProxies(
  media: readonly MediaDescriptor[],
  options: {
    ffmpeg: string;
    ffprobe: string;
    workDir: string;
    /** Maps a page URL to what ffmpeg should read (a local file for cached remote media). */
    input?: (src: string) => string;
    /** Options before each input (a guarded render's `-protocol_whitelist file`). */
    inputArgs?: readonly string[];
    serve: (name: string, file: string) => string;
  },
): Promise<Record<string, VideoProxy>> {
  const inputArgs = options.inputArgs ?? [];
  const proxies: Record<string, VideoProxy> = {};
  const sources = [...new Set(media.filter((m) => m.kind === "video").map((m) => m.src))];
  for (const [index, src] of sources.entries()) {
    const input = options.input?.(src) ?? src;
    const probe = await probeMedia(options.ffprobe, input, inputArgs);
    if (!probe.hasVideo || probe.fps <= 0) {
      throw new MediaError(`${src} has no video stream`, src);
    }
    const file = join(options.workDir, `video-${index}.webm`);
    await runFfmpeg(options.ffmpeg, [
      ...inputArgs,
      "-i",
      input,
      "-an",
      "-map",
      "0:v:0",
      "-c:v",
      "libvpx",
      "-g",
      "1",
      "-deadline",
      "realtime",
      "-cpu-used",
      "16",
      "-qmin",
      "1",
      "-qmax",
      "10",
      "-b:v",
      "100M",
      "-fps_mode",
      "cfr",
      "-r",
      String(probe.fps),
      file,
    ], file).catch((error: Error) => {
      throw new MediaError(`cannot prepare video ${src}: ${error.message}`, src);
    });
    proxies[src] = { url: options.serve(`video-${index}.webm`, file), fps: probe.fps };
  }
  return proxies;
}

/** Audio codec arguments of each output format. */
export function audioCodecArgs(format: OutputFormat): string[] {
  return format === "webm" ? ["-c:a", "libopus", "-b:a", "160k"] : ["-c:a", "aac", "-b:a", "192k"];
}

/**
 * Mixes the soundtrack of every audible element into one track of exactly
 * `duration` seconds (padded with silence or trimmed), at 48 kHz stereo. Returns false
 * (and writes nothing) when nothing is audible.
 *
 * Each element contributes its source from `data-media-start`, for `data-duration` (or to
 * its end), looped with `loop`, scaled by `data-volume`, sped up by
 * `data-playback-rate`, delayed to `data-start` on the timeline.
 */
export async function mixAudio(
  media: readonly MediaDescriptor[],
  options: {
    ffmpeg: string;
    ffprobe: string;
    /** Seconds of the output. */
    duration: number;
    /** Timeline time the output starts at (a `--frames` sub-range). @default 0 */
    startAt?: number;
    output: string;
    input?: (src: string) => string;
    /** Options before each input (a guarded render's `-protocol_whitelist file`). */
    inputArgs?: readonly string[];
  },
): Promise<boolean> {
  const inputArgs = options.inputArgs ?? [];
  const startAt = options.startAt ?? 0;
  const end = startAt + options.duration;
  const inputs: string[] = [];
  const filters: string[] = [];
  let inputIndex = 0;
  for (const item of media) {
    const playsUntil = item.duration === null ? Infinity : item.start + item.duration;
    if (item.muted || item.volume <= 0 || item.start >= end || playsUntil <= startAt) continue;
    const input = options.input?.(item.src) ?? item.src;
    const probe = await probeMedia(options.ffprobe, input, inputArgs);
    if (!probe.hasAudio) continue;
    const n = filters.length;
    // A loop restarts at data-media-start, as the picture does: the whole file loops when
    // that is 0, else the trimmed span is repeated.
    const loopSpan = item.loop && item.mediaStart > 0 ? probe.duration - item.mediaStart : 0;
    const loopFile = item.loop && loopSpan <= 0;
    inputs.push(...inputArgs, ...(loopFile ? ["-stream_loop", "-1"] : []), "-i", input);
    // The part of this element's playback that falls inside [startAt, end).
    const skip = Math.max(0, startAt - item.start);
    const steps = [`atrim=start=${item.mediaStart}`, "asetpts=PTS-STARTPTS"];
    if (loopSpan > 0) {
      steps.push("aresample=48000", `aloop=loop=-1:size=${Math.round(loopSpan * 48000)}`);
    }
    if (item.playbackRate !== 1) steps.push(tempo(item.playbackRate));
    if (skip > 0) steps.push(`atrim=start=${skip.toFixed(6)}`, "asetpts=PTS-STARTPTS");
    const length = Math.min(
      (item.duration ?? Infinity) - skip,
      end - Math.max(item.start, startAt),
    );
    steps.push(`atrim=duration=${length.toFixed(6)}`);
    steps.push(`volume=${item.volume}`);
    // Mono plays on both speakers at full level, as in the browser; ffmpeg's own
    // mono-to-stereo upmix would lower it by 3 dB.
    if (probe.audioChannels === 1) steps.push("pan=stereo|c0=c0|c1=c0");
    steps.push("aresample=48000", "aformat=sample_fmts=fltp:channel_layouts=stereo");
    const delayMs = Math.round(Math.max(0, item.start - startAt) * 1000);
    if (delayMs > 0) steps.push(`adelay=${delayMs}:all=1`);
    filters.push(`[${inputIndex++}:a:0]${steps.join(",")}[a${n}]`);
  }
  const count = filters.length;
  if (count === 0) return false;
  const labels = Array.from({ length: count }, (_, i) => `[a${i}]`).join("");
  const mix = count > 1
    ? `${labels}amix=inputs=${count}:normalize=0:dropout_transition=0[mixed]`
    : `${labels}anull[mixed]`;
  filters.push(mix, `[mixed]apad,atrim=duration=${options.duration.toFixed(6)}[out]`);
  await runFfmpeg(options.ffmpeg, [
    ...inputs,
    "-filter_complex",
    filters.join(";"),
    "-map",
    "[out]",
    "-c:a",
    "pcm_s16le",
    "-ar",
    "48000",
    options.output,
  ], options.output);
  return true;
}

/** atempo accepts 0.5-2 per stage; chain stages for other rates. */
function tempo(rate: number): string {
  const stages: string[] = [];
  let left = rate;
  while (left > 2) {
    stages.push("atempo=2");
    left /= 2;
  }
  while (left < 0.5) {
    stages.push("atempo=0.5");
    left /= 0.5;
  }
  stages.push(`atempo=${left}`);
  return stages.join(",");
}

/** Muxes a mixed soundtrack into a finished video without re-encoding the picture. */
export async function muxAudio(
  ffmpeg: string,
  video: string,
  audio: string,
  output: string,
  format: OutputFormat,
): Promise<void> {
  await runFfmpeg(ffmpeg, [
    "-i",
    video,
    "-i",
    audio,
    "-map",
    "0:v:0",
    "-map",
    "1:a:0",
    "-c:v",
    "copy",
    ...audioCodecArgs(format),
    ...(format === "webm" ? [] : ["-movflags", "+faststart"]),
    output,
  ], output);
}
