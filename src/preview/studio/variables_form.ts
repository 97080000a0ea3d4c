/**
 * The studio's variables panel, the parts that need no page: what a typed field means as a
 * value, and which values survive a reload of the composition.
 *
 * @module
 */

import type { Declaration } from "./types.ts";

/**
 * A number field's value: the number typed, or the text itself when it is no number, so
 * the check names it with the CLI's message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(numberFieldValue(" 2.5 "), 2.5);
 * assert.equal(numberFieldValue("abc"), "abc");
 * assert.equal(numberFieldValue(""), "");
 * ```
 */
export function numberFieldValue(text: string): number | string {
  const trimmed = text.trim();
  const n = Number(trimmed);
  return trimmed !== "" && Number.isFinite(n) ? n : trimmed;
}

/**
 * The values after the composition was read again: per declared variable, the URL's value
 * (once, at start-up), else the value it had when a variable of the same id and type was
 * declared before, else its default. Variables no longer declared are dropped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const title = { id: "title", type: "string" as const, label: "Title" };
 * const count = { id: "count", type: "number" as const, label: "Count" };
 * assert.deepEqual(
 *   keptValues([title, count], { title: "a", count: 1 }, [title], { title: "typed", gone: 1 }),
 *   { title: "typed", count: 1 },
 * );
 * ```
 */
export function keptValues(
  declarations: readonly Declaration[],
  defaults: Record<string, unknown>,
  before: readonly Declaration[] | undefined,
  values: Record<string, unknown>,
  urlValues?: Record<string, unknown>,
): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const d of declarations) {
    const old = before?.find((o) => o.id === d.id && o.type === d.type);
    kept[d.id] = urlValues && d.id in urlValues
      ? urlValues[d.id]
      : old && d.id in values
      ? values[d.id]
      : defaults[d.id];
  }
  return kept;
}
