/**
 * The output formats, quality presets and chunking defaults a render request may name: the
 * one table of each. The encoder (`src/render/encode.ts`) and the chunk planner
 * (`src/render/chunk_plan.ts`) re-export them, so the request layer needs nothing from the
 * renderer above it.
 *
 * @module
 */

/** Output container and codec family. */
export type OutputFormat = "mp4" | "webm" | "mov";
/** Encoder quality preset. */
export type Quality = "draft" | "standard" | "high";

/**
 * What a local render writes: a video format, an animated GIF, or a PNG sequence. The
 * hosted and distributed renders write the video formats only ({@linkcode OutputFormat}).
 */
export type RenderFormat = OutputFormat | "gif" | "png";

/** The accepted output formats. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = ["mp4", "webm", "mov"];
/** The formats a local render accepts. */
export const RENDER_FORMATS: readonly RenderFormat[] = ["mp4", "webm", "mov", "gif", "png"];

/**
 * Highest frame rate of a GIF. GIF frame delays are whole hundredths of a second, so 25 fps
 * (4/100 s) is the fastest common rate every viewer plays evenly, and fewer frames keep the
 * file small; a GIF render asked for more frames per second renders at this rate.
 */
export const GIF_MAX_FPS = 25;

/**
 * How frames are captured: `auto` probes BeginFrame (chromium-headless-shell) and falls
 * back to screenshots; the other two force a path.
 */
export type CapturePreference = "auto" | "beginframe" | "screenshot";
/** The accepted capture preferences. */
export const CAPTURE_PREFERENCES: readonly CapturePreference[] = [
  "auto",
  "beginframe",
  "screenshot",
];

/** The accepted quality presets. */
export const QUALITIES: readonly Quality[] = ["draft", "standard", "high"];

/** Frames per second of a render whose request and composition name no rate. */
export const DEFAULT_FPS = 30;

/** Default frames per chunk. */
export const DEFAULT_CHUNK_SIZE = 240;
/** Default cap on chunks rendered in parallel. */
export const DEFAULT_MAX_PARALLEL_CHUNKS = 16;
