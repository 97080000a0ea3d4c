/**
 * Packages a project directory into the zip that is uploaded once and re-rendered many
 * times: the hosted service's asset and the distributed site. The zip is deterministic,
 * so its SHA-256 is a content address: the same tree always gives the same bytes and the
 * same `siteId`, and any content change gives a new one. That is what lets an unchanged
 * project skip the upload.
 *
 * Determinism comes from: entries sorted by path (code-unit order), files only (no folder
 * entries, so empty folders are not packaged), a fixed timestamp (1980-01-01 00:00, the
 * earliest a zip can hold), fixed Unix attributes (regular file, mode 0644, whatever the
 * file's own mode), and a fixed compression choice per file name: formats that are
 * already compressed (video, audio, images, fonts, archives) are stored, everything else
 * is deflated at level 6.
 *
 * The faces vid embeds for fonts HyperFrames embeds (`src/composition/fonts.ts`) are added
 * under `.vid/fonts/`, from vid's cache, so the remote render draws them offline.
 *
 * Symlinks are never followed out of the project. One that resolves to a file inside the
 * project, which the upload rules include, is stored under the link's path with the
 * file's content; one that points outside, is broken, points to an excluded file or to a
 * folder is skipped with a warning.
 *
 * @module
 */

import { Zip, ZipDeflate, type ZipInputFile, ZipPassThrough } from "fflate";
import { createHash } from "node:crypto";
import { readdir, readFile, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative, resolve, sep } from "node:path";
import { DEFAULT_ENTRY } from "../composition/composition.ts";
import { hyperframesFonts, PACKAGED_FONTS_DIR } from "../composition/fonts.ts";
import { type ProjectRules, projectRules } from "./ignore_rules.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/**
 * The hosted service's project upload limit, 200 MB: 200 x 1024 x 1024 bytes, the one figure
 * of the client (`vid cloud render`, checked before uploading) and the server (`vid
 * server`'s 413), and `api/openapi.yaml`'s 209715200.
 */
export const HOSTED_UPLOAD_LIMIT_BYTES = 200 * 1024 * 1024;

/** One file inside the project zip. */
export interface PackagedFile {
  /** Posix path relative to the project root; the zip entry name. */
  path: string;
  /** Uncompressed size in bytes. */
  size: number;
}

/** A packaged project: the zip and what is in it. */
export interface ProjectPackage {
  /** The zip bytes. */
  zip: Uint8Array;
  /** Lowercase hex SHA-256 of the zip bytes. */
  sha256: string;
  /** Content address of the project: `"site-"` and the first 16 hex digits of `sha256`. */
  siteId: string;
  /** Number of files in the zip. */
  fileCount: number;
  /** Sum of the files' sizes. */
  uncompressedBytes: number;
  /** Size of the zip (`zip.length`). */
  compressedBytes: number;
  /** The ten largest files, by size descending, then by path. */
  largest: PackagedFile[];
  /** Every file, sorted by path. */
  files: PackagedFile[];
  /** The composition entry: its path inside the zip. */
  entry: string;
  /** Files skipped for a reason the user may want to know (symlinks, special files). */
  warnings: string[];
  /**
   * Every file's bytes as read into the zip, by path, with `keepContents`: a caller that
   * uploads the files one by one (`deploySite`) need not unzip its own zip.
   */
  contents?: Record<string, Uint8Array>;
}

/** Options for {@linkcode packageProject}. */
export interface PackageProjectOptions {
  /** Also return every file's bytes as `contents` (held in memory beside the zip). @default false */
  keepContents?: boolean;
  /**
   * The composition entry, relative to the project directory (or an absolute path inside
   * it). It must exist and must not be excluded by the upload rules.
   *
   * @default {"index.html"}
   */
  composition?: string;
  /**
   * Largest zip allowed, in bytes; a bigger zip is a {@linkcode ProjectPackageError}
   * naming the limit and the ten largest files. No limit when unset; the hosted service
   * allows {@linkcode HOSTED_UPLOAD_LIMIT_BYTES}.
   */
  maxBytes?: number;
  /**
   * Files left out whatever the upload rules say, absolute or relative to the working
   * directory: the batch file, the manifest and any output a command names, so writing
   * them inside the project never changes the zip (and the site id). Paths outside the
   * project are ignored.
   */
  exclude?: readonly string[];
}

/**
 * A project could not be packaged. `field` is `"projectDir"`, `"composition"`,
 * `"maxBytes"`, `"zip"`, or the path of a file or folder that could not be read.
 */
export class ProjectPackageError extends VidError {
  override name = "ProjectPackageError";
  /** What is at fault. */
  override readonly field: string;
  /** For `"maxBytes"`: the ten largest files, to say what to exclude. */
  readonly largest?: PackagedFile[];

  constructor(
    message: string,
    field: string,
    options?: ErrorOptions & { largest?: PackagedFile[] },
  ) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
    this.field = field;
    this.largest = options?.largest;
  }
}

/** 1980-01-01 00:00 in local time: zip timestamps are local DOS times. */
const FIXED_MTIME = new Date(1980, 0, 1, 0, 0, 0);
/** Regular file, rw-r--r--, in the high 16 bits of the external attributes. */
const FIXED_ATTRS = 0o100644 << 16;
const OS_UNIX = 3;
const DEFLATE_LEVEL = 6;
/** Deflating these spends time for no gain. */
const STORED_EXTENSIONS = new Set([
  "mp4",
  "m4v",
  "mov",
  "webm",
  "mkv",
  "mp3",
  "m4a",
  "aac",
  "ogg",
  "oga",
  "opus",
  "flac",
  "png",
  "jpg",
  "jpeg",
  "gif",
  "webp",
  "avif",
  "woff",
  "woff2",
  "zip",
  "gz",
  "br",
  "zst",
]);

interface FoundFile {
  /** Entry name. */
  path: string;
  /** Where to read the content: the file itself, or a symlink's resolved target. */
  source: string;
}

function toPosix(path: string): string {
  return sep === "/" ? path : path.split(sep).join("/");
}

/** The path of `target` relative to `root`, or undefined when it is not strictly inside. */
function insideRelative(root: string, target: string): string | undefined {
  const rel = relative(root, target);
  if (rel === "" || isAbsolute(rel) || rel === ".." || rel.startsWith(`..${sep}`)) {
    return undefined;
  }
  return toPosix(rel);
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

async function resolveSymlink(
  rules: ProjectRules,
  realRoot: string,
  path: string,
  absolute: string,
  warnings: string[],
): Promise<FoundFile | undefined> {
  let target: string;
  try {
    target = await realpath(absolute);
  } catch {
    warnings.push(`${path}: broken symlink; skipped`);
    return undefined;
  }
  const targetPath = insideRelative(realRoot, target);
  if (targetPath === undefined) {
    warnings.push(`${path}: symlink points outside the project (${target}); skipped`);
    return undefined;
  }
  const info = await stat(target);
  if (info.isDirectory()) {
    // Folder links are not followed: they can loop, and what they point to inside the
    // project is packaged under its own path already.
    if (rules.includes(path, true)) {
      warnings.push(`${path}: symlink to the folder ${targetPath}/ is not followed; skipped`);
    }
    return undefined;
  }
  if (!info.isFile()) {
    warnings.push(`${path}: symlink to ${targetPath}, which is not a regular file; skipped`);
    return undefined;
  }
  const reason = rules.exclusionReason(targetPath, false);
  if (reason !== undefined) {
    warnings.push(
      `${path}: symlink to ${targetPath}, which the upload rules exclude (${reason}); skipped`,
    );
    return undefined;
  }
  return { path, source: target };
}

async function walk(
  rules: ProjectRules,
  root: string,
  realRoot: string,
  folder: string,
  found: FoundFile[],
  warnings: string[],
): Promise<void> {
  const absoluteFolder = folder === "" ? root : join(root, folder);
  let entries;
  try {
    entries = await readdir(absoluteFolder, { withFileTypes: true });
  } catch (error) {
    throw new ProjectPackageError(
      `${folder || "."}: cannot list the folder: ${(error as Error).message}`,
      folder || ".",
      { cause: error },
    );
  }
  for (const entry of entries) {
    const path = folder === "" ? entry.name : `${folder}/${entry.name}`;
    const absolute = join(absoluteFolder, entry.name);
    if (entry.isDirectory()) {
      if (rules.includes(path, true)) {
        await walk(rules, root, realRoot, path, found, warnings);
      }
    } else if (!rules.includes(path, false)) {
      continue;
    } else if (entry.isFile()) {
      found.push({ path, source: absolute });
    } else if (entry.isSymbolicLink()) {
      const file = await resolveSymlink(rules, realRoot, path, absolute, warnings);
      if (file) found.push(file);
    } else {
      warnings.push(`${path}: not a regular file; skipped`);
    }
  }
}

/** The entry as a posix path inside the project, or a ProjectPackageError. */
function entryPath(root: string, realRoot: string, composition: string): string {
  const absolute = resolve(root, composition);
  // An absolute entry may spell the project through its real path or through a link.
  const path = insideRelative(root, absolute) ?? insideRelative(realRoot, absolute);
  if (path === undefined) {
    throw new ProjectPackageError(
      `${composition}: the composition entry must be a file inside the project ${root}`,
      "composition",
    );
  }
  return path;
}

function zipEntry(path: string): ZipInputFile & { push(chunk: Uint8Array, final: boolean): void } {
  const extension = path.slice(path.lastIndexOf(".") + 1).toLowerCase();
  const file = STORED_EXTENSIONS.has(extension) && path.includes(".")
    ? new ZipPassThrough(path)
    : new ZipDeflate(path, { level: DEFLATE_LEVEL });
  file.mtime = FIXED_MTIME;
  file.os = OS_UNIX;
  file.attrs = FIXED_ATTRS;
  return file;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/** Ten largest, by size descending then path, as `--dry-run` reports them. */
function largestFiles(files: PackagedFile[]): PackagedFile[] {
  return [...files]
    .sort((a, b) => b.size - a.size || compareCodeUnits(a.path, b.path))
    .slice(0, 10);
}

/**
 * Zips a project directory under the upload rules (see `ignore_rules.ts`), reading only
 * the files that are included. The result is byte-identical for the same tree, so its
 * `sha256` and `siteId` address the content.
 *
 * @example
 * ```ts no_run
 * const pkg = await packageProject("examples/hello", { maxBytes: HOSTED_UPLOAD_LIMIT_BYTES });
 * console.log(pkg.siteId, pkg.fileCount, pkg.compressedBytes);
 * for (const file of pkg.largest) console.log(file.size, file.path);
 * ```
 */
export async function packageProject(
  projectDir: string,
  options: PackageProjectOptions = {},
): Promise<ProjectPackage> {
  const root = resolve(projectDir);
  let realRoot: string;
  try {
    if (!(await stat(root)).isDirectory()) throw new Error("not a directory");
    realRoot = await realpath(root);
  } catch (error) {
    throw new ProjectPackageError(
      `${projectDir}: not a project directory (${(error as Error).message})`,
      "projectDir",
      { cause: error },
    );
  }

  const rules = await projectRules(root);
  const entry = entryPath(root, realRoot, options.composition ?? DEFAULT_ENTRY);
  const excluded = rules.exclusionReason(entry, false);
  if (excluded !== undefined) {
    throw new ProjectPackageError(
      `${entry}: the composition entry is excluded from the upload (${excluded}); ` +
        `move it or change the ignore rules`,
      "composition",
    );
  }

  const named = new Set<string>();
  for (const path of options.exclude ?? []) {
    const absolute = resolve(path);
    const inside = insideRelative(root, absolute) ?? insideRelative(realRoot, absolute);
    if (inside !== undefined) named.add(inside);
  }
  if (named.has(entry)) {
    throw new ProjectPackageError(
      `${entry}: the composition entry is also named as a file to leave out of the upload ` +
        `(a batch file, manifest or output); write that file elsewhere`,
      "composition",
    );
  }
  let found: FoundFile[] = [];
  const warnings: string[] = [];
  await walk(rules, root, realRoot, "", found, warnings);
  found = found.filter((file) => !named.has(file.path));
  found.sort((a, b) => compareCodeUnits(a.path, b.path));
  if (!found.some((file) => file.path === entry)) {
    throw new ProjectPackageError(
      `${join(root, entry)}: composition entry not found in the project; ` +
        `pass --composition <file> to pick another entry`,
      "composition",
    );
  }
  // The faces vid embeds for HyperFrames' fonts travel with the project, so a render on the
  // server or Lambda draws the glyphs a local one does without asking a registry there.
  for (const face of (await hyperframesFonts(join(root, entry), root)).faces) {
    const path = `${PACKAGED_FONTS_DIR}/${face.name}`;
    if (!found.some((file) => file.path === path)) found.push({ path, source: face.file });
  }
  found.sort((a, b) => compareCodeUnits(a.path, b.path));

  const chunks: Uint8Array[] = [];
  let zipError: Error | undefined;
  const zip = new Zip((error, chunk) => {
    if (error) zipError ??= error;
    else chunks.push(chunk);
  });
  const files: PackagedFile[] = [];
  const contents: Record<string, Uint8Array> = {};
  for (const file of found) {
    let content: Uint8Array;
    try {
      content = await readFile(file.source);
    } catch (error) {
      throw new ProjectPackageError(
        `${file.path}: cannot read the file: ${(error as Error).message}`,
        file.path,
        { cause: error },
      );
    }
    const zipped = zipEntry(file.path);
    zip.add(zipped);
    zipped.push(content, true);
    files.push({ path: file.path, size: content.length });
    if (options.keepContents) contents[file.path] = content;
  }
  zip.end();
  if (zipError) {
    throw new ProjectPackageError(`cannot build the project zip: ${zipError.message}`, "zip", {
      cause: zipError,
    });
  }

  const bytes = concat(chunks);
  const largest = largestFiles(files);
  if (options.maxBytes !== undefined && bytes.length > options.maxBytes) {
    const list = largest.map((file) => `  ${formatBytes(file.size).padStart(9)}  ${file.path}`);
    throw new ProjectPackageError(
      `the project zip is ${formatBytes(bytes.length)} (${bytes.length} bytes), over the ` +
        `limit of ${formatBytes(options.maxBytes)} (${options.maxBytes} bytes). ` +
        `The ten largest included files:\n${list.join("\n")}\n` +
        `Exclude what the render does not need with .vidignore or .hyperframesignore ` +
        `at the project root.`,
      "maxBytes",
      { largest },
    );
  }

  const sha256 = createHash("sha256").update(bytes).digest("hex");
  return {
    zip: bytes,
    sha256,
    siteId: `site-${sha256.slice(0, 16)}`,
    fileCount: files.length,
    uncompressedBytes: files.reduce((sum, file) => sum + file.size, 0),
    compressedBytes: bytes.length,
    largest,
    files,
    entry,
    warnings,
    ...(options.keepContents ? { contents } : {}),
  };
}
