/**
 * Builds the code vid runs inside pages from ordinary modules: the page runtime
 * (`src/runtime/install.ts` and its imports), the preview studio's client
 * (`src/preview/studio/main.ts` and its imports), the `<vid-player>` element
 * (`src/player/main.ts`, served at `/player.js`) and the probes a render and `vid check` call
 * in the page (`src/runtime/font_probe.ts`, `src/runtime/text_probe.ts`), each bundled by esbuild into one script and
 * written, as a string constant, to a checked-in module the renderer and the studio inject
 * (`src/runtime/page_bundle.ts`, `src/preview/studio_bundle.ts`). The player is also written
 * as a plain script, `examples/player/player.js`, so the example page loads it from its own
 * folder on any static server.
 *
 * ```sh
 * deno task build:page          # rewrites the bundles
 * deno task build:page --check  # exit 1 naming each bundle that is stale
 * ```
 *
 * Why at build time and checked in, not bundled when vid starts: vid runs from the npm
 * package under Node and inside the Lambda worker's bundle, where esbuild's native binary is
 * not shipped (and must not be downloaded at run time), and `vid render`'s start-up would pay
 * for starting esbuild. A string in a module travels everywhere the code does.
 * `tests/integration/page_bundles_test.ts` fails when a checked-in bundle differs from what
 * this script builds from the sources.
 *
 * The bundles are not minified, so a stack or a breakpoint in the page reads as the source; all
 * but the player's, which every page that embeds `<vid-player>` downloads (minified: 258 KB
 * against 438 KB, most of it the HTML parser). Minifying it leaves the page runtime it puts into
 * compositions as it is: that runtime is a string in it (`PAGE_RUNTIME_BUNDLE`), not its code.
 *
 * @module
 */

import * as esbuild from "esbuild";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** One script bundled for pages. */
export interface PageBundle {
  /** What it is, in messages. */
  name: string;
  /** The entry module, from the repository root. */
  entry: string;
  /** The checked-in module holding the bundle, from the repository root. */
  output: string;
  /** The constant that module exports. */
  constant: string;
  /**
   * `"function"`: the bundle is an expression whose value is the entry's export `exported`
   * (called by the host with its arguments); `"run"`: a script that runs the entry.
   */
  shape: "function" | "run";
  /** The entry's export the expression evaluates to (shape `"function"`). */
  exported?: string;
  /** The constant's JSDoc. */
  doc: string;
  /**
   * `false` for a bundle only ever served as its own file (`/player.js`), never inside a
   * `<script>` element: it may hold `</script` and `<!--` (the player carries an HTML parser
   * whose tables spell them). Every other bundle is inlined into pages, where it must not.
   */
  inline?: boolean;
  /**
   * Plain script files holding the same code, from the repository root, for pages served by
   * any static server (`examples/player/player.js`): checked for staleness like `output`.
   */
  files?: readonly string[];
  /**
   * Minified (whitespace, syntax, names): only for a bundle downloaded by pages that are not
   * vid's (the player's). Stacks in it then read as minified code.
   */
  minify?: boolean;
}

/** The bundles this script builds. */
export const PAGE_BUNDLES: PageBundle[] = [
  {
    name: "page runtime",
    entry: "src/runtime/install.ts",
    output: "src/runtime/page_bundle.ts",
    constant: "PAGE_RUNTIME_BUNDLE",
    shape: "function",
    exported: "installVidRuntime",
    doc:
      "The page runtime: an expression whose value is the function `installVidRuntime` (`src/runtime/install.ts`), called with the config.",
  },
  {
    name: "studio client",
    entry: "src/preview/studio/main.ts",
    output: "src/preview/studio_bundle.ts",
    constant: "STUDIO_CLIENT_BUNDLE",
    shape: "run",
    doc: "The preview studio's script (`src/preview/studio/`): runs once on the studio page.",
  },
  {
    name: "player",
    entry: "src/player/main.ts",
    output: "src/player/player_bundle.ts",
    constant: "PLAYER_BUNDLE",
    shape: "run",
    inline: false,
    files: ["examples/player/player.js"],
    minify: true,
    doc:
      "The `<vid-player>` module (`src/player/`), served at `/player.js`: defines the element in the page that loads it.",
  },
  {
    name: "font probe",
    entry: "src/runtime/font_probe.ts",
    output: "src/runtime/font_probe_bundle.ts",
    constant: "FONT_PROBE_BUNDLE",
    shape: "function",
    exported: "pageFontFailures",
    doc:
      "The font probe: an expression whose value is the function `pageFontFailures` (`src/runtime/font_probe.ts`).",
  },
  {
    name: "text probe",
    entry: "src/runtime/text_probe.ts",
    output: "src/runtime/text_probe_bundle.ts",
    constant: "TEXT_PROBE_BUNDLE",
    shape: "function",
    exported: "pageTextFindings",
    doc:
      "vid check's text probe: an expression whose value is the function `pageTextFindings` (`src/runtime/text_probe.ts`), called with the canvas's width and height.",
  },
];

/** The browsers the bundles are written for: the Chromium vid renders and previews with. */
const TARGET = "es2022";

/**
 * Bundles `bundle`'s entry with esbuild: the script text, as the checked-in module holds it.
 */
export async function buildPageBundle(bundle: PageBundle): Promise<string> {
  const result = await esbuild.build({
    entryPoints: [join(ROOT, bundle.entry)],
    // The bundle's "// src/…" path comments are relative to this: the same from any cwd.
    absWorkingDir: ROOT,
    bundle: true,
    write: false,
    platform: "browser",
    format: bundle.shape === "function" ? "esm" : "iife",
    target: TARGET,
    charset: "utf8",
    legalComments: "none",
    minify: bundle.minify === true,
    logLevel: "silent",
  });
  const text = result.outputFiles[0].text;
  if (bundle.shape === "run") return text;
  // The entry's one export closes an ES module bundle: the body becomes a function's, which
  // returns it, so the page gets no module and no global.
  const tail = `export {\n  ${bundle.exported}\n};\n`;
  if (!text.endsWith(tail)) {
    throw new Error(
      `${bundle.entry}: the bundle must end with "export { ${bundle.exported} }" ` +
        `(its only export, not renamed); it ends ${JSON.stringify(text.slice(-80))}`,
    );
  }
  const body = text.slice(0, -tail.length).trimEnd();
  return `(() => {\n${body}\nreturn ${bundle.exported};\n})()`;
}

/** `code` as a template literal: backslashes, backticks and `${` escaped. */
function templateLiteral(code: string): string {
  return "`" + code.replace(/\\/g, "\\\\").replace(/`/g, "\\`").replace(/\$\{/g, "\\${") + "`";
}

/** The checked-in module holding `code`, the bundle of `bundle`. */
export function bundleModule(bundle: PageBundle, code: string): string {
  return `// deno-fmt-ignore-file
// deno-lint-ignore-file
/**
 * Generated by \`deno task build:page\` (scripts/build_page_code.ts) from ${bundle.entry} and
 * the modules it imports: do not edit; change those and run the task again.
 * tests/integration/page_bundles_test.ts fails when this file is stale.
 *
 * @module
 */

/** ${bundle.doc} */
export const ${bundle.constant}: string = ${templateLiteral(code)};
`;
}

/** One of {@linkcode PageBundle.files}: `code` under a header saying where it comes from. */
export function bundleFile(bundle: PageBundle, code: string): string {
  return `// deno-fmt-ignore-file
// deno-lint-ignore-file
// Generated by \`deno task build:page\` (scripts/build_page_code.ts) from ${bundle.entry}: do not
// edit. The same code as ${bundle.output} (${bundle.constant}), as a file a static server serves.
${code}`;
}

/** Every file `bundle` is written to (from the repository root), with its text. */
export function bundleOutputs(bundle: PageBundle, code: string): [string, string][] {
  return [
    [bundle.output, bundleModule(bundle, code)],
    ...(bundle.files ?? []).map((file): [string, string] => [file, bundleFile(bundle, code)]),
  ];
}

/** Builds every bundle; with `check`, writes nothing and returns the stale files. */
export async function buildPageBundles(check = false): Promise<string[]> {
  const stale: string[] = [];
  try {
    for (const bundle of PAGE_BUNDLES) {
      for (const [file, text] of bundleOutputs(bundle, await buildPageBundle(bundle))) {
        const path = join(ROOT, file);
        let current: string | undefined;
        try {
          current = await Deno.readTextFile(path);
        } catch {
          current = undefined;
        }
        if (current === text) continue;
        stale.push(`${file} (${bundle.name})`);
        if (!check) await Deno.writeTextFile(path, text);
      }
    }
  } finally {
    await esbuild.stop();
  }
  return stale;
}

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const stale = await buildPageBundles(check);
  for (const file of stale) {
    console.log(check ? `${file} is stale: run deno task build:page` : `wrote ${file}`);
  }
  if (check && stale.length > 0) Deno.exit(1);
}
