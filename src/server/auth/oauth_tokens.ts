/**
 * The OAuth token store of `vid server`: every read and write of the `tokens` table that
 * `vid auth login`, refresh and logout cause, apart from the HTTP endpoints (oauth.ts) so
 * that the rules of the credentials (lifetimes, single use, token families) are read in one
 * place and the endpoints only map their outcome to RFC 6749 answers.
 *
 * Credentials: codes `vid_ac_…` (single use, 60 s), access tokens `vid_at_…` (3600 s, or
 * `VID_ACCESS_TOKEN_SECONDS`), refresh tokens `vid_rt_…` (30 days). Only their SHA-256
 * hashes are stored, in the `tokens` table; the functions here take the credentials
 * themselves and hash them, so no hash leaves this module.
 *
 * Each exchanged code starts a token family. Refreshing rotates the pair: the presented
 * refresh token is spent and a new access + refresh token of the same family is issued.
 * Presenting a spent refresh token (or a spent code) again means a copy of it leaked, so
 * the whole family is revoked and the client has to sign in again.
 *
 * A refused code or refresh token resolves to the reason, a sentence the token endpoint
 * sends as its `invalid_grant` description.
 *
 * @module
 */

import type { Database, Queries, Row } from "../database/mod.ts";
import { randomId, safeEqual, sha256Hex } from "./secrets.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

/** Lifetime of an authorization code. */
export const CODE_SECONDS = 60;
/** Default lifetime of an access token; `VID_ACCESS_TOKEN_SECONDS` overrides it. */
export const DEFAULT_ACCESS_TOKEN_SECONDS = 3600;
/** Lifetime of a refresh token (each rotation issues a new one with a fresh lifetime). */
export const REFRESH_TOKEN_SECONDS = 30 * 24 * 3600;

// Expired rows are kept a day so that an expired access token still answers "expired".
const PURGE_AFTER_SECONDS = 24 * 3600;

/** The OAuth configuration is unusable (e.g. a bad `VID_ACCESS_TOKEN_SECONDS`). */
export class OAuthConfigError extends VidError {
  override name = "OAuthConfigError";

  /** Creates the error; the CLI exits 1. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
  }
}

/** What a code or token row keeps in its `data` column. */
export interface GrantData {
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

/** What an exchanged code must match: the token request's client, redirect and verifier. */
export interface CodeExchange {
  /** The `client_id` of the token request. */
  clientId: string;
  /** The `redirect_uri` of the token request. */
  redirectUri: string;
  /** The S256 challenge of the token request's `code_verifier`. */
  challenge: string;
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

/**
 * The current time in whole seconds, the unit of the `tokens` table's times (and of the
 * sign-in form's expiry).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.ok(Number.isSafeInteger(nowSeconds()));
 * ```
 */
export function nowSeconds(): number {
  return Math.floor(Date.now() / 1000);
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

/**
 * Deletes the rows that expired more than a day ago.
 *
 * @example
 * ```ts
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await purgeExpired(db);
 * await db.close();
 * ```
 */
export async function purgeExpired(db: Queries): Promise<void> {
  await db.run("delete from tokens where expires_at < ?", nowSeconds() - PURGE_AFTER_SECONDS);
}

/**
 * Issues an authorization code for an account that approved a sign-in: stores its hash
 * with the grant it stands for, valid {@linkcode CODE_SECONDS}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * const code = await issueCode(db, "a", {
 *   client_id: "vid-cli",
 *   scope: "render",
 *   redirect_uri: "http://127.0.0.1:8123/callback",
 *   code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
 * });
 * assert.match(code, /^vid_ac_/);
 * await db.close();
 * ```
 *
 * @returns The code, `vid_ac_…`, to send to the redirect URI.
 */
export async function issueCode(
  db: Queries,
  accountId: string,
  grant: GrantData,
): Promise<string> {
  const code = randomId("vid_ac", 32);
  await db.run(
    "insert into tokens (token_hash, kind, account_id, expires_at, data) values (?, 'code', ?, ?, ?)",
    await sha256Hex(code),
    accountId,
    nowSeconds() + CODE_SECONDS,
    JSON.stringify(grant),
  );
  return code;
}

/**
 * Marks a code used without exchanging it: the exchange that presented it was malformed,
 * and a code is tried once, never probed.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * const [redirectUri, challenge] = ["http://127.0.0.1:8123/cb", "c".repeat(43)];
 * const grant = { client_id: "vid-cli", scope: "render", redirect_uri: redirectUri, code_challenge: challenge };
 * const exchange = { clientId: "vid-cli", redirectUri, challenge };
 * const code = await issueCode(db, "a", grant);
 * await spendCode(db, code);
 * assert.equal(typeof await redeemCode(db, code, exchange, 3600), "string");
 * await db.close();
 * ```
 */
export async function spendCode(db: Queries, code: string): Promise<void> {
  await db.run(
    "update tokens set used_at = ? where token_hash = ? and kind = 'code' and used_at is null",
    nowSeconds(),
    await sha256Hex(code),
  );
}

/**
 * The `authorization_code` grant's store side: spends the code and, when it is unexpired and
 * matches the request, starts a token family with a new access and refresh token. A code
 * used twice revokes the family it was exchanged for.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * const [redirectUri, challenge] = ["http://127.0.0.1:8123/cb", "c".repeat(43)];
 * const grant = { client_id: "vid-cli", scope: "render", redirect_uri: redirectUri, code_challenge: challenge };
 * const exchange = { clientId: "vid-cli", redirectUri, challenge };
 * const code = await issueCode(db, "a", grant);
 * const tokens = await redeemCode(db, code, exchange, 3600);
 * assert.ok(typeof tokens !== "string" && tokens.access_token.startsWith("vid_at_"));
 * assert.equal(
 *   await redeemCode(db, code, exchange, 3600),
 *   "the authorization code was already used; tokens issued for it are revoked",
 * );
 * await db.close();
 * ```
 *
 * @returns The tokens, or why the code was refused.
 */
export async function redeemCode(
  db: Database,
  code: string,
  exchange: CodeExchange,
  accessSeconds: number,
): Promise<TokenResponse | string> {
  const [codeHash, pair] = await Promise.all([sha256Hex(code), newTokenPair()]);
  const { clientId, redirectUri, challenge } = exchange;
  return await db.transaction(async (tx): Promise<TokenResponse | string> => {
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
      accessSeconds,
    );
  });
}

/**
 * The `refresh_token` grant's store side: spends the refresh token and issues a new pair of
 * the same family. A spent token presented again revokes the whole family.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * const [redirectUri, challenge] = ["http://127.0.0.1:8123/cb", "c".repeat(43)];
 * const grant = { client_id: "vid-cli", scope: "render", redirect_uri: redirectUri, code_challenge: challenge };
 * const exchange = { clientId: "vid-cli", redirectUri, challenge };
 * const tokens = await redeemCode(db, await issueCode(db, "a", grant), exchange, 3600);
 * assert.ok(typeof tokens !== "string");
 * const next = await rotateRefreshToken(db, tokens.refresh_token, "vid-cli", 3600);
 * assert.ok(typeof next !== "string" && next.refresh_token !== tokens.refresh_token);
 * const again = await rotateRefreshToken(db, tokens.refresh_token, undefined, 3600);
 * assert.match(String(again), /already used/);
 * await db.close();
 * ```
 *
 * @param clientId The request's `client_id`, when it sent one.
 * @returns The new tokens, or why the refresh token was refused.
 */
export async function rotateRefreshToken(
  db: Database,
  refreshToken: string,
  clientId: string | undefined,
  accessSeconds: number,
): Promise<TokenResponse | string> {
  const [hash, pair] = await Promise.all([sha256Hex(refreshToken), newTokenPair()]);
  return await db.transaction(async (tx): Promise<TokenResponse | string> => {
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
    return await storePair(tx, pair, String(row.account_id), grant, accessSeconds);
  });
}

/**
 * Ends the sign-in an access or refresh token belongs to (its whole family); an unknown
 * token changes nothing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * const [redirectUri, challenge] = ["http://127.0.0.1:8123/cb", "c".repeat(43)];
 * const grant = { client_id: "vid-cli", scope: "render", redirect_uri: redirectUri, code_challenge: challenge };
 * const exchange = { clientId: "vid-cli", redirectUri, challenge };
 * const tokens = await redeemCode(db, await issueCode(db, "a", grant), exchange, 3600);
 * assert.ok(typeof tokens !== "string");
 * await revokeToken(db, tokens.access_token);
 * const after = await rotateRefreshToken(db, tokens.refresh_token, undefined, 3600);
 * assert.match(String(after), /revoked/);
 * await db.close();
 * ```
 */
export async function revokeToken(db: Database, token: string): Promise<void> {
  const hash = await sha256Hex(token);
  await db.transaction(async (tx) => {
    const row = await tx.get(
      "select data from tokens where token_hash = ? and kind in ('access', 'refresh')",
      hash,
    ) as Row | undefined;
    if (!row) return;
    const family = (JSON.parse(String(row.data)) as GrantData).family;
    if (family) await revokeFamily(tx, family);
    else await tx.run("delete from tokens where token_hash = ?", hash);
  });
}
