/**
 * Identifiers, hashes and signatures of the hosted API: random ids and credentials,
 * SHA-256 for stored credentials (only hashes are stored), PBKDF2 for passwords, and
 * HMAC-signed, expiring, single-purpose URLs. Web Crypto only.
 *
 * @module
 */

const encoder = new TextEncoder();

function hex(bytes: ArrayBuffer | Uint8Array): string {
  return Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A random identifier such as `rnd_3f9a…` (`bytes` of entropy, hex). */
export function randomId(prefix: string, bytes = 12): string {
  return `${prefix}_${hex(crypto.getRandomValues(new Uint8Array(bytes)))}`;
}

/** Hex SHA-256 of a string or bytes. */
export async function sha256Hex(data: string | Uint8Array): Promise<string> {
  const bytes = typeof data === "string" ? encoder.encode(data) : data;
  return hex(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

/** Compares two strings in time independent of where they differ. */
export function safeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

async function hmacKey(secret: string): Promise<CryptoKey> {
  return await crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
}

/** Hex HMAC-SHA256 of `message`. */
export async function hmacHex(secret: string, message: string): Promise<string> {
  return hex(await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(message)));
}

/**
 * Signs `purpose` + `path` until `expires` (unix seconds): the signature only opens that
 * path for that purpose.
 */
export async function signPath(
  secret: string,
  purpose: string,
  path: string,
  expires: number,
): Promise<string> {
  return await hmacHex(secret, `${purpose}\n${path}\n${expires}`);
}

/** Whether a signature made by {@linkcode signPath} is valid now. */
export async function verifyPath(
  secret: string,
  purpose: string,
  path: string,
  expires: number,
  signature: string,
  now: number = Math.floor(Date.now() / 1000),
): Promise<boolean> {
  if (!Number.isInteger(expires) || expires < now) return false;
  return safeEqual(await signPath(secret, purpose, path, expires), signature);
}

/**
 * Iterations of new password hashes: OWASP's current figure for PBKDF2-HMAC-SHA256
 * (600,000; about 0.2 s here). PBKDF2 because WebCrypto has it under Deno and Node alike,
 * with no dependency; scrypt or Argon2id would need node:crypto's scrypt (not in the
 * Node-neutral path of every runtime we ship) or a WebAssembly package. Hashes made with
 * fewer (vid used 100,000) still verify and are rewritten at the next sign-in
 * ({@linkcode needsRehash}).
 */
export const PASSWORD_ITERATIONS = 600000;

/**
 * PBKDF2-SHA256 password hash, `pbkdf2$<iterations>$<salt hex>$<hash hex>`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const stored = await hashPassword("a long password");
 * assert.match(stored, /^pbkdf2\$600000\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
 * assert.equal(await verifyPassword("a long password", stored), true);
 * ```
 */
export async function hashPassword(
  password: string,
  iterations: number = PASSWORD_ITERATIONS,
): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(16));
  return `pbkdf2$${iterations}$${hex(salt)}$${await pbkdf2(password, salt, iterations)}`;
}

/**
 * Whether a stored hash was made with weaker parameters than new ones get: the caller
 * rehashes the password it just verified.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(needsRehash(await hashPassword("pw", 100000)), true);
 * assert.equal(needsRehash(await hashPassword("pw")), false);
 * ```
 */
export function needsRehash(stored: string): boolean {
  const [scheme, iterations] = stored.split("$");
  return scheme !== "pbkdf2" || !(Number(iterations) >= PASSWORD_ITERATIONS);
}

/** Whether `password` matches a {@linkcode hashPassword} hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, iterations, saltHex, hash] = stored.split("$");
  if (scheme !== "pbkdf2" || !saltHex || !hash) return false;
  const salt = new Uint8Array(saltHex.match(/../g)!.map((b) => parseInt(b, 16)));
  return safeEqual(await pbkdf2(password, salt, Number(iterations)), hash);
}

async function pbkdf2(password: string, salt: Uint8Array, iterations: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", encoder.encode(password), "PBKDF2", false, [
    "deriveBits",
  ]);
  const bits = await crypto.subtle.deriveBits(
    { name: "PBKDF2", hash: "SHA-256", salt: salt as Uint8Array<ArrayBuffer>, iterations },
    key,
    256,
  );
  return hex(bits);
}
