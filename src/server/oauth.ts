/**
 * OAuth 2.0 for `vid auth login`: the authorization code grant with PKCE (RFC 6749,
 * RFC 7636) for the one public client `vid-cli`, which opens the sign-in page in a browser
 * and receives the code on a loopback redirect URI (RFC 8252); refresh token rotation; and
 * token revocation (RFC 7009) for `vid auth logout`.
 *
 * Credentials: codes `vid_ac_…` (single use, 60 s), access tokens `vid_at_…` (3600 s, or
 * `VID_ACCESS_TOKEN_SECONDS`), refresh tokens `vid_rt_…` (30 days). Only their SHA-256
 * hashes are stored, in the `tokens` table.
 *
 * Each exchanged code starts a token family. Refreshing rotates the pair: the presented
 * refresh token is spent and a new access + refresh token of the same family is issued.
 * Presenting a spent refresh token (or a spent code) again means a copy of it leaked, so
 * the whole family is revoked and the client has to sign in again.
 *
 * @module
 */

import { Hono } from "hono";
import type { Context } from "hono";
import type { ServerContext } from "./context.ts";
import type { Queries, Row } from "./db.ts";
import { clientAddress, DatabaseThrottleStore, newThrottles, type Throttles } from "./throttle.ts";
import {
  hashPassword,
  hmacHex,
  needsRehash,
  randomId,
  safeEqual,
  sha256Hex,
  verifyPassword,
} from "./secrets.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** The client id of the vid command-line tool, the one client of this server. */
export const OAUTH_CLIENT_ID = "vid-cli";
/** The one scope: render with the account (and read its balance). */
export const OAUTH_SCOPE = "render";
/** Lifetime of an authorization code. */
export const CODE_SECONDS = 60;
/** Default lifetime of an access token; `VID_ACCESS_TOKEN_SECONDS` overrides it. */
export const DEFAULT_ACCESS_TOKEN_SECONDS = 3600;
/** Lifetime of a refresh token (each rotation issues a new one with a fresh lifetime). */
export const REFRESH_TOKEN_SECONDS = 30 * 24 * 3600;
/** How long a sign-in form stays valid. */
export const SIGN_IN_FORM_SECONDS = 600;

const MAX_FORM_BYTES = 16 * 1024;
const MAX_STATE_LENGTH = 1024;
const MAX_REDIRECT_URI_LENGTH = 2048;
const CSRF_COOKIE = "vid_oauth_csrf";
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "[::1]", "localhost"]);
// Expired rows are kept a day so that an expired access token still answers "expired".
const PURGE_AFTER_SECONDS = 24 * 3600;

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

/** The OAuth configuration is unusable (e.g. a bad `VID_ACCESS_TOKEN_SECONDS`). */
export class OAuthConfigError extends VidError {
  override name = "OAuthConfigError";

  /** Creates the error; the CLI exits 1. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
  }
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

/** What a code or token row keeps in its `data` column. */
interface GrantData {
  client_id: string;
  scope: string;
  /** Token family; set on a code once it is exchanged. */
  family?: string;
  redirect_uri?: string;
  code_challenge?: string;
}

/** A token response of `POST /oauth/token`. */
export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/**
 * Reads the access token lifetime from the value of `VID_ACCESS_TOKEN_SECONDS`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(accessTokenSecondsFrom("60"), 60);
 * assert.equal(accessTokenSecondsFrom(undefined), 3600);
 * ```
 */
export function accessTokenSecondsFrom(value: string | undefined): number {
  if (value === undefined || value === "") return DEFAULT_ACCESS_TOKEN_SECONDS;
  const seconds = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(seconds) || seconds < 1) {
    throw new OAuthConfigError(
      `VID_ACCESS_TOKEN_SECONDS must be a whole number of seconds >= 1, got "${value}"`,
    );
  }
  return seconds;
}

function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
}

function base64Url(bytes: ArrayBuffer): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The S256 code challenge of a PKCE code verifier (RFC 7636 section 4.2). */
async function s256(verifier: string): Promise<string> {
  return base64Url(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier)));
}

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;").replaceAll("'", "&#39;");
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

const STYLE = `
body { font: 16px/1.5 system-ui, sans-serif; background: #f4f4f5; color: #18181b; margin: 0; }
main { max-width: 26rem; margin: 4rem auto; background: #fff; padding: 2rem;
  border-radius: 12px; box-shadow: 0 1px 4px rgb(0 0 0 / 0.1); }
h1 { font-size: 1.4rem; margin-top: 0; }
label { display: block; margin: 1rem 0 0.25rem; font-weight: 600; }
input { width: 100%; box-sizing: border-box; padding: 0.5rem; font: inherit;
  border: 1px solid #a1a1aa; border-radius: 6px; }
button { margin-top: 1.5rem; width: 100%; padding: 0.6rem; font: inherit; font-weight: 600;
  color: #fff; background: #2563eb; border: 0; border-radius: 6px; cursor: pointer; }
.error { background: #fef2f2; color: #991b1b; padding: 0.75rem; border-radius: 6px; }
.note { color: #52525b; font-size: 0.9rem; }
code { background: #f4f4f5; padding: 0 0.25rem; border-radius: 4px; }
`;

function htmlPage(
  c: Context,
  status: 200 | 400 | 401 | 403 | 429,
  title: string,
  body: string,
) {
  return c.html(
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · vid</title>
<style>${STYLE}</style>
</head>
<body><main>
${body}
</main></body>
</html>
`,
    status,
    {
      "cache-control": "no-store",
      "content-security-policy":
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  );
}

function errorPage(c: Context, message: string) {
  return htmlPage(
    c,
    400,
    "Sign-in request not valid",
    `<h1>This sign-in request is not valid</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
<p>Nothing was sent back to the application. Start again with <code>vid auth login</code>.</p>`,
  );
}

/** The tokens of one family, with their hashes, made before the transaction stores them. */
async function newTokenPair(): Promise<
  { access: string; accessHash: string; refresh: string; refreshHash: string }
> {
  const access = randomId("vid_at", 32);
  const refresh = randomId("vid_rt", 32);
  return {
    access,
    accessHash: await sha256Hex(access),
    refresh,
    refreshHash: await sha256Hex(refresh),
  };
}

type Pair = Awaited<ReturnType<typeof newTokenPair>>;

async function storePair(
  db: Queries,
  pair: Pair,
  accountId: string,
  grant: GrantData,
  accessSeconds: number,
): Promise<TokenResponse> {
  const data = JSON.stringify({
    client_id: grant.client_id,
    scope: grant.scope,
    family: grant.family,
  });
  const insert =
    "insert into tokens (token_hash, kind, account_id, expires_at, data, family) values (?, ?, ?, ?, ?, ?)";
  const now = nowSeconds();
  await db.run(
    insert,
    pair.accessHash,
    "access",
    accountId,
    // Whole seconds, rounded up: a token counts as expired once the clock's whole second
    // reaches this, so one stored from the floored time could die up to a second before the
    // `expires_in` the client was told (at 1 s, at once).
    Math.ceil(Date.now() / 1000) + accessSeconds,
    data,
    grant.family ?? null,
  );
  await db.run(
    insert,
    pair.refreshHash,
    "refresh",
    accountId,
    now + REFRESH_TOKEN_SECONDS,
    data,
    grant.family ?? null,
  );
  return {
    access_token: pair.access,
    token_type: "Bearer",
    expires_in: accessSeconds,
    refresh_token: pair.refresh,
    scope: grant.scope,
  };
}

/** Deletes every access and refresh token of a family. */
async function revokeFamily(db: Queries, family: string): Promise<void> {
  await db.run(
    "delete from tokens where kind in ('access', 'refresh') and family = ?",
    family,
  );
}

async function purgeExpired(db: Queries): Promise<void> {
  await db.run("delete from tokens where expires_at < ?", nowSeconds() - PURGE_AFTER_SECONDS);
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
  console.error(error);
  return c.json({ error: "server_error", error_description: "internal error" }, 500);
}

/** The sign-in and approve page, with a fresh CSRF cookie and token for its form. */
async function signInPage(
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
  const fields = hidden.filter(([, value]) => value !== undefined)
    .map(([name, value]) =>
      `<input type="hidden" name="${name}" value="${escapeHtml(value as string)}">`
    ).join("\n");
  const target = new URL(request.redirectUri);
  return htmlPage(
    c,
    status,
    "Sign in",
    `<h1>Sign in to approve vid</h1>
<p>The <strong>vid command-line tool</strong> asks to render videos with your account
(scope <code>${escapeHtml(request.scope)}</code>). Approving sends a one-time code to
<code>${escapeHtml(target.origin)}</code>.</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ""}
<form method="post" action="authorize">
${fields}
<label for="email">Email</label>
<input id="email" type="email" name="email" autocomplete="username" required autofocus value="${
      escapeHtml(email)
    }">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<button type="submit">Approve</button>
</form>
<p class="note">Only approve if you just ran <code>vid auth login</code> yourself.</p>`,
  );
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
  return await signInPage(state, c, request, 200);
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
    return await signInPage(
      state,
      c,
      request,
      403,
      "The form expired or did not come from this page. Sign in again.",
      email,
    );
  }
  // Guessing is throttled per account and per address; a locked-out attempt is refused
  // before the password is checked, so it tells nothing.
  const account = email.toLowerCase();
  const address = clientAddress(c.env);
  const wait = Math.max(
    await state.throttles.signInPerAccount.retryAfter(account),
    await state.throttles.signInPerAddress.retryAfter(address),
  );
  if (wait > 0) {
    c.header("retry-after", String(wait));
    return await signInPage(
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
    await state.throttles.signInPerAccount.fail(account);
    await state.throttles.signInPerAddress.fail(address);
    return await signInPage(state, c, request, 401, "Wrong email or password.", email);
  }
  await state.throttles.signInPerAccount.clear(account);
  if (needsRehash(stored)) {
    // A hash from before the current parameters: the password is at hand only now.
    await ctx.db.run(
      "update accounts set password_hash = ? where id = ? and password_hash = ?",
      await hashPassword(form.get("password") ?? ""),
      String(row.id),
      stored,
    );
  }
  const code = randomId("vid_ac", 32);
  const grant: GrantData = {
    client_id: request.clientId,
    scope: request.scope,
    redirect_uri: request.redirectUri,
    code_challenge: request.codeChallenge,
  };
  await ctx.db.run(
    "insert into tokens (token_hash, kind, account_id, expires_at, data) values (?, 'code', ?, ?, ?)",
    await sha256Hex(code),
    String(row.id),
    nowSeconds() + CODE_SECONDS,
    JSON.stringify(grant),
  );
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
  const codeHash = await sha256Hex(code);
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
    await ctx.db.run(
      "update tokens set used_at = ? where token_hash = ? and kind = 'code' and used_at is null",
      nowSeconds(),
      codeHash,
    );
    throw error;
  }
  const [challenge, pair] = await Promise.all([s256(verifier), newTokenPair()]);
  const result = await ctx.db.transaction(async (tx): Promise<TokenResponse | string> => {
    const row = await tx.get(
      "select account_id, expires_at, data, used_at from tokens where token_hash = ? and kind = 'code'",
      codeHash,
    ) as Row | undefined;
    if (!row) return "unknown authorization code";
    const grant = JSON.parse(String(row.data)) as GrantData;
    if (row.used_at !== null) {
      // RFC 6749 section 4.1.2: a code used twice revokes what it was exchanged for.
      if (grant.family) await revokeFamily(tx, grant.family);
      return "the authorization code was already used; tokens issued for it are revoked";
    }
    await tx.run("update tokens set used_at = ? where token_hash = ?", nowSeconds(), codeHash);
    if (Number(row.expires_at) <= nowSeconds()) return "the authorization code expired";
    if (grant.client_id !== clientId) return "the code was issued to another client_id";
    if (grant.redirect_uri !== redirectUri) {
      return "redirect_uri does not match the one of the authorization request";
    }
    if (!safeEqual(challenge, grant.code_challenge ?? "")) {
      return "code_verifier does not match the code_challenge";
    }
    const family = randomId("fam", 12);
    await tx.run(
      "update tokens set data = ? where token_hash = ?",
      JSON.stringify({ ...grant, family }),
      codeHash,
    );
    return await storePair(
      tx,
      pair,
      String(row.account_id),
      { ...grant, family },
      state.accessSeconds,
    );
  });
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
  const [hash, pair] = await Promise.all([sha256Hex(refreshToken), newTokenPair()]);
  const result = await ctx.db.transaction(async (tx): Promise<TokenResponse | string> => {
    const row = await tx.get(
      "select account_id, expires_at, data, used_at from tokens where token_hash = ? and kind = 'refresh'",
      hash,
    ) as Row | undefined;
    if (!row) return "unknown or revoked refresh token; sign in again with vid auth login";
    const grant = JSON.parse(String(row.data)) as GrantData;
    if (row.used_at !== null) {
      // A rotated-out token came back: someone holds a copy. End the whole sign-in.
      if (grant.family) await revokeFamily(tx, grant.family);
      return "the refresh token was already used; every token of this sign-in is revoked, " +
        "sign in again with vid auth login";
    }
    if (Number(row.expires_at) <= nowSeconds()) {
      return "the refresh token expired; sign in again with vid auth login";
    }
    if (clientId !== undefined && grant.client_id !== clientId) {
      return "the refresh token was issued to another client_id";
    }
    await tx.run("update tokens set used_at = ? where token_hash = ?", nowSeconds(), hash);
    return await storePair(tx, pair, String(row.account_id), grant, state.accessSeconds);
  });
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
  const hash = await sha256Hex(token);
  await ctx.db.transaction(async (tx) => {
    const row = await tx.get(
      "select data from tokens where token_hash = ? and kind in ('access', 'refresh')",
      hash,
    ) as Row | undefined;
    if (!row) return;
    const family = (JSON.parse(String(row.data)) as GrantData).family;
    if (family) await revokeFamily(tx, family);
    else await tx.run("delete from tokens where token_hash = ?", hash);
  });
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
 * import type { ServerContext } from "./context.ts";
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
