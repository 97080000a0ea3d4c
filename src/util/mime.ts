/**
 * The one content-type table: what a file is served or stored as, by its extension. The
 * project server Chromium renders from, the studio's render downloads, the hosted server's
 * file downloads and S3 storage, the Lambda site upload and the worker's uploads all ask
 * here, so a file type added once is served the same way by each.
 *
 * Text types carry `charset=utf-8` (a page without it may be decoded as Latin-1); JSON does
 * not (`application/json` is UTF-8 by definition). Unknown extensions are
 * `application/octet-stream`, which browsers neither render nor sniff as script.
 *
 * @module
 */

/** Content type by lower-case extension (without the dot). */
export const CONTENT_TYPES: Readonly<Record<string, string>> = {
  html: "text/html; charset=utf-8",
  htm: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  txt: "text/plain; charset=utf-8",
  json: "application/json",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  ico: "image/x-icon",
  mp4: "video/mp4",
  webm: "video/webm",
  mov: "video/quicktime",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  wav: "audio/wav",
  ogg: "audio/ogg",
  woff: "font/woff",
  woff2: "font/woff2",
  ttf: "font/ttf",
  otf: "font/otf",
};

/** The type of anything not in {@linkcode CONTENT_TYPES}. */
export const UNKNOWN_CONTENT_TYPE = "application/octet-stream";

/**
 * The content type of a file by its extension (case-insensitive), or `undefined` when the
 * table does not know it.
 *
 * @param path A file name, path, URL path or object key.
 * @returns The type, or `undefined`.
 *
 * @example
 * ```ts
 * knownContentType("renders/out.MP4"); // "video/mp4"
 * knownContentType("archive.zip"); // undefined
 * ```
 */
export function knownContentType(path: string): string | undefined {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  if (dot < 0) return undefined;
  const ext = name.slice(dot + 1).toLowerCase();
  return Object.hasOwn(CONTENT_TYPES, ext) ? CONTENT_TYPES[ext] : undefined;
}

/**
 * The content type of a file by its extension, `application/octet-stream` when unknown.
 *
 * @param path A file name, path, URL path or object key.
 * @returns The type.
 *
 * @example
 * ```ts
 * contentTypeOf("index.html"); // "text/html; charset=utf-8"
 * contentTypeOf("data.bin"); // "application/octet-stream"
 * ```
 */
export function contentTypeOf(path: string): string {
  return knownContentType(path) ?? UNKNOWN_CONTENT_TYPE;
}
