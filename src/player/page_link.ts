/**
 * The player's side of its page bridge (`src/runtime/player_bridge.ts`): requests posted to
 * the composition's iframe, each answered by the page or failed after a deadline (a page
 * without vid's runtime never answers: the message then says how to serve it).
 *
 * @module
 */

import {
  PLAYER_PROTOCOL,
  type PlayerAnswer,
  type PlayerHello,
  type PlayerRequest,
} from "../runtime/player_bridge.ts";
import type { PageErrorRecord } from "../runtime/page_runtime.ts";
import { VidError } from "../errors.ts";

/** How long a page may take to answer a request. */
export const PAGE_ANSWER_MS = 30000;

/**
 * A request the page refused or did not answer; `record` is what the page threw, if it did.
 * `field` is `src`: the composition the element names is at fault.
 */
export class PlayerPageError extends VidError {
  /** Always `"PlayerPageError"`. */
  override name = "PlayerPageError";
  /** What the page threw first, with where. */
  readonly record: PageErrorRecord | null;

  /** Creates the error with the page's message and record. */
  constructor(message: string, record: PageErrorRecord | null = null) {
    super(message, { field: "src" });
    this.record = record;
  }
}

/** Why a page did not answer: what to allow or use, for a page `fetched` or loaded by URL. */
function silentPage(url: string, fetched: boolean): string {
  const waited = `${url} did not answer within ${PAGE_ANSWER_MS / 1000} s`;
  return fetched ? `${waited}: its scripts did not start vid's page runtime` : `${waited}: ` +
    `the player could not read it from this page's origin (its host sends no ` +
    `Access-Control-Allow-Origin) and its host did not put vid's page runtime into it; allow ` +
    `the read (docs/player.md, CORS) or serve the composition with vid preview`;
}

/** Requests to one composition page. */
export interface PageLink {
  /** The page's description and media, once its document has loaded. */
  hello(): Promise<PlayerHello>;
  /** Draws `frame`; `paint` for a paused frame (see `drawFrame`). */
  draw(frame: number, paint: boolean): Promise<void>;
  /** Stops listening; pending requests fail. */
  close(): void;
}

/**
 * Links to the page in `iframe`, served from `origin` (`"*"` for an opaque one); a page
 * `fetchedFrom` a URL (loaded as `srcdoc`) is named by that URL in messages.
 *
 * @example
 * ```ts no_run
 * const iframe = document.querySelector("iframe")!;
 * const link = linkPage(iframe, "http://127.0.0.1:4173");
 * const { composition } = await link.hello();
 * await link.draw(60, true);
 * ```
 */
export function linkPage(
  iframe: HTMLIFrameElement,
  origin: string,
  fetchedFrom?: string,
): PageLink {
  let nextId = 0;
  const pending = new Map<number, {
    resolve: (answer: PlayerAnswer) => void;
    reject: (error: Error) => void;
    timer: ReturnType<typeof setTimeout>;
  }>();
  const listener = (event: MessageEvent): void => {
    const answer = event.data as PlayerAnswer | null;
    if (event.source !== iframe.contentWindow || answer?.protocol !== PLAYER_PROTOCOL) return;
    const waiting = pending.get(answer.id);
    if (!waiting) return;
    pending.delete(answer.id);
    clearTimeout(waiting.timer);
    waiting.resolve(answer);
  };
  addEventListener("message", listener);

  const request = async (
    body: { op: "hello" } | { op: "draw"; frame: number; paint: boolean },
  ): Promise<PlayerAnswer & { ok: true }> => {
    const id = ++nextId;
    const answer = await new Promise<PlayerAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new PlayerPageError(silentPage(fetchedFrom ?? iframe.src, !!fetchedFrom)));
      }, PAGE_ANSWER_MS);
      pending.set(id, { resolve, reject, timer });
      const message = { protocol: PLAYER_PROTOCOL, id, ...body } as PlayerRequest;
      iframe.contentWindow?.postMessage(message, origin);
    });
    if (!answer.ok) throw new PlayerPageError(answer.message, answer.record);
    return answer;
  };

  return {
    async hello() {
      const answer = await request({ op: "hello" });
      return answer.hello!;
    },
    async draw(frame, paint) {
      await request({ op: "draw", frame, paint });
    },
    close() {
      removeEventListener("message", listener);
      for (const { reject, timer } of pending.values()) {
        clearTimeout(timer);
        reject(new PlayerPageError("the composition page was replaced"));
      }
      pending.clear();
    },
  };
}
