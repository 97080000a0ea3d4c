/**
 * A full data disk, told apart from a fault: a write that finds no space (`ENOSPC`, a quota's
 * `EDQUOT`, SQLite's `SQLITE_FULL`, PostgreSQL's `disk_full`) answers 507
 * `vid_insufficient_storage` naming what to do instead of a bare 500; `/readyz` says not
 * ready while the data folder's free space is under `--min-free-space` (so a load balancer
 * sends requests to an instance with room) and ready again once space is back; and an upload
 * larger than the free space is refused before its body is read.
 *
 * @module
 */

import { statfs } from "node:fs/promises";
import { VidError } from "../../errors.ts";
import { ApiError } from "../http/errors.ts";

/** Default of `--min-free-space`: 512 MiB. */
export const DEFAULT_MIN_FREE_BYTES = 512 * 1024 * 1024;

/** `Retry-After` of a 507, seconds: space comes back when an operator frees it. */
export const FULL_RETRY_AFTER_SECONDS = 60;

/** SQLite's result code of a full disk or database (`SQLITE_FULL`). */
const SQLITE_FULL = 13;

/** SQLite's message of `SQLITE_FULL`. */
const SQLITE_FULL_TEXT = "database or disk is full";

/** PostgreSQL's SQLSTATE of a full disk (`disk_full`). */
const POSTGRES_DISK_FULL = "53100";

/** The free space `/readyz` asks of the data folder: bytes, or a share of the disk. */
export type MinFreeSpace = { bytes: number } | { percent: number };

/** A `--min-free-space` value that is not a size: names the flag. */
export class MinFreeSpaceError extends VidError {
  override name = "MinFreeSpaceError";
  constructor(value: string) {
    super(
      `--min-free-space must be a size such as 512M, 2G, 100000 (bytes) or 5% (of the ` +
        `disk), or 0 to turn the check off, not "${value}"`,
      { flag: "--min-free-space", field: "minFreeSpace", detail: "must be a size or a percentage" },
    );
  }
}

/** Multipliers of the size suffixes (binary: 1K = 1024 bytes). */
const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  K: 1024,
  M: 1024 ** 2,
  G: 1024 ** 3,
  T: 1024 ** 4,
};

/**
 * Reads a `--min-free-space` value: bytes with an optional binary suffix (`K`, `M`, `G`, `T`,
 * with or without `iB`/`B`), or a percentage of the disk (`5%`).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseMinFreeSpace("512M"), { bytes: 512 * 1024 * 1024 });
 * assert.deepEqual(parseMinFreeSpace("5%"), { percent: 5 });
 * assert.deepEqual(parseMinFreeSpace("0"), { bytes: 0 });
 * ```
 */
export function parseMinFreeSpace(value: string): MinFreeSpace {
  const text = value.trim();
  const percent = /^(\d+(?:\.\d+)?)\s*%$/.exec(text);
  if (percent) {
    const share = Number(percent[1]);
    if (share >= 100) throw new MinFreeSpaceError(value);
    return { percent: share };
  }
  const size = /^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?$/i.exec(text);
  if (!size) throw new MinFreeSpaceError(value);
  const bytes = Math.round(Number(size[1]) * UNITS[size[2].toUpperCase()]);
  if (!Number.isSafeInteger(bytes)) throw new MinFreeSpaceError(value);
  return { bytes };
}

/** Bytes as a short human figure (`512 MiB`). */
export function formatBytes(bytes: number): string {
  const units = ["bytes", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/**
 * 507 `vid_insufficient_storage`: the server has no room for what the request stores. Not the
 * client's fault and not a bug: its retry succeeds once the operator frees space (or another
 * instance takes it); the answer carries `Retry-After`.
 */
export class InsufficientStorageError extends ApiError {
  override name = "InsufficientStorageError";
  /** Seconds until a retry may find space. */
  readonly retryAfterSeconds: number = FULL_RETRY_AFTER_SECONDS;
  constructor(message: string, options?: { cause?: unknown }) {
    super(507, "vid_insufficient_storage", message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

/** Whether `error` (or one of its causes) says a disk or database has no space left. */
export function isOutOfSpace(error: unknown): boolean {
  for (let e = error, depth = 0; e !== null && typeof e === "object" && depth < 5; depth++) {
    const fields = e as { code?: unknown; errcode?: unknown; errstr?: unknown; cause?: unknown };
    if (fields.code === "ENOSPC" || fields.code === "EDQUOT") return true;
    if (fields.code === POSTGRES_DISK_FULL) return true;
    // node:sqlite reports the primary result code in errcode (extended codes keep it in
    // the low byte).
    if (typeof fields.errcode === "number" && (fields.errcode & 0xff) === SQLITE_FULL) return true;
    if (fields.errstr === SQLITE_FULL_TEXT) return true;
    // A failed `exec` (the commit) carries SQLite's message alone.
    if (
      fields.code === "ERR_SQLITE_ERROR" && e instanceof Error && e.message === SQLITE_FULL_TEXT
    ) {
      return true;
    }
    e = fields.cause;
  }
  return false;
}

/**
 * The 507 a request that failed for want of space answers, or `undefined` for any other
 * failure. The message tells the client what to do; the operator's cause stays in the log.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const full = Object.assign(new Error("No space left on device (os error 28)"), {
 *   code: "ENOSPC",
 * });
 * assert.equal(insufficientStorageFor(full)?.status, 507);
 * assert.equal(insufficientStorageFor(new Error("a bug")), undefined);
 * ```
 */
export function insufficientStorageFor(error: unknown): InsufficientStorageError | undefined {
  if (error instanceof InsufficientStorageError) return error;
  if (!isOutOfSpace(error)) return undefined;
  return new InsufficientStorageError(
    "the server is out of disk space and could not store this request; nothing was kept, " +
      `try again after Retry-After seconds (its operator has to free space on the data disk)`,
    { cause: error },
  );
}

/** Free and total bytes of the file system holding a folder. */
export interface SpaceOnDisk {
  /** Bytes this process may still write (blocks available to unprivileged users). */
  free: number;
  /** Size of the file system, bytes. */
  total: number;
}

/** Free space of the file system holding `dir`. */
export async function spaceOnDisk(dir: string): Promise<SpaceOnDisk> {
  const stats = await statfs(dir);
  return { free: stats.bavail * stats.bsize, total: stats.blocks * stats.bsize };
}

/**
 * The data folders' free space against `--min-free-space`: what `/readyz` and the upload
 * check read. Folders on one file system are read once each; the least free counts.
 *
 * @example
 * ```ts no_run
 * const disk = new DiskSpace(["/srv/vid-data"], { bytes: 512 * 1024 * 1024 });
 * await disk.ready(); // throws why not when the free space is under 512 MiB
 * await disk.ensureRoom(200_000_000, "this upload"); // throws InsufficientStorageError
 * ```
 */
export class DiskSpace {
  readonly dirs: readonly string[];
  readonly minimum: MinFreeSpace;

  constructor(dirs: readonly string[], minimum: MinFreeSpace) {
    this.dirs = [...new Set(dirs)];
    this.minimum = minimum;
  }

  /**
   * The least free space of the folders; `undefined` when none can be read (a folder that is
   * gone is the storage check's to report, not this one's).
   */
  async least(): Promise<SpaceOnDisk | undefined> {
    const spaces = await Promise.all(this.dirs.map((dir) => spaceOnDisk(dir).catch(() => null)));
    return spaces.reduce<SpaceOnDisk | undefined>(
      (least, space) =>
        (space !== null && (least === undefined || space.free < least.free)) ? space : least,
      undefined,
    );
  }

  /** The threshold in bytes on a disk of `total` bytes. */
  thresholdOf(total: number): number {
    return "bytes" in this.minimum
      ? this.minimum.bytes
      : Math.ceil(total * this.minimum.percent / 100);
  }

  /**
   * Resolves while the free space is at the threshold or above (or cannot be read); else
   * throws why not.
   */
  async ready(): Promise<void> {
    const space = await this.least();
    if (space === undefined) return;
    const threshold = this.thresholdOf(space.total);
    if (threshold === 0 || space.free >= threshold) return;
    // No path: /readyz is open to whoever can reach it.
    throw new Error(
      `${formatBytes(space.free)} free on the data folder's disk, under --min-free-space ` +
        `${formatBytes(threshold)}: free space there`,
    );
  }

  /**
   * Throws {@linkcode InsufficientStorageError} when `bytes` (what `what` will write) are more
   * than the free space; a disk that cannot be read lets the write find out itself.
   */
  async ensureRoom(bytes: number, what: string): Promise<void> {
    const space = await this.least();
    if (space === undefined || bytes <= space.free) return;
    throw new InsufficientStorageError(
      `the server has ${formatBytes(space.free)} of disk space free, less than the ` +
        `${formatBytes(bytes)} of ${what}; try again after Retry-After seconds (its operator ` +
        "has to free space on the data disk)",
    );
  }
}
