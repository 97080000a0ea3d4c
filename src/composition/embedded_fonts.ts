/**
 * Which of the fonts HyperFrames embeds a page uses without declaring, read from its markup
 * alone: the families, their faces and where a packaged project carries them. Pure (no file
 * system), so `<vid-player>` finds the faces of a composition it fetched with the code the
 * renderer and the packager run (`fonts.ts` adds the files; `src/init/font_packages.ts` the
 * registry).
 *
 * @module
 */

import { HYPERFRAMES_FONT_ALIASES, looksLikeHyperframes } from "./font_aliases.ts";
import {
  embeddedFaceFile,
  FONT_PACKAGES,
  type FontPackage,
  HYPERFRAMES_FONT_WEIGHTS,
} from "../init/font_catalog.ts";

export { embeddedFaceFile, FONT_PACKAGES, HYPERFRAMES_FONT_WEIGHTS };
export type { FontPackage };

/**
 * The families HyperFrames embeds, by its slug of the family name (lower case, spaces as
 * dashes), each from `@fontsource/<slug>`.
 */
export const HYPERFRAMES_EMBEDDED_FONTS: readonly string[] = [
  "inter",
  "montserrat",
  "outfit",
  "nunito",
  "oswald",
  "league-gothic",
  "archivo-black",
  "space-mono",
  "ibm-plex-mono",
  "jetbrains-mono",
  "eb-garamond",
  "playfair-display",
  "source-code-pro",
  "noto-sans-jp",
  "roboto",
  "open-sans",
  "lato",
  "poppins",
];

/**
 * Where a packaged project carries the faces vid embeds (project-relative), so a render on
 * `vid server` or Lambda draws them without a registry.
 */
export const PACKAGED_FONTS_DIR = ".vid/fonts";

/** A family the page asks for that HyperFrames would embed and the project does not declare. */
export interface UnresolvedFont {
  /** The family as written (first spelling seen). */
  family: string;
  /** The npm package HyperFrames takes its files from. */
  package: string;
  /**
   * The embedded family HyperFrames draws this system family with (`Helvetica` as `Inter`),
   * when the family is not one it embeds under its own name.
   */
  as?: string;
  /** Why vid could not embed it itself (absent: not tried). */
  reason?: string;
}

/** HyperFrames' slug of a family name. */
function slug(family: string): string {
  return family.trim().toLowerCase().replace(/\s+/g, "-");
}

/** The names of a `font-family` value, unquoted, in order. */
function families(value: string): string[] {
  return value.split(",").map((f) => f.trim().replace(/^["']|["']$/g, "").trim()).filter((f) =>
    f !== ""
  );
}

/**
 * The families HyperFrames would embed that these HTML files name (any family of a
 * `font-family` or `font` value, as HyperFrames' renderer reads them) without an
 * `@font-face` for them. In a HyperFrames project ({@linkcode looksLikeHyperframes}) that
 * includes the system families HyperFrames draws with an embedded one
 * ({@linkcode HYPERFRAMES_FONT_ALIASES}: `Helvetica` with Inter's files), named `as`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const html = `<style>h1 { font-family: "Outfit", sans-serif; } p { font-family: Georgia; }</style>`;
 * assert.deepEqual(unresolvedFontsIn([html]), [{ family: "Outfit", package: "@fontsource/outfit" }]);
 * const declared = `${html}<style>@font-face { font-family: Outfit; src: url(o.woff2); }</style>`;
 * assert.deepEqual(unresolvedFontsIn([declared]), []);
 * // The `font` shorthand names its families after the size.
 * assert.deepEqual(unresolvedFontsIn([`<p style="font: 700 64px/1.2 Roboto, serif">`]), [
 *   { family: "Roboto", package: "@fontsource/roboto" },
 * ]);
 * // In a HyperFrames project, Georgia is drawn with EB Garamond, as HyperFrames draws it.
 * assert.deepEqual(unresolvedFontsIn([`${html}<div data-track-index="1"></div>`]), [
 *   { family: "Outfit", package: "@fontsource/outfit" },
 *   { family: "Georgia", package: "@fontsource/eb-garamond", as: "EB Garamond" },
 * ]);
 * ```
 */
export function unresolvedFontsIn(htmlFiles: readonly string[]): UnresolvedFont[] {
  const aliases = looksLikeHyperframes(htmlFiles);
  const declared = new Set<string>();
  const used = new Map<string, UnresolvedFont>();
  for (const html of htmlFiles) {
    const rest = html.replace(/@font-face\s*\{([^}]*)\}/gi, (_all, body: string) => {
      const name = /font-family\s*:\s*([^;]+)/i.exec(body)?.[1];
      if (name) { for (const f of families(name)) declared.add(slug(f)); }
      return "";
    });
    for (const match of rest.matchAll(/(?<![-\w])font(-family)?\s*:\s*([^;}<>]+)/gi)) {
      // `&quot;` is how a quote inside a style attribute may be written.
      let value = match[2].replaceAll("&quot;", '"');
      if (!match[1]) {
        // The `font` shorthand ends with its families, after the size (and line height).
        const tail = /(?:^|\s)[\d.]+(?:px|pt|em|rem|%|vw|vh|vmin|vmax)(?:\s*\/\s*\S+)?\s+(.+)$/i
          .exec(value.trim());
        if (!tail) continue;
        value = tail[1];
      }
      for (const family of families(value)) {
        const key = slug(family);
        if (used.has(key)) continue;
        const alias = aliases ? HYPERFRAMES_FONT_ALIASES[family.toLowerCase()] : undefined;
        if (HYPERFRAMES_EMBEDDED_FONTS.includes(key)) {
          used.set(key, { family, package: `@fontsource/${key}` });
        } else if (alias) {
          used.set(key, {
            family,
            package: `@fontsource/${alias}`,
            as: FONT_PACKAGES[alias]?.family ?? "Inter",
          });
        }
      }
    }
  }
  return [...used].filter(([key]) => !declared.has(key)).map(([, font]) => font);
}

/**
 * The project-relative `href`s of an HTML file's `<link rel="stylesheet">` elements (the
 * files whose `@font-face`s declare families too).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const html = `<link rel="stylesheet" href="fonts/outfit.css"><link rel="stylesheet" href="https://x.example/a.css">`;
 * assert.deepEqual(linkedStylesheets(html), ["fonts/outfit.css"]);
 * ```
 */
export function linkedStylesheets(html: string): string[] {
  return [...html.matchAll(/<link\b[^>]*>/gi)].map((m) => m[0])
    .filter((tag) => /\brel\s*=\s*["']?stylesheet\b/i.test(tag))
    .map((tag) => /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(tag))
    .map((m) => (m?.[1] ?? m?.[2] ?? m?.[3] ?? "").split(/[?#]/)[0])
    .filter((href) => href !== "" && !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(href))
    .map((href) => href.replace(/^\/+/, ""));
}
