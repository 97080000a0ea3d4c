/**
 * `vid preview` driven as a person would: the real command on loopback, the studio in
 * real Chromium through puppeteer-core, pixels read from screenshots of the stage and
 * compared with frames of a real `vid render`, file edits on disk, a real render from
 * the Render button, Ctrl-C at the end.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { findChromium } from "../../src/render/system.ts";
import { type PreviewProcess, runFfmpeg, startPreviewProcess } from "../preview_process.ts";
import { injectRuntime } from "../../src/preview/inject.ts";
import { checkStudioValues } from "../../src/preview/server.ts";
import { imageDifference, probeVideo, ROOT, runVid, STUCK_UNTIL_RESEEKED } from "../helpers.ts";

const FIXTURE = `${ROOT}tests/fixtures/preview`;
const WIDTH = 320;
const HEIGHT = 180;

/** RGB bytes of a PNG. */
function decodePng(png: Uint8Array): Promise<Uint8Array> {
  return runFfmpeg(
    ["-f", "png_pipe", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
    png,
  );
}

/** RGB bytes of frame `n` of a video. */
function videoFrame(file: string, n: number): Promise<Uint8Array> {
  return runFfmpeg([
    "-i",
    file,
    "-vf",
    `select=eq(n\\,${n})`,
    "-frames:v",
    "1",
    "-f",
    "rawvideo",
    "-pix_fmt",
    "rgb24",
    "-",
  ]);
}

function pixel(rgb: Uint8Array, x: number, y: number): number[] {
  const i = (y * WIDTH + x) * 3;
  return [rgb[i], rgb[i + 1], rgb[i + 2]];
}

function near(actual: number[], expected: number[], tolerance = 12): boolean {
  return actual.every((v, i) => Math.abs(v - expected[i]) <= tolerance);
}

interface StageState {
  state: string;
  frame: number;
  generation: number;
}

async function stageState(page: Page): Promise<StageState> {
  return await page.$eval("#stage", (el) => {
    const d = (el as HTMLElement).dataset;
    return { state: d.state ?? "", frame: Number(d.frame), generation: Number(d.generation) };
  });
}

/** Waits until the stage shows `frame`, ready, loaded more than `afterGeneration` times. */
async function waitForStage(page: Page, frame: number, afterGeneration = 0): Promise<void> {
  await page.waitForFunction(
    (f: number, g: number) => {
      const d = document.getElementById("stage")!.dataset;
      return d.state === "ready" && d.frame === String(f) && Number(d.generation) > g;
    },
    { timeout: 20000 },
    frame,
    afterGeneration,
  );
}

/** The stage's pixels (the studio is at 100% zoom with device scale 1). */
async function stagePixels(page: Page): Promise<Uint8Array> {
  const box = await page.$("#stage-box");
  const png = await box!.screenshot({ type: "png" });
  const rgb = await decodePng(png);
  assert.equal(rgb.length, WIDTH * HEIGHT * 3, "the stage is 320x180 at 100%");
  return rgb;
}

/** Opens the render dialog, optionally sets its fields, and starts the render. */
async function startRenderFromDialog(
  page: Page,
  fields: { format?: string; quality?: string; from?: number; to?: number; name?: string } = {},
): Promise<void> {
  await page.click("#render");
  await page.waitForSelector("#render-dialog[open]");
  if (fields.format) await page.select("#render-format", fields.format);
  if (fields.quality) await page.select("#render-quality", fields.quality);
  for (const [id, value] of [["from", fields.from], ["to", fields.to], ["name", fields.name]]) {
    if (value === undefined) continue;
    await page.$eval(`#render-${id}`, (el, v) => (el as HTMLInputElement).value = String(v), value);
  }
  await page.click("#render-start");
  await page.waitForSelector("#render-dialog:not([open])");
}

async function scrubTo(page: Page, frame: number): Promise<void> {
  await page.$eval("#scrubber", (el, f) => {
    const input = el as HTMLInputElement;
    input.value = String(f);
    input.dispatchEvent(new Event("input", { bubbles: true }));
  }, frame);
}

describe("vid preview studio", () => {
  let work: string;
  let project: string;
  let preview: PreviewProcess;
  let browser: Browser;
  let page: Page;
  let reference: Promise<string>;

  before(async () => {
    work = await Deno.makeTempDir({ prefix: "vid-preview-test-" });
    project = `${work}/project`;
    await Deno.mkdir(project);
    await Deno.copyFile(`${FIXTURE}/index.html`, `${project}/index.html`);
    // The reference video renders while the studio is driven.
    const output = `${work}/reference.mp4`;
    reference = runVid(["render", FIXTURE, "--output", output]).then((r) => {
      assert.equal(r.code, 0, r.stderr);
      return output;
    });
    const executablePath = await findChromium();
    assert.ok(executablePath, "chromium is installed");
    [preview, browser] = await Promise.all([
      startPreviewProcess(project),
      puppeteer.launch({
        executablePath,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--force-color-profile=srgb", "--hide-scrollbars"],
      }),
    ]);
    page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 700, deviceScaleFactor: 1 });
    await page.goto(preview.url);
    await waitForStage(page, 0);
  });

  after(async () => {
    await browser?.close();
    try {
      preview?.child.kill("SIGKILL");
    } catch {
      // already stopped by the last test
    }
    await preview?.done;
    await reference?.catch(() => undefined);
    await Deno.remove(work, { recursive: true });
  });

  it("prints its URL and shows the stage at the composition's aspect ratio, scaled to fit", async () => {
    assert.match(preview.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    assert.equal(new URL(preview.url).port, String(preview.port));
    const box = await page.$eval("#stage-box", (el) => {
      const r = el.getBoundingClientRect();
      return { width: r.width, height: r.height };
    });
    assert.ok(box.width > WIDTH * 2, `scaled up to fit the area: ${box.width}px wide`);
    assert.ok(Math.abs(box.width / box.height - 16 / 9) < 0.01, `16:9: ${box.width}x${box.height}`);
    assert.match(
      await page.$eval("#title", (el) => el.textContent!),
      /320×180 \(16:9\).*30 frames/,
    );
    assert.equal(await page.$eval("#frame-readout", (el) => el.textContent), "frame 0 / 29");
    const labels = await page.$$eval("#var-layout option", (os) => os.map((o) => o.textContent));
    assert.deepEqual(labels, ["Layout A", "Layout B"], "enum options show their labels");
    assert.equal(
      await page.$eval("#var-accent", (el) => (el as HTMLInputElement).value),
      "#ff0000",
    );
    assert.equal(await page.$eval("#var-size", (el) => (el as HTMLInputElement).type), "number");
    assert.equal(await page.$eval("#var-solid", (el) => (el as HTMLInputElement).checked), true);
    await page.select("#zoom", "1");
    await page.evaluate(() => (globalThis as unknown as { studioMarker: number }).studioMarker = 1);
  });

  it("a paused frame equals that frame of `vid render`, after scrubbing forward and back", async () => {
    await scrubTo(page, 20);
    await waitForStage(page, 20);
    const before = (await stageState(page)).generation;
    await scrubTo(page, 15);
    await waitForStage(page, 15, before);
    assert.equal(await page.$eval("#time-readout", (el) => el.textContent), "0.500 s / 1.000 s");
    const studio = await stagePixels(page);
    const video = await reference;
    const same = imageDifference(studio, await videoFrame(video, 15));
    const other = imageDifference(studio, await videoFrame(video, 5));
    assert.ok(same.mean < 3 && same.share < 0.01, `frame 15 vs frame 15: ${JSON.stringify(same)}`);
    assert.ok(other.share > 0.03, `frame 15 vs frame 5 must differ: ${JSON.stringify(other)}`);
  });

  it("arrow keys move by one frame; space plays and pauses", async () => {
    await page.focus("#play");
    await page.keyboard.press("ArrowRight");
    await waitForStage(page, 16);
    assert.equal(await page.$eval("#frame-readout", (el) => el.textContent), "frame 16 / 29");
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.press("ArrowLeft");
    await waitForStage(page, 14);
    const time = await page.$eval(
      "#stage iframe",
      (el) =>
        ((el as HTMLIFrameElement).contentWindow as unknown as { __vid: { time: number } })
          .__vid.time,
    );
    assert.ok(Math.abs(time - 14 / 30) < 1e-9, `the composition is at t = 14/30 s, got ${time}`);
    await page.keyboard.press("Space");
    await page.waitForFunction(
      () => Number(document.getElementById("stage")!.dataset.frame) >= 20,
      { timeout: 10000 },
    );
    await page.keyboard.press("Space");
    assert.equal(await page.$eval("#play", (el) => el.textContent), "Play");
    const stopped = (await stageState(page)).frame;
    // Deliberate: lets time pass (nothing to wait for) to show that nothing moves.
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal((await stageState(page)).frame, stopped, "paused: the frame stays put");
  });

  it("a colour change updates the composition's pixel without reloading the studio", async () => {
    await scrubTo(page, 10);
    await waitForStage(page, 10);
    const red = pixel(await stagePixels(page), 50, 90);
    assert.ok(near(red, [255, 0, 0]), `default accent is red, got ${red}`);
    const before = (await stageState(page)).generation;
    await page.$eval("input[data-picker=accent]", (el) => {
      const picker = el as HTMLInputElement;
      picker.value = "#00ff00";
      picker.dispatchEvent(new Event("input", { bubbles: true }));
    });
    await waitForStage(page, 10, before);
    const green = pixel(await stagePixels(page), 50, 90);
    assert.ok(near(green, [0, 255, 0]), `accent is now green, got ${green}`);
    assert.equal(
      await page.$eval("#var-accent", (el) => (el as HTMLInputElement).value),
      "#00ff00",
    );
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as { studioMarker?: number }).studioMarker),
      1,
      "the studio page itself was not reloaded",
    );
  });

  it("an invalid value shows the CLI's message inline; copy gives the --variables JSON", async () => {
    const cli = runVid(["validate", project, "--variables", '{"accent":"notacolour"}', "--json"]);
    await page.click("#var-accent", { count: 3 });
    await page.keyboard.type("notacolour");
    await page.waitForFunction(
      () => document.getElementById("problem-accent")!.textContent !== "",
      { timeout: 10000 },
    );
    const shown = await page.$eval("#problem-accent", (el) => el.textContent);
    const expected =
      (JSON.parse((await cli).stdout) as { problems: { message: string }[] }).problems[0];
    assert.equal(shown, expected.message);
    assert.match(shown!, /"accent" \(color\) expects a CSS colour/);
    assert.ok(await page.$eval(".field[data-id=accent]", (el) => el.classList.contains("invalid")));

    await startRenderFromDialog(page);
    await page.waitForFunction(() => document.getElementById("render-message")!.textContent !== "");
    assert.match(
      await page.$eval("#render-message", (el) => el.textContent!),
      /fix the marked values before rendering: "accent" \(color\) expects/,
    );

    await page.click("#reset");
    await page.waitForFunction(() => document.getElementById("problem-accent")!.textContent === "");
    assert.equal(
      await page.$eval("#var-accent", (el) => (el as HTMLInputElement).value),
      "#ff0000",
    );
    await page.click("#var-size", { count: 3 });
    await page.keyboard.type("24");
    await page.select("#var-layout", "b");
    await page.click("#var-solid");
    await page.waitForFunction(
      () => document.getElementById("variables-json")!.textContent?.includes('"solid"'),
      { timeout: 10000 },
    );
    const json = await page.$eval("#variables-json", (el) => el.textContent!);
    assert.deepEqual(JSON.parse(json), { size: 24, solid: false, layout: "b" });
    const strict = await runVid(["validate", project, "--strict-variables", "--variables", json]);
    assert.equal(strict.code, 0, `the copied JSON passes strict checking: ${strict.stderr}`);
  });

  it("an edit to a project file reloads the stage", async () => {
    const changed = (await stageState(page)).generation;
    await page.click("#reset");
    await waitForStage(page, 10, changed);
    const before = (await stageState(page)).generation;
    const blue = pixel(await stagePixels(page), 300, 170);
    assert.ok(near(blue, [0, 0, 255]), `the corner starts blue, got ${blue}`);
    const file = `${project}/index.html`;
    const html = await Deno.readTextFile(file);
    await Deno.writeTextFile(file, html.replace("background: #0000ff", "background: #ffff00"));
    await waitForStage(page, 10, before);
    const yellow = pixel(await stagePixels(page), 300, 170);
    assert.ok(near(yellow, [255, 255, 0]), `the corner is yellow after the edit, got ${yellow}`);
    assert.equal(
      await page.evaluate(() => (globalThis as unknown as { studioMarker?: number }).studioMarker),
      1,
      "only the stage reloaded",
    );
  });

  it("the Render button renders into renders/, one at a time, and links the file", async () => {
    const before = (await stageState(page)).generation;
    await startRenderFromDialog(page);
    await startRenderFromDialog(page);
    await page.waitForFunction(
      () => document.getElementById("render-message")!.dataset.kind === "busy",
      { timeout: 10000 },
    );
    assert.match(
      await page.$eval("#render-message", (el) => el.textContent!),
      /a render is already running/,
    );
    await page.waitForSelector("#render-link", { timeout: 60000 });
    const href = await page.$eval("#render-link", (el) => (el as HTMLAnchorElement).href);
    const response = await fetch(href);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "video/mp4");
    const bytes = new Uint8Array(await response.arrayBuffer());
    const name = decodeURIComponent(href.split("/").at(-1)!);
    assert.match(name, /^preview-fixture-\d{8}-\d{6}\.mp4$/);
    const onDisk = await Deno.readFile(`${project}/renders/${name}`);
    assert.equal(bytes.length, onDisk.length, "the link serves the rendered file");
    const video = await probeVideo(`${project}/renders/${name}`);
    assert.equal(video.frames, 30);
    assert.equal(`${video.width}x${video.height}`, "320x180");
    // The edited corner (yellow) is in the render too: it used the project as it is now.
    const corner = pixel(await videoFrame(`${project}/renders/${name}`, 10), 300, 170);
    assert.ok(near(corner, [255, 255, 0], 24), `rendered corner is yellow, got ${corner}`);
    // Deliberate: lets the watcher's debounce pass, to show that it does nothing.
    await new Promise((resolve) => setTimeout(resolve, 400));
    assert.equal((await stageState(page)).generation, before, "writing renders/ reloads nothing");
  });

  it("refuses a busy port with a clear error and stops cleanly on Ctrl-C", async () => {
    const busy = await runVid(["preview", project, "--port", String(preview.port)]);
    assert.equal(busy.code, 1);
    assert.match(
      busy.stderr,
      new RegExp(`--port ${preview.port}: the port is already in use.*--port 0 for any free one`),
    );
    preview.child.kill("SIGINT");
    const status = await preview.done;
    assert.equal(status.code, 0, preview.stderr());
    assert.match(preview.stderr(), /vid preview: stopped/);
  });
});

/** A clip whose every frame has its own flat colour, far from its neighbours'. */
const CLIP_FILTER = (shift: number) =>
  `color=black:s=320x180:r=25:d=1,format=yuv444p,` +
  `geq=lum='32+mod((N+${shift})*71\\,190)':cb='64+mod((N+${shift})*37\\,128)':` +
  `cr='64+mod((N+${shift})*53\\,128)'`;

const VIDEO_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: 320px; height: 180px; overflow: hidden; background: #000; }
video { position: absolute; left: 0; top: 0; width: 320px; height: 180px; object-fit: fill; }
</style></head><body>
<div id="root" data-composition-id="preview-video" data-width="320" data-height="180"
  data-duration="1"><video src="clip.mp4" muted></video></div>
</body></html>
`;

async function makeClip(file: string, shift: number): Promise<void> {
  await runFfmpeg([
    "-y",
    "-f",
    "lavfi",
    "-i",
    CLIP_FILTER(shift),
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
    "-g",
    "25",
    "-bf",
    "2",
    file,
  ]);
}

describe("vid preview studio with a HyperFrames project", () => {
  let work: string;
  let preview: PreviewProcess;
  let browser: Browser;
  let page: Page;
  let reference: Promise<string>;

  before(async () => {
    work = await Deno.makeTempDir({ prefix: "vid-preview-hyperframes-test-" });
    const fixtures = `${ROOT}tests/fixtures/hyperframes`;
    const gsap = `${ROOT}node_modules/gsap/dist/gsap.min.js`;
    await Deno.mkdir(`${work}/project/compositions`, { recursive: true });
    await Deno.mkdir(`${work}/single`);
    for (const file of ["index.html", "compositions/a.html", "compositions/b.html"]) {
      await Deno.copyFile(`${fixtures}/project/${file}`, `${work}/project/${file}`);
    }
    await Deno.copyFile(
      `${fixtures}/project/compositions/c.html`,
      `${work}/project/compositions/c.html`,
    );
    await Deno.copyFile(`${fixtures}/single/index.html`, `${work}/single/index.html`);
    await Deno.copyFile(gsap, `${work}/project/gsap.min.js`);
    await Deno.copyFile(gsap, `${work}/single/gsap.min.js`);
    // What the project draws, as one file (tests/integration/hyperframes_test.ts holds the two equal).
    const output = `${work}/reference.mp4`;
    reference = runVid(["render", `${work}/single`, "--output", output]).then((r) => {
      assert.equal(r.code, 0, r.stderr);
      return output;
    });
    const executablePath = await findChromium();
    assert.ok(executablePath, "chromium is installed");
    [preview, browser] = await Promise.all([
      startPreviewProcess(`${work}/project`),
      puppeteer.launch({
        executablePath,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--force-color-profile=srgb", "--hide-scrollbars"],
      }),
    ]);
    page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 700, deviceScaleFactor: 1 });
    await page.goto(preview.url);
    await waitForStage(page, 0);
    await page.select("#zoom", "1");
  });

  after(async () => {
    await browser?.close();
    preview?.child.kill("SIGINT");
    await preview?.done;
    await reference?.catch(() => undefined);
    await Deno.remove(work, { recursive: true });
  });

  it("the stage shows the sub-compositions on their own clocks, as the render of the same drawing in one file", async () => {
    for (const frame of [22, 8]) {
      await scrubTo(page, frame);
      await waitForStage(page, frame);
      const studio = await stagePixels(page);
      const same = imageDifference(studio, await videoFrame(await reference, frame));
      assert.ok(same.mean < 3 && same.share < 0.01, `frame ${frame}: ${JSON.stringify(same)}`);
    }
    const other = imageDifference(await stagePixels(page), await videoFrame(await reference, 22));
    assert.ok(other.share > 0.01, `frame 8 vs frame 22 must differ: ${JSON.stringify(other)}`);
  });

  it("the timeline shows each sub-composition in its host's window, and its GSAP timeline from there", async () => {
    const clips = await page.$$eval("#timeline .clip", (els) =>
      els.map((el) => {
        const d = (el as HTMLElement).dataset;
        return `${d.kind} ${d.label} ${d.start}-${d.end}`;
      }));
    for (
      const expected of [
        "composition a 0.200-1.000",
        "composition b 0.500-0.900",
        "composition c 0.400-1.000",
        "timeline GSAP a 0.200-0.700",
        "timeline GSAP b 0.500-0.900",
      ]
    ) {
      assert.ok(clips.includes(expected), `${expected} in ${JSON.stringify(clips)}`);
    }
  });
});

describe("vid preview studio with <video>", () => {
  let work: string;
  let project: string;
  let preview: PreviewProcess;
  let browser: Browser;
  let page: Page;
  let reference: Promise<string>;

  before(async () => {
    work = await Deno.makeTempDir({ prefix: "vid-preview-video-test-" });
    project = `${work}/project`;
    await Deno.mkdir(project);
    await Deno.writeTextFile(`${project}/index.html`, VIDEO_PAGE);
    await makeClip(`${project}/clip.mp4`, 0);
    const output = `${work}/reference.mp4`;
    reference = runVid(["render", project, "--output", output]).then((r) => {
      assert.equal(r.code, 0, r.stderr);
      return output;
    });
    const executablePath = await findChromium();
    assert.ok(executablePath, "chromium is installed");
    [preview, browser] = await Promise.all([
      startPreviewProcess(project),
      puppeteer.launch({
        executablePath,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--force-color-profile=srgb", "--hide-scrollbars"],
      }),
    ]);
    page = await browser.newPage();
    await page.setViewport({ width: 1200, height: 700, deviceScaleFactor: 1 });
    await page.goto(preview.url);
    await waitForStage(page, 0);
    await page.select("#zoom", "1");
  });

  after(async () => {
    await browser?.close();
    preview?.child.kill("SIGINT");
    await preview?.done;
    await reference?.catch(() => undefined);
    await Deno.remove(work, { recursive: true });
  });

  /** How many times the preview server converted a video so far. */
  const conversions = (): number =>
    preview.stderr().match(/prepared video clip\.mp4/g)?.length ?? 0;

  it("a paused frame shows the source frame `vid render` shows, from the same proxy", async () => {
    // Frame 10 is t = 1/3 s: source frame 8 of the 25 fps clip.
    await scrubTo(page, 10);
    await waitForStage(page, 10);
    const src = await page.$eval(
      "#stage iframe",
      (el) => (el as HTMLIFrameElement).contentDocument!.querySelector("video")!.src,
    );
    assert.match(src, /\/__vid\/p\d+-video-0\.webm$/, "the stage plays the prepared proxy");
    const studio = await stagePixels(page);
    const rendered = await videoFrame(await reference, 10);
    const same = imageDifference(studio, rendered);
    const source = imageDifference(studio, await videoFrame(`${project}/clip.mp4`, 8));
    // On failure, say which side is off: the source frame each one is nearest.
    const nearest = async (rgb: Uint8Array): Promise<number> => {
      const means = [];
      for (let n = 0; n < 25; n++) {
        means.push(imageDifference(rgb, await videoFrame(`${project}/clip.mp4`, n)).mean);
      }
      return means.indexOf(Math.min(...means));
    };
    if (same.mean >= 3 || same.share >= 0.01) {
      assert.fail(
        `studio vs render: ${JSON.stringify(same)}; the studio shows source frame ` +
          `${await nearest(studio)}, the render ${await nearest(rendered)} (8 expected)`,
      );
    }
    assert.ok(source.mean < 3 && source.share < 0.01, `source frame 8: ${JSON.stringify(source)}`);
    for (const neighbour of [7, 9]) {
      const other = imageDifference(studio, await videoFrame(`${project}/clip.mp4`, neighbour));
      assert.ok(
        other.share > 0.03,
        `source frame ${neighbour} must fail the check: ${JSON.stringify(other)}`,
      );
    }
    assert.equal(conversions(), 1, preview.stderr());
  });

  it("paused, the stage paints the video's frame in the page as a screenshot render does; playing, the video shows its own picture", async () => {
    /** Whether the stage's video shows a frame painted in the page (video_paint.ts). */
    const painted = () =>
      page.$eval("#stage iframe:not(.standby)", (el) => {
        const video = (el as HTMLIFrameElement).contentDocument!.querySelector("video")!;
        return video.hasAttribute("data-vid-painted");
      });
    assert.equal(await painted(), true, "paused at frame 10");
    await page.click("#play");
    const whilePlaying = await page.waitForFunction(
      () => {
        const stage = document.getElementById("stage")!;
        const playing = document.getElementById("play")!.getAttribute("aria-pressed") === "true";
        if (!playing || Number(stage.dataset.frame) < 12) return false;
        const frame = stage.querySelector("iframe:not(.standby)") as HTMLIFrameElement;
        return frame.contentDocument!.querySelector("video")!.hasAttribute("data-vid-painted")
          ? "painted"
          : "own picture";
      },
      { timeout: 20000 },
    );
    assert.equal(await whilePlaying.jsonValue(), "own picture");
    await page.click("#play");
    await page.waitForFunction(
      () => document.getElementById("play")!.getAttribute("aria-pressed") === "false",
    );
    await page.waitForFunction(
      () => document.getElementById("stage")!.dataset.state === "ready",
      { timeout: 20000 },
    );
    await page.waitForFunction(
      () => {
        const frame = document.querySelector("#stage iframe:not(.standby)") as HTMLIFrameElement;
        return frame.contentDocument!.querySelector("video")!.hasAttribute("data-vid-painted");
      },
      { timeout: 20000 },
    );
    const { frame } = await stageState(page);
    assert.ok(frame > 10, `playback moved on: frame ${frame}`);
    const same = imageDifference(await stagePixels(page), await videoFrame(await reference, frame));
    assert.ok(same.mean < 3 && same.share < 0.01, `frame ${frame}: ${JSON.stringify(same)}`);
    await scrubTo(page, 10);
    await waitForStage(page, 10);
  });

  it("an edit that leaves the video alone reuses its proxy; a changed video converts again", async () => {
    const before = (await stageState(page)).generation;
    await Deno.writeTextFile(
      `${project}/index.html`,
      VIDEO_PAGE.replace("background: #000", "background: #111"),
    );
    await waitForStage(page, 10, before);
    assert.equal(conversions(), 1, `no second conversion: ${preview.stderr()}`);
    const first = await stagePixels(page);

    const edited = (await stageState(page)).generation;
    // Written elsewhere and renamed in, so the watcher never sees half a file.
    await makeClip(`${work}/clip.mp4`, 3);
    await Deno.rename(`${work}/clip.mp4`, `${project}/clip.mp4`);
    await waitForStage(page, 10, edited);
    await page.waitForFunction(
      () => document.getElementById("stage")!.dataset.state === "ready",
      { timeout: 20000 },
    );
    assert.equal(conversions(), 2, preview.stderr());
    const second = await stagePixels(page);
    // Source frame 8 of the new clip is frame 11 of the old one.
    const now = imageDifference(second, await videoFrame(`${project}/clip.mp4`, 8));
    assert.ok(now.mean < 6, `the new clip's frame 8: ${JSON.stringify(now)}`);
    assert.ok(imageDifference(first, second).share > 0.03, "the stage shows the new video");
  });

  it("a frame is ready only once its video's seeked frame is on screen, seeking it again if it is not (rVFC held back by a stub in the page)", async () => {
    const before = (await stageState(page)).generation;
    await Deno.writeTextFile(
      `${project}/index.html`,
      VIDEO_PAGE.replace("</head>", `${STUCK_UNTIL_RESEEKED}</head>`),
    );
    await waitForStage(page, 10, before);
    const video = await page.$eval("#stage iframe:not(.standby)", (el) => {
      const v = (el as HTMLIFrameElement).contentDocument!.querySelector("video")!;
      const w = (el as HTMLIFrameElement).contentWindow as unknown as {
        __vid: { videoFramesPending(): number };
      };
      return { seeks: Number(v.dataset.seeks ?? 0), pending: w.__vid.videoFramesPending() };
    });
    // The first seek's frame is never reported: ready came after a second seek reported it.
    assert.ok(video.seeks >= 2, `seeks before ready: ${video.seeks}`);
    assert.equal(video.pending, 0, "no video is still waiting for its frame");
    const now = imageDifference(
      await stagePixels(page),
      await videoFrame(`${project}/clip.mp4`, 8),
    );
    assert.ok(now.mean < 6, `source frame 8: ${JSON.stringify(now)}`);
  });
});

describe("preview runtime injection and checks", () => {
  const config = {
    variables: { t: "</script><b>x" },
    seed: 1,
    epochMs: 0,
    fps: 30,
    readyTimeoutMs: 1,
  };

  it("puts the runtime first in <head>, keeping the doctype first", () => {
    const page = injectRuntime(
      '<!doctype html><html><head><script src="a.js"></script></head><body></body></html>',
      config,
    );
    assert.ok(page.startsWith("<!doctype html><html><head><script data-vid-runtime>"));
    assert.ok(page.indexOf("data-vid-runtime") < page.indexOf('src="a.js"'));
  });

  it("escapes </script> inside variable values", () => {
    const page = injectRuntime("<div></div>", config);
    assert.equal(page.match(/<\/script>/g)?.length, 1, "only the runtime element's own end tag");
    assert.ok(page.includes("<\\/script><b>x"));
  });

  it("checks studio values with the CLI's messages and lists only changed values", () => {
    const check = checkStudioValues(
      [
        { id: "n", type: "number", label: "n", default: 1 },
        { id: "s", type: "string", label: "s", default: "a" },
      ],
      { n: "x", s: "a" },
    );
    assert.deepEqual(check.problems.map((p) => p.message), [
      '"n" (number) expects a finite number, got "x"',
    ]);
    assert.equal(check.variablesJson, '{"n":"x"}');
  });
});
