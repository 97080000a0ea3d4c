/**
 * The studio's sound: the stage page's media are muted by the runtime, so the studio plays
 * the composition's sounding clips from its own `<audio>` elements, aligned with the
 * playhead while playing and silent while paused or scrubbing.
 *
 * @module
 */

import type { MediaClip } from "./types.ts";

/**
 * Where in its source `clip` plays at composition time `t` (seconds), or null when it is
 * silent then: not playing, outside its window, or past the end of a source of `length`
 * seconds (when known) that does not loop.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const clip = { start: 1, mediaStart: 2, duration: 3, playbackRate: 1, loop: false };
 * assert.equal(soundPosition(clip, 2.5, 10, true), 3.5);
 * assert.equal(soundPosition(clip, 4.5, 10, true), null); // its window is over
 * assert.equal(soundPosition(clip, 2.5, 10, false), null); // paused
 * assert.equal(soundPosition({ ...clip, duration: null, loop: true }, 9, 4, true), 2);
 * ```
 */
export function soundPosition(
  clip: Pick<MediaClip, "start" | "mediaStart" | "duration" | "playbackRate" | "loop">,
  t: number,
  length: number,
  playing: boolean,
): number | null {
  const local = t - clip.start;
  const inside = playing && local >= 0 && (clip.duration === null || local < clip.duration);
  if (!inside) return null;
  let mediaTime = clip.mediaStart + local * clip.playbackRate;
  if (Number.isFinite(length) && length > 0) {
    if (clip.loop && mediaTime >= length) {
      const span = length - clip.mediaStart;
      mediaTime = span > 0 ? clip.mediaStart + ((mediaTime - clip.mediaStart) % span) : 0;
    } else if (mediaTime >= length) {
      return null;
    }
  }
  return mediaTime;
}

/**
 * The clips the studio plays: those neither muted nor silent.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const clip = { kind: "audio" as const, src: "a.mp3", start: 0, mediaStart: 0, duration: null,
 *   volume: 1, muted: false, loop: false, playbackRate: 1 };
 * assert.equal(soundingClips([clip, { ...clip, muted: true }, { ...clip, volume: 0 }]).length, 1);
 * ```
 */
export function soundingClips(media: readonly MediaClip[]): MediaClip[] {
  return media.filter((c) => !c.muted && c.volume > 0);
}

/**
 * A player's volume: the clip's gain times the studio's volume, within 0-1.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(playerVolume(2, 0.8), 1);
 * assert.equal(playerVolume(0.5, 0.5), 0.25);
 * ```
 */
export function playerVolume(clipVolume: number, studioVolume: number): number {
  return Math.max(0, Math.min(1, clipVolume * studioVolume));
}
