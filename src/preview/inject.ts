/**
 * Puts the vid page runtime into a composition's HTML for the preview stage. Rendering
 * installs the runtime with `Page.addScriptToEvaluateOnNewDocument`; a page in the
 * studio's iframe gets the very same script as the first elements of its `<head>`, so it
 * runs before any page script and the stage seeks exactly as capture does.
 *
 * The inserted markup holds no line break (the config as one line of JSON, the runtime
 * itself loaded from `src`), so a page error's line number in the studio is the line in
 * the author's file, as in a render.
 *
 * @module
 */

import { parse } from "parse5";
import type { DefaultTreeAdapterMap } from "parse5";
import {
  RUNTIME_SOURCE_URL,
  runtimeCall,
  type RuntimeConfig,
  runtimeScript,
} from "../runtime/page_runtime.ts";

type ParentNode = DefaultTreeAdapterMap["parentNode"];
type ChildNode = DefaultTreeAdapterMap["childNode"];
type Element = DefaultTreeAdapterMap["element"];

function isElement(node: ChildNode): node is Element {
  return "tagName" in node;
}

function childElement(parent: ParentNode, tag: string): Element | undefined {
  return parent.childNodes.find((n): n is Element => isElement(n) && n.tagName === tag);
}

/**
 * Where in `html` a script must go to run before every page script without changing the
 * document mode: right after `<head …>`, else after `<html …>`, else after the doctype,
 * else at the very start. Offsets are in UTF-16 code units, as JavaScript strings count.
 */
export function runtimeInsertionOffset(html: string): number {
  const document = parse(html, { sourceCodeLocationInfo: true });
  const html5 = childElement(document, "html");
  const head = html5 ? childElement(html5, "head") : undefined;
  const headTag = head?.sourceCodeLocation?.startTag;
  if (headTag) return headTag.endOffset;
  const htmlTag = html5?.sourceCodeLocation?.startTag;
  if (htmlTag) return htmlTag.endOffset;
  const doctype = document.childNodes.find((n) => n.nodeName === "#documentType");
  return doctype?.sourceCodeLocation?.endOffset ?? 0;
}

/** Where the preview server serves {@linkcode runtimeLoaderScript}. */
export const RUNTIME_LOADER_PATH = "/__preview/runtime.js";

/** The global the inline config element sets and the loader reads (then deletes). */
const CONFIG_GLOBAL = "__vidRuntimeConfig";

/**
 * The runtime for the stage, as an external script: it installs the runtime with the
 * config the element before it set. Named `vid-runtime.js` in stacks, as in a render.
 */
export function runtimeLoaderScript(): string {
  return `(() => { const config = globalThis.${CONFIG_GLOBAL}; ` +
    `delete globalThis.${CONFIG_GLOBAL}; ${runtimeCall("config")}; })();\n` +
    `//# sourceURL=${RUNTIME_SOURCE_URL}\n`;
}

/**
 * The runtime as `<script>` elements: without `src`, one inline element with the whole
 * runtime; with `src` (the URL of {@linkcode runtimeLoaderScript}), an inline element
 * setting the config (one line) and the external runtime. `</script` and `<!--` inside
 * them (a variable value could hold either) are escaped so the HTML parser cannot end or
 * comment out the element early; `<\/` means `</` inside a JavaScript string.
 */
export function runtimeScriptElement(
  config: RuntimeConfig,
  marks: Readonly<Record<string, string>> = {},
  src?: string,
): string {
  const code = src === undefined
    ? runtimeScript(config)
    : `globalThis.${CONFIG_GLOBAL} = ${JSON.stringify(config)};`;
  const source = code
    .replace(/<\/(script)/gi, "<\\/$1")
    .replace(/<!--/g, "<\\!--")
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029");
  const attributes = Object.entries(marks)
    .map(([name, value]) => ` data-${name.replace(/[^a-z0-9-]/g, "")}="${escapeAttribute(value)}"`)
    .join("");
  const loader = src === undefined ? "" : `<script src="${escapeAttribute(src)}"></script>`;
  return `<script data-vid-runtime${attributes}>${source}</script>${loader}`;
}

function escapeAttribute(value: string): string {
  return value.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
}

/**
 * Returns `html` with the vid runtime installed before any of its own scripts. `marks`
 * become `data-*` attributes of the runtime's `<script>` element, for the studio to read
 * (the preview marks which set of video proxies the page got); `src` loads the runtime
 * from that URL (see {@linkcode runtimeScriptElement}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const page = injectRuntime("<!doctype html><html><head></head><body></body></html>", {
 *   variables: { title: "Hi" },
 *   seed: 1,
 *   epochMs: 0,
 *   fps: 30,
 *   readyTimeoutMs: 30000,
 * });
 * assert.ok(page.indexOf("data-vid-runtime") < page.indexOf("<body>"));
 * ```
 */
export function injectRuntime(
  html: string,
  config: RuntimeConfig,
  marks: Readonly<Record<string, string>> = {},
  src?: string,
): string {
  const at = runtimeInsertionOffset(html);
  return html.slice(0, at) + runtimeScriptElement(config, marks, src) + html.slice(at);
}
