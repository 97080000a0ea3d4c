/**
 * Audio automation of `<audio>` and `<video>` elements: fades (`data-fade-in`,
 * `data-fade-out`), volume keyframes (`data-volume="0:0.2, 2:1, 7:1, 8:0"`) and ducking
 * (`data-duck` on music, lowered while any `data-voice` element plays). The attributes are
 * parsed and checked here, with no browser or ffmpeg, so a bad one is refused before a
 * frame renders (and `vid check` can say so); the mix (`mixAudio` in `media.ts`) turns
 * each element's automation into one gain curve evaluated by ffmpeg at every sample
 * (`aevalsrc`, multiplied in with `amultiply`), so a fade or a duck lands on the sample, not
 * on the next audio frame as `volume`'s per-frame evaluation would.
 *
 * Times of keyframes are seconds from the element's own start (`data-start`), so moving an
 * element moves its automation with it.
 *
 * @module
 */

import { EXIT_FAILED, VidError } from "../errors.ts";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";

/** Seconds the music takes to reach its duck gain; the ramp ends as the voice starts. */
export const DUCK_ATTACK = 0.1;
/** Seconds the music takes to come back to full gain after the voice ends. */
export const DUCK_RELEASE = 0.25;

/** An audio attribute of a media element does not parse or cannot apply. */
export class AudioAttributeError extends VidError {
  /** Always `"AudioAttributeError"`. */
  override name = "AudioAttributeError";
  /** The attribute at fault, e.g. `data-fade-in`. */
  declare readonly field: string;
  /** The element as the message names it, e.g. `<audio id="music">`. */
  readonly element: string;

  /**
   * Creates the error.
   *
   * @param element The element, e.g. `<audio id="music">`.
   * @param attribute The attribute at fault, e.g. `data-volume`.
   * @param detail What is wrong and how to fix it.
   */
  constructor(element: string, attribute: string, detail: string) {
    super(`${element} ${attribute}: ${detail}`, {
      field: attribute,
      detail,
      exitCode: EXIT_FAILED,
    });
    this.element = element;
  }
}

/** One point of a gain curve: at `time` seconds the gain is `gain` (linear between points). */
export interface GainPoint {
  /** Seconds (from the element's start, for keyframes). */
  time: number;
  /** Linear gain, 0 or more. */
  gain: number;
}

/** What an element's audio attributes say, parsed. */
export interface AudioAutomation {
  /** `data-volume`: one gain, or keyframes in time order (seconds from the element's start). */
  volume: number | GainPoint[];
  /** `data-fade-in`, seconds; 0 without. */
  fadeIn: number;
  /** `data-fade-out`, seconds; 0 without. */
  fadeOut: number;
  /** `data-duck`: the gain under a voice, 0-1; undefined when the element is not ducked. */
  duck?: number;
  /** `data-voice`: its playing ducks the `data-duck` elements. */
  voice: boolean;
}

const VOLUME_FIX = 'write a gain (data-volume="0.5") or time:gain keyframes in seconds from ' +
  'the element\'s start (data-volume="0:0.2, 2:1, 7:1, 8:0")';

/** A finite number written plainly (`0.5`, `2`, `.25`); NaN for anything else. */
function plainNumber(text: string): number {
  const trimmed = text.trim();
  return /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(trimmed) ? Number(trimmed) : Number.NaN;
}

/**
 * Parses `data-volume`: a gain (`0.5`) or keyframes (`0:0.2, 2:1, 7:1, 8:0`: time:gain
 * pairs, seconds from the element's start, times never going back; two keyframes at one
 * time make a step). Throws {@linkcode AudioAttributeError} naming the keyframe at fault.
 *
 * @param text The attribute's text.
 * @param element The element, for the message.
 * @returns The gain, or the keyframes in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(parseVolume("0.5", "<audio>"), 0.5);
 * assert.deepEqual(parseVolume("0:0.2, 2:1", "<audio>"), [
 *   { time: 0, gain: 0.2 },
 *   { time: 2, gain: 1 },
 * ]);
 * assert.throws(() => parseVolume("2:1, 1:0", "<audio>"), /goes back in time/);
 * ```
 */
export function parseVolume(text: string, element: string): number | GainPoint[] {
  const fail = (detail: string): never => {
    throw new AudioAttributeError(element, "data-volume", detail);
  };
  if (!text.includes(":")) {
    const gain = plainNumber(text);
    if (!(gain >= 0)) fail(`"${text}" is not a gain of 0 or more; ${VOLUME_FIX}`);
    return gain;
  }
  const points: GainPoint[] = [];
  for (const [index, part] of text.split(",").entries()) {
    const pieces = part.split(":");
    const time = pieces.length === 2 ? plainNumber(pieces[0]) : Number.NaN;
    const gain = pieces.length === 2 ? plainNumber(pieces[1]) : Number.NaN;
    if (!(time >= 0) || !(gain >= 0)) {
      fail(
        `keyframe ${index + 1} "${part.trim()}" is not time:gain with seconds and a gain of ` +
          `0 or more; ${VOLUME_FIX}`,
      );
    }
    const previous = points.at(-1);
    if (previous && time < previous.time) {
      fail(
        `keyframe ${index + 1} "${part.trim()}" goes back in time (after ${previous.time} s); ` +
          "list keyframes in time order",
      );
    }
    points.push({ time, gain });
  }
  return points;
}

/** Parses a fade attribute: seconds, 0 or more. */
function parseFade(text: string, attribute: string, element: string): number {
  const seconds = plainNumber(text);
  if (!(seconds >= 0)) {
    throw new AudioAttributeError(
      element,
      attribute,
      `"${text}" is not a number of seconds; write e.g. ${attribute}="0.5"`,
    );
  }
  return seconds;
}

/**
 * Parses and checks the audio attributes of one element as the page runtime reported them
 * (`MediaDescriptor.audio`). Throws {@linkcode AudioAttributeError} for one that does not
 * parse. Whether a fade fits the element is {@linkcode checkAudioAutomation}'s part, as it
 * needs the source's length.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const automation = parseAudioAutomation({
 *   element: '<audio id="music">',
 *   volume: 1,
 *   audio: { fadeIn: "0.5", duck: "0.25" },
 * });
 * assert.deepEqual(automation, { volume: 1, fadeIn: 0.5, fadeOut: 0, duck: 0.25, voice: false });
 * assert.throws(
 *   () => parseAudioAutomation({ element: "<audio>", volume: 1, audio: { duck: "2" } }),
 *   { field: "data-duck" },
 * );
 * ```
 */
export function parseAudioAutomation(
  item: Pick<MediaDescriptor, "volume" | "audio" | "element">,
): AudioAutomation {
  const element = item.element ?? "<audio>";
  const raw = item.audio ?? {};
  const automation: AudioAutomation = {
    volume: raw.volume === undefined ? item.volume : parseVolume(raw.volume, element),
    fadeIn: raw.fadeIn === undefined ? 0 : parseFade(raw.fadeIn, "data-fade-in", element),
    fadeOut: raw.fadeOut === undefined ? 0 : parseFade(raw.fadeOut, "data-fade-out", element),
    voice: raw.voice === true,
  };
  if (raw.duck !== undefined) {
    const duck = plainNumber(raw.duck);
    if (!(duck >= 0 && duck <= 1)) {
      throw new AudioAttributeError(
        element,
        "data-duck",
        `"${raw.duck}" is not a gain from 0 to 1; write the music's gain under a voice, ` +
          'e.g. data-duck="0.25" (12 dB lower)',
      );
    }
    automation.duck = duck;
  }
  return automation;
}

/**
 * Checks that the fades of an element fit the time it plays (`length` seconds, Infinity
 * when it plays to the end of the composition): a fade longer than that is an error, not a
 * fade that never completes.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const automation = parseAudioAutomation({ element: "<audio>", volume: 1, audio: { fadeOut: "3" } });
 * checkAudioAutomation(automation, 4, "<audio>");
 * assert.throws(() => checkAudioAutomation(automation, 2, "<audio>"), /longer than/);
 * ```
 */
export function checkAudioAutomation(
  automation: AudioAutomation,
  length: number,
  element: string,
): void {
  for (
    const [attribute, seconds] of [
      ["data-fade-in", automation.fadeIn],
      ["data-fade-out", automation.fadeOut],
    ] as const
  ) {
    if (seconds > length + 1e-9) {
      throw new AudioAttributeError(
        element,
        attribute,
        `the fade (${seconds} s) is longer than the element plays (${+length.toFixed(
          3,
        )} s); shorten the fade or lengthen data-duration`,
      );
    }
  }
}

/**
 * Seconds an element plays on the timeline: `data-duration`, else the rest of its source
 * at its speed, else (looped, or a source of unknown length) until `timelineEnd`.
 */
export function playedLength(
  item: Pick<MediaDescriptor, "start" | "duration" | "mediaStart" | "playbackRate" | "loop">,
  sourceDuration: number,
  timelineEnd: number,
): number {
  if (item.duration !== null) return item.duration;
  if (item.loop || !(sourceDuration > 0)) return Math.max(0, timelineEnd - item.start);
  return Math.max(0, (sourceDuration - item.mediaStart) / (item.playbackRate || 1));
}

/** A span of the timeline, seconds. */
export interface Span {
  start: number;
  end: number;
}

/**
 * The duck weight over the timeline (0: full gain, 1: ducked) for voices playing in
 * `voices`: it ramps up over {@linkcode DUCK_ATTACK} to reach 1 as a voice starts and
 * back down over {@linkcode DUCK_RELEASE} after it ends. Voices closer than a ramp apart
 * stay ducked between them instead of dipping back up.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(duckWeight([{ start: 1, end: 2 }]), [
 *   { time: 0.9, gain: 0 },
 *   { time: 1, gain: 1 },
 *   { time: 2, gain: 1 },
 *   { time: 2.25, gain: 0 },
 * ]);
 * ```
 */
export function duckWeight(voices: readonly Span[]): GainPoint[] {
  const merged: Span[] = [];
  for (const span of [...voices].sort((a, b) => a.start - b.start)) {
    const last = merged.at(-1);
    if (last && span.start - DUCK_ATTACK <= last.end + DUCK_RELEASE) {
      last.end = Math.max(last.end, span.end);
    } else {
      merged.push({ ...span });
    }
  }
  return merged.flatMap((span) => [
    { time: +(span.start - DUCK_ATTACK).toFixed(6), gain: 0 },
    { time: span.start, gain: 1 },
    { time: span.end, gain: 1 },
    { time: +(span.end + DUCK_RELEASE).toFixed(6), gain: 0 },
  ]);
}

/** A number as ffmpeg's expression parser reads it (no exponent notation). */
function num(value: number): string {
  return String(+value.toFixed(9));
}

/**
 * An ffmpeg expression of the piecewise linear curve through `points`, in the variable
 * `x`: the first gain before the first point, the last after the last.
 */
function piecewise(points: readonly GainPoint[], x: string): string {
  let expression = num(points.at(-1)!.gain);
  for (let i = points.length - 2; i >= 0; i--) {
    const a = points[i];
    const b = points[i + 1];
    if (b.time <= a.time) continue;
    const slope = (b.gain - a.gain) / (b.time - a.time);
    const segment = slope === 0
      ? num(a.gain)
      : `(${num(a.gain)}+${num(slope)}*(${x}-${num(a.time)}))`;
    expression = `if(lt(${x},${num(b.time)}),${segment},${expression})`;
  }
  return `if(lt(${x},${num(points[0].time)}),${num(points[0].gain)},${expression})`;
}

/**
 * The gain curve of an element as an ffmpeg expression of `t`, the time of its mixed
 * stream, which starts `skip` seconds into the element's play (a `--frames` sub-range
 * starting after it). `length` is how long the element plays; `duck` the duck weight over
 * the element's own time (from {@linkcode duckWeight}, shifted to its start). Returns
 * undefined when the gain is one constant, which `volume` applies more cheaply.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const flat = parseAudioAutomation({ element: "<audio>", volume: 0.5 });
 * assert.equal(gainExpression(flat, { length: 2, skip: 0 }), undefined);
 * const faded = parseAudioAutomation({ element: "<audio>", volume: 1, audio: { fadeIn: "1" } });
 * assert.match(gainExpression(faded, { length: 2, skip: 0 })!, /^\(.*\)$/);
 * ```
 */
export function gainExpression(
  automation: AudioAutomation,
  options: { length: number; skip: number; duck?: readonly GainPoint[] },
): string | undefined {
  const x = options.skip > 0 ? `(t+${num(options.skip)})` : "t";
  // Curves over time; a constant gain alone is left to `volume`.
  const curves: string[] = [];
  if (typeof automation.volume !== "number") curves.push(piecewise(automation.volume, x));
  if (automation.fadeIn > 0) curves.push(`min(1,${x}/${num(automation.fadeIn)})`);
  if (automation.fadeOut > 0 && Number.isFinite(options.length)) {
    curves.push(`max(0,min(1,(${num(options.length)}-${x})/${num(automation.fadeOut)}))`);
  }
  const duck = automation.duck;
  if (duck !== undefined && options.duck && options.duck.length > 0) {
    curves.push(`(1-${num(1 - duck)}*${piecewise(options.duck, x)})`);
  }
  if (curves.length === 0) return undefined;
  const factors = typeof automation.volume === "number" && automation.volume !== 1
    ? [num(automation.volume), ...curves]
    : curves;
  return `(${factors.join("*")})`;
}
