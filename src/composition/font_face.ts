/**
 * The shape of a font face the page runtime adds to a page: declared on its own, with no
 * imports, so the page runtime (and `<vid-player>`, which runs in a browser) can name it
 * without reaching `fonts.ts`' file-system side.
 *
 * @module
 */

/**
 * A font face the page runtime adds to the page, as HyperFrames' renderer injects it
 * (`RuntimeConfig.fonts` of `src/runtime/page_runtime.ts`, which re-exports the type).
 */
export interface RuntimeFontFace {
  /** `font-family`. */
  family: string;
  /** `font-weight`. */
  weight: string;
  /** The woff2 file as a URL (a `data:` URL, so it travels with the config). */
  url: string;
}
