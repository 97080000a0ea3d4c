/**
 * The one way a live page is brought to a frame for a viewer (the studio's stage and
 * `<vid-player>`): seek as capture does, wait until its videos show their new frame, and
 * paint the videos' frames into the page while paused (a browser's own picture of a paused
 * video can stay a seek behind: `video_paint.ts`) or let them show their own picture while
 * playing. The studio calls it on its same-origin stage page; the player's page bridge
 * (`player_bridge.ts`) calls it inside the player's sandboxed page.
 *
 * @module
 */

/** The part of a page's `window.__vid` that {@linkcode drawFrame} drives. */
export interface FramePageApi {
  seek(frame: number): Promise<void>;
  untilVideosPresented(maxMs?: number): Promise<number>;
  paintVideoFrames(): Promise<number>;
  clearVideoFrames(): number;
}

/**
 * Waits until the page's videos are presented ('seeked' does not mean the compositor has
 * the new frame), then paints them (`paint`, a paused frame) or clears the paint (playing).
 *
 * @example
 * ```ts no_run
 * const api = (globalThis as unknown as { __vid: FramePageApi }).__vid;
 * await settleFrame(api, true);
 * ```
 */
export async function settleFrame(api: FramePageApi, paint: boolean): Promise<void> {
  await api.untilVideosPresented();
  if (paint) await api.paintVideoFrames();
  else api.clearVideoFrames();
}

/**
 * Seeks the page to `frame` and settles it ({@linkcode settleFrame}).
 *
 * @example
 * ```ts no_run
 * const api = (globalThis as unknown as { __vid: FramePageApi }).__vid;
 * await drawFrame(api, 60, true);
 * ```
 */
export async function drawFrame(api: FramePageApi, frame: number, paint: boolean): Promise<void> {
  await api.seek(frame);
  await settleFrame(api, paint);
}
