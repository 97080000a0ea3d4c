/**
 * The render request, declared once: option declarations, cross-field rules and the error
 * of a bad option. See `options.ts` for how the surfaces derive from it.
 *
 * @module
 */

export * from "./errors.ts";
export * from "./formats.ts";
export * from "./options.ts";
export * from "./rules.ts";
