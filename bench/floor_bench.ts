/**
 * The floor: the least CPU per frame a BeginFrame-capture renderer (vid, HyperFrames) can
 * spend on a composition at given x264 settings on this machine, measured part by part
 * with vid's own render parts, so that a goal such as "half of HyperFrames' CPU per frame"
 * can be checked against what the parts alone cost:
 *
 * - `draw`: Chromium seeking and drawing every frame (BeginFrame without a screenshot):
 *   script, style, layout, paint, raster and compositing, nothing read back;
 * - `capture`: the same with the JPEG screenshot vid hands to ffmpeg (q80, as vid and
 *   HyperFrames capture): the draw plus the readback, the JPEG encode and the CDP transfer;
 * - `decode`: ffmpeg turning those JPEGs into yuv420p frames, nothing encoded;
 * - `encode`: x264 alone on those raw yuv420p frames with vid's arguments for the quality
 *   (`codecArgs`), one GOP per second as vid's encoder runs have.
 *
 * `draw + encode` is the floor of any renderer that paints with Chromium and encodes with
 * x264: nothing is read back or handed over. `capture + decode + encode` is the floor of
 * the JPEG hand-off both tools use; vid's whole-command CPU per frame can be compared with
 * it to see what vid adds. CPU is sampled from /proc by role (bench/proc_cpu.ts).
 *
 * ```sh
 * deno run -A bench/floor_bench.ts bench/fixtures/peer_css        # the composition folder
 * deno run -A bench/floor_bench.ts <dir> --quality high --json
 * ```
 *
 * bench/peer_bench.ts runs it on its compositions with `--floor`.
 *
 * @module
 */

import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { readComposition } from "../src/composition/composition.ts";
import type { Quality } from "../src/request/formats.ts";
import { closePage, navigate, openPage } from "../src/render/browser.ts";
import type { CdpSession } from "../src/render/cdp.ts";
import { type Capturer, createCapturer, seekFrame } from "../src/render/capture.ts";
import { launchForCapture } from "../src/render/capture_mode.ts";
import { gopFrames } from "../src/render/chunk_plan.ts";
import { codecArgs } from "../src/render/encode.ts";
import { serveProject } from "../src/render/serve.ts";
import { requireFfmpeg } from "../src/render/system.ts";
import { runtimeScript } from "../src/runtime/page_runtime.ts";
import { type CpuByRole, sampleTree, timedRun } from "./proc_cpu.ts";
import { describeHost, hostLine } from "./host.ts";

/** CPU milliseconds per frame of each part, and the two floors built from them. */
export interface FloorFigures {
  frames: number;
  width: number;
  height: number;
  /** Chromium, BeginFrame without a screenshot. */
  draw: number;
  /** Chromium, BeginFrame with the JPEG screenshot. */
  capture: number;
  /** The same two, by Chromium process role. */
  drawByRole: CpuByRole;
  captureByRole: CpuByRole;
  /** ffmpeg decoding the JPEGs to yuv420p. */
  decode: number;
  /** x264 alone on raw yuv420p frames. */
  encode: number;
  /** draw + encode: paint and encode, nothing read back or handed over. */
  paintAndEncodeFloor: number;
  /** capture + decode + encode: the JPEG hand-off's floor. */
  jpegHandOffFloor: number;
}

const FPS = 30;
const CHROMIUM_ROLES = new Set(["browser", "renderer", "gpu", "chromium other"]);

/** Chromium's CPU ms per frame by role, from seconds sampled over `frames` frames. */
function chromiumPerFrame(cpu: CpuByRole, frames: number): { total: number; byRole: CpuByRole } {
  const byRole: CpuByRole = {};
  for (const [role, seconds] of Object.entries(cpu)) {
    if (CHROMIUM_ROLES.has(role)) byRole[role] = seconds * 1000 / frames;
  }
  return { total: Object.values(byRole).reduce((a, b) => a + b, 0), byRole };
}

/** Seeks every frame of a fresh window and runs `draw` on it; returns Chromium's CPU. */
async function framesPass(
  open: () => Promise<CdpSession>,
  frames: number,
  draw: (page: CdpSession, frame: number) => Promise<void>,
): Promise<{ total: number; byRole: CpuByRole }> {
  const page = await open();
  try {
    const sampler = sampleTree(Deno.pid, true);
    for (let frame = 0; frame < frames; frame++) {
      await seekFrame(page, frame);
      await draw(page, frame);
    }
    return chromiumPerFrame(sampler.stop(), frames);
  } finally {
    await closePage(page).catch(() => undefined);
  }
}

/**
 * Measures the parts of a render of `dir` (its first `seconds`, at 30 fps) at `quality`.
 *
 * @example
 * ```ts no_run
 * const floor = await measureFloor("bench/fixtures/peer_css", "high");
 * console.log(`${floor.paintAndEncodeFloor.toFixed(0)} CPU ms per frame at least`);
 * ```
 */
export async function measureFloor(
  dir: string,
  quality: Quality,
  seconds = 5,
): Promise<FloorFigures> {
  const composition = await readComposition(dir);
  const frames = Math.round(Math.min(seconds, composition.duration) * FPS);
  const { width, height } = composition;
  const ffmpeg = await requireFfmpeg();
  const work = await mkdtemp(join(tmpdir(), "vid-floor-"));
  try {
    const chromium = await chromiumParts(dir, width, height, frames, work);
    const ffmpegParts = await encoderParts(ffmpeg, quality, width, height, frames, work);
    return {
      frames,
      width,
      height,
      ...chromium,
      ...ffmpegParts,
      paintAndEncodeFloor: chromium.draw + ffmpegParts.encode,
      jpegHandOffFloor: chromium.capture + ffmpegParts.decode + ffmpegParts.encode,
    };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** Chromium's draw-only and capture passes over `frames` frames; the JPEGs go to `work`. */
async function chromiumParts(
  dir: string,
  width: number,
  height: number,
  frames: number,
  work: string,
): Promise<Pick<FloorFigures, "draw" | "capture" | "drawByRole" | "captureByRole">> {
  const server = await serveProject(dir);
  const browser = await launchForCapture("beginframe");
  try {
    const open = async (): Promise<CdpSession> => {
      const page = await openPage(browser, {
        width,
        height,
        initScript: runtimeScript({
          variables: {},
          seed: 1,
          epochMs: 0,
          fps: FPS,
          readyTimeoutMs: 30000,
        }),
      });
      await navigate(page, server.url + "index.html");
      return page;
    };
    let capturer: Capturer | undefined;
    const capture = await framesPass(open, frames, async (page, frame) => {
      capturer ??= createCapturer(page, { mode: "beginframe", format: "jpeg", fps: FPS });
      const image = await capturer.capture();
      await writeFile(join(work, `f${String(frame).padStart(5, "0")}.jpg`), image);
    });
    // Its own tick range, after every tick the capture pass used (ticks only move forward).
    let ticks = 1e9;
    const draw = await framesPass(open, frames, async (page) => {
      ticks += 1000 / FPS;
      await page.send("HeadlessExperimental.beginFrame", {
        frameTimeTicks: ticks,
        interval: 1000 / FPS,
      });
    });
    return {
      draw: draw.total,
      capture: capture.total,
      drawByRole: draw.byRole,
      captureByRole: capture.byRole,
    };
  } finally {
    await browser.close();
    await server.close();
  }
}

/** ffmpeg's decode of the JPEGs in `work`, and x264 alone on the decoded frames. */
async function encoderParts(
  ffmpeg: string,
  quality: Quality,
  width: number,
  height: number,
  frames: number,
  work: string,
): Promise<Pick<FloorFigures, "decode" | "encode">> {
  const ffmpegMs = async (args: string[]): Promise<number> => {
    const command = [ffmpeg, "-hide_banner", "-loglevel", "error", "-y", ...args];
    const run = await timedRun(command, { PATH: Deno.env.get("PATH") ?? "" }, work);
    return run.cpuSeconds * 1000 / frames;
  };
  const raw = join(work, "frames.yuv");
  const jpegs = ["-framerate", String(FPS), "-i", join(work, "f%05d.jpg")];
  const decode = await ffmpegMs([...jpegs, "-pix_fmt", "yuv420p", "-f", "rawvideo", raw]);
  const encode = await ffmpegMs([
    ...["-f", "rawvideo", "-pix_fmt", "yuv420p", "-s", `${width}x${height}`],
    ...["-framerate", String(FPS), "-i", raw],
    ...codecArgs("mp4", quality),
    ...["-g", String(gopFrames(FPS)), join(work, "out.mp4")],
  ]);
  return { decode, encode };
}

/** The floor as lines of text. */
export function floorText(name: string, f: FloorFigures): string {
  const roles = (r: CpuByRole) =>
    Object.entries(r).map(([role, ms]) => `${role} ${ms.toFixed(0)}`).join(", ");
  return [
    `${name} (${f.width}x${f.height}, ${f.frames} frames), CPU ms per frame:`,
    `  Chromium, draw only (no readback)      ${f.draw.toFixed(0).padStart(4)}  (${
      roles(f.drawByRole)
    })`,
    `  Chromium, draw + JPEG screenshot       ${f.capture.toFixed(0).padStart(4)}  (${
      roles(f.captureByRole)
    })`,
    `  ffmpeg, JPEG decode to yuv420p         ${f.decode.toFixed(0).padStart(4)}`,
    `  ffmpeg, x264 alone on raw frames       ${f.encode.toFixed(0).padStart(4)}`,
    `  floor, paint + encode                  ${f.paintAndEncodeFloor.toFixed(0).padStart(4)}`,
    `  floor, JPEG hand-off                   ${f.jpegHandOffFloor.toFixed(0).padStart(4)}`,
  ].join("\n");
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      quality: { type: "string", default: "high" },
      seconds: { type: "string", default: "5" },
      json: { type: "boolean", default: false },
    },
  });
  const dir = positionals[0];
  const quality = values.quality as Quality;
  if (!dir) throw new Error("usage: floor_bench.ts <composition dir> [--quality high] [--json]");
  if (!["draft", "standard", "high"].includes(quality)) {
    throw new Error("--quality must be draft, standard or high");
  }
  const floor = await measureFloor(dir, quality, Number(values.seconds));
  const host = await describeHost();
  console.log(
    values.json
      ? JSON.stringify({ ...floor, host })
      : `${floorText(dir, floor)}\n${hostLine(host)}`,
  );
}
