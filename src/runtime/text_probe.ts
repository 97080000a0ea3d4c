/**
 * Runs in a composition page, bundled by `deno task build:page` into
 * `src/runtime/text_probe_bundle.ts` (see `src/check/runtime.ts`, which calls it at each sampled
 * frame): the visible text that reads `NaN`, `undefined` or `[object Object]`, and the text that
 * runs off the canvas.
 *
 * @module
 */

import { badToken, overflowEdges, type TextFinding } from "./text_checks.ts";

/** What the page shows of one frame's text that is probably wrong. */
export function pageTextFindings(
  width: number,
  height: number,
): TextFinding[] {
  const found: TextFinding[] = [];
  const describe = (el: Element): string =>
    el.tagName.toLowerCase() + (el.id ? `#${el.id}` : "") +
    Array.from(el.classList).slice(0, 2).map((c) => `.${c}`).join("");
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const text = (node.textContent ?? "").trim();
    const el = node.parentElement;
    if (text === "" || !el || el.closest("script, style, template, noscript")) continue;
    if (!el.checkVisibility({ checkOpacity: true, checkVisibilityCSS: true })) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) continue;
    // Wholly off the canvas: placed there on purpose (waiting to slide in), not shown.
    if (r.right <= 0 || r.bottom <= 0 || r.left >= width || r.top >= height) continue;
    const bad = badToken(text);
    if (bad) found.push({ kind: "bad-text", element: describe(el), text, detail: bad });
    const over = overflowEdges(r, width, height);
    if (over.length > 0) {
      found.push({ kind: "text-overflow", element: describe(el), text, detail: over.join(", ") });
    }
  }
  return found;
}
