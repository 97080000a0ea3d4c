/**
 * The page side of `<vid-player>`: the player's composition page runs in a sandboxed
 * iframe of another origin, so the player cannot call `window.__vid` itself; it posts
 * requests and this bridge, part of the page runtime, answers them. A request draws a frame
 * with the runtime's own `drawFrame` (seek as capture does, then settle the videos), so the
 * player's frames are the render's. The bridge answers only its parent window and only
 * messages tagged {@linkcode PLAYER_PROTOCOL}; a top-level page (a render) has no parent and
 * installs nothing.
 *
 * What the page is (size, duration, frames, a bad variable value in vid check's words) the
 * server that injected the runtime wrote on the runtime's `<script data-vid-runtime>` element
 * (`data-vid-composition`, `data-vid-problem`): the bridge reads it, it does not work it out.
 *
 * @module
 */

import { drawFrame, type FramePageApi } from "./frame_drawing.ts";
import type { MediaDescriptor, PageErrorRecord } from "./page_runtime.ts";

/** The tag every message of the player's protocol carries. */
export const PLAYER_PROTOCOL = "vid-player/1";

/** What the server that injected the runtime says of the composition. */
export interface PlayerComposition {
  id: string;
  width: number;
  height: number;
  /** Seconds. */
  duration: number;
  fps: number;
  frames: number;
}

/** A request of the player. */
export type PlayerRequest =
  | { protocol: typeof PLAYER_PROTOCOL; id: number; op: "hello" }
  | { protocol: typeof PLAYER_PROTOCOL; id: number; op: "draw"; frame: number; paint: boolean };

/** The page's answer to `hello`. */
export interface PlayerHello {
  composition: PlayerComposition | null;
  /** A bad variable value, in vid check's words. */
  problem: string | null;
  /** The page's `<audio>` and `<video>` (before the first seek mutes them). */
  media: MediaDescriptor[];
}

/** The answer to a request. */
export type PlayerAnswer =
  | { protocol: typeof PLAYER_PROTOCOL; id: number; ok: true; hello?: PlayerHello }
  | {
    protocol: typeof PLAYER_PROTOCOL;
    id: number;
    ok: false;
    message: string;
    /** What the page threw first, with where. */
    record: PageErrorRecord | null;
  };

/** The runtime's API as the bridge uses it. */
export interface BridgedApi extends FramePageApi {
  media(): MediaDescriptor[];
  errors(): PageErrorRecord[];
}

/** Reads the injecting server's description from the runtime's element. */
function described(): Omit<PlayerHello, "media"> {
  const element = document.querySelector<HTMLScriptElement>("script[data-vid-runtime]");
  let composition: PlayerComposition | null = null;
  try {
    const raw = element?.dataset.vidComposition;
    if (raw) composition = JSON.parse(raw) as PlayerComposition;
  } catch {
    composition = null;
  }
  return { composition, problem: element?.dataset.vidProblem ?? null };
}

async function answer(api: BridgedApi, request: PlayerRequest): Promise<PlayerAnswer> {
  const base = { protocol: PLAYER_PROTOCOL, id: request.id } as const;
  try {
    if (request.op === "hello") {
      const media = api.media();
      // The player plays the sound itself, aligned with its clock: the page stays silent.
      for (const el of Array.from(document.querySelectorAll("audio, video"))) {
        const m = el as HTMLMediaElement;
        m.autoplay = false;
        m.muted = true;
        m.pause();
      }
      return { ...base, ok: true, hello: { ...described(), media } };
    }
    await drawFrame(api, request.frame, request.paint);
    return { ...base, ok: true };
  } catch (error) {
    return {
      ...base,
      ok: false,
      message: error instanceof Error ? error.message : String(error),
      record: api.errors()[0] ?? null,
    };
  }
}

/**
 * Answers the parent window's player requests with `api`; nothing in a top-level page.
 *
 * @example
 * ```ts no_run
 * const api = (globalThis as unknown as { __vid: BridgedApi }).__vid;
 * listenForPlayer(api);
 * ```
 */
export function listenForPlayer(api: BridgedApi): void {
  if (globalThis.parent === (globalThis as unknown as Window)) return;
  addEventListener("message", (event: MessageEvent) => {
    const request = event.data as PlayerRequest | null;
    if (event.source !== globalThis.parent || request?.protocol !== PLAYER_PROTOCOL) return;
    const reply = (message: PlayerAnswer): void => globalThis.parent.postMessage(message, "*");
    // The first frame needs the document's own scripts: hello waits for the load.
    if (document.readyState !== "complete" && request.op === "hello") {
      addEventListener("load", () => void answer(api, request).then(reply), { once: true });
      return;
    }
    void answer(api, request).then(reply);
  });
}
