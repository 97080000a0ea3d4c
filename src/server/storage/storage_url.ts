/**
 * `--storage` URLs: which {@linkcode Storage} back end a URL names, and the errors for one
 * that names none. Its own module because it is the one place that knows both back ends;
 * the back ends and the server's code know only the interface in storage.ts.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import process from "node:process";
import { type Storage, StorageError } from "./storage.ts";
import { FsStorage } from "./storage_file.ts";
import { S3Storage } from "./storage_s3.ts";

const URL_FORMS = 'accepted forms: a folder path, "file:///absolute/path", or ' +
  '"s3://bucket[/prefix][?endpoint=http://host:port&region=us-east-1&path_style=1]"';

/** Query parameters an `s3://` storage URL may carry. */
const S3_PARAMS = new Set(["endpoint", "region", "path_style"]);

/**
 * Opens the storage a URL names: a plain folder path or `file:///absolute/path` gives
 * {@linkcode FsStorage}; `s3://bucket/optional/prefix` gives {@linkcode S3Storage}, with
 * query parameters `endpoint` (an S3-compatible service), `region` and `path_style`
 * (`1`/`true` or `0`/`false`). Access keys come from `AWS_ACCESS_KEY_ID` and
 * `AWS_SECRET_ACCESS_KEY` (and `AWS_SESSION_TOKEN`) when set, otherwise from the SDK's
 * default chain.
 *
 * @example
 * ```ts no_run
 * import { storageFromUrl } from "./storage_url.ts";
 *
 * const local = storageFromUrl("./storage");
 * const s3 = storageFromUrl("s3://vid-renders/prod?region=eu-west-1");
 * const loopback = storageFromUrl("s3://vid?endpoint=http://127.0.0.1:4568&path_style=1");
 * ```
 *
 * @param url The storage URL or folder path.
 * @returns The storage it names.
 * @throws {StorageError} When the URL is neither form or has a bad parameter; `field` is the URL.
 */
export function storageFromUrl(url: string): Storage {
  const scheme = /^([a-z][a-z0-9+.-]+):/i.exec(url)?.[1]?.toLowerCase();
  if (scheme === undefined) {
    // One-letter "schemes" are Windows drive letters (C:\renders): a path too.
    if (url.trim() === "") throw new StorageError(`Empty storage URL; ${URL_FORMS}`, url);
    return new FsStorage(url);
  }
  if (scheme === "file") {
    try {
      return new FsStorage(fileURLToPath(url));
    } catch (error) {
      throw new StorageError(
        `Invalid file storage URL ${JSON.stringify(url)}: ${
          (error as Error).message
        }; ${URL_FORMS}`,
        url,
        {
          cause: error,
        },
      );
    }
  }
  if (scheme !== "s3") {
    throw new StorageError(
      `Unsupported storage URL ${JSON.stringify(url)} (scheme "${scheme}:"); ${URL_FORMS}`,
      url,
    );
  }
  // Split by hand: WHATWG URL parsing would resolve ".." in the prefix instead of refusing it.
  const parts = /^s3:\/\/([^/?#]*)([^?#]*)(?:\?([^#]*))?(#.*)?$/i.exec(url)!;
  const [, bucket, path, query, fragment] = parts;
  if (bucket === "") {
    throw new StorageError(
      `S3 storage URL ${JSON.stringify(url)} names no bucket; ${URL_FORMS}`,
      url,
    );
  }
  if (fragment !== undefined) {
    throw new StorageError(
      `S3 storage URL ${JSON.stringify(url)} has a fragment (${fragment}); ${URL_FORMS}`,
      url,
    );
  }
  const params = new URLSearchParams(query ?? "");
  for (const name of params.keys()) {
    if (!S3_PARAMS.has(name)) {
      throw new StorageError(
        `Unknown parameter "${name}" in storage URL ${JSON.stringify(url)}; known: ${
          [...S3_PARAMS].join(", ")
        }`,
        url,
      );
    }
  }
  const endpoint = params.get("endpoint") ?? undefined;
  if (endpoint !== undefined && !/^https?:\/\/[^/]/.test(endpoint)) {
    throw new StorageError(
      `Invalid endpoint ${JSON.stringify(endpoint)} in storage URL ${
        JSON.stringify(url)
      }: expected http://host:port or https://host`,
      url,
    );
  }
  const pathStyle = params.get("path_style");
  let forcePathStyle: boolean | undefined;
  if (pathStyle !== null) {
    if (/^(1|true)$/i.test(pathStyle)) forcePathStyle = true;
    else if (/^(0|false)$/i.test(pathStyle)) forcePathStyle = false;
    else {
      throw new StorageError(
        `Invalid path_style ${JSON.stringify(pathStyle)} in storage URL ${
          JSON.stringify(url)
        }: expected 1, 0, true or false`,
        url,
      );
    }
  }
  const accessKeyId = process.env.AWS_ACCESS_KEY_ID;
  const secretAccessKey = process.env.AWS_SECRET_ACCESS_KEY;
  const sessionToken = process.env.AWS_SESSION_TOKEN || undefined;
  try {
    return new S3Storage({
      bucket,
      region: params.get("region") ?? undefined,
      endpoint,
      forcePathStyle,
      credentials: accessKeyId && secretAccessKey
        ? { accessKeyId, secretAccessKey, sessionToken }
        : undefined,
      prefix: decodeURIComponent(path),
    });
  } catch (error) {
    if (error instanceof StorageError) {
      throw new StorageError(
        `Invalid prefix in storage URL ${JSON.stringify(url)}: ${error.message}`,
        url,
        { cause: error },
      );
    }
    throw error;
  }
}
