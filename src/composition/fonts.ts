/**
 * Fonts HyperFrames embeds that a project does not declare, embedded by vid the same way.
 * HyperFrames' renderer injects an `@font-face` from an npm `@fontsource/*` package when a page
 * names one of a fixed set of families without declaring it; a HyperFrames project relies on
 * that and ships no font files. vid embeds the same faces (the latin subset of the weights
 * HyperFrames embeds, `HYPERFRAMES_FONT_WEIGHTS`) from the same packages, resolved once into
 * vid's cache (`src/init/font_packages.ts`: the tarball checked against the registry's
 * integrity) and handed to the page runtime, which adds them to `document.fonts` before the
 * page's scripts run. For the surfaces that render elsewhere (`vid cloud`, `vid lambda sites`,
 * `vid server` uploads), the packager puts the faces into the project zip under
 * {@linkcode PACKAGED_FONTS_DIR}, where the remote render finds them without a network.
 *
 * Where a family cannot be had (not cached and no registry reachable, or
 * `VID_HYPERFRAMES_FONTS=0`), it is named with the command that copies it into the project
 * (`vid add <slug>`), so the difference is never silent.
 *
 * Read without a browser: the `font-family` values of the entry file and of its
 * sub-compositions' files (`<style>` elements and `style` attributes), less the families an
 * `@font-face` of those files, or of a project stylesheet they link (`fonts/<slug>.css`
 * written by `vid add <slug>`), declares.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { embeddedFaceFiles, FontPackageError } from "../init/font_packages.ts";
import {
  embeddedFaceFile,
  HYPERFRAMES_FONT_WEIGHTS,
  linkedStylesheets,
  PACKAGED_FONTS_DIR,
  type UnresolvedFont,
  unresolvedFontsIn,
} from "./embedded_fonts.ts";
import type { RuntimeFontFace } from "./font_face.ts";
import { readSubCompositions, type SubComposition } from "./sub_compositions.ts";

export type { RuntimeFontFace, UnresolvedFont };
export {
  HYPERFRAMES_EMBEDDED_FONTS,
  PACKAGED_FONTS_DIR,
  unresolvedFontsIn,
} from "./embedded_fonts.ts";
/** One face vid embeds, as HyperFrames would, for a family the project does not declare. */
export interface EmbeddedFontFace {
  /** The family as the page writes it. */
  family: string;
  /** `400`, `700` or `900`. */
  weight: string;
  /** The woff2 file: in the project's {@linkcode PACKAGED_FONTS_DIR}, or vid's cache. */
  file: string;
  /** Its name inside {@linkcode PACKAGED_FONTS_DIR} (`<slug>-latin-<weight>-normal.woff2`). */
  name: string;
}

/** What {@linkcode hyperframesFonts} found. */
export interface HyperframesFonts {
  /** The faces vid embeds, family by family. */
  faces: EmbeddedFontFace[];
  /** The families it could not embed, each with the reason. */
  unresolved: UnresolvedFont[];
}

/**
 * Whether vid embeds HyperFrames' fonts: yes unless `VID_HYPERFRAMES_FONTS` is `0`, `off` or
 * `false` (then the families are named with `vid add`, as before vid embedded them).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(embeddingFonts({}), true);
 * assert.equal(embeddingFonts({ VID_HYPERFRAMES_FONTS: "0" }), false);
 * ```
 */
export function embeddingFonts(
  env: Record<string, string | undefined> = process.env,
): boolean {
  return !/^(0|off|false|no)$/i.test(env.VID_HYPERFRAMES_FONTS ?? "");
}

function files(subs: readonly SubComposition[]): string[] {
  return subs.flatMap((s) => s.error ? files(s.children) : [s.file, ...files(s.children)]);
}

/**
 * {@linkcode unresolvedFontsIn} for a composition file and its sub-compositions' files: the
 * families HyperFrames embeds that the project does not declare.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(await undeclaredFonts("examples/hello/index.html"), []);
 * ```
 */
export async function undeclaredFonts(
  file: string,
  projectDir?: string,
): Promise<UnresolvedFont[]> {
  const subs = await readSubCompositions(file);
  const dir = projectDir ?? join(file, "..");
  const texts = await Promise.all(
    [file, ...files(subs).map((f) => join(dir, f))].map((f) => readFile(f, "utf8").catch(() => "")),
  );
  // Sub-compositions are mounted into the entry document, so every link resolves from it.
  const sheets = [...new Set(texts.flatMap(linkedStylesheets))];
  const css = await Promise.all(
    sheets.map((href) => readFile(join(file, "..", href), "utf8").catch(() => "")),
  );
  return unresolvedFontsIn([...texts, ...css]);
}

/** Each family's faces, resolved once per process (a failure too, so it costs one wait). */
const resolving = new Map<string, Promise<Record<string, string>>>();

/** The faces of one family: the project's packaged copy, else vid's cache or the registry. */
async function familyFaces(slug: string, projectDir: string): Promise<Record<string, string>> {
  const weights = HYPERFRAMES_FONT_WEIGHTS[slug];
  const packaged = Object.fromEntries(
    weights.map((w) => [w, join(projectDir, PACKAGED_FONTS_DIR, embeddedFaceFile(slug, w))]),
  );
  const present = await Promise.all(
    Object.values(packaged).map((f) => stat(f).then((s) => s.isFile(), () => false)),
  );
  if (present.every(Boolean)) return packaged;
  let faces = resolving.get(slug);
  if (!faces) {
    // A render waits for the registry at most this long; `vid add` allows longer.
    faces = embeddedFaceFiles(slug, { timeoutMs: 20_000 });
    resolving.set(slug, faces);
  }
  return await faces;
}

/**
 * The fonts HyperFrames embeds that a composition uses without declaring: the faces vid embeds
 * for them, and those it cannot (with the reason), to be named with `vid add`.
 *
 * @example
 * ```ts no_run
 * const { faces, unresolved } = await hyperframesFonts("my-video/index.html");
 * ```
 */
export async function hyperframesFonts(
  file: string,
  projectDir?: string,
): Promise<HyperframesFonts> {
  const dir = projectDir ?? join(file, "..");
  const result: HyperframesFonts = { faces: [], unresolved: [] };
  for (const font of await undeclaredFonts(file, dir)) {
    const slug = font.package.slice("@fontsource/".length);
    if (!embeddingFonts()) {
      result.unresolved.push({ ...font, reason: "VID_HYPERFRAMES_FONTS turns embedding off" });
      continue;
    }
    try {
      const files = await familyFaces(slug, dir);
      for (const [weight, path] of Object.entries(files)) {
        result.faces.push({
          family: font.family,
          weight,
          file: path,
          name: embeddedFaceFile(slug, weight),
        });
      }
    } catch (error) {
      if (!(error instanceof FontPackageError)) throw error;
      result.unresolved.push({ ...font, reason: error.detail ?? error.message });
    }
  }
  return result;
}

/**
 * The families HyperFrames embeds that a composition uses, does not declare and vid cannot
 * embed: what a render and `vid check` warn about.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(await unresolvedFonts("examples/hello/index.html"), []);
 * ```
 */
export async function unresolvedFonts(
  file: string,
  projectDir?: string,
): Promise<UnresolvedFont[]> {
  return (await hyperframesFonts(file, projectDir)).unresolved;
}

/**
 * The warning for one family vid could not embed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.match(
 *   unresolvedFontMessage({ family: "Montserrat", package: "@fontsource/montserrat" }),
 *   /run `vid add montserrat`/,
 * );
 * ```
 */
export function unresolvedFontMessage(font: UnresolvedFont): string {
  const slug = font.package.slice("@fontsource/".length);
  const why = font.reason ? ` (${font.reason})` : "";
  const as = font.as ? ` as ${font.as}` : "";
  return `font "${font.family}" has no @font-face in the project: HyperFrames embeds it${as} from ` +
    `${font.package}; vid cannot embed it here${why} and draws a fallback font instead; run ` +
    `\`vid add ${slug}\` in the project to copy its files into fonts/ and link ` +
    `fonts/${slug}.css from index.html`;
}

/**
 * Embedded faces as the page runtime takes them: each file as a `data:` URL, so the faces
 * reach every page (and every worker's window) with the runtime's config, whatever serves
 * the project.
 *
 * @example
 * ```ts no_run
 * const { faces } = await hyperframesFonts("my-video/index.html");
 * const config = { fonts: await runtimeFontFaces(faces) }; // part of the runtime's config
 * ```
 */
export async function runtimeFontFaces(
  faces: readonly EmbeddedFontFace[],
): Promise<RuntimeFontFace[]> {
  return await Promise.all(faces.map(async (face) => ({
    family: face.family,
    weight: face.weight,
    url: `data:font/woff2;base64,${Buffer.from(await readFile(face.file)).toString("base64")}`,
  })));
}
