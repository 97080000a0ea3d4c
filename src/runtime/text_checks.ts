/**
 * What `vid check`'s text probe (`src/runtime/text_probe.ts`, run in the page) judges a
 * frame's text by: pure, so the host and the tests use the very same rules.
 *
 * @module
 */

/** One finding of the text probe (`pageTextFindings` in `src/runtime/text_probe.ts`). */
export interface TextFinding {
  kind: "bad-text" | "text-overflow";
  /** The element holding the text, as `tag#id.class`. */
  element: string;
  text: string;
  /** The bad token, or which edges the text runs past and by how much. */
  detail: string;
}

/**
 * The token that shows a value went wrong on its way to the screen, or undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(badToken("Total: NaN"), "NaN");
 * assert.equal(badToken("Nancy"), undefined);
 * ```
 */
export function badToken(text: string): string | undefined {
  return /\bNaN\b|\bundefined\b|\[object Object\]/.exec(text)?.[0];
}

/**
 * How far a text's box runs past the canvas's edges (half a pixel forgiven), one phrase per edge.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const box = { left: -10, right: 330, top: 20, bottom: 40 };
 * assert.deepEqual(overflowEdges(box, 320, 180), [
 *   "10 px past the left edge",
 *   "10 px past the right edge",
 * ]);
 * ```
 */
export function overflowEdges(
  r: { left: number; right: number; top: number; bottom: number },
  width: number,
  height: number,
): string[] {
  return [
    r.left < -0.5 ? `${Math.round(-r.left)} px past the left edge` : "",
    r.right > width + 0.5 ? `${Math.round(r.right - width)} px past the right edge` : "",
    r.top < -0.5 ? `${Math.round(-r.top)} px past the top edge` : "",
    r.bottom > height + 0.5 ? `${Math.round(r.bottom - height)} px past the bottom edge` : "",
  ].filter((s) => s !== "");
}
