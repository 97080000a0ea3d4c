/**
 * The fonts HyperFrames embeds, copied into a project by `vid add <family>` so the project
 * declares them itself. HyperFrames' renderer injects an `@font-face` from `@fontsource/<slug>`
 * when a page names one of these families without declaring it; vid serves a page from its
 * project folder alone (the folder is what travels to `vid server`, a site and Lambda), so
 * the files have to be in that folder, and the one place to put them there is the project on
 * disk, once, before any render.
 *
 * Inter comes from vid's own npm dependency (`src/init/vendor.ts`); the other families are
 * fetched from the npm registry at the version pinned in {@linkcode FONT_PACKAGES}, the
 * tarball checked against the registry's `dist.integrity` (SHA-512) and kept in vid's cache
 * folder, so a second `vid add` (and the test suite) reads no network. Declaring seventeen
 * font packages as dependencies instead would put every subset and weight of each (tens of
 * megabytes, Noto Sans JP alone most of it) into every install of vid for a few projects.
 *
 * What is copied is what Fontsource's own `400.css` and `700.css` declare (every subset with
 * its `unicode-range`, woff2 only), rewritten into `fonts/<slug>.css`, plus the licence; the
 * entry HTML gets a `<link>` to that stylesheet, so the page declares the family and renders
 * in it here, on `vid server`, on Lambda and in HyperFrames alike.
 *
 * @module
 */

import { createHash } from "node:crypto";
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import process from "node:process";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { cacheDir } from "../util/cache_dir.ts";
import { libraryFolder } from "./vendor.ts";
import { embeddedFaceFile, FONT_PACKAGES, HYPERFRAMES_FONT_WEIGHTS } from "./font_catalog.ts";

export type { FontPackage } from "./font_catalog.ts";
export { embeddedFaceFile, FONT_PACKAGES, HYPERFRAMES_FONT_WEIGHTS };

/** The npm registry `vid add` asks when `NPM_CONFIG_REGISTRY` names none. */
export const DEFAULT_NPM_REGISTRY = "https://registry.npmjs.org";

/** Deadline of one registry request (metadata or tarball). */
const FETCH_TIMEOUT_MS = 120_000;

/** The weights copied: the regular and bold faces Fontsource ships as `400.css` and `700.css`. */
const WEIGHTS = ["400", "700"] as const;

/** A font package could not be fetched, verified or read; `field` is the font's slug. */
export class FontPackageError extends VidError {
  /** Always `"FontPackageError"`. */
  override name = "FontPackageError";
  /**
   * Creates the error for one family.
   *
   * @param slug The family's slug, as given to `vid add`.
   * @param detail What went wrong and how to go on.
   */
  constructor(slug: string, detail: string) {
    super(`cannot add the font ${slug} (npm @fontsource/${slug}): ${detail}`, {
      field: slug,
      detail,
      exitCode: EXIT_FAILED,
    });
  }
}

/** Options of {@linkcode fetchFontPackage}. */
export interface FetchFontOptions {
  /** Registry base URL. @default `NPM_CONFIG_REGISTRY`, else {@linkcode DEFAULT_NPM_REGISTRY} */
  registry?: string;
  /** Where verified tarballs are kept. @default `<cacheDir()>/npm` */
  cacheDir?: string;
  /** Deadline of one registry request, in milliseconds. @default 120000 */
  timeoutMs?: number;
}

/** `sha512-<base64>` of some bytes, as npm writes `dist.integrity`. */
function integrityOf(bytes: Uint8Array): string {
  return `sha512-${createHash("sha512").update(bytes).digest("base64")}`;
}

async function getWithDeadline(
  slug: string,
  url: string,
  timeoutMs = FETCH_TIMEOUT_MS,
): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    throw new FontPackageError(
      slug,
      `${url} did not answer (${(error as Error).message}); check the network or set ` +
        `NPM_CONFIG_REGISTRY to a registry this machine reaches`,
    );
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new FontPackageError(slug, `${url} answered HTTP ${response.status}`);
  }
  return response;
}

/**
 * The verified tarball of `@fontsource/<slug>` at its pinned version: from the cache when a
 * copy there still matches the registry's integrity, else downloaded and checked.
 *
 * @example
 * ```ts no_run
 * const tgz = await fetchFontPackage("montserrat"); // gzipped tar bytes
 * ```
 */
export async function fetchFontPackage(
  slug: string,
  options: FetchFontOptions = {},
): Promise<Uint8Array> {
  const pkg = FONT_PACKAGES[slug];
  if (!pkg) throw new FontPackageError(slug, "not a family HyperFrames embeds");
  const registry = (options.registry ?? process.env.NPM_CONFIG_REGISTRY ??
    DEFAULT_NPM_REGISTRY).replace(/\/+$/, "");
  const folder = options.cacheDir ?? join(cacheDir(), "npm");
  const cached = join(folder, `fontsource-${slug}-${pkg.version}.tgz`);
  const integrityFile = `${cached}.integrity`;
  // The integrity recorded with a cached tarball came from the registry when it was fetched;
  // checking the bytes against it again catches a truncated or altered cache file.
  const known = await readFile(integrityFile, "utf8").catch(() => undefined);
  if (known) {
    const bytes = await readFile(cached).catch(() => undefined);
    if (bytes && integrityOf(bytes) === known.trim()) return new Uint8Array(bytes);
  }
  const metaUrl = `${registry}/@fontsource%2f${slug}/${pkg.version}`;
  const meta = await (await getWithDeadline(slug, metaUrl, options.timeoutMs)).json() as {
    dist?: { tarball?: string; integrity?: string };
  };
  const tarball = meta.dist?.tarball;
  const integrity = meta.dist?.integrity;
  if (!tarball || !integrity?.startsWith("sha512-")) {
    throw new FontPackageError(slug, `${metaUrl} gave no tarball with a sha512 integrity`);
  }
  const bytes = new Uint8Array(
    await (await getWithDeadline(slug, tarball, options.timeoutMs)).arrayBuffer(),
  );
  const actual = integrityOf(bytes);
  if (actual !== integrity) {
    throw new FontPackageError(
      slug,
      `the tarball from ${tarball} does not match the registry's integrity ` +
        `(${integrity}, got ${actual}); nothing was written`,
    );
  }
  await mkdir(folder, { recursive: true });
  // Written beside, then renamed, so a concurrent `vid add` never reads half a tarball.
  const partial = `${cached}.${process.pid}.part`;
  await writeFile(partial, bytes);
  await rename(partial, cached);
  await writeFile(integrityFile, integrity);
  return bytes;
}

/**
 * The regular files of a gzipped tar whose paths `want` accepts, by path. A minimal ustar
 * reader: npm tarballs hold only regular files and folders under `package/`.
 *
 * @example
 * ```ts no_run
 * const tgz = await fetchFontPackage("montserrat");
 * const files = await untarFiles(tgz, (path) => path.endsWith(".css"));
 * ```
 */
export async function untarFiles(
  tgz: Uint8Array,
  want: (path: string) => boolean,
): Promise<Map<string, Uint8Array>> {
  const stream = new Blob([tgz as Uint8Array<ArrayBuffer>]).stream().pipeThrough(
    new DecompressionStream("gzip"),
  );
  const tar = new Uint8Array(await new Response(stream).arrayBuffer());
  const text = new TextDecoder();
  const field = (at: number, length: number): string =>
    text.decode(tar.subarray(at, at + length)).replace(/\0.*$/s, "");
  const out = new Map<string, Uint8Array>();
  let offset = 0;
  while (offset + 512 <= tar.length) {
    const name = field(offset, 100);
    if (name === "") break; // the two zero blocks that end the archive
    const prefix = field(offset + 345, 155);
    const size = parseInt(field(offset + 124, 12).trim() || "0", 8);
    const type = field(offset + 156, 1);
    const path = prefix ? `${prefix}/${name}` : name;
    const start = offset + 512;
    if ((type === "0" || type === "") && want(path)) {
      out.set(path, tar.slice(start, start + size));
    }
    offset = start + Math.ceil(size / 512) * 512;
  }
  return out;
}

/** What {@linkcode vendorFontPackage} wrote. */
export interface VendoredFont {
  /** The exact package version. */
  version: string;
  /** Project-relative paths written (stylesheet first). */
  files: string[];
  /** The stylesheet declaring the family, project-relative. */
  stylesheet: string;
}

/**
 * Copies a family's regular and bold faces (every subset, woff2) and licence from its
 * `@fontsource` package into `<projectDir>/fonts/`, with `fonts/<slug>.css` declaring them.
 *
 * @example
 * ```ts no_run
 * const { stylesheet } = await vendorFontPackage("montserrat", "my-video"); // "fonts/montserrat.css"
 * ```
 */
export async function vendorFontPackage(
  slug: string,
  projectDir: string,
  options: FetchFontOptions = {},
): Promise<VendoredFont> {
  const pkg = FONT_PACKAGES[slug];
  if (!pkg) throw new FontPackageError(slug, "not a family HyperFrames embeds");
  const tgz = await fetchFontPackage(slug, options);
  const files = await untarFiles(
    tgz,
    (p) => p === "package/LICENSE" || /^package\/(400|700)\.css$/.test(p) || p.endsWith(".woff2"),
  );
  const rules: string[] = [];
  const fonts = new Set<string>();
  for (const weight of WEIGHTS) {
    const css = files.get(`package/${weight}.css`);
    if (!css) continue; // e.g. League Gothic and Archivo Black have a regular face only
    // Fontsource lists woff2 then woff for each subset; the woff fallback is for browsers
    // older than any Chromium vid drives, so only the woff2 files are copied and named.
    const rewritten = new TextDecoder().decode(css).replace(
      /url\(\.\/files\/([^)]+\.woff2)\) format\('woff2'\)(, url\(\.\/files\/[^)]+\.woff\) format\('woff'\))?/g,
      (_all, file: string) => {
        fonts.add(file);
        return `url(${file}) format('woff2')`;
      },
    );
    rules.push(rewritten.trim());
  }
  if (rules.length === 0) {
    throw new FontPackageError(slug, "the package has neither 400.css nor 700.css");
  }
  const stylesheet = `fonts/${slug}.css`;
  const written = new Map<string, Uint8Array | string>([[
    stylesheet,
    `/* ${pkg.family}: @fontsource/${slug}@${pkg.version} (vid add ${slug}); licence in ` +
    `${slug}-LICENSE.txt */\n${rules.join("\n\n")}\n`,
  ]]);
  for (const file of [...fonts].sort()) {
    const bytes = files.get(`package/files/${file}`);
    if (!bytes) throw new FontPackageError(slug, `the package lacks files/${file}`);
    written.set(`fonts/${file}`, bytes);
  }
  const license = files.get("package/LICENSE");
  if (license) written.set(`fonts/${slug}-LICENSE.txt`, license);
  for (const [path, content] of written) {
    await mkdir(dirname(join(projectDir, path)), { recursive: true });
    await writeFile(join(projectDir, path), content);
  }
  return { version: pkg.version, files: [...written.keys()], stylesheet };
}

/**
 * An HTML document with a `<link rel="stylesheet">` to `href` in its head (before `</head>`,
 * else before the first tag after the doctype); unchanged when it links `href` already.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const html = "<!doctype html><html><head><title>t</title></head><body></body></html>";
 * const linked = linkStylesheet(html, "fonts/montserrat.css");
 * assert.match(linked, /<link rel="stylesheet" href="fonts\/montserrat.css">\n<\/head>/);
 * assert.equal(linkStylesheet(linked, "fonts/montserrat.css"), linked);
 * ```
 */
export function linkStylesheet(html: string, href: string): string {
  const escaped = href.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  if (new RegExp(`<link[^>]+href=["']?${escaped}["'\\s>]`, "i").test(html)) return html;
  const tag = `<link rel="stylesheet" href="${href}">\n`;
  const head = /<\/head\s*>/i.exec(html);
  if (head) return html.slice(0, head.index) + tag + html.slice(head.index);
  const doctype = /^\s*<!doctype[^>]*>\s*/i.exec(html);
  const at = doctype ? doctype[0].length : 0;
  return html.slice(0, at) + tag + html.slice(at);
}

/** Whether a package's file is the latin face of `weight`, as HyperFrames picks it. */
function latinFace(file: string, weight: string): boolean {
  return file.endsWith(`-${weight}-normal.woff2`) && file.includes("-latin-");
}

/**
 * The files of a family's embedded faces ({@linkcode HYPERFRAMES_FONT_WEIGHTS}), by weight, as
 * absolute paths: Inter from vid's own npm dependency; any other family from vid's cache
 * folder (`<cacheDir()>/fonts/fontsource-<slug>-<version>/`), filled once from the verified
 * tarball of {@linkcode fetchFontPackage}, so a later render reads no network.
 *
 * @example
 * ```ts no_run
 * const files = await embeddedFaceFiles("montserrat");
 * // { "400": ".../montserrat-latin-400-normal.woff2", "700": ..., "900": ... }
 * ```
 */
export async function embeddedFaceFiles(
  slug: string,
  options: FetchFontOptions = {},
): Promise<Record<string, string>> {
  const weights = HYPERFRAMES_FONT_WEIGHTS[slug];
  if (!weights) throw new FontPackageError(slug, "not a family HyperFrames embeds");
  const pick = (folder: string, files: readonly string[]): Record<string, string> | null => {
    const found: Record<string, string> = {};
    for (const weight of weights) {
      const exact = embeddedFaceFile(slug, weight);
      const file = files.includes(exact) ? exact : files.find((f) => latinFace(f, weight));
      if (!file) return null;
      found[weight] = join(folder, file);
    }
    return found;
  };
  if (slug === "inter") {
    let root: string;
    try {
      root = libraryFolder("inter");
    } catch (error) {
      // A bundle (the Lambda worker) has no node_modules: the site's packaged copy serves there.
      throw new FontPackageError(slug, (error as Error).message);
    }
    const folder = join(root, "files");
    const found = pick(folder, await readdir(folder));
    if (!found) throw new FontPackageError(slug, `${folder} lacks a latin face of ${weights}`);
    return found;
  }
  const pkg = FONT_PACKAGES[slug];
  const folder = join(cacheDir(), "fonts", `fontsource-${slug}-${pkg.version}`);
  const cached = pick(folder, await readdir(folder).catch(() => []));
  if (cached) return cached;
  const tgz = await fetchFontPackage(slug, options);
  const files = await untarFiles(
    tgz,
    (p) => weights.some((w) => latinFace(p.slice(p.lastIndexOf("/") + 1), w)),
  );
  const names = [...files.keys()].map((p) => p.slice(p.lastIndexOf("/") + 1));
  const found = pick(folder, names);
  if (!found) {
    throw new FontPackageError(slug, `the package lacks a latin face of weight ${weights}`);
  }
  // Written beside, then renamed, so a render running at the same time never reads half a
  // folder: the first rename wins, and the other's copy is the same bytes.
  const partial = `${folder}.${process.pid}.part`;
  await mkdir(partial, { recursive: true });
  const chosen = new Set(Object.values(found).map((f) => f.slice(f.lastIndexOf("/") + 1)));
  for (const [path, bytes] of files) {
    const name = path.slice(path.lastIndexOf("/") + 1);
    if (chosen.has(name)) await writeFile(join(partial, name), bytes);
  }
  await rename(partial, folder).catch(() => rm(partial, { recursive: true, force: true }));
  return found;
}
