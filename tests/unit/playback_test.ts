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
import {
  acceptComposition,
  compositionOptions,
  dropPages,
  entryQuery,
  readouts,
  sameDeclarations,
  studioUrlState,
  switchEntry,
  takeStandby,
  timelineClickFrame,
} from "../../src/preview/studio/studio_state.ts";
import { stagePageUrl } from "../../src/preview/studio/stage_pages.ts";
import type { Declaration, Info, Live } from "../../src/preview/studio/types.ts";

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

  /** A stage page whose iframe only counts its removals (no DOM here). */
  const page = (key: string): Live & { removed: () => number } => {
    let removed = 0;
    const iframe = { remove: () => removed++ } as unknown as HTMLIFrameElement;
    return { iframe, key, frame: -1, media: [], removed: () => removed };
  };
  const declared = (
    declarations: Declaration[],
    defaults: Record<string, unknown>,
  ): Info => ({ ...info, duration: 2, declarations, dropped: [], defaults }) as Info;
  const title: Declaration = { id: "title", type: "string", label: "Title" };
  const count: Declaration = { id: "count", type: "number", label: "Count" };

  it("writes the frame on stage, the changed values, mute and volume to the URL", () => {
    const state = createStudioState({ entry: "a.html", frame: 75, muted: false, volume: 1 });
    const sound = { muted: true, volume: 0.25 };
    assert.equal(studioUrlState(state, sound), undefined, "nothing before the composition");
    state.info = declared([title], { title: "Hi" });
    state.values = { title: "Bye" };
    assert.deepEqual(studioUrlState(state, sound), {
      entry: "a.html",
      frame: 59,
      values: { title: "Bye" },
      muted: true,
      volume: 0.25,
    }, "the wanted frame, clamped, until one is shown");
    state.shown = 12;
    state.values = { title: "Hi" };
    assert.equal(studioUrlState(state, sound)?.frame, 12);
    assert.deepEqual(studioUrlState(state, sound)?.values, {});
  });

  it("reads out the frame and the time against the whole", () => {
    assert.deepEqual(readouts({ fps: 30, frames: 60, duration: 2 }, 0), {
      frame: "frame 0 / 59",
      time: "0.000 s / 2.000 s",
    });
    assert.deepEqual(readouts({ fps: 25, frames: 50, duration: 2 }, 49).time, "1.960 s / 2.000 s");
  });

  it("takes the standby page only when it was loaded for the key wanted", () => {
    const state = createStudioState({ entry: "", frame: 0, muted: false, volume: 1 });
    const standby = page("k1");
    state.standby = standby;
    assert.equal(takeStandby(state, "k2"), undefined);
    assert.equal(state.standby, standby, "another key's standby stays");
    assert.equal(takeStandby(state, "k1"), standby);
    assert.equal(state.standby, undefined, "taken once");
    assert.equal(takeStandby(state, "k1"), undefined);
  });

  it("keeps the panel when a reload declares the same variables", () => {
    const a = declared([title], { title: "Hi" });
    assert.equal(sameDeclarations(undefined, a), false);
    assert.equal(sameDeclarations(a, declared([title], { title: "other default" })), true);
    assert.equal(sameDeclarations(a, declared([title, count], {})), false);
    assert.equal(
      sameDeclarations(a, { ...a, dropped: [{ index: 1, reason: "no id" }] }),
      false,
      "a dropped declaration is shown too",
    );
  });

  it("takes a composition read again: URL values once, typed values kept, a fresh page", () => {
    const state = createStudioState({
      entry: "",
      frame: 0,
      values: { title: "from url" },
      muted: false,
      volume: 1,
    });
    assert.equal(acceptComposition(state, declared([title], { title: "Hi" })), false);
    assert.deepEqual(state.values, { title: "from url" });
    assert.equal(state.urlValues, undefined, "the URL's values apply once");
    assert.equal(state.reloads, 0, "the first read needs no fresh page");
    state.values.title = "typed";
    assert.equal(
      acceptComposition(state, declared([title, count], { title: "Hi", count: 1 })),
      false,
    );
    assert.deepEqual(state.values, { title: "typed", count: 1 });
    assert.equal(state.reloads, 1, "an edit loads fresh pages");
    assert.equal(
      acceptComposition(state, declared([title, count], { title: "Hi", count: 1 })),
      true,
    );
    assert.equal(state.reloads, 2);
  });

  it("drops the pages and starts afresh on another composition", () => {
    const state = createStudioState({ entry: "a.html", frame: 30, muted: false, volume: 1 });
    const live = page("k");
    const standby = page("k");
    Object.assign(state, { live, standby, shown: 30, info, values: { title: "x" } });
    switchEntry(state, "b.html");
    assert.equal(live.removed(), 1);
    assert.equal(standby.removed(), 1);
    assert.equal(state.live, undefined);
    assert.equal(state.standby, undefined);
    assert.equal(state.shown, -1);
    assert.equal(state.info, undefined);
    assert.deepEqual(state.values, {});
    assert.equal(state.wanted, 0);
    assert.equal(state.reloads, 1);
    assert.equal(state.entry, "b.html");
    dropPages(state);
    assert.equal(live.removed(), 1, "nothing left to drop");
  });

  it("names the composition in the API's query, and in the switcher", () => {
    assert.equal(entryQuery(""), "");
    assert.equal(entryQuery("intro & outro.html"), "?entry=intro%20%26%20outro.html");
    assert.deepEqual(
      compositionOptions([
        { entry: "index.html", id: "main" },
        { entry: "broken.html", id: null, error: "no data-duration" },
      ]),
      [
        { value: "index.html", text: "main (index.html)" },
        { value: "broken.html", text: "broken.html (cannot be read)", title: "no data-duration" },
      ],
    );
  });

  it("finds the frame under a click on the timeline", () => {
    assert.equal(timelineClickFrame(100, 100, 400, 60), 0);
    assert.equal(timelineClickFrame(300, 100, 400, 60), 30);
    assert.equal(timelineClickFrame(499, 100, 400, 60), 59);
  });
});
