/**
 * HyperFrames projects render unchanged (docs/hyperframes.md), through the commands a user
 * types, checked by pixels and sound levels of real renders:
 *
 * - variables declared on `<html>` and read through `window.__hyperframes.getVariables()`;
 * - `class="clip"` elements shown on exactly the frames of their window (`data-start` as
 *   seconds or a clip reference, `data-duration` or `data-end`), drawn in document order
 *   whatever their `data-track-index`, hidden with a hidden clip around them;
 * - a project of two sub-compositions (one nesting a third, with per-instance variables), each
 *   with its own GSAP or CSS timeline on its host's clock, rendered frame for frame as the
 *   single-file composition that draws the same thing (tests/fixtures/hyperframes/), by
 *   `vid render`, `vid still` and `vid server`;
 * - a sound inside a clip heard only in the clip's window, and inside a sub-composition only
 *   from its host's start;
 * - a host whose file is missing fails the render naming it;
 * - HyperFrames' `blank` and `from-file` starters (their shape, tests/fixtures/hyperframes/blank
 *   and from-file), whose top-level script registers on `window.__timelines`, render;
 * - a script or stylesheet that does not load fails the render before frame 0, by its URL and
 *   the fix (`vid add gsap` for GSAP from a CDN);
 * - frame 0 shows the timelines' state at t = 0 (`set()` and `from()` start states), as
 *   HyperFrames seeks, in `vid render` and `vid still`;
 * - system families HyperFrames maps to one it embeds (`Helvetica` to Inter) drawn so in a
 *   HyperFrames project, a root without `data-duration` lasting until its last
 *   sub-composition ends, and overlapping tweens of one property seeked as HyperFrames seeks
 *   them (the later one wins), as in HyperFrames.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { copyFile } from "node:fs/promises";
import { join } from "node:path";
import {
  imageDifference,
  lavfi,
  makeProject,
  near,
  pixelSeries,
  rgb,
  rgbFrames,
  ROOT,
  runVid,
} from "../helpers.ts";
import { rmsDb } from "../audio_levels.ts";
import { unzipSync } from "fflate";
import { packageProject } from "../../src/project/package.ts";

const FIXTURES = join(ROOT, "tests", "fixtures", "hyperframes");
const GSAP = join(ROOT, "node_modules", "gsap", "dist", "gsap.min.js");

let work: string;
/** The fixtures copied with gsap.min.js beside them (vid's own npm dependency). */
let project: string;
let single: string;
/** `vid render` of the single-file composition: what the project must look like. */
let reference: Uint8Array[];

async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) await copyTree(join(from, entry.name), join(to, entry.name));
    else await copyFile(join(from, entry.name), join(to, entry.name));
  }
}

async function render(target: string, output: string, args: string[] = []): Promise<void> {
  const result = await runVid(["render", target, "-o", output, ...args]);
  assert.equal(result.code, 0, result.stderr);
}

/** The colour class of a pixel: the nearest of the fixtures' saturated colours. */
function named(c: readonly number[]): string {
  const names: Record<string, number[]> = {
    black: [0, 0, 0],
    red: [255, 0, 0],
    green: [0, 255, 0],
    blue: [0, 0, 255],
    white: [255, 255, 255],
    yellow: [255, 255, 0],
    magenta: [255, 0, 255],
  };
  for (const [name, value] of Object.entries(names)) if (near(c, value, 40)) return name;
  return rgb(c);
}

/** Every frame of a video scaled to 320x180 (the server renders at its own resolution). */
async function scaledFrames(file: string): Promise<Uint8Array[]> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-v", "error", "-i", file, "-vf", "scale=320:180:flags=area", "-f", "rawvideo"]
      .concat(["-pix_fmt", "rgb24", "-"]),
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const size = 320 * 180 * 3;
  return Array.from(
    { length: Math.floor(out.stdout.length / size) },
    (_, n) => out.stdout.subarray(n * size, (n + 1) * size),
  );
}

/**
 * Asserts two renders' frames are the same pictures, up to `tolerance` (mean difference per
 * channel: encoder noise; a box one frame late or misplaced is far above it).
 */
function assertSameFrames(
  actual: Uint8Array[],
  expected: Uint8Array[],
  what: string,
  tolerance = 1,
): void {
  assert.equal(actual.length, expected.length, `${what}: frame count`);
  const off = actual.flatMap((frame, n) => {
    const d = imageDifference(frame, expected[n]);
    return d.mean > tolerance || d.share > tolerance / 1000
      ? [`frame ${n}: mean ${d.mean.toFixed(2)}, share ${d.share.toFixed(4)}`]
      : [];
  });
  assert.deepEqual(off, [], `${what} differs from the single-file composition`);
}

before(async () => {
  work = await Deno.makeTempDir({ prefix: "vid-hyperframes-" });
  await copyTree(FIXTURES, work);
  project = join(work, "project");
  single = join(work, "single");
  await copyFile(GSAP, join(project, "gsap.min.js"));
  await copyFile(GSAP, join(single, "gsap.min.js"));
  await render(single, join(work, "single.mp4"));
  reference = await rgbFrames(join(work, "single.mp4"), 320, 180);
  assert.equal(reference.length, 30);
});

after(async () => {
  await Deno.remove(work, { recursive: true });
});

describe("variables declared on <html>", () => {
  it("window.__hyperframes.getVariables() returns the declared default", async () => {
    const output = join(work, "variables.png");
    const result = await runVid(["still", join(work, "variables"), "-o", output]);
    assert.equal(result.code, 0, result.stderr);
    const [pixel] = await pixelSeries(output, 160, 90);
    assert.equal(named(pixel), "red");
  });

  it("each is a --<id> CSS property of the root, and data-var-text sets an element's own text", async () => {
    const output = join(work, "variables.png");
    const [[badge], [check]] = await Promise.all([
      pixelSeries(output, 20, 20),
      pixelSeries(output, 300, 160),
    ]);
    assert.equal(named(badge), "green");
    assert.equal(named(check), "white");
  });

  it("--variables overrides it, and vid info lists the declarations", async () => {
    const output = join(work, "variables-blue.png");
    const result = await runVid([
      "still",
      join(work, "variables"),
      "-o",
      output,
      "--variables",
      '{"accent":"#0000ff"}',
      "--strict-variables",
    ]);
    assert.equal(result.code, 0, result.stderr);
    const [pixel] = await pixelSeries(output, 160, 90);
    assert.equal(named(pixel), "blue");
    const info = await runVid(["info", join(work, "variables"), "--json"]);
    assert.equal(info.code, 0, info.stderr);
    const json = JSON.parse(info.stdout);
    assert.deepEqual(
      json.variables.map((d: { id: string; default: unknown }) => [d.id, d.default]),
      [["accent", "#ff0000"], ["title", "Hi"], ["badge", "#00ff00"]],
    );
  });
});

describe("HyperFrames' starters, as hyperframes init writes them", () => {
  // Both end with a top-level `window.__timelines["main"] = tl;`: before the registry was
  // made ahead of the page's scripts, both failed with "Cannot set properties of undefined".
  it("blank renders, its timeline moving the box from the left to the right", async () => {
    const dir = join(work, "blank");
    await copyFile(GSAP, join(dir, "gsap.min.js"));
    const output = join(work, "blank.mp4");
    await render(dir, output);
    const [left, right] = await Promise.all([
      pixelSeries(output, 20, 90),
      pixelSeries(output, 270, 90),
    ]);
    assert.equal(left.length, 30);
    assert.equal(named(left[0]), "red", `frame 0 at the left: ${rgb(left[0])}`);
    assert.ok(near(right[0], [10, 10, 10], 12), `frame 0 not yet right: ${rgb(right[0])}`);
    assert.equal(named(right[29]), "red", `last frame near x=240: ${rgb(right[29])}`);
    assert.ok(near(left[29], [10, 10, 10], 12), `last frame left behind: ${rgb(left[29])}`);
  });

  it("from-file (init --video) renders its video clip and sound", async () => {
    const dir = join(work, "from-file");
    await copyFile(GSAP, join(dir, "gsap.min.js"));
    // The user's video: red for 0.5 s, then blue, with a tone.
    await lavfi(
      "color=red:s=320x180:r=30:d=0.5[a];color=blue:s=320x180:r=30:d=0.5[b];[a][b]concat",
      join(dir, "clip.mp4"),
      ["-f", "lavfi", "-i", "sine=f=440:d=1", "-c:v", "libx264", "-pix_fmt", "yuv420p"]
        .concat(["-c:a", "aac", "-shortest"]),
    );
    const output = join(work, "from-file.mp4");
    await render(dir, output);
    const series = (await pixelSeries(output, 160, 90)).map(named);
    assert.deepEqual(series, Array.from({ length: 30 }, (_, n) => n < 15 ? "red" : "blue"));
    assert.ok(await rmsDb(output, 0.2, 0.8) > -30, "the clip's sound is in the mix");
  });
});

describe("a script or stylesheet that does not load", () => {
  // Port 9 (discard) on loopback: nothing listens, as a CDN host the render host cannot reach.
  const CDN = "http://127.0.0.1:9/npm/gsap@3.14.2/dist/gsap.min.js";

  it("fails the render before frame 0 naming the URL and vid add gsap, where it was 'gsap is not defined'", async () => {
    const html = (await Deno.readTextFile(join(FIXTURES, "blank", "index.html")))
      .replace('<script src="gsap.min.js"></script>', `<script src="${CDN}"></script>`);
    assert.ok(html.includes(CDN));
    const dir = await makeProject(html);
    try {
      const output = join(dir, "out.mp4");
      const result = await runVid(["render", dir, "-o", output]);
      assert.equal(result.code, 1, result.stderr);
      const line = result.stderr.split("\n").find((l) => l.startsWith("error: ")) ?? "";
      assert.equal(
        line,
        `error: <script src="${CDN}"> did not load (unreachable, or it answered an error); ` +
          "run `vid add gsap` in the project and point the <script> at lib/gsap.min.js, so the " +
          "project carries its own copy",
      );
      assert.equal(await Deno.stat(output).then(() => true, () => false), false, "no output");
      const check = await runVid(["check", dir, "--json"]);
      assert.notEqual(check.code, 0);
      assert.ok(check.stdout.includes(`did not load`) && check.stdout.includes("vid add gsap"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("a stylesheet from a host that does not answer is named too", async () => {
    // (A missing file of the project itself is named before the page opens, as before.)
    const dir = await makeProject(
      `<!doctype html><html><head><link rel="stylesheet" href="http://127.0.0.1:9/a.css">` +
        `</head><body><div id="root" data-composition-id="m" data-width="320" ` +
        `data-height="180" data-duration="1"></div></body></html>`,
    );
    try {
      const result = await runVid(["render", dir, "-o", join(dir, "out.mp4")]);
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        /error: <link rel="stylesheet" href="http:\/\/127\.0\.0\.1:9\/a\.css"> did not load .*copy the file into the project folder and point the <link> at it/,
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});

describe("frame 0", () => {
  // Before: GSAP renders nothing when a fresh paused timeline is seeked to where it already is,
  // so the root's set() at 0 and the from() start showed from frame 1 only.
  const expectAt0 = async (frame0: (x: number, y: number) => Promise<number[]>) => {
    for (const [y, colour] of [[30, "red"], [90, "green"], [150, "blue"]] as const) {
      assert.equal(named(await frame0(260, y)), colour, `${colour} box at x=240 on frame 0`);
      assert.equal(named(await frame0(20, y)), "black", `${colour} box not at its CSS place`);
    }
  };

  it("vid render draws the timelines' set() and from() start states at t = 0, root and sub-composition", async () => {
    const dir = join(work, "first-frame");
    await copyFile(GSAP, join(dir, "gsap.min.js"));
    const output = join(work, "first-frame.mp4");
    await render(dir, output, ["--workers", "2"]);
    await expectAt0(async (x, y) => (await pixelSeries(output, x, y))[0]);
    // The from() reaches its CSS place at 1 s: mid-way at 0.5 s.
    const middle = await pixelSeries(output, 140, 90);
    assert.equal(named(middle[15]), "green");
  });

  it("vid still --time 0 draws the same", async () => {
    const dir = join(work, "first-frame");
    await copyFile(GSAP, join(dir, "gsap.min.js"));
    const output = join(work, "first-frame.png");
    const result = await runVid(["still", dir, "--time", "0", "-o", output]);
    assert.equal(result.code, 0, result.stderr);
    await expectAt0(async (x, y) => (await pixelSeries(output, x, y))[0]);
  });
});

describe("clips", () => {
  it("show on exactly the frames of their window, in document order whatever the track", async () => {
    const output = join(work, "clips.mp4");
    await render(join(work, "clips"), output, ["--workers", "2"]);
    const [left, right, inner] = await Promise.all([
      pixelSeries(output, 80, 150),
      pixelSeries(output, 240, 150),
      pixelSeries(output, 240, 40),
    ]);
    const expect = (ranges: [number, number, string][]) =>
      Array.from(
        { length: 30 },
        (_, n) => ranges.find(([a, b]) => n >= a && n <= b)?.[2] ?? "black",
      );
    // #a 0.2-0.5 s; #c 0.6-1 s (track 5) under #d 0.8-1 s (track 1, later in the document).
    assert.deepEqual(
      left.map(named),
      expect([[6, 14, "red"], [18, 23, "blue"], [24, 29, "white"]]),
    );
    // #b from when #a ends for 0.3 s; #e 0.8 s to data-end 0.9 s.
    assert.deepEqual(right.map(named), expect([[15, 23, "green"], [24, 26, "yellow"]]));
    // #f's own window is the whole second, but it shows only while #b, around it, does.
    assert.deepEqual(inner.map(named), expect([[15, 23, "magenta"], [24, 26, "yellow"]]));
  });
});

describe("sub-compositions", () => {
  it("vid render draws the project frame for frame as the single-file composition", async () => {
    const output = join(work, "project.mp4");
    await render(project, output);
    const frames = await rgbFrames(output, 320, 180);
    assertSameFrames(frames, reference, "vid render of the project");
    // And what the single file draws is what the fixtures say: nothing before A's host starts
    // at 0.2 s (frame 6); B (nested in A at 0.3 s: 0.5 s) green by its host's
    // data-variable-values over its blue default; C's CSS bar from 0.4 s.
    const at = (n: number, x: number, y: number) => {
      const i = (y * 320 + x) * 3;
      return named(Array.from(frames[n].subarray(i, i + 3)));
    };
    assert.deepEqual([at(5, 30, 40), at(6, 30, 40)], ["black", "red"]);
    assert.deepEqual([at(14, 30, 130), at(15, 30, 130)], ["black", "green"]);
    assert.deepEqual([at(27, 30, 130), at(27, 230, 130)], ["black", "black"]);
    assert.deepEqual([at(21, 100, 170), at(22, 100, 170)], ["black", "yellow"]);
  });

  it("vid still of a frame is the single-file composition's still of it", async () => {
    const stills = await Promise.all([project, single].map(async (dir) => {
      const output = join(work, `${dir === project ? "project" : "single"}-22.png`);
      const result = await runVid(["still", dir, "--frame", "22", "-o", output]);
      assert.equal(result.code, 0, result.stderr);
      return (await rgbFrames(output, 320, 180))[0];
    }));
    assertSameFrames([stills[0]], [stills[1]], "vid still --frame 22", 0);
  });

  it("--variables reach the top-level composition only, not a sub-composition instance", async () => {
    const output = join(work, "project-20.png");
    const result = await runVid([
      "still",
      project,
      "--frame",
      "20",
      "-o",
      output,
      "--variables",
      '{"fill":"#ff00ff"}',
    ]);
    assert.equal(result.code, 0, result.stderr);
    // B's box, 83 px along at frame 20, keeps its host's data-variable-values.
    const [pixel] = await pixelSeries(output, 113, 130);
    assert.equal(named(pixel), "green");
  });

  it("npm run render renders with vid once the project's script names it", async () => {
    // As docs/hyperframes.md says, with this Deno in place of `npx --yes deno@2`.
    await Deno.writeTextFile(
      join(project, "package.json"),
      JSON.stringify({
        private: true,
        scripts: { render: `${Deno.execPath()} run -A ${join(ROOT, "cli.ts")} render` },
      }),
    );
    try {
      const out = await new Deno.Command("npm", {
        args: ["run", "render", "--", "-o", "npm.mp4"],
        cwd: project,
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      assertSameFrames(
        await rgbFrames(join(project, "npm.mp4"), 320, 180),
        reference,
        "npm run render",
      );
    } finally {
      await Deno.remove(join(project, "package.json"));
      await Deno.remove(join(project, "npm.mp4")).catch(() => {});
    }
  });

  it("vid info lists the hosts, nested ones under theirs", async () => {
    const result = await runVid(["info", project]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stdout,
      /sub-compositions\n {4}a {2}compositions\/a\.html {2}at 0\.2 s for 0\.8 s\n {6}b {2}compositions\/b\.html {2}at 0\.3 s for 0\.4 s\n {4}c {2}compositions\/c\.html {2}at 0\.4 s for 0\.6 s/,
    );
  });

  it("vid server renders the uploaded project the same (its zip carries compositions/)", async () => {
    const output = join(work, "server", "video.mp4");
    const tmp = await Deno.makeTempDir({ prefix: "vid-hyperframes-server-" });
    try {
      const result = await new Deno.Command("bash", {
        args: [join(ROOT, "examples", "server_quickstart.sh"), project, output],
        cwd: ROOT,
        env: { TMPDIR: tmp },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).output();
      assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
    } finally {
      await Deno.remove(tmp, { recursive: true });
    }
    assertSameFrames(await scaledFrames(output), reference, "vid server's render", 3);
  });

  it("a host whose file is missing fails the render before its first frame, naming it", async () => {
    const broken = await makeProject(
      (await Deno.readTextFile(join(project, "index.html"))).replace(
        "compositions/c.html",
        "compositions/gone.html",
      ),
      {
        "compositions/a.html": await Deno.readTextFile(join(project, "compositions", "a.html")),
        "compositions/b.html": await Deno.readTextFile(join(project, "compositions", "b.html")),
      },
    );
    try {
      await copyFile(GSAP, join(broken, "gsap.min.js"));
      const output = join(broken, "out.mp4");
      const result = await runVid(["render", broken, "-o", output]);
      assert.equal(result.code, 1, result.stderr);
      // The check every render runs first names it, with its place.
      assert.match(
        result.stderr,
        /index\.html:\d+:\d+: error: <div data-composition-src> "compositions\/gone\.html" does not exist in the project; the sub-composition it hosts would not be rendered/,
      );
      assert.equal(await Deno.stat(output).then(() => true, () => false), false);
      const info = await runVid(["info", broken]);
      assert.match(
        info.stdout,
        /c {2}compositions\/gone\.html {2}at 0\.4 s for 0\.6 s {2}\(no such file\)/,
      );
    } finally {
      await Deno.remove(broken, { recursive: true });
    }
  });
});

describe("fonts HyperFrames embeds", () => {
  const body = `<body><div id="root" data-composition-id="fonts" data-width="320" ` +
    `data-height="180" data-duration="1"><h1>Wg</h1><div data-composition-src="compositions/title.html" ` +
    `data-start="0" data-duration="1"></div></div></body></html>`;
  const style = `html, body { margin: 0; background: #fff; } ` +
    `h1 { font: 700 64px "Montserrat", serif; margin: 0; color: #000; }`;
  const title = `<template><div data-composition-id="title">` +
    `<p style="font: 400 40px Inter, serif; margin: 0">Wg</p></div></template>`;
  /** The page as HyperFrames writes it: the families named, no @font-face. */
  const undeclared = () =>
    makeProject(`<!doctype html><html><head><style>${style}</style></head>${body}`, {
      "compositions/title.html": title,
    });
  /** Frame 0 of a render, and its stderr. */
  const frame = async (
    project: string,
    name: string,
    env?: Record<string, string>,
  ): Promise<[Uint8Array, string]> => {
    const out = join(project, name);
    const result = await runVid(["render", project, "-o", out, "--frames", "0-0"], { env });
    assert.equal(result.code, 0, result.stderr);
    return [(await rgbFrames(out, 320, 180))[0], result.stderr];
  };
  const fontFindings = async (dir: string, env?: Record<string, string>): Promise<string[]> => {
    const check = await runVid(["check", dir, "--json"], { env });
    const { problems } = JSON.parse(check.stdout);
    return problems.filter((p: { kind: string }) => p.kind.startsWith("font"))
      .map((p: { severity: string; field: string; message: string }) =>
        `${p.severity} ${p.field}: ${p.message.split("; ").at(-1)}`
      );
  };

  // The registry is asked once per machine: the verified tarball and the faces stay in vid's
  // cache. Before, the render warned and drew a fallback font until `vid add`.
  it("are embedded with no command: the render draws what a page declaring the same files draws", async () => {
    const dir = await undeclared();
    const declared = await makeProject(
      `<!doctype html><html><head><style>${style}
@font-face { font-family: Montserrat; font-weight: 700; src: url(fonts/montserrat-latin-700-normal.woff2); }
@font-face { font-family: Inter; font-weight: 400; src: url(fonts/inter-latin-400-normal.woff2); }
</style></head>${body}`,
      { "compositions/title.html": title },
    );
    try {
      const [embedded, quiet] = await frame(dir, "embedded.mp4");
      assert.doesNotMatch(quiet, /font "/);
      assert.deepEqual(await fontFindings(dir), []);

      const [fallback, warned] = await frame(dir, "off.mp4", { VID_HYPERFRAMES_FONTS: "0" });
      assert.match(
        warned,
        /warning: font "Montserrat" has no @font-face in the project: HyperFrames embeds it from @fontsource\/montserrat; vid cannot embed it here \(VID_HYPERFRAMES_FONTS turns embedding off\) and draws a fallback font instead; run `vid add montserrat` in the project/,
      );
      assert.match(warned, /font "Inter" .*run `vid add inter`/);
      const changed = imageDifference(fallback, embedded);
      assert.ok(
        changed.share > 0.01,
        `Montserrat and Inter differ from the fallback: ${JSON.stringify(changed)}`,
      );

      // vid add still copies the files into a project that wants them in its own tree.
      const add = await runVid(["add", "montserrat", "inter", "--dir", declared, "--json"]);
      assert.equal(add.code, 0, add.stderr);
      const added = JSON.parse(add.stdout).libraries;
      assert.deepEqual(added.map((l: { package: string }) => l.package), [
        "@fontsource/montserrat",
        "@fontsource/inter",
      ]);
      assert.equal(added[0].version, "5.3.0");
      const [explicit] = await frame(declared, "declared.mp4");
      const same = imageDifference(explicit, embedded);
      assert.ok(same.mean < 0.5, `equal to the explicit @font-face page: ${JSON.stringify(same)}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(declared, { recursive: true });
    }
  });

  it("travel in the project's zip, so a render with no registry and no cache draws them", async () => {
    const dir = await undeclared();
    const remote = await Deno.makeTempDir({ prefix: "vid-test-remote-" });
    const cache = await Deno.makeTempDir({ prefix: "vid-test-cache-" });
    try {
      const [local] = await frame(dir, "local.mp4");
      const pkg = await packageProject(dir, { exclude: [join(dir, "local.mp4")] });
      const paths = pkg.files.map((f) => f.path);
      for (const weight of ["400", "700", "900"]) {
        assert.ok(paths.includes(`.vid/fonts/montserrat-latin-${weight}-normal.woff2`), weight);
        assert.ok(paths.includes(`.vid/fonts/inter-latin-${weight}-normal.woff2`), weight);
      }
      for (const [path, bytes] of Object.entries(unzipSync(pkg.zip))) {
        await Deno.mkdir(join(remote, path, ".."), { recursive: true });
        await Deno.writeFile(join(remote, path), bytes);
      }
      // As on a render host: an empty cache and no registry (port 9 on loopback refuses).
      const offline = { VID_CACHE_DIR: cache, NPM_CONFIG_REGISTRY: "http://127.0.0.1:9" };
      const [there, stderr] = await frame(remote, "remote.mp4", offline);
      assert.doesNotMatch(stderr, /font "/);
      const same = imageDifference(there, local);
      assert.ok(same.mean < 0.5, `the remote render draws the same: ${JSON.stringify(same)}`);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(remote, { recursive: true });
      await Deno.remove(cache, { recursive: true });
    }
  });

  it("one that cannot be had (no cache, no registry) is named with vid add; Inter, vid's own, is drawn", async () => {
    const dir = await undeclared();
    const cache = await Deno.makeTempDir({ prefix: "vid-test-cache-" });
    try {
      const offline = { VID_CACHE_DIR: cache, NPM_CONFIG_REGISTRY: "http://127.0.0.1:9" };
      const [, warned] = await frame(dir, "offline.mp4", offline);
      assert.match(
        warned,
        /warning: font "Montserrat" has no @font-face in the project: HyperFrames embeds it from @fontsource\/montserrat; vid cannot embed it here \(http:\/\/127\.0\.0\.1:9\/@fontsource%2fmontserrat\/5\.3\.0 did not answer .*\) and draws a fallback font instead; run `vid add montserrat`/,
      );
      assert.doesNotMatch(warned, /font "Inter"/);
      assert.deepEqual(await fontFindings(dir, offline), [
        "warning Montserrat: run `vid add montserrat` in the project to copy its files into fonts/ and link fonts/montserrat.css from index.html",
      ]);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(cache, { recursive: true });
    }
  });

  it("a family that cannot be fetched is named with its package, exit 1, nothing written", async () => {
    const dir = await makeProject(`<!doctype html><html><head></head><body></body></html>`);
    const cache = await Deno.makeTempDir({ prefix: "vid-test-cache-" });
    try {
      // Port 9 (discard) on loopback: nothing listens, so the registry refuses at once.
      const result = await runVid(["add", "outfit", "--dir", dir], {
        env: { XDG_CACHE_HOME: cache, NPM_CONFIG_REGISTRY: "http://127.0.0.1:9" },
      });
      assert.equal(result.code, 1, result.stderr);
      assert.match(
        result.stderr,
        /cannot add the font outfit \(npm @fontsource\/outfit\): http:\/\/127\.0\.0\.1:9\/@fontsource%2foutfit\/5\.3\.0 did not answer .*NPM_CONFIG_REGISTRY/,
      );
      assert.equal(await Deno.stat(join(dir, "fonts")).then(() => true, () => false), false);
      const unknown = await runVid(["add", "comic-sans", "--dir", dir]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /unknown library comic-sans; .* or a font: montserrat, outfit/);
    } finally {
      await Deno.remove(dir, { recursive: true });
      await Deno.remove(cache, { recursive: true });
    }
  });
});

describe("as HyperFrames renders what a page leaves to it", () => {
  /** Frame 0 of `file` in the fixture folder `folder`, rendered by vid. */
  const frame0 = async (folder: string, file: string): Promise<Uint8Array> => {
    const out = join(work, `${folder}-${file}.mp4`);
    await render(join(work, folder), out, ["--composition", file, "--frames", "0-0"]);
    return (await rgbFrames(out, 320, 180))[0];
  };

  // HyperFrames' renderer gives `Helvetica` an @font-face with Inter's files (its alias table:
  // Arial, SF Mono, Georgia, … likewise), and embeds every family of a stack it knows, not
  // only the first. Inter is vid's own dependency, so this needs no registry.
  it("system families HyperFrames maps are drawn with its embedded family, in a HyperFrames project only", async () => {
    const inter = await frame0("font-aliases", "inter.html");
    const mapped = await frame0("font-aliases", "index.html");
    const same = imageDifference(mapped, inter);
    assert.ok(
      same.mean < 0.5,
      `Helvetica and "Nunito Sans", Inter are Inter: ${JSON.stringify(same)}`,
    );
    // Without HyperFrames' markers (data-track-index here) the page is vid's own: Helvetica is
    // the system's font, as vid's compositions expect.
    const plain = await frame0("font-aliases", "plain.html");
    const changed = imageDifference(plain, inter);
    assert.ok(
      changed.share > 0.005,
      `a vid page keeps the system font: ${JSON.stringify(changed)}`,
    );
  });

  // The seek ends moving forward, as HyperFrames' does: GSAP renders a timeline moving back
  // in reverse order, so the entrance fromTo() overwrote the exit to() and the caption stayed
  // fully opaque (HyperFrames' vignelli example, 19 dB apart on those frames).
  it("overlapping tweens of one property: the later one wins, frame by frame", async () => {
    const dir = join(work, "overlap");
    await copyFile(GSAP, join(dir, "gsap.min.js"));
    const out = join(work, "overlap.mp4");
    await render(dir, out, ["--fps", "10"]);
    const grey = (await rgbFrames(out, 320, 180)).map((f) => f[3 * (90 * 320 + 140)]);
    // Opacity (white on black) at 0.3 s: entrance; 0.4 s and 0.5 s: the exit's expo.out.
    assert.ok(grey[3] > 200 && grey[4] > 15 && grey[4] < 70 && grey[5] < 15, `${grey}`);
  });

  it("a root without data-duration lasts until its last sub-composition ends", async () => {
    const out = join(work, "no-duration.mp4");
    await render(join(work, "no-duration"), out);
    const frames = await rgbFrames(out, 320, 180);
    const centre = (f: Uint8Array): string =>
      named(Array.from(f.subarray(3 * (90 * 320 + 160), 3 * (90 * 320 + 160) + 3)));
    assert.deepEqual(
      [
        frames.length,
        centre(frames[0]),
        centre(frames[14]),
        centre(frames[15]),
        centre(frames[29]),
      ],
      [30, "red", "red", "blue", "blue"],
    );
  });
});

describe("media in clips and sub-compositions", () => {
  it("is heard (and a <video> clip seen) only inside its window", async () => {
    const dir = await makeProject(
      `<!doctype html><html><head><style>html, body { margin: 0; background: #000; }</style></head>
<body><div id="root" data-composition-id="sound" data-width="320" data-height="180" data-duration="2">
  <div id="scene" class="clip" data-start="0.3" data-duration="0.4"><audio src="tone.wav"></audio></div>
  <div id="host" data-composition-id="later" data-composition-src="compositions/later.html" data-start="1.2" data-duration="0.5"></div>
  <video class="clip" src="white.mp4" muted data-start="0.5" data-duration="0.5"
    style="position: absolute; left: 0; top: 0; width: 320px; height: 180px"></video>
</div></body></html>`,
      {
        "compositions/later.html":
          `<template><div data-composition-id="later"><audio src="tone.wav" data-start="0.1"></audio></div></template>`,
      },
    );
    try {
      await Promise.all([
        lavfi("sine=frequency=440:duration=2:sample_rate=44100", join(dir, "tone.wav")),
        lavfi("color=white:s=320x180:r=30:d=2", join(dir, "white.mp4"), ["-pix_fmt", "yuv420p"]),
      ]);
      const output = join(dir, "out.mp4");
      await render(dir, output);
      // A <video> with class="clip" shows only in its window (frames 15-29), as in HyperFrames.
      const shown = (await pixelSeries(output, 160, 90)).map((c) => named(c) === "white");
      assert.deepEqual(
        shown.flatMap((white, n) => white ? [n] : []),
        Array.from({ length: 15 }, (_, k) => 15 + k),
      );
      const levels = await Promise.all(
        [[0.05, 0.25], [0.35, 0.65], [0.75, 1.25], [1.35, 1.65], [1.75, 1.95]].map(([a, b]) =>
          rmsDb(output, a, b)
        ),
      );
      const loud = levels.map((db) => db > -30);
      // The clip's 0.3-0.7 s; the sub-composition's sound at 1.2 + 0.1 s, to its host's end 1.7 s.
      assert.deepEqual(loud, [false, true, false, true, false], `levels ${levels.join(", ")} dB`);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});
