/**
 * The studio's transport controls beyond the buttons: the typed frame and timecode fields
 * (Enter goes there; a bad one is marked and ignored) and the keyboard (space plays or
 * pauses, m mutes, arrows step a frame or ten with shift, Home and End). What a key or a
 * typed frame means is a pure function, unit-tested.
 *
 * @module
 */

import type { StudioElements } from "./dom.ts";

/** What a key of the studio does. */
export type KeyCommand =
  | { kind: "toggle-play" }
  | { kind: "mute" }
  | { kind: "go"; frame: number };

/**
 * The command of `key` (with shift held: steps of 10 frames) when the playhead wants frame
 * `wanted` of a composition whose last frame is `lastFrame`; undefined for another key. The
 * frame of a step may be out of range: the studio clamps it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(keyCommand("ArrowRight", true, 5, 99), { kind: "go", frame: 15 });
 * assert.deepEqual(keyCommand("End", false, 5, 99), { kind: "go", frame: 99 });
 * assert.deepEqual(keyCommand(" ", false, 5, 99), { kind: "toggle-play" });
 * assert.equal(keyCommand("x", false, 5, 99), undefined);
 * ```
 */
export function keyCommand(
  key: string,
  shift: boolean,
  wanted: number,
  lastFrame: number,
): KeyCommand | undefined {
  const step = shift ? 10 : 1;
  if (key === " ") return { kind: "toggle-play" };
  if (key === "m") return { kind: "mute" };
  if (key === "ArrowRight") return { kind: "go", frame: wanted + step };
  if (key === "ArrowLeft") return { kind: "go", frame: wanted - step };
  if (key === "Home") return { kind: "go", frame: 0 };
  if (key === "End") return { kind: "go", frame: lastFrame };
  return undefined;
}

/**
 * A typed frame number: a whole frame from 0 to `lastFrame`, else undefined.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(parseFrameField(" 12 ", 59), 12);
 * assert.equal(parseFrameField("60", 59), undefined);
 * assert.equal(parseFrameField("1.5", 59), undefined);
 * ```
 */
export function parseFrameField(text: string, lastFrame: number): number | undefined {
  const n = Number(text);
  return text.trim() !== "" && Number.isInteger(n) && n >= 0 && n <= lastFrame ? n : undefined;
}

/** What the transport reads from and asks of the studio. */
export interface TransportHost {
  /** The composition's last frame. */
  lastFrame(): number;
  /** The frame the playhead wants. */
  wanted(): number;
  /** Plays or pauses. */
  setPlaying(on: boolean): void;
  /** The studio is playing. */
  playing(): boolean;
  /** Moves the playhead to `frame` (clamped). */
  go(frame: number): void;
  /** A typed time as a frame (timecode or seconds), undefined when unreadable. */
  parseTime(text: string): number | undefined;
  /** A frame's timecode. */
  timecodeOf(frame: number): string;
  /** Puts the readouts (and the fields not being typed in) back to the frame on stage. */
  showReadouts(): void;
}

const typingIn = (target: EventTarget | null): boolean =>
  (target instanceof HTMLInputElement && target.type !== "range") ||
  target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement;

/**
 * Wires the frame and timecode fields and the keyboard shortcuts (none while typing in a
 * field or while the render dialog is open).
 *
 * @example
 * ```ts no_run
 * import { studioElements } from "./dom.ts";
 *
 * let frame = 0;
 * wireTransport(studioElements(), {
 *   lastFrame: () => 59,
 *   wanted: () => frame,
 *   setPlaying: () => {},
 *   playing: () => false,
 *   go: (f) => frame = f,
 *   parseTime: () => undefined,
 *   timecodeOf: String,
 *   showReadouts: () => {},
 * });
 * ```
 */
export function wireTransport(
  elements: Pick<StudioElements, "frameInput" | "timecodeInput" | "muteButton" | "renderDialog">,
  host: TransportHost,
): void {
  const { frameInput, timecodeInput, muteButton, renderDialog } = elements;
  frameInput.addEventListener("change", () => {
    const n = parseFrameField(frameInput.value, host.lastFrame());
    const ok = n !== undefined;
    frameInput.setAttribute("aria-invalid", String(!ok));
    frameInput.title = ok ? "Go to frame (Enter)" : `a whole frame from 0 to ${host.lastFrame()}`;
    if (!ok) return;
    host.setPlaying(false);
    host.go(n);
  });
  timecodeInput.addEventListener("change", () => {
    const frame = host.parseTime(timecodeInput.value);
    const ok = frame !== undefined && frame <= host.lastFrame();
    timecodeInput.setAttribute("aria-invalid", String(!ok));
    timecodeInput.title = ok
      ? "Go to time: HH:MM:SS:FF timecode, or seconds like 1.5s"
      : `not a time within 00:00:00:00 – ${host.timecodeOf(host.lastFrame())}`;
    if (!ok) return;
    host.setPlaying(false);
    host.go(frame);
  });
  for (const input of [frameInput, timecodeInput]) {
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") input.dispatchEvent(new Event("change"));
    });
    input.addEventListener("blur", host.showReadouts);
  }

  document.addEventListener("keydown", (event) => {
    if (typingIn(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
    if (renderDialog.open) return;
    const command = keyCommand(event.key, event.shiftKey, host.wanted(), host.lastFrame());
    if (!command) return;
    if (command.kind === "toggle-play") host.setPlaying(!host.playing());
    else if (command.kind === "mute") muteButton.click();
    else {
      host.setPlaying(false);
      host.go(command.frame);
    }
    event.preventDefault();
  });
  // A focused button would also "click" on the space key's release.
  document.addEventListener("keyup", (event) => {
    if (event.key === " " && !typingIn(event.target)) event.preventDefault();
  });
}
