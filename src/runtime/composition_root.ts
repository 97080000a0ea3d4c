/**
 * Which element of the page is the composition root, as HyperFrames' runtime (and
 * `parseCompositionMarkup` on the host) choose it.
 *
 * @module
 */

/**
 * The composition root: the element marked `data-root="true"` (with a
 * `data-composition-id`) if there is one, else the first `[data-composition-id]` element in
 * document order, which is the topmost one; null when the page has none.
 */
export function compositionRoot(document: Document): Element | null {
  return document.querySelector('[data-composition-id][data-root="true"]') ??
    document.querySelector("[data-composition-id]");
}
