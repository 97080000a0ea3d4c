/**
 * Create requests under an `Idempotency-Key`: the header's check, and running a create
 * once per key (later requests with the key replay the first one's object). Shared by the
 * asset and render routes.
 *
 * @module
 */

import type { Context } from "hono";
import { IDEMPOTENCY_KEY_PATTERN } from "../../request/options.ts";
import type { ServerContext } from "../context.ts";
import type { Queries } from "../database/mod.ts";
import { invalid } from "./errors.ts";
import {
  claimKey,
  completeKey,
  type KeyScope,
  releaseKey,
  requestHash as hashRequest,
} from "./idempotency.ts";

/** The request's `Idempotency-Key` header, checked; `undefined` when absent. */
export function idempotencyKey(c: Context): string | undefined {
  const key = c.req.header("idempotency-key");
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
    throw invalid(
      "Idempotency-Key",
      "must be 1 to 255 characters of A-Z a-z 0-9 _ : . -",
    );
  }
  return key;
}

/**
 * Runs a create request under its `Idempotency-Key` (if any): `create` runs only for the
 * first request with the key and must call `complete` with the new object's id inside its
 * final transaction; later ones get `replay` with that id. A failing `create` frees the key.
 */
export async function underKey(
  ctx: ServerContext,
  where: KeyScope | undefined,
  body: Record<string, unknown>,
  create: (complete: (tx: Queries, objectId: string) => Promise<void>) => Promise<string>,
): Promise<{ id: string; replayed: boolean }> {
  if (!where) return { id: await create(() => Promise.resolve()), replayed: false };
  const claim = await claimKey(ctx.db, where, await hashRequest(body), ctx.owner ?? null);
  if (claim.kind === "replay") return { id: claim.objectId, replayed: true };
  try {
    return { id: await create((tx, id) => completeKey(tx, where, id)), replayed: false };
  } catch (error) {
    await releaseKey(ctx.db, where);
    throw error;
  }
}
