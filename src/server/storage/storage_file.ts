/**
 * The folder back end of the render server's {@linkcode Storage}: key `a/b/c.mp4` is the file
 * `<root>/a/b/c.mp4`, written atomically and readable by the server's user only. Apart from
 * the S3 back end so that a server on local disk reads no AWS code to know how files work,
 * and each back end's quirks are read in one place.
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
import { constants } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { randomUUID } from "node:crypto";
import {
  FILE_MODE,
  FOLDER_MODE,
  keySegments,
  missing,
  type Storage,
  StorageError,
  type StoredObject,
  streamToFile,
} from "./storage.ts";

function isNodeError(error: unknown, code: string): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === code;
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
 * import { FsStorage } from "./storage_file.ts";
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
   * import { FsStorage } from "./storage_file.ts";
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
   * import { FsStorage } from "./storage_file.ts";
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
   * import { FsStorage } from "./storage_file.ts";
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
   * import { FsStorage } from "./storage_file.ts";
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
   * Resolves when the folder exists and this process may read and write it: a shared
   * filesystem that is unmounted or a folder removed under the server fails here first.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage_file.ts";
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

  /**
   * Whether a file is stored under key.
   *
   * @example
   * ```ts no_run
   * import { FsStorage } from "./storage_file.ts";
   *
   * console.log(await new FsStorage("storage").exists("notes/a.txt"));
   * ```
   */
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
   * import { FsStorage } from "./storage_file.ts";
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
