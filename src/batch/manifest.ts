/**
 * The batch manifest's rows and the deterministic render ids that make a batch resumable,
 * shared by the distributed batch (`vid lambda render-batch`, src/lambda/batch.ts) and the
 * local one (`vid render-batch`, src/batch/local.ts). No cloud SDK is reached from here, so
 * a local batch loads no AWS code.
 *
 * @module
 */

import { canonicalJson } from "../util/canonical_json.ts";
import type { ExecutionInput } from "../request/execution_input.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/**
 * Status of a batch manifest row:
 * - `started`: this run started the row's execution;
 * - `already-started`: the row's execution existed (an earlier run started it);
 * - `already-rendered`: no execution of the row is known any more (its history is gone: a
 *   restarted local stack, expired history on AWS), but its output object is there, written
 *   by a render of the same inputs (its `vid-render-id` metadata names the row's render id);
 * - `would-invoke`: dry run, the row is valid; nothing was started;
 * - `failed-to-start`: the line is invalid, or the start call failed (see `error`);
 * - `skipped`: a blank line; not an entry;
 * - `not-started`: valid, but the batch was interrupted before the row was started.
 */
export type BatchRowStatus =
  | "started"
  | "already-started"
  | "already-rendered"
  | "would-invoke"
  | "failed-to-start"
  | "skipped"
  | "not-started";

/**
 * S3 user metadata key of a distributed render's output naming its render id: a batch row's
 * render id is derived from its inputs (see {@linkcode batchRenderId}), so an output
 * carrying the row's id was rendered from the same row.
 */
export const RENDER_ID_METADATA = "vid-render-id";

/** One row of the batch manifest: one per input line. */
export interface BatchManifestRow {
  /** 1-based line number in the JSONL file. */
  line: number;
  /** The entry's `outputKey`; `null` when the line had none. */
  outputKey: string | null;
  /** What happened to the row's render (see {@linkcode BatchRowStatus}). */
  status: BatchRowStatus;
  /** ARN of the execution; `null` unless `started` or `already-started`. */
  executionArn: string | null;
  /** Why the row did not start (`failed-to-start`, `skipped`, `not-started`); else `null`. */
  error: string | null;
  /** Render id (execution name) of a started, already-started or already-rendered row. */
  renderId?: string;
  /**
   * Which attempt of the row the execution is: 1 for the first, n for the execution named
   * `<first>-a<n>` that a rerun started after earlier attempts failed (or `rerun: "all"`).
   */
  attempt?: number;
  /**
   * What the row's variables got wrong that did not stop it (undeclared keys with a
   * did-you-mean, values of another type), one message each; absent when none.
   */
  warnings?: string[];
}

/** A bad argument of a batch (`renderBatch`, `renderBatchLocal`) or a bad manifest; `field` names it. */
export class BatchInputError extends VidError {
  /** Always `"BatchInputError"`. */
  override name = "BatchInputError";
  /** The offending option or manifest field, e.g. `maxConcurrent` or `[3].line`. */
  override readonly field: string;
  /**
   * Creates the error for one option or manifest field.
   *
   * @param field The offending option or field.
   * @param message What is wrong and how to fix it.
   */
  constructor(field: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
  }
}

/**
 * The deterministic render id (execution name) of a batch row: `b-` and the first 40 hex
 * digits of the SHA-256 of its execution input without `renderId`. The same row of the
 * same site always gets the same id, which is what makes a rerun resume.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { batchRenderId } from "./manifest.ts";
 *
 * const id = await batchRenderId({
 *   bucketName: "vid-renders",
 *   siteId: "site-0123456789abcdef",
 *   serveUrl: "https://vid-renders.s3.us-east-1.amazonaws.com/sites/site-0123456789abcdef/",
 *   composition: "index.html",
 *   outputKey: "out/ada.mp4",
 *   config: { variables: { title: "Ada" } },
 * });
 * assert.match(id, /^b-[0-9a-f]{40}$/);
 * ```
 */
export async function batchRenderId(input: Omit<ExecutionInput, "renderId">): Promise<string> {
  const { renderId: _ignored, ...rest } = input as ExecutionInput;
  const digest = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(canonicalJson(rest)),
  );
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `b-${hex.slice(0, 40)}`;
}
