/**
 * Tests for the pure pieces of `vid check`'s static part: what the HTML refers to and
 * where (lines and columns from 1, url()s inside styles), which templates count as
 * content, which data-* attributes are near misses of the ones vid reads (and which are a
 * page's own), how URLs map to project paths, and how the runtime part samples frames.
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { projectPath } from "../../src/check/files.ts";
import { formatProblem } from "../../src/check/problems.ts";
import { readReferences } from "../../src/check/references.ts";
import { sampleFrames } from "../../src/check/runtime.ts";
import { attributeTypo } from "../../src/check/static.ts";

describe("readReferences", () => {
  it("places scripts, files, url()s and timed elements by line and column", () => {
    const refs = readReferences(
      `<style>\n.a { background: url("img/bg.png"); }\n</style>
<div data-composition-id="x" data-widht="1">
  <video src="clip.mp4" data-volumne="1"></video>
  <div data-composition-src="scene.html"></div>
</div>
<script type="module">import "./a.js";</script><script src="js/b.js"></script>
<script type="application/json">{"not": "code"}</script>`,
    );
    assert.deepEqual(
      refs.files.map((f) => `${f.kind} ${f.url} ${f.line}:${f.column}`),
      [
        "media clip.mp4 5:10",
        "composition scene.html 6:8",
        "script js/b.js 8:56",
        "css img/bg.png 2:18",
      ],
    );
    assert.deepEqual(refs.scripts.map((s) => [s.module, s.src ?? s.text]), [
      [true, 'import "./a.js";'],
      [false, "js/b.js"],
    ]);
    assert.deepEqual(refs.timed.map((t) => t.role), ["root", "media", "clip"]);
    assert.deepEqual(refs.timed[1].attributes.map((a) => a.name), ["data-volumne"]);
  });

  it("a template holding the composition root is not content waiting to be instantiated", () => {
    const refs = readReferences(
      `<template id="scene"><div data-composition-id="s" data-width="1" data-height="1" data-duration="1"></div></template>
<template id="card"><p>card</p></template>`,
    );
    assert.deepEqual(refs.templates.map((t) => t.id), ["card"]);
  });
});

describe("attributeTypo", () => {
  it("names the attribute a near miss means, case-insensitively", () => {
    assert.equal(attributeTypo("data-volumne"), "data-volume");
    assert.equal(attributeTypo("data-Strat"), "data-start");
    assert.equal(attributeTypo("data-media-strat"), "data-media-start");
    assert.equal(attributeTypo("data-fade-ni"), "data-fade-in");
    assert.equal(attributeTypo("data-var-txet"), "data-var-text");
  });

  it("leaves vid's own attributes and a page's own alone", () => {
    for (
      const name of [
        "data-start",
        "data-duck",
        "data-captions",
        "data-var-text",
        "data-var-src",
        "data-no-timeline",
        "data-state",
        "data-kind",
      ]
    ) {
      assert.equal(attributeTypo(name), undefined, name);
    }
  });
});

describe("projectPath", () => {
  it("resolves relative and root paths inside the project and leaves URLs alone", () => {
    assert.deepEqual(projectPath("/a/b.png", "/p/sub/index.html", "/p"), {
      kind: "local",
      path: "/p/a/b.png",
      relative: "a/b.png",
    });
    assert.equal(projectPath("../x.png", "/p/index.html", "/p").kind, "outside");
    for (const url of ["data:image/png;base64,xx", "//cdn.test/a.js", "#top", "{{logo}}"]) {
      assert.equal(projectPath(url, "/p/index.html", "/p").kind, "remote", url);
    }
  });
});

describe("formatProblem and sampleFrames", () => {
  it("a runtime problem names its frame; one without a place has no prefix", () => {
    assert.equal(
      formatProblem({
        severity: "error",
        part: "runtime",
        kind: "bad-text",
        message: "shows NaN",
        frame: 3,
      }),
      "error: frame 3: shows NaN",
    );
  });

  it("samples the first and last frame, each second and clip boundaries inside the duration", () => {
    assert.deepEqual(sampleFrames(1, { num: 30000, den: 1001 }, [[0.5, null], [4, 5]]), [
      0,
      14,
      29,
    ]);
  });
});
