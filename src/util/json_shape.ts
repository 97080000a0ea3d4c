/**
 * Shape checks of parsed JSON, shared by every module that reads untyped input (variables,
 * batch lines, execution input, request bodies, the credentials file).
 *
 * @module
 */

/**
 * Whether a parsed JSON value is an object (not an array, not null).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(isPlainObject({ a: 1 }), true);
 * assert.equal(isPlainObject([1]), false);
 * ```
 */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
