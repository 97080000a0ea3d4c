/**
 * A composition from any origin: the player fetches its HTML itself (CORS), reads it with
 * vid's own parser and variable checks (`src/composition/markup.ts`, `values.ts`: a bad
 * value reads as `--strict-variables` prints it), and puts vid's page runtime into it (the
 * runtime a render installs, `injectRuntime`'s element) with a `<base href>` so its relative
 * files load from where it came from. The page then loads as the `srcdoc` of an iframe
 * sandboxed to `allow-scripts` alone (an opaque origin), and the runtime's bridge answers the
 * player as it does for a page `vid preview` served.
 *
 * A server that puts the runtime in itself (`vid preview`) is told apart by the runtime's
 * element in the HTML it answers, or by not answering a cross-origin read at all (it sends
 * no `Access-Control-Allow-Origin` on compositions): the player then loads its URL as before.
 *
 * @module
 */

import { parse } from "parse5";
import type { DefaultTreeAdapterMap } from "parse5";
import { parseCompositionMarkup } from "../composition/markup.ts";
import { checkValues, mergeVariables } from "../composition/values.ts";
import { looksLikeHyperframes } from "../composition/font_aliases.ts";
import { StrictVariablesError } from "../composition/errors.ts";
import {
  frameCountOf,
  type FrameRate,
  frameRateValue,
  parseFrameRate,
} from "../composition/frame_rate.ts";
import {
  runtimeInsertionOffset,
  runtimeLoaderScript,
  runtimeScriptElement,
} from "../preview/inject.ts";
import type { PlayerComposition } from "../runtime/player_bridge.ts";
import type { RuntimeFontFace } from "../composition/font_face.ts";
import { PlayerPageError } from "./page_link.ts";

/** What an iframe loading a fetched composition may do: run its scripts, in an opaque origin. */
export const SRCDOC_SANDBOX = "allow-scripts";

/** The HTML at a composition's URL, as fetched: with vid's runtime in it already, or not. */
export type FetchedPage =
  | { kind: "served"; url: string }
  | { kind: "plain"; url: string; html: string };

/**
 * Fetches the composition at `url` for the player. A read the browser refuses (no
 * `Access-Control-Allow-Origin`: a `vid preview`, or a host that does not allow it) or HTML
 * that carries vid's runtime already is `"served"`: the player loads the URL itself.
 *
 * @example
 * ```ts no_run
 * const page = await fetchPage("https://cdn.example.com/card/index.html");
 * if (page.kind === "plain") console.log(page.html.length);
 * ```
 */
export async function fetchPage(url: string): Promise<FetchedPage> {
  let response: Response;
  try {
    response = await fetch(url, { mode: "cors", credentials: "omit", cache: "no-cache" });
  } catch {
    return { kind: "served", url };
  }
  if (!response.ok) {
    throw new PlayerPageError(`${url} answered ${response.status} ${response.statusText}`.trim());
  }
  const html = await response.text();
  if (/<script[^>]*\sdata-vid-runtime[\s>]/i.test(html)) return { kind: "served", url };
  return { kind: "plain", url: response.url || url, html };
}

/** A fetched composition made ready to load as an iframe's `srcdoc`. */
export interface SrcdocPage {
  /** The page: the composition's HTML with `<base href>` and vid's runtime in its head. */
  srcdoc: string;
  /** Size, duration and frames, as vid reads them. */
  composition: PlayerComposition;
  /** A bad variable value in `--strict-variables`' words, or null. */
  problem: string | null;
}

/** What {@linkcode srcdocPage} needs besides the HTML. */
export interface SrcdocOptions {
  /** The URL the HTML came from: its relative files resolve against it. */
  url: string;
  /** The variable values to show (checked and merged over the defaults). */
  values: Record<string, unknown>;
  /** The `fps` attribute, or "" for the composition's `data-fps` (else 30). */
  fps: string;
  /** What `Date.now()` returns at time 0 in the page. */
  epochMs: number;
  /**
   * Faces the runtime adds to `document.fonts` before the page's scripts: the ones vid
   * embeds for HyperFrames' fonts (`packaged_fonts.ts`), as a render adds them.
   */
  fonts?: RuntimeFontFace[];
}

/** The rate of a composition without `data-fps`, as a render's (`DEFAULT_FRAME_RATE`). */
const DEFAULT_RATE: FrameRate = { num: 30, den: 1 };

/** The frame rate for a page: the `fps` attribute when it reads as one, else `fallback`. */
function rateOf(raw: string, fallback: FrameRate): FrameRate {
  if (raw === "") return fallback;
  try {
    return parseFrameRate(raw, "fps");
  } catch (error) {
    throw new PlayerPageError(`fps: ${(error as Error).message}`);
  }
}

type Node = DefaultTreeAdapterMap["node"];

/**
 * Where in `html` to write ` crossorigin` into a `<script src>` of the composition's own
 * origin that has none: offsets just after `<script`, last first. Such a script's error
 * then keeps its message and file:line in the opaque-origin page (a cross-origin classic
 * script's errors read "Script error." otherwise); the host allows the read already.
 * Scripts of other origins are left as they are, as are module scripts (CORS anyway).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const html = '<script src="a.js"></script><script src="https://cdn.example/b.js"></script>';
 * assert.deepEqual(crossOriginOffsets(html, "https://site.example/c/index.html"), [7]);
 * ```
 */
export function crossOriginOffsets(html: string, url: string): number[] {
  const origin = new URL(url).origin;
  const offsets: number[] = [];
  const visit = (node: Node): void => {
    if ("tagName" in node && node.tagName === "script") {
      const attrs = new Map(node.attrs.map((a) => [a.name, a.value]));
      const src = attrs.get("src");
      const start = node.sourceCodeLocation?.startTag?.startOffset;
      if (
        src !== undefined && !attrs.has("crossorigin") && attrs.get("type") !== "module" &&
        start !== undefined && URL.canParse(src, url) && new URL(src, url).origin === origin
      ) {
        offsets.push(start + "<script".length);
      }
    }
    for (const child of "childNodes" in node ? node.childNodes : []) visit(child);
    if ("content" in node) visit((node as DefaultTreeAdapterMap["template"]).content);
  };
  visit(parse(html, { sourceCodeLocationInfo: true }));
  return offsets.sort((a, b) => b - a);
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/**
 * The composition `html` fetched from `options.url`, with vid's runtime and a `<base href>`
 * in its head, and what vid reads of it. The inserted markup holds no line break, so a page
 * error's line is the line in the author's file. A file that is not a composition fails
 * with vid's message.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const page = srcdocPage(
 *   '<html><head></head><body><div data-composition-id="c" data-width="320" ' +
 *     'data-height="180" data-duration="2"></div></body></html>',
 *   { url: "https://cdn.example/c/index.html", values: {}, fps: "", epochMs: 0 },
 * );
 * assert.equal(page.composition.frames, 60);
 * assert.ok(page.srcdoc.includes('<base href="https://cdn.example/c/index.html">'));
 * ```
 */
export function srcdocPage(html: string, options: SrcdocOptions): SrcdocPage {
  const file = decodeURIComponent(new URL(options.url).pathname.split("/").pop() || "index.html");
  let markup;
  try {
    markup = parseCompositionMarkup(html, file);
  } catch (error) {
    throw new PlayerPageError(`${options.url}: ${(error as Error).message}`);
  }
  const rate = rateOf(options.fps, markup.fps ?? DEFAULT_RATE);
  const composition: PlayerComposition = {
    id: markup.id,
    width: markup.width,
    height: markup.height,
    duration: markup.duration,
    fps: frameRateValue(rate),
    frames: frameCountOf(markup.duration, rate),
  };
  // Image paths cannot be looked up on another host: only their form is checked, as for a
  // project that is not on this disk.
  const problems = checkValues(markup.declarations, options.values);
  const problem = problems.length > 0 ? new StrictVariablesError(problems).message : null;
  const marks: Record<string, string> = { "vid-composition": JSON.stringify(composition) };
  if (problem) marks["vid-problem"] = problem;
  const runtime = runtimeScriptElement(
    {
      variables: mergeVariables(markup.declarations, options.values),
      seed: 1,
      epochMs: options.epochMs,
      fps: frameRateValue(rate),
      frameRate: rate,
      readyTimeoutMs: 30000,
      ...(options.fonts?.length ? { fonts: options.fonts } : {}),
      // HyperFrames' text rule, as a render of the project gets it
      // (src/composition/text_rendering.ts decides from the same entry HTML).
      ...(looksLikeHyperframes([html]) && { hyperframesTextRendering: true }),
    },
    marks,
    `data:text/javascript;charset=utf-8,${encodeURIComponent(runtimeLoaderScript())}`,
  );
  let page = html;
  for (const offset of crossOriginOffsets(html, options.url)) {
    page = `${page.slice(0, offset)} crossorigin${page.slice(offset)}`;
  }
  const at = runtimeInsertionOffset(page);
  const base = `<base href="${escapeAttribute(options.url)}">`;
  return { srcdoc: page.slice(0, at) + base + runtime + page.slice(at), composition, problem };
}
