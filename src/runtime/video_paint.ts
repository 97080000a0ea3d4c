/**
 * The video frame painter of screenshot capture: paints each `<video>`'s current frame in
 * the page itself, as the element's own top background layer, and moves the element's
 * compositor picture out of its box (`object-position`).
 *
 * Why: in screenshot capture the page draws on its own, and a paused video's seeked frame
 * reaches the screen through its own compositor surface, which Chromium may leave one seek
 * behind: `requestVideoFrameCallback` reports the new frame while `Page.captureScreenshot`
 * still shows the previous one, often for every later frame of that page, and neither
 * waiting (150 ms) nor another animation frame or screenshot ends it. Measured on a 2-worker
 * render of a 3 s clip: 5 renders in 58 had frames one late; a page that seeks its video
 * again after each seek gets there on nearly every frame. `drawImage` reads the very frame
 * the callback reported, so a frame painted in the page is the seeked one by construction.
 *
 * The element keeps its box, classes, transforms, filters, radius, opacity and stacking:
 * only its content moves to the background, fitted as `object-fit` and placed as
 * `object-position` say, clipped to the content box, above the element's own backgrounds.
 *
 * Runs in the page: the runtime (`install.ts`) creates the painter on first use, and is
 * bundled with it by `scripts/build_page_code.ts`.
 *
 * @module
 */

/** Paints video frames in one page. */
export interface VideoFramePainter {
  /**
   * Paints each given video's current frame (when it has one and it changed since the last
   * paint); resolves to how many were painted. A video whose frame cannot be read back
   * (another origin without CORS) keeps its compositor picture.
   */
  paint(videos: readonly HTMLVideoElement[]): Promise<number>;
  /** Gives every painted video its compositor picture back (the studio, playing); returns how many. */
  clear(): number;
}

/** The attribute naming a painted video's rule. */
const ATTRIBUTE = "data-vid-painted";
/** Far enough that no object-fit puts a pixel of the picture inside the box. */
const OUT_OF_BOX = "-1000000px -1000000px";
/** The background properties of one layer. */
const LAYER_PROPERTIES = [
  "background-image",
  "background-size",
  "background-position",
  "background-origin",
  "background-clip",
  "background-repeat",
  "background-attachment",
  "background-blend-mode",
] as const;
/** One background layer's value of each property. */
type Layer = Record<(typeof LAYER_PROPERTIES)[number], string>;

/** A painted video: its rule's id, the time it was painted at, its frames' URLs. */
interface Painted {
  id: string;
  time: number;
  /** This paint's frame and the one before: the older is released on the next paint. */
  urls: string[];
  rule: string;
}

/** The painter's state for one page: its adopted sheet and what it painted. */
interface PainterState {
  sleep: (ms: number) => Promise<void>;
  sheet: CSSStyleSheet;
  painted: Map<HTMLVideoElement, Painted>;
  nextId: number;
}

/**
 * Splits a computed list at its top-level commas (not inside parentheses or quotes).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(splitList('url("a,b.png"), linear-gradient(red, blue), none'), [
 *   'url("a,b.png")',
 *   "linear-gradient(red, blue)",
 *   "none",
 * ]);
 * ```
 */
export function splitList(value: string): string[] {
  const items: string[] = [];
  let depth = 0;
  let quote = "";
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "," && depth === 0) {
      items.push(value.slice(start, i).trim());
      start = i + 1;
    }
  }
  items.push(value.slice(start).trim());
  return items;
}

/** The background size that draws the picture as `object-fit` draws the video. */
function fitSize(el: HTMLVideoElement, style: CSSStyleDeclaration): string {
  switch (style.objectFit) {
    case "contain":
    case "cover":
      return style.objectFit;
    case "none":
      return "auto";
    case "scale-down": {
      const width = el.clientWidth - parseFloat(style.paddingLeft) -
        parseFloat(style.paddingRight);
      const height = el.clientHeight - parseFloat(style.paddingTop) -
        parseFloat(style.paddingBottom);
      return el.videoWidth <= width && el.videoHeight <= height ? "auto" : "contain";
    }
    default:
      return "100% 100%";
  }
}

/**
 * The declarations that put layer `ours` on top of an element's own background layers (each
 * property's computed list from `own`), and its picture out of its box. The last layer's clip
 * also clips the background colour, so the element's own layers stay even when they are just
 * "none"; each list is repeated to one value per image, as CSS does when lists are shorter
 * than the image list.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const ours = {
 *   "background-image": 'url("blob:1")',
 *   "background-size": "cover",
 *   "background-position": "50% 50%",
 *   "background-origin": "content-box",
 *   "background-clip": "content-box",
 *   "background-repeat": "no-repeat",
 *   "background-attachment": "scroll",
 *   "background-blend-mode": "normal",
 * };
 * const own = (property: string) => property === "background-image" ? "none" : "auto";
 * const css = layeredBackground(ours, own);
 * assert.ok(css.startsWith('background-image: url("blob:1"), none !important;'));
 * assert.ok(css.endsWith("object-position: -1000000px -1000000px !important;"));
 * ```
 */
export function layeredBackground(ours: Layer, own: (property: string) => string): string {
  const images = splitList(own("background-image"));
  return LAYER_PROPERTIES.map((property) => {
    const list = splitList(own(property));
    const values = [ours[property], ...images.map((_, i) => list[i % list.length])];
    return `${property}: ${values.join(", ")} !important;`;
  }).join(" ") + ` object-position: ${OUT_OF_BOX} !important;`;
}

/** The element's background declarations with `url` as a new top layer. */
function declarations(el: HTMLVideoElement, url: string): string {
  const style = getComputedStyle(el);
  const ours: Layer = {
    "background-image": `url("${url}")`,
    "background-size": fitSize(el, style),
    "background-position": style.objectPosition,
    "background-origin": "content-box",
    "background-clip": "content-box",
    "background-repeat": "no-repeat",
    "background-attachment": "scroll",
    "background-blend-mode": "normal",
  };
  return layeredBackground(ours, (property) => style.getPropertyValue(property));
}

/** The current frame as a decoded PNG behind a blob URL, or null when unreadable. */
async function frameUrl(el: HTMLVideoElement): Promise<string | null> {
  const canvas = document.createElement("canvas");
  canvas.width = el.videoWidth;
  canvas.height = el.videoHeight;
  const context = canvas.getContext("2d");
  if (!context) return null;
  context.drawImage(el, 0, 0, canvas.width, canvas.height);
  let blob: Blob | null;
  try {
    blob = await new Promise<Blob | null>((resolve) => canvas.toBlob(resolve, "image/png"));
  } catch {
    return null; // a frame from another origin without CORS taints the canvas
  }
  if (!blob) return null;
  const url = URL.createObjectURL(blob);
  // Decoded before it is used, so the next drawing has it ready.
  const image = new Image();
  image.src = url;
  try {
    await image.decode();
  } catch {
    URL.revokeObjectURL(url);
    return null;
  }
  return url;
}

/** Resolves once `el` is not seeking (a re-seek, or the page's own), at most `ms` later. */
function settled(
  el: HTMLVideoElement,
  ms: number,
  sleep: (ms: number) => Promise<void>,
): Promise<void> {
  return el.seeking
    ? Promise.race([
      new Promise<void>((resolve) =>
        el.addEventListener("seeked", () => resolve(), { once: true })
      ),
      sleep(ms),
    ])
    : Promise.resolve();
}

async function paintOne(state: PainterState, el: HTMLVideoElement): Promise<boolean> {
  await settled(el, 2000, state.sleep);
  if (el.readyState < 2 || el.videoWidth === 0 || el.videoHeight === 0) return false;
  const before = state.painted.get(el);
  if (before && before.time === el.currentTime) return false;
  const url = await frameUrl(el);
  if (!url) {
    // Unreadable now: the compositor's picture is shown again rather than an old frame.
    el.removeAttribute(ATTRIBUTE);
    return false;
  }
  const entry = before ?? { id: String(state.nextId++), time: 0, urls: [], rule: "" };
  // The element's own styles are read with the painted rule switched off.
  el.removeAttribute(ATTRIBUTE);
  entry.rule = `[${ATTRIBUTE}="${entry.id}"] { ${declarations(el, url)} }`;
  entry.time = el.currentTime;
  entry.urls.push(url);
  while (entry.urls.length > 2) URL.revokeObjectURL(entry.urls.shift()!);
  state.painted.set(el, entry);
  el.setAttribute(ATTRIBUTE, entry.id);
  return true;
}

async function paint(state: PainterState, videos: readonly HTMLVideoElement[]): Promise<number> {
  let count = 0;
  for (const el of videos) if (await paintOne(state, el)) count++;
  if (count > 0) {
    state.sheet.replaceSync([...state.painted.values()].map((p) => p.rule).join("\n"));
    // A page may have replaced the adopted sheets since the last paint.
    if (!document.adoptedStyleSheets.includes(state.sheet)) {
      document.adoptedStyleSheets = [...document.adoptedStyleSheets, state.sheet];
    }
  }
  return count;
}

function clear(state: PainterState): number {
  const count = state.painted.size;
  for (const [el, entry] of state.painted) {
    el.removeAttribute(ATTRIBUTE);
    for (const url of entry.urls) URL.revokeObjectURL(url);
  }
  state.painted.clear();
  state.sheet.replaceSync("");
  return count;
}

/**
 * Creates the painter of one page.
 *
 * @example
 * ```ts no_run
 * // In the page (the runtime installs it for screenshot capture); timers there run on
 * // the frame clock, so the painter is given a sleep on real time.
 * const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
 * const painter = createVideoFramePainter(sleep);
 * await painter.paint([...document.querySelectorAll("video")]);
 * ```
 */
export function createVideoFramePainter(sleep: (ms: number) => Promise<void>): VideoFramePainter {
  const state: PainterState = { sleep, sheet: new CSSStyleSheet(), painted: new Map(), nextId: 1 };
  return {
    paint: (videos) => paint(state, videos),
    clear: () => clear(state),
  };
}
