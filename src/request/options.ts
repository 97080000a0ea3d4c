/**
 * Every option of a render request, declared once: its SDK key, command-line flag, field
 * of the hosted API's render body, field of the distributed `config`, environment
 * variable, help text, default, and the check of its range or choices. The surfaces derive
 * from these declarations instead of restating them: the CLI's flags and `--help`
 * (`src/cli/request_flags.ts`), `renderComposition`/`renderStill`, the cloud client, the
 * server's body validation and `validateConfig`, and the Lambda worker's defaults. A value
 * refused anywhere is refused with the same words, naming the option in the words of the
 * surface it came through (`--fps`, `fps`, `config.fps`).
 *
 * Each table exists once: the formats, presets and chunk defaults in `formats.ts` (the
 * encoder and the chunk planner re-export them), the frame-rate range with the one rate
 * parser (`src/composition/frame_rate.ts`), which the `fps` check calls.
 *
 * To add an option: declare it below, then add its flag to the commands that accept it
 * (`cliOption(OPTIONS.x)`) and its field to the surfaces' option types;
 * `tests/unit/request_test.ts` checks the help and the type agreement.
 *
 * @module
 */

import { availableParallelism } from "node:os";
import { isCssColor } from "../composition/color.ts";
import { type AspectRatio, DEFAULT_ENTRY } from "../composition/composition.ts";
import { FrameRateError, frameRateValue, parseFrameRate } from "../composition/frame_rate.ts";
import {
  CAPTURE_PREFERENCES,
  type CapturePreference,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_FPS,
  DEFAULT_MAX_PARALLEL_CHUNKS,
  GIF_MAX_FPS,
  OUTPUT_FORMATS,
  type OutputFormat,
  QUALITIES,
  type Quality,
  RENDER_FORMATS,
  type RenderFormat,
} from "./formats.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { RenderOptionError } from "./errors.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** Largest output width or height, pixels. */
export const MAX_DIMENSION = 8192;
/** Quietest integrated loudness `--loudness` accepts, LUFS (`loudnorm`'s own floor). */
export const MIN_LOUDNESS = -70;
/** Loudest integrated loudness `--loudness` accepts, LUFS (`loudnorm`'s own ceiling). */
export const MAX_LOUDNESS = -5;
/** Largest `--scale`: device pixels per CSS pixel. */
export const MAX_SCALE = 4;
/** A resolution of a hosted render. */
export type Resolution = "1080p" | "4k";
/** Accepted resolutions of a hosted render, each once. */
export const RESOLUTIONS: readonly Resolution[] = ["1080p", "4k"];
/** Accepted aspect ratios of a hosted render. */
export const ASPECT_RATIOS: readonly AspectRatio[] = ["16:9", "9:16", "1:1"];
/** Characters and length of an idempotency key. */
export const IDEMPOTENCY_KEY_PATTERN: RegExp = /^[A-Za-z0-9_:.-]{1,255}$/;

/** Default worker count for this machine: one window per core, at most 4. */
export function defaultWorkers(): number {
  return Math.max(1, Math.min(availableParallelism(), 4));
}

/** What is wrong with a value, before it is tied to the name of the surface it came through. */
class OptionProblem extends VidError {
  override name = "OptionProblem";

  /** Creates the error; the CLI exits 1. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
  }
}

/** One render option, declared once for every surface. */
export interface OptionDeclaration<F extends string, T, C extends T = T> {
  /** Key of the SDK options (`renderComposition`, `RenderConfig`, `cloudRender`). */
  readonly key: string;
  /** Commander flags, e.g. `-o, --output <path>`; absent for an SDK-only option. */
  readonly flags?: F;
  /** Field of the hosted API's render body (`POST /v3/vid/renders`), if it takes one. */
  readonly api?: string;
  /** Field of the distributed `config` (`validateConfig`), if it takes one. */
  readonly config?: string;
  /** Environment variable that sets it when the flag is absent, if any. */
  readonly env?: string;
  /** Help text, without the default or choices (the help adds them). */
  readonly help: string;
  /** The value when none is given, where one value applies on every surface. */
  readonly default?: T;
  /** How the help states the default when it is not one value (e.g. "data-fps, else 30"). */
  readonly defaultText?: string;
  /** The accepted values, for an option with a fixed set. */
  readonly choices?: readonly string[];
  /** Checks a value of the SDK or a JSON body; returns it typed, or throws a problem. */
  check(value: unknown): T;
  /** Parses the text of the flag (to `C`, a narrower type); the check of a string when absent. */
  parse?(text: string): C;
}

/** The value type of a declaration. */
export type OptionValue<D> = D extends OptionDeclaration<string, infer T> ? T : never;

/** Declares one option, keeping its flag text as a literal type (for typed commander options). */
function option<const F extends string, T, C extends T = T>(
  declaration: OptionDeclaration<F, T, C>,
): OptionDeclaration<F, T, C> {
  return declaration;
}

function got(value: unknown): string {
  return `got ${JSON.stringify(value) ?? String(value)}`;
}

/**
 * A number option's check and its flag parser: the flag's text is read as a number and
 * checked the same way (text that is no number is checked as the text, so the message
 * quotes what was typed).
 */
function numeric(check: (value: unknown) => number): {
  check: (value: unknown) => number;
  parse: (text: string) => number;
} {
  return {
    check,
    parse: (text: string): number => {
      const n = text.trim() === "" ? NaN : Number(text);
      return check(Number.isNaN(n) ? text : n);
    },
  };
}

/** Integers from `min` to `max`; a flag's text must be written as a whole number. */
function integer(min: number, max = Number.MAX_SAFE_INTEGER) {
  const range = max === Number.MAX_SAFE_INTEGER
    ? (min === 1 ? "a positive integer" : `an integer from ${min} up`)
    : `an integer from ${min} to ${max}`;
  const check = (value: unknown): number => {
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      throw new OptionProblem(`must be ${range}, ${got(value)}`);
    }
    return value;
  };
  return numeric(check);
}

/** Numbers above 0 (seconds, minutes). */
function positiveNumber(unit: string) {
  const check = (value: unknown): number => {
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      throw new OptionProblem(`must be a positive number of ${unit}, ${got(value)}`);
    }
    return value;
  };
  return numeric(check);
}

/** A time in seconds, 0 or more. */
function seconds() {
  const check = (value: unknown): number => {
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new OptionProblem(`must be a number of seconds >= 0 (e.g. 2.5), ${got(value)}`);
    }
    return value;
  };
  return numeric(check);
}

/** Integrated loudness in LUFS, {@linkcode MIN_LOUDNESS} to {@linkcode MAX_LOUDNESS}. */
function loudnessRange() {
  const check = (value: unknown): number => {
    if (
      typeof value !== "number" || !Number.isFinite(value) || value < MIN_LOUDNESS ||
      value > MAX_LOUDNESS
    ) {
      throw new OptionProblem(
        `must be a loudness from ${MIN_LOUDNESS} to ${MAX_LOUDNESS} LUFS (e.g. -14 for ` +
          `streaming, -23 for EBU R128 broadcast), ${got(value)}`,
      );
    }
    return value;
  };
  return numeric(check);
}

/** One of a fixed set of strings. */
function oneOf<const C extends string>(choices: readonly C[]) {
  return {
    choices,
    check: (value: unknown): C => {
      if (typeof value !== "string" || !(choices as readonly string[]).includes(value)) {
        throw new OptionProblem(`must be one of ${choices.join(", ")}, ${got(value)}`);
      }
      return value as C;
    },
  };
}

/** A CSS colour (`#fff`, `white`, `rgb(0 0 0 / 50%)`). */
function cssColor(value: unknown): string {
  if (typeof value !== "string" || !isCssColor(value)) {
    throw new OptionProblem(
      `must be a CSS colour such as white, #ffffff or rgb(0 0 0), ${got(value)}`,
    );
  }
  return value.trim();
}

function boolean(value: unknown): boolean {
  if (typeof value !== "boolean") throw new OptionProblem(`must be true or false, ${got(value)}`);
  return value;
}

/** A frame rate: `30`, `29.97` (= 30000/1001) or `"30000/1001"`, 1 to 240 fps. */
function frameRate(value: unknown): number | string {
  if (typeof value !== "number" && typeof value !== "string") {
    throw new OptionProblem(`must be a frame rate such as 30, 29.97 or 30000/1001, ${got(value)}`);
  }
  try {
    parseFrameRate(value, "fps");
  } catch (error) {
    if (!(error instanceof FrameRateError)) throw error;
    throw new OptionProblem(error.message.replace(/^fps: /, ""));
  }
  return value;
}

/** An inclusive frame range `{ from, to }`, written `<from>-<to>` on the command line. */
function frameRange(value: unknown): { from: number; to: number } {
  const range = isPlainObject(value) ? value : {};
  const { from, to } = range;
  if (
    typeof from !== "number" || typeof to !== "number" || !Number.isInteger(from) ||
    !Number.isInteger(to) || from < 0 || to < from
  ) {
    throw new OptionProblem(
      `must be <from>-<to> with whole frame numbers, from <= to (e.g. 0-59), ${
        isPlainObject(value) ? `got ${from}-${to}` : got(value)
      }`,
    );
  }
  return { from, to };
}

function parseFrameRange(text: string): { from: number; to: number } {
  const parts = text.split("-");
  if (parts.length !== 2 || parts.some((p) => p.trim() === "")) {
    throw new OptionProblem(
      `must be <from>-<to> with whole frame numbers, from <= to (e.g. 0-59), ${got(text)}`,
    );
  }
  return frameRange({ from: Number(parts[0]), to: Number(parts[1]) });
}

function nonEmptyString(value: unknown): string {
  if (typeof value !== "string" || value.trim() === "") {
    throw new OptionProblem(`must be a non-empty string, ${got(value)}`);
  }
  return value;
}

/**
 * Default host deadline of one frame's seek and capture, milliseconds (`--frame-timeout`,
 * SDK `frameTimeoutMs`; enforced by `src/render/watchdog.ts`).
 */
export const DEFAULT_FRAME_TIMEOUT_MS = 30000;
/** Longest frame deadline, milliseconds: one hour. */
export const MAX_FRAME_TIMEOUT_MS = 3600000;

/** A frame deadline in whole milliseconds (the SDK's unit; the flag takes seconds). */
function frameTimeout(value: unknown): number {
  if (
    typeof value !== "number" || !Number.isInteger(value) || value < 1 ||
    value > MAX_FRAME_TIMEOUT_MS
  ) {
    throw new OptionProblem(
      `must be whole milliseconds from 1 to ${MAX_FRAME_TIMEOUT_MS} (e.g. 30000), ${got(value)}`,
    );
  }
  return value;
}

/** Help text of every `--fps` flag. */
export const FPS_HELP =
  "frames per second, 1-240: an integer, 29.97 / 23.976 / 59.94 (exactly 30000/1001 " +
  "etc.) or a fraction such as 30000/1001";

/** The render options, each declared once. */
export const OPTIONS = {
  composition: option({
    key: "composition",
    flags: "-c, --composition <file>",
    api: "composition",
    help: "entry HTML file inside the project directory",
    default: DEFAULT_ENTRY,
    check: nonEmptyString,
  }),
  output: option({
    key: "output",
    flags: "-o, --output <path>",
    help: "output file",
    check: nonEmptyString,
  }),
  fps: option({
    key: "fps",
    flags: "--fps <rate>",
    api: "fps",
    config: "fps",
    help: FPS_HELP,
    default: DEFAULT_FPS as number | string,
    defaultText: "30 unless the composition sets data-fps",
    check: frameRate,
    parse: (text: string): number => {
      frameRate(text);
      return frameRateValue(parseFrameRate(text, "fps"));
    },
  }),
  format: option({
    key: "format",
    flags: "--format <format>",
    help: "mp4 (H.264), webm (VP9 + alpha), mov (ProRes 4444 + alpha), gif (one palette, at " +
      `most ${GIF_MAX_FPS} fps), png (RGBA sequence; file number = frame index)`,
    default: "mp4" as RenderFormat,
    defaultText: "from the --output extension, else mp4",
    ...oneOf<RenderFormat>(RENDER_FORMATS),
  }),
  /** The format of a hosted or distributed render: a video file, no image sequences. */
  videoFormat: option({
    key: "format",
    flags: "--format <format>",
    api: "format",
    config: "format",
    help: "mp4 (H.264); webm (VP9) and mov (ProRes 4444) carry alpha",
    default: "mp4" as OutputFormat,
    ...oneOf<OutputFormat>(OUTPUT_FORMATS),
  }),
  quality: option({
    key: "quality",
    flags: "--quality <preset>",
    api: "quality",
    config: "quality",
    help: "encoder preset",
    default: "standard" as Quality,
    ...oneOf<Quality>(QUALITIES),
  }),
  capture: option({
    key: "capture",
    flags: "--capture <mode>",
    env: "VID_CAPTURE",
    help: "capture path: auto probes BeginFrame (chromium-headless-shell), else screenshots",
    default: "auto" as CapturePreference,
    ...oneOf<CapturePreference>(CAPTURE_PREFERENCES),
  }),
  jpegQuality: option({
    key: "jpegQuality",
    flags: "--quality <n>",
    help: "JPEG quality 1-100",
    default: 90,
    ...integer(1, 100),
  }),
  background: option({
    key: "background",
    flags: "--background <color>",
    help: "flatten a PNG still onto this CSS colour; without it a PNG keeps the page's " +
      "transparency, and a JPEG is flattened on white",
    check: cssColor,
  }),
  frame: option({
    key: "frame",
    flags: "--frame <n>",
    help: "frame number, from 0",
    ...integer(0),
  }),
  time: option({
    key: "time",
    flags: "--time <seconds>",
    help: "time in seconds; the frame shown then",
    ...seconds(),
  }),
  workers: option({
    key: "workers",
    flags: "--workers <n>",
    help: "parallel workers, each a browser of its own rendering one chunk at a time",
    defaultText: `min(cores, 4): ${defaultWorkers()} on this machine`,
    ...integer(1),
  }),
  frames: option({
    key: "frames",
    flags: "--frames <from-to>",
    help: "render only frames from..to, inclusive (e.g. 0-59)",
    check: frameRange,
    parse: parseFrameRange,
  }),
  width: option({
    key: "width",
    flags: "--width <px>",
    config: "width",
    help: `output width in pixels, 1-${MAX_DIMENSION}`,
    defaultText: "data-width",
    ...integer(1, MAX_DIMENSION),
  }),
  height: option({
    key: "height",
    flags: "--height <px>",
    config: "height",
    help: `output height in pixels, 1-${MAX_DIMENSION}`,
    defaultText: "data-height",
    ...integer(1, MAX_DIMENSION),
  }),
  chunkSize: option({
    key: "chunkSize",
    flags: "--chunk-size <n>",
    config: "chunkSize",
    help: "frames per chunk",
    default: DEFAULT_CHUNK_SIZE,
    ...integer(1),
  }),
  maxParallelChunks: option({
    key: "maxParallelChunks",
    flags: "--max-parallel-chunks <n>",
    config: "maxParallelChunks",
    help: "cap on chunks, so on chunk workers at once",
    default: DEFAULT_MAX_PARALLEL_CHUNKS,
    ...integer(1),
  }),
  targetChunkFrames: option({
    key: "targetChunkFrames",
    flags: "--target-chunk-frames <n>",
    config: "targetChunkFrames",
    help: "ceiling on frames per chunk; ignored when --chunk-size is set",
    ...integer(1),
  }),
  concurrency: option({
    key: "concurrency",
    flags: "--concurrency <n>",
    help: "rows rendered at once",
    defaultText: `${defaultWorkers()} on this machine`,
    ...integer(1),
  }),
  maxConcurrent: option({
    key: "maxConcurrent",
    flags: "--max-concurrent <n>",
    help: "cap on simultaneous workflow start calls (not on function concurrency)",
    default: 50,
    ...integer(1),
  }),
  reservedConcurrency: option({
    key: "reservedConcurrency",
    flags: "--reserved-concurrency <n>",
    env: "VID_LAMBDA_RESERVED_CONCURRENCY",
    help: "reserved concurrency of the render function, to warn when --max-parallel-chunks " +
      "exceeds it",
    ...integer(1),
  }),
  hdr: option({
    key: "hdr",
    flags: "--hdr",
    config: "hdr",
    help: "HDR mp4: 10-bit HEVC, BT.2020 primaries, HLG transfer (local only)",
    default: false,
    check: boolean,
  }),
  captionsOut: option({
    key: "captionsOut",
    flags: "--captions-out <file>",
    help: "also write the composition's data-captions cues for the rendered range, as .vtt or .srt",
    check: (value: unknown): string => {
      if (typeof value !== "string" || !/\.(vtt|srt)$/i.test(value)) {
        throw new OptionProblem(`must be a file name ending in .vtt or .srt, ${got(value)}`);
      }
      return value;
    },
  }),
  loudness: option({
    key: "loudness",
    flags: "--loudness <LUFS>",
    api: "loudness",
    config: "loudness",
    help: `normalise the soundtrack to this integrated loudness, ${MIN_LOUDNESS} to ` +
      `${MAX_LOUDNESS} LUFS (e.g. -14; two-pass EBU R128 loudnorm); as mixed when unset`,
    ...loudnessRange(),
  }),
  scale: option({
    key: "scale",
    flags: "--scale <n>",
    config: "scale",
    help: `device pixels per CSS pixel, 1-${MAX_SCALE}: the page is laid out at its size and ` +
      "drawn n times as sharp (a 1920x1080 layout at 2 gives 3840x2160)",
    default: 1,
    ...integer(1, MAX_SCALE),
  }),
  variables: option({
    key: "variables",
    flags: "--variables <json>",
    help: "inline JSON object of variable overrides (wins over --variables-file)",
    check: (value: unknown): string => {
      if (typeof value !== "string") {
        throw new OptionProblem(`must be the JSON text of an object, ${got(value)}`);
      }
      return value;
    },
  }),
  /** The overrides as an object: the hosted API's body and the distributed `config`. */
  variableOverrides: option({
    key: "variables",
    api: "variables",
    config: "variables",
    help: "object of variable overrides: typed primitives, media as URLs",
    check: (value: unknown): Record<string, unknown> => {
      if (!isPlainObject(value)) {
        throw new OptionProblem(`must be an object of variable overrides, ${got(value)}`);
      }
      return value;
    },
  }),
  variablesFile: option({
    key: "variablesFile",
    flags: "--variables-file <path>",
    help: "JSON or JSONC file holding an object of variable overrides",
    check: nonEmptyString,
  }),
  strictVariables: option({
    key: "strictVariables",
    flags: "--strict-variables",
    api: "strict_variables",
    help: "fail on undeclared keys or wrong types instead of warning",
    default: false,
    check: boolean,
  }),
  resolution: option({
    key: "resolution",
    flags: "--resolution <r>",
    api: "resolution",
    help: "1080p, or 4k (billed at 1.5x; mp4 only)",
    default: "1080p" as Resolution,
    ...oneOf<Resolution>(RESOLUTIONS),
  }),
  aspectRatio: option({
    key: "aspectRatio",
    flags: "--aspect-ratio <ratio>",
    api: "aspect_ratio",
    help: "output aspect ratio",
    default: "16:9" as AspectRatio,
    defaultText: "auto, from data-width/data-height; 16:9 for --asset-id/--url",
    ...oneOf<AspectRatio>(ASPECT_RATIOS),
  }),
  callbackId: option({
    key: "callbackId",
    flags: "--callback-id <id>",
    api: "callback_id",
    help: "opaque id echoed in the webhook payload",
    check: (value: unknown): string => {
      if (typeof value !== "string" || value.length > 255) {
        throw new OptionProblem(`must be a string of at most 255 characters, ${got(value)}`);
      }
      return value;
    },
  }),
  idempotencyKey: option({
    key: "idempotencyKey",
    flags: "--idempotency-key <key>",
    help: "1-255 of A-Z a-z 0-9 _ : . - ; sent to upload and submit",
    check: (value: unknown): string => {
      if (typeof value !== "string" || !IDEMPOTENCY_KEY_PATTERN.test(value)) {
        throw new OptionProblem("must be 1 to 255 characters of A-Z a-z 0-9 _ : . -");
      }
      return value;
    },
  }),
  pollInterval: option({
    key: "pollInterval",
    flags: "--poll-interval <seconds>",
    help: "seconds between polls",
    default: 10,
    ...positiveNumber("seconds"),
  }),
  maxWait: option({
    key: "maxWait",
    flags: "--max-wait <minutes>",
    help: "minutes to wait for the render",
    default: 60,
    ...positiveNumber("minutes"),
  }),
  frameTimeoutMs: option({
    key: "frameTimeoutMs",
    flags: "--frame-timeout <seconds>",
    config: "frameTimeoutMs",
    help: "seconds one frame's seek and capture may take; past it the page counts as hung " +
      "(a busy script), its browser and ffmpeg are killed and the render fails naming the frame",
    default: DEFAULT_FRAME_TIMEOUT_MS,
    defaultText: `${DEFAULT_FRAME_TIMEOUT_MS / 1000}`,
    check: frameTimeout,
    parse: (text: string): number => {
      const seconds = text.trim() === "" ? NaN : Number(text);
      if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_FRAME_TIMEOUT_MS / 1000) {
        throw new OptionProblem(
          `must be a number of seconds above 0, at most ${MAX_FRAME_TIMEOUT_MS / 1000} ` +
            `(e.g. 30), ${got(text)}`,
        );
      }
      return frameTimeout(Math.max(1, Math.round(seconds * 1000)));
    },
  }),
  seed: option({
    key: "seed",
    config: "seed",
    help: "seed of the page's Math.random",
    default: 1,
    ...integer(0),
  }),
  epochMs: option({
    key: "epochMs",
    config: "epochMs",
    help: "Date.now() at time 0, milliseconds",
    defaultText: "the render's start time, whole seconds",
    ...integer(0),
  }),
} as const;

/** The name of a declared option. */
export type OptionName = keyof typeof OPTIONS;

/** Every declaration, for code that walks them all (help tests, config keys). */
export const ALL_OPTIONS: readonly OptionDeclaration<string, unknown>[] = Object.values(OPTIONS);

/** The long flag of a declaration (`--fps`), if it has one. */
export function flagOf(declaration: OptionDeclaration<string, unknown>): string | undefined {
  return declaration.flags?.match(/--[\w-]+/)?.[0];
}

/** `error`'s detail, or rethrows it when it is not a problem of an option's value. */
function problemOf(error: unknown): string {
  if (error instanceof OptionProblem) return error.message;
  throw error;
}

/**
 * Checks one value against its declaration; throws {@linkcode RenderOptionError} naming the
 * SDK key (or `field`, the path of a nested value such as `outputSize.width`) and the flag.
 * `undefined` passes (the option is unset).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { RenderOptionError } from "./errors.ts";
 *
 * assert.equal(checkOption(OPTIONS.fps, "29.97"), "29.97");
 * assert.throws(() => checkOption(OPTIONS.fps, 0), RenderOptionError); // fps: must be a rate from 1 to 240 …
 * ```
 */
export function checkOption<T>(
  declaration: OptionDeclaration<string, T>,
  value: unknown,
  field: string = declaration.key,
): T | undefined {
  if (value === undefined) return undefined;
  try {
    return declaration.check(value);
  } catch (error) {
    throw new RenderOptionError(field, problemOf(error), flagOf(declaration));
  }
}

/**
 * Parses the command-line text of an option; throws {@linkcode RenderOptionError} naming the
 * SDK key and the flag.
 */
export function parseOption<T, C extends T>(
  declaration: OptionDeclaration<string, T, C>,
  text: string,
): C | T {
  try {
    return declaration.parse ? declaration.parse(text) : declaration.check(text);
  } catch (error) {
    throw new RenderOptionError(declaration.key, problemOf(error), flagOf(declaration));
  }
}

/**
 * Checks a field of the hosted API's render body; a bad one is a
 * {@linkcode RenderOptionError} whose `field` is the API field (`aspect_ratio`). An unset
 * field (absent or `null`) is `undefined`: the caller applies the default.
 */
export function checkApiField<T>(
  declaration: OptionDeclaration<string, T>,
  body: Record<string, unknown>,
): T | undefined {
  const field = declaration.api;
  if (field === undefined) throw new TypeError(`option ${declaration.key} has no API field`);
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  try {
    return declaration.check(value);
  } catch (error) {
    throw new RenderOptionError(field, problemOf(error), flagOf(declaration));
  }
}

/**
 * Checks a field of the distributed `config`; a bad one is a {@linkcode RenderOptionError}
 * whose `field` is `config.<field>`.
 */
export function checkConfigField<T>(
  declaration: OptionDeclaration<string, T>,
  config: Record<string, unknown>,
): T | undefined {
  const field = declaration.config;
  if (field === undefined) throw new TypeError(`option ${declaration.key} has no config field`);
  const value = config[field];
  if (value === undefined) return undefined;
  try {
    return declaration.check(value);
  } catch (error) {
    throw new RenderOptionError(`config.${field}`, problemOf(error), flagOf(declaration));
  }
}

/** The fields of the distributed `config` the declarations own. */
export const CONFIG_FIELDS: readonly string[] = ALL_OPTIONS.flatMap((d) =>
  d.config === undefined ? [] : [d.config]
);
