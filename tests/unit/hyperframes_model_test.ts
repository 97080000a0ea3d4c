/**
 * Unit tests of the HyperFrames model's pure parts (src/runtime/hyperframes_*.ts): how
 * `data-start` and seconds parse, which times a clip's window holds, how a media element's
 * window is cut to the clips around it, how a sub-composition's URLs are rebased and its
 * selectors scoped to one instance, its declared defaults, and the wrapper its scripts run
 * in. What needs a DOM (mounting, clips shown and hidden) is covered by
 * tests/integration/hyperframes_test.ts with real renders.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  inWindow,
  narrowMediaWindow,
  parseSeconds,
  parseStart,
} from "../../src/runtime/hyperframes_timing.ts";
import {
  rebase,
  rebaseCss,
  rootSelector,
  scopeSelector,
  splitSelectors,
} from "../../src/runtime/hyperframes_css.ts";
import { declaredDefaults } from "../../src/runtime/hyperframes_mount.ts";
import { scopedScriptCode } from "../../src/runtime/hyperframes_scope.ts";

describe("HyperFrames timing", () => {
  it("parses seconds, and nothing from blanks, words or infinities", () => {
    assert.equal(parseSeconds("0"), 0);
    assert.equal(parseSeconds(" 2.25 "), 2.25);
    assert.equal(parseSeconds("-1"), -1);
    assert.equal(parseSeconds(null), null);
    assert.equal(parseSeconds("   "), null);
    assert.equal(parseSeconds("1s"), null);
    assert.equal(parseSeconds("Infinity"), null);
  });

  it("parses data-start as seconds or a clip reference with an offset", () => {
    assert.deepEqual(parseStart("1.5"), { seconds: 1.5 });
    assert.deepEqual(parseStart("intro"), { ref: "intro", offset: 0 });
    assert.deepEqual(parseStart(" intro + 2 "), { ref: "intro", offset: 2 });
    assert.deepEqual(parseStart("scene-2-.5"), { ref: "scene-2", offset: -0.5 });
    assert.deepEqual(parseStart("scene_2 - .5"), { ref: "scene_2", offset: -0.5 });
    assert.equal(parseStart(null), null);
    assert.equal(parseStart(""), null);
    assert.equal(parseStart("2intro"), null);
    assert.equal(parseStart("intro * 2"), null);
  });

  it("holds a half-open window, open-ended without a length", () => {
    assert.equal(inWindow(0.999, 1, 1), false);
    assert.equal(inWindow(1 - 1e-7, 1, 1), true, "within the epsilon of its start");
    assert.equal(inWindow(1.999, 1, 1), true);
    assert.equal(inWindow(2, 1, 1), false, "its end is the next clip's");
    assert.equal(inWindow(1e9, 1, null), true);
  });

  it("cuts a media window to the clips around it, its source advanced at its rate", () => {
    const own = { start: 0.5, mediaStart: 1, duration: 4 };
    // Its composition starts at 1; the clip around it runs 2..4, the outer one 0..3.5.
    const clips = [{ start: 2, length: 2 }, { start: 0, length: 3.5 }];
    assert.deepEqual(narrowMediaWindow(own, 1, clips, 2), {
      start: 2,
      mediaStart: 2,
      duration: 1.5,
    });
    assert.deepEqual(narrowMediaWindow({ ...own, duration: null }, 0, [], 1), {
      start: 0.5,
      mediaStart: 1,
      duration: null,
    });
    assert.deepEqual(
      narrowMediaWindow(own, 0, [{ start: 0, length: 0.25 }], 1).duration,
      0,
      "a clip that ended before it started leaves it no time",
    );
  });
});

describe("HyperFrames sub-composition text", () => {
  const file = "http://127.0.0.1:8000/compositions/a.html";

  it("rebases ../ paths to the file and leaves the project's alone", () => {
    assert.equal(rebase("../img/x.png", file), "http://127.0.0.1:8000/img/x.png");
    assert.equal(rebase(" .. ", file), "http://127.0.0.1:8000/");
    assert.equal(rebase("img/x.png", file), "img/x.png");
    assert.equal(rebase("https://cdn.example/x.js", file), "https://cdn.example/x.js");
    assert.equal(
      rebaseCss(`a { background: url("../bg.png") } b { mask: url(m.svg) }`, file),
      `a { background: url("http://127.0.0.1:8000/bg.png") } b { mask: url(m.svg) }`,
    );
  });

  it("splits selector lists at top-level commas only", () => {
    assert.deepEqual(splitSelectors(" a ,b>c "), ["a", "b>c"]);
    assert.deepEqual(splitSelectors(':not(.a, .b), [title="x,y"]'), [
      ":not(.a, .b)",
      '[title="x,y"]',
    ]);
    assert.deepEqual(splitSelectors(""), []);
  });

  it("scopes selectors to one instance; the root and its id name the instance's root", () => {
    assert.equal(scopeSelector(".t", 3, "root", "intro"), '[data-vid-mount="3"] .t');
    assert.equal(scopeSelector(":ROOT", 3, "root", "intro"), '[data-vid-root="3"]');
    assert.equal(scopeSelector("#root > .t", 3, "root", "intro"), '[data-vid-root="3"] > .t');
    assert.equal(
      scopeSelector('[data-composition-id="intro"] .t', 3, "root", "intro"),
      '[data-vid-root="3"] .t',
    );
    assert.equal(
      scopeSelector("#root-2 .t", 3, "root", "intro"),
      '[data-vid-mount="3"] #root-2 .t',
      "another id that starts like the root's is not the root",
    );
    assert.equal(rootSelector("#a\\.b .t", 1, "a\\.b"), '[data-vid-root="1"] .t');
    assert.equal(rootSelector("#root", 1, ""), "#root", "a root without an id");
  });

  it("reads declared defaults, and none from a malformed list", () => {
    assert.deepEqual(
      declaredDefaults(
        '[{"id":"a","default":1},{"id":"b","default":null},{"id":"c"},{"default":2},null]',
      ),
      { a: 1, b: null },
    );
    assert.deepEqual(declaredDefaults('{"id":"a","default":1}'), {});
    assert.deepEqual(declaredDefaults("not json"), {});
    assert.deepEqual(declaredDefaults(null), {});
  });

  it("wraps an instance's script to run with that instance's globals", () => {
    const body = "window.__timelines.x = [document, gsap, __hyperframes];";
    const code = scopedScriptCode(body, 2, file);
    const scope = {
      document: "its document",
      window: { __timelines: {} as Record<string, unknown> },
      gsap: () => "its gsap",
      hyperframes: "its __hyperframes",
    };
    const global = globalThis as unknown as Record<string, unknown>;
    global.__vidHyperframesScopes = [undefined, undefined, scope];
    try {
      // As the page runs it: a script of its own, in the global scope.
      new Function(code).call(globalThis);
    } finally {
      delete global.__vidHyperframesScopes;
    }
    assert.deepEqual(scope.window.__timelines.x, [
      "its document",
      "its gsap",
      "its __hyperframes",
    ]);
    assert.ok(code.endsWith(`\n//# sourceURL=${file}`));
  });
});
