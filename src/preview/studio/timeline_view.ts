/**
 * The studio's timeline panel drawn from the live stage page: its media clips, CSS/WAAPI
 * animations and GSAP timelines as rows under a ruler (`timeline.ts` works out the rows),
 * and the playhead over them at the frame on stage.
 *
 * @module
 */

import type { Info, TimelineItem, VidApi } from "./types.ts";
import type { StudioState } from "./studio_state.ts";
import { timelineItems, timelineTracks, timeRuler } from "./timeline.ts";

/** What the live page knows of its timed elements, in composition seconds. */
function liveTimelineItems(
  state: Pick<StudioState, "info" | "live" | "shown">,
  sourceDuration: (src: string) => number | undefined,
): TimelineItem[] {
  const win = state.live?.iframe.contentWindow as
    | (Window & { __vid?: VidApi; __timelines?: unknown })
    | null;
  const doc = state.live?.iframe.contentDocument;
  if (!state.info || !win?.__vid || !doc) return [];
  return timelineItems({
    win,
    doc,
    duration: state.info.duration,
    fps: state.info.fps,
    shown: state.shown,
    media: state.live?.media ?? [],
    sourceDuration,
  });
}

/**
 * Redraws `timeline` (the page's `#timeline`) from the live page: a ruler, a row per track,
 * the playhead at the frame on stage.
 *
 * @example
 * ```ts no_run
 * import { createStudioState } from "./studio_state.ts";
 *
 * const state = createStudioState({ entry: "", frame: 0, muted: false, volume: 1 });
 * drawStudioTimeline(document.getElementById("timeline")!, state, () => undefined);
 * ```
 */
export function drawStudioTimeline(
  timeline: HTMLElement,
  state: Pick<StudioState, "info" | "live" | "shown">,
  sourceDuration: (src: string) => number | undefined,
): void {
  if (!state.info) return;
  const span = state.info.duration || 1;
  const rows = timelineTracks(liveTimelineItems(state, sourceDuration), span);
  const playhead = document.createElement("div");
  playhead.id = "playhead";
  timeline.replaceChildren(
    ...(rows.length > 0 ? [timeRuler(span)] : []),
    ...rows,
    ...(rows.length > 0 ? [playhead] : []),
  );
  moveStudioPlayhead(timeline, state.info, Math.max(0, state.shown));
}

/**
 * Moves the playhead of `timeline` to `frame` of the composition `info` describes.
 *
 * @example
 * ```ts no_run
 * import type { Info } from "./types.ts";
 *
 * moveStudioPlayhead(document.getElementById("timeline")!, { frames: 60 } as Info, 30);
 * ```
 */
export function moveStudioPlayhead(
  timeline: HTMLElement,
  info: Info | undefined,
  frame: number,
): void {
  const playhead = document.getElementById("playhead");
  const track = timeline.querySelector<HTMLElement>(".track");
  if (!playhead || !track || !info) return;
  playhead.style.left = `${track.offsetLeft - 120 + (track.clientWidth * frame) / info.frames}px`;
}
