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
  /**
   * Bad text: the variables that may have put it there (a `data-var-text` binding, a value
   * that prints as the token), and the ids of dropped declarations (`dropped:<id>`).
   */
  suspects?: string[];
}

/** The attribute that lets an element (and what it holds) show `null`, `NaN` and the like. */
export const TEXT_OK_ATTRIBUTE = "data-text-ok";

/**
 * The token that shows a value went wrong on its way to the screen, or undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(badToken("Total: NaN"), "NaN");
 * assert.equal(badToken("Hi null"), "null");
 * assert.equal(badToken("Nancy"), undefined);
 * ```
 */
export function badToken(text: string): string | undefined {
  return /\bNaN\b|\bundefined\b|\bnull\b|\[object Object\]/.exec(text)?.[0];
}

/**
 * The variables that may have put `token` on screen: `bound` (an element's `data-var-text`),
 * then each value that prints as the token, then those whose value is not of their declared
 * type (`mistyped`: `"ten"` for a number gives `NaN`), then the dropped declarations' ids as
 * `dropped:<id>` (reading one yields `undefined`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(
 *   textSuspects("NaN", { price: "abc", name: "Ann" }, ["tax"], undefined, ["price"]),
 *   ["price", "dropped:tax"],
 * );
 * assert.deepEqual(textSuspects("null", { name: null }, [], "name"), ["name"]);
 * ```
 */
export function textSuspects(
  token: string,
  values: Record<string, unknown>,
  dropped: readonly string[],
  bound: string | undefined,
  mistyped: readonly string[] = [],
): string[] {
  const found = new Set<string>(bound !== undefined ? [bound] : []);
  for (const [id, value] of Object.entries(values)) {
    if (value === null || typeof value === "object" ? String(value) === token : false) {
      found.add(id);
    }
  }
  for (const id of mistyped) found.add(id);
  for (const id of dropped) found.add(`dropped:${id}`);
  return [...found];
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

/**
 * What a bad-text finding says, at `vid check`'s sampled frames and a render's frame 0: the
 * element, the text, the token, the variables that may have put it there (a dropped
 * declaration named as such) and the opt-out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   badTextMessage({ kind: "bad-text", element: "h1#hi", text: "Hi NaN", detail: "NaN", suspects: ["dropped:price"] }),
 *   '<h1#hi> shows "Hi NaN": NaN reached the screen, perhaps from the variable "price", whose ' +
 *     "declaration is dropped (vid check names why); data-text-ok on the element allows such text",
 * );
 * ```
 */
export function badTextMessage(finding: TextFinding): string {
  const one = finding.text.replace(/\s+/g, " ");
  const text = one.length > 60 ? `${one.slice(0, 57)}...` : one;
  const suspects = finding.suspects ?? [];
  const dropped = suspects.filter((s) => s.startsWith("dropped:")).map((s) => s.slice(8));
  const values = suspects.filter((s) => !s.startsWith("dropped:"));
  const from = values.length > 0
    ? `, from the variable ${values.map((id) => `"${id}"`).join(" or ")}` +
      (dropped.length > 0 ? ` (or ${dropped.map((id) => `"${id}"`).join(", ")}, dropped)` : "")
    : dropped.length > 0
    ? `, perhaps from the variable ${dropped.map((id) => `"${id}"`).join(" or ")}, whose ` +
      "declaration is dropped (vid check names why)"
    : " (a variable the page reads is missing or of another type?)";
  return `<${finding.element}> shows "${text}": ${finding.detail} reached the screen${from}; ` +
    `${TEXT_OK_ATTRIBUTE} on the element allows such text`;
}
