/**
 * Video encoding with ffmpeg: frames are piped to ffmpeg, one process per GOP grid cell
 * (`cellFrames`, see `gopFrames` in chunk_plan.ts), and cells and chunks are joined with the
 * concat demuxer without re-encoding.
 *
 * Why one encoder run per cell: an encoder's output for a GOP depends on what it encoded
 * before (x264 sets an IDR frame's QP from the running average of earlier P-frame QPs, and
 * its lookahead and mb-tree behave differently at the end of the input) and libvpx keeps
 * rate-control state across keyframes, so a GOP encoded mid-stream differs from the same GOP
 * encoded first. A fresh run per cell makes every cell's bytes a function of its frames
 * alone: any chunk plan gives the same file. The x264/x265 thread count is fixed, not
 * derived from the machine's cores, because frame threads change the encoding (a Lambda
 * worker and a workstation must agree). Joins carry exact timestamps: the concat list
 * gives every file's duration from its frame count (the containers' own durations are
 * rounded, e.g. an mp4's to the millisecond, which drifted each join).
 *
 * Output formats and quality presets (documented in the README):
 *
 * | format | codec | pixel format | draft | standard | high |
 * |---|---|---|---|---|---|
 * | mp4 | H.264 (libx264), faststart | yuv420p | ultrafast, CRF 28 | veryfast, CRF 20 | medium, CRF 16 |
 * | webm | VP9 (libvpx-vp9) with alpha | yuva420p | realtime, cpu-used 8, CRF 40 | realtime, cpu-used 5, CRF 32 | good, cpu-used 2, CRF 24 |
 * | mov | ProRes 4444 (prores_ks) with alpha | yuva444p10le | qscale 16 | qscale 8 | qscale 3 |
 *
 * HDR (`--hdr`, mp4 only): HEVC Main 10 (libx265, same presets, CRF 28/22/18), BT.2020
 * primaries and matrix, HLG transfer (arib-std-b67), limited range. Frames are captured
 * as sRGB, converted to BT.2020 and carried with HLG, which SDR displays show correctly.
 *
 * yuv420p needs even dimensions: an odd width or height is padded by one transparent
 * (black, for mp4) pixel on the right or bottom.
 *
 * Image formats of a local render (`vid render` and `renderComposition` only; the hosted
 * and distributed paths stay video-only):
 * - `png`, a PNG sequence: one RGBA PNG per frame, named by a printf pattern such as
 *   `frames/%05d.png`, the number being the frame index (frame n shows t = n / fps, so the
 *   first file of a whole render is `00000.png`). Every chunk writes its frames into the
 *   same folder, which is the join: no ffmpeg pass after the chunks.
 * - `gif`: chunks write opaque PNG frames the same way; the join is one palette pass over
 *   all of them (palettegen + paletteuse), so the whole GIF shares one 256-colour palette
 *   instead of one per chunk. Frame rate capped at {@linkcode GIF_MAX_FPS}.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import { rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { ffmpegRate, type FrameRate, frameRateValue } from "../composition/frame_rate.ts";

// The format and preset tables belong to the render request (src/request/formats.ts).
import {
  GIF_MAX_FPS,
  OUTPUT_FORMATS,
  type OutputFormat,
  QUALITIES,
  type Quality,
  RENDER_FORMATS,
  type RenderFormat,
} from "../request/formats.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { RenderOptionError } from "../request/errors.ts";
import {
  type ProcessResult,
  type RunningProcess,
  runProcess,
  startProcess,
} from "./process_runner.ts";
export {
  GIF_MAX_FPS,
  OUTPUT_FORMATS,
  type OutputFormat,
  QUALITIES,
  type Quality,
  RENDER_FORMATS,
  type RenderFormat,
};

/** Whether a format is written as numbered PNG frames (the chunk output of gif and png). */
export function isImageSequence(format: RenderFormat): format is "gif" | "png" {
  return format === "gif" || format === "png";
}

/**
 * The format an output path's extension names, `undefined` for a path without an
 * extension. A `.png` path is a PNG sequence only with a frame-number pattern (`%d`,
 * `%05d`) in its file name.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(formatOfPath("out.webm"), "webm");
 * assert.equal(formatOfPath("frames/%05d.png"), "png");
 * assert.equal(formatOfPath("out.mkv"), null); // an extension no format writes
 * ```
 */
export function formatOfPath(path: string): RenderFormat | null | undefined {
  const name = path.split(/[\\/]/).pop() ?? "";
  const dot = name.lastIndexOf(".");
  if (dot <= 0) return undefined;
  const ext = name.slice(dot + 1).toLowerCase();
  return (RENDER_FORMATS as readonly string[]).includes(ext) ? ext as RenderFormat : null;
}

/** Whether a file name holds a printf frame-number pattern (`%d` or `%0Nd`). */
export function hasFramePattern(path: string): boolean {
  return /%0?\d*d/.test(path.split(/[\\/]/).pop() ?? "");
}
/** Whether a format carries an alpha channel (and so is captured as PNG). */
export function hasAlpha(format: RenderFormat): boolean {
  return format !== "mp4" && format !== "gif";
}

/** ffmpeg failed; carries the tail of its log. */
export class EncodeError extends VidError {
  /** Always `"EncodeError"`. */
  override name = "EncodeError";
  /** The output file ffmpeg was writing. */
  override readonly field: string;
  /**
   * Creates the error for one output file.
   *
   * @param message What failed, with the tail of ffmpeg's log.
   * @param output The output file ffmpeg was writing.
   * @param cause The error behind it (ffmpeg could not start), when there is one.
   */
  constructor(message: string, output: string, cause?: unknown) {
    super(message, { exitCode: EXIT_FAILED, cause });
    this.field = output;
  }
}

/**
 * Threads of x264/x265: a constant, since the thread count changes their output (frame
 * threads limit motion search), so machines with different core counts would disagree.
 */
const ENCODER_THREADS = "4";

/** Video codec arguments for a format and quality. */
export function codecArgs(format: OutputFormat, quality: Quality, hdr = false): string[] {
  if (hdr) {
    if (format !== "mp4") {
      throw new RenderOptionError("hdr", `HDR output is mp4 only, not ${format}; render mp4`);
    }
    const preset = { draft: "ultrafast", standard: "veryfast", high: "medium" }[quality];
    const crf = { draft: "28", standard: "22", high: "18" }[quality];
    return [
      "-c:v",
      "libx265",
      "-preset",
      preset,
      "-crf",
      crf,
      "-threads",
      ENCODER_THREADS,
      "-pix_fmt",
      "yuv420p10le",
      "-tag:v",
      "hvc1",
      "-x265-params",
      "colorprim=bt2020:transfer=arib-std-b67:colormatrix=bt2020nc:range=limited:log-level=error",
      "-color_primaries",
      "bt2020",
      "-color_trc",
      "arib-std-b67",
      "-colorspace",
      "bt2020nc",
      "-color_range",
      "tv",
      "-movflags",
      "+faststart",
    ];
  }
  switch (format) {
    case "mp4": {
      const preset = { draft: "ultrafast", standard: "veryfast", high: "medium" }[quality];
      const crf = { draft: "28", standard: "20", high: "16" }[quality];
      return [
        "-c:v",
        "libx264",
        "-preset",
        preset,
        "-crf",
        crf,
        "-threads",
        ENCODER_THREADS,
        "-pix_fmt",
        "yuv420p",
        "-flags",
        "+cgop",
        "-movflags",
        "+faststart",
      ];
    }
    case "webm": {
      const args = {
        draft: ["-deadline", "realtime", "-cpu-used", "8", "-crf", "40"],
        standard: ["-deadline", "realtime", "-cpu-used", "5", "-crf", "32"],
        high: ["-deadline", "good", "-cpu-used", "2", "-crf", "24"],
      }[quality];
      return [
        "-c:v",
        "libvpx-vp9",
        ...args,
        "-b:v",
        "0",
        "-row-mt",
        "1",
        "-pix_fmt",
        "yuva420p",
        "-auto-alt-ref",
        "0",
      ];
    }
    case "mov": {
      const q = { draft: "16", standard: "8", high: "3" }[quality];
      return [
        "-c:v",
        "prores_ks",
        "-profile:v",
        "4444",
        "-qscale:v",
        q,
        "-pix_fmt",
        "yuva444p10le",
        "-vendor",
        "apl0",
      ];
    }
  }
}

/** Options of {@linkcode startEncoder}. */
export interface EncoderOptions {
  ffmpeg: string;
  output: string;
  /** The exact rate, parsed once where the request came in (ffmpeg is told `-r num/den`). */
  frameRate: FrameRate;
  format: RenderFormat;
  quality: Quality;
  width: number;
  height: number;
  /**
   * Number of the first frame file of an image sequence (`output` is then a printf
   * pattern). @default 0
   */
  startNumber?: number;
  /** Image format of the frames written. */
  frameFormat: "jpeg" | "png";
  /** 10-bit HEVC, BT.2020 primaries, HLG transfer (mp4 only). */
  hdr?: boolean;
  /**
   * Final frame size when it differs from the frames written: they are scaled to fit
   * and centred on black (letterbox or pillarbox).
   */
  outputSize?: { width: number; height: number };
  /**
   * Frames per encoder run (one GOP grid cell, `gopFrames` of the rate's value): every run of
   * this many frames, from the first frame written, is encoded by a fresh ffmpeg and the runs
   * are joined into `output`. The first frame written must be on the grid. @default one run
   */
  cellFrames?: number;
  /** Frames that will be written: the next encoder run then starts ahead of its first frame. */
  frames?: number;
}

/** A running ffmpeg process fed one image per frame. */
export interface Encoder {
  /** Writes one encoded image (JPEG or PNG bytes); resolves when ffmpeg took it. */
  write(frame: Uint8Array): Promise<void>;
  /** Closes the input and waits for ffmpeg to finish the file. */
  finish(): Promise<void>;
  /**
   * Kills ffmpeg; resolves once it has exited and its partial files are removed (a late
   * ffmpeg would otherwise write them again after the removal). Safe to call twice.
   */
  abort(): Promise<void>;
}

/**
 * The video filters: fit into the output size; pad odd sizes to even; for HDR, sRGB to
 * BT.2020 10-bit.
 */
function videoFilters(
  width: number,
  height: number,
  hdr: boolean,
  outputSize?: { width: number; height: number },
  even = true,
): string[] {
  const filters: string[] = [];
  if (outputSize && (outputSize.width !== width || outputSize.height !== height)) {
    const { width: w, height: h } = outputSize;
    filters.push(
      `scale=${w}:${h}:force_original_aspect_ratio=decrease:flags=lanczos`,
      `pad=${w}:${h}:(ow-iw)/2:(oh-ih)/2:color=black`,
    );
    width = w;
    height = h;
  }
  if (even && (width % 2 !== 0 || height % 2 !== 0)) {
    filters.push("pad=ceil(iw/2)*2:ceil(ih/2)*2:0:0:color=black@0");
  }
  if (hdr) {
    filters.push(
      "colorspace=all=bt2020:trc=bt2020-10:format=yuv420p10:iall=bt709:itrc=srgb:irange=pc:range=tv",
    );
  }
  return filters.length > 0 ? ["-vf", filters.join(",")] : [];
}

/**
 * For a rational rate in mp4/mov, the movie timescale of the rate's numerator: the
 * default (1000) rounds a chunk of 10 frames at 30000/1001 to 334 ms, the concat demuxer
 * then places the next chunk late and the joined file no longer reads 30000/1001.
 */
function movieTimescale(format: OutputFormat, rate: FrameRate): string[] {
  return rate.den > 1 && (format === "mp4" || format === "mov")
    ? ["-movie_timescale", String(rate.num)]
    : [];
}

/** How long `ffmpeg -version` may take when probed for its timestamp option. */
const VERSION_PROBE_MS = 10_000;

/** Per ffmpeg binary: the option that keeps the input timestamps, probed once. */
const passthroughOption = new Map<string, string>();

/**
 * `-fps_mode passthrough` (ffmpeg 5.1+) or, for an older ffmpeg that refuses it (the static
 * build shipped to Lambda), its former spelling `-vsync passthrough`.
 */
function timestampPassthrough(ffmpeg: string): string[] {
  let option = passthroughOption.get(ffmpeg);
  if (option === undefined) {
    const args = ["-loglevel", "quiet", "-fps_mode", "passthrough", "-version"];
    // Synchronous (the encoder starts synchronously) and outside the process runner: it
    // reads no input, only asks the binary which spelling it takes, under a deadline.
    // `prepareEncoder` makes it the exception: a render session probes ahead through it.
    const probe = spawnSync(ffmpeg, args, { stdio: "ignore", timeout: VERSION_PROBE_MS });
    // Only a refusal (exit 1) switches; a missing binary is reported by the real run.
    option = probe.status === 1 ? "-vsync" : "-fps_mode";
    passthroughOption.set(ffmpeg, option);
  }
  return [option, "passthrough"];
}

/**
 * Finds out ahead of the first encoder run, without blocking, which timestamp option
 * `ffmpeg` takes (see `timestampPassthrough`): the probe starts ffmpeg once (100-200 ms),
 * which a render session runs while its browser starts instead of on the first frame.
 */
export async function prepareEncoder(ffmpeg: string): Promise<void> {
  if (passthroughOption.has(ffmpeg)) return;
  const code = await runProcess(
    ffmpeg,
    ["-loglevel", "quiet", "-fps_mode", "passthrough", "-version"],
    { ignoreStdout: true, timeoutMs: VERSION_PROBE_MS },
  ).then((result) => result.code, () => undefined);
  // Only a refusal (exit 1) switches; a missing binary is reported by the real run.
  if (code !== undefined && !passthroughOption.has(ffmpeg)) {
    passthroughOption.set(ffmpeg, code === 1 ? "-vsync" : "-fps_mode");
  }
}

/** One ffmpeg process encoding the frames written to it into `output`. */
function startRun(options: EncoderOptions, output: string): Encoder {
  const rate = options.frameRate;
  const sequence = isImageSequence(options.format);
  // An image sequence is numbered PNG frames (RGBA for png, opaque for the gif palette
  // pass); a video is one closed-GOP segment.
  const outputArgs = sequence
    ? [
      "-c:v",
      "png",
      "-pix_fmt",
      options.format === "png" ? "rgba" : "rgb24",
      "-f",
      "image2",
      "-start_number",
      String(options.startNumber ?? 0),
    ]
    : [
      ...codecArgs(options.format as OutputFormat, options.quality, options.hdr === true),
      ...movieTimescale(options.format as OutputFormat, rate),
      ...timestampPassthrough(options.ffmpeg),
      // The exact fraction (30000/1001), so the container says 29.97 rather than 2997/100.
      "-r",
      ffmpegRate(rate),
    ];
  const args = [
    "-hide_banner",
    "-loglevel",
    "error",
    "-y",
    "-f",
    "image2pipe",
    "-framerate",
    ffmpegRate(rate),
    "-c:v",
    options.frameFormat === "jpeg" ? "mjpeg" : "png",
    "-i",
    "pipe:0",
    ...videoFilters(
      options.width,
      options.height,
      options.hdr === true,
      options.outputSize,
      !sequence,
    ),
    ...outputArgs,
    output,
  ];
  let failure: Error | undefined;
  let run: RunningProcess;
  try {
    run = startProcess(options.ffmpeg, args, { stdin: true, ignoreStdout: true });
  } catch (error) {
    run = { pid: undefined, stdin: null, done: Promise.reject(error), kill: () => {} };
  }
  const exited = run.done.then(
    (result) => {
      if (result.code !== 0) {
        failure ??= new EncodeError(
          `ffmpeg failed writing ${output} (${result.signal ?? `exit ${result.code}`}): ` +
            result.stderr.trim(),
          output,
        );
      }
    },
    (error) => {
      failure = new EncodeError((error as Error).message, output, error);
    },
  );
  const stdin = run.stdin;
  let aborted: Promise<void> | undefined;
  return {
    write(frame: Uint8Array): Promise<void> {
      if (failure) return Promise.reject(failure);
      if (!stdin) return exited.then(() => Promise.reject(failure));
      return new Promise((resolve, reject) => {
        const ok = stdin.write(frame, (error) => {
          if (error) reject(failure ?? error);
        });
        if (ok) resolve();
        else stdin.once("drain", resolve);
      });
    },
    async finish(): Promise<void> {
      stdin?.end();
      await exited;
      if (failure) throw failure;
    },
    abort(): Promise<void> {
      aborted ??= (() => {
        run.kill();
        return exited;
      })();
      return aborted;
    },
  };
}

/**
 * Starts encoding images written one per frame into `output`: one closed-GOP segment per
 * encoder run (per `cellFrames`), each starting on a keyframe, joined with `-c copy` when
 * the last frame is in. The next run starts while the previous one finishes.
 *
 * @example
 * ```ts no_run
 * const jpegBytes = await Deno.readFile("frame-00000.jpg");
 * const encoder = startEncoder({ ffmpeg: "ffmpeg", output: "chunk.mp4",
 *   frameRate: { num: 30, den: 1 }, format: "mp4", quality: "standard", width: 320,
 *   height: 180, frameFormat: "jpeg", cellFrames: 60 });
 * await encoder.write(jpegBytes);
 * await encoder.finish();
 * ```
 */
export function startEncoder(options: EncoderOptions): Encoder {
  const cellFrames = options.cellFrames;
  // An image sequence is already one file per frame: no cells to cut or join.
  if (cellFrames === undefined || isImageSequence(options.format)) {
    return startRun(options, options.output);
  }
  if (!Number.isInteger(cellFrames) || cellFrames < 1) {
    throw new RangeError(`cellFrames must be a positive integer, got ${cellFrames}`);
  }
  const dir = dirname(resolve(options.output));
  const name = basename(options.output);
  const cells: { file: string; frames: number; run: Encoder; finished?: Promise<void> }[] = [];
  const startCell = (): (typeof cells)[number] => {
    const file = join(dir, `.${name}.cell-${cells.length}.${options.format}`);
    const cell = { file, frames: 0, run: startRun(options, file) };
    cells.push(cell);
    return cell;
  };
  const removeCells = () => Promise.all(cells.map((c) => rm(c.file, { force: true })));
  /** Kills every run and waits until each has exited. */
  const abortAll = async (): Promise<void> => {
    await Promise.all(cells.map((c) => c.run.abort()));
  };
  let aborted: Promise<void> | undefined;
  let written = 0;
  // ffmpeg takes 100-200 ms to start: every run is started ahead, the first one now and
  // each next one when the previous cell is full, so it starts while the next frame is
  // captured. Without `frames` the run after a full cell is started on its first frame.
  let current: (typeof cells)[number] | undefined = startCell();
  const endCell = (): void => {
    const done = current!;
    done.finished = done.run.finish();
    // Reported by finish(); unhandled until then.
    done.finished.catch(() => {});
    current = undefined;
  };
  return {
    async write(frame: Uint8Array): Promise<void> {
      // No run is started once aborted: its cell would outlive the removal.
      if (aborted) throw new EncodeError("the encoder was aborted", options.output);
      if (current && current.frames === cellFrames) endCell();
      current ??= startCell();
      current.frames++;
      written++;
      await current.run.write(frame);
      if (current.frames === cellFrames && options.frames !== undefined) {
        endCell();
        if (written < options.frames) current = startCell();
      }
    },
    async finish(): Promise<void> {
      try {
        if (current && current.frames === 0) {
          // Started ahead for frames that never came.
          const unused = cells.pop()!;
          await unused.run.abort();
          await rm(unused.file, { force: true });
        } else if (current) current.finished = current.run.finish();
        await Promise.all(cells.map((c) => c.finished));
        if (cells.length === 1) {
          await rename(cells[0].file, options.output);
        } else if (cells.length > 1) {
          await concatChunks(
            options.ffmpeg,
            cells.map((c) => c.file),
            join(dir, `.${name}.cells.txt`),
            options.output,
            options.format as OutputFormat,
            { fps: frameRateValue(options.frameRate), frames: cells.map((c) => c.frames) },
          );
          await rm(join(dir, `.${name}.cells.txt`), { force: true });
        }
      } catch (error) {
        await abortAll();
        throw error;
      } finally {
        await removeCells();
      }
    },
    abort(): Promise<void> {
      // Files are removed only once every ffmpeg has exited: one still running could
      // create its cell again after the removal.
      aborted ??= abortAll().then(removeCells).then(() => undefined);
      return aborted;
    },
  };
}

/**
 * Runs ffmpeg with `args` to completion (through the process runner: tracked, as the
 * process policy's user and limits); rejects with its log on failure, and with the
 * signal's reason (ffmpeg killed) when `signal` aborts.
 *
 * @example
 * ```ts no_run
 * await runFfmpeg("ffmpeg", ["-i", "in.mp4", "-frames:v", "1", "still.jpg"], "still.jpg");
 * ```
 */
export async function runFfmpeg(
  ffmpeg: string,
  args: string[],
  output: string,
  options: { signal?: AbortSignal } = {},
): Promise<void> {
  let result: ProcessResult;
  try {
    result = await runProcess(ffmpeg, ["-hide_banner", "-loglevel", "error", "-y", ...args], {
      signal: options.signal,
      ignoreStdout: true,
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new EncodeError((error as Error).message, output, error);
  }
  if (result.code !== 0) {
    throw new EncodeError(
      `ffmpeg failed writing ${output} (${result.signal ?? `exit ${result.code}`}): ` +
        result.stderr.trim(),
      output,
    );
  }
}

/** Frame counts of the files joined by {@linkcode concatChunks}, for exact timestamps. */
export interface ConcatTiming {
  /** Frames per second of every file. */
  fps: number;
  /** Frames of each file, in order. */
  frames: number[];
}

/**
 * The concat demuxer's list: every file but the last with its `duration`, computed from
 * the frames before and after it (rounded to the microsecond once, never accumulated), so
 * file k starts exactly at its first frame's time. Without it the demuxer uses each file's
 * container duration, which is rounded (an mp4's to the millisecond: +0.65 ms per join
 * with 100-frame chunks at 30 fps).
 */
export function concatList(files: string[], timing?: ConcatTiming): string {
  const micros = (frames: number) => Math.round(frames * 1e6 / timing!.fps);
  let before = 0;
  return files.map((file, i) => {
    const line = `file '${file.replaceAll("'", "'\\''")}'\n`;
    if (!timing || i === files.length - 1) return line;
    const after = before + timing.frames[i];
    const duration = (micros(after) - micros(before)) / 1e6;
    before = after;
    return `${line}duration ${duration.toFixed(6)}\n`;
  }).join("");
}

/**
 * Joins chunk files (same codec and settings) into `output` with the concat demuxer and
 * `-c copy`: no re-encode, so chunk seams are bit-exact. With `timing`, timestamps at the
 * joins are exact (see {@linkcode concatList}).
 */
export async function concatChunks(
  ffmpeg: string,
  chunkFiles: string[],
  listFile: string,
  output: string,
  format: OutputFormat,
  timing?: ConcatTiming,
  signal?: AbortSignal,
): Promise<void> {
  await writeFile(listFile, concatList(chunkFiles, timing));
  await runFfmpeg(
    ffmpeg,
    [
      "-f",
      "concat",
      "-safe",
      "0",
      "-i",
      listFile,
      "-c",
      "copy",
      // The copied stream would carry the first chunk's bit rate, which the MP4 muxer writes
      // as the maximum in `btrt` when it exceeds the whole video's average: the same frames
      // cut into other chunks (a server's --chunk-size, another machine's core count) would
      // differ in that one field. Without it the muxer writes the video's own average.
      ...(format === "mp4" || format === "mov" ? ["-b:v", "0", "-movflags", "+faststart"] : []),
      output,
    ],
    output,
    { signal },
  );
}

/**
 * Encodes numbered PNG frames (a printf `pattern` from `startNumber`) into one animated GIF
 * that loops forever, with a palette generated from all the frames (palettegen) and
 * applied with dithering (paletteuse): the join of a GIF render's chunks.
 *
 * @example
 * ```ts no_run
 * await encodeGif("ffmpeg", { pattern: "work/%05d.png", startNumber: 0, rate: "25",
 *   output: "out.gif" });
 * ```
 */
export async function encodeGif(
  ffmpeg: string,
  options: {
    pattern: string;
    startNumber: number;
    rate: string;
    output: string;
    /** Ends the run (ffmpeg killed) when it aborts. */
    signal?: AbortSignal;
  },
): Promise<void> {
  await runFfmpeg(
    ffmpeg,
    [
      "-framerate",
      options.rate,
      "-start_number",
      String(options.startNumber),
      "-i",
      options.pattern,
      "-filter_complex",
      "[0:v]split[a][b];[a]palettegen=stats_mode=full[p];[b][p]paletteuse=dither=sierra2_4a",
      "-loop",
      "0",
      "-f",
      "gif",
      options.output,
    ],
    options.output,
    { signal: options.signal },
  );
}
