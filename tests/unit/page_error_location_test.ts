/**
 * Where a page error happened, as the render reports it: locations relative to the
 * composition's folder or the origin (other origins kept), the frame a record names, and at
 * most three frames listed in the message (src/render/page_error.ts). The renders that throw
 * are in tests/integration/page_error_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { PageError, pageErrorFrom, projectFile } from "../../src/render/page_error.ts";

describe("page error locations", () => {
  it("are relative to the composition's folder, or the origin, and keep other origins", () => {
    const page = "http://127.0.0.1:4100/sites/abc/index.html";
    assert.equal(projectFile("http://127.0.0.1:4100/sites/abc/js/a%20b.js", page), "js/a b.js");
    assert.equal(projectFile("http://127.0.0.1:4100/lib/x.js", page), "lib/x.js");
    assert.equal(
      projectFile("https://cdn.example.com/gsap.min.js", page),
      "https://cdn.example.com/gsap.min.js",
    );
    assert.equal(projectFile("", page), "(unknown script)");
  });

  it("report the frame a record names, and list at most three frames in the message", () => {
    const frames = [1, 2, 3, 4].map((n) => ({
      functionName: `f${n}`,
      url: "http://h/a.js",
      line: n,
      column: n,
    }));
    const error = pageErrorFrom(
      { message: "Error: x", phase: "frame", frame: 7, stack: frames },
      "http://h/index.html",
      9,
    );
    assert.ok(error instanceof PageError);
    assert.equal(error.frame, 7);
    assert.equal(
      error.message,
      "frame 7: the page threw Error: x at f1 (a.js:1:1), called from f2 (a.js:2:2), " +
        "f3 (a.js:3:3)",
    );
    assert.equal(error.details().stack.length, 4);
  });
});
