/**
 * Fonts that fail to load: every `@font-face` of a loaded composition page is loaded
 * (`document.fonts`), and those that fail (a missing or undecodable file) are named with
 * the file their rule points at. The browser falls back to another font without a word,
 * so a render warns with these and `vid check` reports them.
 *
 * @module
 */

import type { CdpSession } from "./cdp.ts";
import { evaluate } from "./capture.ts";
import { projectFile } from "./page_error.ts";
import { FONT_PROBE_BUNDLE } from "../runtime/font_probe_bundle.ts";
import { within } from "../util/async.ts";

/** How long {@linkcode failedFonts} waits for the page's fonts to settle. */
const FONT_WAIT_MS = 5000;

/** One `@font-face` that did not load. */
export interface FontFailure {
  /** `font-family` of the rule. */
  family: string;
  /** `font-weight` and `font-style`, e.g. `700 italic`. */
  variant: string;
  /** The file(s) its `src` names, relative to the project when they are in it. */
  files: string[];
}

/**
 * Loads every font face of the page and returns those that failed.
 *
 * @example
 * ```ts no_run
 * import type { CompositionPage } from "./render_chunk.ts";
 *
 * async function warnFonts(page: CompositionPage): Promise<void> {
 *   for (const f of await failedFonts(page.page)) console.warn(f.family, f.files);
 * }
 * ```
 */
export async function failedFonts(
  page: CdpSession,
  timeoutMs = FONT_WAIT_MS,
): Promise<FontFailure[]> {
  // The page's own timers run on the frame clock, so the deadline is kept here: a font
  // server that never answers must not hold the render (the frame's readiness gate still
  // waits for fonts, with its own timeout).
  const answer = await within(
    evaluate(
      page,
      `(${FONT_PROBE_BUNDLE})().then((r) => ({ r, href: location.href }))`,
    ) as Promise<{ r: { family: string; variant: string; urls: string[] }[]; href: string }>,
    timeoutMs,
  );
  if (answer === undefined) return [];
  const result = answer.value;
  return result.r.map((f) => ({
    family: f.family,
    variant: f.variant,
    files: [...new Set(f.urls.map((url) => projectFile(url, result.href)))],
  }));
}

/** A font failure as one sentence, for render warnings and check problems. */
export function fontFailureMessage(failure: FontFailure): string {
  const files = failure.files.length > 0 ? ` from ${failure.files.join(", ")}` : "";
  return `font "${failure.family}" (${failure.variant}) failed to load${files}: the text ` +
    "falls back to another font; check that the file exists and is a font (woff2, woff, ttf, otf)";
}
