/**
 * Fonts HyperFrames embeds that a project does not ship. HyperFrames' renderer injects an
 * `@font-face` from an npm `@fontsource/*` package when a page names one of a fixed set of
 * families without declaring it; vid serves a page from its project folder alone (so a render
 * is the same on this machine, `vid server` and Lambda) and injects nothing, so such a family
 * falls back to another font until `vid add <slug>` copies it into the project. This check
 * names each one before the render, with the command that resolves it, so the difference is
 * never silent.
 *
 * Read without a browser: the `font-family` values of the entry file and of its
 * sub-compositions' files (`<style>` elements and `style` attributes), less the families an
 * `@font-face` of those files, or of a project stylesheet they link (`fonts/<slug>.css`
 * written by `vid add <slug>`), declares.
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { readSubCompositions, type SubComposition } from "./sub_compositions.ts";

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

/** A family the page asks for that HyperFrames would embed and the project does not declare. */
export interface UnresolvedFont {
  /** The family as written (first spelling seen). */
  family: string;
  /** The npm package HyperFrames takes its files from. */
  package: string;
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
 * The families HyperFrames would embed that these HTML files name (as the first family of a
 * `font-family`) without an `@font-face` for them.
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
 * ```
 */
export function unresolvedFontsIn(htmlFiles: readonly string[]): UnresolvedFont[] {
  const declared = new Set<string>();
  const used = new Map<string, string>();
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
      const [first] = families(value);
      if (first && !used.has(slug(first))) used.set(slug(first), first);
    }
  }
  return [...used].filter(([key]) => HYPERFRAMES_EMBEDDED_FONTS.includes(key) && !declared.has(key))
    .map(([key, family]) => ({ family, package: `@fontsource/${key}` }));
}

/** The project-relative `href`s of an HTML file's `<link rel="stylesheet">` elements. */
function linkedStylesheets(html: string): string[] {
  return [...html.matchAll(/<link\b[^>]*>/gi)].map((m) => m[0])
    .filter((tag) => /\brel\s*=\s*["']?stylesheet\b/i.test(tag))
    .map((tag) => /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(tag))
    .map((m) => (m?.[1] ?? m?.[2] ?? m?.[3] ?? "").split(/[?#]/)[0])
    .filter((href) => href !== "" && !/^[a-z][a-z0-9+.-]*:|^\/\//i.test(href))
    .map((href) => href.replace(/^\/+/, ""));
}

function files(subs: readonly SubComposition[]): string[] {
  return subs.flatMap((s) => s.error ? files(s.children) : [s.file, ...files(s.children)]);
}

/**
 * {@linkcode unresolvedFontsIn} for a composition file and its sub-compositions' files.
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

/**
 * The warning for one family.
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
  return `font "${font.family}" has no @font-face in the project: HyperFrames embeds it from ` +
    `${font.package}, vid draws a fallback font instead; run \`vid add ${slug}\` in the ` +
    `project to copy its files into fonts/ and link fonts/${slug}.css from index.html`;
}
