/**
 * Runs in a composition page, bundled by `deno task build:page` into
 * `src/runtime/text_probe_bundle.ts` (see `src/check/runtime.ts`, which calls it at each sampled
 * frame, and `src/render/text_check.ts`, which calls it at a render's frame 0): the visible text
 * that reads `NaN`, `undefined`, `null` or `[object Object]` (with the variables that may have
 * put it there), unless an element holding it carries `data-text-ok`, and the text that runs off
 * the canvas.
 *
 * @module
 */

import {
  badToken,
  overflowEdges,
  TEXT_OK_ATTRIBUTE,
  type TextFinding,
  textSuspects,
} from "./text_checks.ts";
import { compositionRoot } from "./composition_root.ts";

/** What a declared type's value is in JavaScript. */
const JS_TYPE: Record<string, string> = {
  string: "string",
  number: "number",
  boolean: "boolean",
  color: "string",
  enum: "string",
  image: "string",
};

/**
 * The page's variables, the ids its root declares that they lack (dropped) and those whose
 * value is not of the declared type (an override the render only warned about).
 */
function pageVariables(): {
  values: Record<string, unknown>;
  dropped: string[];
  mistyped: string[];
} {
  const vid = (globalThis as { __vid?: { getVariables(): Record<string, unknown> } }).__vid;
  const values = { ...(vid?.getVariables() ?? {}) };
  const raw = compositionRoot(document)?.getAttribute("data-composition-variables");
  let declared: unknown = [];
  try {
    declared = raw ? JSON.parse(raw) : [];
  } catch {
    // the composition reader reported malformed declarations before any render
  }
  const entries = (Array.isArray(declared) ? declared : []) as { id?: unknown; type?: unknown }[];
  const ids = entries.map((d) => d?.id).filter((id): id is string => typeof id === "string");
  const mistyped = entries.filter((d) =>
    typeof d?.id === "string" && d.id in values && typeof d.type === "string" &&
    JS_TYPE[d.type] !== undefined && typeof values[d.id] !== JS_TYPE[d.type]
  ).map((d) => d.id as string);
  return { values, dropped: ids.filter((id) => !(id in values)), mistyped };
}

/** What the page shows of one frame's text that is probably wrong. */
export function pageTextFindings(
  width: number,
  height: number,
): TextFinding[] {
  const found: TextFinding[] = [];
  let variables: ReturnType<typeof pageVariables> | undefined;
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
    const bad = el.closest(`[${TEXT_OK_ATTRIBUTE}]`) ? undefined : badToken(text);
    if (bad) {
      variables ??= pageVariables();
      const bound = el.closest("[data-var-text]")?.getAttribute("data-var-text") ?? undefined;
      found.push({
        kind: "bad-text",
        element: describe(el),
        text,
        detail: bad,
        suspects: textSuspects(
          bad,
          variables.values,
          variables.dropped,
          bound,
          variables.mistyped,
        ),
      });
    }
    const over = overflowEdges(r, width, height);
    if (over.length > 0) {
      found.push({ kind: "text-overflow", element: describe(el), text, detail: over.join(", ") });
    }
  }
  return found;
}
