/**
 * Leases on rows of the shared database: how several `vid server` instances share work
 * (a render, or a chunk of one) without a coordinator. A worker owns a row only while its
 * lease is current; it renews the lease (heartbeat) every third of its length, and a lease
 * that runs out (the worker was killed, or lost the database) lets any other worker take
 * the row over, counting an attempt. Leases live in three columns of the leased row itself
 * (`lease_owner`, `lease_expires_at` in ms since the epoch, `attempts`), so taking a job and
 * its lease is one update of one row, on SQLite as on PostgreSQL; a table whose rows are
 * leased needs those columns and a text primary key `id` (see `leaseColumnsSql` in
 * `database/schema.ts`).
 *
 * Why not pg-boss or graphile-worker: see ARCHITECTURE.md ("The queue"). The short version:
 * the queue must run on the SQLite default too, with per-account round-robin and limits
 * decided at claim time, so the claim is our SQL and only the lease is generic.
 *
 * Times are the instances' clocks (`Date.now()`), so the machines of a cluster keep them
 * in step (NTP); a lease is tens of seconds, so a skew of a second costs nothing.
 *
 * @module
 */

import { hostname } from "node:os";
import type { Queries } from "../database/mod.ts";
import { randomId } from "../auth/secrets.ts";
import { sqlTableName } from "../database/schema.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";
import { sleep } from "../../util/async.ts";

/** The default length of a lease, seconds (`vid server --lease-seconds`). */
export const DEFAULT_LEASE_SECONDS = 30;

/** A lease held on one row. */
export interface Lease {
  /** The leased row's table (one that has the lease columns of `leaseColumnsSql`). */
  readonly table: string;
  /** The row's `id`. */
  readonly id: string;
  /** Who holds it: {@linkcode leaseOwner} of the holding instance. */
  readonly owner: string;
  /** Length of the lease and of each renewal, ms. */
  readonly ms: number;
  /** When it runs out unless renewed, ms since the epoch (updated by each renewal). */
  expiresAt: number;
  /** How many times the row has been leased, this lease included. */
  readonly attempts: number;
}

/** The lease of a row was lost: taken over by another worker, or run out. */
export class LeaseLostError extends VidError {
  override name = "LeaseLostError";
  /** The leased row's table. */
  readonly table: string;
  /** The row's `id`. */
  readonly id: string;
  constructor(lease: Pick<Lease, "table" | "id">, why: string) {
    super(`lost the lease on ${lease.table} ${lease.id}: ${why}`, {
      exitCode: EXIT_FAILED,
      field: "lease",
    });
    this.table = lease.table;
    this.id = lease.id;
  }
}

/**
 * A name for this run's leases, unique across machines and restarts:
 * `<instance>:<pid>:<random>`. `instance` names the data folder the run works in (see
 * {@linkcode expireLeasesOfDeadRuns}); the random part keeps a reused pid from mistaking a
 * predecessor's leases for its own.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.notEqual(leaseOwner(), leaseOwner());
 * assert.match(leaseOwner("box-1"), /^box-1:\d+:w_[0-9a-f]{12}$/);
 * ```
 */
export function leaseOwner(instance: string = hostname()): string {
  return `${instance.replaceAll(":", "-")}:${Deno.pid}:${randomId("w", 6)}`;
}

/**
 * Ends now the leases that runs of `instance` whose process is gone still hold on
 * `tableName` (a server killed with SIGKILL and started again on the same data folder), so
 * their work is taken over at once instead of when the leases run out. Only runs of this
 * instance are judged, by pids in `alive` (the processes of this machine): a data folder
 * belongs to one machine at a time, while another machine's pids mean nothing here.
 *
 * @returns How many leases were ended.
 */
export async function expireLeasesOfDeadRuns(
  db: Queries,
  tableName: string,
  instance: string,
  alive: ReadonlySet<number>,
): Promise<number> {
  const t = sqlTableName(tableName);
  const prefix = `${instance.replaceAll(":", "-")}:`;
  const held = await db.all<{ id: string; lease_owner: string }>(
    `select id, lease_owner from ${t} where substr(lease_owner, 1, ?) = ? and lease_expires_at > 0`,
    prefix.length,
    prefix,
  );
  let ended = 0;
  for (const row of held) {
    if (!row.lease_owner.startsWith(prefix)) continue;
    const pid = Number(row.lease_owner.slice(prefix.length).split(":")[0]);
    if (alive.has(pid)) continue;
    ended += await db.run(
      `update ${t} set lease_expires_at = 0 where id = ? and lease_owner = ?`,
      row.id,
      row.lease_owner,
    );
  }
  return ended;
}

/**
 * Leases row `id` of `tableName` to `owner` for `ms`, if nobody holds it or its lease ran
 * out; counts an attempt. Run it in the transaction that picked the row (with
 * `for update skip locked`, so two workers do not pick the same one).
 *
 * @returns The lease, or `undefined` when someone else holds it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * await db.run("insert into renders (id, account_id, status, request, created_at) values ('r', 'a', 'queued', '{}', 'now')");
 * const lease = await acquireLease(db, "renders", "r", "worker-1", 30_000);
 * assert.equal(lease?.attempts, 1);
 * assert.equal(await acquireLease(db, "renders", "r", "worker-2", 30_000), undefined);
 * await db.close();
 * ```
 */
export async function acquireLease(
  tx: Queries,
  tableName: string,
  id: string,
  owner: string,
  ms: number,
): Promise<Lease | undefined> {
  const t = sqlTableName(tableName);
  const at = Date.now();
  const changed = await tx.run(
    `update ${t} set lease_owner = ?, lease_expires_at = ?, attempts = attempts + 1
     where id = ? and (lease_owner is null or lease_expires_at is null or lease_expires_at < ?)`,
    owner,
    at + ms,
    id,
    at,
  );
  if (changed !== 1) return undefined;
  const row = await tx.get<{ attempts: number }>(`select attempts from ${t} where id = ?`, id);
  return { table: t, id, owner, ms, expiresAt: at + ms, attempts: Number(row?.attempts ?? 1) };
}

/**
 * Extends `lease` by its length from now, if its owner still holds it (a lease that ran
 * out is still renewed while nobody took it over: nothing was lost) and the row still meets
 * `wanted`, an SQL condition on it (a render not deleted meanwhile, say).
 *
 * @returns Whether it is still held.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * await db.run("insert into renders (id, account_id, status, request, created_at) values ('r', 'a', 'queued', '{}', 'now')");
 * const lease = (await acquireLease(db, "renders", "r", "worker-1", 30_000))!;
 * assert.ok(await renewLease(db, lease));
 * await releaseLease(db, lease);
 * assert.ok(!(await renewLease(db, lease)));
 * await db.close();
 * ```
 */
export async function renewLease(db: Queries, lease: Lease, wanted?: string): Promise<boolean> {
  const expiresAt = Date.now() + lease.ms;
  // `wanted` comes from code (e.g. "deleted_at is null"), never from a request.
  const also = wanted === undefined ? "" : ` and (${wanted})`;
  const changed = await db.run(
    `update ${
      sqlTableName(lease.table)
    } set lease_expires_at = ? where id = ? and lease_owner = ?${also}`,
    expiresAt,
    lease.id,
    lease.owner,
  );
  if (changed === 1) lease.expiresAt = expiresAt;
  return changed === 1;
}

/** Options of {@linkcode releaseLease}. */
export interface ReleaseOptions {
  /**
   * The work was handed back, not lost (a worker stopping): the attempt it counted is
   * taken back, so a row handed back by restarts is never failed for running out of
   * attempts.
   */
  handBack?: boolean;
}

/**
 * Gives `lease` up, if its owner still holds it. Run it in the transaction that records
 * what became of the row, so the row and its lease change together.
 *
 * @returns Whether it was still held (false: another worker took it over, and the
 *   caller's outcome must not be recorded).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * await db.run("insert into renders (id, account_id, status, request, created_at) values ('r', 'a', 'queued', '{}', 'now')");
 * const lease = (await acquireLease(db, "renders", "r", "worker-1", 30_000))!;
 * assert.ok(await releaseLease(db, lease, { handBack: true }));
 * assert.equal((await acquireLease(db, "renders", "r", "worker-2", 30_000))?.attempts, 1);
 * await db.close();
 * ```
 */
export async function releaseLease(
  db: Queries,
  lease: Lease,
  options: ReleaseOptions = {},
): Promise<boolean> {
  const attempts = options.handBack
    ? "case when attempts > 0 then attempts - 1 else 0 end"
    : "attempts";
  const changed = await db.run(
    `update ${
      sqlTableName(lease.table)
    } set lease_owner = null, lease_expires_at = null, attempts = ${attempts}
     where id = ? and lease_owner = ?`,
    lease.id,
    lease.owner,
  );
  return changed === 1;
}

/**
 * Whether `lease` is still its owner's, locking the row for the rest of the transaction
 * (`for update`): check it before recording an outcome, in the same transaction, so a
 * worker whose lease was taken over records nothing.
 */
export async function holdsLease(tx: Queries, lease: Lease): Promise<boolean> {
  const row = await tx.get<{ lease_owner: string | null }>(
    `select lease_owner from ${sqlTableName(lease.table)} where id = ? for update`,
    lease.id,
  );
  return row?.lease_owner === lease.owner;
}

/**
 * The SQL condition "this row's lease ran out at `?`" (bind `Date.now()`), for the query
 * that looks for work to take over: a row marked in progress whose worker stopped renewing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(leaseExpiredSql("r"), "(r.lease_expires_at is null or r.lease_expires_at < ?)");
 * ```
 */
export function leaseExpiredSql(alias?: string): string {
  const column = alias === undefined
    ? "lease_expires_at"
    : `${sqlTableName(alias)}.lease_expires_at`;
  return `(${column} is null or ${column} < ?)`;
}

/** A lease kept alive in the background by {@linkcode holdLease}. */
export interface LeaseHolder {
  /** Aborted (with a {@linkcode LeaseLostError}) when the lease is lost. */
  readonly signal: AbortSignal;
  /** Stops renewing; resolves once no renewal is in flight. */
  stop(): Promise<void>;
}

/** Options of {@linkcode holdLease}. */
export interface HoldOptions {
  /** Told about renewals that failed (the database away), without secrets. */
  onError?: (error: unknown) => void;
  /**
   * An SQL condition the row must still meet to be worth working on (`"deleted_at is null"`):
   * once it does not, the next renewal fails and the work is dropped, as when the lease is
   * lost. Written in code, never taken from a request.
   */
  wanted?: string;
}

/**
 * Renews `lease` every third of its length until `stop()`. When a renewal finds the lease
 * taken over, or the database stays away until the lease would run out, `signal` aborts:
 * the worker must drop the work (another worker may be doing it now) and record nothing.
 * A renewal that fails is retried every second, never past the lease's end.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * await db.run("insert into renders (id, account_id, status, request, created_at) values ('r', 'a', 'queued', '{}', 'now')");
 * const lease = (await acquireLease(db, "renders", "r", "worker-1", 30_000))!;
 * const holder = holdLease(db, lease);
 * assert.ok(!holder.signal.aborted);
 * await holder.stop();
 * await db.close();
 * ```
 */
export function holdLease(db: Queries, lease: Lease, options: HoldOptions = {}): LeaseHolder {
  const lost = new AbortController();
  const stopped = new AbortController();
  const every = Math.max(1, Math.floor(lease.ms / 3));
  const run = (async () => {
    while (!stopped.signal.aborted) {
      await sleep(every, stopped.signal).catch(() => {});
      // Renew until it works, the lease is taken, or it has run out.
      while (!stopped.signal.aborted) {
        try {
          if (!(await renewLease(db, lease, options.wanted))) {
            lost.abort(
              new LeaseLostError(
                lease,
                options.wanted === undefined
                  ? "another worker took it over"
                  : `another worker took it over, or it no longer meets "${options.wanted}"`,
              ),
            );
            return;
          }
          break;
        } catch (error) {
          options.onError?.(error);
          const left = lease.expiresAt - Date.now();
          if (left <= 0) {
            lost.abort(
              new LeaseLostError(lease, "the database stayed unreachable until it ran out"),
            );
            return;
          }
          await sleep(Math.min(1000, left), stopped.signal).catch(() => {});
        }
      }
    }
  })();
  return {
    signal: lost.signal,
    async stop(): Promise<void> {
      stopped.abort();
      await run;
    },
  };
}
