/**
 * Declarations beyond the spec's five types: `min`/`max`/`step` on numbers (values outside
 * the range are problems naming it), `description` and `group` for editors, the `image`
 * type (a project file path checked to exist, or an http(s) URL), invalid extras dropping
 * the declaration with a reason: here, how `vid info` and `vid validate` show them and an
 * image variable in a real render; parsing, checking and the generated types without a
 * process are in tests/unit/declaration_extras_parse_test.ts.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { compositionHtml, makeProject, near, pixelSeries, rgb, runVid } from "../helpers.ts";
import { ENTRIES } from "../fixtures/declaration_extras.ts";

describe("declaration extras: vid validate and vid info", () => {
  let project: string;
  before(async () => {
    project = await makeProject(compositionHtml("", { id: "extras", variables: ENTRIES }), {
      "img/logo.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
      "img/other.png": new Uint8Array([0x89, 0x50, 0x4e, 0x47]),
    });
  });
  after(async () => {
    await Deno.remove(project, { recursive: true });
  });

  it("vid validate and vid info show ranges, groups, descriptions and image checks", async () => {
    const validate = await runVid([
      "validate",
      project,
      "--variables",
      '{"count":42,"logo":"img/nope.png"}',
    ]);
    assert.equal(validate.code, 0, validate.stderr);
    assert.match(validate.stdout, /^valid with 2 warnings: extras/);
    assert.match(
      validate.stdout,
      /- count: "count" \(number\) expects a number from 0 to 10, got 42/,
    );
    assert.match(validate.stdout, /- logo: "logo" \(image\) .*"img\/nope.png" does not exist/);
    assert.match(validate.stdout, /^ {2}count = 42 {2}\(Layout: How many dots\)$/m);
    assert.match(validate.stdout, /^ {2}title = "Hi" {2}\(Headline\)$/m);
    const validateJson = JSON.parse((await runVid(["validate", project, "--json"])).stdout);
    assert.equal(validateJson.verdict, "valid");
    assert.equal(validateJson.variables[0].description, "How many dots");
    const strict = await runVid([
      "validate",
      project,
      "--variables",
      '{"count":42}',
      "--strict-variables",
    ]);
    assert.equal(strict.code, 1);

    const info = await runVid(["info", project]);
    assert.equal(info.code, 0, info.stderr);
    assert.match(info.stdout, /^\s+count\s+number\s+3\s+Count\s+Layout\s+from 0 to 10, step 1$/m);
    assert.match(
      info.stdout,
      /^\s+logo\s+image\s+"img\/logo.png"\s+Logo\s+Brand\s+project file or http\(s\) URL$/m,
    );
    assert.match(info.stdout, /^\s+count: How many dots$/m);
    const json = JSON.parse((await runVid(["info", project, "--json"])).stdout);
    assert.equal(json.variables[0].group, "Layout");
    assert.equal(json.variables[0].max, 10);
  });
});

describe("image variables in a render", () => {
  let project: string;
  before(async () => {
    const html = compositionHtml(
      '<img id="logo" style="position:absolute;inset:0;width:100%;height:100%">',
      {
        id: "imagevar",
        variables: [{ id: "logo", type: "image", default: "img/red.png" }],
        after: `<script>
document.getElementById("logo").src = window.__vid.getVariables().logo;
</script>`,
      },
    );
    project = await makeProject(html);
    await Deno.mkdir(`${project}/img`);
    for (const [name, colour] of [["red", "0xff0000"], ["blue", "0x0000ff"]]) {
      const made = await new Deno.Command("ffmpeg", {
        args: [
          "-v",
          "error",
          "-f",
          "lavfi",
          "-i",
          `color=c=${colour}:s=32x32`,
          "-frames:v",
          "1",
          `${project}/img/${name}.png`,
        ],
      }).output();
      assert.equal(made.code, 0);
    }
  });
  after(async () => {
    await Deno.remove(project, { recursive: true });
  });

  it("the page loads the project file the variable names", async () => {
    const still = await runVid([
      "still",
      project,
      "--variables",
      '{"logo":"img/blue.png"}',
      "--strict-variables",
      "-o",
      `${project}/out.png`,
    ]);
    assert.equal(still.code, 0, still.stderr);
    const [pixel] = await pixelSeries(`${project}/out.png`, 160, 90);
    assert.ok(near(pixel, [0, 0, 255]), rgb(pixel));
  });
});
