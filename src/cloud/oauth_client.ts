/**
 * The client side of signing in to the hosted API: the OAuth 2.0 authorization code grant
 * with PKCE (RFC 7636) on a loopback redirect URI (RFC 8252) for `vid auth login`, refresh
 * token rotation for `vid auth refresh` and the refresh-once-on-401 rule, token revocation
 * (RFC 7009) for `vid auth logout`, and reading the account a credential belongs to.
 *
 * The server endpoints are `GET /oauth/authorize` (sign-in page), `POST /oauth/token` and
 * `POST /oauth/revoke` under the API's base URL; the client id is `vid-cli`.
 *
 * Web standards and `node:` built-ins only (the loopback listener is `node:http`), so the
 * npm SDK can sign in under Node too.
 *
 * @module
 */

import { spawn } from "node:child_process";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import process from "node:process";
import {
  type Env,
  type OAuthCredentials,
  readCredentials,
  writeCredentials,
} from "./credentials.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** The client id of the vid command-line tool. */
export const CLIENT_ID = "vid-cli";
/** The scope requested: render with the account (and read its balance). */
export const SCOPE = "render";
/** How long {@linkcode loginWithPkce} waits for the browser by default: 5 minutes. */
export const DEFAULT_LOGIN_TIMEOUT_MS = 5 * 60 * 1000;

/** Signing in, refreshing or revoking failed. */
export class OAuthError extends VidError {
  /** Always `"OAuthError"`. */
  override name = "OAuthError";
  /** What the error is about, e.g. `refresh_token`, `code`, `base_url`, `timeout`. */
  override readonly field: string;
  /** The RFC 6749 error code when the server sent one (e.g. `invalid_grant`). */
  override readonly code?: string;
  /**
   * Creates the error.
   *
   * @param field What is at fault.
   * @param message What is wrong and how to fix it.
   * @param code The OAuth error code, if the server gave one.
   */
  constructor(field: string, message: string, code?: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
    this.code = code;
  }
}

/** The API refused a credential (401 on `/v3/me`). */
export class CredentialRejectedError extends VidError {
  /** Always `"CredentialRejectedError"`. */
  override name = "CredentialRejectedError";
  /** Always `"credentials"`. */
  override readonly field = "credentials";
  /** What the server said, e.g. "invalid or revoked API key". */
  readonly reason: string;
  /**
   * Creates the error.
   *
   * @param message What the user is told.
   * @param reason Why the server refused.
   */
  constructor(message: string, reason: string = message) {
    super(message, { exitCode: EXIT_FAILED });
    this.reason = reason;
  }
}

/** The account behind a credential, as `GET /v3/me` answers. */
export interface Account {
  /** Id of the account. */
  account_id: string;
  /** Its e-mail address. */
  email: string;
  /** How the caller authenticated. */
  credential: "api_key" | "oauth";
  /** Remaining credit balance. */
  credits: number;
}

/** A PKCE pair: the secret verifier and its S256 challenge. */
export interface Pkce {
  verifier: string;
  challenge: string;
}

/** Options of {@linkcode loginWithPkce}. */
export interface LoginOptions {
  /** The API's base URL, e.g. `http://127.0.0.1:8787`. */
  baseUrl: string;
  /**
   * Opens the sign-in URL; resolves to whether a browser was opened.
   * @default {@linkcode openInBrowser}
   */
  openBrowser?: (url: string) => Promise<boolean>;
  /**
   * Called once with the sign-in URL after trying the browser, whether it opened or not,
   * so the caller can show the URL to open by hand.
   */
  onUrl?: (url: string, browserOpened: boolean) => void;
  /**
   * Give up when no sign-in arrived in this many ms.
   * @default {@linkcode DEFAULT_LOGIN_TIMEOUT_MS}
   */
  timeoutMs?: number;
}

function base64Url(bytes: ArrayBuffer | Uint8Array): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

/**
 * A fresh PKCE pair: a 43-character verifier from 32 random bytes and its S256 challenge
 * (base64url of its SHA-256, RFC 7636 section 4.2).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const { verifier, challenge } = await createPkce();
 * assert.notEqual(challenge, verifier); // the challenge is the verifier's SHA-256
 * ```
 */
export async function createPkce(): Promise<Pkce> {
  const verifier = base64Url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return { verifier, challenge: base64Url(digest) };
}

/** `fetch`, with a failure to connect explained in terms of the API address. */
async function request(baseUrl: string, path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(`${baseUrl}${path}`, init);
  } catch (error) {
    throw new OAuthError(
      "base_url",
      `cannot reach the vid API at ${baseUrl} (${(error as Error).message}); ` +
        "check that the server runs, or set CLOUD_API_URL to its address",
    );
  }
}

/** Reads a JSON body; a body that is not JSON becomes an error naming the request. */
async function jsonBody(response: Response, what: string): Promise<Record<string, unknown>> {
  const text = await response.text();
  try {
    const body = JSON.parse(text);
    if (typeof body === "object" && body !== null) return body;
  } catch {
    // reported below
  }
  throw new OAuthError(
    "base_url",
    `${what} answered ${response.status} with a body that is not JSON: ${text.slice(0, 200)}`,
  );
}

/** Posts a form to a token endpoint; the parsed body and status. */
async function postForm(
  baseUrl: string,
  path: string,
  form: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await request(baseUrl, path, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(form).toString(),
  });
  if (response.status === 200 && path.endsWith("/revoke")) {
    await response.body?.cancel();
    return { status: 200, body: {} };
  }
  return { status: response.status, body: await jsonBody(response, `POST ${path}`) };
}

/** The credentials of a successful token response. */
function tokenCredentials(
  baseUrl: string,
  body: Record<string, unknown>,
): OAuthCredentials {
  const { access_token, refresh_token, expires_in } = body;
  if (
    typeof access_token !== "string" || typeof refresh_token !== "string" ||
    typeof expires_in !== "number"
  ) {
    throw new OAuthError(
      "base_url",
      `POST /oauth/token answered without access_token, refresh_token and expires_in: ${
        JSON.stringify(Object.keys(body))
      }`,
    );
  }
  return {
    version: 1,
    base_url: baseUrl,
    type: "oauth",
    access_token,
    refresh_token,
    expires_at: nowSeconds() + expires_in,
  };
}

function describeOAuthError(body: Record<string, unknown>): { code: string; text: string } {
  const code = typeof body.error === "string" ? body.error : "unknown_error";
  const description = typeof body.error_description === "string" ? body.error_description : "";
  return { code, text: description ? `${code}: ${description}` : code };
}

/**
 * The account `credential` (an API key or an access token) belongs to, from
 * `GET /v3/me`. Throws {@linkcode CredentialRejectedError} on 401.
 *
 * @example
 * ```ts no_run
 * const me = await fetchAccount("http://127.0.0.1:8787", "vid_sk_…");
 * console.log(me.email, me.credits);
 * ```
 */
export async function fetchAccount(baseUrl: string, credential: string): Promise<Account> {
  const response = await request(baseUrl, "/v3/me", {
    headers: { authorization: `Bearer ${credential}`, accept: "application/json" },
  });
  const body = await jsonBody(response, "GET /v3/me");
  if (response.status === 200) {
    const { account_id, email, credential: kind, credits } = body;
    if (
      typeof account_id !== "string" || typeof email !== "string" ||
      (kind !== "api_key" && kind !== "oauth") || typeof credits !== "number"
    ) {
      throw new OAuthError("base_url", `GET /v3/me answered an unexpected body`);
    }
    return { account_id, email, credential: kind, credits };
  }
  const error = body.error as { message?: unknown } | undefined;
  const message = typeof error?.message === "string" ? error.message : `HTTP ${response.status}`;
  if (response.status === 401) {
    throw new CredentialRejectedError(`${baseUrl} refused the credential: ${message}`, message);
  }
  throw new OAuthError("base_url", `GET /v3/me at ${baseUrl} failed: ${message}`);
}

/**
 * Exchanges an authorization code for tokens (`grant_type=authorization_code`).
 *
 * @example
 * ```ts no_run
 * const base = "http://127.0.0.1:8787";
 * const { verifier } = await createPkce(); // its challenge went into the authorize URL
 * const code = "the-code-from-the-callback";
 * const tokens = await exchangeCode(base, code, verifier, "http://127.0.0.1:5000/callback");
 * ```
 */
export async function exchangeCode(
  baseUrl: string,
  code: string,
  verifier: string,
  redirectUri: string,
): Promise<OAuthCredentials> {
  const { status, body } = await postForm(baseUrl, "/oauth/token", {
    grant_type: "authorization_code",
    code,
    redirect_uri: redirectUri,
    client_id: CLIENT_ID,
    code_verifier: verifier,
  });
  if (status !== 200) {
    const { code: errorCode, text } = describeOAuthError(body);
    throw new OAuthError(
      "code",
      `the sign-in code was not accepted (${text}); run \`vid auth login\` again`,
      errorCode,
    );
  }
  return tokenCredentials(baseUrl, body);
}

/**
 * Trades a refresh token for a new access token and a new refresh token; the one given
 * is spent (presenting it again revokes the whole sign-in). The result has no `email`:
 * carry it over from the credential being refreshed.
 *
 * @example
 * ```ts no_run
 * import { readCredentials, writeCredentials } from "./credentials.ts";
 *
 * const stored = (await readCredentials())?.credential;
 * if (stored?.type === "oauth") {
 *   const fresh = await refreshAccessToken(stored.base_url, stored.refresh_token);
 *   await writeCredentials({ ...fresh, email: stored.email });
 * }
 * ```
 */
export async function refreshAccessToken(
  baseUrl: string,
  refreshToken: string,
): Promise<OAuthCredentials> {
  const { status, body } = await postForm(baseUrl, "/oauth/token", {
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    client_id: CLIENT_ID,
  });
  if (status !== 200) {
    const { code, text } = describeOAuthError(body);
    const again = /vid auth login/.test(text) ? "" : "; sign in again with `vid auth login`";
    throw new OAuthError(
      "refresh_token",
      code === "invalid_grant"
        ? `the sign-in cannot be refreshed: ${text}${again}`
        : `refreshing the sign-in failed: ${text}${again}`,
      code,
    );
  }
  return tokenCredentials(baseUrl, body);
}

/**
 * Revokes a token at the server. Revoking either token of a sign-in ends the whole
 * sign-in (its access and refresh tokens). Unknown tokens are not an error (RFC 7009).
 *
 * @example
 * ```ts no_run
 * import { readCredentials } from "./credentials.ts";
 *
 * const stored = (await readCredentials())?.credential;
 * if (stored?.type === "oauth") await revokeToken(stored.base_url, stored.refresh_token);
 * ```
 */
export async function revokeToken(baseUrl: string, token: string): Promise<void> {
  const { status, body } = await postForm(baseUrl, "/oauth/revoke", {
    token,
    client_id: CLIENT_ID,
  });
  if (status !== 200) {
    const { code, text } = describeOAuthError(body);
    throw new OAuthError("token", `revoking the token failed: ${text}`, code);
  }
}

/**
 * Opens `url` in the user's browser: `$BROWSER` when set, else `open` (macOS),
 * `rundll32 url.dll` (Windows) or `xdg-open`. Resolves to `false` when no browser can be
 * opened: `VID_NO_BROWSER` is set, Linux has no display, or the opener is missing or fails
 * within 3 seconds.
 *
 * @example
 * ```ts no_run
 * const url = "http://127.0.0.1:8787/oauth/authorize";
 * if (!(await openInBrowser(url))) console.error(`Open this URL: ${url}`);
 * ```
 */
export function openInBrowser(url: string, env: Env = process.env): Promise<boolean> {
  const noBrowser = env.VID_NO_BROWSER?.trim();
  if (noBrowser && noBrowser !== "0") return Promise.resolve(false);
  let command: string;
  let args: string[];
  const browser = env.BROWSER?.trim();
  if (browser) {
    [command, args] = [browser, [url]];
  } else if (process.platform === "darwin") {
    [command, args] = ["open", [url]];
  } else if (process.platform === "win32") {
    // Not `cmd /c start`: cmd would need the URL's `&` escaped.
    [command, args] = ["rundll32", ["url.dll,FileProtocolHandler", url]];
  } else {
    // Without a display xdg-open falls back to a text browser that takes over the terminal.
    if (!env.DISPLAY && !env.WAYLAND_DISPLAY) return Promise.resolve(false);
    [command, args] = ["xdg-open", [url]];
  }
  return new Promise((resolve) => {
    let settled = false;
    const settle = (opened: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(opened);
    };
    // An opener still running after 3 s is a browser started in the foreground: opened.
    const timer = setTimeout(() => {
      child.unref();
      settle(true);
    }, 3000);
    const child = spawn(command, args, { stdio: "ignore", detached: true });
    child.on("error", () => settle(false));
    child.on("exit", (code) => settle(code === 0));
  });
}

const PAGE_STYLE = "body{font:16px/1.5 system-ui,sans-serif;max-width:30rem;margin:4rem auto;" +
  "padding:0 1rem;color:#18181b}h1{font-size:1.4rem}code{background:#f4f4f5;padding:0 .25rem}";

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;").replaceAll("'", "&#39;");
}

function answer(response: ServerResponse, status: number, title: string, message: string): void {
  response.writeHead(status, {
    "content-type": "text/html; charset=utf-8",
    "cache-control": "no-store",
    "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'",
    "referrer-policy": "no-referrer",
    connection: "close",
  });
  response.end(
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${
      escapeHtml(title)
    } · vid</title><style>${PAGE_STYLE}</style></head><body><h1>${escapeHtml(title)}</h1><p>${
      escapeHtml(message)
    }</p></body></html>`,
  );
}

/** One sign-in in progress: what its loopback callback checks and settles. */
interface PendingLogin {
  readonly baseUrl: string;
  readonly verifier: string;
  readonly state: string;
  redirectUri: string;
  /** A code or an error arrived; later callbacks are told the sign-in is done. */
  finished: boolean;
  readonly done: {
    promise: Promise<OAuthCredentials>;
    resolve: (credential: OAuthCredentials) => void;
    reject: (error: unknown) => void;
  };
}

/** Answers one request to the loopback listener: only `GET /callback` of this sign-in counts. */
async function handleCallback(
  login: PendingLogin,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { done } = login;
  const url = new URL(req.url ?? "/", "http://127.0.0.1");
  if (req.method !== "GET" || url.pathname !== "/callback") {
    answer(res, 404, "Not found", "This address only receives the vid sign-in.");
    return;
  }
  if (login.finished) {
    answer(res, 409, "Already done", "This sign-in is finished. You can close this tab.");
    return;
  }
  const params = url.searchParams;
  if (params.get("state") !== login.state) {
    answer(
      res,
      400,
      "Sign-in not recognised",
      "This answer does not belong to the running `vid auth login` (state does not " +
        "match). Use the URL it printed.",
    );
    return;
  }
  const error = params.get("error");
  if (error) {
    login.finished = true;
    const description = params.get("error_description");
    const text = description ? `${error}: ${description}` : error;
    answer(res, 400, "Sign-in failed", `The sign-in was refused (${text}).`);
    done.reject(new OAuthError("code", `the sign-in was refused: ${text}`, error));
    return;
  }
  const code = params.get("code");
  if (!code) {
    answer(res, 400, "Sign-in failed", "The answer carries no code.");
    return;
  }
  login.finished = true;
  try {
    const credential = await exchangeCode(login.baseUrl, code, login.verifier, login.redirectUri);
    const account = await fetchAccount(login.baseUrl, credential.access_token);
    answer(
      res,
      200,
      "Signed in",
      `vid is signed in as ${account.email}. You can close this tab.`,
    );
    done.resolve({ ...credential, email: account.email });
  } catch (err) {
    answer(res, 400, "Sign-in failed", (err as Error).message);
    done.reject(err);
  }
}

/** The sign-in page of `baseUrl` with the PKCE challenge, `state` and loopback redirect. */
function authorizeUrl(
  baseUrl: string,
  redirectUri: string,
  challenge: string,
  state: string,
): URL {
  const authorize = new URL(`${baseUrl}/oauth/authorize`);
  for (
    const [name, value] of Object.entries({
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: "S256",
      state,
      scope: SCOPE,
    })
  ) {
    authorize.searchParams.set(name, value);
  }
  return authorize;
}

/**
 * Signs in with a browser: listens on `127.0.0.1` on a free port, opens the sign-in page
 * of `baseUrl` with a PKCE challenge and a random `state`, receives the code on
 * `http://127.0.0.1:<port>/callback`, exchanges it and reads the account's email. A
 * callback with another `state` is answered with an error page and ignored (it does not
 * belong to this sign-in); `error=` ends the sign-in with that error.
 *
 * @example
 * ```ts no_run
 * import { writeCredentials } from "./credentials.ts";
 *
 * const credential = await loginWithPkce({
 *   baseUrl: "http://127.0.0.1:8787",
 *   onUrl: (url) => console.error(`Open this URL to sign in: ${url}`),
 * });
 * await writeCredentials(credential);
 * ```
 */
export async function loginWithPkce(options: LoginOptions): Promise<OAuthCredentials> {
  const baseUrl = options.baseUrl.replace(/\/+$/, "");
  const timeoutMs = options.timeoutMs ?? DEFAULT_LOGIN_TIMEOUT_MS;
  const { verifier, challenge } = await createPkce();
  const state = base64Url(crypto.getRandomValues(new Uint8Array(16)));
  // Not Promise.withResolvers: Node 20 lacks it.
  let resolveLogin!: (credential: OAuthCredentials) => void;
  let rejectLogin!: (error: unknown) => void;
  const done = {
    promise: new Promise<OAuthCredentials>((resolve, reject) => {
      resolveLogin = resolve;
      rejectLogin = reject;
    }),
    resolve: (credential: OAuthCredentials) => resolveLogin(credential),
    reject: (error: unknown) => rejectLogin(error),
  };
  // It may settle before it is awaited (a fast browser, the timeout during the opener).
  done.promise.catch(() => {});
  const login: PendingLogin = {
    baseUrl,
    verifier,
    state,
    redirectUri: "",
    finished: false,
    done,
  };

  const server = createServer((req, res) => {
    handleCallback(login, req, res).catch((error) => done.reject(error));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    login.redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
    const authorize = authorizeUrl(baseUrl, login.redirectUri, challenge, state);
    timer = setTimeout(() => {
      done.reject(
        new OAuthError(
          "timeout",
          `no sign-in arrived within ${
            timeoutMs / 1000
          } s; run \`vid auth login\` again and approve in the browser`,
        ),
      );
    }, timeoutMs);
    const opener = options.openBrowser ?? ((url: string) => openInBrowser(url));
    const opened = await opener(authorize.href).catch(() => false);
    options.onUrl?.(authorize.href, opened);
    return await done.promise;
  } finally {
    clearTimeout(timer);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections?.();
    });
  }
}

/**
 * Refreshes the stored OAuth sign-in `current` at `baseUrl` and saves the rotated tokens
 * in the credentials file, keeping its email. When the file already holds newer tokens of
 * the same API (another `vid` process refreshed first), those are used instead: presenting
 * the spent refresh token again would revoke the whole sign-in.
 *
 * @example
 * ```ts no_run
 * import { readCredentials } from "./credentials.ts";
 *
 * const stored = await readCredentials();
 * if (stored?.credential.type === "oauth") await refreshStoredCredential(stored.credential);
 * ```
 */
export async function refreshStoredCredential(
  current: OAuthCredentials,
  baseUrl: string = current.base_url,
  env: Env = process.env,
): Promise<OAuthCredentials> {
  let latest = current;
  const onDisk = (await readCredentials(env))?.credential;
  if (
    onDisk?.type === "oauth" && onDisk.base_url === current.base_url &&
    onDisk.refresh_token !== current.refresh_token
  ) {
    if (onDisk.expires_at > nowSeconds() + 30) return onDisk;
    latest = onDisk;
  }
  const fresh = await refreshAccessToken(baseUrl, latest.refresh_token);
  const next: OAuthCredentials = {
    ...fresh,
    base_url: latest.base_url,
    ...(latest.email === undefined ? {} : { email: latest.email }),
  };
  await writeCredentials(next, env);
  return next;
}
