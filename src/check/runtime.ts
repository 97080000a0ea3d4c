/**
 * The fonts and runtime parts of `vid check`, in one browser session of the renderer
 * (`openRenderSession`: the same page runtime, media stand-ins and capture a render
 * uses). The page is loaded once, its fonts are loaded (`document.fonts`), and it is
 * seeked forward to sampled frames: the first and last, every second, and each clip's
 * start and end. At each the check records what the page threw (file, line, column and
 * stack, as a render reports it), visible text that reads `NaN`, `undefined` or
 * `[object Object]`, and text that runs off the canvas; `snapshots` writes each sampled
 * frame as a PNG named by its frame.
 *
 * @module
 */

import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { frameCountOf, type FrameRate, frameRateValue } from "../composition/frame_rate.ts";
import {
  createCapturer,
  evaluate,
  type FrameVideos,
  PageError,
  seekFrame,
} from "../render/capture.ts";
import { failedFonts, fontFailureMessage } from "../render/fonts.ts";
import { MediaError } from "../render/media.ts";
import { AudioAttributeError } from "../render/audio_automation.ts";
import { CaptionError } from "../render/captions.ts";
import {
  type CompositionPage,
  fastForward,
  frameUnderDeadline,
  openComposition,
} from "../render/render_chunk.ts";
import { FrameTimeoutError } from "../render/watchdog.ts";
import {
  MissingAssetError,
  openRenderSession,
  type PreparedComposition,
  type RenderSession,
} from "../render/session.ts";
import { type CheckProblem, SEVERITY } from "./problems.ts";
import { TEXT_PROBE_BUNDLE } from "../runtime/text_probe_bundle.ts";
import { badTextMessage, type TextFinding } from "../runtime/text_checks.ts";
import { UNDECLARED_READ } from "../runtime/variable_reads.ts";

/** Input of {@linkcode runtimeCheck}. */
export interface RuntimeInput {
  prepared: PreparedComposition;
  /** The frame rate sampled frames are counted in. */
  rate: FrameRate;
  /** A folder to write each sampled frame to, as `frame-000030.png`. */
  snapshots?: string;
  /** Told when the session falls back to screenshots. */
  onWarning?: (message: string) => void;
  /** The host's deadline of one sampled frame's seek, milliseconds. @default 30000 */
  frameTimeoutMs?: number;
}

/** How many page errors the runtime part reports before it stops seeking. */
const MAX_PAGE_ERRORS = 3;

/**
 * The frames the runtime part seeks to, in order: the first and last, one per second,
 * and the frames where clips start and end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(sampleFrames(2.5, { num: 30, den: 1 }, [[0.5, 1]]), [0, 15, 29, 30, 60, 74]);
 * ```
 */
export function sampleFrames(
  duration: number,
  rate: FrameRate,
  clips: readonly (readonly [number, number | null])[],
): number[] {
  const total = frameCountOf(duration, rate);
  const fps = frameRateValue(rate);
  const at = (seconds: number): number => Math.floor(seconds * fps + 1e-9);
  const frames = new Set<number>([0, total - 1]);
  for (let second = 1; second < duration; second++) frames.add(at(second));
  for (const [start, end] of clips) {
    frames.add(at(start));
    if (end !== null) frames.add(at(end) - 1);
  }
  return [...frames].filter((f) => f >= 0 && f < total).sort((a, b) => a - b);
}

function short(text: string): string {
  const one = text.replace(/\s+/g, " ");
  return one.length > 60 ? `${one.slice(0, 57)}...` : one;
}

/** The problem of an error thrown while the session opened or the page loaded. */
function sessionProblem(error: unknown): CheckProblem | undefined {
  if (error instanceof PageError) return pageProblem(error);
  if (error instanceof MissingAssetError) {
    return {
      severity: SEVERITY["missing-file"],
      part: "runtime",
      kind: "missing-file",
      message: error.message,
      field: error.field,
    };
  }
  // Audio automation and caption files are checked as the session opens, as for a render.
  if (error instanceof AudioAttributeError || error instanceof MediaError) {
    return {
      severity: SEVERITY.media,
      part: "media",
      kind: "media",
      message: error.message,
      field: error.field,
    };
  }
  if (error instanceof CaptionError) {
    return {
      severity: SEVERITY.syntax,
      part: "media",
      kind: "syntax",
      message: error.message,
      field: "data-captions",
      ...(error.line !== undefined && { line: error.line }),
    };
  }
  return undefined;
}

function pageProblem(error: PageError): CheckProblem {
  // A read of an undeclared id (the runtime's read tracking): named as the static part names it.
  const read = new RegExp(
    `${UNDECLARED_READ}: \`([^\`]+)\` is read (but not declared;(?: did you mean \`[^\`]+\`\\?)? ` +
      "declared: [^\\s,]+(?:, [^\\s,]+)*)",
  ).exec(error.message);
  if (read && error.location) {
    const where = `${error.location.file}:${error.location.line}:${error.location.column}`;
    return {
      severity: SEVERITY["undeclared-read"],
      part: "runtime",
      kind: "undeclared-read",
      message: `\`${read[1]}\` is read at ${where} ${read[2]}`,
      file: error.location.file,
      line: error.location.line,
      column: error.location.column,
      ...(error.frame !== null && { frame: error.frame }),
      field: read[1],
    };
  }
  return {
    severity: SEVERITY["page-error"],
    part: "runtime",
    kind: "page-error",
    message: error.message,
    ...(error.location && {
      file: error.location.file,
      line: error.location.line,
      column: error.location.column,
    }),
    ...(error.frame !== null && { frame: error.frame }),
    field: error.field,
    stack: error.callStack.slice(0, 3),
  };
}

/**
 * Loads the composition in one render session and seeks it to the sampled frames.
 *
 * @example
 * ```ts no_run
 * import { prepareComposition } from "../render/session.ts";
 *
 * const prepared = await prepareComposition({ target: "examples/hello" });
 * const problems = await runtimeCheck({ prepared, rate: { num: 30, den: 1 } });
 * ```
 */
export async function runtimeCheck(input: RuntimeInput): Promise<CheckProblem[]> {
  const { composition } = input.prepared;
  const fps = frameRateValue(input.rate);
  const problems: CheckProblem[] = [];
  let session: RenderSession;
  try {
    session = await openRenderSession({
      prepared: input.prepared,
      frameRate: input.rate,
      format: "mp4",
      onWarning: input.onWarning,
      frameTimeoutMs: input.frameTimeoutMs,
      // The static part named the missing files; the frames are still worth a look.
      checking: true,
    });
  } catch (error) {
    const problem = sessionProblem(error);
    if (!problem) throw error;
    return [problem];
  }
  let page: CompositionPage | undefined;
  try {
    try {
      page = session.takePage() ?? await openComposition(session.browser, session.spec);
    } catch (error) {
      const problem = sessionProblem(error);
      if (!problem) throw error;
      return [problem];
    }
    for (const failure of await failedFonts(page.page)) {
      problems.push({
        severity: SEVERITY.font,
        part: "fonts",
        kind: "font",
        message: fontFailureMessage(failure),
        ...(failure.files[0] !== undefined && { file: failure.files[0] }),
        field: failure.family,
      });
    }
    const clips = await evaluate(
      page.page,
      `Array.from(document.querySelectorAll("[data-start]"), (el) => {
        const start = Number(el.getAttribute("data-start"));
        const length = Number(el.getAttribute("data-duration"));
        return [start, Number.isFinite(length) && length > 0 ? start + length : null];
      }).filter(([start]) => Number.isFinite(start))`,
    ) as [number, number | null][];
    const frames = sampleFrames(composition.duration, input.rate, clips);
    if (input.snapshots) await mkdir(input.snapshots, { recursive: true });
    const seen = new Set<string>();
    let pageErrors = 0;
    let capturer:
      | { page: CompositionPage; capture(videos: FrameVideos): Promise<Uint8Array> }
      | undefined;
    for (const frame of frames) {
      if (!page) {
        try {
          page = await openComposition(session.browser, session.spec);
        } catch (error) {
          const problem = sessionProblem(error);
          if (!problem) throw error;
          problems.push(problem);
          break;
        }
      }
      let videos: FrameVideos;
      try {
        const open = page;
        await fastForward(open, frame);
        videos = await frameUnderDeadline(open, frame, () => seekFrame(open.page, frame));
      } catch (error) {
        if (error instanceof FrameTimeoutError) {
          // The page is busy without end: its browser is stopped, so nothing more is seeked.
          problems.push({
            severity: SEVERITY["page-error"],
            part: "runtime",
            kind: "page-error",
            message: error.message,
            frame,
            field: "--frame-timeout",
          });
          page = undefined;
          break;
        }
        if (!(error instanceof PageError)) throw error;
        const problem = pageProblem(error);
        const key = `error|${problem.file}:${problem.line}|${
          error.message.replace(/^frame \d+: /, "")
        }`;
        if (!seen.has(key)) {
          seen.add(key);
          problems.push(problem);
        }
        // The page stays failed once it threw: the next sample starts on a fresh page.
        await page.close();
        page = undefined;
        if (++pageErrors >= MAX_PAGE_ERRORS) break;
        continue;
      }
      const findings = await evaluate(
        page.page,
        `(${TEXT_PROBE_BUNDLE})(${composition.width}, ${composition.height})`,
      ) as TextFinding[];
      for (const f of findings) {
        const key = `${f.kind}|${f.element}|${f.kind === "bad-text" ? f.detail : ""}`;
        if (seen.has(key)) continue;
        seen.add(key);
        problems.push({
          severity: SEVERITY[f.kind],
          part: "runtime",
          kind: f.kind,
          frame,
          field: f.element,
          message: f.kind === "bad-text"
            ? badTextMessage(f)
            : `<${f.element}> text "${short(f.text)}" runs off the canvas: ${f.detail}`,
        });
      }
      if (input.snapshots) {
        // One capturer per page: a BeginFrame capturer reuses its last image when nothing moved.
        if (capturer?.page !== page) {
          const made = createCapturer(page.page, {
            mode: session.browser.mode,
            format: "png",
            fps,
          });
          capturer = { page, capture: (v) => made.capture(v) };
        }
        const image = await capturer.capture(videos);
        await writeFile(
          join(input.snapshots, `frame-${String(frame).padStart(6, "0")}.png`),
          image,
        );
      }
    }
  } finally {
    await page?.close();
    await session.close();
  }
  return problems;
}
