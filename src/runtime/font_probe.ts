/**
 * Runs in a composition page, bundled by `deno task build:page` into
 * `src/runtime/font_probe_bundle.ts` (see `src/render/fonts.ts`, which calls it): loads every
 * font face of the page and names those that fail with the files their rules point at.
 *
 * @module
 */

/** One face that did not load, with the URLs of its rule's `src`. */
export interface PageFontFailure {
  family: string;
  variant: string;
  urls: string[];
}

/**
 * Runs in the page: loads every font face and returns the failed ones with the URLs of
 * their rules' `src` (a face made by `new FontFace` has no rule: no URL).
 */
export function pageFontFailures(): Promise<PageFontFailure[]> {
  const clean = (family: string): string => family.replace(/^["']|["']$/g, "").trim();
  const urlsOf = new Map<string, string[]>();
  for (const sheet of Array.from(document.styleSheets)) {
    let rules: CSSRuleList;
    try {
      rules = sheet.cssRules;
    } catch {
      continue; // another origin's stylesheet
    }
    for (const rule of Array.from(rules)) {
      if (!(rule instanceof CSSFontFaceRule)) continue;
      const family = clean(rule.style.getPropertyValue("font-family"));
      const key = `${family}|${rule.style.getPropertyValue("font-weight") || "normal"}|${
        rule.style.getPropertyValue("font-style") || "normal"
      }`;
      const base = sheet.href ?? location.href;
      const urls = Array.from(
        rule.style.getPropertyValue("src").matchAll(/url\(\s*["']?([^"')]+)["']?\s*\)/g),
        (m) => new URL(m[1], base).href,
      );
      urlsOf.set(key, [...(urlsOf.get(key) ?? []), ...urls]);
    }
  }
  const faces = Array.from(document.fonts as unknown as Iterable<FontFace>);
  return Promise.allSettled(faces.map((face) => face.load())).then(() =>
    faces.filter((face) => face.status === "error").map((face) => {
      const family = clean(face.family);
      const weight = face.weight === "400" ? "normal" : face.weight;
      return {
        family,
        variant: `${face.weight} ${face.style}`,
        urls: urlsOf.get(`${family}|${weight}|${face.style}`) ??
          urlsOf.get(`${family}|${face.weight}|${face.style}`) ?? [],
      };
    })
  );
}
