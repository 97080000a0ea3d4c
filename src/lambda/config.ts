/**
 * The render configuration of the distributed path and the execution input that carries
 * it to the workflow, with {@linkcode validateConfig}: the check the SDK runs before any
 * cloud call.
 *
 * One execution input starts one render. It is the whole payload of `StartExecution`, so
 * the workflow's 262144-byte input limit applies to its serialised JSON. The state machine
 * (see `state_machine.ts`) hands it unchanged to every task, so the plan, each chunk worker
 * and the assembler see exactly what the caller sent:
 *
 * ```json
 * {
 *   "renderId": "r-20240501-abc123",
 *   "bucketName": "vid-renders-123",
 *   "siteId": "site-0123456789abcdef",
 *   "serveUrl": "https://vid-renders-123.s3.us-east-1.amazonaws.com/sites/site-0123456789abcdef/",
 *   "composition": "index.html",
 *   "outputKey": "renders/r-20240501-abc123/out.mp4",
 *   "config": { "fps": 30, "width": 1920, "height": 1080, "format": "mp4",
 *               "variables": { "title": "Hello", "logo": "https://cdn.example.com/logo.png" } }
 * }
 * ```
 *
 * Formats: `mp4` (H.264), `webm` (VP9 with alpha) and `mov` (ProRes 4444 with alpha), the
 * same set as a local render, because chunks are encoded by the shared chunk renderer and
 * joined with the concat demuxer without re-encoding, which all three support. HDR is not
 * accepted: high-dynamic-range output renders in-process only.
 *
 * @module
 */

import { OUTPUT_FORMATS, type OutputFormat, QUALITIES, type Quality } from "../render/encode.ts";
import { frameRateValue } from "../composition/frame_rate.ts";
import { chunkCount, DEFAULT_MAX_PARALLEL_CHUNKS } from "../render/chunk_plan.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { VidError } from "../errors.ts";
import { RenderOptionError } from "../request/errors.ts";
import { checkConfigField, CONFIG_FIELDS, OPTIONS } from "../request/options.ts";
import { configFrameRate, type ExecutionInput } from "../request/execution_input.ts";

// The distributed request's shapes belong to the render request (src/request/), where the
// local batch reads them too; re-exported here for the SDK's lambda entry.
export type { ExecutionInput, RenderConfig } from "../request/execution_input.ts";

/** Workflow execution input limit: the whole serialised payload, UTF-8 bytes (256 KiB). */
export const MAX_EXECUTION_INPUT_BYTES = 262144;

/** Output formats a distributed render accepts: the encoder's video formats. */
export const LAMBDA_FORMATS: readonly OutputFormat[] = OUTPUT_FORMATS;
/** Quality presets a distributed render accepts: the encoder's. */
export const LAMBDA_QUALITIES: readonly Quality[] = QUALITIES;

/** Options of {@linkcode validateConfig}. */
export interface ValidateConfigOptions {
  /** Reserved concurrency of the render function (`vid lambda deploy --concurrency`). */
  reservedConcurrency?: number;
  /**
   * Frames of the render, when known: the throttling warning then compares the reserved
   * concurrency with the render's own chunk count instead of `maxParallelChunks`, so a
   * render of a few chunks does not warn. @default unknown
   */
  frames?: number;
  /** Receives warnings (throttling). @default console.warn */
  onWarning?(message: string): void;
}

/** A field of the execution input is invalid; `field` is its path, e.g. `config.fps`. */
export class ConfigError extends VidError {
  /** Always `"ConfigError"` (subclasses set their own). */
  override name = "ConfigError";
  /** Path of the invalid field, e.g. `config.fps`. */
  declare readonly field: string;
  /**
   * Creates the error for one field.
   *
   * @param field Path of the invalid field.
   * @param message What is wrong and how to fix it; prefixed with `[validateConfig] <field>: `.
   * @param flag The command-line flag that sets the field, when one does.
   */
  constructor(field: string, message: string, flag?: string) {
    // Exit 1, as before the request was declared once: the execution input as a whole is bad
    // (its size, a field no flag sets), which the command line reports as a failed run.
    super(`[validateConfig] ${field}: ${message}`, { field, flag, detail: message, exitCode: 1 });
  }
}

/** The serialised execution input exceeds {@linkcode MAX_EXECUTION_INPUT_BYTES}. */
export class ExecutionInputTooLargeError extends ConfigError {
  /** Always `"ExecutionInputTooLargeError"`. */
  override name = "ExecutionInputTooLargeError";
  /** UTF-8 bytes of the serialised input. */
  readonly bytes: number;
  /** The limit, {@linkcode MAX_EXECUTION_INPUT_BYTES}. */
  readonly limit: number;
  /**
   * Creates the error, naming the size, the limit, the largest field and the fix.
   *
   * @param bytes UTF-8 bytes of the serialised input.
   * @param largest The largest field and its size, named in the message as the likely culprit.
   */
  constructor(bytes: number, largest?: { field: string; bytes: number }) {
    const culprit = largest
      ? `; the largest field is ${largest.field} (${largest.bytes} bytes)`
      : "";
    super(
      "config",
      `the execution input is ${bytes} bytes, over the workflow limit of ` +
        `${MAX_EXECUTION_INPUT_BYTES} bytes (256 KiB)${culprit}. Pass media as URLs ` +
        "(a string variable holding a URL the composition loads at render time), " +
        "not inlined as base64 data",
    );
    this.bytes = bytes;
    this.limit = MAX_EXECUTION_INPUT_BYTES;
  }
}

/** `hdr: true` was asked of a distributed render. */
export class HdrNotSupportedError extends ConfigError {
  /** Always `"HdrNotSupportedError"`. */
  override name = "HdrNotSupportedError";
  constructor() {
    super(
      "config.hdr",
      "High-dynamic-range mp4 in distributed mode is rejected; render HDR in-process with " +
        "vid render --hdr",
    );
  }
}

/** The fields of `config`: those the render request declares, and the webhook. */
const CONFIG_KEYS: ReadonlySet<string> = new Set([...CONFIG_FIELDS, "webhook"]);

const RENDER_ID = /^[A-Za-z0-9_-]{1,80}$/;

/**
 * UTF-8 bytes of a value serialised as JSON, as the workflow counts its input.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(serializedBytes({ title: "€" }), 15); // the euro sign is three bytes
 * ```
 */
export function serializedBytes(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value) ?? "").byteLength;
}

/** The biggest leaf of the input, to point at the inlined media that broke the limit. */
function largestField(input: unknown): { field: string; bytes: number } | undefined {
  let best: { field: string; bytes: number } | undefined;
  const visit = (value: unknown, path: string): void => {
    if (isPlainObject(value)) {
      for (const [key, child] of Object.entries(value)) visit(child, path ? `${path}.${key}` : key);
    } else if (Array.isArray(value)) {
      value.forEach((child, i) => visit(child, `${path}[${i}]`));
    } else {
      const bytes = serializedBytes(value);
      if (!best || bytes > best.bytes) best = { field: path, bytes };
    }
  };
  visit(input, "");
  return best;
}

function requireString(input: Record<string, unknown>, key: string): string {
  const value = input[key];
  if (typeof value !== "string" || value.length === 0) {
    throw new ConfigError(key, `must be a non-empty string, got ${JSON.stringify(value)}`);
  }
  return value;
}

function checkWebhook(value: unknown): void {
  if (!isPlainObject(value)) {
    throw new ConfigError("config.webhook", "must be an object { url, secret }");
  }
  let url: URL | undefined;
  try {
    url = new URL(String(value.url));
  } catch {
    // reported below
  }
  // Plain http only reaches a receiver on this machine (local stack development).
  const loopback = url?.protocol === "http:" &&
    ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
  if (url?.protocol !== "https:" && !loopback) {
    throw new ConfigError(
      "config.webhook.url",
      `must be an https:// URL, got ${JSON.stringify(value.url)}`,
    );
  }
  if (typeof value.secret !== "string" || value.secret.length === 0) {
    throw new ConfigError("config.webhook.secret", "must be a non-empty string");
  }
}

function checkTopLevel(input: Record<string, unknown>): void {
  const renderId = requireString(input, "renderId");
  if (!RENDER_ID.test(renderId)) {
    throw new ConfigError(
      "renderId",
      `must be 1-80 characters of A-Z a-z 0-9 - _ (it names the execution), got ${
        JSON.stringify(renderId)
      }`,
    );
  }
  requireString(input, "bucketName");
  const siteId = requireString(input, "siteId");
  if (siteId.includes("/")) {
    throw new ConfigError("siteId", `must not contain "/", got ${JSON.stringify(siteId)}`);
  }
  const serveUrl = requireString(input, "serveUrl");
  if (!URL.canParse(serveUrl) || !/^https?:$/.test(new URL(serveUrl).protocol)) {
    throw new ConfigError("serveUrl", `must be an http(s) URL, got ${JSON.stringify(serveUrl)}`);
  }
  if (input.composition !== undefined) {
    const composition = requireString(input, "composition");
    if (composition.startsWith("/") || composition.split("/").includes("..")) {
      throw new ConfigError(
        "composition",
        `must be a path inside the site, got ${JSON.stringify(composition)}`,
      );
    }
  }
  const outputKey = requireString(input, "outputKey");
  if (outputKey.startsWith("/")) {
    throw new ConfigError("outputKey", `must not start with "/", got ${JSON.stringify(outputKey)}`);
  }
}

function checkRenderConfig(config: Record<string, unknown>): void {
  for (const key of Object.keys(config)) {
    if (!CONFIG_KEYS.has(key)) {
      throw new ConfigError(
        `config.${key}`,
        `is not a render configuration field; known fields: ${[...CONFIG_KEYS].join(", ")}`,
      );
    }
  }
  if (config.hdr !== undefined && config.hdr !== false) {
    if (config.hdr === true) throw new HdrNotSupportedError();
    throw new ConfigError("config.hdr", `must be a boolean, got ${JSON.stringify(config.hdr)}`);
  }
  // The render options, checked by their declarations: one message on every surface.
  for (
    const declaration of [
      OPTIONS.fps,
      OPTIONS.width,
      OPTIONS.height,
      OPTIONS.videoFormat,
      OPTIONS.quality,
      OPTIONS.variableOverrides,
      OPTIONS.seed,
      OPTIONS.epochMs,
      OPTIONS.frameTimeoutMs,
      OPTIONS.chunkSize,
      OPTIONS.maxParallelChunks,
      OPTIONS.targetChunkFrames,
      OPTIONS.loudness,
      OPTIONS.scale,
    ]
  ) {
    try {
      checkConfigField<unknown>(declaration, config);
    } catch (error) {
      if (!(error instanceof RenderOptionError)) throw error;
      throw new ConfigError(error.field, error.detail, error.flag);
    }
  }
  if (config.webhook !== undefined) checkWebhook(config.webhook);
}

/**
 * Checks a distributed render's execution input before any cloud call. Pure: no network,
 * no clock.
 *
 * Throws a {@linkcode ConfigError} for any bad field (the render options, chunk options
 * included, in the words of their declarations: `config.chunkSize: must be a positive
 * integer, got 0`), its `field` naming it: `config` when the serialised input exceeds
 * {@linkcode MAX_EXECUTION_INPUT_BYTES} (checked first, whatever else is wrong; the error's
 * `name` is then `ExecutionInputTooLargeError`), `config.hdr` for `hdr: true`
 * (`HdrNotSupportedError`). Warns through `onWarning` when the function's reserved
 * concurrency is below `maxParallelChunks`: chunks then wait for a free function instance
 * and the render is throttled.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const warnings: string[] = [];
 * const input = validateConfig({
 *   renderId: "r1",
 *   bucketName: "vid-renders",
 *   siteId: "site-0123456789abcdef",
 *   serveUrl: "https://vid-renders.s3.amazonaws.com/sites/site-0123456789abcdef/",
 *   outputKey: "renders/r1/out.mp4",
 *   config: { fps: 30, format: "mp4", variables: { title: "Hi" } },
 * }, { reservedConcurrency: 8, onWarning: (m) => warnings.push(m) });
 * assert.equal(input.renderId, "r1");
 * assert.equal(warnings.length, 1); // reserved concurrency 8 is below 16
 * ```
 *
 * @param input The execution input, as it will be passed to `StartExecution`.
 * @param options Function concurrency to compare with, and the warning sink.
 * @returns The same input, typed.
 */
export function validateConfig(
  input: ExecutionInput,
  options: ValidateConfigOptions = {},
): ExecutionInput {
  const bytes = serializedBytes(input);
  if (bytes > MAX_EXECUTION_INPUT_BYTES) {
    throw new ExecutionInputTooLargeError(bytes, largestField(input));
  }
  if (!isPlainObject(input)) {
    throw new ConfigError("input", `must be an object, got ${JSON.stringify(input)}`);
  }
  const record = input as unknown as Record<string, unknown>;
  checkTopLevel(record);
  if (!isPlainObject(record.config)) {
    throw new ConfigError("config", `must be an object, got ${JSON.stringify(record.config)}`);
  }
  checkRenderConfig(record.config);

  const { reservedConcurrency } = options;
  if (reservedConcurrency !== undefined) {
    if (!Number.isInteger(reservedConcurrency) || reservedConcurrency < 0) {
      throw new ConfigError(
        "reservedConcurrency",
        `must be a non-negative integer, got ${JSON.stringify(reservedConcurrency)}`,
      );
    }
    const maxParallelChunks = input.config.maxParallelChunks ?? DEFAULT_MAX_PARALLEL_CHUNKS;
    const frames = options.frames;
    const chunks = frames !== undefined && Number.isInteger(frames) && frames > 0
      ? chunkCount({
        frames,
        // The rate sets the GOP grid, which caps the count (see chunk_plan.ts).
        fps: frameRateValue(configFrameRate(input.config)),
        chunkSize: input.config.chunkSize,
        targetChunkFrames: input.config.targetChunkFrames,
        maxParallelChunks: input.config.maxParallelChunks,
      })
      : undefined;
    if (reservedConcurrency < (chunks ?? maxParallelChunks)) {
      const what = chunks !== undefined
        ? `the render's ${chunks} chunks`
        : `maxParallelChunks (${maxParallelChunks})`;
      (options.onWarning ?? console.warn)(
        `reserved concurrency of the render function (${reservedConcurrency}) is lower than ` +
          `${what}: renders will be throttled, chunks waiting ` +
          "for a free function instance. Deploy with a higher --concurrency or lower " +
          "--max-parallel-chunks",
      );
    }
  }
  return input;
}
