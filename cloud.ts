/**
 * `@vid/cli/cloud`: the client of a hosted render service (`vid server`, or a service run
 * for you). Sign in or use an API key, then `cloudRender` zips a project, uploads it,
 * starts the render, polls it and downloads the video, as `vid cloud render` does. Receivers
 * of render webhooks check them with `verifyWebhook`. Its module graph reaches no AWS SDK
 * and no browser code, so importing it loads neither.
 *
 * @example
 * ```ts
 * import { cloudRender, connectCloud } from "@vid/cli/cloud";
 *
 * // A dry run packages and checks the project only: no sign-in, no network.
 * const report = await cloudRender({ target: "examples/hello", dryRun: true }, () => connectCloud());
 * if (report.dryRun) console.log(`${report.fileCount} files, ${report.compressedBytes} bytes`);
 * ```
 *
 * @module
 */

// The hosted service client's public surface: render, sign in, verify webhooks, and the errors
// a caller catches. The credentials file's helpers (and its CredentialsFileError, a VidError
// naming the file) and the client's low-level pieces are internal (src/cloud/);
// tests/integration/api_snapshot_test.ts shows every change here.

export {
  cloudRender,
  CloudRenderError,
  type CloudRenderOptions,
  type CloudRenderRecord,
  type CloudRenderResult,
  type DryRunReport,
} from "./src/cloud/render.ts";
export type { AspectRatio } from "./src/composition/composition.ts";
export type { OutputFormat, Quality } from "./src/render/encode.ts";
export type { PackagedFile } from "./src/project/package.ts";
export type { Resolution } from "./src/request/options.ts";
export {
  type Authenticator,
  CloudApiError,
  CloudClient,
  type CloudClientOptions,
  type RequestOptions,
} from "./src/cloud/client.ts";
export { connectCloud, type ConnectOptions } from "./src/cloud/connect.ts";
export { NotSignedInError, type OAuthCredentials } from "./src/cloud/credentials.ts";
export {
  CredentialRejectedError,
  type LoginOptions,
  loginWithPkce,
  OAuthError,
} from "./src/cloud/oauth_client.ts";
export {
  verifyWebhook,
  type VerifyWebhookOptions,
  type WebhookPayload,
} from "./src/webhooks/webhooks.ts";
