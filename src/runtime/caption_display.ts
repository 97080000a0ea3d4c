/**
 * Captions shown by the page: each `[data-captions]` element shows the cues of its file
 * active at the frame's time, a cue with word timestamps as one `<span>` per word (classes
 * `vid-caption-word`, `-active`, `-spoken`). Files start loading with the page, so scripts
 * can read `__vid.captions` from the first frame; the parser is the renderer's
 * (`captions.ts`), so the page never shows a file the renderer would have refused.
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`).
 *
 * @module
 */

import { type CaptionCue, type CaptionTrack, parseCaptions } from "./captions.ts";

/**
 * The cues showing at `t` (a cue shows from its start until just before its end).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const cues = [{ start: 0, end: 1, text: "a" }, { start: 1, end: 2, text: "b" }];
 * assert.deepEqual(activeCues(cues, 1).map((c) => c.text), ["b"]);
 * ```
 */
export function activeCues(cues: readonly CaptionCue[], t: number): CaptionCue[] {
  return cues.filter((cue) => cue.start <= t && t < cue.end);
}

/**
 * The index of the word of `cue` being spoken at `t`: the last one started; -1 before the
 * first or for a cue without word timestamps.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const cue = { start: 0, end: 2, text: "a b", words: [{ start: 0, text: "a " }, { start: 1, text: "b" }] };
 * assert.equal(spokenWord(cue, 1.5), 1);
 * assert.equal(spokenWord({ start: 0, end: 1, text: "x" }, 0.5), -1);
 * ```
 */
export function spokenWord(cue: CaptionCue, t: number): number {
  return cue.words ? cue.words.filter((w) => w.start <= t).length - 1 : -1;
}

/** The captions of one page. */
export interface CaptionDisplay {
  /** The files loaded so far, with their cues. */
  readonly tracks: CaptionTrack[];
  /** Resolves once every `data-captions` file of the page is loaded; rejects on one that is not. */
  loadAll(): Promise<void>;
  /** Shows the cues active at `t` in each `data-captions` element (untouched when unchanged). */
  show(t: number): Promise<void>;
}

/**
 * Creates the page's captions and starts loading its files once the document is parsed.
 *
 * @example
 * ```ts no_run
 * const captions = createCaptionDisplay();
 * await captions.loadAll();
 * await captions.show(2.5);
 * ```
 */
export function createCaptionDisplay(): CaptionDisplay {
  const captionFiles = new Map<string, Promise<CaptionCue[]>>();
  const tracks: CaptionTrack[] = [];
  const shownCaption = new WeakMap<Element, string>();
  const loadCaptions = (src: string): Promise<CaptionCue[]> => {
    const url = new URL(src, document.baseURI).href;
    let loading = captionFiles.get(url);
    if (!loading) {
      loading = (async () => {
        const response = await fetch(url);
        if (!response.ok) {
          throw new Error(`data-captions="${src}": cannot load it (HTTP ${response.status})`);
        }
        const cues = parseCaptions(await response.text(), src);
        tracks.push({ src, cues });
        return cues;
      })();
      captionFiles.set(url, loading);
    }
    return loading;
  };
  const captionElements = (): Element[] =>
    Array.from(document.querySelectorAll("[data-captions]"))
      .filter((el) => (el.getAttribute("data-captions") ?? "").trim() !== "");
  // Loading starts with the page, so scripts can read __vid.captions once it is in.
  document.addEventListener("DOMContentLoaded", () => {
    for (const el of captionElements()) {
      loadCaptions(el.getAttribute("data-captions")!).catch(() => undefined);
    }
  });
  const show = async (t: number): Promise<void> => {
    for (const el of captionElements()) {
      const cues = await loadCaptions(el.getAttribute("data-captions")!);
      const active = activeCues(cues, t);
      const key = active.map((cue) => `${cue.start}|${cue.end}|${cue.text}|${spokenWord(cue, t)}`)
        .join("\n");
      if (shownCaption.get(el) === key) continue;
      shownCaption.set(el, key);
      const nodes: Node[] = [];
      const addText = (parent: Node[] | Element, text: string): void => {
        text.split("\n").forEach((line, n) => {
          const pieces: Node[] = n > 0 ? [document.createElement("br")] : [];
          if (line !== "") pieces.push(document.createTextNode(line));
          for (const piece of pieces) {
            if (Array.isArray(parent)) parent.push(piece);
            else parent.appendChild(piece);
          }
        });
      };
      active.forEach((cue, c) => {
        if (c > 0) nodes.push(document.createElement("br"));
        if (!cue.words) {
          addText(nodes, cue.text);
          return;
        }
        const current = spokenWord(cue, t);
        cue.words.forEach((w, n) => {
          const span = document.createElement("span");
          span.className = "vid-caption-word" +
            (n === current
              ? " vid-caption-word-active"
              : n < current
              ? " vid-caption-word-spoken"
              : "");
          addText(span, w.text);
          nodes.push(span);
        });
      });
      el.replaceChildren(...nodes);
    }
  };
  return {
    tracks,
    loadAll: async (): Promise<void> => {
      await Promise.all(
        captionElements().map((el) => loadCaptions(el.getAttribute("data-captions")!)),
      );
    },
    show,
  };
}
