/**
 * Idempotency keys of the API (`Idempotency-Key` on `POST /v3/assets` and
 * `POST /v3/vid/renders`), race-free: a request first claims its key with a unique insert
 * (a pending row), does its work, then records the object it made. A concurrent request
 * with the same key and body waits for that object and answers it; one with a different
 * body is a 409. Bodies are compared as canonical JSON (object keys sorted), so key order
 * does not matter. A request that fails releases its claim, so the key can be retried.
 *
 * A claim names the run that holds it (`owner`, the run's lease owner): when that run dies
 * mid-request (SIGKILL), the next start on its data folder releases its claims
 * ({@linkcode releaseKeysOfDeadRuns}); a claim held by a run elsewhere in a cluster, whose
 * process cannot be looked at from here, is presumed dead once it is older than
 * {@linkcode STALE_CLAIM_MS}, and the next request with the key takes it over. Claims are
 * never released wholesale at start: other instances may be serving those requests.
 *
 * @module
 */

import { type Database, now, type Queries, type Row } from "../database/mod.ts";
import { ApiError } from "./errors.ts";
import { sha256Hex } from "../auth/secrets.ts";
import { canonicalJson } from "../../util/canonical_json.ts";
import { sleep } from "../../util/async.ts";

/** `object_id` of a claim whose request is still running. */
const PENDING = "";
/** How long a request waits for a concurrent one with the same key before a 409. */
const WAIT_MS = 120_000;
const POLL_MS = 50;
/**
 * A pending claim older than this is presumed abandoned (its run died): no create request
 * takes that long (an upload's body is read within the upload URL's own limits long before).
 */
export const STALE_CLAIM_MS = 15 * 60_000;

/** Where a key lives: the account and the endpoint (`assets` or `renders`). */
export interface KeyScope {
  accountId: string;
  scope: "assets" | "renders";
  key: string;
}

/** What {@linkcode claimKey} found: a fresh claim, or the object an earlier request made. */
export type KeyClaim = { kind: "claimed" } | { kind: "replay"; objectId: string };

/** SHA-256 of a request body's canonical JSON. */
export async function requestHash(body: unknown): Promise<string> {
  return await sha256Hex(canonicalJson(body));
}

function conflict(message: string): ApiError {
  return new ApiError(409, "vid_idempotency_conflict", message, "Idempotency-Key");
}

/**
 * Claims `key` for a request with body hash `hash`: resolves `claimed` when this request
 * is the first (it must later call {@linkcode completeKey} or {@linkcode releaseKey}), or
 * `replay` with the object of the earlier request with the same body, waiting for it when
 * that request is still running.
 *
 * @throws {ApiError} 409 when the key was used with another body, or its first request is
 *   still running after two minutes.
 */
export async function claimKey(
  db: Database,
  where: KeyScope,
  hash: string,
  owner: string | null = null,
): Promise<KeyClaim> {
  const deadline = Date.now() + WAIT_MS;
  while (true) {
    const claim = await db.transaction(async (tx): Promise<KeyClaim | undefined> => {
      const row = await tx.get(
        "select request_hash, object_id, created_at from idempotency where account_id = ? and scope = ? and key = ? for update",
        where.accountId,
        where.scope,
        where.key,
      ) as Row | undefined;
      if (!row) {
        await tx.run(
          "insert into idempotency (account_id, scope, key, request_hash, object_id, created_at, owner) values (?, ?, ?, ?, ?, ?, ?)",
          where.accountId,
          where.scope,
          where.key,
          hash,
          PENDING,
          now(),
          owner,
        );
        return { kind: "claimed" };
      }
      if (row.request_hash !== hash) {
        throw conflict(
          `Idempotency-Key "${where.key}" was used with a different request body; use a new key`,
        );
      }
      if (row.object_id !== PENDING) return { kind: "replay", objectId: String(row.object_id) };
      if (Date.now() - Date.parse(String(row.created_at)) > STALE_CLAIM_MS) {
        // Its run died mid-request (elsewhere in the cluster): this request takes it over.
        await tx.run(
          "update idempotency set created_at = ?, owner = ? where account_id = ? and scope = ? and key = ? and object_id = ?",
          now(),
          owner,
          where.accountId,
          where.scope,
          where.key,
          PENDING,
        );
        return { kind: "claimed" };
      }
      return undefined;
    });
    if (claim) return claim;
    if (Date.now() > deadline) {
      throw conflict(
        `a request with Idempotency-Key "${where.key}" is still being processed; retry later`,
      );
    }
    await sleep(POLL_MS);
  }
}

/** Records the object a claimed key's request made (call inside the request's transaction). */
export async function completeKey(
  db: Queries,
  where: KeyScope,
  objectId: string,
): Promise<void> {
  await db.run(
    "update idempotency set object_id = ? where account_id = ? and scope = ? and key = ?",
    objectId,
    where.accountId,
    where.scope,
    where.key,
  );
}

/** Drops a claim whose request failed, so the key can be used again. */
export async function releaseKey(db: Queries, where: KeyScope): Promise<void> {
  await db.run(
    "delete from idempotency where account_id = ? and scope = ? and key = ? and object_id = ?",
    where.accountId,
    where.scope,
    where.key,
    PENDING,
  );
}

/**
 * Drops the claims left pending by runs of `instance` whose process is gone (`alive`: this
 * machine's pids), like `expireLeasesOfDeadRuns` for leases: their requests died with them,
 * so their keys can be used again at once. Claims of live runs, and of other instances,
 * stay.
 *
 * @returns How many were dropped.
 */
export async function releaseKeysOfDeadRuns(
  db: Queries,
  instance: string,
  alive: ReadonlySet<number>,
): Promise<number> {
  const prefix = `${instance.replaceAll(":", "-")}:`;
  const pending = await db.all<{ owner: string }>(
    "select distinct owner from idempotency where object_id = ? and substr(owner, 1, ?) = ?",
    PENDING,
    prefix.length,
    prefix,
  );
  let dropped = 0;
  for (const { owner } of pending) {
    if (alive.has(Number(owner.slice(prefix.length).split(":")[0]))) continue;
    dropped += await db.run(
      "delete from idempotency where object_id = ? and owner = ?",
      PENDING,
      owner,
    );
  }
  return dropped;
}
