/**
 * `vid check` through the real command (Chromium, ffmpeg): one run over
 * `tests/fixtures/check/broken`, a project with one of each mistake, asserts every finding
 * with its place; `syntax` has script syntax errors (static only, with the source line);
 * `clean` passes with exit 0. `vid validate` runs the static part, so it no longer calls
 * a page with a syntax error `valid`.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { compositionHtml, makeProject, ROOT, runVid } from "../helpers.ts";

const FIXTURES = `${ROOT}tests/fixtures/check`;

interface Problem {
  severity: "error" | "warning";
  part: string;
  kind: string;
  message: string;
  file?: string;
  line?: number;
  column?: number;
  source?: string;
  field?: string;
  frame?: number;
  stack?: { file: string; line: number; column: number; functionName: string }[];
}

interface Report {
  ok: boolean;
  problems: Problem[];
  errors: number;
  warnings: number;
}

describe("vid check", () => {
  let snapshots: string;
  let broken: { code: number; report: Report; stderr: string };

  before(async () => {
    snapshots = await Deno.makeTempDir({ prefix: "vid-check-" });
    const result = await runVid([
      "check",
      `${FIXTURES}/broken`,
      "--json",
      "--snapshots",
      snapshots,
    ]);
    broken = { code: result.code, report: JSON.parse(result.stdout), stderr: result.stderr };
  });
  after(async () => {
    await Deno.remove(snapshots, { recursive: true }).catch(() => {});
  });

  /** The one problem of `kind` whose field is `field`. */
  function finding(kind: string, field: string): Problem {
    const found = broken.report.problems.filter((p) => p.kind === kind && p.field === field);
    assert.equal(found.length, 1, `${kind} ${field}: ${JSON.stringify(broken.report.problems)}`);
    return found[0];
  }

  it("fails the broken project (exit 1) and finds each mistake once, where it is", () => {
    assert.equal(broken.code, 1, broken.stderr);
    assert.equal(broken.report.ok, false);

    const kase = finding("missing-file", "images/Logo.png");
    assert.deepEqual([kase.file, kase.line, kase.column], ["index.html", 16, 8]);
    assert.match(kase.message, /the project has "images\/logo\.png" \(letter case differs/);
    assert.match(finding("missing-file", "js/missing.js").message, /does not exist in the project/);

    const strat = finding("unknown-attribute", "data-strat");
    assert.match(strat.message, /did you mean data-start\?/);
    assert.deepEqual([strat.line, strat.column], [17, 24]);
    assert.match(finding("unknown-attribute", "data-duraton").message, /data-duration\?/);

    const dropped = finding("dropped-declaration", "tax");
    assert.equal(dropped.severity, "warning");
    assert.match(
      dropped.message,
      /declaration 2 \("tax"\) is dropped: .*reads getVariables\(\)\.tax as undefined/,
    );
    assert.equal(finding("variable", "logo").severity, "error");

    assert.match(finding("unrendered", "scenes/intro.html").message, /would not be rendered/);
    assert.match(finding("unrendered", "card").message, /never instantiated/);
    assert.match(finding("unrendered", "data-start").message, /never be shown/);

    const media = finding("media", "photo.png");
    assert.equal(media.part, "media");
    assert.match(media.message, /cannot be decoded: \S/);

    // Seen in the file's first bytes, so the check a render runs first refuses it too.
    const font = finding("font", "fonts/Brand.woff2");
    assert.deepEqual([font.part, font.file, font.line], ["static", "index.html", 3]);
    assert.match(font.message, /is not a font \(it starts with "not "\)/);

    const nan = finding("bad-text", "div#price");
    assert.equal(nan.frame, 0);
    assert.match(nan.message, /"\$NaN"/);

    const overflow = finding("text-overflow", "div#headline");
    assert.equal(overflow.severity, "warning");
    assert.match(overflow.message, /past the right edge/);

    const thrown = broken.report.problems.filter((p) => p.kind === "page-error");
    assert.equal(thrown.length, 1, JSON.stringify(thrown));
    assert.equal(thrown[0].frame, 30);
    assert.deepEqual([thrown[0].file, thrown[0].line, thrown[0].column], ["index.html", 28, 21]);
    assert.equal(thrown[0].stack?.[0].functionName, "failAt");

    assert.equal(broken.report.warnings, 2);
    assert.equal(broken.report.errors, broken.report.problems.length - 2);
  });

  it("--snapshots writes the sampled frames as PNG named by frame", async () => {
    const names = (await Array.fromAsync(Deno.readDir(snapshots))).map((e) => e.name).sort();
    // Sampled: 0, 30 (a second in) and 59 (the last); the page throws from 30 on (again at
    // 59, on a fresh page), so frame 0 is the one captured. The first clip's end is not
    // sampled: its data-duration is misspelt.
    assert.deepEqual(names, ["frame-000000.png"]);
    const bytes = await Deno.readFile(`${snapshots}/frame-000000.png`);
    assert.deepEqual([...bytes.slice(1, 4)], [0x50, 0x4e, 0x47], "a PNG");
  });

  it("names script syntax errors with file:line:column and the source line", async () => {
    const result = await runVid(["check", `${FIXTURES}/syntax`]);
    assert.equal(result.code, 1, result.stderr);
    const lines = result.stdout.split("\n");
    const inline = lines.findIndex((l) => l.startsWith("index.html:9:27: error: syntax error"));
    assert.ok(inline >= 0, result.stdout);
    assert.equal(lines[inline + 1], '    | title.textContent = "Hi" +;');
    assert.match(result.stdout, /^js\/scene\.js:3:10: error: syntax error/m);
    assert.match(
      result.stdout,
      /^failed: syntax \(320x180, 1 s at 30 fps\): 2 errors, 0 warnings$/m,
    );

    // vid validate runs the static part: not `valid`.
    const validate = await runVid(["validate", `${FIXTURES}/syntax`]);
    assert.equal(validate.code, 1);
    assert.match(validate.stdout, /^invalid \(2 problems\)/);
    assert.match(validate.stdout, /^index\.html:9:27: error: syntax error/m);
  });

  it("finds bad audio automation and a caption file that does not parse, as a render would", async () => {
    const tone = await makeProject(compositionHtml(
      '<audio id="music" src="tone.wav" data-volume="0:1, 2:0.5, 1:0"></audio>',
      { duration: 1 },
    ));
    const made = await new Deno.Command("ffmpeg", {
      args: ["-v", "error", "-f", "lavfi", "-i", "sine=duration=1", `${tone}/tone.wav`],
    }).output();
    assert.ok(made.success);
    const captions = await makeProject(
      compositionHtml('<div data-captions="subs.vtt"></div>', { duration: 1 }),
      { "subs.vtt": "WEBVTT\n\n00:00.000 -> 00:00.500\nHi\n" },
    );
    try {
      const audio = await runVid(["check", tone, "--json"]);
      assert.equal(audio.code, 1, audio.stdout + audio.stderr);
      const found = (JSON.parse(audio.stdout) as Report).problems;
      assert.ok(
        found.some((p) =>
          p.field === "data-volume" && /keyframe 3 "1:0" goes back in time/.test(p.message)
        ),
        JSON.stringify(found),
      );
      const vtt = await runVid(["check", captions, "--json"]);
      assert.equal(vtt.code, 1, vtt.stdout + vtt.stderr);
      const problems = (JSON.parse(vtt.stdout) as Report).problems;
      assert.ok(
        problems.some((p) =>
          p.field === "data-captions" && p.line === 3 && /^subs\.vtt:3: /.test(p.message)
        ),
        JSON.stringify(problems),
      );
    } finally {
      await Deno.remove(tone, { recursive: true });
      await Deno.remove(captions, { recursive: true });
    }
  });

  it("passes a clean project with exit 0", async () => {
    const result = await runVid(["check", `${FIXTURES}/clean`]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    assert.match(result.stdout, /^ok: clean \(320x180, 1 s at 30 fps\): 0 errors, 0 warnings$/m);
  });

  it("--strict fails on warnings; a bad flag is a usage error (exit 2)", async () => {
    const warned = await runVid(["check", `${FIXTURES}/clean`, "--variables", '{"prise":1}']);
    assert.equal(warned.code, 0, warned.stdout);
    assert.match(warned.stdout, /^warning: "prise" is not declared .*did you mean "price"\?$/m);
    const strict = await runVid([
      "check",
      `${FIXTURES}/clean`,
      "--variables",
      '{"prise":1}',
      "--strict",
    ]);
    assert.equal(strict.code, 1);
    assert.match(strict.stdout, /^failed: clean .*0 errors, 1 warning \(--strict\)$/m);
    const usage = await runVid(["check", `${FIXTURES}/clean`, "--fps", "0"]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--fps/);
    const missing = await runVid(["check", `${FIXTURES}/nowhere`]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no such file or directory/);
  });

  it("vid render refuses, before its first frame, what it would leave unrendered and attributes it does not read; --no-check renders anyway and says so", async () => {
    const dir = await makeProject(compositionHtml(
      '<div data-start="2" data-duration="1">late</div><video data-strat="0"></video>' +
        '<template id="card"><p>never</p></template>' +
        '<div data-composition-src="scenes/intro.html"></div>',
      { duration: 1 },
    ));
    const result = await runVid(["render", dir, "--frames", "0-0", "-o", `${dir}/one.mp4`]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stderr,
      /^error: the project fails vid check \(4 errors\); nothing was rendered/m,
    );
    for (
      const error of [
        /^ {2}- index\.html:\d+:\d+: error: <div data-composition-src> "scenes\/intro\.html" does not exist in the project; the sub-composition it hosts would not be rendered$/m,
        /^ {2}- index\.html:\d+:\d+: error: <video> has data-strat, which vid does not read; did you mean data-start\?$/m,
        /^ {2}- index\.html:\d+:\d+: error: <div> starts at data-start="2", at or after the composition's end/m,
        /^ {2}- index\.html:\d+:\d+: error: <template id="card"> is never instantiated/m,
      ]
    ) assert.match(result.stderr, error);
    // No frame was captured: the progress line never started.
    assert.doesNotMatch(result.stderr, /frames .* fps/);
    await assert.rejects(Deno.stat(`${dir}/one.mp4`));

    const unchecked = await runVid([
      "render",
      dir,
      "--frames",
      "0-0",
      "-o",
      `${dir}/one.mp4`,
      "--no-check",
    ]);
    assert.match(unchecked.stderr, /^warning: --no-check: rendering without vid check/m);
    // The missing sub-composition then fails the render itself (docs/hyperframes.md).
    assert.equal(unchecked.code, 1, unchecked.stderr);
    assert.match(unchecked.stderr, /^error: .*missing from the project: \/scenes\/intro\.html/m);
    await Deno.remove(dir, { recursive: true });
  });

  it("vid render refuses a font file that is not a font, and renders past a dropped declaration nothing reads, with a warning", async () => {
    const font = await makeProject(
      compositionHtml('<p style="font-family: Brand">$0</p>', {
        head: '<style>@font-face { font-family: "Brand"; src: url("fonts/Brand.woff2"); }</style>',
      }),
      { "fonts/Brand.woff2": "not a font" },
    );
    const refused = await runVid(["render", font, "--frames", "0-0", "-o", `${font}/one.mp4`]);
    assert.equal(refused.code, 1, refused.stderr);
    assert.match(
      refused.stderr,
      /^ {2}- index\.html:\d+:\d+: error: url\(\) in a <style> "fonts\/Brand\.woff2" is not a font/m,
    );
    const dropped = await makeProject(
      compositionHtml("<p>$0</p>", {
        variables: [{ id: "price", type: "number", label: "Price", default: "129" }],
      }),
    );
    const result = await runVid(["render", dropped, "--frames", "0-0", "-o", `${dropped}/one.mp4`]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stderr,
      /^warning: declaration 0 \("price"\) dropped: .*; the page reads getVariables\(\)\.price as undefined$/m,
    );
    await Deno.remove(font, { recursive: true });
    await Deno.remove(dropped, { recursive: true });
  });

  it("vid lambda render-batch, vid lambda render, vid cloud render and vid still stop on the check before uploading or rendering; --no-check skips", async () => {
    const dir = await Deno.makeTempDir({ prefix: "vid-check-rows-" });
    const rows = `${dir}/rows.jsonl`;
    await Deno.writeTextFile(rows, '{"outputKey":"a.mp4"}\n');
    const syntax = `${FIXTURES}/syntax`;
    const lambda = await runVid(["lambda", "render-batch", syntax, "--batch", rows, "--dry-run"]);
    assert.equal(lambda.code, 1, lambda.stdout);
    assert.match(
      lambda.stderr,
      /^error: the project fails vid check \(2 errors\); nothing was rendered/m,
    );
    assert.match(lambda.stderr, /^ {2}- index\.html:9:27: error: syntax error/m);
    const one = await runVid(["lambda", "render", syntax]);
    assert.equal(one.code, 1, one.stdout);
    assert.match(one.stderr, /^ {2}- index\.html:9:27: error: syntax error/m);
    const still = await runVid(["still", syntax, "-o", `${dir}/still.png`]);
    assert.equal(still.code, 1, still.stdout);
    assert.match(still.stderr, /^ {2}- index\.html:9:27: error: syntax error/m);
    const cloud = await runVid(["cloud", "render", syntax, "--dry-run"]);
    assert.equal(cloud.code, 1, cloud.stdout);
    assert.match(cloud.stderr, /^error: the project fails vid check \(2 errors\)/m);
    const skipped = await runVid([
      "lambda",
      "render-batch",
      syntax,
      "--batch",
      rows,
      "--dry-run",
      "--no-check",
    ]);
    assert.equal(skipped.code, 0, skipped.stderr);
    assert.match(skipped.stdout, /^1 would invoke/m);
    await Deno.remove(dir, { recursive: true });
  });
});
