/**
 * `vid check`'s whole run and the cheaper check the paying commands run first. The parts
 * live one per module (`static.ts`, `media.ts`, `runtime.ts` with the fonts); this module
 * reads the composition and overrides once, runs the parts in order of cost, and gathers
 * their problems into one report. {@linkcode preflight} is the static and media parts
 * alone, which `vid render-batch`, `vid lambda render-batch` and `vid cloud render` run
 * before anything is rendered or uploaded.
 *
 * @module
 */

import { relative } from "node:path";
import { type Composition, readComposition } from "../composition/composition.ts";
import type { Variables } from "../composition/declarations.ts";
import { unresolvedFontMessage, unresolvedFonts } from "../composition/fonts.ts";
import { formatFrameRate } from "../composition/frame_rate.ts";
import { loadOverrides } from "../composition/variables.ts";
import { renderFrameRate } from "../render/render.ts";
import { prepareComposition } from "../render/session.ts";
import { mediaCheck } from "./media.ts";
import { CheckFailedError, type CheckProblem, countProblems, SEVERITY } from "./problems.ts";
import { runtimeCheck } from "./runtime.ts";
import { staticCheck } from "./static.ts";

/** Options of {@linkcode checkProject}. */
export interface CheckOptions {
  /** Project directory or HTML file. @default "." */
  target?: string;
  /** Entry HTML file inside the project directory. @default "index.html" */
  composition?: string;
  /** Inline JSON overrides (`--variables`). */
  variables?: string;
  /** JSON/JSONC overrides file (`--variables-file`). */
  variablesFile?: string;
  /** Frame rate the sampled frames are counted in. @default data-fps, else 30 */
  fps?: number | string;
  /** Folder to write the sampled frames to as PNG (`frame-000030.png`). */
  snapshots?: string;
  /** Run the browser parts (fonts, runtime). @default true */
  browser?: boolean;
  /**
   * The host's deadline of one sampled frame's seek, milliseconds (`--frame-timeout`): a page
   * busy past it is reported and not seeked further. @default 30000
   */
  frameTimeoutMs?: number;
  /** Told when capture falls back to screenshots. */
  onWarning?: (message: string) => void;
}

/** What {@linkcode checkProject} found. */
export interface CheckReport {
  composition: { id: string; file: string; width: number; height: number; duration: number };
  /** The frame rate the runtime part counted frames in, e.g. `30`. */
  fps: string;
  /** Every problem, static first, then media, fonts and runtime. */
  problems: CheckProblem[];
  errors: number;
  warnings: number;
}

/**
 * Runs every part of the check on a project.
 *
 * @example
 * ```ts no_run
 * const report = await checkProject({ target: "examples/hello" });
 * console.log(report.errors, report.warnings);
 * ```
 */
export async function checkProject(options: CheckOptions = {}): Promise<CheckReport> {
  const composition = await readComposition(options.target ?? ".", options.composition);
  const overrides = await loadOverrides(options);
  const rate = renderFrameRate(options.fps, composition.fps);
  const { problems, references } = await staticCheck({ composition, overrides });
  problems.push(...await mediaCheck(composition, references));
  // The same finding the render warns about, with the same command to resolve it.
  for (const font of await unresolvedFonts(composition.file, composition.projectDir)) {
    problems.push({
      severity: SEVERITY["font-unresolved"],
      part: "fonts",
      kind: "font-unresolved",
      message: unresolvedFontMessage(font),
      file: relative(composition.projectDir, composition.file),
      field: font.family,
    });
  }
  // A page whose scripts do not parse or whose files are missing fails the same way in
  // the browser; its findings there would only repeat these.
  const blocking = problems.some((p) => p.severity === "error" && p.kind === "syntax");
  if (options.browser !== false && !blocking) {
    const prepared = await prepareComposition({
      target: options.target,
      composition: options.composition,
      variables: options.variables,
      variablesFile: options.variablesFile,
    });
    const found = await runtimeCheck({
      prepared,
      rate,
      snapshots: options.snapshots,
      onWarning: options.onWarning,
      frameTimeoutMs: options.frameTimeoutMs,
    });
    // An undecodable video stops the session too: the media part said so already; a read
    // the static part named, the page's read tracking sees again.
    const media = problems.some((p) => p.kind === "media");
    const reads = new Set(problems.filter((p) => p.kind === "undeclared-read").map((p) => p.field));
    const fonts = new Set(
      problems.filter((p) => p.kind === "font" || p.kind === "missing-file").map((p) => p.field),
    );
    problems.push(
      ...found.filter((p) =>
        !(media && p.kind === "media") && !(p.kind === "undeclared-read" && reads.has(p.field)) &&
        !(p.kind === "font" && p.file !== undefined && fonts.has(p.file))
      ),
    );
  }
  return {
    composition: summary(composition),
    fps: formatFrameRate(rate),
    problems,
    ...countProblems(problems),
  };
}

function summary(c: Composition): CheckReport["composition"] {
  return { id: c.id, file: c.file, width: c.width, height: c.height, duration: c.duration };
}

/**
 * The problems of the static and media parts (no browser): what the studio's Check panel
 * lists and {@linkcode preflight} refuses on.
 *
 * @example
 * ```ts no_run
 * import { readComposition } from "../composition/composition.ts";
 *
 * const problems = await projectProblems(await readComposition("examples/hello"));
 * ```
 */
export async function projectProblems(
  composition: Composition,
  overrides: Variables = {},
): Promise<CheckProblem[]> {
  const { problems, references } = await staticCheck({ composition, overrides });
  problems.push(...await mediaCheck(composition, references));
  return problems;
}

/**
 * The static and media parts, for a command about to spend (render, upload): throws
 * {@linkcode CheckFailedError} listing the errors, returns the warnings. `overrides` are
 * the values every row shares (a batch's rows are checked as they render).
 *
 * @example
 * ```ts no_run
 * import { readComposition } from "../composition/composition.ts";
 *
 * await preflight(await readComposition("examples/hello"));
 * ```
 */
export async function preflight(
  composition: Composition,
  overrides: Variables = {},
): Promise<CheckProblem[]> {
  const problems = await projectProblems(composition, overrides);
  const errors = problems.filter((p) => p.severity === "error");
  if (errors.length > 0) throw new CheckFailedError(errors);
  return problems;
}
