/**
 * Unit tests of the playback the studio and `<vid-player>` share
 * (src/preview/studio/playback.ts) and of the studio's state object
 * (src/preview/studio/studio_state.ts): the real-time clock, the clamp, the plan for a frame
 * (seek on or a fresh page) and the stage key. The pages they drive are covered by
 * studio_test.ts and player_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  clampFrame,
  clockFrame,
  clockSeconds,
  framePlan,
  startClock,
} from "../../src/preview/studio/playback.ts";
import {
  compositionTitle,
  createStudioState,
  lastFrame,
  stageKey,
  stageScale,
  studioFrame,
} from "../../src/preview/studio/studio_state.ts";
import { stagePageUrl } from "../../src/preview/studio/stage_pages.ts";
import type { Info } from "../../src/preview/studio/types.ts";

describe("shared playback", () => {
  it("shows each frame for its whole duration at the composition's rate", () => {
    const clock = { fromFrame: 0, startMs: 500 };
    assert.equal(clockFrame(clock, 500, 30), 0);
    assert.equal(clockFrame(clock, 500 + 1000 / 30 - 0.01, 30), 0);
    assert.equal(clockFrame(clock, 500 + 1000 / 30, 30), 1);
    assert.equal(clockFrame({ fromFrame: 12, startMs: 0 }, 1000, 24), 36);
    assert.equal(clockFrame({ fromFrame: 0, startMs: 0 }, 1000, 30000 / 1001), 29);
  });

  it("moves the sound's seconds continuously from the starting frame", () => {
    assert.equal(clockSeconds({ fromFrame: 15, startMs: 100 }, 350, 30), 0.75);
    assert.equal(clockSeconds({ fromFrame: 0, startMs: 0 }, 0, 30), 0);
  });

  it("starts over from frame 0 when play is pressed on the last frame", () => {
    assert.deepEqual(startClock(89, 90, 7), { fromFrame: 0, startMs: 7 });
    assert.deepEqual(startClock(200, 90, 7), { fromFrame: 0, startMs: 7 }, "past the end");
    assert.deepEqual(startClock(40.4, 90, 7), { fromFrame: 40, startMs: 7 });
  });

  it("clamps a frame to the composition, rounded", () => {
    assert.equal(clampFrame(90, 90), 89);
    assert.equal(clampFrame(-1, 90), 0);
    assert.equal(clampFrame(10.5, 90), 11);
    assert.equal(clampFrame(3, 0), 0, "no frames yet: frame 0");
  });

  it("seeks forward on the live page and needs a fresh one to go back or for new values", () => {
    const live = { key: "k", frame: 10 };
    assert.equal(framePlan(live, "k", 10), "none");
    assert.equal(framePlan(live, "k", 11), "seek");
    assert.equal(framePlan(live, "k", 9), "fresh");
    assert.equal(framePlan(live, "other", 10), "fresh");
    assert.equal(framePlan({ key: "k", frame: -1 }, "k", 0), "seek", "a loaded page's first seek");
    assert.equal(framePlan(undefined, "k", 0), "fresh");
  });
});

describe("studio state", () => {
  const info = { frames: 60, fps: 30 } as Info;

  it("opens on the URL's composition and frame with nothing on stage", () => {
    const state = createStudioState({
      entry: "b.html",
      frame: 7,
      values: { t: "x" },
      muted: true,
      volume: 0.5,
    });
    assert.equal(state.entry, "b.html");
    assert.equal(state.wanted, 7);
    assert.deepEqual(state.urlValues, { t: "x" });
    assert.equal(state.shown, -1);
    assert.equal(state.live, undefined);
    assert.equal(state.playing, false);
  });

  it("clamps to the composition's frames once known", () => {
    assert.equal(lastFrame({ info: undefined }), 0);
    assert.equal(lastFrame({ info }), 59);
    assert.equal(studioFrame({ info }, 75), 59);
    assert.equal(studioFrame({ info: undefined }, 75), 0);
  });

  it("keys a stage page by entry, reloads, rate and values", () => {
    const base = { entry: "a.html", reloads: 0, info, values: { t: 1 } };
    assert.equal(stageKey(base), stageKey({ ...base, values: { t: 1 } }));
    assert.notEqual(stageKey(base), stageKey({ ...base, values: { t: 2 } }));
    assert.notEqual(stageKey(base), stageKey({ ...base, reloads: 1 }));
    assert.notEqual(stageKey(base), stageKey({ ...base, info: { ...info, fps: 25 } }));
    assert.notEqual(stageKey(base), stageKey({ ...base, entry: "b.html" }));
  });

  it("titles the composition with its size, aspect ratio, duration, rate and frames", () => {
    const described = {
      id: "promo",
      width: 1080,
      height: 1920,
      aspectRatio: "9:16",
      duration: 1.5,
      fps: 30000 / 1001,
      frames: 45,
    } as Info;
    assert.equal(
      compositionTitle(described),
      "promo · 1080×1920 (9:16) · 1.5 s · 29.97 fps · 45 frames",
    );
  });

  it("fits the stage in its area with a margin, or takes the zoom chosen", () => {
    assert.equal(stageScale(352, 212, 320, 180, "fit"), 1);
    assert.equal(stageScale(192, 500, 320, 180, "fit"), 0.5, "the narrower side wins");
    assert.equal(stageScale(10, 10, 320, 180, "fit"), 0.01, "never below 0.01");
    assert.equal(stageScale(10, 10, 320, 180, "2"), 2);
  });

  it("asks the preview server for a stage page with the values, rate and reload count", () => {
    const url = new URL(
      stagePageUrl({ entry: "scenes/intro.html", fps: 25 } as Info, 3, { title: "Hi & bye" }),
      "http://127.0.0.1/",
    );
    assert.equal(url.pathname, "/scenes/intro.html");
    assert.equal(url.searchParams.get("fps"), "25");
    assert.equal(url.searchParams.get("r"), "3");
    assert.deepEqual(JSON.parse(url.searchParams.get("vars")!), { title: "Hi & bye" });
  });
});
