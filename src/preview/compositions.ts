/**
 * The compositions of a previewed project as the studio's API describes them: the list for
 * the switcher (`GET /__preview/compositions`), one composition's size, timing,
 * declarations and render choices (`GET /__preview/composition`), and the variables' check
 * (`POST /__preview/variables`) with the CLI's own checks.
 *
 * @module
 */

import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Composition } from "../composition/composition.ts";
import type { VariableDeclaration, Variables } from "../composition/declarations.ts";
import type { VariableProblem } from "../composition/errors.ts";
import { checkOverrides, mergeVariables } from "../composition/variables.ts";
import { frameCountOf, type FrameRate, frameRateValue } from "../composition/frame_rate.ts";
import { STUDIO_FORMATS } from "./render_job.ts";
import { QUALITIES } from "../render/encode.ts";
import { MAX_SCALE } from "../request/options.ts";
import { type PreviewContext, readEntry } from "./context.ts";

/** What `GET /__preview/composition` answers. */
export interface PreviewComposition {
  id: string;
  entry: string;
  width: number;
  height: number;
  duration: number;
  aspectRatio: string | null;
  fps: number;
  frames: number;
  declarations: VariableDeclaration[];
  dropped: Composition["dropped"];
  defaults: Variables;
  /** What the render dialog offers. */
  render: { formats: readonly string[]; qualities: readonly string[]; scales: readonly string[] };
}

/** One composition of the project, as `GET /__preview/compositions` lists it. */
export interface PreviewCompositionEntry {
  /** File name relative to the project, e.g. `index.html`. */
  entry: string;
  /** `data-composition-id`, or null when the file cannot be read right now. */
  id: string | null;
  /** Why it cannot be read (mid-edit), when it cannot. */
  error?: string;
}

/** What `POST /__preview/variables` answers. */
export interface VariablesCheck {
  /** The same problems (and messages) `vid render --variables` reports. */
  problems: VariableProblem[];
  /** The values that differ from the defaults: what `--variables` needs. */
  overrides: Variables;
  /** `overrides` as the JSON text for `--variables`. */
  variablesJson: string;
}

/**
 * Checks studio values with the CLI's checks and finds the overrides worth passing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const check = checkStudioValues(
 *   [{ id: "n", type: "number", label: "n", default: 1 }],
 *   { n: "x" },
 * );
 * assert.equal(check.problems[0].message, '"n" (number) expects a finite number, got "x"');
 * ```
 */
export function checkStudioValues(
  declarations: readonly VariableDeclaration[],
  values: Variables,
  projectDir?: string,
): VariablesCheck {
  const defaults = mergeVariables(declarations, {});
  const overrides: Variables = {};
  for (const [key, value] of Object.entries(values)) {
    if (!(key in defaults) || defaults[key] !== value) overrides[key] = value;
  }
  return {
    problems: checkOverrides(declarations, values, { projectDir }),
    overrides,
    variablesJson: JSON.stringify(overrides),
  };
}

/** A composition as `GET /__preview/composition` answers it, at the frame rate `rate`. */
export function describeComposition(c: Composition, rate: FrameRate): PreviewComposition {
  return {
    id: c.id,
    entry: c.entry,
    width: c.width,
    height: c.height,
    duration: c.duration,
    aspectRatio: c.aspectRatio,
    fps: frameRateValue(rate),
    frames: frameCountOf(c.duration, rate),
    declarations: c.declarations,
    dropped: c.dropped,
    defaults: mergeVariables(c.declarations, {}),
    render: {
      formats: STUDIO_FORMATS,
      qualities: QUALITIES,
      // Every --scale the render option takes.
      scales: Array.from({ length: MAX_SCALE }, (_, i) => String(i + 1)),
    },
  };
}

/** A composition root in the markup: the attribute every composition root carries. */
const COMPOSITION_ROOT = /\sdata-composition-id\s*=/i;

/**
 * Every `.html` file at the project root with a composition root, and the starting entry
 * (which may sit in a subfolder), each with its id or why it cannot be read.
 */
export async function listCompositions(ctx: PreviewContext): Promise<PreviewCompositionEntry[]> {
  const names = (await readdir(ctx.projectDir, { withFileTypes: true }))
    .filter((d) => d.isFile() && /^[^.].*\.html?$/i.test(d.name))
    .map((d) => d.name);
  const found: PreviewCompositionEntry[] = [];
  // The starting entry may sit in a subfolder (`--composition scenes/a.html`).
  const nested = names.includes(ctx.defaultEntry) ? [] : [ctx.defaultEntry];
  for (const entry of [...nested, ...names.sort()]) {
    const html = await readFile(join(ctx.projectDir, entry), "utf8").catch(() => "");
    if (entry !== ctx.defaultEntry && !COMPOSITION_ROOT.test(html)) continue;
    try {
      found.push({ entry, id: (await readEntry(ctx, entry)).id });
    } catch (error) {
      found.push({ entry, id: null, error: (error as Error).message });
    }
  }
  return found;
}

/** Whether a file of the project holds a composition root. */
export async function isComposition(ctx: PreviewContext, entry: string): Promise<boolean> {
  const html = await readFile(join(ctx.projectDir, entry), "utf8").catch(() => "");
  return COMPOSITION_ROOT.test(html);
}
