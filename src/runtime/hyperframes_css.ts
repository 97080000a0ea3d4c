/**
 * The text rules of a mounted HyperFrames sub-composition: where its relative URLs point
 * (`rebase`, `rebaseCss`) and how its stylesheets and its scripts' selectors are scoped to the
 * one instance (`scopeSelector`, `rootSelector`, `scopeRules`). Pure string functions, but
 * `scopeRules`, which rewrites a live `CSSRuleList`.
 *
 * Runs in the page: part of the HyperFrames model (`hyperframes.ts`), bundled with the
 * runtime by `scripts/build_page_code.ts`.
 *
 * @module
 */

/** The attribute marking a mounted host with its instance number. */
export const MOUNT = "data-vid-mount";
/** The attribute marking a mounted instance's root with its instance number. */
export const ROOT = "data-vid-root";

/** `text` with every regular-expression metacharacter escaped. */
function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * HyperFrames' rule for a URL inside a sub-composition file: a `../` path is the file's
 * (resolved against `fileUrl`); any other, the project's (left as written).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const file = "http://127.0.0.1/compositions/a.html";
 * assert.equal(rebase("../gsap.min.js", file), "http://127.0.0.1/gsap.min.js");
 * assert.equal(rebase("img/a.png", file), "img/a.png");
 * ```
 */
export function rebase(value: string, fileUrl: string): string {
  const trimmed = value.trim();
  if (!trimmed.startsWith("../") && trimmed !== "..") return value;
  try {
    return new URL(trimmed, fileUrl).href;
  } catch {
    return value;
  }
}

/** `css` with each `url(...)` rebased as {@linkcode rebase} says. */
export function rebaseCss(css: string, fileUrl: string): string {
  return css.replace(
    /url\(\s*(["']?)([^"')]+)\1\s*\)/g,
    (_all, quote: string, url: string) => `url(${quote}${rebase(url, fileUrl)}${quote})`,
  );
}

/**
 * Splits a selector list at its top-level commas (not inside parentheses, brackets or
 * quotes), each part trimmed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(splitSelectors("a, :is(b, c), [x=','] d"), ["a", ":is(b, c)", "[x=','] d"]);
 * ```
 */
export function splitSelectors(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = "";
  let current = "";
  for (const char of text) {
    if (quote) {
      if (char === quote) quote = "";
    } else if (char === '"' || char === "'") quote = char;
    else if (char === "(" || char === "[") depth++;
    else if (char === ")" || char === "]") depth--;
    else if (char === "," && depth === 0) {
      parts.push(current.trim());
      current = "";
      continue;
    }
    current += char;
  }
  if (current.trim()) parts.push(current.trim());
  return parts;
}

/**
 * A selector of a composition's scripts or styles with its root's id (`#rootId`) naming
 * instance `n`'s root instead; unchanged when the root has no id.
 */
export function rootSelector(selector: string, n: number, rootId: string): string {
  return rootId
    ? selector.replace(new RegExp(`#${escapeRegExp(rootId)}(?![\\w-])`, "g"), `[${ROOT}="${n}"]`)
    : selector;
}

/**
 * Scopes one selector to mounted instance `n`, as HyperFrames scopes a sub-composition's CSS:
 * `S` matches inside the instance only; the composition's root (`#root`, its own id, its
 * `[data-composition-id]`, or `html`/`body`/`:root`) is the instance's root.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(scopeSelector(".title", 2, "root", "intro"), '[data-vid-mount="2"] .title');
 * assert.equal(scopeSelector("#root .t", 2, "root", "intro"), '[data-vid-root="2"] .t');
 * assert.equal(scopeSelector("body", 2, "root", "intro"), '[data-vid-root="2"]');
 * ```
 */
export function scopeSelector(selector: string, n: number, rootId: string, compId: string): string {
  const root = `[${ROOT}="${n}"]`;
  if (/^(html|body|:root)$/i.test(selector)) return root;
  let scoped = selector.replace(
    new RegExp(`\\[\\s*data-composition-id\\s*=\\s*(["']?)${escapeRegExp(compId)}\\1\\s*\\]`, "g"),
    root,
  );
  scoped = rootSelector(scoped, n, rootId);
  return scoped.startsWith(root) ? scoped : `[${MOUNT}="${n}"] ${scoped}`;
}

/**
 * Scopes every style rule of a mounted instance's stylesheet in place, inside `@media`,
 * `@supports` and `@layer` blocks too; `@keyframes` and `@font-face` stay global, as in
 * HyperFrames.
 */
export function scopeRules(rules: CSSRuleList, n: number, rootId: string, compId: string): void {
  for (const rule of Array.from(rules)) {
    if (rule instanceof CSSStyleRule) {
      rule.selectorText = splitSelectors(rule.selectorText)
        .map((s) => scopeSelector(s, n, rootId, compId))
        .join(", ");
    } else if (
      rule instanceof CSSMediaRule || rule instanceof CSSSupportsRule ||
      (typeof CSSLayerBlockRule !== "undefined" && rule instanceof CSSLayerBlockRule)
    ) {
      scopeRules((rule as CSSGroupingRule).cssRules, n, rootId, compId);
    }
  }
}
