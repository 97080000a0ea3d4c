/**
 * Seeded randomness for the page: `Math.random`, `crypto.getRandomValues` and
 * `crypto.randomUUID` draw from one mulberry32 stream, so a render from frame 0 and a chunk
 * that starts later see the same numbers in the same order.
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`).
 *
 * @module
 */

/**
 * A mulberry32 generator: numbers in [0, 1), the same sequence for the same seed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const a = seededRandom(7);
 * const b = seededRandom(7);
 * assert.equal(a(), b());
 * assert.ok(a() < 1);
 * ```
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return (): number => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Formats 16 random bytes as a version 4 UUID (the version and variant bits set).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(uuidFromBytes(new Uint8Array(16)), "00000000-0000-4000-8000-000000000000");
 * ```
 */
export function uuidFromBytes(b: Uint8Array): string {
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = Array.from(b, (v) => v.toString(16).padStart(2, "0")).join("");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Replaces the page's random sources with one stream seeded by `seed`.
 *
 * @example
 * ```ts no_run
 * // In the page, before its scripts run:
 * installSeededRandom(42);
 * console.log(Math.random(), crypto.randomUUID()); // the same on every render
 * ```
 */
export function installSeededRandom(seed: number): void {
  const random = seededRandom(seed);
  Math.random = random;
  const fillRandom = <T extends ArrayBufferView | null>(array: T): T => {
    if (array) {
      const bytes = new Uint8Array(array.buffer, array.byteOffset, array.byteLength);
      for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(random() * 256);
    }
    return array;
  };
  Object.defineProperty(crypto, "getRandomValues", { value: fillRandom, configurable: true });
  Object.defineProperty(crypto, "randomUUID", {
    configurable: true,
    value: () => uuidFromBytes(fillRandom(new Uint8Array(16))),
  });
}
