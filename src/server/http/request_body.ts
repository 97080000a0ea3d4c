/**
 * Bounded request bodies: every body the API reads is streamed with a size cap, so a
 * hostile client cannot make the server buffer or parse more than the cap. A body over
 * its cap (by `Content-Length`, or by the bytes actually sent) is a 413
 * `vid_payload_too_large` before anything is parsed.
 *
 * @module
 */

import type { Context } from "hono";
import { open, unlink } from "node:fs/promises";
import { MAX_JSON_BODY_BYTES } from "../context.ts";
import { ApiError, invalid } from "./errors.ts";

/**
 * Reads a request body up to `limit` bytes. `tooLarge` builds the 413 thrown as soon as
 * the declared or received size passes the limit (the rest is not read).
 *
 * @example
 * ```ts no_run
 * import { Hono } from "hono";
 * import { ApiError } from "./errors.ts";
 *
 * new Hono().post("/echo", async (c) => {
 *   const bytes = await readLimited(c, 1024, () => new ApiError(413, "vid_payload_too_large", "…"));
 *   return c.json({ bytes: bytes.length });
 * });
 * ```
 */
export async function readLimited(
  c: Context,
  limit: number,
  tooLarge: () => ApiError,
): Promise<Uint8Array> {
  const declared = Number(c.req.header("content-length"));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const reader = c.req.raw.body?.getReader();
  if (!reader) return new Uint8Array();
  const parts: Uint8Array[] = [];
  let size = 0;
  while (true) {
    const { value, done } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge();
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    bytes.set(part, offset);
    offset += part.length;
  }
  return bytes;
}

/**
 * Streams a request body of at most `limit` bytes to `file` (so a slow or large upload holds
 * disk, not memory); past the limit the file is removed and `tooLarge()` thrown.
 *
 * @returns The number of bytes written.
 */
export async function bodyToFile(
  c: Context,
  limit: number,
  file: string,
  tooLarge: () => ApiError,
): Promise<number> {
  const declared = Number(c.req.header("content-length"));
  if (Number.isFinite(declared) && declared > limit) throw tooLarge();
  const handle = await open(file, "wx", 0o600);
  let size = 0;
  try {
    const reader = c.req.raw.body?.getReader();
    while (reader) {
      const { value, done } = await reader.read();
      if (done) break;
      size += value.length;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      let written = 0;
      while (written < value.length) {
        written += (await handle.write(value, written)).bytesWritten;
      }
    }
  } catch (error) {
    await handle.close().catch(() => {});
    await unlink(file).catch(() => {});
    throw error;
  }
  await handle.close();
  return size;
}

/**
 * Reads a JSON object body of at most {@linkcode MAX_JSON_BODY_BYTES} (1 MiB); larger is a
 * 413, anything but a JSON object a 400 naming `body`.
 */
export async function jsonBody(c: Context): Promise<Record<string, unknown>> {
  const bytes = await readLimited(
    c,
    MAX_JSON_BODY_BYTES,
    () =>
      new ApiError(
        413,
        "vid_payload_too_large",
        `the JSON body is larger than the ${MAX_JSON_BODY_BYTES / 1024 / 1024} MiB ` +
          `(${MAX_JSON_BODY_BYTES} bytes) limit; send large inputs (media) as files in the ` +
          `project zip or as URLs`,
        "body",
      ),
  );
  let body: unknown;
  try {
    body = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw invalid("body", "must be a JSON object");
  }
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw invalid("body", "must be a JSON object");
  }
  return body as Record<string, unknown>;
}

/**
 * At most `size` holders at once; the others wait in order. Bounds how many large bodies
 * are held in memory together.
 *
 * @example
 * ```ts no_run
 * import { Hono } from "hono";
 * import { ApiError } from "./errors.ts";
 *
 * const tooLarge = () => new ApiError(413, "vid_payload_too_large", "…");
 * const slots = new Slots(4);
 * new Hono().post("/echo", async (c) => {
 *   const bytes = await slots.run(async () => await readLimited(c, 1024, tooLarge));
 *   return c.json({ bytes: bytes.length });
 * });
 * ```
 */
export class Slots {
  readonly size: number;
  #busy = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.size = size;
  }

  /** Runs `fn` once a slot is free, and frees it after. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.#busy >= this.size) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    } else {
      this.#busy++;
    }
    try {
      return await fn();
    } finally {
      const next = this.#waiting.shift();
      if (next) next();
      else this.#busy--;
    }
  }
}
