/**
 * Page errors say where: a composition whose script throws while loading, and one that
 * throws at frame 4, rendered by the real `vid render` (Chromium + ffmpeg); stderr and
 * `--json` must name the project-relative file, line and column and the stack's first
 * frames, a load-time throw must be a load error (not a frame), and no file is left.
 * How locations and frames are worded is in tests/unit/page_error_location_test.ts.
 *
 * @module
 */

import { after, describe, it } from "node:test";
import assert from "node:assert/strict";
import { compositionHtml, gsapSource, makeProject, runVid } from "../helpers.ts";

const dirs: string[] = [];

async function project(html: string, files: Record<string, string>): Promise<string> {
  const dir = await makeProject(html, files);
  dirs.push(dir);
  return dir;
}

/** `scene.js` line 3, column 17 reads a property of undefined, called from line 5. */
const LOAD_SCRIPT = `const config = undefined;
function setup() {
  return config.title;
}
setup();
`;

/** `js/anim.js`: the fifth requestAnimationFrame round (frame 4) calls a method of null. */
const FRAME_SCRIPT = `let n = 0;
function step() {
  n++;
  if (n === 5) {
    null.explode();
  }
  requestAnimationFrame(step);
}
requestAnimationFrame(step);
`;

interface JsonError {
  name: string;
  message: string;
  field: string;
  phase: string;
  frame: number | null;
  location: { file: string; line: number; column: number };
  stack: { file: string; line: number; column: number; functionName: string }[];
}

async function renderFails(dir: string, json: boolean) {
  const output = `${dir}/out/video.mp4`;
  const result = await runVid([
    "render",
    dir,
    "--output",
    output,
    "--fps",
    "10",
    ...(json ? ["--json"] : []),
  ]);
  assert.equal(result.code, 1, result.stderr);
  const left = await Array.fromAsync(Deno.readDir(`${dir}/out`)).catch(() => []);
  assert.deepEqual(left, [], "no partial output");
  return result;
}

describe("page errors name the file, line and column", () => {
  after(async () => {
    for (const dir of dirs) await Deno.remove(dir, { recursive: true }).catch(() => {});
  });

  it("a throw while loading is a load error at scene.js:3:17, in stderr and --json", async () => {
    const dir = await project(
      compositionHtml("", {
        id: "throws-at-load",
        duration: 0.5,
        after: '<script src="scene.js"></script>',
      }),
      { "scene.js": LOAD_SCRIPT },
    );
    const text = await renderFails(dir, false);
    const line = text.stderr.split("\n").find((l) => l.startsWith("error: "));
    assert.equal(
      line,
      "error: the page threw while loading: TypeError: Cannot read properties of undefined " +
        "(reading 'title') at setup (scene.js:3:17), called from scene.js:5:1",
    );
    assert.doesNotMatch(text.stderr, /frame \d+:/, "not reported as a frame");
    assert.ok(!text.stderr.includes(dir), "no absolute path of the machine");

    const json = await renderFails(dir, true);
    const error = (JSON.parse(json.stdout) as { error: JsonError }).error;
    assert.equal(error.name, "PageError");
    assert.equal(error.phase, "load");
    assert.equal(error.field, "load");
    assert.equal(error.frame, null);
    assert.deepEqual(error.location, { file: "scene.js", line: 3, column: 17 });
    assert.deepEqual(error.stack.map((f) => `${f.functionName}@${f.file}:${f.line}:${f.column}`), [
      "setup@scene.js:3:17",
      "@scene.js:5:1",
    ]);
  });

  it("a throw at frame 4 names frame 4 and js/anim.js:5:10, in stderr and --json", async () => {
    const dir = await project(
      compositionHtml("", {
        id: "throws-at-frame",
        duration: 0.5,
        after: '<script src="js/anim.js"></script>',
      }),
      { "js/anim.js": FRAME_SCRIPT },
    );
    const text = await renderFails(dir, false);
    const line = text.stderr.split("\n").find((l) => l.startsWith("error: "));
    assert.equal(
      line,
      "error: frame 4: the page threw TypeError: Cannot read properties of null " +
        "(reading 'explode') at step (js/anim.js:5:10)",
    );
    assert.doesNotMatch(text.stderr, /vid-runtime/, "the runtime's own frames are left out");

    const json = await renderFails(dir, true);
    const error = (JSON.parse(json.stdout) as { error: JsonError }).error;
    assert.equal(error.phase, "frame");
    assert.equal(error.frame, 4);
    assert.deepEqual(error.location, { file: "js/anim.js", line: 5, column: 10 });
    assert.equal(error.stack[0].functionName, "step");
  });

  it("an inline script is named by its HTML file, at the line inside it", async () => {
    const html = compositionHtml("", {
      id: "inline",
      duration: 0.5,
      after: `<script>
window.__vid.onSeek(function hook(t) {
  if (t >= 0.2) throw new RangeError("too late");
});
</script>`,
    });
    const dir = await project(html, {});
    const json = await renderFails(dir, true);
    const error = (JSON.parse(json.stdout) as { error: JsonError }).error;
    const line = html.split("\n").findIndex((l) => l.includes("too late")) + 1;
    assert.equal(error.frame, 2);
    assert.equal(error.location.file, "index.html");
    assert.equal(error.location.line, line);
    assert.match(
      error.message,
      /^frame 2: the page threw RangeError: too late at hook \(index\.html:\d+:\d+\)$/,
    );
  });

  it("a throw in a GSAP timeline callback names frame, file, line and stack in stderr and --json", async () => {
    // tl.call() runs while the runtime seeks window.__timelines: before, the throw escaped
    // the seek unrecorded and came out as "frame 5: price feed missing" with "stack": [].
    const dir = await project(
      compositionHtml('<div id="price">$0</div>', {
        id: "gsap-callback",
        duration: 1,
        head: '<script src="gsap.min.js"></script>',
        after: '<script src="js/timeline.js"></script>',
      }),
      {
        "gsap.min.js": await gsapSource(),
        "js/timeline.js": `var tl = gsap.timeline({ paused: true });
function showPrice() {
  throw new Error("price feed missing");
}
tl.call(showPrice, [], 0.5);
window.__timelines = { main: tl };
`,
      },
    );
    const text = await renderFails(dir, false);
    const line = text.stderr.split("\n").find((l) => l.startsWith("error: ")) ?? "";
    assert.match(
      line,
      /^error: frame 5: the page threw Error: price feed missing at (?:Tween\.)?showPrice \(js\/timeline\.js:3:9\), called from /,
    );
    const json = await renderFails(dir, true);
    const error = (JSON.parse(json.stdout) as { error: JsonError }).error;
    assert.equal(error.frame, 5);
    assert.deepEqual(error.location, { file: "js/timeline.js", line: 3, column: 9 });
    assert.ok(error.stack.length >= 2, JSON.stringify(error.stack));
    assert.match(error.stack[0].functionName, /showPrice$/);
  });
});
