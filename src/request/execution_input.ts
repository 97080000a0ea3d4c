/**
 * The input of a distributed render's workflow execution and its `config`: the request's
 * shape as `renderToLambda` sends it, the worker and the state machine read it, and the
 * local batch derives its resumable render ids from it (src/batch/). Types, and the one
 * reading of `config.fps` ({@linkcode configFrameRate}); the checks are `validateConfig`'s
 * (src/lambda/config.ts), from the option declarations beside this.
 *
 * @module
 */

import { type FrameRate, parseFrameRate } from "../composition/frame_rate.ts";
import { DEFAULT_FPS, type OutputFormat, type Quality } from "./formats.ts";

/**
 * The SDK's `config` of a distributed render. `V` types
 * `variables`, e.g. with the type `vid types` generates, so a wrong variable is a
 * compile error.
 */
export interface RenderConfig<
  V extends { [K in keyof V]?: string | number | boolean } = Record<
    string,
    string | number | boolean
  >,
> {
  /**
   * Frames per second, 1-240: an integer, a decimal (`29.97` = 30000/1001) or a fraction
   * (`"30000/1001"`). @default 30
   */
  fps?: number | string;
  /** Output width in pixels. @default the composition's `data-width` */
  width?: number;
  /** Output height in pixels. @default the composition's `data-height` */
  height?: number;
  /** One of the video formats (`LAMBDA_FORMATS`: mp4, webm, mov). @default "mp4" */
  format?: OutputFormat;
  /** Encoder preset. @default "standard" */
  quality?: Quality;
  /** Overrides of the composition's declared variables: typed primitives, media as URLs. */
  variables?: V;
  /** Frames per chunk. @default 240 */
  chunkSize?: number;
  /** Cap on chunks, and so on chunk workers running at once for this render. @default 16 */
  maxParallelChunks?: number;
  /** Ceiling on frames per chunk, used only when `chunkSize` is unset. */
  targetChunkFrames?: number;
  /**
   * Integrated loudness of the soundtrack, LUFS (-70 to -5), by two-pass EBU R128
   * `loudnorm` in the `assemble` task. @default the mix as it is
   */
  loudness?: number;
  /**
   * Device pixels per CSS pixel, 1-4: frames are `width` x `height` times the scale, drawn
   * at that size. @default 1
   */
  scale?: number;
  /** High-dynamic-range output: always rejected here; render HDR with `vid render --hdr`. */
  hdr?: boolean;
  /** Seed of the page's `Math.random`, the same in every chunk. @default 1 */
  seed?: number;
  /**
   * `Date.now()` at time 0, the same in every chunk so clocks agree across chunk seams.
   * @default the execution's start time, whole seconds
   */
  epochMs?: number;
  /**
   * The host's deadline of one frame's seek and capture in the chunk worker, milliseconds:
   * past it the page counts as hung, its browser is killed and the chunk fails naming the
   * frame. @default 30000
   */
  frameTimeoutMs?: number;
  /** A signed notification, sent when the render terminates. */
  webhook?: {
    /** `https://` URL (plain `http://` only for a loopback receiver during development). */
    url: string;
    /** Shared secret the payload is signed with. */
    secret: string;
  };
}

/**
 * The input of one workflow execution: everything a task needs to find the site, render
 * its chunk and write the output. `renderToLambda` builds it and starts the execution
 * with `renderId` as the execution name.
 */
export interface ExecutionInput {
  /** Identifier of the render; also the execution name, so 1-80 of `A-Z a-z 0-9 - _`. */
  renderId: string;
  /** Bucket holding the site, the chunk files and the output (`RenderBucketName`). */
  bucketName: string;
  /** Content-addressed identifier of the uploaded site. */
  siteId: string;
  /** Absolute `http(s)` URL of the uploaded site's root, ending in `/`. */
  serveUrl: string;
  /** Entry HTML file inside the site. @default "index.html" */
  composition?: string;
  /** Object key of the rendered video in `bucketName`. */
  outputKey: string;
  /** The render configuration. */
  config: RenderConfig;
}

/**
 * The rate of a distributed render: its `config.fps` (`30`, `29.97` = 30000/1001 or
 * `"30000/1001"`), else 30, parsed once where the config comes in (the client's checks, the
 * plan step, each chunk worker) and carried on as a fraction. Throws `FrameRateError` naming
 * `config.fps`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(configFrameRate({ fps: 29.97 }), { num: 30000, den: 1001 });
 * assert.deepEqual(configFrameRate({}), { num: 30, den: 1 });
 * assert.throws(() => configFrameRate({ fps: "0" }), /config\.fps: must be a rate from 1 to 240/);
 * ```
 */
export function configFrameRate(config: { fps?: number | string | null }): FrameRate {
  return parseFrameRate(config.fps ?? DEFAULT_FPS, "config.fps");
}
