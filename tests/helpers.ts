/**
 * Shared test helpers: run the `vid` command as a user would, build small fixture
 * projects, and inspect produced videos with ffprobe/ffmpeg (frame counts, pixel
 * colours, per-frame hashes).
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { sleep } from "../src/util/async.ts";

/** Repository root. */
export const ROOT: string = fileURLToPath(new URL("../", import.meta.url));

/** Result of running a command. */
export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * The PostgreSQL database of each server data folder, while the server tests run against
 * PostgreSQL (see `tests/server_process.ts`): a `vid` command given `--data-dir <dir>` of
 * one gets its URL in `VID_DATABASE_URL`, as an operator's environment would give it.
 */
export const SERVER_DATABASES: Map<string, string> = new Map();

function databaseEnv(args: string[]): Record<string, string> {
  const dir = args[args.indexOf("--data-dir") + 1];
  const url = args.includes("--data-dir") ? SERVER_DATABASES.get(dir) : undefined;
  return url === undefined ? {} : { VID_DATABASE_URL: url };
}

/** Runs `vid <args>` (deno run -A cli.ts) from the repository root. */
export async function runVid(
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<RunResult> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, ...args],
    cwd: options.cwd ?? ROOT,
    env: { NO_COLOR: "1", ...databaseEnv(args), ...options.env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** Options of {@linkcode compositionHtml}. */
export interface FixtureOptions {
  id?: string;
  width?: number;
  height?: number;
  duration?: number;
  /** Declarations for `data-composition-variables`. */
  variables?: unknown[];
  /** Extra markup for `<head>` (styles, scripts). */
  head?: string;
  /** Markup after the composition root (plain scripts). */
  after?: string;
}

/** A full composition page whose root holds `body`. */
export function compositionHtml(body: string, options: FixtureOptions = {}): string {
  const width = options.width ?? 320;
  const height = options.height ?? 180;
  const declarations = options.variables
    ? ` data-composition-variables='${JSON.stringify(options.variables).replaceAll("'", "&#39;")}'`
    : "";
  return `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: ${width}px; height: ${height}px; overflow: hidden; background: #000; }
#root { position: relative; width: ${width}px; height: ${height}px; }
</style>${options.head ?? ""}</head>
<body><div id="root" data-composition-id="${
    options.id ?? "fixture"
  }" data-width="${width}" data-height="${height}" data-duration="${
    options.duration ?? 1
  }"${declarations}>${body}</div>${options.after ?? ""}</body></html>`;
}

/** Writes a project directory with `index.html` and extra files; returns its path. */
export async function makeProject(
  html: string,
  files: Record<string, string | Uint8Array> = {},
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "vid-test-" });
  await Deno.writeTextFile(`${dir}/index.html`, html);
  for (const [name, content] of Object.entries(files)) {
    const path = `${dir}/${name}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    if (typeof content === "string") await Deno.writeTextFile(path, content);
    else await Deno.writeFile(path, content);
  }
  return dir;
}

async function run(cmd: string, args: string[]): Promise<Uint8Array> {
  const output = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (output.code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(output.stderr)}`);
  }
  return output.stdout;
}

/**
 * The lavfi graph of a 320x180 test clip whose frame k has luma 16 + 3 * ((7k + 30) mod 60):
 * neighbouring frames differ by 20+ grey levels and 60 frames in a row are distinct, so an
 * off-by-one frame cannot pass a check of its grey.
 */
export function indexedClip(fps: number, seconds: number): string {
  return `color=black:s=320x180:r=${fps}:d=${seconds},format=yuv444p,` +
    `geq=lum='16+3*mod(N*7+30\\,60)':cb=128:cr=128`;
}

/**
 * Writes `output` from ffmpeg's lavfi source `graph` (test media: clips, tones, stills),
 * with `args` before the output name (codec, frame count); throws with ffmpeg's stderr.
 */
export async function lavfi(graph: string, output: string, args: string[] = []): Promise<void> {
  await run("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", graph, ...args, output]);
}

/** What ffprobe says of a video's first video stream. */
export interface VideoInfo {
  codec: string;
  pixFmt: string;
  width: number;
  height: number;
  /** Frames decoded (counted, not estimated). */
  frames: number;
  /** Frame rate as a number. */
  fps: number;
  /** Container duration in seconds. */
  duration: number;
  /** Whether an audio stream exists. */
  hasAudio: boolean;
  /** The container format names. */
  formatName: string;
}

/** Probes a video with ffprobe, counting frames. */
export async function probeVideo(file: string): Promise<VideoInfo> {
  const out = await run("ffprobe", [
    "-v",
    "error",
    "-count_frames",
    "-show_entries",
    "stream=codec_type,codec_name,pix_fmt,width,height,nb_read_frames,r_frame_rate:format=duration,format_name",
    "-of",
    "json",
    file,
  ]);
  const json = JSON.parse(new TextDecoder().decode(out)) as {
    streams: Record<string, string | number>[];
    format: { duration: string; format_name: string };
  };
  const video = json.streams.find((s) => s.codec_type === "video")!;
  const [num, den] = String(video.r_frame_rate).split("/").map(Number);
  return {
    codec: String(video.codec_name),
    pixFmt: String(video.pix_fmt),
    width: Number(video.width),
    height: Number(video.height),
    frames: Number(video.nb_read_frames),
    fps: num / den,
    duration: Number(json.format.duration),
    hasAudio: json.streams.some((s) => s.codec_type === "audio"),
    formatName: json.format.format_name,
  };
}

/** An RGB(A) colour. */
export type Rgba = [number, number, number, number];

/**
 * The colour of pixel (x, y) in every frame, in frame order. `alpha` decodes with the
 * alpha channel (webm VP9 needs the libvpx decoder for it).
 */
export async function pixelSeries(
  file: string,
  x: number,
  y: number,
  options: { alpha?: boolean } = {},
): Promise<Rgba[]> {
  const decoder = options.alpha && file.endsWith(".webm") ? ["-c:v", "libvpx-vp9"] : [];
  const raw = await run("ffmpeg", [
    "-v",
    "error",
    ...decoder,
    "-i",
    file,
    "-vf",
    `format=rgba,crop=1:1:${x}:${y}`,
    "-f",
    "rawvideo",
    "-pix_fmt",
    "rgba",
    "-",
  ]);
  const colours: Rgba[] = [];
  for (let i = 0; i + 3 < raw.length; i += 4) {
    colours.push([raw[i], raw[i + 1], raw[i + 2], raw[i + 3]]);
  }
  return colours;
}

/** Per-frame MD5 of the decoded pictures (ffmpeg's framemd5), in frame order. */
export async function frameHashes(file: string): Promise<string[]> {
  const out = new TextDecoder().decode(
    await run("ffmpeg", ["-v", "error", "-i", file, "-map", "0:v:0", "-f", "framemd5", "-"]),
  );
  return out.split("\n").filter((l) => l && !l.startsWith("#")).map((l) =>
    l.split(",").at(-1)!.trim()
  );
}

/** RGB bytes (rgb24) of every frame of a `width` x `height` video, in frame order. */
export async function rgbFrames(
  file: string,
  width: number,
  height: number,
): Promise<Uint8Array[]> {
  const raw = await run("ffmpeg", [
    "-v",
    "error",
    "-i",
    file,
    "-f",
    "rawvideo",
    "-pix_fmt",
    "rgb24",
    "-",
  ]);
  const size = width * height * 3;
  const frames: Uint8Array[] = [];
  for (let at = 0; at + size <= raw.length; at += size) frames.push(raw.subarray(at, at + size));
  return frames;
}

/**
 * How far apart two RGB images of one size are: the mean absolute difference per channel,
 * and the share of pixels off by more than 48 on some channel.
 */
export function imageDifference(a: Uint8Array, b: Uint8Array): { mean: number; share: number } {
  if (a.length !== b.length) throw new Error(`images of ${a.length} and ${b.length} bytes`);
  let sum = 0;
  let off = 0;
  for (let i = 0; i < a.length; i += 3) {
    let worst = 0;
    for (let c = 0; c < 3; c++) {
      const d = Math.abs(a[i + c] - b[i + c]);
      sum += d;
      worst = Math.max(worst, d);
    }
    if (worst > 48) off++;
  }
  return { mean: sum / a.length, share: off / (a.length / 3) };
}

/** Whether two colours are within `tolerance` on every channel. */
export function near(a: readonly number[], b: readonly number[], tolerance = 8): boolean {
  return a.every((v, i) => i >= b.length || Math.abs(v - b[i]) <= tolerance);
}

/** Asserts-friendly description of a colour. */
export function rgb(c: readonly number[]): string {
  return `rgb(${c.slice(0, 3).join(", ")})`;
}

/**
 * A page where each video's first seek gets stuck: its frames are reported only once it has
 * been seeked again (seen on a fresh page under load in CI, where the seeked frame showed
 * only after the next seek). It counts each video's seeks in `video.dataset.seeks`.
 */
export const STUCK_UNTIL_RESEEKED: string = `<script>
(() => {
  const real = HTMLVideoElement.prototype.requestVideoFrameCallback;
  const seeks = new WeakMap();
  document.addEventListener("seeking", (event) => {
    seeks.set(event.target, (seeks.get(event.target) ?? 0) + 1);
    event.target.dataset.seeks = String(seeks.get(event.target));
  }, true);
  HTMLVideoElement.prototype.requestVideoFrameCallback = function (callback) {
    const video = this;
    const forward = (now, meta) => {
      if ((seeks.get(video) ?? 0) < 2) return real.call(video, forward);
      callback(now, meta);
    };
    return real.call(video, forward);
  };
})();
</script>`;

/** `gsap.min.js` from the repository's npm dependencies (installed by `deno install`). */
export async function gsapSource(): Promise<string> {
  const find = async (): Promise<string | undefined> => {
    const candidates = [`${ROOT}node_modules/gsap/dist/gsap.min.js`];
    try {
      for await (const entry of Deno.readDir(`${ROOT}node_modules/.deno`)) {
        if (entry.name.startsWith("gsap@")) {
          candidates.push(
            `${ROOT}node_modules/.deno/${entry.name}/node_modules/gsap/dist/gsap.min.js`,
          );
        }
      }
    } catch {
      // no node_modules yet
    }
    for (const path of candidates) {
      try {
        return await Deno.readTextFile(path);
      } catch {
        // try the next one
      }
    }
    return undefined;
  };
  let source = await find();
  if (source === undefined) {
    await new Deno.Command(Deno.execPath(), {
      args: ["install", "--quiet"],
      cwd: ROOT,
      stdout: "null",
      stderr: "null",
    }).output();
    source = await find();
  }
  if (source === undefined) {
    throw new Error("gsap.min.js not found under node_modules: run `deno install`");
  }
  return source;
}

/** Options of {@linkcode waitFor}. */
export interface WaitOptions {
  /** How long to keep checking, from the call. @default 30000 */
  timeoutMs?: number;
  /** The pause between two checks. @default 100 */
  intervalMs?: number;
}

/**
 * Checks `check` until it returns something other than `false`, `undefined` or `null`, and
 * returns that; past the deadline it throws an error naming `what` and the time waited. The
 * one way tests wait for something to happen: a fixed sleep guesses how long it takes, which
 * is too long on an idle machine and too short on a loaded one. A check that throws ends the
 * wait with its error.
 *
 * @example
 * ```ts no_run
 * const info = await waitFor(
 *   "the video to be written",
 *   () => Deno.stat("renders/out.mp4").catch(() => undefined),
 *   { timeoutMs: 60_000 },
 * );
 * console.log(info.size);
 * ```
 */
export async function waitFor<T>(
  what: string,
  check: () => T | Promise<T>,
  options: WaitOptions = {},
): Promise<Exclude<T, false | undefined | null>> {
  const { timeoutMs = 30_000, intervalMs = 100 } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== false && value !== undefined && value !== null) {
      return value as Exclude<T, false | undefined | null>;
    }
    if (Date.now() >= deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    }
    await sleep(intervalMs);
  }
}
