/**
 * The studio's and the player's sound: the stage page's media are muted by the runtime, so
 * the host page plays the composition's sounding clips from its own `<audio>` elements
 * ({@linkcode createSoundPlayers}), aligned with the playhead while playing and silent while
 * paused or scrubbing. The studio wires its mute button and volume slider to them
 * ({@linkcode createStudioSound}); `<vid-player>` its `muted` attribute and controls. Where a
 * clip plays at a time is a pure function, unit-tested.
 *
 * @module
 */

import type { StudioElements } from "./dom.ts";
import type { MediaDescriptor as MediaClip } from "../../runtime/page_runtime.ts";

/** A host-side player of one of the live page's sounding clips. */
interface Sound {
  clip: MediaClip;
  el: HTMLAudioElement;
}

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

/** What the players read from their host (the studio or the player). */
export interface PlayerHost {
  /** The host is playing. */
  playing(): boolean;
  /** Seconds on the composition timeline that the playhead is at right now. */
  playheadSeconds(): number;
  /** Timeline seconds per real second while playing (the player's `playback-rate`); 1 without. */
  rate?(): number;
}

/**
 * The `playbackRate` an `<audio>` plays `clip` at while its host plays at `hostRate`, or
 * null where the browser plays no sound (outside 1/16 to 16 times, as Chromium allows).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(audioRate(1.5, 2), 3);
 * assert.equal(audioRate(1, 32), null);
 * ```
 */
export function audioRate(clipRate: number, hostRate: number): number | null {
  const rate = clipRate * hostRate;
  return rate >= 0.0625 && rate <= 16 ? rate : null;
}

/** `<audio>` players of a live page's sounding clips, aligned with a host's playhead. */
export interface SoundPlayers {
  /** Players for the live page's sounding media (silent ones are left out). */
  update(media: readonly MediaClip[]): void;
  /** Sets mute and the host's volume (0-1) on every player. */
  setVolume(muted: boolean, volume: number): void;
  /**
   * Aligns every player with the playhead: playing where its clip covers the playhead
   * (re-seeked when it drifted more than 80 ms, or always with `force`), paused elsewhere
   * or when not playing.
   */
  sync(force?: boolean): void;
  /** Pauses every player. */
  pause(): void;
  /** The duration of a source a player has loaded (NaN until it knows). */
  sourceDuration(src: string): number | undefined;
}

/**
 * Creates the players of a host in `box` (an element of its page that holds them).
 *
 * @example
 * ```ts no_run
 * const players = createSoundPlayers(document.body, {
 *   playing: () => true,
 *   playheadSeconds: () => performance.now() / 1000,
 * });
 * players.setVolume(false, 1);
 * ```
 */
export function createSoundPlayers(box: HTMLElement, host: PlayerHost): SoundPlayers {
  let muted = false;
  let volume = 1;
  let sounds: Sound[] = [];
  let soundKey = "";

  const applyVolume = (): void => {
    for (const { clip, el } of sounds) {
      el.muted = muted;
      el.volume = playerVolume(clip.volume, volume);
    }
  };

  const sync = (force = false): void => {
    const t = host.playheadSeconds();
    for (const { clip, el } of sounds) {
      const mediaTime = soundPosition(clip, t, el.duration, host.playing());
      const rate = audioRate(clip.playbackRate, host.rate?.() ?? 1);
      if (mediaTime === null || rate === null) {
        if (!el.paused) el.pause();
        continue;
      }
      el.playbackRate = rate;
      if (force || el.paused || Math.abs(el.currentTime - mediaTime) > 0.08) {
        el.currentTime = mediaTime;
      }
      if (el.paused) el.play().catch(() => {/* the browser wants a gesture first */});
    }
  };

  return {
    update(media) {
      const clips = soundingClips(media);
      const key = JSON.stringify(clips);
      if (key === soundKey) return;
      soundKey = key;
      for (const sound of sounds) {
        sound.el.pause();
        sound.el.remove();
      }
      sounds = clips.map((clip) => {
        const el = document.createElement("audio");
        el.preload = "auto";
        el.src = clip.src;
        el.loop = clip.loop;
        el.dataset.clip = clip.src;
        box.append(el);
        return { clip, el };
      });
      applyVolume();
      if (host.playing()) sync(true);
    },
    setVolume(on, level) {
      muted = on;
      volume = level;
      applyVolume();
    },
    sync,
    pause: () => {
      for (const { el } of sounds) if (!el.paused) el.pause();
    },
    sourceDuration: (src) => sounds.find((s) => s.clip.src === src)?.el.duration,
  };
}

/** The sound controls' elements (`studio_page.ts`). */
export type SoundElements = Pick<StudioElements, "muteButton" | "volumeInput">;

/** What the sound reads from the studio. */
export interface SoundHost extends PlayerHost {
  /** Mute or volume changed by the user: the studio saves them in its URL. */
  changed(): void;
}

/** The studio's players and its mute and volume. */
export interface StudioSound extends Omit<SoundPlayers, "setVolume"> {
  /** Sound off. */
  readonly muted: boolean;
  /** The studio's volume, 0-1. */
  readonly volume: number;
  /** Applies mute and volume to the players and the controls. */
  applyVolume(): void;
}

/**
 * Creates the studio's players in `box` (the page's `#sounds`) and wires the mute button
 * and the volume slider, starting `muted` at `volume`.
 *
 * @example
 * ```ts no_run
 * import { byId, studioElements } from "./dom.ts";
 *
 * const sound = createStudioSound(studioElements(), byId("sounds"), {
 *   playing: () => false,
 *   playheadSeconds: () => 0,
 *   changed: () => {},
 * }, { muted: false, volume: 1 });
 * sound.applyVolume();
 * ```
 */
export function createStudioSound(
  elements: SoundElements,
  box: HTMLElement,
  host: SoundHost,
  initial: { muted: boolean; volume: number },
): StudioSound {
  const { muteButton, volumeInput } = elements;
  const players = createSoundPlayers(box, host);
  let muted = initial.muted;
  let volume = initial.volume;

  const applyVolume = (): void => {
    players.setVolume(muted, volume);
    muteButton.textContent = muted ? "Muted" : "Sound on";
    muteButton.setAttribute("aria-pressed", String(muted));
    volumeInput.value = String(volume);
  };

  muteButton.addEventListener("click", () => {
    muted = !muted;
    applyVolume();
    host.changed();
  });
  volumeInput.addEventListener("input", () => {
    volume = Math.max(0, Math.min(1, Number(volumeInput.value)));
    if (volume > 0 && muted) muted = false;
    applyVolume();
    host.changed();
  });

  return {
    get muted() {
      return muted;
    },
    get volume() {
      return volume;
    },
    update: players.update,
    applyVolume,
    sync: players.sync,
    pause: players.pause,
    sourceDuration: players.sourceDuration,
  };
}
