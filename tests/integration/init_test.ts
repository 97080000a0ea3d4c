/**
 * `vid init`: the starters list, the files written (libraries copied byte for byte from the
 * npm packages vid depends on), refusal of a non-empty folder without --force, and every
 * starter rendering with `vid render` (a few frames at 2 fps) to the right frame count
 * and pixel colours: the GSAP bar in the variable's colour, the lower third's alpha in webm,
 * the product card's image from its variable.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { initProject, listStarters } from "../../src/init/init.ts";
import { libraryFolder } from "../../src/init/vendor.ts";
import { near, pixelSeries, probeVideo, rgb, runVid } from "../helpers.ts";

let scratch: string;

before(async () => {
  scratch = await Deno.makeTempDir({ prefix: "vid-test-init-" });
});

after(async () => {
  await Deno.remove(scratch, { recursive: true });
});

async function files(dir: string, prefix = ""): Promise<string[]> {
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) {
      found.push(...await files(`${dir}/${entry.name}`, `${prefix}${entry.name}/`));
    } else found.push(`${prefix}${entry.name}`);
  }
  return found.sort();
}

describe("vid init", () => {
  it("--list names the three starters; --json gives them to machines", async () => {
    const human = await runVid(["init", "--list"]);
    assert.equal(human.code, 0, human.stderr);
    for (const name of ["social", "lower-third", "product-card"]) {
      assert.match(human.stdout, new RegExp(`^${name} `, "m"));
    }
    const json = await runVid(["init", "--list", "--json"]);
    assert.deepEqual(JSON.parse(json.stdout).map((s: { name: string }) => s.name), [
      "social",
      "lower-third",
      "product-card",
    ]);
    assert.deepEqual(listStarters()[0].libraries, ["gsap"]);
  });

  it("writes the social starter with GSAP vendored byte for byte and prints next steps", async () => {
    const dir = `${scratch}/social`;
    const result = await runVid(["init", dir]);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(await files(dir), [
      ".gitignore",
      ".vidignore",
      "batch.jsonl",
      "index.html",
      "lib/gsap.min.js",
    ]);
    const vendored = await Deno.readFile(`${dir}/lib/gsap.min.js`);
    const original = await Deno.readFile(`${libraryFolder("gsap")}/dist/gsap.min.js`);
    assert.deepEqual(vendored, original);
    assert.match(await Deno.readTextFile(`${dir}/index.html`), /<script src="lib\/gsap\.min\.js">/);
    assert.match(result.stdout, /next steps:/);
    assert.match(result.stdout, /vid preview/);
    assert.match(result.stdout, /vid render -o renders\/social\.mp4/);
    assert.match(result.stdout, /vid render-batch \. --batch batch\.jsonl --out-dir renders/);
  });

  it("refuses a non-empty folder (exit 1, nothing written) unless --force", async () => {
    const dir = `${scratch}/busy`;
    await Deno.mkdir(dir);
    await Deno.writeTextFile(`${dir}/mine.txt`, "keep");
    const refused = await runVid(["init", dir, "--template", "lower-third"]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /is not empty \(1 entry\).*--force/);
    assert.deepEqual(await files(dir), ["mine.txt"]);
    const forced = await runVid(["init", dir, "--template", "lower-third", "--force", "--json"]);
    assert.equal(forced.code, 0, forced.stderr);
    assert.equal(JSON.parse(forced.stdout).template, "lower-third");
    assert.deepEqual(await files(dir), [
      ".gitignore",
      ".vidignore",
      "batch.jsonl",
      "index.html",
      "mine.txt",
    ]);
  });

  it("an unknown template exits non-zero naming --template's choices", async () => {
    const result = await runVid(["init", `${scratch}/nope`, "--template", "wedding", "--json"]);
    assert.equal(result.code, 1);
    const error = JSON.parse(result.stdout).error;
    assert.equal(error.field, "template");
    assert.match(error.message, /social, lower-third, product-card/);
  });
});

describe("vid add", () => {
  it("copies the libraries into lib/ and fonts/, naming package, version and use", async () => {
    const dir = `${scratch}/add`;
    await Deno.mkdir(dir);
    const result = await runVid(["add", "three", "inter", "--dir", dir, "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const { libraries } = JSON.parse(result.stdout);
    assert.deepEqual(libraries.map((l: { package: string }) => l.package), [
      "three",
      "@fontsource/inter",
    ]);
    assert.equal(libraries[0].version, "0.187.0");
    assert.deepEqual(await files(dir), [
      "fonts/inter-LICENSE.txt",
      "fonts/inter-latin-400-normal.woff2",
      "fonts/inter-latin-700-normal.woff2",
      "fonts/inter.css",
      "lib/three.core.js",
      "lib/three.module.js",
    ]);
  });

  it("an unknown library exits non-zero listing the choices, writing nothing", async () => {
    const dir = `${scratch}/add-bad`;
    await Deno.mkdir(dir);
    const result = await runVid(["add", "gsap", "jquery", "--dir", dir]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /unknown library jquery; choose from gsap, lottie, three, inter/);
    assert.deepEqual(await files(dir), []);
  });
});

describe("vid init: every starter renders", () => {
  it("social: the GSAP bar grows in the accent variable's colour (5 frames at 2 fps)", async () => {
    const dir = `${scratch}/render-social`;
    await initProject({ dir, template: "social" });
    const out = `${dir}/renders/social.mp4`;
    const result = await runVid([
      "render",
      dir,
      "-o",
      out,
      "--fps",
      "2",
      "--frames",
      "0-4",
      "--variables",
      '{"accent":"#00ff00"}',
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await probeVideo(out)).frames, 5);
    // The bar spans x 96..984, y 760..784; GSAP scales it from 0 at t = 0.2 s.
    const bar = await pixelSeries(out, 540, 772);
    assert.ok(near(bar[0], [13, 11, 30], 12), `frame 0 before the bar: ${rgb(bar[0])}`);
    assert.ok(near(bar[4], [0, 255, 0], 16), `frame 4 (t = 2 s): ${rgb(bar[4])}`);
  });

  it("lower-third: webm and mov with alpha, transparent around the panel", async () => {
    const dir = `${scratch}/render-lower-third`;
    await initProject({ dir, template: "lower-third" });
    const out = `${dir}/renders/lower-third.webm`;
    const result = await runVid(["render", dir, "-o", out, "--fps", "2", "--frames", "0-4"]);
    assert.equal(result.code, 0, result.stderr);
    const info = await probeVideo(out);
    assert.equal(info.frames, 5);
    const accent = await pixelSeries(out, 104, 880, { alpha: true });
    assert.equal(accent[0][3], 0, `frame 0: the panel has not slid in: ${accent[0]}`);
    assert.ok(near(accent[4], [255, 183, 3, 255], 12), `frame 4 accent strip: ${accent[4]}`);
    const corner = await pixelSeries(out, 1800, 100, { alpha: true });
    assert.ok(corner.every((c) => c[3] === 0), `top right is transparent: ${corner}`);
    // The same frame as ProRes 4444 keeps the alpha too.
    const mov = `${dir}/renders/lower-third.mov`;
    const movResult = await runVid(["render", dir, "-o", mov, "--fps", "2", "--frames", "4-4"]);
    assert.equal(movResult.code, 0, movResult.stderr);
    const [strip] = await pixelSeries(mov, 104, 880, { alpha: true });
    const [empty] = await pixelSeries(mov, 1800, 100, { alpha: true });
    assert.ok(near(strip, [255, 183, 3, 255], 12), `mov accent strip: ${strip}`);
    assert.equal(empty[3], 0, `mov top right: ${empty}`);
  });

  it("product-card: the image variable picks the picture (a project path)", async () => {
    const dir = `${scratch}/render-product`;
    await initProject({ dir, template: "product-card" });
    await Deno.writeTextFile(
      `${dir}/assets/blue.svg`,
      `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="600"><rect width="600" height="600" fill="#0000ff"/></svg>`,
    );
    const out = `${dir}/renders/card.mp4`;
    const result = await runVid([
      "render",
      dir,
      "-o",
      out,
      "--fps",
      "2",
      "--frames",
      "2-3",
      "--variables",
      '{"image":"assets/blue.svg","background":"#ffffff"}',
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await probeVideo(out)).frames, 2);
    const [image] = await pixelSeries(out, 540, 400);
    assert.ok(near(image, [0, 0, 255], 12), `image centre: ${rgb(image)}`);
    const [background] = await pixelSeries(out, 20, 20);
    assert.ok(near(background, [255, 255, 255], 8), `background: ${rgb(background)}`);
  });
});
