/**
 * Checks an uploaded project zip and unpacks it into a folder. The zip comes from an
 * untrusted client, so every entry is checked before a byte is written: paths must stay
 * inside the project (at most 64 folders deep, 1024 bytes long), symlinks are refused, the
 * entry count and expanded size are bounded (from the central directory before inflating,
 * and again while inflating, so a zip bomb that lies about its sizes is stopped early), the
 * expansion ratio is bounded (the files may expand to 100 times the zip's size, or 64 MiB
 * for a smaller zip), and the composition entry must parse. Any failure is a
 * {@linkcode ProjectZipError} (API code `vid_project_invalid`) whose message names the
 * entry and the fix, and leaves nothing behind in the destination.
 *
 * The server runs this on its event loop, so the work is bounded and streamed: each entry
 * is inflated in small slices straight to its file (never whole in memory; only the
 * composition entry, at most 32 MiB, is kept to be parsed), and the loop gets a turn
 * between slices, so other requests are answered while a hostile upload is checked.
 *
 * The central directory is read here rather than through fflate's unzip because the
 * checks need fields fflate does not expose (external attributes, version made by) and
 * because inflating must stop as soon as the limits are passed; fflate only inflates.
 *
 * @module
 */

import { mkdir, mkdtemp, open, readdir, rename, rm, rmdir, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve, sep } from "node:path";
import { crc32 } from "node:zlib";
import {
  type Composition,
  DEFAULT_ENTRY,
  parseComposition,
} from "../../composition/composition.ts";
import { CompositionError } from "../../composition/errors.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

/** Limits applied to a project zip. */
export interface ZipLimits {
  /**
   * Most entries (files and folders) the zip may hold.
   *
   * @default {10000}
   */
  maxEntries?: number;
  /**
   * Most bytes the files may expand to, in total.
   *
   * @default {1073741824} (1 GiB)
   */
  maxExpandedBytes?: number;
  /**
   * Most times its own size the zip may expand to, in total; a zip smaller than
   * `ratioFloorBytes / maxRatio` may still expand to `ratioFloorBytes`. Deflate bombs expand
   * about 1000 times; real projects (media, text) far less.
   *
   * @default {100}
   */
  maxRatio?: number;
  /**
   * Expanded bytes allowed whatever the ratio, so a small zip of text is never refused.
   *
   * @default {67108864} (64 MiB)
   */
  ratioFloorBytes?: number;
}

/** Options for {@linkcode extractProjectZip}. */
export interface ExtractProjectZipOptions {
  /**
   * The composition entry: an HTML file path inside the zip.
   *
   * @default {"index.html"}
   */
  composition?: string;
  /** Entry count and expanded size limits. */
  limits?: ZipLimits;
}

/** A project zip was refused; `field` is the entry at fault, or `"zip"` for the whole archive. */
export class ProjectZipError extends VidError {
  override name = "ProjectZipError";
  /** The API error code this maps to. */
  override readonly code: "vid_project_invalid" = "vid_project_invalid";
  /** The entry name at fault as written in the zip, or `"zip"`. */
  override readonly field: string;

  constructor(message: string, field: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
    this.field = field;
  }
}

/** What {@linkcode extractProjectZip} unpacked. */
export interface ExtractedProject {
  /** Entries in the zip, files and folders. */
  entries: number;
  /** Bytes written, the sum of the inflated file sizes. */
  expandedBytes: number;
  /** The parsed composition entry, with paths under the destination. */
  composition: Composition;
}

const DEFAULT_MAX_ENTRIES = 10_000;
const DEFAULT_MAX_EXPANDED_BYTES = 1024 ** 3;
const DEFAULT_MAX_RATIO = 100;
const DEFAULT_RATIO_FLOOR_BYTES = 64 * 1024 ** 2;
/** The composition entry is parsed in memory, so it has its own bound. */
const MAX_COMPOSITION_BYTES = 32 * 1024 ** 2;
/** Most folders an entry path may be nested in, and most bytes it may have. */
const MAX_DEPTH = 64;
const MAX_PATH_BYTES = 1024;
/** The event loop gets a turn at least this often while a zip is inflated. */
const YIELD_EVERY_MS = 5;

const EOCD_SIGNATURE = 0x06054b50;
const ZIP64_EOCD_LOCATOR_SIGNATURE = 0x07064b50;
const ZIP64_EOCD_SIGNATURE = 0x06064b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
const ZIP64_EXTRA_ID = 0x0001;
const FLAG_ENCRYPTED = 0x0001;
const FLAG_UTF8 = 0x0800;
const METHOD_STORED = 0;
const METHOD_DEFLATE = 8;
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
/** Compressed bytes fed to the inflater per step: one step can expand ~1000x, so keep it small. */
const INFLATE_STEP = 1024;
/** Bytes of a stored (uncompressed) entry written per step. */
const STORED_STEP = 256 * 1024;
/** Most bytes one path segment may have on common file systems. */
const MAX_SEGMENT_BYTES = 255;

const REMAKE = "re-create the zip and upload it again";

/** One central directory record, with its name already checked and normalised. */
interface CentralEntry {
  /** The name as written in the zip, used in messages and as `field`. */
  name: string;
  /** Normalised relative path (forward slashes, no `.` or empty segments). */
  path: string;
  directory: boolean;
  flags: number;
  method: number;
  crc: number;
  compressedSize: number;
  uncompressedSize: number;
  localOffset: number;
}

/** Where the central directory is, from the (zip64) end of central directory record. */
interface CentralDirectory {
  count: number;
  offset: number;
  size: number;
  end: number;
}

/**
 * Checks `zip` and unpacks it into `dest`, which must not exist yet or be an empty folder.
 * The files are written to a temporary folder beside `dest` and renamed into place once
 * every check passed, so on any error `dest` is left as it was. Errors that are the zip's
 * fault are {@linkcode ProjectZipError}; a `dest` that already holds files is a plain
 * `Error` (a caller bug), as are file system failures.
 *
 * @example
 * ```ts no_run
 * import { readFile } from "node:fs/promises";
 *
 * const zip = new Uint8Array(await readFile("project.zip"));
 * try {
 *   const project = await extractProjectZip(zip, "/var/lib/vid/assets/ast_1", {
 *     composition: "index.html",
 *     limits: { maxEntries: 10_000, maxExpandedBytes: 1024 ** 3 },
 *   });
 *   console.log(project.composition.id, project.entries, project.expandedBytes);
 * } catch (error) {
 *   if (error instanceof ProjectZipError) {
 *     // 422 {"error": {"code": error.code, "message": error.message, "field": error.field}}
 *   }
 *   throw error;
 * }
 * ```
 */
export async function extractProjectZip(
  zip: Uint8Array,
  dest: string,
  options: ExtractProjectZipOptions = {},
): Promise<ExtractedProject> {
  const maxEntries = options.limits?.maxEntries ?? DEFAULT_MAX_ENTRIES;
  const maxExpandedBytes = options.limits?.maxExpandedBytes ?? DEFAULT_MAX_EXPANDED_BYTES;
  const maxRatio = options.limits?.maxRatio ?? DEFAULT_MAX_RATIO;
  const ratioFloor = options.limits?.ratioFloorBytes ?? DEFAULT_RATIO_FLOOR_BYTES;
  const compositionName = options.composition ?? DEFAULT_ENTRY;
  const compositionPath = checkCompositionOption(compositionName);
  const destination = resolve(dest);
  await checkDestination(destination);

  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const directory = readCentralDirectory(zip, view);
  if (directory.count > maxEntries) {
    throw new ProjectZipError(
      `the zip has ${directory.count} entries, over the limit of ${maxEntries}; ` +
        `remove files the composition does not use, or bundle small assets together`,
      "zip",
    );
  }
  const entries = readEntries(zip, view, directory);
  checkOverlaps(entries);
  checkNoConflicts(entries);

  const files = entries.filter((entry) => !entry.directory);
  const declared = files.reduce((sum, entry) => sum + entry.uncompressedSize, 0);
  const ratioLimit = Math.max(ratioFloor, maxRatio * zip.length);
  const limit = Math.min(maxExpandedBytes, ratioLimit);
  const limitText = limit < maxExpandedBytes
    ? `${formatBytes(limit)} (${maxRatio} times the zip's ${formatBytes(zip.length)}, or ` +
      `${formatBytes(ratioFloor)} for a smaller zip: a larger ratio is how zip bombs work)`
    : formatBytes(limit);
  if (declared > limit) {
    throw new ProjectZipError(
      `the zip's files expand to ${formatBytes(declared)}, over the limit of ` +
        `${limitText}; make the project smaller (e.g. re-encode large ` +
        `media) and upload it again`,
      "zip",
    );
  }

  const compositionEntry = files.find((entry) => entry.path === compositionPath);
  if (!compositionEntry) throw missingComposition(compositionName, files);
  if (compositionEntry.uncompressedSize > MAX_COMPOSITION_BYTES) {
    throw new ProjectZipError(
      `composition entry "${compositionEntry.name}" is ${
        formatBytes(compositionEntry.uncompressedSize)
      }, over the limit of ${formatBytes(MAX_COMPOSITION_BYTES)}; move inlined media into ` +
        `files of their own and reference them`,
      compositionEntry.name,
    );
  }

  const budget: Budget = { used: 0, limit, limitText, lastYield: performance.now() };
  // The composition is inflated and parsed first: a bad entry HTML fails before any
  // large media is inflated or written.
  const compositionBytes = await inflateToMemory(zip, view, compositionEntry, budget);
  const composition = parseEntryComposition(
    compositionBytes,
    compositionEntry,
    destination,
  );

  await mkdir(dirname(destination), { recursive: true });
  const staging = await mkdtemp(
    join(dirname(destination), `.${basename(destination)}.partial-`),
  );
  try {
    for (const entry of entries) {
      const target = resolve(staging, entry.path);
      if (target !== staging && !target.startsWith(staging + sep)) {
        throw new ProjectZipError(
          `zip entry "${entry.name}" would be written outside the project folder; ` +
            `zip the project from inside its folder so every path is relative`,
          entry.name,
        );
      }
      if (entry.directory) {
        await mkdir(target, { recursive: true });
        continue;
      }
      await mkdir(dirname(target), { recursive: true });
      if (entry === compositionEntry) {
        await writeFile(target, compositionBytes);
      } else {
        const handle = await open(target, "wx");
        try {
          await inflateEntry(zip, view, entry, budget, async (chunk) => {
            let written = 0;
            while (written < chunk.length) {
              written += (await handle.write(chunk, written)).bytesWritten;
            }
          });
        } finally {
          await handle.close();
        }
      }
    }
    await rmdir(destination).catch(ignoreMissing);
    await rename(staging, destination);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
  return { entries: entries.length, expandedBytes: budget.used, composition };
}

/** The composition option is a path inside the zip too, so it gets the same checks. */
function checkCompositionOption(composition: string): string {
  const { path, directory } = normaliseEntryName(composition, "composition entry");
  if (directory || path === "") {
    throw new ProjectZipError(
      `composition "${composition}" names a folder; give the entry HTML file, ` +
        `e.g. "index.html"`,
      composition,
    );
  }
  return path;
}

async function checkDestination(destination: string): Promise<void> {
  let names: string[];
  try {
    names = await readdir(destination);
  } catch (error) {
    if (errorCode(error) === "ENOENT") return;
    throw error;
  }
  if (names.length > 0) {
    throw new Error(
      `${destination} already holds files; extractProjectZip needs a new or empty folder`,
    );
  }
}

function readCentralDirectory(zip: Uint8Array, view: DataView): CentralDirectory {
  const eocd = findEndOfCentralDirectory(zip, view);
  if (eocd < 0) {
    throw new ProjectZipError(
      `the upload is not a zip archive (no end of central directory record found); ` +
        `upload the project folder compressed as a .zip file`,
      "zip",
    );
  }
  let disk = view.getUint16(eocd + 4, true);
  let directoryDisk = view.getUint16(eocd + 6, true);
  let countOnDisk = view.getUint16(eocd + 8, true);
  let count = view.getUint16(eocd + 10, true);
  let size = view.getUint32(eocd + 12, true);
  let offset = view.getUint32(eocd + 16, true);
  let end = eocd;
  if (count === 0xffff || size === 0xffffffff || offset === 0xffffffff) {
    const locator = eocd - 20;
    if (locator >= 0 && view.getUint32(locator, true) === ZIP64_EOCD_LOCATOR_SIGNATURE) {
      const record = uint64(view, locator + 8);
      if (record + 56 > locator || view.getUint32(record, true) !== ZIP64_EOCD_SIGNATURE) {
        throw corrupt("its zip64 end of central directory record is missing");
      }
      disk = view.getUint32(record + 16, true);
      directoryDisk = view.getUint32(record + 20, true);
      countOnDisk = uint64(view, record + 24);
      count = uint64(view, record + 32);
      size = uint64(view, record + 40);
      offset = uint64(view, record + 48);
      end = record;
    }
  }
  if (disk !== 0 || directoryDisk !== 0 || countOnDisk !== count) {
    throw new ProjectZipError(
      `the zip is split across several files (a multi-part archive); ` +
        `upload the project as a single .zip file`,
      "zip",
    );
  }
  if (offset + size > end) {
    throw corrupt("its central directory lies outside the file (truncated upload?)");
  }
  return { count, offset, size, end: offset + size };
}

/** Scans back from the end: the record is 22 bytes plus a comment of up to 65535. */
function findEndOfCentralDirectory(zip: Uint8Array, view: DataView): number {
  const last = zip.length - 22;
  for (let i = last; i >= 0 && i >= last - 0xffff; i--) {
    if (
      view.getUint32(i, true) === EOCD_SIGNATURE &&
      i + 22 + view.getUint16(i + 20, true) <= zip.length
    ) {
      return i;
    }
  }
  return -1;
}

function readEntries(zip: Uint8Array, view: DataView, directory: CentralDirectory): CentralEntry[] {
  const entries: CentralEntry[] = [];
  let p = directory.offset;
  for (let index = 0; index < directory.count; index++) {
    if (p + 46 > directory.end || view.getUint32(p, true) !== CENTRAL_SIGNATURE) {
      throw corrupt(`central directory record ${index + 1} of ${directory.count} is damaged`);
    }
    const madeBy = view.getUint16(p + 4, true);
    const flags = view.getUint16(p + 8, true);
    const method = view.getUint16(p + 10, true);
    const crc = view.getUint32(p + 16, true);
    let compressedSize = view.getUint32(p + 20, true);
    let uncompressedSize = view.getUint32(p + 24, true);
    const nameLength = view.getUint16(p + 28, true);
    const extraLength = view.getUint16(p + 30, true);
    const commentLength = view.getUint16(p + 32, true);
    const externalAttributes = view.getUint32(p + 38, true);
    let localOffset = view.getUint32(p + 42, true);
    const nameStart = p + 46;
    const extraStart = nameStart + nameLength;
    const next = extraStart + extraLength + commentLength;
    if (next > directory.end) {
      throw corrupt(`central directory record ${index + 1} of ${directory.count} is damaged`);
    }
    const name = decodeName(zip.subarray(nameStart, extraStart), flags);
    if (name === "") {
      throw corrupt(`central directory record ${index + 1} has an empty name`);
    }

    // Zip64 sizes and offset follow in this order, each only when its 32-bit field is full.
    const zip64 = findExtra(view, extraStart, extraLength, ZIP64_EXTRA_ID);
    if (zip64) {
      let q = zip64.start;
      const take = (): number => {
        if (q + 8 > zip64.end) throw corrupt(`entry "${name}" has a damaged zip64 field`, name);
        const value = uint64(view, q);
        q += 8;
        return value;
      };
      if (uncompressedSize === 0xffffffff) uncompressedSize = take();
      if (compressedSize === 0xffffffff) compressedSize = take();
      if (localOffset === 0xffffffff) localOffset = take();
    }

    const { path, directory: isDirectory } = normaliseEntryName(name, "zip entry");
    const mode = externalAttributes >>> 16;
    if ((mode & S_IFMT) === S_IFLNK) {
      const madeOn = madeBy >> 8 === 3 ? " (made on Unix)" : "";
      throw new ProjectZipError(
        `zip entry "${name}" is a symbolic link${madeOn}; links are not allowed in a ` +
          `project, so replace it with the file it points to (e.g. zip -r without -y)`,
        name,
      );
    }
    if (!isDirectory) {
      if (flags & FLAG_ENCRYPTED) {
        throw new ProjectZipError(
          `zip entry "${name}" is encrypted; upload a zip made without a password`,
          name,
        );
      }
      if (method !== METHOD_STORED && method !== METHOD_DEFLATE) {
        throw new ProjectZipError(
          `zip entry "${name}" uses compression method ${method}${methodName(method)}, ` +
            `which is not supported; re-create the zip with standard Deflate compression ` +
            `(zip -r, or your system's "Compress" command)`,
          name,
        );
      }
    }
    entries.push({
      name,
      path,
      directory: isDirectory,
      flags,
      method,
      crc,
      compressedSize,
      uncompressedSize,
      localOffset,
    });
    p = next;
  }
  return entries;
}

function findExtra(
  view: DataView,
  start: number,
  length: number,
  id: number,
): { start: number; end: number } | undefined {
  const end = start + length;
  let p = start;
  while (p + 4 <= end) {
    const fieldId = view.getUint16(p, true);
    const size = view.getUint16(p + 2, true);
    if (fieldId === id) return { start: p + 4, end: Math.min(p + 4 + size, end) };
    p += 4 + size;
  }
  return undefined;
}

/**
 * Checks an entry name and returns it as a relative path. Backslashes are read as
 * separators (old Windows tools write them), so `..\x` is caught like `../x`.
 */
function normaliseEntryName(name: string, what: string): { path: string; directory: boolean } {
  const quoted = `${what} "${name}"`;
  const slashed = name.replaceAll("\\", "/");
  const separators = name.includes("\\") ? " (backslashes count as folder separators)" : "";
  if (name.includes("\0")) {
    throw new ProjectZipError(`${quoted} contains a NUL character; ${REMAKE}`, name);
  }
  if (slashed.startsWith("/") || /^[A-Za-z]:/.test(slashed)) {
    throw new ProjectZipError(
      `${quoted} is an absolute path${separators}; zip the project from inside its ` +
        `folder so every path is relative (e.g. cd project && zip -r ../project.zip .)`,
      name,
    );
  }
  const segments = slashed.split("/");
  if (segments.includes("..")) {
    throw new ProjectZipError(
      `${quoted} has a ".." segment${separators} and would be written outside the ` +
        `project folder; zip the project from inside its folder so every path is relative`,
      name,
    );
  }
  const kept = segments.filter((segment) => segment !== "" && segment !== ".");
  const encoder = new TextEncoder();
  const short = name.length > 200 ? `${name.slice(0, 200)}…` : name;
  if (kept.length > MAX_DEPTH + 1) {
    throw new ProjectZipError(
      `${what} "${short}" is nested ${
        kept.length - 1
      } folders deep, over the limit of ${MAX_DEPTH}; ` +
        `flatten the project's folders and ${REMAKE}`,
      short,
    );
  }
  if (encoder.encode(kept.join("/")).length > MAX_PATH_BYTES) {
    throw new ProjectZipError(
      `${what} "${short}" is longer than ${MAX_PATH_BYTES} bytes; shorten its folder and ` +
        `file names`,
      short,
    );
  }
  const long = kept.find((segment) => encoder.encode(segment).length > MAX_SEGMENT_BYTES);
  if (long !== undefined) {
    throw new ProjectZipError(
      `${quoted} has a name part longer than ${MAX_SEGMENT_BYTES} bytes; shorten it`,
      name,
    );
  }
  return { path: kept.join("/"), directory: slashed.endsWith("/") || kept.length === 0 };
}

/** Two entries must not share bytes: overlapping entries are how some zip bombs multiply. */
function checkOverlaps(entries: CentralEntry[]): void {
  const sorted = entries
    .filter((entry) => !entry.directory)
    .sort((a, b) => a.localOffset - b.localOffset);
  for (let i = 1; i < sorted.length; i++) {
    const before = sorted[i - 1];
    if (before.localOffset + 30 + before.compressedSize > sorted[i].localOffset) {
      throw corrupt(
        `entries "${before.name}" and "${sorted[i].name}" overlap`,
        sorted[i].name,
      );
    }
  }
}

/**
 * Refuses two entries with one path (compared as a case-insensitive file system would,
 * where one would silently replace the other) and a path that is both a file and a folder.
 */
function checkNoConflicts(entries: CentralEntry[]): void {
  const files = new Map<string, CentralEntry>();
  const folders = new Map<string, CentralEntry>();
  const key = (path: string): string => path.normalize("NFC").toLowerCase();
  for (const entry of entries) {
    if (entry.path === "") continue;
    const parts = entry.path.split("/");
    for (let i = 1; i < parts.length; i++) {
      const parent = key(parts.slice(0, i).join("/"));
      const file = files.get(parent);
      if (file) throw fileAndFolder(file, entry);
      if (!folders.has(parent)) folders.set(parent, entry);
    }
    const own = key(entry.path);
    const sameFile = files.get(own);
    if (sameFile) {
      const how = sameFile.path === entry.path ? "" : ` ("${sameFile.name}" differs only in case)`;
      throw new ProjectZipError(
        `zip entry "${entry.name}" appears twice in the zip${how}; ` +
          `re-create the zip so each file is stored once`,
        entry.name,
      );
    }
    if (entry.directory) {
      if (!folders.has(own)) folders.set(own, entry);
      continue;
    }
    const folder = folders.get(own);
    if (folder) throw fileAndFolder(entry, folder);
    files.set(own, entry);
  }
}

function fileAndFolder(file: CentralEntry, inside: CentralEntry): ProjectZipError {
  return new ProjectZipError(
    `zip entry "${file.name}" is a file but "${inside.name}" needs it to be a folder; ` +
      `rename one of them and ${REMAKE}`,
    file.name,
  );
}

function missingComposition(composition: string, files: CentralEntry[]): ProjectZipError {
  const html = files.filter((entry) => /\.html?$/i.test(entry.path)).map((entry) => entry.path);
  let found: string;
  if (html.length === 0) {
    found = "the zip has no .html files";
  } else {
    const shown = html.slice(0, 5).map((path) => `"${path}"`).join(", ");
    const more = html.length > 5 ? ` and ${html.length - 5} more` : "";
    found = `the zip has ${shown}${more}; set composition to the entry HTML, or zip the ` +
      `project folder's contents rather than the folder itself`;
  }
  return new ProjectZipError(
    `composition entry "${composition}" is not in the zip; ${found}`,
    composition,
  );
}

function parseEntryComposition(
  bytes: Uint8Array,
  entry: CentralEntry,
  destination: string,
): Composition {
  const file = join(destination, entry.path);
  try {
    return parseComposition(new TextDecoder().decode(bytes), file);
  } catch (error) {
    if (!(error instanceof CompositionError)) throw error;
    // The message starts with the server-side path; name the entry instead.
    const reason = error.message.startsWith(`${file}: `)
      ? error.message.slice(file.length + 2)
      : error.message;
    throw new ProjectZipError(
      `composition entry "${entry.name}" is not a valid composition: ${reason}`,
      entry.name,
      { cause: error },
    );
  }
}

/** Expanded bytes so far against the limit, and when the event loop last had a turn. */
interface Budget {
  used: number;
  limit: number;
  /** The limit as messages state it. */
  limitText: string;
  lastYield: number;
}

/** Gives the event loop a turn when this task has held it for a while. */
async function yieldNow(budget: Budget): Promise<void> {
  if (performance.now() - budget.lastYield < YIELD_EVERY_MS) return;
  await new Promise((resolve) => setTimeout(resolve, 0));
  budget.lastYield = performance.now();
}

/** Inflates one entry into memory (the composition, bounded by its own limit). */
async function inflateToMemory(
  zip: Uint8Array,
  view: DataView,
  entry: CentralEntry,
  budget: Budget,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  await inflateEntry(zip, view, entry, budget, (chunk) => {
    chunks.push(chunk);
    size += chunk.length;
    return Promise.resolve();
  });
  return chunks.length === 1 ? chunks[0] : concat(chunks, size);
}

/**
 * Inflates one entry in slices, handing each piece to `sink` as it comes out, counting
 * every byte against `budget` and stopping as soon as the limit or the entry's declared
 * size is passed; the CRC-32 is checked at the end. The event loop gets turns between
 * slices.
 */
async function inflateEntry(
  zip: Uint8Array,
  view: DataView,
  entry: CentralEntry,
  budget: Budget,
  sink: (chunk: Uint8Array) => Promise<void>,
): Promise<void> {
  const local = entry.localOffset;
  if (local + 30 > zip.length || view.getUint32(local, true) !== LOCAL_SIGNATURE) {
    throw corrupt(`the local header of entry "${entry.name}" is missing`, entry.name);
  }
  const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
  if (start + entry.compressedSize > zip.length) {
    throw corrupt(`the data of entry "${entry.name}" is cut short`, entry.name);
  }
  const data = zip.subarray(start, start + entry.compressedSize);

  let produced = 0;
  let crc = 0;
  let pending: Uint8Array[] = [];
  const take = (chunk: Uint8Array): void => {
    produced += chunk.length;
    budget.used += chunk.length;
    if (budget.used > budget.limit) {
      throw new ProjectZipError(
        `the zip's files expand to more than the limit of ${budget.limitText} ` +
          `(found while inflating "${entry.name}", though the zip declares less: its sizes ` +
          `are wrong); make the project smaller and ${REMAKE}`,
        entry.name,
      );
    }
    if (produced > entry.uncompressedSize) {
      throw corrupt(
        `entry "${entry.name}" inflates to more than the ${entry.uncompressedSize} bytes ` +
          `it declares`,
        entry.name,
      );
    }
    pending.push(chunk);
  };
  const flush = async (): Promise<void> => {
    const out = pending;
    pending = [];
    for (const chunk of out) {
      crc = crc32(chunk, crc);
      await sink(chunk);
    }
    await yieldNow(budget);
  };

  if (entry.method === METHOD_STORED) {
    for (let at = 0; at < data.length; at += STORED_STEP) {
      take(data.slice(at, Math.min(at + STORED_STEP, data.length)));
      await flush();
    }
  } else {
    // The runtime's native inflater, fed a slice at a time: one slice expands to at most
    // about a MiB, a few milliseconds of work, and the loop gets a turn between slices.
    const inflater = new DecompressionStream("deflate-raw");
    const writer = inflater.writable.getWriter();
    const reader = inflater.readable.getReader();
    const feeding = (async () => {
      for (let at = 0; at < data.length; at += INFLATE_STEP) {
        await writer.write(data.slice(at, Math.min(at + INFLATE_STEP, data.length)));
      }
      await writer.close();
    })();
    feeding.catch(() => {}); // surfaces through the reader
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        take(value);
        await flush();
      }
    } catch (error) {
      await reader.cancel().catch(() => {});
      if (error instanceof ProjectZipError) throw error;
      throw corrupt(
        `entry "${entry.name}" does not inflate (${(error as Error).message})`,
        entry.name,
      );
    }
  }
  if (produced !== entry.uncompressedSize) {
    throw corrupt(
      `entry "${entry.name}" holds ${produced} bytes but declares ${entry.uncompressedSize}`,
      entry.name,
    );
  }
  if (crc !== entry.crc) {
    throw corrupt(`entry "${entry.name}" fails its CRC-32 check`, entry.name);
  }
}

function concat(chunks: Uint8Array[], length: number): Uint8Array {
  const out = new Uint8Array(length);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

function corrupt(detail: string, field = "zip"): ProjectZipError {
  return new ProjectZipError(`the zip is corrupt: ${detail}; ${REMAKE}`, field);
}

function uint64(view: DataView, at: number): number {
  const value = view.getBigUint64(at, true);
  // Past 2^53 the number is rounded, but any such size is far over every limit anyway.
  return value > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(value);
}

/** The high half of code page 437, the zip format's name encoding without the UTF-8 flag. */
const CP437_HIGH = "ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐" +
  "└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0";

/**
 * Decodes an entry name. Without the UTF-8 flag the format says code page 437, but most
 * tools write UTF-8 anyway, so UTF-8 is tried first.
 */
function decodeName(bytes: Uint8Array, flags: number): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    if (flags & FLAG_UTF8) {
      throw corrupt("an entry name is flagged as UTF-8 but is not valid UTF-8");
    }
    let name = "";
    for (const byte of bytes) {
      name += byte < 0x80 ? String.fromCharCode(byte) : CP437_HIGH[byte - 0x80];
    }
    return name;
  }
}

function methodName(method: number): string {
  const names: Record<number, string> = {
    12: "bzip2",
    14: "LZMA",
    93: "Zstandard",
    95: "XZ",
    98: "PPMd",
    99: "AES encryption",
  };
  return names[method] ? ` (${names[method]})` : "";
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${Number(value.toFixed(1))} ${units[unit]} (${bytes} bytes)`;
}

function errorCode(error: unknown): string | undefined {
  return typeof error === "object" && error !== null && "code" in error
    ? String(error.code)
    : undefined;
}

function ignoreMissing(error: unknown): void {
  if (errorCode(error) !== "ENOENT") throw error;
}
