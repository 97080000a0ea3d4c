/**
 * `@vid/cli/render`: render on this machine. Read a composition and its variables, render
 * it to video (`renderComposition`), a still (`renderStill`) or a batch of personalised
 * videos (`renderBatchLocal`), start a project (`initProject`). Its module graph reaches no
 * cloud SDK, so importing it loads no AWS code.
 *
 * @example
 * ```ts no_run
 * import { renderComposition } from "@vid/cli/render";
 *
 * const result = await renderComposition({
 *   target: "examples/hello",
 *   values: { title: "Launch day" },
 *   output: "renders/launch.mp4",
 * });
 * console.log(`${result.frames} frames`);
 * ```
 *
 * @module
 */

// The SDK's public surface on this machine: what a program that renders needs, the types
// those functions take and return, and the errors it handles apart from others. Everything
// else (codec arguments, parsers, page runtime, constants, the errors a caller catches as a
// VidError, whose field, flag and exit code say what was wrong) is internal: tests and
// scripts import it from src/ directly. tests/integration/api_snapshot_test.ts shows every
// change here.

export {
  type AspectRatio,
  type Composition,
  readComposition,
} from "./src/composition/composition.ts";
export {
  type DroppedDeclaration,
  type VariableDeclaration,
  type VariableType,
} from "./src/composition/declarations.ts";
export { VidError } from "./src/errors.ts";
export {
  CompositionError,
  StrictVariablesError,
  type VariableProblem,
} from "./src/composition/errors.ts";
export { type FrameRate } from "./src/composition/frame_rate.ts";
export { type OutputFormat, type Quality, type RenderFormat } from "./src/render/encode.ts";
export {
  RenderCancelledError,
  renderComposition,
  RenderOptionError,
  type RenderOptions,
  type RenderProgress,
  type RenderResult,
} from "./src/render/render.ts";
export { type CaptureMode } from "./src/render/browser.ts";
export { type CapturePreference } from "./src/render/capture_mode.ts";
export { type MediaProgress } from "./src/render/media.ts";
export { type CompositionSource } from "./src/render/session.ts";
export { type PackagedFile } from "./src/project/package.ts";
export { PageError, type PageErrorDetails, type PageErrorSource } from "./src/render/page_error.ts";
export { MissingDependencyError } from "./src/render/system.ts";
export { FrameTimeoutError } from "./src/render/watchdog.ts";
export { renderStill, type StillOptions, type StillResult } from "./src/render/still.ts";
export { type InitOptions, initProject, type InitResult } from "./src/init/init.ts";
export {
  type LocalBatchManifestRow,
  type LocalBatchProgress,
  type LocalBatchResult,
  renderBatchLocal,
  type RenderBatchLocalOptions,
} from "./src/batch/local.ts";
export {
  BatchInputError,
  type BatchManifestRow,
  type BatchRowStatus,
} from "./src/batch/manifest.ts";
