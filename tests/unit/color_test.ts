/**
 * Tests for `isCssColor`: the browser-free CSS colour check behind `color` variables.
 * Accepted values must be ones Chromium would paint; anything it would ignore is rejected.
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { isCssColor } from "../../src/composition/color.ts";

function assertAll(values: string[], expected: boolean) {
  const wrong = values.filter((v) => isCssColor(v) !== expected);
  assert.deepEqual(wrong, [], `expected isCssColor to be ${expected} for ${JSON.stringify(wrong)}`);
}

describe("isCssColor: hex", () => {
  it("accepts 3, 4, 6 and 8 hex digits in either case", () => {
    assertAll(["#f06", "#f06c", "#ff0066", "#ff0066cc", "#FF0066", "#AbCdEf12"], true);
  });

  it("rejects other lengths and non-hex digits", () => {
    assertAll(["#", "#f", "#ff", "#ff006", "#ff00661", "#ff0066ccd", "#ggg", "#12345z"], false);
  });

  it("requires the leading #", () => {
    assertAll(["ff0066", "f06"], false);
  });
});

describe("isCssColor: named colours", () => {
  it("accepts CSS named colours case-insensitively, plus transparent and currentColor", () => {
    assertAll(
      ["red", "rebeccapurple", "RebeccaPurple", "white", "transparent", "currentColor"],
      true,
    );
  });

  it("accepts surrounding whitespace", () => {
    assertAll([" red ", "\t#fff\n"], true);
  });

  it("rejects made-up names", () => {
    assertAll(["blurple", "reddish", "red blue", "none"], false);
  });
});

describe("isCssColor: functional notations", () => {
  it("accepts rgb()/rgba() in legacy comma syntax", () => {
    assertAll([
      "rgb(255, 0, 102)",
      "rgb(255,0,102)",
      "rgba(255, 0, 102, 0.5)",
      "rgb(100%, 0%, 40%)",
      "rgba(255, 0, 102, 50%)",
    ], true);
  });

  it("accepts rgb()/rgba() in space syntax with optional slash alpha", () => {
    assertAll(
      ["rgb(255 0 102)", "rgb(255 0 102 / 0.5)", "rgba(255 0 102 / 50%)", "RGB(1 2 3)"],
      true,
    );
  });

  it("accepts hsl()/hsla() in both syntaxes, with angle units", () => {
    assertAll([
      "hsl(330, 100%, 50%)",
      "hsla(330, 100%, 50%, .5)",
      "hsl(330deg 100% 50%)",
      "hsl(0.9turn 100% 50% / 0.25)",
      "hsl(5.8rad 100% 50%)",
    ], true);
  });

  it("accepts the CSS Color 4 spaces oklch(), oklab(), lab(), lch(), hwb()", () => {
    assertAll([
      "oklch(70% 0.15 200)",
      "oklch(0.7 0.15 200 / 0.5)",
      "oklch(0.7 0.15 none)",
      "oklab(0.6 -0.1 0.1)",
      "lab(50% 40 59.5)",
      "lch(52.2% 72.2 50)",
      "hwb(194 0% 0%)",
    ], true);
  });

  it("accepts color() with a predefined colour space, with and without alpha", () => {
    assertAll([
      "color(display-p3 1 0 0.4)",
      "color(display-p3 1 0 0.4 / 0.8)",
      "color(srgb 100% 0% 40%)",
      "color(rec2020 0.5 0.5 0.5)",
      "color(xyz-d65 0.2 0.1 0.3)",
    ], true);
  });

  it("rejects the wrong number of channels", () => {
    assertAll([
      "rgb(1,2)",
      "rgb(1 2)",
      "rgb(1, 2, 3, 4, 5)",
      "rgb()",
      "color(display-p3 1 0)",
      "color(display-p3 1 0 0 0)",
      "color(display-p3)",
    ], false);
  });

  it("rejects alpha without a slash in space syntax (Chromium ignores rgb(1 2 3 4))", () => {
    assertAll(["rgb(1 2 3 4)", "oklch(0.7 0.15 200 0.5)", "color(display-p3 1 0 0 0.5)"], false);
  });

  it("rejects commas outside the legacy rgb()/hsl() forms and mixed comma/slash", () => {
    assertAll([
      "oklch(70%, 0.15, 200)",
      "lab(50%, 40, 59.5)",
      "color(display-p3, 1, 0, 0)",
      "rgb(255, 0, 102 / 0.5)",
    ], false);
  });

  it("rejects malformed bodies and non-numeric channels", () => {
    assertAll([
      "rgb(1,,2,3)",
      "rgb(1, 2, 3,)",
      "rgb(a, b, c)",
      "rgb(0x10 0 0)",
      "rgb(Infinity 0 0)",
      "rgb(1 2 3 / )",
      "rgb(1 2 3 / 0.5 / 1)",
      "rgb(1 2 3 / 0.5 1)",
      "rgb(1 2 3",
      "rgb 1 2 3",
      "(1 2 3)",
    ], false);
  });

  it("rejects unknown functions and colour spaces, including Object.prototype names", () => {
    assertAll([
      "rgbx(1 2 3)",
      "url(#x)",
      "color(nonsense 1 0 0)",
      "constructor(1, 2, 3)",
      "tostring(1 2 3)",
    ], false);
  });
});

describe("isCssColor: garbage", () => {
  it("rejects empty, whitespace and bare numbers", () => {
    assertAll(["", "   ", "12", "0", "-1", "1e3"], false);
  });
});
