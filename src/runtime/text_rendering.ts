/**
 * HyperFrames' text rule, as its compiler writes it into every composition it renders: a
 * `<style>` first in `<head>` making all text `text-rendering: geometricPrecision` (subpixel
 * glyph advances; headless Chromium's `auto` rounds them to whole pixels). `*` has no
 * specificity, so a page's own `text-rendering` still wins. The host decides whether a page
 * gets it (`RuntimeConfig.hyperframesTextRendering`: a HyperFrames project); vid's own
 * compositions keep Chromium's default.
 *
 * @module
 */

/** The rule, as HyperFrames writes it. */
export const HYPERFRAMES_TEXT_RULE = "html,body,*{text-rendering:geometricPrecision}";

/** The attribute HyperFrames marks its `<style>` with (a page compiled by it has one). */
const MARK = "data-hyperframes-text-rendering";

function insertInto(head: HTMLHeadElement): void {
  if (head.querySelector(`style[${MARK}]`)) return;
  const style = document.createElement("style");
  style.setAttribute(MARK, "true");
  style.textContent = HYPERFRAMES_TEXT_RULE;
  head.insertBefore(style, head.firstChild);
}

/**
 * Puts the rule first in the document's `<head>`: now if the head is parsed already (the
 * runtime inside the page's head, as the studio and `<vid-player>` load it), else the moment
 * the parser makes it (the runtime installed before the document exists, as a render loads
 * it). The parser runs no page script and paints nothing before the observer's callback (a
 * microtask), so the first script and the first paint see the rule.
 */
export function insertTextRenderingRule(): void {
  if (document.head) {
    insertInto(document.head);
    return;
  }
  const observer = new MutationObserver(() => {
    if (!document.head) return;
    observer.disconnect();
    insertInto(document.head);
  });
  observer.observe(document, { childList: true, subtree: true });
}
