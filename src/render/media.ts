/**
 * Media in compositions: finds the page's `<video>` and `<audio>` elements, prepares
 * frame-exact video stand-ins with ffmpeg, mixes the soundtrack once for the whole
 * timeline and muxes it into the finished video. Chunks never carry audio, so chunk seams
 * cannot click.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { copyFile, mkdir, readFile, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import type { Browser } from "./browser.ts";
import {
  type AudioAutomation,
  checkAudioAutomation,
  duckWeight,
  gainExpression,
  type GainPoint,
  parseAudioAutomation,
  playedLength,
} from "./audio_automation.ts";
import { evaluate } from "./capture.ts";
import { type OutputFormat, runFfmpeg } from "./encode.ts";
import { type CompositionPage, openComposition, type PageSpec } from "./render_chunk.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { processPolicy, type ProcessResult, runProcess } from "./process_runner.ts";
import { cacheDir } from "../util/cache_dir.ts";

/** A media source could not be read or converted. */
export class MediaError extends VidError {
  override name = "MediaError";
  /** The source URL at fault. */
  override readonly field: string;
  constructor(message: string, src: string, cause?: unknown) {
    super(message, { exitCode: EXIT_FAILED, cause });
    this.field = src;
  }
}

/**
 * How long one ffprobe may take: it reads headers, not the whole file, so a probe past this
 * is a source that stalls (a remote stream that never sends) or a crafted file.
 */
export const PROBE_TIMEOUT_MS = 60_000;

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
 * `-protocol_whitelist file`). Ends with the signal's reason when `signal` aborts, and
 * with a {@linkcode MediaError} after {@linkcode PROBE_TIMEOUT_MS}.
 *
 * @example
 * ```ts no_run
 * const probe = await probeMedia("ffprobe", "clip.mp4");
 * console.log(probe.fps, probe.duration, probe.hasAudio);
 * ```
 */
export async function probeMedia(
  ffprobe: string,
  src: string,
  inputArgs: readonly string[] = [],
  options: { signal?: AbortSignal } = {},
): Promise<MediaProbe> {
  let result: ProcessResult;
  try {
    result = await runProcess(ffprobe, [
      "-v",
      "error",
      ...inputArgs,
      "-show_entries",
      "stream=codec_type,avg_frame_rate,r_frame_rate,channels:format=duration",
      "-of",
      "json",
      src,
    ], { signal: options.signal, timeoutMs: PROBE_TIMEOUT_MS });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new MediaError(`cannot read media ${src}: ${(error as Error).message}`, src, error);
  }
  if (result.code !== 0) {
    throw new MediaError(
      `cannot read media ${src}: ${result.stderr.trim() || `exit ${result.code ?? result.signal}`}`,
      src,
    );
  }
  let json: {
    streams?: {
      codec_type: string;
      avg_frame_rate?: string;
      r_frame_rate?: string;
      channels?: number;
    }[];
    format?: { duration?: string };
  };
  try {
    json = JSON.parse(result.stdout);
  } catch (error) {
    throw new MediaError(`cannot read media ${src}: ffprobe printed no JSON`, src, error);
  }
  const streams = json.streams ?? [];
  const video = streams.find((s) => s.codec_type === "video");
  const audio = streams.find((s) => s.codec_type === "audio");
  const rate = (text?: string) => {
    const [n, d] = (text ?? "0/1").split("/").map(Number);
    return d > 0 && Number.isFinite(n / d) ? n / d : 0;
  };
  return {
    fps: video ? rate(video.avg_frame_rate) || rate(video.r_frame_rate) : 0,
    duration: Number(json.format?.duration ?? 0) || 0,
    hasVideo: video !== undefined,
    hasAudio: audio !== undefined,
    audioChannels: audio ? Number(audio.channels) || 0 : 0,
  };
}

/**
 * Lists the `<video>` and `<audio>` elements of a loaded composition page after its scripts
 * ran (sources may come from variables). Reads only: the page stays as loaded, so it can
 * go on to render.
 */
export async function listMedia(composition: CompositionPage): Promise<MediaDescriptor[]> {
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
}

/**
 * Loads the composition once and lists its `<video>` and `<audio>` elements after its
 * scripts ran (sources may come from variables).
 */
export async function discoverMedia(browser: Browser, spec: PageSpec): Promise<MediaDescriptor[]> {
  const composition = await openComposition(browser, { ...spec, videoProxies: undefined });
  try {
    return await listMedia(composition);
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

/** How far the preparation of one `<video>` source is. */
export interface MediaProgress {
  /** The source as the user knows it: a project path or a URL. */
  file: string;
  /** 1-based position of this source among those being prepared. */
  index: number;
  /** Sources being prepared. */
  count: number;
  /** Fraction of this source done, 0-1. */
  fraction: number;
  /** True when the proxy came from the cache (no conversion ran). */
  cached: boolean;
}

/**
 * The proxy encoding. Part of every cache key: a change here makes new proxies instead of
 * serving ones made with other settings.
 */
const PROXY_ARGS: readonly string[] = [
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
];

/** SHA-256 (hex) of a file's bytes after `prefix`, read as a stream. */
function hashFile(file: string, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const hash = createHash("sha256").update(prefix);
    createReadStream(file)
      .on("data", (chunk) => hash.update(chunk))
      .on("error", reject)
      .on("end", () => resolve(hash.digest("hex")));
  });
}

/** What a cached proxy's sidecar records; written after the proxy, so it marks it complete. */
interface ProxyMeta {
  fps: number;
}

/** Reads a cached proxy's sidecar; undefined when the proxy is not (completely) there. */
async function readMeta(metaFile: string, proxyFile: string): Promise<ProxyMeta | undefined> {
  try {
    const meta = JSON.parse(await readFile(metaFile, "utf8")) as ProxyMeta;
    if (!(meta.fps > 0)) return undefined;
    await stat(proxyFile);
    // Touched on use, so a cache sweep can drop the least recently used first.
    const now = new Date();
    await utimes(metaFile, now, now).catch(() => undefined);
    return meta;
  } catch {
    return undefined;
  }
}

/** Writes `file` atomically: a uniquely named temp file beside it, then a rename. */
async function writeAtomic(file: string, text: string): Promise<void> {
  const temp = `${file}.${process.pid}-${crypto.randomUUID()}.tmp`;
  await writeFile(temp, text);
  await rename(temp, file);
}

/**
 * Runs one proxy conversion, reporting the fraction of `duration` written so far (from
 * ffmpeg's `-progress` lines).
 */
async function convertProxy(
  ffmpeg: string,
  args: string[],
  output: string,
  duration: number,
  onFraction: (fraction: number) => void,
  signal?: AbortSignal,
): Promise<void> {
  let pending = "";
  const result = await runProcess(ffmpeg, [
    "-hide_banner",
    "-loglevel",
    "error",
    "-nostats",
    "-progress",
    "pipe:1",
    "-y",
    ...args,
  ], {
    signal,
    onStdout: (text) => {
      pending += text;
      const lines = pending.split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) {
        const match = line.match(/^out_time_us=(\d+)/);
        if (match && duration > 0) onFraction(Math.min(1, Number(match[1]) / 1e6 / duration));
      }
    },
  });
  if (result.code !== 0) {
    throw new MediaError(
      `ffmpeg failed writing ${output} (${result.signal ?? `exit ${result.code}`}): ` +
        result.stderr.trim(),
      output,
    );
  }
}

/**
 * Converts every distinct `<video>` source to an intra-coded VP8 copy at its own frame
 * rate (every frame a keyframe), so the browser can show any frame exactly and fast.
 *
 * Proxies are cached under {@linkcode cacheDir} by the SHA-256 of the source's bytes and
 * the proxy settings, so every render, still, preview and worker on the machine converts a
 * video once. Each proxy is written to a temp file and renamed, and its sidecar (written
 * last) marks it complete, so concurrent renders never read half a proxy. Without a
 * writable cache folder the proxies go to `workDir`. `serve` makes a proxy reachable by the
 * page and returns its URL.
 */
export async function prepareVideoProxies(
  media: readonly MediaDescriptor[],
  options: {
    ffmpeg: string;
    ffprobe: string;
    workDir: string;
    /**
     * Maps a page URL to what ffmpeg should read: a local file for project files and cached
     * remote media. A source that is no local file is read from its URL and not cached.
     */
    input?: (src: string) => string;
    /** The source as the user knows it, for progress (e.g. its project path). */
    label?: (src: string) => string;
    /** Options before each input (a guarded render's `-protocol_whitelist file`). */
    inputArgs?: readonly string[];
    serve: (name: string, file: string) => string;
    /** Cache folder. @default cacheDir() */
    cacheDir?: string;
    /** Told as each source starts, advances and finishes. */
    onProgress?: (progress: MediaProgress) => void;
    /** Ends a probe or conversion that runs (the process killed) when it aborts. */
    signal?: AbortSignal;
  },
): Promise<Record<string, VideoProxy>> {
  const signal = options.signal;
  const inputArgs = options.inputArgs ?? [];
  const proxies: Record<string, VideoProxy> = {};
  const sources = [...new Set(media.filter((m) => m.kind === "video").map((m) => m.src))];
  const proxyDir = join(options.cacheDir ?? cacheDir(), "proxies");
  const cacheUsable = sources.length > 0 &&
    await mkdir(proxyDir, { recursive: true }).then(() => true, () => false);
  for (const [index, src] of sources.entries()) {
    const input = options.input?.(src) ?? src;
    const file = options.label?.(src) ?? src;
    const report = (fraction: number, cached: boolean) =>
      options.onProgress?.({ file, index: index + 1, count: sources.length, fraction, cached });
    const local = cacheUsable && !/^[a-z][a-z0-9+.-]*:/i.test(input) &&
      await stat(input).then((s) => s.isFile(), () => false);
    const key = local ? await hashFile(input, `vid-proxy-1\0${PROXY_ARGS.join(" ")}\0`) : "";
    const output = local
      ? join(proxyDir, `${key}.webm`)
      : join(options.workDir, `video-${index}.webm`);
    const metaFile = `${output}.json`;
    const hit = local ? await readMeta(metaFile, output) : undefined;
    if (hit) {
      report(1, true);
      proxies[src] = { url: options.serve(`video-${index}.webm`, output), fps: hit.fps };
      continue;
    }
    report(0, false);
    const probe = await probeMedia(options.ffprobe, input, inputArgs, { signal });
    if (!probe.hasVideo || probe.fps <= 0) {
      throw new MediaError(`${src} has no video stream`, src);
    }
    const temp = local ? `${output}.${process.pid}-${crypto.randomUUID()}.tmp.webm` : output;
    // ffmpeg running as the policy's user (vid server's --render-user) cannot write to this
    // process's cache: it writes into the work folder, handed to that user, and the file is
    // copied into the cache from there.
    const staged = local && processPolicy().user
      ? join(options.workDir, `video-${index}.staged.webm`)
      : temp;
    try {
      await convertProxy(
        options.ffmpeg,
        [...inputArgs, "-i", input, ...PROXY_ARGS, "-r", String(probe.fps), staged],
        staged,
        probe.duration,
        (fraction) => report(fraction, false),
        signal,
      );
      if (staged !== temp) {
        await copyFile(staged, temp);
        await rm(staged, { force: true });
      }
      if (local) {
        await rename(temp, output);
        await writeAtomic(metaFile, JSON.stringify({ fps: probe.fps } satisfies ProxyMeta));
      }
    } catch (error) {
      if (local) await rm(temp, { force: true });
      if (staged !== temp) await rm(staged, { force: true });
      if (signal?.aborted) throw signal.reason;
      throw new MediaError(
        `cannot prepare video ${src}: ${(error as Error).message}`,
        src,
        error,
      );
    }
    report(1, false);
    proxies[src] = { url: options.serve(`video-${index}.webm`, output), fps: probe.fps };
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
 * its end), looped with `loop`, scaled by `data-volume` (a gain or keyframes), faded by
 * `data-fade-in`/`data-fade-out`, ducked under `data-voice` elements by `data-duck`, sped
 * up by `data-playback-rate`, delayed to `data-start` on the timeline. Throws
 * `AudioAttributeError` for automation that does not parse or fit the element.
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
    /**
     * Seconds of the whole composition, where an element without an end stops (its
     * fade-out ends there). @default startAt + duration
     */
    timelineEnd?: number;
    /** Ends a probe or the mix that runs (the process killed) when it aborts. */
    signal?: AbortSignal;
  },
): Promise<boolean> {
  const signal = options.signal;
  const inputArgs = options.inputArgs ?? [];
  const startAt = options.startAt ?? 0;
  const end = startAt + options.duration;
  const probes = new Map<string, Promise<MediaProbe>>();
  const probeOf = (src: string): Promise<MediaProbe> => {
    const input = options.input?.(src) ?? src;
    if (!probes.has(input)) {
      probes.set(input, probeMedia(options.ffprobe, input, inputArgs, { signal }));
    }
    return probes.get(input)!;
  };
  const automations = await mediaAutomation(media, probeOf, options.timelineEnd ?? end);
  const inputs: string[] = [];
  const filters: string[] = [];
  let inputIndex = 0;
  for (const [index, item] of media.entries()) {
    const playsUntil = item.duration === null ? Infinity : item.start + item.duration;
    if (item.muted || item.volume <= 0 || item.start >= end || playsUntil <= startAt) continue;
    const input = options.input?.(item.src) ?? item.src;
    const probe = await probeOf(item.src);
    if (!probe.hasAudio) continue;
    const n = inputIndex;
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
    const gain = gainCurve(automations[index], skip, length);
    if (gain === undefined) steps.push(`volume=${item.volume}`);
    // Mono plays on both speakers at full level, as in the browser; ffmpeg's own
    // mono-to-stereo upmix would lower it by 3 dB.
    if (probe.audioChannels === 1) steps.push("pan=stereo|c0=c0|c1=c0");
    steps.push("aresample=48000", "aformat=sample_fmts=fltp:channel_layouts=stereo");
    const delayMs = Math.round(Math.max(0, item.start - startAt) * 1000);
    const delay = delayMs > 0 ? `,adelay=${delayMs}:all=1` : "";
    if (gain === undefined) {
      filters.push(`[${inputIndex++}:a:0]${steps.join(",")}${delay}[a${n}]`);
    } else {
      filters.push(
        `[${inputIndex++}:a:0]${steps.join(",")}[s${n}]`,
        `${gain}[g${n}]`,
        `[s${n}][g${n}]amultiply${delay}[a${n}]`,
      );
    }
  }
  const count = inputIndex;
  if (count === 0) return false;
  const labels = Array.from({ length: count }, (_, i) => `[a${i}]`).join("");
  const mix = count > 1
    ? `${labels}amix=inputs=${count}:normalize=0:dropout_transition=0[mixed]`
    : `${labels}anull[mixed]`;
  filters.push(mix, `[mixed]apad,atrim=duration=${options.duration.toFixed(6)}[out]`);
  await runFfmpeg(
    options.ffmpeg,
    [
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
    ],
    options.output,
    { signal },
  );
  return true;
}

/** An element's automation and the times it applies over, for {@linkcode gainCurve}. */
interface PlacedAutomation {
  automation: AudioAutomation;
  /** Seconds the element plays. */
  length: number;
  /** The duck weight over the element's own time, when it is ducked by a voice. */
  duck?: GainPoint[];
}

/**
 * Parses and checks every element's audio automation (throwing `AudioAttributeError` for a
 * bad one, audible or not) and places the voices' duck weight on each ducked element's
 * own time.
 */
async function mediaAutomation(
  media: readonly MediaDescriptor[],
  probeOf: (src: string) => Promise<MediaProbe>,
  timelineEnd: number,
): Promise<PlacedAutomation[]> {
  const placed = await Promise.all(media.map(async (item) => {
    const automation = parseAudioAutomation(item);
    const curved = automation.fadeIn > 0 || automation.fadeOut > 0 || automation.voice ||
      automation.duck !== undefined;
    const source = curved && !item.muted ? (await probeOf(item.src)).duration : 0;
    const length = playedLength(item, source, timelineEnd);
    if (!item.muted) checkAudioAutomation(automation, length, item.element ?? item.src);
    return { automation, length };
  }));
  const voices = media.flatMap((item, i) =>
    placed[i].automation.voice && !item.muted && item.volume > 0
      ? [{ start: item.start, end: item.start + placed[i].length }]
      : []
  );
  return placed.map((entry, i) => {
    if (entry.automation.duck === undefined || entry.automation.voice) return entry;
    const start = media[i].start;
    const weight = duckWeight(voices).map((p) => ({ time: p.time - start, gain: p.gain }));
    return { ...entry, duck: weight };
  });
}

/**
 * Checks the audio automation of every element (`data-volume` keyframes, fades, `data-duck`)
 * before anything renders, so a bad attribute fails the render at once rather than at its
 * mix. Throws `AudioAttributeError` naming the element, the attribute and the fix.
 *
 * @example
 * ```ts no_run
 * import type { MediaDescriptor } from "../runtime/page_runtime.ts";
 *
 * async function check(media: MediaDescriptor[]): Promise<void> {
 *   await checkMediaAudio(media, { ffprobe: "ffprobe", timelineEnd: 10 });
 * }
 * ```
 */
export async function checkMediaAudio(
  media: readonly MediaDescriptor[],
  options: {
    ffprobe: string;
    /** Seconds of the composition. */
    timelineEnd: number;
    input?: (src: string) => string;
    inputArgs?: readonly string[];
    /** Ends a probe that runs (ffprobe killed) when it aborts. */
    signal?: AbortSignal;
  },
): Promise<void> {
  await mediaAutomation(
    media,
    (src) =>
      probeMedia(options.ffprobe, options.input?.(src) ?? src, options.inputArgs ?? [], {
        signal: options.signal,
      }),
    options.timelineEnd,
  );
}

/**
 * The gain curve of one element's mixed stream as an `aevalsrc` source (mono, spread to
 * both channels), or undefined when a constant `volume` does. The stream starts `skip`
 * seconds into the element's play and lasts `length` seconds.
 */
function gainCurve(placed: PlacedAutomation, skip: number, length: number): string | undefined {
  const expression = gainExpression(placed.automation, {
    length: placed.length,
    skip,
    duck: placed.duck,
  });
  if (expression === undefined) return undefined;
  return `aevalsrc=exprs='${expression}':s=48000:d=${length.toFixed(6)},` +
    "pan=stereo|c0=c0|c1=c0,aformat=sample_fmts=fltp:channel_layouts=stereo";
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

/** What the first pass of `loudnorm` measured of a soundtrack. */
interface LoudnessMeasure {
  input_i: string;
  input_tp: string;
  input_lra: string;
  input_thresh: string;
  target_offset: string;
}

/** True peak ceiling of a normalised mix, dBTP (EBU R128 leaves 1 dB for lossy codecs). */
const LOUDNESS_TRUE_PEAK = -1;
/** Loudness range target of `loudnorm`, LU; only its dynamic mode uses it. */
const LOUDNESS_RANGE = 11;

/** Runs ffmpeg and returns its stderr (where `loudnorm` prints its measurement). */
async function ffmpegLog(ffmpeg: string, args: string[], signal?: AbortSignal): Promise<string> {
  const result = await runProcess(ffmpeg, ["-hide_banner", "-nostats", "-y", ...args], {
    signal,
    ignoreStdout: true,
    stderrTail: 20000,
  });
  if (result.code !== 0) {
    throw new MediaError(
      `ffmpeg failed measuring loudness (${result.signal ?? `exit ${result.code}`}): ` +
        result.stderr.trim().slice(-4000),
      args[args.indexOf("-i") + 1],
    );
  }
  return result.stderr;
}

/**
 * Normalises a mixed soundtrack (a 48 kHz WAV) in place to `target` LUFS integrated, by
 * two-pass EBU R128 `loudnorm`: the first pass measures, the second applies one gain
 * (`linear=true`, so the mix's dynamics stay as mixed) with those measurements. When one
 * gain would push the true peak over -1 dBTP, `loudnorm` uses its dynamic mode for the
 * file instead, which compresses the peaks. A silent soundtrack is left as it is.
 *
 * @example
 * ```ts no_run
 * await normalizeLoudness("ffmpeg", "/tmp/soundtrack.wav", -14);
 * ```
 *
 * @param signal Ends the ffmpeg run in progress (killed) when it aborts.
 */
export async function normalizeLoudness(
  ffmpeg: string,
  wav: string,
  target: number,
  signal?: AbortSignal,
): Promise<void> {
  const settings = `I=${target}:TP=${LOUDNESS_TRUE_PEAK}:LRA=${LOUDNESS_RANGE}`;
  const log = await ffmpegLog(ffmpeg, [
    "-i",
    wav,
    "-af",
    `loudnorm=${settings}:print_format=json`,
    "-f",
    "null",
    "-",
  ], signal);
  const json = log.slice(log.lastIndexOf("{"), log.lastIndexOf("}") + 1);
  let measured: LoudnessMeasure;
  try {
    measured = JSON.parse(json) as LoudnessMeasure;
  } catch (error) {
    throw new MediaError(
      `ffmpeg's loudnorm printed no measurement: ${log.trim().slice(-2000)}`,
      wav,
      error,
    );
  }
  // Silence measures -inf (or below the gate): there is nothing to bring up.
  if (!(Number(measured.input_i) > -70)) return;
  const normalized = `${wav}.loudnorm.wav`;
  try {
    await runFfmpeg(
      ffmpeg,
      [
        "-i",
        wav,
        "-af",
        `loudnorm=${settings}:measured_I=${measured.input_i}:measured_TP=${measured.input_tp}` +
        `:measured_LRA=${measured.input_lra}:measured_thresh=${measured.input_thresh}` +
        `:offset=${measured.target_offset}:linear=true,aresample=48000,` +
        // A stereo WAV read back has no layout recorded; the encoder needs one.
        "aformat=channel_layouts=stereo",
        "-c:a",
        "pcm_s16le",
        "-ar",
        "48000",
        normalized,
      ],
      normalized,
      { signal },
    );
    await rename(normalized, wav);
  } finally {
    await rm(normalized, { force: true });
  }
}

/**
 * Muxes a mixed soundtrack into a finished video without re-encoding the picture; `signal`
 * ends the run (ffmpeg killed).
 *
 * @example
 * ```ts no_run
 * await muxAudio("ffmpeg", "joined.mp4", "soundtrack.wav", "video.mp4", "mp4");
 * ```
 */
export async function muxAudio(
  ffmpeg: string,
  video: string,
  audio: string,
  output: string,
  format: OutputFormat,
  signal?: AbortSignal,
): Promise<void> {
  await runFfmpeg(
    ffmpeg,
    [
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
    ],
    output,
    { signal },
  );
}
