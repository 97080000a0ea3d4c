/**
 * The fonts HyperFrames embeds, for a composition the player fetched from another host. A
 * render draws a family HyperFrames embeds (Outfit, Inter, Helvetica as Inter in a
 * HyperFrames project, …) that the page names without an `@font-face` in the faces vid
 * embeds; a packaged project (a Lambda site, a `vid server` upload) carries those faces under
 * `.vid/fonts/` (`src/project/package.ts`). The player finds the same families with the same
 * reading (`src/composition/embedded_fonts.ts`: the entry's HTML, its sub-compositions' files
 * and the stylesheets they link), reads each face from `<project>/.vid/fonts/<slug>-latin-<weight>-normal.woff2` (CORS,
 * as the composition's HTML) and hands it to the page runtime as a `data:` URL, as a render
 * does, so the opaque-origin page draws it without a request of its own. A face the host does
 * not have is left out with a console warning naming the family: the page draws a fallback
 * font, as before.
 *
 * @module
 */

import {
  embeddedFaceFile,
  HYPERFRAMES_FONT_WEIGHTS,
  linkedStylesheets,
  PACKAGED_FONTS_DIR,
  unresolvedFontsIn,
} from "../composition/embedded_fonts.ts";
import type { RuntimeFontFace } from "../composition/font_face.ts";

/** The first bytes of a woff2 file: a host that answers a missing file with a page is told apart. */
const WOFF2_SIGNATURE = [0x77, 0x4f, 0x46, 0x32]; // "wOF2"

/** A file the player reads from the composition's host: its bytes, or null when it has none. */
export type FileReader = (url: string) => Promise<Uint8Array | null>;

/** Reads `url` the way the player reads the composition (CORS, no credentials); null on failure. */
async function readFile(url: string): Promise<Uint8Array | null> {
  try {
    const response = await fetch(url, { mode: "cors", credentials: "omit" });
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    return new Uint8Array(await response.arrayBuffer());
  } catch {
    return null;
  }
}

/** `bytes` as a `data:` URL of a woff2 font. */
function fontDataUrl(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return `data:font/woff2;base64,${btoa(binary)}`;
}

/** What {@linkcode packagedFonts} found: the faces to embed, and the families the host lacks. */
export interface PackagedFonts {
  /** The faces, as the page runtime takes them (`RuntimeConfig.fonts`). */
  faces: RuntimeFontFace[];
  /** The families with a face the host does not have (each drawn with a fallback font). */
  missing: string[];
}

/**
 * The faces vid embeds for the HyperFrames fonts the composition `html` (fetched from `url`)
 * and its sub-compositions' files name without declaring, read from the packaged project at `root` (the folder holding
 * `.vid/fonts/`). Nothing fails: a family whose faces the host lacks is listed in `missing`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const html = `<style>h1 { font: 700 40px Outfit, serif; }</style>`;
 * const read = (url: string) =>
 *   Promise.resolve(url.endsWith("outfit-latin-700-normal.woff2") ? new Uint8Array([0x77, 0x4f, 0x46, 0x32]) : null);
 * const fonts = await packagedFonts(html, "https://cdn.example/c/index.html", "https://cdn.example/c/", read);
 * assert.deepEqual(fonts.faces, [{ family: "Outfit", weight: "700", url: "data:font/woff2;base64,d09GMg==" }]);
 * assert.deepEqual(fonts.missing, ["Outfit"]);
 * ```
 */
export async function packagedFonts(
  html: string,
  url: string,
  root: string,
  read: FileReader = readFile,
): Promise<PackagedFonts> {
  const text = async (href: string) => {
    const bytes = await read(new URL(href, url).href);
    return bytes ? new TextDecoder().decode(bytes) : "";
  };
  // The sub-compositions' files name families too, as the render reads them (they mount into
  // the entry's document, so their paths resolve from it).
  const pages = [html];
  const seen = new Set<string>();
  for (let i = 0; i < pages.length; i++) {
    const srcs = [...pages[i].matchAll(/\bdata-composition-src\s*=\s*(?:"([^"]*)"|'([^']*)')/gi)]
      .map((m) => m[1] ?? m[2]).filter((src) => src !== "" && !seen.has(src));
    for (const src of srcs) seen.add(src);
    pages.push(...await Promise.all(srcs.map(text)));
  }
  // The stylesheets they link may declare the families (`vid add`'s fonts/<slug>.css).
  const sheets = await Promise.all([...new Set(pages.flatMap(linkedStylesheets))].map(text));
  const result: PackagedFonts = { faces: [], missing: [] };
  const families = await Promise.all(
    unresolvedFontsIn([...pages, ...sheets]).map(async (font) => {
      const slug = font.package.slice("@fontsource/".length);
      const weights = HYPERFRAMES_FONT_WEIGHTS[slug] ?? [];
      const files = await Promise.all(weights.map(async (weight) => {
        const file = new URL(`${PACKAGED_FONTS_DIR}/${embeddedFaceFile(slug, weight)}`, root);
        const bytes = await read(file.href);
        const woff2 = bytes !== null && WOFF2_SIGNATURE.every((b, i) => bytes[i] === b);
        return woff2 ? { family: font.family, weight, url: fontDataUrl(bytes) } : null;
      }));
      return { family: font.family, files };
    }),
  );
  for (const { family, files } of families) {
    for (const face of files) if (face) result.faces.push(face);
    if (files.some((face) => face === null)) result.missing.push(family);
  }
  return result;
}

/**
 * The console warning for a family the host does not carry the faces of.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.match(missingFontMessage("Outfit", "https://cdn.example/c/"), /"Outfit".*fallback/);
 * ```
 */
export function missingFontMessage(family: string, root: string): string {
  return `<vid-player>: the composition names "${family}", a font HyperFrames embeds, without ` +
    `an @font-face, and ${new URL(PACKAGED_FONTS_DIR, root).href}/ does not have all its faces ` +
    `(a project packaged by vid carries them there): it is drawn with a fallback font, unlike ` +
    `its render; run \`vid add\` with the family's slug in the project to ship it with an ` +
    `@font-face`;
}
