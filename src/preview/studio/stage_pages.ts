/**
 * The studio's stage pages: an iframe of the composition at its native size with the
 * runtime the preview server injected, and the frame-exact proxies of its videos prepared
 * (what a render does before capturing) before it is seeked. A page served an older set of
 * proxies than its videos need loads once more with the new set.
 *
 * @module
 */

import type { Info, Live, VidApi } from "./types.ts";
import type { StudioState } from "./studio_state.ts";

/**
 * The URL of a stage page for `info` with `values`: the preview server injects the runtime
 * with these values at this frame rate; `reloads` makes a fresh page of the same values.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import type { Info } from "./types.ts";
 *
 * const info = { entry: "a b.html", fps: 30 } as Info;
 * assert.equal(stagePageUrl(info, 2, { t: 1 }), "/a%20b.html?fps=30&r=2&vars=%7B%22t%22%3A1%7D");
 * ```
 */
export function stagePageUrl(info: Info, reloads: number, values: Record<string, unknown>): string {
  return `/${encodeURI(info.entry)}?fps=${info.fps}&r=${reloads}&vars=${
    encodeURIComponent(JSON.stringify(values))
  }`;
}

/**
 * Loads `url` into a new iframe of `stage` (hidden beneath the live page when `hidden`);
 * resolves once it loaded with its runtime, fails after 30 s.
 *
 * @example
 * ```ts no_run
 * import type { Info } from "./types.ts";
 *
 * const info = { id: "intro", entry: "index.html", width: 320, height: 180, fps: 30 } as Info;
 * const iframe = await loadPage(document.getElementById("stage")!, info, "/index.html", true);
 * ```
 */
export function loadPage(
  stage: HTMLElement,
  current: Info,
  url: string,
  hidden: boolean,
): Promise<HTMLIFrameElement> {
  return new Promise<HTMLIFrameElement>((resolve, reject) => {
    const iframe = document.createElement("iframe");
    iframe.className = hidden ? "composition standby" : "composition";
    iframe.title = `composition ${current.id}`;
    iframe.setAttribute("scrolling", "no");
    iframe.setAttribute("aria-hidden", String(hidden));
    iframe.width = String(current.width);
    iframe.height = String(current.height);
    iframe.style.zIndex = "0";
    const timer = setTimeout(() => {
      iframe.remove();
      reject(new Error(`the composition did not load within 30 s (${url})`));
    }, 30000);
    iframe.addEventListener("load", () => {
      clearTimeout(timer);
      const win = iframe.contentWindow as (Window & { __vid?: VidApi }) | null;
      if (!win?.__vid) {
        iframe.remove();
        reject(new Error("the composition page has no window.__vid (did it load?)"));
        return;
      }
      resolve(iframe);
    }, { once: true });
    iframe.src = url;
    stage.append(iframe);
  });
}

/**
 * Loads a stage page for `state`'s values under `key`, then has the preview server prepare
 * the frame-exact proxies of its videos; the page's own media stay silent (the studio plays
 * the sound).
 *
 * @example
 * ```ts no_run
 * import { createStudioState } from "./studio_state.ts";
 *
 * const state = createStudioState({ entry: "", frame: 0, muted: false, volume: 1 });
 * const live = await loadStagePage(document.getElementById("stage")!, state, "k", false);
 * ```
 */
export async function loadStagePage(
  stage: HTMLElement,
  state: Pick<StudioState, "info" | "reloads" | "values">,
  key: string,
  hidden: boolean,
): Promise<Live> {
  const current = state.info!;
  const url = stagePageUrl(current, state.reloads, state.values);
  for (let attempt = 0;; attempt++) {
    const iframe = await loadPage(stage, current, url, hidden);
    const win = iframe.contentWindow as Window & { __vid: VidApi };
    const all = win.__vid.media();
    // The studio plays the sound itself; a page's autoplay (a hidden standby page's
    // above all) must stay silent until the runtime's first seek takes over.
    for (const el of Array.from(iframe.contentDocument?.querySelectorAll("audio, video") ?? [])) {
      const media = el as HTMLMediaElement;
      media.autoplay = false;
      media.muted = true;
      media.pause();
    }
    const media = all.filter((m) => m.kind === "video");
    if (media.length === 0) return { iframe, key, frame: -1, media: all };
    const served = iframe.contentDocument?.querySelector<HTMLScriptElement>(
      "script[data-vid-runtime]",
    )?.dataset.vidProxies;
    if (!hidden) stage.dataset.state = "preparing";
    let body: { ok: boolean; version?: number; error?: { message: string } };
    try {
      body = await (await fetch("/__preview/media", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ media }),
      })).json();
    } catch (error) {
      iframe.remove();
      throw new Error(`cannot reach vid preview: ${(error as Error).message}`);
    }
    if (!hidden) stage.dataset.state = "seeking";
    if (!body.ok) {
      iframe.remove();
      throw new Error(body.error?.message ?? "the videos cannot be prepared");
    }
    if (String(body.version) === served || attempt >= 2) {
      return { iframe, key, frame: -1, media: all };
    }
    iframe.remove();
  }
}
