/**
 * The starter projects of `vid init`: each a complete composition a motion designer edits
 * rather than writes from nothing, with typed variables, an example batch file and, where
 * it animates with a library, that library vendored into `lib/` (see vendor.ts) so the
 * project renders offline.
 *
 * The files are kept here as text, not as files beside the module, so the starters ship
 * inside every build of vid (checkout, npm package, compiled binary) with no file lookups.
 *
 * @module
 */

import type { LibraryName } from "./vendor.ts";

/** One starter of `vid init --template`. */
export interface Starter {
  /** The name given to `--template`. */
  name: string;
  /** One line for `vid init --list`. */
  description: string;
  /** Composition width in pixels. */
  width: number;
  /** Composition height in pixels. */
  height: number;
  /** Composition length in seconds. */
  duration: number;
  /** The suggested render command's output path (its extension picks the format). */
  output: string;
  /** Libraries copied into `lib/`. */
  libraries: readonly LibraryName[];
  /** Project files, path to text. */
  files: Readonly<Record<string, string>>;
}

const FONT = `"Noto Sans", "DejaVu Sans", "Liberation Sans", sans-serif`;

const GITIGNORE = "renders/\n";

/**
 * Batch files are inputs of the batch, not files the page loads: kept out of uploads, and
 * out of the project's content address, so editing a row re-renders only that row.
 */
const VIDIGNORE = "*.jsonl\n*.csv\n";

/** The declarations attribute: one declaration per line, so a diff shows one variable. */
function declarations(list: readonly Record<string, unknown>[]): string {
  const lines = list.map((d) => `        ${JSON.stringify(d).replaceAll("'", "&#39;")}`);
  return `'[\n${lines.join(",\n")}\n      ]'`;
}

const SOCIAL_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Social story</title>
    <style>
    html, body { margin: 0; width: 1080px; height: 1920px; overflow: hidden; background: #0d0b1e; }
    #stage {
      --accent: #ff3d7f;
      position: relative; width: 1080px; height: 1920px; overflow: hidden;
      background: #0d0b1e; color: #fff; font-family: ${FONT};
    }
    .glow {
      position: absolute; left: -300px; top: -300px; width: 1400px; height: 1400px;
      border-radius: 50%;
      background: radial-gradient(circle, color-mix(in srgb, var(--accent) 30%, transparent), transparent 65%);
    }
    #bar {
      position: absolute; left: 96px; top: 760px; width: 888px; height: 24px;
      background: var(--accent); transform-origin: left center;
    }
    #headline {
      position: absolute; left: 96px; right: 96px; top: 820px; margin: 0;
      font-size: 120px; line-height: 1.05; font-weight: 800;
    }
    #subline { position: absolute; left: 96px; right: 96px; top: 1140px; margin: 0; font-size: 56px; opacity: 0.8; }
    #cta {
      position: absolute; left: 96px; bottom: 220px; padding: 28px 56px; border-radius: 999px;
      background: var(--accent); font-size: 48px; font-weight: 700;
    }
    </style>
    <!-- GSAP, vendored by vid init: the page is served from this folder, so it renders offline. -->
    <script src="lib/gsap.min.js"></script>
  </head>
  <body>
    <div
      id="stage"
      data-composition-id="social"
      data-width="1080"
      data-height="1920"
      data-duration="6"
      data-composition-variables=${
  declarations([
    { id: "headline", type: "string", label: "Headline", default: "Big news is here" },
    { id: "subline", type: "string", label: "Subline", default: "Everything you need to know" },
    { id: "cta", type: "string", label: "Call to action", default: "Link in bio" },
    { id: "accent", type: "color", label: "Accent color", default: "#ff3d7f" },
  ])
}
    >
      <div class="glow" id="glow"></div>
      <div id="bar"></div>
      <h1 id="headline"></h1>
      <p id="subline"></p>
      <div id="cta"></div>
    </div>
    <script>
    // A plain script (not a module), so the vid runtime is installed before it runs.
    const v = window.__vid.getVariables();
    document.getElementById("stage").style.setProperty("--accent", String(v.accent));
    document.getElementById("headline").textContent = String(v.headline);
    document.getElementById("subline").textContent = String(v.subline);
    document.getElementById("cta").textContent = String(v.cta);

    // One paused timeline; vid seeks it to each frame's time (frame n is t = n / fps).
    const tl = gsap.timeline({ paused: true });
    tl.from("#glow", { opacity: 0, scale: 0.6, duration: 1.2, ease: "power2.out" }, 0)
      .from("#bar", { scaleX: 0, duration: 0.8, ease: "power3.out" }, 0.2)
      .from("#headline", { y: 80, opacity: 0, duration: 0.8, ease: "power3.out" }, 0.4)
      .from("#subline", { y: 40, opacity: 0, duration: 0.6, ease: "power2.out" }, 0.8)
      .from("#cta", { scale: 0.6, opacity: 0, duration: 0.5, ease: "back.out(2)" }, 1.4)
      .to("#headline", { y: -20, duration: 4.6, ease: "none" }, 1.2);
    window.__timelines = [tl];
    </script>
  </body>
</html>
`;

const LOWER_THIRD_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Lower third</title>
    <style>
    /* Transparent page: render to .webm (VP9) or .mov (ProRes 4444) to keep the alpha. */
    html, body { margin: 0; width: 1920px; height: 1080px; overflow: hidden; background: transparent; }
    #stage { --accent: #ffb703; position: relative; width: 1920px; height: 1080px; font-family: ${FONT}; }
    .panel {
      position: absolute; left: 96px; top: 800px; height: 160px; display: flex;
      animation: slide-in 0.6s cubic-bezier(0.2, 0.8, 0.2, 1) 0.2s both,
        slide-out 0.5s ease-in 4.3s forwards;
    }
    .accent { width: 16px; background: var(--accent); }
    .text {
      display: flex; flex-direction: column; justify-content: center; padding: 0 48px;
      background: rgba(12, 12, 20, 0.92);
    }
    .name { font-size: 56px; font-weight: 700; color: #fff; }
    .role { font-size: 32px; color: #c9c9d6; margin-top: 6px; }
    @keyframes slide-in { from { transform: translateX(-120%); } to { transform: none; } }
    @keyframes slide-out { to { transform: translateX(-120%); } }
    </style>
  </head>
  <body>
    <div
      id="stage"
      data-composition-id="lower-third"
      data-width="1920"
      data-height="1080"
      data-duration="5"
      data-composition-variables=${
  declarations([
    { id: "name", type: "string", label: "Name", default: "Ada Lovelace" },
    { id: "role", type: "string", label: "Role", default: "Analyst, Analytical Engine" },
    { id: "accent", type: "color", label: "Accent color", default: "#ffb703" },
  ])
}
    >
      <div class="panel">
        <div class="accent"></div>
        <div class="text"><div class="name" id="name"></div><div class="role" id="role"></div></div>
      </div>
    </div>
    <script>
    // CSS animations need no library: vid pauses them and sets their time on every frame.
    const v = window.__vid.getVariables();
    document.getElementById("stage").style.setProperty("--accent", String(v.accent));
    document.getElementById("name").textContent = String(v.name);
    document.getElementById("role").textContent = String(v.role);
    </script>
  </body>
</html>
`;

const PRODUCT_HTML = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Product card</title>
    <style>
    html, body { margin: 0; width: 1080px; height: 1080px; overflow: hidden; }
    #stage {
      --bg: #f4efe6; --accent: #e63946;
      position: relative; width: 1080px; height: 1080px; overflow: hidden;
      background: var(--bg); color: #1d1d1f; font-family: ${FONT};
    }
    #image {
      position: absolute; left: 240px; top: 100px; width: 600px; height: 600px; object-fit: contain;
      animation: pop 0.8s cubic-bezier(0.2, 0.8, 0.2, 1.2) both;
    }
    #product {
      position: absolute; left: 0; right: 0; top: 740px; margin: 0; text-align: center;
      font-size: 84px; font-weight: 800; animation: rise 0.6s ease-out 0.4s both;
    }
    #price {
      position: absolute; left: 50%; top: 880px; transform: translateX(-50%);
      padding: 16px 48px; border-radius: 999px; background: var(--accent); color: #fff;
      font-size: 56px; font-weight: 700; animation: fade 0.5s ease-out 0.9s both;
    }
    @keyframes pop { from { transform: scale(0.5); opacity: 0; } }
    @keyframes rise { from { transform: translateY(40px); opacity: 0; } }
    @keyframes fade { from { opacity: 0; } }
    </style>
  </head>
  <body>
    <div
      id="stage"
      data-composition-id="product-card"
      data-width="1080"
      data-height="1080"
      data-duration="5"
      data-composition-variables=${
  declarations([
    { id: "product", type: "string", label: "Product name", default: "Aurora Lamp" },
    { id: "price", type: "string", label: "Price", default: "$129" },
    {
      id: "image",
      type: "image",
      label: "Product image: a path inside this project or an https URL",
      default: "assets/product.svg",
    },
    { id: "background", type: "color", label: "Background", default: "#f4efe6" },
    { id: "accent", type: "color", label: "Price badge", default: "#e63946" },
  ])
}
    >
      <img id="image" alt="">
      <h1 id="product"></h1>
      <div id="price"></div>
    </div>
    <script>
    // The image variable holds a project path or URL (never inlined data), checked to
    // exist before the render; vid waits for it to load before capturing a frame.
    const v = window.__vid.getVariables();
    const stage = document.getElementById("stage");
    stage.style.setProperty("--bg", String(v.background));
    stage.style.setProperty("--accent", String(v.accent));
    document.getElementById("image").src = String(v.image);
    document.getElementById("product").textContent = String(v.product);
    document.getElementById("price").textContent = String(v.price);
    </script>
  </body>
</html>
`;

const PRODUCT_SVG =
  `<svg xmlns="http://www.w3.org/2000/svg" width="600" height="600" viewBox="0 0 600 600">
  <rect x="270" y="380" width="60" height="160" fill="#3d405b"/>
  <rect x="180" y="530" width="240" height="30" rx="15" fill="#3d405b"/>
  <circle cx="300" cy="300" r="200" fill="#ffb703"/>
</svg>
`;

/** The starters, by name; the first is the default. */
export const STARTERS: readonly Starter[] = [
  {
    name: "social",
    description: "9:16 social story (1080x1920, 6 s) animated with a GSAP timeline",
    width: 1080,
    height: 1920,
    duration: 6,
    output: "renders/social.mp4",
    libraries: ["gsap"],
    files: {
      "index.html": SOCIAL_HTML,
      "batch.jsonl": [
        { outputKey: "launch.mp4", variables: { headline: "Launch day", accent: "#00b4d8" } },
        { outputKey: "sale.mp4", variables: { headline: "48-hour sale", cta: "Shop now" } },
      ].map((row) => JSON.stringify(row)).join("\n") + "\n",
      ".gitignore": GITIGNORE,
      ".vidignore": VIDIGNORE,
    },
  },
  {
    name: "lower-third",
    description: "name/role lower third on a transparent background (1920x1080, 5 s): " +
      "render to .webm or .mov to keep the alpha",
    width: 1920,
    height: 1080,
    duration: 5,
    output: "renders/lower-third.webm",
    libraries: [],
    files: {
      "index.html": LOWER_THIRD_HTML,
      "batch.jsonl": [
        { outputKey: "ada.webm", variables: { name: "Ada Lovelace" } },
        {
          outputKey: "grace.webm",
          variables: { name: "Grace Hopper", role: "Rear Admiral", accent: "#2a9d8f" },
        },
      ].map((row) => JSON.stringify(row)).join("\n") + "\n",
      ".gitignore": GITIGNORE,
      ".vidignore": VIDIGNORE,
    },
  },
  {
    name: "product-card",
    description: "square product card (1080x1080, 5 s) with the product image as an image variable",
    width: 1080,
    height: 1080,
    duration: 5,
    output: "renders/product-card.mp4",
    libraries: [],
    files: {
      "index.html": PRODUCT_HTML,
      "assets/product.svg": PRODUCT_SVG,
      "batch.jsonl": [
        { outputKey: "aurora.mp4", variables: {} },
        { outputKey: "aurora-sale.mp4", variables: { price: "$99", accent: "#2a9d8f" } },
      ].map((row) => JSON.stringify(row)).join("\n") + "\n",
      ".gitignore": GITIGNORE,
      ".vidignore": VIDIGNORE,
    },
  },
];
