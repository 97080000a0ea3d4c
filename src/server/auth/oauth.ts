/**
 * OAuth 2.0 for `vid auth login`: the authorization code grant with PKCE (RFC 6749,
 * RFC 7636) for the one public client `vid-cli`, which opens the sign-in page in a browser
 * and receives the code on a loopback redirect URI (RFC 8252); refresh token rotation; and
 * token revocation (RFC 7009) for `vid auth logout`.
 *
 * This module is the endpoints: it reads and checks the requests, the sign-in form's CSRF
 * token and the password, and answers in each endpoint's format. The credentials themselves
 * (lifetimes, single use, token families, the `tokens` table) are the token store's,
 * oauth_tokens.ts, and the pages' HTML is oauth_page.ts.
 *
 * @module
 */

import { log } from "../log.ts";
import { Hono } from "hono";
import type { Context } from "hono";
import type { ServerContext } from "../context.ts";
import { DatabaseThrottleStore, newThrottles, signInKey, type Throttles } from "./throttle.ts";
import { clientAddress } from "../http/client_address.ts";
import type { Row } from "../database/mod.ts";
import {
  hashPassword,
  hmacHex,
  needsRehash,
  randomId,
  safeEqual,
  verifyPassword,
} from "./secrets.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";
import { errorPage, signInPage } from "./oauth_page.ts";
import {
  accessTokenSecondsFrom,
  type GrantData,
  issueCode,
  nowSeconds,
  purgeExpired,
  redeemCode,
  revokeToken,
  rotateRefreshToken,
  spendCode,
  type TokenResponse,
} from "./oauth_tokens.ts";

/** The client id of the vid command-line tool, the one client of this server. */
export const OAUTH_CLIENT_ID = "vid-cli";
/** The one scope: render with the account (and read its balance). */
export const OAUTH_SCOPE = "render";
/** How long a sign-in form stays valid. */
export const SIGN_IN_FORM_SECONDS = 600;

const MAX_FORM_BYTES = 16 * 1024;
const MAX_STATE_LENGTH = 1024;
const MAX_REDIRECT_URI_LENGTH = 2048;
const CSRF_COOKIE = "vid_oauth_csrf";
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** Options of {@linkcode oauthRoutes}. */
export interface OAuthOptions {
  /**
   * Access token lifetime in seconds.
   * @default the environment variable `VID_ACCESS_TOKEN_SECONDS`, else 3600
   */
  accessTokenSeconds?: number;
  /**
   * Failed sign-in counters, shared with the API's key checks.
   * @default fresh ones
   */
  throttles?: Throttles;
}

/** An RFC 6749 error of the token and revocation endpoints. */
class TokenEndpointError extends VidError {
  override name = "TokenEndpointError";
  override readonly status: 400 | 401;
  override readonly code: string;
  constructor(code: string, description: string, status: 400 | 401 = 400) {
    super(description, { exitCode: EXIT_FAILED });
    this.code = code;
    this.status = status;
  }
}

/** A malformed request body or parameter, mapped to each endpoint's error format. */
class RequestError extends VidError {
  override name = "RequestError";

  /** Creates the error; the CLI exits 1. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
  }
}

/** A validated authorization request. */
interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  state?: string;
  scope: string;
}

function base64Url(bytes: ArrayBuffer): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The S256 code challenge of a PKCE code verifier (RFC 7636 section 4.2). */
async function s256(verifier: string): Promise<string> {
  return base64Url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
}

/** Reads an `application/x-www-form-urlencoded` body of at most 16 KiB. */
async function readForm(c: Context): Promise<URLSearchParams> {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/x-www-form-urlencoded\s*(;|$)/i.test(type)) {
    throw new RequestError("the body must be application/x-www-form-urlencoded");
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (c.req.raw.body) {
    for await (const chunk of c.req.raw.body) {
      size += chunk.length;
      if (size > MAX_FORM_BYTES) {
        throw new RequestError(`the body is larger than ${MAX_FORM_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return new URLSearchParams(new TextDecoder().decode(bytes));
}

/** One parameter; RFC 6749 section 3.1 forbids sending a parameter twice. */
function param(params: URLSearchParams, name: string, required: true): string;
function param(params: URLSearchParams, name: string, required?: false): string | undefined;
function param(params: URLSearchParams, name: string, required = false): string | undefined {
  const values = params.getAll(name);
  if (values.length > 1) throw new RequestError(`${name} was sent more than once`);
  const value = values[0];
  if (value === undefined || value === "") {
    if (required) throw new RequestError(`${name} is missing`);
    return undefined;
  }
  return value;
}

/**
 * Whether `uri` may receive codes: `http` on a loopback host with any port (RFC 8252
 * section 7.3), or `https`; never with a fragment or user info.
 */
function redirectUriProblem(uri: string): string | undefined {
  if (uri.length > MAX_REDIRECT_URI_LENGTH) {
    return `redirect_uri is longer than ${MAX_REDIRECT_URI_LENGTH} characters`;
  }
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `redirect_uri "${uri}" is not an absolute URL`;
  }
  if (url.hash !== "" || uri.includes("#")) return "redirect_uri must not contain a fragment";
  if (url.username !== "" || url.password !== "") {
    return "redirect_uri must not contain user info";
  }
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:" && LOOPBACK_HOSTS.has(url.hostname)) return undefined;
  return `redirect_uri "${uri}" must be http://127.0.0.1:<port>/…, http://[::1]:<port>/…, ` +
    "http://localhost:<port>/… or https://…";
}

/**
 * Validates the parameters of an authorization request (query of the GET, fields of the
 * POST). Every problem is a {@linkcode RequestError}; the caller shows it as a page and
 * never redirects, so an unchecked redirect_uri is never followed.
 */
function authorizationRequest(params: URLSearchParams): AuthorizationRequest {
  const clientId = param(params, "client_id", true);
  if (clientId !== OAUTH_CLIENT_ID) {
    throw new RequestError(`unknown client_id "${clientId}" (this server knows only vid-cli)`);
  }
  const redirectUri = param(params, "redirect_uri", true);
  const problem = redirectUriProblem(redirectUri);
  if (problem) throw new RequestError(problem);
  const responseType = param(params, "response_type", true);
  if (responseType !== "code") {
    throw new RequestError(`response_type must be "code", got "${responseType}"`);
  }
  const method = param(params, "code_challenge_method");
  if (method !== "S256") {
    throw new RequestError(
      `code_challenge_method must be "S256", got ${
        method === undefined ? "none (plain is not accepted)" : `"${method}"`
      }`,
    );
  }
  const codeChallenge = param(params, "code_challenge", true);
  if (!/^[A-Za-z0-9_-]{43}$/.test(codeChallenge)) {
    throw new RequestError(
      "code_challenge must be the base64url SHA-256 of the code verifier (43 characters)",
    );
  }
  const state = param(params, "state");
  if (state !== undefined && state.length > MAX_STATE_LENGTH) {
    throw new RequestError(`state is longer than ${MAX_STATE_LENGTH} characters`);
  }
  const scope = param(params, "scope") ?? OAUTH_SCOPE;
  if (scope !== OAUTH_SCOPE) {
    throw new RequestError(`scope must be "${OAUTH_SCOPE}", got "${scope}"`);
  }
  return { clientId, redirectUri, codeChallenge, state, scope };
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return rest.join("=");
  }
  return undefined;
}

/** The CSRF token of a sign-in form: the browser's cookie nonce and the request, signed. */
async function csrfToken(
  secret: string,
  nonce: string,
  request: AuthorizationRequest,
  expires: number,
): Promise<string> {
  const bound = JSON.stringify([
    request.clientId,
    request.redirectUri,
    request.codeChallenge,
    request.state ?? "",
    request.scope,
  ]);
  return `${expires}.${await hmacHex(secret, `oauth-csrf\n${nonce}\n${expires}\n${bound}`)}`;
}

async function csrfValid(
  secret: string,
  nonce: string | undefined,
  request: AuthorizationRequest,
  token: string | undefined,
): Promise<boolean> {
  if (!nonce || !token) return false;
  const expires = Number(token.split(".")[0]);
  if (!Number.isSafeInteger(expires) || expires < nowSeconds()) return false;
  return safeEqual(await csrfToken(secret, nonce, request, expires), token);
}

/** What the OAuth endpoints share: the server, the token lifetime, and the sign-in throttles. */
interface OAuthState {
  ctx: ServerContext;
  accessSeconds: number;
  throttles: Throttles;
  // Compared against when the email is unknown, so both failures take the same time.
  unknownAccountHash?: Promise<string>;
}

/** Answers an error of the token endpoint as RFC 6749 JSON; anything else as a 500. */
function oauthError(error: Error, c: Context): Response {
  if (error instanceof TokenEndpointError) {
    return c.json({ error: error.code, error_description: error.message }, error.status, {
      "cache-control": "no-store",
      "pragma": "no-cache",
    });
  }
  log.error(Deno.inspect(error));
  return c.json({ error: "server_error", error_description: "internal error" }, 500);
}

/** The sign-in and approve page, with a fresh CSRF cookie and token for its form. */
async function freshSignInPage(
  state: OAuthState,
  c: Context,
  request: AuthorizationRequest,
  status: 200 | 401 | 403 | 429,
  error?: string,
  email = "",
): Promise<Response> {
  const { ctx } = state;
  const existing = cookieValue(c.req.header("cookie"), CSRF_COOKIE);
  const nonce = existing && /^csrf_[0-9a-f]{32}$/.test(existing) ? existing : randomId("csrf", 16);
  c.header(
    "set-cookie",
    `${CSRF_COOKIE}=${nonce}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${SIGN_IN_FORM_SECONDS}${
      ctx.publicUrl.startsWith("https:") ? "; Secure" : ""
    }`,
  );
  const token = await csrfToken(ctx.secret, nonce, request, nowSeconds() + SIGN_IN_FORM_SECONDS);
  const hidden: Array<[string, string | undefined]> = [
    ["response_type", "code"],
    ["client_id", request.clientId],
    ["redirect_uri", request.redirectUri],
    ["code_challenge", request.codeChallenge],
    ["code_challenge_method", "S256"],
    ["state", request.state],
    ["scope", request.scope],
    ["csrf_token", token],
  ];
  return signInPage(c, status, {
    scope: request.scope,
    redirectUri: request.redirectUri,
    hidden,
    error,
    email,
  });
}

/** `GET /authorize`: validates the authorization request and shows the sign-in page. */
async function showAuthorize(state: OAuthState, c: Context): Promise<Response> {
  let request: AuthorizationRequest;
  try {
    request = authorizationRequest(new URL(c.req.url).searchParams);
  } catch (error) {
    if (error instanceof RequestError) return errorPage(c, error.message);
    throw error;
  }
  return await freshSignInPage(state, c, request, 200);
}

/** `POST /authorize`: checks the form and the password, then redirects with a code. */
async function approveAuthorize(state: OAuthState, c: Context): Promise<Response> {
  const { ctx } = state;
  let form: URLSearchParams;
  let request: AuthorizationRequest;
  try {
    form = await readForm(c);
    request = authorizationRequest(form);
  } catch (error) {
    if (error instanceof RequestError) return errorPage(c, error.message);
    throw error;
  }
  const email = (form.get("email") ?? "").trim();
  const nonce = cookieValue(c.req.header("cookie"), CSRF_COOKIE);
  if (!(await csrfValid(ctx.secret, nonce, request, form.get("csrf_token") ?? undefined))) {
    return await freshSignInPage(
      state,
      c,
      request,
      403,
      "The form expired or did not come from this page. Sign in again.",
      email,
    );
  }
  // Guessing is throttled per address+account and per address, never per account alone, so a
  // stranger's failures cannot lock an account; a locked-out attempt is refused before the
  // password is checked, so it tells nothing.
  const address = clientAddress(c.env, c.req.raw.headers, ctx.trustedProxies ?? []);
  const tried = signInKey(address, email);
  const wait = Math.max(
    await state.throttles.signInPerAddressAccount.retryAfter(tried),
    await state.throttles.signInPerAddress.retryAfter(address),
  );
  if (wait > 0) {
    c.header("retry-after", String(wait));
    return await freshSignInPage(
      state,
      c,
      request,
      429,
      `Too many failed sign-ins. Try again in ${Math.ceil(wait / 60)} minute(s).`,
      email,
    );
  }
  const row = await ctx.db.get("select id, password_hash from accounts where email = ?", email) as
    | Row
    | undefined;
  state.unknownAccountHash ??= hashPassword(randomId("unknown", 16));
  const stored = row ? String(row.password_hash) : await state.unknownAccountHash;
  const passwordOk = await verifyPassword(form.get("password") ?? "", stored);
  if (!row || !passwordOk) {
    await state.throttles.signInPerAddressAccount.fail(tried);
    await state.throttles.signInPerAddress.fail(address);
    return await freshSignInPage(state, c, request, 401, "Wrong email or password.", email);
  }
  await state.throttles.signInPerAddressAccount.clear(tried);
  if (needsRehash(stored)) {
    // A hash from before the current parameters: the password is at hand only now.
    await ctx.db.run(
      "update accounts set password_hash = ? where id = ? and password_hash = ?",
      await hashPassword(form.get("password") ?? ""),
      String(row.id),
      stored,
    );
  }
  const grant: GrantData = {
    client_id: request.clientId,
    scope: request.scope,
    redirect_uri: request.redirectUri,
    code_challenge: request.codeChallenge,
  };
  const code = await issueCode(ctx.db, String(row.id), grant);
  const target = new URL(request.redirectUri);
  target.searchParams.append("code", code);
  if (request.state !== undefined) target.searchParams.append("state", request.state);
  c.header("cache-control", "no-store");
  c.header("referrer-policy", "no-referrer");
  return c.redirect(target.href, 302);
}

/** The form of a token or revoke request; a bad form is an `invalid_request`. */
async function tokenForm(c: Context): Promise<URLSearchParams> {
  try {
    return await readForm(c);
  } catch (error) {
    if (error instanceof RequestError) {
      throw new TokenEndpointError("invalid_request", error.message);
    }
    throw error;
  }
}

/** A parameter of a token or revoke request; a bad one is an `invalid_request`. */
function tokenParam(form: URLSearchParams, name: string, required = false): string | undefined {
  try {
    return required ? param(form, name, true) : param(form, name);
  } catch (error) {
    if (error instanceof RequestError) {
      throw new TokenEndpointError("invalid_request", error.message);
    }
    throw error;
  }
}

/** Refuses any client but `vid-cli` (an absent client_id is allowed). */
function checkClient(clientId: string | undefined): void {
  if (clientId !== undefined && clientId !== OAUTH_CLIENT_ID) {
    throw new TokenEndpointError("invalid_client", `unknown client_id "${clientId}"`, 401);
  }
}

/** The `authorization_code` grant: spends the code and starts a token family. */
async function exchangeCode(state: OAuthState, form: URLSearchParams): Promise<TokenResponse> {
  const { ctx } = state;
  const code = tokenParam(form, "code", true)!;
  // The code is spent by any exchange that presents it, even one whose other parameters
  // are missing or malformed: a code is tried once, never probed.
  let redirectUri: string, clientId: string, verifier: string;
  try {
    redirectUri = tokenParam(form, "redirect_uri", true)!;
    clientId = tokenParam(form, "client_id", true)!;
    checkClient(clientId);
    verifier = tokenParam(form, "code_verifier", true)!;
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) {
      throw new TokenEndpointError(
        "invalid_request",
        "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~",
      );
    }
  } catch (error) {
    await spendCode(ctx.db, code);
    throw error;
  }
  const challenge = await s256(verifier);
  const result = await redeemCode(
    ctx.db,
    code,
    { clientId, redirectUri, challenge },
    state.accessSeconds,
  );
  if (typeof result === "string") throw new TokenEndpointError("invalid_grant", result);
  return result;
}

/** The `refresh_token` grant: rotates the pair within its family. */
async function refresh(state: OAuthState, form: URLSearchParams): Promise<TokenResponse> {
  const { ctx } = state;
  const refreshToken = tokenParam(form, "refresh_token", true)!;
  const clientId = tokenParam(form, "client_id");
  checkClient(clientId);
  const scope = tokenParam(form, "scope");
  if (scope !== undefined && scope !== OAUTH_SCOPE) {
    throw new TokenEndpointError("invalid_scope", `scope must be "${OAUTH_SCOPE}"`);
  }
  const result = await rotateRefreshToken(ctx.db, refreshToken, clientId, state.accessSeconds);
  if (typeof result === "string") throw new TokenEndpointError("invalid_grant", result);
  return result;
}

/** `POST /token`: code exchange or refresh. */
async function tokenEndpoint(state: OAuthState, c: Context): Promise<Response> {
  const { ctx } = state;
  const form = await tokenForm(c);
  const grantType = tokenParam(form, "grant_type", true);
  let response: TokenResponse;
  if (grantType === "authorization_code") response = await exchangeCode(state, form);
  else if (grantType === "refresh_token") response = await refresh(state, form);
  else {
    throw new TokenEndpointError(
      "unsupported_grant_type",
      `grant_type must be authorization_code or refresh_token, got "${grantType}"`,
    );
  }
  await purgeExpired(ctx.db);
  return c.json(response, 200, { "cache-control": "no-store", "pragma": "no-cache" });
}

/** `POST /revoke`: ends the sign-in the token belongs to. */
async function revokeEndpoint(state: OAuthState, c: Context): Promise<Response> {
  const { ctx } = state;
  const form = await tokenForm(c);
  const token = tokenParam(form, "token", true)!;
  checkClient(tokenParam(form, "client_id"));
  await revokeToken(ctx.db, token);
  // RFC 7009 section 2.2: 200 whether or not the token existed.
  return c.body(null, 200, { "cache-control": "no-store" });
}

/**
 * The OAuth endpoints, to mount at `/oauth`: `GET`/`POST /authorize` (sign-in and approve
 * page), `POST /token` (code exchange and refresh) and `POST /revoke`.
 *
 * @example
 * ```ts no_run
 * import { Hono } from "hono";
 * import type { ServerContext } from "../context.ts";
 *
 * function api(ctx: ServerContext): Hono {
 *   return new Hono().route("/oauth", oauthRoutes(ctx));
 * }
 * ```
 */
export function oauthRoutes(ctx: ServerContext, options: OAuthOptions = {}): Hono {
  const state: OAuthState = {
    ctx,
    accessSeconds: options.accessTokenSeconds ??
      accessTokenSecondsFrom(Deno.env.get("VID_ACCESS_TOKEN_SECONDS")),
    throttles: options.throttles ?? newThrottles(new DatabaseThrottleStore(ctx.db)),
  };
  const app = new Hono();
  app.onError(oauthError);
  app.get("/authorize", (c) => showAuthorize(state, c));
  app.post("/authorize", (c) => approveAuthorize(state, c));
  app.post("/token", (c) => tokenEndpoint(state, c));
  app.post("/revoke", (c) => revokeEndpoint(state, c));
  return app;
}
