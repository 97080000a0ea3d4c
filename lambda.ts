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

// The distributed SDK's public surface: deploy, render, follow, cancel, download, batch, and
// the errors a caller catches (ConfigError's subclasses are caught as a ConfigError). Cost
// constants, the state machine's definition and the batch helpers the CLI prints with are
// internal (src/lambda/); tests/integration/api_snapshot_test.ts shows every change here.

export {
  type CostEstimate,
  deploySite,
  type DeploySiteOptions,
  getRenderProgress,
  type LambdaRenderProgress,
  type LambdaRenderStatus,
  type RenderHandle,
  type RenderProgressOptions,
  renderToLambda,
  type RenderToLambdaOptions,
  type S3Options,
  type SfnOptions,
  type SiteHandle,
} from "./src/lambda/sdk.ts";
export {
  ConfigError,
  type ExecutionInput,
  type RenderConfig,
  validateConfig,
  type ValidateConfigOptions,
} from "./src/lambda/config.ts";
export { type BatchEntry, renderBatch, type RenderBatchOptions } from "./src/lambda/batch.ts";
export {
  type BatchProgress,
  type BatchProgressOptions,
  type BatchRowProgress,
  getBatchProgress,
} from "./src/lambda/batch_progress.ts";
export { type BatchRerun } from "./src/lambda/batch_rerun.ts";
export type { PackagedFile } from "./src/project/package.ts";
export {
  cancelRender,
  type CancelRenderOptions,
  type CancelResult,
  downloadRender,
  type DownloadRenderOptions,
  type RenderOutput,
  renderOutputUrl,
  type RenderOutputUrlOptions,
  type RenderRef,
  RenderStateError,
} from "./src/lambda/renders.ts";
export { StackError } from "./src/lambda/stack_error.ts";
export {
  BatchInputError,
  type BatchManifestRow,
  type BatchRowStatus,
} from "./src/batch/manifest.ts";
