/**
 * `@vid/cli/lambda`: distributed rendering on your AWS account (Step Functions + Lambda, or
 * the local stack): upload a site once (`deploySite`), start renders (`renderToLambda`) and
 * JSONL batches (`renderBatch`), follow (`getRenderProgress`), cancel and download them, and
 * check an execution's input before any cloud call (`validateConfig`).
 *
 * @example
 * ```ts no_run
 * import { deploySite, renderToLambda } from "@vid/cli/lambda";
 *
 * const siteHandle = await deploySite({ projectDir: "examples/hello", bucketName: "vid-renders" });
 * const render = await renderToLambda({
 *   siteHandle,
 *   bucketName: "vid-renders",
 *   stateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render",
 *   config: { variables: { title: "Hi" } },
 * });
 * console.log(render.renderId);
 * ```
 *
 * @module
 */

export {
  type ChunkRetry,
  type CostEstimate,
  DEFAULT_LAMBDA_MEMORY_MB,
  deploySite,
  type DeploySiteOptions,
  getRenderProgress,
  LAMBDA_USD_PER_GB_SECOND,
  type LambdaRenderProgress,
  type LambdaRenderStatus,
  type RenderHandle,
  type RenderProgressOptions,
  renderToLambda,
  type RenderToLambdaOptions,
  type S3Options,
  type SfnOptions,
  type SiteHandle,
  siteHandleFromId,
  type SiteHandleOptions,
  type SiteManifest,
  USD_PER_STATE_TRANSITION,
} from "./src/lambda/sdk.ts";
export {
  ConfigError,
  type ExecutionInput,
  ExecutionInputTooLargeError,
  HdrNotSupportedError,
  MAX_EXECUTION_INPUT_BYTES,
  type RenderConfig,
  validateConfig,
  type ValidateConfigOptions,
  type WebhookConfig,
} from "./src/lambda/config.ts";
export {
  type AslDefinition,
  type AslState,
  stateMachineDefinition,
  type StateMachineOptions,
  type WorkflowFunctions,
} from "./src/lambda/state_machine.ts";
export {
  type BatchEntry,
  type BatchSummary,
  LARGE_BATCH_ROWS,
  largeBatchGuidance,
  renderBatch,
  type RenderBatchOptions,
  summarizeBatch,
} from "./src/lambda/batch.ts";
export { BATCH_RERUN_VALUES, type BatchRerun } from "./src/lambda/batch_rerun.ts";
export {
  type BatchProgress,
  type BatchProgressOptions,
  type BatchRowProgress,
  getBatchProgress,
  readBatchManifest,
} from "./src/lambda/batch_progress.ts";
export {
  listSites,
  type LoadedSite,
  loadSite,
  type LoadSiteOptions,
  removeSite,
  type SiteOptions,
  type SiteSummary,
} from "./src/lambda/sites.ts";
export {
  cancelRender,
  type CancelRenderOptions,
  type CancelResult,
  downloadRender,
  type DownloadRenderOptions,
  type RenderOutput,
  renderOutput,
  renderOutputUrl,
  type RenderOutputUrlOptions,
  type RenderRef,
  RenderStateError,
} from "./src/lambda/renders.ts";
export { StackError } from "./src/lambda/stack_error.ts";
export {
  type ChunkEstimateInput,
  estimateChunkSeconds,
  SECONDS_PER_1080P_FRAME_AT_MAX_MEMORY,
  timeCapWarning,
  type TimeCapWarningOptions,
} from "./src/lambda/time_cap.ts";
export {
  BatchInputError,
  type BatchManifestRow,
  batchRenderId,
  type BatchRowStatus,
} from "./src/batch/manifest.ts";
