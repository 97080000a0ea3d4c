/**
 * The system families HyperFrames draws with one of the families it embeds: its renderer's
 * alias table (`FONT_ALIAS_MAP` of `@hyperframes/parsers`, used by its producer's
 * `injectDeterministicFontFaces`). A page that names `Helvetica` (or `SF Mono`, `Georgia`, …)
 * without an `@font-face` for it gets an `@font-face` of that name with the files of the
 * embedded family (Inter, JetBrains Mono, EB Garamond, …), so it draws the same glyphs on every
 * host. vid does the same for a HyperFrames project ({@linkcode looksLikeHyperframes}), and
 * leaves the system's fonts to its own compositions, which name `Noto Sans` or `DejaVu Sans`
 * for the system font they mean.
 *
 * @module
 */

/** Lower-case family name -> the slug of the embedded family HyperFrames draws it with. */
export const HYPERFRAMES_FONT_ALIASES: Readonly<Record<string, string>> = {
  // Common names.
  "helvetica neue": "inter",
  "helvetica": "inter",
  "arial": "inter",
  "helvetica bold": "inter",
  "futura": "montserrat",
  "din alternate": "montserrat",
  "arial black": "montserrat",
  "bebas neue": "league-gothic",
  "courier new": "jetbrains-mono",
  "courier": "jetbrains-mono",
  "garamond": "eb-garamond",
  "noto sans japanese": "noto-sans-jp",
  "segoe ui": "roboto",
  // macOS, Windows and Linux sans-serif system families.
  "sf pro": "inter",
  "sf pro display": "inter",
  "sf pro text": "inter",
  "sf pro rounded": "inter",
  "avenir": "inter",
  "avenir next": "inter",
  "lucida grande": "inter",
  "geneva": "inter",
  "optima": "inter",
  "verdana": "inter",
  "tahoma": "inter",
  "trebuchet ms": "inter",
  "calibri": "inter",
  "candara": "inter",
  "corbel": "inter",
  "lucida sans": "inter",
  "lucida sans unicode": "inter",
  "noto sans": "inter",
  "dejavu sans": "inter",
  "liberation sans": "inter",
  // Monospace system families.
  "sf mono": "jetbrains-mono",
  "menlo": "jetbrains-mono",
  "monaco": "jetbrains-mono",
  "consolas": "jetbrains-mono",
  "lucida console": "jetbrains-mono",
  "lucida sans typewriter": "jetbrains-mono",
  "andale mono": "jetbrains-mono",
  "dejavu sans mono": "jetbrains-mono",
  "liberation mono": "jetbrains-mono",
  // Serif system families.
  "georgia": "eb-garamond",
  "palatino": "eb-garamond",
  "palatino linotype": "eb-garamond",
  "book antiqua": "eb-garamond",
  "cambria": "eb-garamond",
  "times": "eb-garamond",
  "times new roman": "eb-garamond",
  "dejavu serif": "eb-garamond",
  "liberation serif": "eb-garamond",
};

/**
 * Whether these HTML files are a HyperFrames project's, whose system families HyperFrames
 * would draw with its embedded ones: a page registering a timeline by id
 * (`window.__timelines["main"] = tl`, as every HyperFrames starter and example does), or
 * using `data-track-index` or `data-composition-src`. vid's own compositions list their
 * timelines (`window.__timelines = [tl]`) and use neither attribute.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(looksLikeHyperframes([`<script>window.__timelines["main"] = tl;</script>`]), true);
 * assert.equal(looksLikeHyperframes([`<div data-track-index="1"></div>`]), true);
 * assert.equal(looksLikeHyperframes([`<script>window.__timelines = [tl];</script>`]), false);
 * ```
 */
export function looksLikeHyperframes(htmlFiles: readonly string[]): boolean {
  return htmlFiles.some((html) =>
    /__timelines\s*\[|\bdata-track-index\s*=|\bdata-composition-src\s*=/.test(html)
  );
}
