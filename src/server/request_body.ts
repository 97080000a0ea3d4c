/**
 * Bounded request bodies: every body the API reads is streamed with a size cap, so a
 * hostile client cannot make the server buffer or parse more than the cap. A body over
 * its cap (by `Content-Length`, or by the bytes actually sent) is a 413
 * `vid_payload_too_large` before anything is parsed.
 *
 * @module
 */

import type { Context } from "hono";
import { MAX_JSON_BODY_BYTES } from "./context.ts";
import { ApiError, invalid } from "./errors.ts";

/**
 * Reads a request body up to `limit` bytes. `tooLarge` builds the 413 thrown as soon as
 * the declared or received size passes the limit (the rest is not read).
 *
 * @example
 * ```ts
 * const bytes = await readLimited(c, 1024, () => new ApiError(413, "vid_payload_too_large", "…"));
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
