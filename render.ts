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

export {
  type AspectRatio,
  aspectRatioOf,
  type Composition,
  DEFAULT_ENTRY,
  parseComposition,
  readComposition,
  resolveCompositionFile,
} from "./src/composition/composition.ts";
export { isCssColor } from "./src/composition/color.ts";
export {
  ACCEPTED_VARIABLE_TYPES,
  type DeclarationsResult,
  DeclarationsSyntaxError,
  type DroppedDeclaration,
  type EnumOption,
  parseDeclarations,
  VARIABLE_TYPES,
  type VariableDeclaration,
  type Variables,
  type VariableType,
  type VariableValue,
} from "./src/composition/declarations.ts";
export { VidError, type VidErrorOptions } from "./src/errors.ts";
export {
  CompositionError,
  StrictVariablesError,
  type VariableProblem,
  VariablesInputError,
} from "./src/composition/errors.ts";
export {
  type CheckOptions,
  checkOverrides,
  loadOverrides,
  mergeVariables,
  nearestName,
  type OverrideSources,
  parseInlineVariables,
  readVariablesFile,
  type ResolvedVariables,
  resolveVariables,
} from "./src/composition/variables.ts";
export {
  ffmpegRate,
  formatFrameRate,
  frameCountOf,
  type FrameRate,
  FrameRateError,
  frameRateValue,
  frameTime,
  parseFrameRate,
} from "./src/composition/frame_rate.ts";
export {
  checkTypeName,
  JSON_SCHEMA_DIALECT,
  type JsonSchema,
  TypeNameError,
  typeNameFor,
  type TypesGenOptions,
  variablesJsonSchema,
  variablesTypeSource,
} from "./src/composition/types_gen.ts";
export {
  type Chunk,
  chunkCount,
  chunkPlan,
  ChunkPlanError,
  type ChunkPlanOptions,
  DEFAULT_CHUNK_SIZE,
  DEFAULT_MAX_PARALLEL_CHUNKS,
} from "./src/render/chunk_plan.ts";
export {
  codecArgs,
  EncodeError,
  formatOfPath,
  GIF_MAX_FPS,
  OUTPUT_FORMATS,
  type OutputFormat,
  QUALITIES,
  type Quality,
  RENDER_FORMATS,
  type RenderFormat,
} from "./src/render/encode.ts";
export {
  ChunkFailedError,
  defaultWorkers,
  frameCount,
  RenderCancelledError,
  renderComposition,
  RenderOptionError,
  type RenderOptions,
  type RenderProgress,
  type RenderResult,
  resolveRenderFormat,
} from "./src/render/render.ts";
export { type CaptureMode } from "./src/render/browser.ts";
export { type CapturePreference } from "./src/render/capture_mode.ts";
export { type MediaProgress } from "./src/render/media.ts";
export {
  AudioAttributeError,
  type AudioAutomation,
  checkAudioAutomation,
  DUCK_ATTACK,
  DUCK_RELEASE,
  type GainPoint,
  parseAudioAutomation,
  parseVolume,
} from "./src/render/audio_automation.ts";
export { CaptionError, formatCaptions, readCaptions, shiftCues } from "./src/render/captions.ts";
export {
  type CaptionCue,
  type CaptionTrack,
  type CaptionWord,
  parseCaptions,
} from "./src/runtime/captions.ts";
export { type CompositionSource } from "./src/render/session.ts";
export { type PackagedFile } from "./src/project/package.ts";
export { PageError, type PageErrorDetails, type PageErrorSource } from "./src/render/page_error.ts";
export { MissingDependencyError } from "./src/render/system.ts";
export { FrameTimeoutError } from "./src/render/watchdog.ts";
export {
  type MediaAudioAttributes,
  type MediaDescriptor,
  type PageErrorRecord,
  type PageStackFrame,
  type RuntimeConfig,
  runtimeScript,
  type VidPageApi,
} from "./src/runtime/page_runtime.ts";
export type { TimedWindow } from "./src/runtime/hyperframes.ts";
export { renderStill, type StillOptions, type StillResult } from "./src/render/still.ts";
export {
  ADD_NAMES,
  type AddedLibrary,
  addLibraries,
  InitError,
  type InitOptions,
  initProject,
  type InitResult,
  listStarters,
} from "./src/init/init.ts";
export {
  LIBRARIES,
  type Library,
  LIBRARY_NAMES,
  type LibraryName,
  LibraryNotFoundError,
} from "./src/init/vendor.ts";
export {
  type FetchFontOptions,
  FONT_PACKAGES,
  type FontPackage,
  FontPackageError,
  type VendoredFont,
  vendorFontPackage,
} from "./src/init/font_packages.ts";
export {
  type LocalBatchManifestRow,
  type LocalBatchProgress,
  type LocalBatchResult,
  type LocalBatchRowStatus,
  type LocalBatchSummary,
  renderBatchLocal,
  type RenderBatchLocalOptions,
  summarizeLocalBatch,
} from "./src/batch/local.ts";
export {
  type CsvRecord,
  parseBatchLine,
  parseCsv,
  type ParsedBatchLine,
  readBatchFile,
} from "./src/batch/entries.ts";
export {
  BatchInputError,
  type BatchManifestRow,
  batchRenderId,
  type BatchRowStatus,
} from "./src/batch/manifest.ts";
