/**
 * The catalogue of font faces HyperFrames embeds: which `@fontsource` package and version each
 * family comes from, the weights embedded, and the file name of one face. Pure data with no
 * imports, so `vid add` (src/init/font_packages.ts), the composition's font reading
 * (src/composition/embedded_fonts.ts) and `<vid-player>` all read the one table.
 *
 * @module
 */

/** A family HyperFrames embeds: its name and the pinned `@fontsource` version. */
export interface FontPackage {
  /** The family name as CSS names it. */
  family: string;
  /** The exact `@fontsource/<slug>` version copied. */
  version: string;
}

/**
 * The families `vid add` fetches from the registry, by HyperFrames' slug (the package is
 * `@fontsource/<slug>`). Inter is absent: it is a dependency of vid.
 */
export const FONT_PACKAGES: Readonly<Record<string, FontPackage>> = {
  "montserrat": { family: "Montserrat", version: "5.3.0" },
  "outfit": { family: "Outfit", version: "5.3.0" },
  "nunito": { family: "Nunito", version: "5.3.0" },
  "oswald": { family: "Oswald", version: "5.3.0" },
  "league-gothic": { family: "League Gothic", version: "5.3.0" },
  "archivo-black": { family: "Archivo Black", version: "5.3.0" },
  "space-mono": { family: "Space Mono", version: "5.3.0" },
  "ibm-plex-mono": { family: "IBM Plex Mono", version: "5.3.0" },
  "jetbrains-mono": { family: "JetBrains Mono", version: "5.3.0" },
  "eb-garamond": { family: "EB Garamond", version: "5.3.0" },
  "playfair-display": { family: "Playfair Display", version: "5.3.0" },
  "source-code-pro": { family: "Source Code Pro", version: "5.3.0" },
  "noto-sans-jp": { family: "Noto Sans JP", version: "5.3.0" },
  "roboto": { family: "Roboto", version: "5.3.0" },
  "open-sans": { family: "Open Sans", version: "5.3.0" },
  "lato": { family: "Lato", version: "5.3.0" },
  "poppins": { family: "Poppins", version: "5.3.0" },
};

/**
 * The faces HyperFrames' renderer embeds for each family it knows, by slug: the weights of its
 * `CANONICAL_FONTS` table (`packages/producer/src/services/deterministicFonts.ts` in
 * HyperFrames' repository), each the normal style of the latin subset
 * (`files/<slug>-latin-<weight>-normal.woff2`), so vid draws the glyphs HyperFrames draws.
 */
export const HYPERFRAMES_FONT_WEIGHTS: Readonly<Record<string, readonly string[]>> = {
  "inter": ["400", "700", "900"],
  "montserrat": ["400", "700", "900"],
  "outfit": ["400", "700", "900"],
  "nunito": ["400", "700", "900"],
  "oswald": ["400", "700"],
  "league-gothic": ["400"],
  "archivo-black": ["400"],
  "space-mono": ["400", "700"],
  "ibm-plex-mono": ["400", "700"],
  "jetbrains-mono": ["400", "700"],
  "eb-garamond": ["400", "700"],
  "playfair-display": ["400", "700", "900"],
  "source-code-pro": ["400", "700"],
  "noto-sans-jp": ["400", "700"],
  "roboto": ["400", "700", "900"],
  "open-sans": ["400", "700"],
  "lato": ["400", "700", "900"],
  "poppins": ["400", "700", "900"],
};

/** The file of one embedded face: `<slug>-latin-<weight>-normal.woff2`. */
export function embeddedFaceFile(slug: string, weight: string): string {
  return `${slug}-latin-${weight}-normal.woff2`;
}
