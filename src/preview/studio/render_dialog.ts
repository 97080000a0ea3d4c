/**
 * The studio's render dialog, the parts that need no page: the body of the render request
 * (`POST /__preview/render`) from the dialog's fields, the frame range at another frame
 * rate, and how the dialog names its choices and a finished file's size.
 *
 * @module
 */

/** What the dialog shows for a choice whose value is not self-explaining. */
export const OPTION_LABELS: Readonly<Record<string, string>> = {
  png: "PNG sequence",
  still: "Still (PNG)",
};

/**
 * A file size as the dialog shows it: MB with one decimal from 1 MiB, else whole KB (at
 * least 1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(formatBytes(3 * 1048576 + 200000), "3.2 MB");
 * assert.equal(formatBytes(10), "1 KB");
 * ```
 */
export function formatBytes(n: number): string {
  return n >= 1048576
    ? `${(n / 1048576).toFixed(1)} MB`
    : `${Math.max(1, Math.round(n / 1024))} KB`;
}

/**
 * The last frame of a `duration`-second composition rendered at `fps` (at least frame 0).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(lastFrameAt(2, 30), 59);
 * assert.equal(lastFrameAt(0.01, 24), 0);
 * ```
 */
export function lastFrameAt(duration: number, fps: number): number {
  return Math.max(1, Math.round(duration * fps + 1e-9)) - 1;
}

/** The dialog's fields, as typed. */
export interface RenderDialogFields {
  /** The changed variable values. */
  values: Record<string, unknown>;
  /** The composition's entry file. */
  entry: string;
  /** `mp4`, `png`, `still`, … */
  format: string;
  /** The quality preset. */
  quality: string;
  /** The scale, `"1"` for none. */
  scale: string;
  /** The frame rate field. */
  fps: string;
  /** The first frame field. */
  from: string;
  /** The last frame field. */
  to: string;
  /** The last frame of the whole composition at the chosen rate (the "to" field's max). */
  toMax: string;
  /** The output name, "" for the default. */
  name: string;
}

/**
 * The render request's body: only what differs from the composition's own (scale 1, its
 * frame rate `compositionFps`, the whole range) is sent; a still renders the one frame in
 * "from".
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const fields = { values: {}, entry: "index.html", format: "mp4", quality: "standard",
 *   scale: "1", fps: "30", from: "0", to: "59", toMax: "59", name: " " };
 * assert.deepEqual(renderRequestBody(fields, 30), {
 *   values: {}, entry: "index.html", format: "mp4", quality: "standard",
 * });
 * assert.deepEqual(renderRequestBody({ ...fields, format: "still", from: "12" }, 30), {
 *   values: {}, entry: "index.html", format: "still", quality: "standard", from: 12, to: 12,
 * });
 * ```
 */
export function renderRequestBody(
  fields: RenderDialogFields,
  compositionFps: number,
): Record<string, unknown> {
  const from = Number(fields.from);
  const to = Number(fields.to);
  return {
    values: fields.values,
    entry: fields.entry,
    format: fields.format,
    quality: fields.quality,
    ...(fields.scale !== "1" ? { scale: Number(fields.scale) } : {}),
    ...(fields.fps !== String(+compositionFps.toFixed(3)) ? { fps: Number(fields.fps) } : {}),
    ...(fields.format === "still"
      ? { from, to: from }
      : from !== 0 || to !== Number(fields.toMax)
      ? { from, to }
      : {}),
    ...(fields.name.trim() ? { name: fields.name.trim() } : {}),
  };
}
