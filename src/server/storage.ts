/**
 * Object storage for the render server: uploaded project zips, rendered videos and
 * thumbnails live behind one {@linkcode Storage} interface with two backends, a local
 * folder ({@linkcode FsStorage}) and S3 or anything speaking its protocol
 * ({@linkcode S3Storage}). {@linkcode storageFromUrl} picks one from a `--storage` URL.
 *
 * Keys are relative paths of `/`-separated segments (`renders/abc123/video.mp4`). Both
 * backends accept the same keys and reject the same bad ones, so a server behaves the
 * same whichever it is given: no empty segments, no `.` or `..`, no leading `/`, no
 * backslashes, and no segment starting with `.` (the folder backend keeps its in-progress
 * writes under such names).
 *
 * The module uses web standards, `node:` built-ins and the AWS SDK only, so it runs under
 * Deno and Node alike.
 *
 * @module
 */

import {
  access,
  chmod,
  copyFile,
  mkdir,
  open,
  readdir,
  rename,
  rm,
  rmdir,
  stat,
  unlink,
  writeFile,
} from "node:fs/promises";
import type { FileHandle } from "node:fs/promises";
import { constants, createReadStream } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import process from "node:process";
import { s3ClientFor } from "../aws/clients.ts";
import { contentTypeOf } from "../util/mime.ts";
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsCommand,
  PutObjectCommand,
  type S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { EXIT_FAILED, VidError } from "../errors.ts";

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

/** Throws StorageError unless key follows the key rules; returns its segments. */
function keySegments(key: string, what: "key" | "prefix" = "key"): string[] {
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

function isNodeError(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
}

function missing(key: string): StorageError {
  return new StorageError(`No object stored under key ${JSON.stringify(key)}`, key);
}

/** Size of the chunks a folder-backed object is read in. */
const READ_CHUNK = 256 * 1024;

/** A web stream over an open file; closes the handle when read to the end or cancelled. */
function fileStream(handle: FileHandle): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    async pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
      try {
        const buffer = new Uint8Array(READ_CHUNK);
        const { bytesRead } = await handle.read(buffer, 0, READ_CHUNK, null);
        if (bytesRead === 0) {
          await handle.close();
          controller.close();
        } else {
          controller.enqueue(buffer.subarray(0, bytesRead));
        }
      } catch (error) {
        await handle.close().catch(() => {});
        controller.error(error);
      }
    },
    async cancel(): Promise<void> {
      await handle.close();
    },
  });
}

/**
 * Mode of stored objects and of the files they are downloaded to: the owner only. Tenants'
 * projects and videos must stay private also when the storage folder is outside the data
 * folder (`--storage file:///elsewhere`), whose 0700 would otherwise be the only guard.
 */
const FILE_MODE = 0o600;
/** Mode of the folders the file backend creates, see {@linkcode FILE_MODE}. */
const FOLDER_MODE = 0o700;

/** Writes a web stream to a local file, creating its folder; removes the file on failure. */
async function streamToFile(body: ReadableStream<Uint8Array>, file: string): Promise<void> {
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

/**
 * Storage in a local folder: key `a/b/c.mp4` is the file `<root>/a/b/c.mp4`.
 *
 * Writes go to a hidden temporary file next to the target and are renamed into place, so
 * readers see either the old object or the whole new one. Objects are written mode 0600 in
 * folders created 0700 (the root too), readable by the server's user only. Content types
 * are not kept. A key cannot be both an object and a folder of other keys (`a` and `a/b`),
 * which S3 allows.
 *
 * @example Store and read back a thumbnail
 * ```ts no_run
 * import { FsStorage } from "./storage.ts";
 *
 * const storage = new FsStorage("/var/lib/vid/storage");
 * await storage.putBytes("thumbnails/abc.png", new Uint8Array([137, 80, 78, 71]));
 * const object = await storage.get("thumbnails/abc.png");
 * console.log(object?.size); // 4
 * await object?.body.cancel();
 * ```
 */
export class FsStorage implements Storage {
  /** Absolute path of the folder holding the objects. */
  readonly root: string;

  /** @param root Folder holding the objects; created on the first write. */
  constructor(root: string) {
    this.root = resolve(root);
  }

  /** Local path of the file holding key. */
  #path(key: string): string {
    return join(this.root, ...keySegments(key));
  }

  /** Whether the root's mode was set (once per instance). */
  #rootPrivate = false;

  /** Fills a temporary file next to key's file with write(), then renames it into place. */
  async #atomicWrite(key: string, write: (temp: string) => Promise<void>): Promise<void> {
    const path = this.#path(key);
    const dir = dirname(path);
    const temp = join(dir, `.${randomUUID()}.partial`);
    await mkdir(dir, { recursive: true, mode: FOLDER_MODE });
    if (!this.#rootPrivate) {
      // A root that existed before (`--storage file:///srv/videos`) keeps its mode through
      // mkdir: tighten it too, so key names (render ids) are not listed to other users.
      await chmod(this.root, FOLDER_MODE);
      this.#rootPrivate = true;
    }
    try {
      await write(temp);
      // copyFile takes the source's mode, and an existing temp keeps its own: set it here.
      await chmod(temp, FILE_MODE);
      await rename(temp, path);
    } catch (error) {
      await unlink(temp).catch(() => {});
      throw error;
    }
  }

  /**
   * Copies a local file in, streamed by the operating system.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage.ts";
   *
   * await new FsStorage("storage").putFile("renders/abc/video.mp4", "out/video.mp4");
   * ```
   */
  putFile(key: string, file: string, _contentType?: string): Promise<void> {
    return this.#atomicWrite(key, (temp) => copyFile(file, temp));
  }

  /**
   * Stores bytes.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage.ts";
   *
   * await new FsStorage("storage").putBytes("notes/a.txt", new TextEncoder().encode("hi"));
   * ```
   */
  putBytes(key: string, bytes: Uint8Array, _contentType?: string): Promise<void> {
    return this.#atomicWrite(key, (temp) => writeFile(temp, bytes, { mode: FILE_MODE }));
  }

  /**
   * Opens the object; undefined when missing.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage.ts";
   *
   * const object = await new FsStorage("storage").get("notes/a.txt");
   * if (object) console.log(await new Response(object.body).text());
   * ```
   */
  async get(key: string): Promise<StoredObject | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(this.#path(key), "r");
    } catch (error) {
      if (isNodeError(error, "ENOENT") || isNodeError(error, "ENOTDIR")) return undefined;
      throw error;
    }
    try {
      const info = await handle.stat();
      if (!info.isFile()) {
        await handle.close();
        return undefined;
      }
      return { size: info.size, body: fileStream(handle) };
    } catch (error) {
      await handle.close().catch(() => {});
      throw error;
    }
  }

  /**
   * Copies the object to a local file, creating its folder.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage.ts";
   *
   * await new FsStorage("storage").download("projects/abc/project.zip", "/tmp/work/project.zip");
   * ```
   */
  async download(key: string, file: string): Promise<void> {
    const object = await this.get(key);
    if (!object) throw missing(key);
    await streamToFile(object.body, file);
  }

  /**
   * Whether a file is stored under key.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage.ts";
   *
   * console.log(await new FsStorage("storage").exists("notes/a.txt"));
   * ```
   */
  /**
   * Resolves when the folder exists and this process may read and write it: a shared
   * filesystem that is unmounted or a folder removed under the server fails here first.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage.ts";
   *
   * await new FsStorage("storage").ready();
   * ```
   */
  async ready(): Promise<void> {
    try {
      if (!(await stat(this.root)).isDirectory()) {
        throw new StorageError("the storage folder is not a folder", "storage");
      }
      await access(this.root, constants.R_OK | constants.W_OK | constants.X_OK);
    } catch (error) {
      if (error instanceof StorageError) throw error;
      const code = (error as { code?: string }).code ?? "error";
      const why = code === "ENOENT"
        ? "is missing"
        : code === "EACCES"
        ? "is not readable and writable by this process"
        : `is not usable (${code})`;
      throw new StorageError(`the storage folder ${why}`, "storage", { cause: error });
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      return (await stat(this.#path(key))).isFile();
    } catch (error) {
      if (isNodeError(error, "ENOENT") || isNodeError(error, "ENOTDIR")) return false;
      throw error;
    }
  }

  /**
   * Deletes every object whose key starts with prefix (plain string prefix, so `renders/ab`
   * also matches `renders/abc/video.mp4`), then removes folders left empty.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage.ts";
   *
   * const deleted = await new FsStorage("storage").deletePrefix("projects/abc/");
   * ```
   */
  async deletePrefix(prefix: string): Promise<number> {
    const segments = keySegments(prefix, "prefix");
    // "a/b/" covers everything in folder a/b; "a/b" covers entries of folder a named b*.
    const namePrefix = prefix.endsWith("/") ? "" : segments.pop()!;
    const dir = join(this.root, ...segments);
    let entries: string[];
    try {
      entries = await readdir(dir);
    } catch (error) {
      if (isNodeError(error, "ENOENT") || isNodeError(error, "ENOTDIR")) return 0;
      throw error;
    }
    let deleted = 0;
    for (const name of entries) {
      if (name.startsWith(".") || !name.startsWith(namePrefix)) continue;
      const path = join(dir, name);
      const info = await stat(path);
      if (info.isDirectory()) {
        deleted += await countFiles(path);
        await rm(path, { recursive: true, force: true });
      } else {
        await unlink(path);
        deleted++;
      }
    }
    await this.#pruneEmpty(segments);
    return deleted;
  }

  /** Removes the folder of segments and its parents while they are empty, up to the root. */
  async #pruneEmpty(segments: string[]): Promise<void> {
    for (let depth = segments.length; depth > 0; depth--) {
      try {
        await rmdir(join(this.root, ...segments.slice(0, depth)));
      } catch {
        return; // Not empty (or already gone): the parents are not empty either.
      }
    }
  }
}

/** Counts the stored objects (non-hidden files) in a folder tree. */
async function countFiles(dir: string): Promise<number> {
  let count = 0;
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    if (entry.name.startsWith(".")) continue;
    if (entry.isDirectory()) count += await countFiles(join(dir, entry.name));
    else if (entry.isFile()) count++;
  }
  return count;
}

/** Options of {@linkcode S3Storage}. */
export interface S3StorageOptions {
  /** Bucket holding the objects. */
  bucket: string;
  /**
   * AWS region of the bucket.
   *
   * @default {"us-east-1"}
   */
  region?: string;
  /** Endpoint of an S3-compatible service (`http://127.0.0.1:4568`); AWS when unset. */
  endpoint?: string;
  /**
   * Address buckets as `<endpoint>/<bucket>` instead of `<bucket>.<endpoint>`; most
   * S3-compatible services on loopback need this.
   *
   * @default {false}
   */
  forcePathStyle?: boolean;
  /** Access keys; the SDK's default chain (environment, profile, instance role) when unset. */
  credentials?: { accessKeyId: string; secretAccessKey: string; sessionToken?: string };
  /**
   * Folder inside the bucket every key lives under (`vid/prod` stores `a.mp4` as
   * `vid/prod/a.mp4`); the bucket root when unset.
   */
  prefix?: string;
}

/** DeleteObjects takes at most this many keys per request. */
const DELETE_BATCH = 1000;

/**
 * Storage in an S3 bucket, or any service speaking the S3 protocol through `endpoint`.
 *
 * @example Against a local S3 server
 * ```ts no_run
 * import { S3Storage } from "./storage.ts";
 *
 * const storage = new S3Storage({
 *   bucket: "vid",
 *   endpoint: "http://127.0.0.1:4568",
 *   forcePathStyle: true,
 *   credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" },
 * });
 * await storage.putFile("renders/abc/video.mp4", "out/video.mp4", "video/mp4");
 * storage.close();
 * ```
 */
export class S3Storage implements Storage {
  /** Bucket holding the objects. */
  readonly bucket: string;
  /** Folder inside the bucket, without slashes at either end; `""` for the bucket root. */
  readonly prefix: string;
  /** AWS region. */
  readonly region: string;
  /** Endpoint of an S3-compatible service, when not AWS. */
  readonly endpoint?: string;
  /** Whether buckets are addressed by path. */
  readonly forcePathStyle: boolean;
  /** The SDK client, for callers that need other S3 operations on the same bucket. */
  readonly client: S3Client;

  /** @param options Bucket, region, endpoint, credentials and key prefix. */
  constructor(options: S3StorageOptions) {
    this.bucket = options.bucket;
    this.prefix = (options.prefix ?? "").replace(/^\/+|\/+$/g, "");
    if (this.prefix !== "") keySegments(this.prefix, "prefix");
    this.region = options.region ?? "us-east-1";
    this.endpoint = options.endpoint;
    this.forcePathStyle = options.forcePathStyle ?? false;
    this.client = s3ClientFor({
      region: this.region,
      endpoint: options.endpoint,
      forcePathStyle: this.forcePathStyle,
      credentials: options.credentials,
    });
  }

  /** Releases the client's sockets. The storage cannot be used afterwards. */
  close(): void {
    this.client.destroy();
  }

  /** Object key in the bucket for a storage key. */
  #objectKey(key: string, what: "key" | "prefix" = "key"): string {
    keySegments(key, what);
    return this.prefix === "" ? key : `${this.prefix}/${key}`;
  }

  /**
   * Uploads a local file as a stream with a known length.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage.ts";
   *
   * const storage = new S3Storage({ bucket: "vid" });
   * await storage.putFile("renders/abc/video.mp4", "out/video.mp4", "video/mp4");
   * ```
   */
  async putFile(key: string, file: string, contentType?: string): Promise<void> {
    const objectKey = this.#objectKey(key);
    const { size } = await stat(file);
    const body = createReadStream(file);
    try {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: objectKey,
          Body: body,
          ContentLength: size,
          ContentType: contentType ?? contentTypeOf(key),
        }),
      );
    } finally {
      body.destroy();
    }
  }

  /**
   * Uploads bytes.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage.ts";
   *
   * const png = new Uint8Array([137, 80, 78, 71]);
   * await new S3Storage({ bucket: "vid" }).putBytes("thumbnails/abc.png", png, "image/png");
   * ```
   */
  async putBytes(key: string, bytes: Uint8Array, contentType?: string): Promise<void> {
    await this.client.send(
      new PutObjectCommand({
        Bucket: this.bucket,
        Key: this.#objectKey(key),
        Body: bytes,
        ContentLength: bytes.byteLength,
        ContentType: contentType ?? contentTypeOf(key),
      }),
    );
  }

  /**
   * Opens the object for reading; undefined when missing.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage.ts";
   *
   * const object = await new S3Storage({ bucket: "vid" }).get("thumbnails/abc.png");
   * if (object) await object.body.pipeTo(new WritableStream());
   * ```
   */
  async get(key: string): Promise<StoredObject | undefined> {
    const objectKey = this.#objectKey(key);
    try {
      const response = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: objectKey }),
      );
      if (!response.Body) {
        throw new StorageError(`S3 returned no body for key ${JSON.stringify(key)}`, key);
      }
      return { size: response.ContentLength ?? 0, body: response.Body.transformToWebStream() };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /**
   * Copies the object to a local file, creating its folder.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage.ts";
   *
   * await new S3Storage({ bucket: "vid" }).download("projects/abc/project.zip", "/tmp/p.zip");
   * ```
   */
  async download(key: string, file: string): Promise<void> {
    const object = await this.get(key);
    if (!object) throw missing(key);
    await streamToFile(object.body, file);
  }

  /**
   * Whether an object is stored under key (a HEAD request).
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage.ts";
   *
   * console.log(await new S3Storage({ bucket: "vid" }).exists("thumbnails/abc.png"));
   * ```
   */
  /**
   * Resolves when the bucket answers with this server's credentials (a HEAD of the bucket).
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage.ts";
   *
   * await new S3Storage({ bucket: "vid" }).ready();
   * ```
   */
  async ready(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (error) {
      const status = (error as { $metadata?: { httpStatusCode?: number } }).$metadata
        ?.httpStatusCode;
      const why = status ? `HTTP ${status}` : (error as Error).name || "unreachable";
      throw new StorageError(`the bucket ${this.bucket} is not reachable (${why})`, "storage", {
        cause: error,
      });
    }
  }

  async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: this.#objectKey(key) }),
      );
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /**
   * Deletes every object whose key starts with prefix, a page of up to 1000 at a time.
   *
   * @example
   * ```ts no_run
   * import { S3Storage } from "./storage.ts";
   *
   * const deleted = await new S3Storage({ bucket: "vid" }).deletePrefix("projects/abc/");
   * ```
   */
  async deletePrefix(prefix: string): Promise<number> {
    const objectPrefix = this.#objectKey(prefix, "prefix");
    let deleted = 0;
    // Each round deletes the first page of what is left, so no paging token is needed. The
    // listing is ListObjects (v1) because s3rver answers a truncated ListObjectsV2 with a
    // 500: it encrypts continuation tokens with DES, which neither Node 20 nor Deno has.
    for (;;) {
      const page = await this.client.send(
        new ListObjectsCommand({
          Bucket: this.bucket,
          Prefix: objectPrefix,
          MaxKeys: DELETE_BATCH,
        }),
      );
      const keys = (page.Contents ?? []).flatMap((object) =>
        object.Key === undefined ? [] : [object.Key]
      );
      if (keys.length === 0) return deleted;
      const result = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: false },
        }),
      );
      const failure = result.Errors?.[0];
      if (failure || (result.Deleted?.length ?? 0) === 0) {
        const what = JSON.stringify(failure?.Key ?? keys[0]);
        const why = failure
          ? `${failure.Code ?? "error"}: ${failure.Message ?? ""}`
          : "nothing deleted";
        throw new StorageError(
          `Could not delete ${what} under prefix ${JSON.stringify(prefix)} (${why})`,
          prefix,
        );
      }
      deleted += result.Deleted?.length ?? 0;
    }
  }
}

/** Whether an SDK error means the object (or its key) does not exist. */
function isNotFound(error: unknown): boolean {
  if (!(error instanceof S3ServiceException)) return false;
  return error.name === "NoSuchKey" || error.name === "NotFound" ||
    (error.$metadata.httpStatusCode === 404 && error.name !== "NoSuchBucket");
}

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
 * import { storageFromUrl } from "./storage.ts";
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
