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

// Self-hosting's public surface: start the service, choose its backend and limits, sign
// webhooks as it does. Its routes, queue, storage and database are internal (src/server/),
// and so is RenderBackendConfigError: only `vid server`'s flag and environment parsing
// throws it. tests/integration/api_snapshot_test.ts shows every change here.

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
} from "./src/server/queue/render_backend.ts";
export { signWebhook } from "./src/webhooks/webhooks.ts";
