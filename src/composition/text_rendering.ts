/**
 * Whether a composition's pages get HyperFrames' text rule
 * (`html,body,*{text-rendering:geometricPrecision}`, which HyperFrames' compiler puts first in
 * the `<head>` of every composition it renders; the page runtime inserts it,
 * `src/runtime/text_rendering.ts`): yes for a HyperFrames project
 * ({@linkcode looksLikeHyperframes}, the test that gives it HyperFrames' font aliases), no
 * for vid's own compositions, whose frames stay as they were. `VID_HYPERFRAMES_TEXT_RENDERING=0`
 * turns it off, for Chromium's default text rendering in a HyperFrames project too.
 *
 * Decided from the entry file alone, so every process that renders part of a video (a chunk
 * worker, a Lambda function, the studio) decides the same from the same project: a
 * sub-composition's host (`data-composition-src`) is in the entry file already, and so is the
 * test's answer. `<vid-player>` decides the same from the HTML it fetches.
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import process from "node:process";
import { looksLikeHyperframes } from "./font_aliases.ts";

/**
 * Whether vid applies HyperFrames' text rule to HyperFrames projects: yes unless
 * `VID_HYPERFRAMES_TEXT_RENDERING` is `0`, `off`, `false` or `no`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(applyingTextRule({}), true);
 * assert.equal(applyingTextRule({ VID_HYPERFRAMES_TEXT_RENDERING: "off" }), false);
 * ```
 */
export function applyingTextRule(
  env: Record<string, string | undefined> = process.env,
): boolean {
  return !/^(0|off|false|no)$/i.test(env.VID_HYPERFRAMES_TEXT_RENDERING ?? "");
}

/**
 * Whether the composition in `file` (its entry HTML) gets HyperFrames' text rule: a
 * HyperFrames project, unless {@linkcode applyingTextRule} says no. A file that cannot be
 * read gets none (reading the composition reports it).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(await hyperframesTextRendering("examples/hello/index.html"), false);
 * ```
 */
export async function hyperframesTextRendering(
  file: string,
  env: Record<string, string | undefined> = process.env,
): Promise<boolean> {
  if (!applyingTextRule(env)) return false;
  const html = await readFile(file, "utf8").catch(() => "");
  return looksLikeHyperframes([html]);
}
