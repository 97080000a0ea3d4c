/**
 * Unit tests of the audio automation attributes (src/render/audio_automation.ts): what
 * `data-volume`, `data-fade-in`/`-out` and `data-duck` parse to, the errors that name the
 * element, the attribute and the keyframe at fault, how long an element plays, and the duck
 * weight's ramps around voices (merged when voices are closer than a ramp apart).
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  AudioAttributeError,
  checkAudioAutomation,
  DUCK_ATTACK,
  DUCK_RELEASE,
  duckWeight,
  gainExpression,
  parseAudioAutomation,
  parseVolume,
  playedLength,
} from "../../src/render/audio_automation.ts";
import { VidError } from "../../src/errors.ts";

const MUSIC = '<audio id="music">';

describe("data-volume", () => {
  it("a plain gain, or keyframes with steps allowed", () => {
    assert.equal(parseVolume(" 0.5 ", MUSIC), 0.5);
    assert.equal(parseVolume("0", MUSIC), 0);
    assert.deepEqual(parseVolume("0:0.2, 2:1,7:1 , 8:0", MUSIC), [
      { time: 0, gain: 0.2 },
      { time: 2, gain: 1 },
      { time: 7, gain: 1 },
      { time: 8, gain: 0 },
    ]);
    assert.deepEqual(parseVolume("1:1, 1:0", MUSIC), [{ time: 1, gain: 1 }, { time: 1, gain: 0 }]);
  });

  it("refuses what does not parse, naming the element, the keyframe and the fix", () => {
    const cases: [string, RegExp][] = [
      ["loud", /<audio id="music"> data-volume: "loud" is not a gain of 0 or more; write a gain/],
      ["-1", /"-1" is not a gain of 0 or more/],
      ["0:1, 2", /keyframe 2 "2" is not time:gain/],
      ["0:1, 2:x", /keyframe 2 "2:x" is not time:gain/],
      ["0:1, -1:0", /keyframe 2 "-1:0" is not time:gain/],
      ["0:1, 3:0, 2:1", /keyframe 3 "2:1" goes back in time \(after 3 s\)/],
    ];
    for (const [text, message] of cases) {
      assert.throws(() => parseVolume(text, MUSIC), (error: unknown) => {
        assert.ok(error instanceof AudioAttributeError && error instanceof VidError);
        assert.equal(error.field, "data-volume");
        assert.equal(error.element, MUSIC);
        assert.equal(error.exitCode, 1);
        assert.match(error.message, message);
        return true;
      }, text);
    }
  });
});

describe("fades and ducking", () => {
  it("parses fades and the duck gain; absent attributes are no automation", () => {
    assert.deepEqual(parseAudioAutomation({ element: MUSIC, volume: 0.5 }), {
      volume: 0.5,
      fadeIn: 0,
      fadeOut: 0,
      voice: false,
    });
    assert.deepEqual(
      parseAudioAutomation({
        element: MUSIC,
        volume: 1,
        audio: { volume: "0.8", fadeIn: "1", fadeOut: "0.25", duck: "0", voice: true },
      }),
      { volume: 0.8, fadeIn: 1, fadeOut: 0.25, duck: 0, voice: true },
    );
  });

  it("refuses a fade that is no number, a duck outside 0-1, a fade longer than the element", () => {
    assert.throws(
      () => parseAudioAutomation({ element: MUSIC, volume: 1, audio: { fadeIn: "1s" } }),
      /data-fade-in: "1s" is not a number of seconds; write e.g. data-fade-in="0.5"/,
    );
    for (const duck of ["-0.1", "1.5", "half"]) {
      assert.throws(
        () => parseAudioAutomation({ element: MUSIC, volume: 1, audio: { duck } }),
        { field: "data-duck", message: new RegExp(`"${duck}" is not a gain from 0 to 1`) },
      );
    }
    const automation = parseAudioAutomation({
      element: MUSIC,
      volume: 1,
      audio: { fadeIn: "2" },
    });
    checkAudioAutomation(automation, 2, MUSIC);
    assert.throws(
      () => checkAudioAutomation(automation, 1.5, MUSIC),
      /data-fade-in: the fade \(2 s\) is longer than the element plays \(1.5 s\)/,
    );
  });

  it("an element plays for data-duration, else the rest of its source at its rate, else to the end", () => {
    const base = { start: 1, duration: null, mediaStart: 0.5, playbackRate: 2, loop: false };
    assert.equal(playedLength({ ...base, duration: 3 }, 10, 20), 3);
    assert.equal(playedLength(base, 4.5, 20), 2);
    assert.equal(playedLength({ ...base, loop: true }, 4.5, 20), 19);
  });

  it("the duck weight ramps to the voice's start and releases after its end; close voices merge", () => {
    assert.deepEqual(duckWeight([]), []);
    const weight = duckWeight([{ start: 3, end: 4 }, { start: 1, end: 2 }, {
      start: 2 + DUCK_RELEASE,
      end: 2.5,
    }]);
    assert.deepEqual(weight, [
      { time: 1 - DUCK_ATTACK, gain: 0 },
      { time: 1, gain: 1 },
      { time: 2.5, gain: 1 },
      { time: 2.5 + DUCK_RELEASE, gain: 0 },
      { time: +(3 - DUCK_ATTACK).toFixed(6), gain: 0 },
      { time: 3, gain: 1 },
      { time: 4, gain: 1 },
      { time: 4 + DUCK_RELEASE, gain: 0 },
    ]);
  });

  it("a constant gain needs no curve; a curve starts at the sub-range's offset", () => {
    const plain = parseAudioAutomation({ element: MUSIC, volume: 0.3 });
    assert.equal(gainExpression(plain, { length: 5, skip: 0 }), undefined);
    const ducked = parseAudioAutomation({ element: MUSIC, volume: 1, audio: { duck: "0.5" } });
    // Ducked with no voice playing: nothing to do.
    assert.equal(gainExpression(ducked, { length: 5, skip: 0, duck: [] }), undefined);
    const faded = parseAudioAutomation({
      element: MUSIC,
      volume: 1,
      audio: { volume: "0.5", fadeOut: "1" },
    });
    assert.equal(
      gainExpression(faded, { length: 4, skip: 1.5 }),
      "(0.5*max(0,min(1,(4-(t+1.5))/1)))",
    );
  });
});
