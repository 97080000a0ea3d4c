/**
 * The authoring studio of `vid preview`, driven in real Chromium (puppeteer-core) against
 * the real command on loopback: page errors with file, line, column and the offending
 * line; the frame readout during playback; backward steps without a page load; typed
 * frame and timecode; state in the URL; sound playback; the timeline (track names, rows
 * that share the window's height); the composition
 * switcher; the render dialog (format, quality, range, name, ETA, cancel). Screenshots
 * go to `.test-results/studio/`; pixels are read from them where it matters.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { findChromium } from "../../src/render/system.ts";
import { type PreviewProcess, runFfmpeg, startPreviewProcess } from "../preview_process.ts";
import { gsapSource, pixelSeries, probeVideo, ROOT, waitFor } from "../helpers.ts";

const SHOTS = `${ROOT}.test-results/studio`;

/** Helper markup: a 320x180 composition page. */
function page(id: string, body: string, options: { duration?: number; extra?: string } = {}) {
  return `<!doctype html>
<html><head><meta charset="utf-8"><style>
html, body { margin: 0; width: 320px; height: 180px; overflow: hidden; background: #000; }
#root { position: relative; width: 320px; height: 180px; }
#box { position: absolute; left: 0; top: 0; width: 40px; height: 40px; background: #fff;
  animation: slide 0.5s linear 0.25s both; }
#count { position: absolute; left: 0; top: 100px; height: 20px; background: #0f0; }
@keyframes slide { from { transform: translateX(0); } to { transform: translateX(200px); } }
</style></head>
<body><div id="root" data-composition-id="${id}" data-width="320" data-height="180"
  data-duration="${options.duration ?? 1}"
  data-composition-variables='[{"id": "bg", "type": "color", "label": "Background", "default": "#202080",
    "group": "Look", "description": "Fill behind the stage"},
    {"id": "logo", "type": "image", "label": "Logo", "default": "img/a.png"}]'>
${body}
</div>
<script>
document.getElementById("root").style.background = window.__vid.getVariables().bg;
</script>
${options.extra ?? ""}</body></html>
`;
}

/**
 * Main composition: a CSS animation, a GSAP timeline with one tween, a
 * requestAnimationFrame counter bar, a sound.
 */
const MAIN = page(
  "studio-main",
  `<div id="box"></div><div id="count"></div>
<div id="gbox" style="position:absolute;left:0;top:140px;width:20px;height:20px;background:#f0f"></div>
<audio src="tone.wav" data-start="0.2" data-duration="0.6"></audio>`,
  {
    extra: `<script src="gsap.min.js"></script>
<script>
const tl = gsap.timeline({ paused: true });
tl.to("#gbox", { x: 100, duration: 0.4, ease: "none" }, 0.3);
window.__timelines = { intro: tl };
</script>
<script>
let rounds = 0;
function grow() {
  rounds++;
  document.getElementById("count").style.width = (rounds * 9) + "px";
  requestAnimationFrame(grow);
}
requestAnimationFrame(grow);
</script>`,
  },
);

/** Throws while loading: scene.js line 3, column 17. */
const BOOM = page("studio-boom", "", { extra: '<script src="scene.js"></script>' });
const SCENE_JS = `const config = undefined;
function setup() {
  return config.title;
}
setup();
`;

/** Throws at frame 12 from js/late.js line 4. */
const LATE = page("studio-late", "", { extra: '<script src="js/late.js"></script>' });
const LATE_JS = `let n = 0;
function step() {
  n++;
  if (n === 13) undefinedFunction(n);
  requestAnimationFrame(step);
}
requestAnimationFrame(step);
`;

/** Ten seconds, for a render long enough to cancel. */
/** Ten seconds, with a misspelt attribute for the Check panel to name. */
const LONG = page("studio-long", '<div id="box" data-start="0" data-strat="1"></div>', {
  duration: 10,
});

/**
 * Twelve timeline rows: nine CSS animations (one per box, each starting later) and an
 * array-registered GSAP timeline with two tweens, which has no names, only indexes.
 */
const ROWS = page(
  "studio-rows",
  Array.from(
    { length: 9 },
    (_, i) =>
      `<div id="r${i + 1}" style="position:absolute;left:0;top:${
        i * 18
      }px;width:16px;height:16px;` +
      `background:#fa0;animation:slide 0.4s linear ${(i * 0.06).toFixed(2)}s both"></div>`,
  ).join("\n") +
    `<div id="t1" style="position:absolute;left:40px;top:0;width:16px;height:16px;background:#0af"></div>
<div id="t2" style="position:absolute;left:40px;top:40px;width:16px;height:16px;background:#0af"></div>`,
  {
    extra: `<script src="gsap.min.js"></script>
<script>
const tl = gsap.timeline({ paused: true });
tl.to("#t1", { x: 100, duration: 0.4, ease: "none" }, 0.1);
tl.to("#t2", { x: 100, duration: 0.3, ease: "none" }, 0.5);
window.__timelines = [tl];
</script>`,
  },
);

/** Saves a screenshot of `selector` under .test-results/studio/ and returns its RGB. */
async function shot(p: Page, selector: string, name: string): Promise<Uint8Array> {
  await Deno.mkdir(SHOTS, { recursive: true });
  const element = await p.$(selector);
  const png = await element!.screenshot({ type: "png" });
  await Deno.writeFile(`${SHOTS}/${name}.png`, png);
  return await runFfmpeg(
    ["-f", "png_pipe", "-i", "pipe:0", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
    png,
  );
}

function rgbAt(rgb: Uint8Array, width: number, x: number, y: number): number[] {
  const i = (y * width + x) * 3;
  return [rgb[i], rgb[i + 1], rgb[i + 2]];
}

function near(a: number[], b: number[], tolerance = 16): boolean {
  return a.every((v, i) => Math.abs(v - b[i]) <= tolerance);
}

/** The studio page's console, for a failure's message. */
const consoleLines: string[] = [];

/**
 * Clicks Render and waits for its dialog. On a timeout the error says what the page looked
 * like: what is under the button's centre, the stage, the title and banner, and the page's
 * console (a clean-clone run failed here twice with only "waiting for selector" to go on).
 */
async function openRenderDialog(p: Page): Promise<void> {
  await p.click("#render");
  try {
    await p.waitForSelector("#render-dialog[open]");
  } catch (error) {
    const state = await p.evaluate(() => {
      const button = document.getElementById("render")!;
      const box = button.getBoundingClientRect();
      const hit = document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2);
      const describe = (el: Element | null) =>
        el ? `${el.tagName.toLowerCase()}#${el.id}.${el.className}` : "nothing";
      const banner = document.getElementById("banner");
      return {
        button: {
          box: [box.x, box.y, box.width, box.height],
          disabled: (button as HTMLButtonElement).disabled,
        },
        underButton: describe(hit),
        dialogOpen: (document.getElementById("render-dialog") as HTMLDialogElement).open,
        stage: { ...document.getElementById("stage")!.dataset },
        iframes: [...document.querySelectorAll("#stage iframe")].map((f) =>
          `${(f as HTMLIFrameElement).src} ${f.className} ${
            JSON.stringify(f.getBoundingClientRect())
          }`
        ),
        title: document.title,
        banner: banner && !banner.hidden ? banner.textContent : "",
        active: describe(document.activeElement),
      };
    });
    throw new Error(
      `the render dialog did not open: ${JSON.stringify(state)}\nconsole:\n${
        consoleLines.join("\n")
      }`,
      { cause: error },
    );
  }
}

async function waitForStage(p: Page, frame: number, afterGeneration = 0): Promise<void> {
  await p.waitForFunction(
    (f: number, g: number) => {
      const d = document.getElementById("stage")!.dataset;
      return d.state === "ready" && d.frame === String(f) && Number(d.generation) > g;
    },
    { timeout: 20000 },
    frame,
    afterGeneration,
  );
}

async function stageData(p: Page): Promise<Record<string, string>> {
  return await p.$eval("#stage", (el) =>
    ({ ...(el as HTMLElement).dataset }) as Record<
      string,
      string
    >);
}

/** The frame the live stage page is really at, from its runtime's clock. */
async function liveFrame(p: Page): Promise<number> {
  return await p.$eval("#stage iframe:not(.standby)", (el) => {
    const w = (el as HTMLIFrameElement).contentWindow as unknown as { __vid: { time: number } };
    return Math.round(w.__vid.time * 30);
  });
}

async function typeInto(p: Page, selector: string, text: string): Promise<void> {
  await p.click(selector, { count: 3 });
  await p.keyboard.type(text);
  await p.keyboard.press("Enter");
}

/** Process ids and names of every descendant of `pid`. */
async function descendants(pid: number): Promise<{ pid: number; name: string }[]> {
  const parents = new Map<number, number[]>();
  const names = new Map<number, string>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const close = stat.lastIndexOf(")");
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      names.set(Number(entry.name), stat.slice(stat.indexOf("(") + 1, close));
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(entry.name)]);
    } catch {
      // gone meanwhile
    }
  }
  const found: { pid: number; name: string }[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of parents.get(queue.shift()!) ?? []) {
      found.push({ pid: child, name: names.get(child) ?? "" });
      queue.push(child);
    }
  }
  return found;
}

describe("the vid preview studio for template authors", () => {
  let work: string;
  let project: string;
  let preview: PreviewProcess;
  let browser: Browser;
  let studio: Page;

  before(async () => {
    work = await Deno.makeTempDir({ prefix: "vid-studio-test-" });
    project = `${work}/project`;
    await Deno.mkdir(`${project}/js`, { recursive: true });
    await Deno.writeTextFile(`${project}/index.html`, MAIN);
    await Deno.writeTextFile(`${project}/gsap.min.js`, await gsapSource());
    await Deno.writeTextFile(`${project}/boom.html`, BOOM);
    await Deno.writeTextFile(`${project}/scene.js`, SCENE_JS);
    await Deno.writeTextFile(`${project}/late.html`, LATE);
    await Deno.writeTextFile(`${project}/js/late.js`, LATE_JS);
    await Deno.writeTextFile(`${project}/long.html`, LONG);
    await Deno.writeTextFile(`${project}/rows.html`, ROWS);
    await Deno.writeTextFile(`${project}/notes.html`, "<!doctype html><p>not a composition</p>");
    await Deno.mkdir(`${project}/img`);
    for (const [name, colour] of [["a", "red"], ["b", "yellow"]]) {
      await runFfmpeg([
        "-f",
        "lavfi",
        "-i",
        `color=${colour}:s=16x16:d=1`,
        "-frames:v",
        "1",
        `${project}/img/${name}.png`,
      ]);
    }
    await runFfmpeg([
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=1",
      `${project}/tone.wav`,
    ]);
    const executablePath = await findChromium();
    assert.ok(executablePath, "chromium is installed");
    [preview, browser] = await Promise.all([
      startPreviewProcess(project),
      puppeteer.launch({
        executablePath,
        headless: true,
        args: [
          "--no-sandbox",
          "--disable-gpu",
          "--force-color-profile=srgb",
          "--hide-scrollbars",
          "--autoplay-policy=no-user-gesture-required",
        ],
      }),
    ]);
    studio = await browser.newPage();
    studio.on("console", (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
    studio.on("pageerror", (e) => consoleLines.push(`pageerror: ${(e as Error).message}`));
    await studio.setViewport({ width: 1200, height: 760, deviceScaleFactor: 1 });
    await studio.goto(preview.url);
    await waitForStage(studio, 0);
    await studio.select("#zoom", "1");
  });

  after(async () => {
    await browser?.close();
    try {
      preview?.child.kill("SIGINT");
    } catch {
      // already gone
    }
    await preview?.done;
    await Deno.remove(work, { recursive: true });
  });

  it("shows each declaration's group as a fieldset and its description under the field", async () => {
    const panel = await studio.$eval("#variables", (form) => {
      const set = form.querySelector("fieldset.group");
      return {
        legend: set?.querySelector("legend")?.textContent,
        fields: [...(set?.querySelectorAll(".field") ?? [])].map((f) =>
          (f as HTMLElement).dataset.id
        ),
        description: document.getElementById("desc-bg")?.textContent,
        describedBy: document.getElementById("var-bg")?.getAttribute("aria-describedby"),
      };
    });
    assert.deepEqual(panel, {
      legend: "Look",
      fields: ["bg"],
      description: "Fill behind the stage",
      describedBy: "desc-bg",
    });
    await shot(studio, "#variables", "variables-group");
  });

  it("an image variable shows its thumbnail, picks from the project's images, marks a missing file", async () => {
    const thumb = async () =>
      await studio.$eval('img[data-thumb="logo"]', (el) => {
        const img = el as HTMLImageElement;
        return { src: new URL(img.src).pathname, hidden: img.hidden };
      });
    await studio.waitForFunction(() =>
      (document.querySelector('img[data-thumb="logo"]') as HTMLImageElement)?.naturalWidth === 16
    );
    assert.deepEqual(await thumb(), { src: "/img/a.png", hidden: false });
    await studio.click('button[data-choose="logo"]');
    await studio.waitForSelector('[data-images="logo"] .image-option');
    assert.deepEqual(
      await studio.$$eval(
        '[data-images="logo"] .image-option',
        (els) => els.map((el) => (el as HTMLElement).dataset.path),
      ),
      ["img/a.png", "img/b.png"],
    );
    await shot(studio, ".field[data-id=logo]", "image-picker");
    await studio.click('[data-images="logo"] .image-option[data-path="img/b.png"]');
    assert.equal(
      await studio.$eval("#var-logo", (el) => (el as HTMLInputElement).value),
      "img/b.png",
    );
    assert.deepEqual(await thumb(), { src: "/img/b.png", hidden: false });
    await typeInto(studio, "#var-logo", "img/missing.png");
    await studio.waitForFunction(() =>
      /does not exist in the project/.test(document.getElementById("problem-logo")!.textContent!)
    );
    await typeInto(studio, "#var-logo", "img/a.png");
    await studio.waitForFunction(() => document.getElementById("problem-logo")!.textContent === "");
  });

  it("lists every composition at the project root and switches between them", async () => {
    const options = await studio.$$eval(
      "#composition-select option",
      (os) => os.map((o) => (o as HTMLOptionElement).value),
    );
    assert.deepEqual(options, ["boom.html", "index.html", "late.html", "long.html", "rows.html"]);
    assert.equal(
      await studio.$eval("#composition-select", (el) => (el as HTMLElement).hidden),
      false,
    );
    assert.equal(
      await studio.$eval("#composition-select", (el) => (el as HTMLSelectElement).value),
      "index.html",
    );
  });

  it("a throw while loading shows as a load error with file:line:col, stack and the source line", async () => {
    await studio.select("#composition-select", "boom.html");
    await studio.waitForFunction(
      () => document.getElementById("stage")!.dataset.state === "error",
      { timeout: 20000 },
    );
    await studio.waitForFunction(() =>
      document.getElementById("stage-excerpt")!.textContent !== ""
    );
    const message = await studio.$eval("#stage-message", (el) =>
      ({
        ...(el as HTMLElement).dataset,
        text: document.getElementById("stage-error-text")!.textContent,
        excerpt: document.getElementById("stage-excerpt")!.textContent,
      }) as Record<string, string>);
    assert.equal(message.kind, "load");
    assert.deepEqual([message.file, message.line, message.column], ["scene.js", "3", "17"]);
    assert.equal(
      message.text,
      "the page threw while loading: TypeError: Cannot read properties of undefined " +
        "(reading 'title')\n    at setup (scene.js:3:17)\n    at scene.js:5:1",
    );
    assert.doesNotMatch(message.text!, /frame \d+/, "not a frame error");
    const lines = message.excerpt!.split("\n");
    assert.ok(
      lines.includes(">   3 |   return config.title;") ||
        lines.includes("> 3 |   return config.title;"),
      message.excerpt!,
    );
    const caret = lines[lines.findIndex((l) => l.includes("return config.title")) + 1];
    assert.equal(
      caret.indexOf("^") - caret.indexOf("|") - 2,
      16,
      `caret under column 17: ${caret}`,
    );
    // The overlay is on screen: its dark red covers the stage.
    const rgb = await shot(studio, "#stage-box", "load-error");
    assert.ok(
      near(rgbAt(rgb, 320, 300, 100), [58, 29, 34], 24),
      `overlay ${rgbAt(rgb, 320, 300, 100)}`,
    );
  });

  it("a throw at a frame names that frame and js/late.js:4", async () => {
    await studio.select("#composition-select", "late.html");
    await waitForStage(studio, 0);
    await typeInto(studio, "#frame-input", "20");
    await studio.waitForFunction(
      () => document.getElementById("stage")!.dataset.state === "error",
      { timeout: 20000 },
    );
    const message = await studio.$eval("#stage-message", (el) =>
      ({
        ...(el as HTMLElement).dataset,
        text: document.getElementById("stage-error-text")!.textContent!,
      }) as Record<string, string>);
    assert.equal(message.kind, "frame");
    assert.deepEqual([message.file, message.line], ["js/late.js", "4"]);
    assert.match(
      message.text,
      /^frame 12: the page threw ReferenceError: undefinedFunction is not defined\n {4}at step \(js\/late\.js:4:17\)/,
    );
    await shot(studio, "#stage-box", "frame-error");
    await studio.select("#composition-select", "index.html");
    await waitForStage(studio, 0);
  });

  it("typed frame and timecode go there; a bad time is marked and ignored", async () => {
    await typeInto(studio, "#frame-input", "25");
    await waitForStage(studio, 25);
    assert.equal(await studio.$eval("#frame-readout", (el) => el.textContent), "frame 25 / 29");
    assert.equal(
      await studio.$eval("#timecode-input", (el) => (el as HTMLInputElement).value),
      "00:00:00:25",
    );
    await typeInto(studio, "#timecode-input", "00:00:00:10");
    await waitForStage(studio, 10);
    await typeInto(studio, "#timecode-input", "0.5s");
    await waitForStage(studio, 15);
    assert.equal(await studio.$eval("#time-readout", (el) => el.textContent), "0.500 s / 1.000 s");
    await typeInto(studio, "#timecode-input", "00:00:01:40");
    assert.equal(
      await studio.$eval("#timecode-input", (el) => el.getAttribute("aria-invalid")),
      "true",
    );
    // Deliberate: lets time pass (nothing to wait for) to show the stage does not move.
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal((await stageData(studio)).frame, "15", "the stage stayed at frame 15");
    await studio.click("#play");
    await studio.click("#play");
  });

  it("a step back loads no page: the standby page is seeked, the picture is the forward one", async () => {
    await typeInto(studio, "#frame-input", "19");
    await waitForStage(studio, 19);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const forward = await shot(studio, "#stage-box", "frame-19-forward");
    await studio.focus("#play");
    await studio.keyboard.press("ArrowRight");
    await waitForStage(studio, 20);
    // Give the standby page time to load in the background, as a person's pause would.
    await studio.waitForFunction(
      () => document.querySelectorAll("#stage iframe.standby").length === 1,
      { timeout: 10000 },
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    let generation = Number((await stageData(studio)).generation);
    await studio.keyboard.press("ArrowLeft");
    await waitForStage(studio, 19, generation);
    const step = await stageData(studio);
    assert.equal(step.path, "standby", "no page load on the way back");
    const stepMs = Number(step.stepMs);
    const back = await shot(studio, "#stage-box", "frame-19-back");
    let off = 0;
    for (let i = 0; i < back.length; i++) if (Math.abs(back[i] - forward[i]) > 24) off++;
    assert.ok(off / back.length < 0.002, `same picture back as forward (${off} bytes off)`);

    // A page load for comparison: new variable values need a fresh page.
    generation = Number((await stageData(studio)).generation);
    await studio.$eval("#var-bg", (el) => {
      (el as HTMLInputElement).value = "#208020";
      el.dispatchEvent(new Event("input", { bubbles: true }));
    });
    await waitForStage(studio, 19, generation);
    const load = await stageData(studio);
    assert.equal(load.path, "load");
    const loadMs = Number(load.stepMs);
    console.log(
      `step back: ${stepMs.toFixed(0)} ms via standby; a page load: ${loadMs.toFixed(0)} ms`,
    );
    assert.ok(stepMs < loadMs, `standby step ${stepMs} ms vs load ${loadMs} ms`);
  });

  it("the readout names the frame on stage during playback", async () => {
    await typeInto(studio, "#frame-input", "0");
    await waitForStage(studio, 0);
    await studio.focus("#play");
    await studio.keyboard.press("Space");
    const samples: string[] = [];
    for (let i = 0; i < 12; i++) {
      const sample = await studio.evaluate(() => {
        const iframe = document.querySelector<HTMLIFrameElement>("#stage iframe:not(.standby)")!;
        const time = (iframe.contentWindow as unknown as { __vid: { time: number } }).__vid.time;
        return {
          readout: document.getElementById("frame-readout")!.textContent!,
          stage: Math.round(time * 30),
          seeking: document.getElementById("stage")!.dataset.state !== "ready",
        };
      });
      if (!sample.seeking) {
        samples.push(`${sample.readout}|${sample.stage}`);
        assert.equal(sample.readout, `frame ${sample.stage} / 29`, "readout = stage frame");
      }
      await new Promise((resolve) => setTimeout(resolve, 40));
    }
    assert.ok(samples.length >= 3, `enough settled samples: ${samples}`);
    await studio.waitForFunction(() => document.getElementById("play")!.textContent === "Play", {
      timeout: 10000,
    });
    assert.equal(await liveFrame(studio), 29);
  });

  it("plays the composition's sound aligned to the playhead, muted on demand, silent when paused", async () => {
    await typeInto(studio, "#frame-input", "0");
    await waitForStage(studio, 0);
    const src = await studio.$eval("#sounds audio", (el) => (el as HTMLAudioElement).dataset.clip!);
    assert.match(src, /\/tone\.wav$/);
    await studio.click("#play");
    await studio.waitForFunction(
      () => !(document.querySelector("#sounds audio") as HTMLAudioElement).paused,
      { timeout: 5000 },
    );
    const sample = () =>
      studio.evaluate(() => {
        const el = document.querySelector("#sounds audio") as HTMLAudioElement;
        const iframe = document.querySelector<HTMLIFrameElement>("#stage iframe:not(.standby)")!;
        const time = (iframe.contentWindow as unknown as { __vid: { time: number } }).__vid.time;
        return { audio: el.currentTime, stage: time, muted: el.muted };
      });
    // data-start 0.2: the source plays from 0 when the playhead passes 0.2 s. The two clocks
    // are read in one evaluate, but a page starved of frames (a loaded machine) can read them
    // a frame apart: the studio re-syncs a drift over 80 ms, so it is aligned within a few
    // samples; one that never re-synced would stay apart.
    const seen: string[] = [];
    const sync = await waitFor("the sound aligned to the playhead", async () => {
      const s = await sample();
      seen.push(`sound ${s.audio} s vs playhead ${s.stage} - 0.2 s`);
      return s.stage >= 0.2 && Math.abs(s.audio - (s.stage - 0.2)) < 0.2 ? s : undefined;
    }, { timeoutMs: 3000 }).catch((error) => {
      throw new Error(`${error.message}: ${seen.join("; ")}`);
    });
    assert.equal(sync.muted, false);
    await studio.$eval("#volume", (el) => {
      (el as HTMLInputElement).value = "0.5";
      el.dispatchEvent(new Event("input", { bubbles: true }));
    });
    assert.equal(
      await studio.$eval("#sounds audio", (el) => (el as HTMLAudioElement).volume),
      0.5,
      "the volume slider scales the clip's data-volume (1)",
    );
    await studio.click("#mute");
    assert.equal(
      await studio.$eval("#sounds audio", (el) => (el as HTMLAudioElement).muted),
      true,
    );
    await studio.click("#play");
    assert.equal(
      await studio.$eval("#sounds audio", (el) => (el as HTMLAudioElement).paused),
      true,
      "paused with the stage",
    );
    await studio.click("#mute");
    await studio.$eval("#volume", (el) => {
      (el as HTMLInputElement).value = "1";
      el.dispatchEvent(new Event("input", { bubbles: true }));
    });
  });

  it("the timeline shows the sound clip, the CSS animation and the GSAP tween where they are, and seeks", async () => {
    await typeInto(studio, "#frame-input", "20");
    await waitForStage(studio, 20);
    await studio.waitForSelector('#timeline .clip[data-kind="animation"]');
    const clips = await studio.$$eval("#timeline .clip", (els) =>
      els.map((el) => {
        const d = (el as HTMLElement).dataset;
        return `${d.kind}:${d.label}:${d.start}-${d.end}`;
      }));
    assert.ok(clips.includes("audio:tone.wav:0.200-0.800"), clips.join(", "));
    assert.ok(clips.includes("animation:slide #box:0.250-0.750"), clips.join(", "));
    assert.ok(clips.includes("timeline:GSAP intro:0.000-0.700"), clips.join(", "));
    // A tween's row is named by what it moves; its timeline is in the tooltip, not in front.
    assert.ok(clips.includes("timeline:#gbox:0.300-0.700"), clips.join(", "));
    assert.equal(
      await studio.$eval(
        '#timeline .track[data-parent="intro"] .name',
        (el) => [el.textContent, (el as HTMLElement).title].join(" | "),
      ),
      "#gbox | intro › #gbox: 0.300 s – 0.700 s",
    );
    // The ruler over the tracks: 1 s in quarter seconds, each tick where its time is.
    const ticks = await studio.$$eval(
      "#ruler .tick",
      (els) => els.map((el) => [el.textContent, (el as HTMLElement).style.left]),
    );
    assert.deepEqual(ticks, [
      ["0s", "0%"],
      ["0.25s", "25%"],
      ["0.5s", "50%"],
      ["0.75s", "75%"],
      ["1s", "100%"],
    ]);
    const track = await studio.$('#timeline .track[data-kind="audio"]');
    const box = (await track!.boundingBox())!;
    await studio.mouse.click(box.x + box.width * 0.5 + 1, box.y + box.height / 2);
    await waitForStage(studio, 15);
    await shot(studio, "#viewer", "timeline");
  });

  it("track names carry no index; timeline rows share the window's height, then scroll", async () => {
    const rows = await browser.newPage();
    try {
      // 12 rows at their natural 20px (+4px gaps) need ~330px with the ruler: more than the
      // old fixed 160px, and more than 40% of a 700px window, so the rows must shrink to fit.
      await rows.setViewport({ width: 1200, height: 700, deviceScaleFactor: 1 });
      await rows.goto(`${preview.url}?composition=rows.html&frame=5`);
      await waitForStage(rows, 5);
      await rows.waitForFunction(() => document.querySelectorAll("#timeline .track").length === 12);
      const names = await rows.$$eval(
        "#timeline .track .name",
        (els) => els.map((e) => e.textContent),
      );
      for (const name of names) assert.doesNotMatch(name!, /^\d/, names.join(", "));
      assert.ok(names.includes("GSAP timeline 1"), names.join(", "));
      assert.ok(names.includes("#t1") && names.includes("#t2"), names.join(", "));
      assert.ok(names.includes("slide div#r1") || names.includes("slide #r1"), names.join(", "));
      const layout = async () =>
        await rows.$eval("#timeline", (timeline) => {
          const box = timeline.getBoundingClientRect();
          return {
            window: innerHeight,
            height: box.height,
            scrolls: timeline.scrollHeight > timeline.clientHeight,
            tracks: Array.from(timeline.querySelectorAll(".track"), (t) => {
              const r = t.getBoundingClientRect();
              return { top: r.top - box.top, bottom: r.bottom - box.top, height: r.height };
            }),
            stage: document.getElementById("stage-area")!.getBoundingClientRect().height,
          };
        });
      const fit = await layout();
      const report = JSON.stringify(fit);
      assert.equal(fit.scrolls, false, report);
      for (const track of fit.tracks) {
        assert.ok(
          track.top >= 0 && track.bottom <= fit.height,
          `row inside the timeline: ${report}`,
        );
        assert.ok(track.height >= 14 && track.height < 20, `row shrunk, readable: ${report}`);
      }
      assert.ok(fit.height <= fit.window * 0.4 + 1, `timeline within 40% of the window: ${report}`);
      assert.ok(fit.height > 160, `more than the old fixed 160px: ${report}`);
      assert.ok(fit.stage >= 200, `the stage keeps its room: ${report}`);
      await shot(rows, "#viewer", "timeline-rows");

      // A short window: rows stop at the readable minimum and the timeline scrolls.
      await rows.setViewport({ width: 1200, height: 480, deviceScaleFactor: 1 });
      await rows.waitForFunction(() => {
        const timeline = document.getElementById("timeline")!;
        return timeline.scrollHeight > timeline.clientHeight;
      });
      const short = await layout();
      for (const track of short.tracks) {
        assert.equal(Math.round(track.height), 14, JSON.stringify(short));
      }
      await shot(rows, "#viewer", "timeline-rows-short");
    } finally {
      await rows.close();
    }
  });

  it("the URL holds composition, frame, changed variables and mute: a reload restores them", async () => {
    await typeInto(studio, "#frame-input", "12");
    await waitForStage(studio, 12);
    await studio.click("#mute");
    await studio.waitForFunction(() =>
      location.search.includes("muted=1") && location.search.includes("frame=12")
    );
    const url = studio.url();
    const params = new URL(url).searchParams;
    assert.equal(params.get("frame"), "12");
    assert.deepEqual(JSON.parse(params.get("vars")!), { bg: "#208020" });
    const before = await shot(studio, "#stage-box", "before-reload");
    const second = await browser.newPage();
    await second.setViewport({ width: 1200, height: 760, deviceScaleFactor: 1 });
    await second.goto(url);
    await waitForStage(second, 12);
    await second.select("#zoom", "1");
    await new Promise((resolve) => setTimeout(resolve, 200));
    const after = await shot(second, "#stage-box", "after-reload");
    assert.equal(await second.$eval("#var-bg", (el) => (el as HTMLInputElement).value), "#208020");
    assert.equal(await second.$eval("#mute", (el) => el.getAttribute("aria-pressed")), "true");
    assert.equal(await second.$eval("#frame-readout", (el) => el.textContent), "frame 12 / 29");
    assert.ok(
      near(rgbAt(after, 320, 300, 170), [32, 128, 32]),
      `restored background ${rgbAt(after, 320, 300, 170)}`,
    );
    let off = 0;
    for (let i = 0; i < after.length; i++) if (Math.abs(after[i] - before[i]) > 24) off++;
    assert.ok(off / after.length < 0.002, `the shared link shows the same picture (${off} off)`);
    await second.goto(`${preview.url}?composition=late.html&frame=3`);
    await waitForStage(second, 3);
    assert.equal(
      await second.$eval("#composition-select", (el) => (el as HTMLSelectElement).value),
      "late.html",
    );
    await second.close();
    await studio.click("#mute");
  });

  it("the render dialog renders a frame range as webm at scale 2 under its own name", async () => {
    await openRenderDialog(studio);
    assert.deepEqual(
      await studio.$$eval(
        "#render-format option",
        (os) => os.map((o) => (o as HTMLOptionElement).value),
      ),
      ["mp4", "webm", "mov", "gif", "png", "still"],
    );
    await studio.select("#render-format", "webm");
    await studio.select("#render-quality", "draft");
    assert.deepEqual(
      await studio.$$eval(
        "#render-scale option",
        (os) => os.map((o) => (o as HTMLOptionElement).value),
      ),
      ["1", "2", "3", "4"],
    );
    await studio.select("#render-scale", "2");
    await studio.$eval("#render-from", (el) => (el as HTMLInputElement).value = "5");
    await studio.$eval("#render-to", (el) => (el as HTMLInputElement).value = "14");
    await studio.$eval("#render-name", (el) => (el as HTMLInputElement).value = "clip-a");
    await shot(studio, "#render-dialog", "render-dialog");
    await studio.click("#render-start");
    await studio.waitForSelector("#render-link", { timeout: 60000 });
    const href = await studio.$eval("#render-link", (el) => (el as HTMLAnchorElement).href);
    assert.match(href, /\/__preview\/renders\/clip-a\.webm$/);
    const response = await fetch(href);
    assert.equal(response.headers.get("content-type"), "video/webm");
    await response.body?.cancel();
    const video = await probeVideo(`${project}/renders/clip-a.webm`);
    assert.equal(video.frames, 10, "frames 5-14");
    assert.deepEqual([video.width, video.height], [640, 360], "320x180 drawn at scale 2");
  });

  it("the render dialog renders a GIF at another frame rate, the whole range at that rate", async () => {
    await openRenderDialog(studio);
    assert.equal(await studio.$eval("#render-fps", (el) => (el as HTMLInputElement).value), "30");
    await studio.select("#render-format", "gif");
    await studio.select("#render-scale", "1");
    await studio.$eval("#render-fps", (el) => {
      (el as HTMLInputElement).value = "5";
      el.dispatchEvent(new Event("input"));
    });
    assert.equal(await studio.$eval("#render-to", (el) => (el as HTMLInputElement).value), "4");
    await studio.$eval("#render-name", (el) => (el as HTMLInputElement).value = "clip-b");
    await studio.click("#render-start");
    await studio.waitForFunction(
      () =>
        /clip-b\.gif$/.test(
          (document.getElementById("render-link") as HTMLAnchorElement)?.href ?? "",
        ),
      { timeout: 60000 },
    );
    const gif = await probeVideo(`${project}/renders/clip-b.gif`);
    assert.deepEqual([gif.frames, gif.width], [5, 320], "1 s at 5 fps, scale 1");
    const refused = await fetch(`${preview.url}__preview/render`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ values: {}, format: "tiff" }),
    });
    assert.equal(refused.status, 400);
    assert.equal((await refused.json()).error.field, "format");
  });

  it("the render dialog renders a PNG sequence into a folder and links its first frame", async () => {
    await openRenderDialog(studio);
    const labels = await studio.$$eval(
      "#render-format option",
      (options) => options.map((o) => `${(o as HTMLOptionElement).value}=${o.textContent}`),
    );
    assert.ok(labels.includes("png=PNG sequence"), labels.join(", "));
    assert.ok(labels.includes("still=Still (PNG)"), labels.join(", "));
    await studio.select("#render-format", "png");
    await studio.$eval("#render-from", (el) => (el as HTMLInputElement).value = "3");
    await studio.$eval("#render-to", (el) => (el as HTMLInputElement).value = "6");
    await studio.$eval("#render-name", (el) => (el as HTMLInputElement).value = "seq-a");
    await studio.click("#render-start");
    await studio.waitForFunction(
      () =>
        /\/__preview\/renders\/seq-a\/00003\.png$/.test(
          (document.getElementById("render-link") as HTMLAnchorElement)?.href ?? "",
        ),
      { timeout: 60000 },
    );
    assert.match(
      await studio.$eval("#render-status", (el) => el.textContent!),
      /^Done: renders\/seq-a\/ \(first frame: renders\/seq-a\/00003\.png\) \(4 frames, /,
    );
    const files = (await Array.fromAsync(Deno.readDir(`${project}/renders/seq-a`), (e) => e.name))
      .sort();
    // Named by frame number, as `vid render --frames 3-6 -o seq-a/%05d.png` names them.
    assert.deepEqual(files, ["00003.png", "00004.png", "00005.png", "00006.png"]);
    const frame = await probeVideo(`${project}/renders/seq-a/00006.png`);
    assert.deepEqual([frame.width, frame.height], [320, 180]);
    const href = await studio.$eval("#render-link", (el) => (el as HTMLAnchorElement).href);
    const served = await fetch(href);
    assert.equal(served.headers.get("content-type"), "image/png");
    assert.deepEqual(
      new Uint8Array(await served.arrayBuffer()),
      await Deno.readFile(`${project}/renders/seq-a/00003.png`),
    );
    const escape = await fetch(`${preview.url}__preview/renders/seq-a/..%2F..%2Findex.html`);
    assert.equal(escape.status, 404);
    await escape.body?.cancel();
  });

  it("the render dialog renders the playhead's frame as a still, as vid still does", async () => {
    await typeInto(studio, "#frame-input", "15");
    await openRenderDialog(studio);
    await studio.select("#render-format", "still");
    assert.equal(await studio.$eval("#render-from", (el) => (el as HTMLInputElement).value), "15");
    assert.ok(await studio.$eval("#render-to", (el) => (el as HTMLInputElement).disabled));
    await studio.$eval("#render-name", (el) => (el as HTMLInputElement).value = "still-a");
    await shot(studio, "#render-dialog", "render-dialog-still");
    await studio.click("#render-start");
    await studio.waitForFunction(
      () =>
        /\/__preview\/renders\/still-a\.png$/.test(
          (document.getElementById("render-link") as HTMLAnchorElement)?.href ?? "",
        ),
      { timeout: 60000 },
    );
    const served = await fetch(
      await studio.$eval("#render-link", (el) => (el as HTMLAnchorElement).href),
    );
    assert.equal(served.headers.get("content-type"), "image/png");
    await served.body?.cancel();
    const bg = await studio.$eval("#var-bg", (el) => (el as HTMLInputElement).value);
    const reference = `${project}/../still-ref.png`;
    const cli = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}cli.ts`,
        "still",
        project,
        "--frame",
        "15",
        "--variables",
        JSON.stringify({ bg }),
        "-o",
        reference,
      ],
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.equal(cli.code, 0, new TextDecoder().decode(cli.stderr));
    const still = `${project}/renders/still-a.png`;
    // Frame 15 (0.5 s): the box has slid to x=100..140; the background is the value on screen.
    for (const [x, y] of [[120, 20], [20, 20], [300, 170]]) {
      assert.deepEqual(
        await pixelSeries(still, x, y),
        await pixelSeries(reference, x, y),
        `pixel ${x},${y}`,
      );
    }
    assert.deepEqual(
      await pixelSeries(still, 120, 20),
      [[255, 255, 255, 255]],
      "the box at frame 15",
    );
  });

  it("a bad range is refused naming the field", async () => {
    const response = await fetch(`${preview.url}__preview/render`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ values: {}, from: 20, to: 3 }),
    });
    assert.equal(response.status, 400);
    const body = await response.json();
    assert.equal(body.error.field, "frames");
    assert.match(body.error.message, /^frames: must be <from>-<to> .*from <= to.*got 20-3/);
  });

  it("shows progress with an ETA, and cancel stops Chromium and ffmpeg and leaves no file", async () => {
    const before = Number((await stageData(studio)).generation);
    await studio.select("#composition-select", "long.html");
    // The stage of long.html, not index.html's still showing frame 0 (ci run of 2026-12-05:
    // the click came before long.html was read, and the dialog never opened).
    await waitForStage(studio, 0, before);
    // And long.html's check read: its one error adds a line to the Check panel, and a page
    // that moves under the pointer between puppeteer's measuring and its click loses the click.
    await studio.waitForFunction(
      () => /^1 error/.test(document.getElementById("check-status")!.textContent!),
      { timeout: 20000 },
    );
    await openRenderDialog(studio);
    await studio.select("#render-format", "mp4");
    await studio.$eval("#render-name", (el) => (el as HTMLInputElement).value = "long-one");
    // long.html has a misspelt attribute: the check holds the render until "render anyway".
    await studio.waitForSelector("#render-start:disabled", { timeout: 20000 });
    assert.match(
      await studio.$eval("#render-check", (el) => el.textContent!),
      /^The Check panel lists 1 error: the render would get them wrong\. render anyway$/,
    );
    await studio.click("#render-anyway");
    await studio.click("#render-start");
    await studio.waitForFunction(
      () => /about \d+ s left/.test(document.getElementById("render-status")!.textContent!),
      { timeout: 60000 },
    );
    await shot(studio, "aside", "render-progress");
    const running = await descendants(preview.pid);
    assert.ok(
      running.some((p) => /chrom/i.test(p.name)),
      `a browser renders: ${JSON.stringify(running)}`,
    );
    assert.ok(
      running.some((p) => p.name === "ffmpeg"),
      `ffmpeg encodes: ${JSON.stringify(running)}`,
    );
    await studio.click("#render-cancel");
    await studio.waitForFunction(
      () => document.getElementById("render-status")!.dataset.state === "cancelled",
      { timeout: 20000 },
    );
    assert.match(
      await studio.$eval("#render-status", (el) => el.textContent!),
      /Render cancelled; no file was written/,
    );
    const left = (await descendants(preview.pid)).filter((p) => /chrom|ffmpeg/i.test(p.name));
    assert.deepEqual(left, [], "nothing of the render is left running");
    const files = await Array.fromAsync(Deno.readDir(`${project}/renders`), (e) => e.name);
    assert.ok(!files.some((f) => f.startsWith("long-one")), `no partial file: ${files}`);
    assert.ok(!files.some((f) => f.startsWith(".")), `no temp file: ${files}`);
  });

  it("the Check panel lists what vid check's static and media parts find, per composition", async () => {
    // long.html is on stage (the test above): its misspelt attribute is named.
    await studio.waitForFunction(
      () => document.querySelectorAll("#check-problems li").length > 0,
      { timeout: 20000 },
    );
    const items = await studio.$$eval(
      "#check-problems li",
      (ls) => ls.map((l) => [(l as HTMLElement).dataset.severity, l.textContent]),
    );
    assert.equal(items.length, 1, JSON.stringify(items));
    assert.equal(items[0][0], "error");
    assert.match(
      items[0][1]!,
      /^long\.html:\d+:\d+: error: <div> has data-strat, which vid does not read; did you mean data-start\?$/,
    );
    assert.match(
      await studio.$eval("#check-status", (el) => el.textContent!),
      /^1 error, 0 warnings/,
    );
    await studio.select("#composition-select", "index.html");
    await studio.waitForFunction(
      () => /^no problems found/.test(document.getElementById("check-status")!.textContent!),
      { timeout: 20000 },
    );
    assert.equal(await studio.$$eval("#check-problems li", (ls) => ls.length), 0);
  });
});
