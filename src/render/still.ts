/**
 * Stills: one frame of a composition as a PNG or JPEG image, exactly as that frame
 * appears in the video. `vid still` and the hosted server's `thumbnail_url` use it.
 *
 * A PNG keeps the page's transparency, as a PNG sequence does (a poster laid over
 * something else needs it); `background` flattens it onto a colour. A JPEG has no alpha
 * channel, so it is flattened on white, the browser's own page background.
 *
 * @module
 */

import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, extname, join, resolve } from "node:path";
import type { CaptureMode } from "./browser.ts";
import { createCapturer, evaluate, seekFrame } from "./capture.ts";
import { assertTextShown } from "./text_check.ts";
import type { CdpSession } from "./cdp.ts";
import type { CapturePreference } from "./capture_mode.ts";
import {
  formatFrameRate,
  frameCountOf,
  type FrameRate,
  frameRateValue,
  frameTime,
} from "../composition/frame_rate.ts";
import { renderFrameRate } from "./render.ts";
import { RenderOptionError } from "../request/errors.ts";
import { checkOption, flagOf, OPTIONS } from "../request/options.ts";
import { checkFrameOrTime, scaledSize } from "../request/rules.ts";
import { fastForward, frameUnderDeadline, openComposition } from "./render_chunk.ts";
import { type CompositionSource, openRenderSession, prepareComposition } from "./session.ts";

/** Options of {@linkcode renderStill}. */
export interface StillOptions extends CompositionSource {
  /** Frame to capture (0-based). Give `frame` or `time`, not both. @default 0 */
  frame?: number;
  /** Time in seconds; the frame shown then, floor(time x fps). */
  time?: number;
  /**
   * Frame rate used to turn `time` into a frame: an integer, a decimal (`29.97` =
   * 30000/1001) or a fraction (`"30000/1001"`). @default the composition's data-fps, else 30
   */
  fps?: number | string;
  /** `.png` or `.jpg`/`.jpeg`. @default "renders/<composition-id>-<frame>.png" */
  output?: string;
  /** JPEG quality 1-100. @default 90 */
  jpegQuality?: number;
  /**
   * Device pixels per CSS pixel, 1-4: the image is the composition's size times the scale,
   * drawn at that size. @default 1
   */
  scale?: number;
  /**
   * A CSS colour a PNG is flattened onto where the page is transparent.
   * @default none: a PNG keeps the page's transparency; a JPEG is flattened on white
   */
  background?: string;
  /** Capture path. @default "auto" */
  capture?: CapturePreference;
  /** Seed of the page's `Math.random`. @default 1 */
  seed?: number;
  /** `Date.now()` at time 0. @default the still's start time, whole seconds */
  epochMs?: number;
  /**
   * Keep the render off private networks, for renders of other people's compositions
   * (`vid server`, the Lambda worker): the page, its iframes, fetch/XHR, WebSocket,
   * every redirect hop and all media downloads reach public addresses only, plus the
   * render's own project files. @default false
   */
  blockPrivateNetwork?: boolean;
  /**
   * The host's deadline of the frame's seek and capture, milliseconds: past it the page
   * counts as hung, its browser is killed and the still fails with `FrameTimeoutError`.
   * @default 30000
   */
  frameTimeoutMs?: number;
}

/** What {@linkcode renderStill} wrote. */
export interface StillResult {
  /** Path of the image written. */
  output: string;
  /** The composition's `data-composition-id`. */
  compositionId: string;
  /** The frame captured (0-based). */
  frame: number;
  /** Seconds: frame × den / num of the frame rate. */
  time: number;
  /** Image width in pixels. */
  width: number;
  /** Image height in pixels. */
  height: number;
  /** Image format, from the output's extension. */
  imageFormat: "png" | "jpeg";
  /** Size of the image file. */
  bytes: number;
  /** Capture path used: BeginFrame or screenshots. */
  captureMode: CaptureMode;
}

function imageFormatOf(output: string): "png" | "jpeg" {
  const ext = extname(output).toLowerCase();
  if (ext === ".png") return "png";
  if (ext === ".jpg" || ext === ".jpeg") return "jpeg";
  throw new RenderOptionError(
    "output",
    `a still is written as .png, .jpg or .jpeg, got "${basename(output)}"`,
    flagOf(OPTIONS.output),
  );
}

/** Resolves `frame`/`time` to a frame number inside the composition. */
function pickFrame(options: StillOptions, total: number, rate: FrameRate): number {
  checkFrameOrTime(options.frame, options.time);
  let frame = options.frame ?? 0;
  if (options.time !== undefined) {
    checkOption(OPTIONS.time, options.time);
    frame = Math.floor((options.time * rate.num) / rate.den + 1e-9);
  }
  if (!Number.isInteger(frame) || frame < 0 || frame >= total) {
    const picked = options.time !== undefined ? OPTIONS.time : OPTIONS.frame;
    throw new RenderOptionError(
      picked.key,
      `is outside the composition: it has frames 0-${total - 1} (${
        frameTime(total, rate).toFixed(3)
      } s at ${formatFrameRate(rate)} fps), got frame ${frame}`,
      flagOf(picked),
    );
  }
  return frame;
}

/**
 * Makes `color` the colour behind the page, where the page is transparent. The browser
 * turns the CSS colour into RGBA (a 1-pixel canvas), so every CSS colour form works.
 */
async function paintBehindPage(page: CdpSession, color: string): Promise<void> {
  const rgba = await evaluate(
    page,
    `(() => { const c = document.createElement("canvas").getContext("2d");
      c.fillStyle = ${JSON.stringify(color)}; c.fillRect(0, 0, 1, 1);
      return Array.from(c.getImageData(0, 0, 1, 1).data); })()`,
  ) as number[];
  await page.send("Emulation.setDefaultBackgroundColorOverride", {
    color: { r: rgba[0], g: rgba[1], b: rgba[2], a: rgba[3] / 255 },
  });
}

/**
 * Renders one frame to an image file.
 *
 * @example
 * ```ts no_run
 * const still = await renderStill({ target: "examples/hello", time: 2.5, output: "poster.png" });
 * console.log(still.frame); // 75
 * ```
 */
export async function renderStill(options: StillOptions = {}): Promise<StillResult> {
  renderFrameRate(options.fps, undefined);
  checkOption(OPTIONS.frameTimeoutMs, options.frameTimeoutMs);
  const quality = checkOption(OPTIONS.jpegQuality, options.jpegQuality) ??
    OPTIONS.jpegQuality.default;
  const background = checkOption(OPTIONS.background, options.background);
  if (options.output !== undefined) imageFormatOf(options.output);
  const scale = checkOption(OPTIONS.scale, options.scale) ?? OPTIONS.scale.default!;
  const prepared = await prepareComposition(options);
  const { composition } = prepared;
  const size = scaledSize(composition, scale);
  const rate = renderFrameRate(options.fps, composition.fps);
  const fps = frameRateValue(rate);
  const frame = pickFrame(options, frameCountOf(composition.duration, rate), rate);
  const output = resolve(
    options.output ?? join("renders", `${composition.id}-${frame}.png`),
  );
  const imageFormat = imageFormatOf(output);
  const session = await openRenderSession({
    prepared,
    frameRate: rate,
    // A PNG is captured from a transparent page (as a PNG sequence is); a JPEG from an
    // opaque one, on white.
    format: imageFormat === "png" ? "png" : "mp4",
    capture: options.capture,
    seed: options.seed,
    epochMs: options.epochMs,
    ...(scale !== 1 ? { outputSize: size } : {}),
    blockPrivateNetwork: options.blockPrivateNetwork,
    frameTimeoutMs: options.frameTimeoutMs,
    onWarning: options.onWarning,
  });
  try {
    const page = session.takePage() ?? await openComposition(session.browser, session.spec);
    let image: Uint8Array;
    try {
      await fastForward(page, frame);
      image = await frameUnderDeadline(page, frame, async () => {
        if (background !== undefined) await paintBehindPage(page.page, background);
        const videos = await seekFrame(page.page, frame);
        await assertTextShown(page.page, session.spec.width, session.spec.height, frame);
        return await createCapturer(page.page, {
          mode: session.browser.mode,
          format: imageFormat,
          quality,
          fps,
        }).capture(videos);
      });
    } finally {
      await page.close();
    }
    await mkdir(dirname(output), { recursive: true });
    const partial = join(dirname(output), `.${basename(output)}.partial-${Date.now()}`);
    try {
      await writeFile(partial, image);
      await rename(partial, output);
    } catch (error) {
      await rm(partial, { force: true });
      throw error;
    }
    return {
      output,
      compositionId: composition.id,
      frame,
      time: frameTime(frame, rate),
      width: size.width,
      height: size.height,
      imageFormat,
      bytes: image.length,
      captureMode: session.browser.mode,
    };
  } finally {
    await session.close();
  }
}
