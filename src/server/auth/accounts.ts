/**
 * Accounts and credentials: local accounts (email + password, for the OAuth sign-in
 * page), long-lived API keys (stored as SHA-256 hashes, shown once; listed and revoked by
 * their id, never shown again), credit balances,
 * and resolving the `Authorization: Bearer …` header of a request to an account.
 *
 * @module
 */

import { type Database, now, type Queries, type Row } from "../database/mod.ts";
import { ApiError } from "../http/errors.ts";
import { hashPassword, randomId, sha256Hex } from "./secrets.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

/** Default credit balance of a new account. */
export const DEFAULT_CREDITS = 1000;

/** An account as the API shows it. */
export interface Account {
  id: string;
  email: string;
  credits: number;
}

/** Who is calling. */
export interface Caller {
  account: Account;
  credential: "api_key" | "oauth";
}

/** An account or key operation was refused. */
export class AccountError extends VidError {
  override name = "AccountError";
  override readonly field: string;
  constructor(field: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
  }
}

/** Creates a local account. */
export async function addUser(
  db: Database,
  email: string,
  password: string,
  credits: number = DEFAULT_CREDITS,
): Promise<Account> {
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) {
    throw new AccountError("email", `"${email}" is not an email address`);
  }
  if (password.length < 8) {
    throw new AccountError("password", "the password needs at least 8 characters");
  }
  if (!Number.isFinite(credits) || credits < 0) {
    throw new AccountError("credits", "credits must be a number >= 0");
  }
  const existing = await db.get("select id from accounts where email = ?", email);
  if (existing) throw new AccountError("email", `an account for ${email} exists already`);
  const id = randomId("acct", 8);
  await db.run(
    "insert into accounts (id, email, password_hash, credits, created_at) values (?, ?, ?, ?, ?)",
    id,
    email,
    await hashPassword(password),
    credits,
    now(),
  );
  return { id, email, credits };
}

/** Finds an account by email. */
export async function accountByEmail(db: Queries, email: string): Promise<Account | undefined> {
  const row = await db.get("select id, email, credits from accounts where email = ?", email) as
    | Row
    | undefined;
  return row ? toAccount(row) : undefined;
}

function toAccount(row: Row): Account {
  return { id: String(row.id), email: String(row.email), credits: Number(row.credits) };
}

/** Reads an account by id. */
export async function accountById(db: Queries, id: string): Promise<Account | undefined> {
  const row = await db.get("select id, email, credits from accounts where id = ?", id) as
    | Row
    | undefined;
  return row ? toAccount(row) : undefined;
}

/**
 * Creates an API key for an account; the key itself is returned once and only its hash
 * is stored.
 */
export async function createApiKey(
  db: Database,
  email: string,
  name = "default",
): Promise<{ id: string; key: string }> {
  const account = await accountByEmail(db, email);
  if (!account) throw new AccountError("email", `no account for ${email}; add it with users add`);
  const key = randomId("vid_sk", 24);
  const id = randomId("key", 6);
  await db.run(
    "insert into api_keys (id, account_id, name, key_hash, created_at) values (?, ?, ?, ?, ?)",
    id,
    account.id,
    name,
    await sha256Hex(key),
    now(),
  );
  return { id, key };
}

/** An API key as the admin commands show it: never the key itself nor its hash. */
export interface ApiKeyInfo {
  id: string;
  email: string;
  name: string;
  created_at: string;
  revoked_at: string | null;
}

/** The API keys of every account, or of the account with `email`, oldest first. */
export async function listApiKeys(db: Database, email?: string): Promise<ApiKeyInfo[]> {
  if (email !== undefined && !(await accountByEmail(db, email))) {
    throw new AccountError("email", `no account for ${email}; add it with users add`);
  }
  const rows = await db.all(
    `select k.id, a.email, k.name, k.created_at, k.revoked_at from api_keys k
     join accounts a on a.id = k.account_id ${email !== undefined ? "where a.email = ?" : ""}
     order by k.created_at, k.id`,
    ...(email !== undefined ? [email] : []),
  ) as Row[];
  return rows.map((row) => ({
    id: String(row.id),
    email: String(row.email),
    name: String(row.name),
    created_at: String(row.created_at),
    revoked_at: row.revoked_at === null ? null : String(row.revoked_at),
  }));
}

/**
 * Revokes the API key with id `id` (`key_…`, as `keys create` and `keys list` show it): the
 * next request with it is a 401. Revoking a revoked key changes nothing.
 *
 * @returns The key, with `revoked_at` set.
 */
export async function revokeApiKey(db: Database, id: string): Promise<ApiKeyInfo> {
  const found = async (): Promise<Row | undefined> =>
    await db.get(
      "select k.id, a.email, k.name, k.created_at, k.revoked_at from api_keys k join accounts a on a.id = k.account_id where k.id = ?",
      id,
    ) as Row | undefined;
  if (!(await found())) {
    throw new AccountError(
      "id",
      `no API key ${id}; \`vid server keys list\` shows the ids (key_…)`,
    );
  }
  await db.run("update api_keys set revoked_at = ? where id = ? and revoked_at is null", now(), id);
  const row = (await found())!;
  return {
    id: String(row.id),
    email: String(row.email),
    name: String(row.name),
    created_at: String(row.created_at),
    revoked_at: String(row.revoked_at),
  };
}

/**
 * Resolves `Authorization: Bearer <credential>` to the caller, or throws a 401 that says
 * what is wrong.
 */
export async function authenticate(
  db: Database,
  header: string | undefined | null,
): Promise<Caller> {
  if (!header) {
    throw new ApiError(
      401,
      "vid_unauthorized",
      "missing credential: send Authorization: Bearer <API key or access token>",
    );
  }
  const match = header.match(/^Bearer\s+(\S+)$/i);
  if (!match) {
    throw new ApiError(401, "vid_unauthorized", "the Authorization header must be Bearer <token>");
  }
  const credential = match[1];
  const hash = await sha256Hex(credential);
  if (credential.startsWith("vid_sk_")) {
    const row = await db.get(
      "select account_id from api_keys where key_hash = ? and revoked_at is null",
      hash,
    ) as Row | undefined;
    const account = row ? await accountById(db, String(row.account_id)) : undefined;
    if (!account) throw new ApiError(401, "vid_unauthorized", "invalid or revoked API key");
    return { account, credential: "api_key" };
  }
  const row = await db.get(
    "select account_id, expires_at from tokens where token_hash = ? and kind = 'access'",
    hash,
  ) as Row | undefined;
  if (!row) throw new ApiError(401, "vid_unauthorized", "invalid access token");
  if (Number(row.expires_at) <= Math.floor(Date.now() / 1000)) {
    throw new ApiError(401, "vid_unauthorized", "the access token expired; refresh it");
  }
  const account = await accountById(db, String(row.account_id));
  if (!account) throw new ApiError(401, "vid_unauthorized", "invalid access token");
  return { account, credential: "oauth" };
}
