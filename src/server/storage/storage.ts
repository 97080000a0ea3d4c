/**
 * Object storage for the render server: uploaded project zips, rendered videos and
 * thumbnails live behind one {@linkcode Storage} interface with two back ends, a local
 * folder (`FsStorage`, storage_file.ts) and S3 or anything speaking its protocol
 * (`S3Storage`, storage_s3.ts); `storageFromUrl` (storage_url.ts) picks one from a
 * `--storage` URL. This module is what they share: the interface, its error and the key
 * rules, so a server and its back ends depend on the contract and not on each other.
 *
 * Keys are relative paths of `/`-separated segments (`renders/abc123/video.mp4`). Both
 * backends accept the same keys and reject the same bad ones, so a server behaves the
 * same whichever it is given: no empty segments, no `.` or `..`, no leading `/`, no
 * backslashes, and no segment starting with `.` (the folder backend keeps its in-progress
 * writes under such names).
 *
 * The storage modules use web standards, `node:` built-ins and the AWS SDK only, so they run
 * under Deno and Node alike.
 *
 * @module
 */

import { mkdir, open, unlink } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { EXIT_FAILED, VidError } from "../../errors.ts";

/** An object read back from storage. */
export interface StoredObject {
  /** Size in bytes. */
  size: number;
  /** The content. Read it to the end or cancel it, so the file or socket is released. */
  body: ReadableStream<Uint8Array>;
}

/** Where the render server keeps project zips, videos and thumbnails. */
export interface Storage {
  /**
   * Stores a local file under key (streamed, not loaded whole); the content type defaults to
   * the key's extension's (src/util/mime.ts).
   */
  putFile(key: string, file: string, contentType?: string): Promise<void>;
  /** Stores bytes under key. */
  putBytes(key: string, bytes: Uint8Array, contentType?: string): Promise<void>;
  /** The object under key; undefined when missing. */
  get(key: string): Promise<StoredObject | undefined>;
  /** Copies an object to a local file (for rendering). Throws StorageError when missing. */
  download(key: string, file: string): Promise<void>;
  /** Whether an object is stored under key. */
  exists(key: string): Promise<boolean>;
  /** Deletes every object whose key starts with prefix; resolves to how many were deleted. */
  deletePrefix(prefix: string): Promise<number>;
  /**
   * Resolves when the store can be read and written (`GET /readyz`); throws a
   * {@linkcode StorageError} saying what is wrong otherwise.
   */
  ready(): Promise<void>;
}

/** A key, prefix or storage URL is invalid, or an object is missing or could not be handled. */
export class StorageError extends VidError {
  /** Always `"StorageError"`. */
  override name = "StorageError";
  /** The key, prefix or storage URL at fault. */
  override readonly field: string;

  /**
   * Creates the error.
   *
   * @param message What is wrong and how to fix it.
   * @param field The storage URL or key at fault.
   * @param options The cause.
   */
  constructor(message: string, field: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
    this.field = field;
  }
}

const KEY_RULES = 'keys are relative paths of non-empty segments separated by "/", ' +
  'with no ".", ".." or other segment starting with "." and no backslashes';

/**
 * Throws StorageError unless key follows the key rules; returns its segments. Every back end
 * checks its keys here, so they accept and refuse the same ones.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keySegments } from "./storage.ts";
 *
 * assert.deepEqual(keySegments("renders/abc/video.mp4"), ["renders", "abc", "video.mp4"]);
 * assert.throws(() => keySegments("renders/../secrets"));
 * ```
 *
 * @param key The key or prefix to check.
 * @param what Whether it is a key or a prefix (which may end with "/").
 * @returns The key's segments.
 * @throws {StorageError} When the key breaks a rule; `field` is the key.
 */
export function keySegments(key: string, what: "key" | "prefix" = "key"): string[] {
  const fail = (why: string): never => {
    throw new StorageError(
      `Invalid storage ${what} ${JSON.stringify(key)}: ${why}; ${KEY_RULES}`,
      key,
    );
  };
  if (key === "") fail("it is empty");
  if (key.startsWith("/")) fail("it is absolute");
  if (key.includes("\\")) fail(`backslash at position ${key.indexOf("\\")}`);
  if (key.includes("\0")) fail(`NUL character at position ${key.indexOf("\0")}`);
  // A prefix may end with "/" to mean "everything in this folder".
  const body = what === "prefix" && key.endsWith("/") ? key.slice(0, -1) : key;
  const segments = body.split("/");
  for (const [i, segment] of segments.entries()) {
    if (segment === "") fail(`segment ${i + 1} is empty`);
    if (segment.startsWith(".")) fail(`segment ${i + 1} is ${JSON.stringify(segment)}`);
  }
  return segments;
}

/**
 * The error for a key with no object under it, the same from every back end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { missing } from "./storage.ts";
 *
 * assert.equal(missing("renders/abc/video.mp4").field, "renders/abc/video.mp4");
 * ```
 *
 * @param key The key that has no object.
 * @returns The error to throw.
 */
export function missing(key: string): StorageError {
  return new StorageError(`No object stored under key ${JSON.stringify(key)}`, key);
}

/**
 * Mode of stored objects and of the files they are downloaded to: the owner only. Tenants'
 * projects and videos must stay private also when the storage folder is outside the data
 * folder (`--storage file:///elsewhere`), whose 0700 would otherwise be the only guard.
 */
export const FILE_MODE = 0o600;
/** Mode of the folders the file backend creates, see {@linkcode FILE_MODE}. */
export const FOLDER_MODE = 0o700;

/**
 * Writes a web stream to a local file, creating its folder; removes the file on failure. Both
 * back ends' `download` end here, so a downloaded file has the same mode from either.
 *
 * @example
 * ```ts no_run
 * import { streamToFile } from "./storage.ts";
 *
 * await streamToFile(new Blob(["hi"]).stream(), "/tmp/work/note.txt");
 * ```
 *
 * @param body The content.
 * @param file The local file to write.
 */
export async function streamToFile(body: ReadableStream<Uint8Array>, file: string): Promise<void> {
  await mkdir(dirname(resolve(file)), { recursive: true, mode: FOLDER_MODE });
  const handle = await open(file, "w", FILE_MODE);
  try {
    for await (const chunk of body) {
      let written = 0;
      while (written < chunk.byteLength) {
        const { bytesWritten } = await handle.write(chunk, written);
        written += bytesWritten;
      }
    }
    await handle.close();
  } catch (error) {
    await handle.close().catch(() => {});
    await unlink(file).catch(() => {});
    throw error;
  }
}
