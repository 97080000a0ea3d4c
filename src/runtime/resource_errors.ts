/**
 * A page's script or stylesheet that did not load, said as the user can act on it: the element
 * and its URL, and the fix. Without it a failed `<script src>` shows up only later, as what the
 * page's next script cannot find (`ReferenceError: gsap is not defined`), and a failed
 * stylesheet not at all: the frames are drawn unstyled. HyperFrames' starters link GSAP from a
 * CDN, which a render host without internet (or a sandboxed one) cannot reach; vid serves a
 * composition from its project folder, so the fix is a copy in the project (`vid add gsap`).
 *
 * A file of the project itself is not one of them: the renderer names a missing one by its
 * path before any frame (see {@linkcode resourceFailure}). A stylesheet of a web-font service
 * (Google Fonts) is not one either: HyperFrames renders on
 * without it too, the page's text falls back to the fonts the page or vid provides
 * (docs/hyperframes.md, Fonts).
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`); the table of
 * libraries mirrors `src/init/vendor.ts` (checked by tests/unit/resource_errors_test.ts),
 * which cannot be bundled into a page.
 *
 * @module
 */

/** A library `vid add` copies, as a failed URL names it, and where its copy lands. */
export interface VendoredLibrary {
  /** The `vid add` name. */
  name: string;
  /** Matches a URL of the library's file (a CDN path names its npm package). */
  pattern: RegExp;
  /** Where `vid add` puts the file a `<script>` points at. */
  file: string;
}

/** The libraries `vid add` vendors whose files pages load with `<script src>`. */
export const VENDORED_LIBRARIES: readonly VendoredLibrary[] = [
  { name: "gsap", pattern: /(^|[/@])gsap([@/.]|$)/i, file: "lib/gsap.min.js" },
  {
    name: "lottie",
    pattern: /(^|[/@])(lottie-web|lottie)([@/.]|$)/i,
    file: "lib/lottie.min.js",
  },
  { name: "three", pattern: /(^|[/@])three([@/.]|$)/i, file: "lib/three.module.js" },
];

/** What a failed resource is: the element as written, its URL, and the message. */
export interface ResourceFailure {
  /** The absolute URL that did not load. */
  url: string;
  /** `<script src="…"> did not load …; <the fix>`. */
  message: string;
}

/**
 * Whether a URL is a file of the project (served from the page's own origin): a missing one is
 * named by the renderer's own check of the files the page asked for (`MissingAssetError`, and
 * `vid check`'s static part), which says which file and how its name differs.
 */
function ownFile(url: string): boolean {
  return new URL(url, location.href).origin === location.origin;
}

/**
 * The absolute URLs of other hosts an inline module imports (`import … from "https://…"`,
 * `import "https://…"`), in order.
 */
function remoteImports(source: string): string[] {
  const urls: string[] = [];
  for (
    const match of source.matchAll(
      /\bimport\s*(?:[\w*${}\s,]+?\s*from\s*)?(["'])(https?:\/\/[^"']+)\1/g,
    )
  ) {
    if (!ownFile(match[2]) && !urls.includes(match[2])) urls.push(match[2]);
  }
  return urls;
}

/** Hosts whose stylesheets only declare web fonts: their absence is not an error. */
const FONT_SERVICES = /^fonts\.(googleapis|gstatic)\.com$/i;

/**
 * The failure an element's `error` event means, or null when it is not a script or stylesheet
 * (an image, a media element: their own paths report them) or is a font service's stylesheet.
 *
 * @example
 * ```ts no_run
 * addEventListener("error", (event) => {
 *   const failure = resourceFailure(event.target);
 *   if (failure) console.error(failure.message);
 * }, true);
 * ```
 */
export function resourceFailure(target: EventTarget | null): ResourceFailure | null {
  if (target instanceof HTMLScriptElement && target.src && !ownFile(target.src)) {
    const library = VENDORED_LIBRARIES.find((l) => l.pattern.test(new URL(target.src).pathname));
    const fix = library
      ? `run \`vid add ${library.name}\` in the project and point the <script> at ${library.file}`
      : `copy the file into the project folder and point the <script> at it`;
    return {
      url: target.src,
      message: `<script src="${target.src}"> did not load (unreachable, or it answered an ` +
        `error); ${fix}, so the project carries its own copy`,
    };
  }
  if (target instanceof HTMLScriptElement && !target.src && target.type === "module") {
    // An inline module whose import did not load: its element says only "error", so the
    // failure is named by the imports of other hosts it asks for.
    const urls = remoteImports(target.text);
    if (urls.length === 0) return null;
    const library = VENDORED_LIBRARIES.find((l) =>
      urls.some((url) => l.pattern.test(new URL(url).pathname))
    );
    const fix = library
      ? `run \`vid add ${library.name}\` in the project and import ./${library.file}`
      : `copy the file into the project folder and import it from there`;
    return {
      url: urls[0],
      message: `<script type="module"> import ${
        urls.map((url) => `"${url}"`).join(", ")
      } did not load (unreachable, or it answered an error); ${fix}, so the project carries ` +
        `its own copy`,
    };
  }
  if (
    target instanceof HTMLLinkElement && /(^|\s)stylesheet(\s|$)/i.test(target.rel) &&
    target.href && !ownFile(target.href) && !FONT_SERVICES.test(new URL(target.href).hostname)
  ) {
    return {
      url: target.href,
      message: `<link rel="stylesheet" href="${target.href}"> did not load (unreachable, or ` +
        `it answered an error); copy the file into the project folder and point the <link> ` +
        `at it, so the project carries its own copy`,
    };
  }
  return null;
}
