/**
 * Canonical JSON: object keys sorted and `undefined` members left out, so equal values
 * serialise, and hash, equally whatever their key order. Batch render ids and the server's
 * idempotency check both depend on it: its output for a given value must never change.
 *
 * @module
 */

/**
 * JSON with every object's keys sorted (by UTF-16 code units) and `undefined` members left
 * out.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(canonicalJson({ b: 1, a: [true, { d: null, c: "x" }] }), '{"a":[true,{"c":"x","d":null}],"b":1}');
 * ```
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).filter((k) => record[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
