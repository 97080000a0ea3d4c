/**
 * `@vid/cli/server`: host the render service yourself, from a program instead of the
 * `vid server` command. `startServer` opens the data folder (SQLite database, signing
 * secret, storage), starts the render workers on this machine or hands renders to the
 * distributed backend, and serves the `/v3` API. Deno only: the server uses `Deno.serve`
 * and the Deno process model, so the npm package has no `/server` entry.
 *
 * @example
 * ```ts
 * import { startServer } from "@vid/cli/server";
 *
 * const dataDir = await Deno.makeTempDir({ prefix: "vid-server-" });
 * const server = await startServer({ dataDir, port: 0 });
 * console.log(`listening at ${server.url}`);
 * await server.close();
 * await Deno.remove(dataDir, { recursive: true });
 * ```
 *
 * @module
 */

export {
  type RunningServer,
  type ServerOptions,
  type ServerRole,
  startServer,
} from "./src/server/server.ts";
export type { ServerLimits } from "./src/server/context.ts";
export {
  type LambdaBackendConfig,
  type LocalBackendConfig,
  type RenderBackendConfig,
  RenderBackendConfigError,
  type RenderBackendFlags,
  type RenderBackendKind,
  resolveRenderBackend,
} from "./src/server/render_backend.ts";
export { type Storage, StorageError, type StoredObject } from "./src/server/storage.ts";
export { storageFromUrl } from "./src/server/storage_url.ts";
export {
  type CallbackTargetPolicy,
  CallbackUrlError,
  checkCallbackUrl,
  type CheckCallbackUrlOptions,
  deliverWebhook,
  type DeliverWebhookOptions,
  type DeliveryResult,
  signWebhook,
} from "./src/webhooks/webhooks.ts";
