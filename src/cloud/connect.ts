/**
 * Connects the CLI to the hosted API with the active credential, first match wins:
 * `CLOUD_API_KEY`, `VID_API_KEY`, then the credentials file; `CLOUD_API_URL` sets
 * the address. An OAuth sign-in is refreshed once on a 401 and the request replayed.
 *
 * @module
 */

import process from "node:process";
import { type Authenticator, CloudClient, type CloudClientOptions } from "./client.ts";
import { type OAuthCredentials, resolveCredential } from "./credentials.ts";
import { refreshStoredCredential } from "./oauth_client.ts";

/** Options of {@linkcode connectCloud}. */
export interface ConnectOptions {
  /** Told about each retried request. */
  onRetry?: CloudClientOptions["onRetry"];
  /** Receives warnings (e.g. a credentials file readable by others). */
  onWarning?: (message: string) => void;
  /** Environment to read credentials from, by variable name. @default process.env */
  env?: Readonly<Record<string, string | undefined>>;
}

/**
 * A client for the active credential, or a `NotSignedInError` saying how to sign in.
 *
 * @example
 * ```ts no_run
 * const client = await connectCloud();
 * const me = await client.request<{ email: string }>("GET", "/v3/me");
 * ```
 */
export async function connectCloud(options: ConnectOptions = {}): Promise<CloudClient> {
  const env = options.env ?? process.env;
  const resolved = await resolveCredential(env);
  if (resolved.warning) options.onWarning?.(resolved.warning);
  let credential = resolved.credential;
  const auth: Authenticator = {
    header: () =>
      `Bearer ${credential.type === "api_key" ? credential.api_key : credential.access_token}`,
    refresh: async () => {
      if (credential.type !== "oauth" || resolved.source !== "file") return false;
      credential = await refreshStoredCredential(
        credential as OAuthCredentials,
        resolved.baseUrl,
        env,
      );
      return true;
    },
  };
  return new CloudClient({ baseUrl: resolved.baseUrl, auth, onRetry: options.onRetry });
}
