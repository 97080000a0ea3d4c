/**
 * The render bucket's CORS rule for `<vid-player>`: a web page of any origin reads a site's
 * files (`GET`/`HEAD` from origin `*`), so a player can fetch the composition at a site's
 * `serveUrl` and the page's fonts, modules and `fetch`es load in its sandbox (an opaque
 * origin, `Origin: null`). `deploySite` adds the rule when the bucket has none like it,
 * keeping the bucket's other rules. CORS grants no access of its own: the objects still
 * need to be readable by the browser (docs/player.md).
 *
 * @module
 */

import {
  type CORSRule,
  GetBucketCorsCommand,
  PutBucketCorsCommand,
  type S3Client,
} from "@aws-sdk/client-s3";

/** The rule `deploySite` adds. */
export const PLAYER_CORS_RULE: CORSRule = {
  ID: "vid-player",
  AllowedOrigins: ["*"],
  AllowedMethods: ["GET", "HEAD"],
  AllowedHeaders: ["*"],
  MaxAgeSeconds: 3600,
};

/**
 * Whether `rules` already let any origin read: a rule allowing origin `*` and `GET`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(allowsPlayerReads([PLAYER_CORS_RULE]), true);
 * assert.equal(allowsPlayerReads([{ AllowedOrigins: ["https://a.example"], AllowedMethods: ["GET"] }]), false);
 * ```
 */
export function allowsPlayerReads(rules: readonly CORSRule[]): boolean {
  return rules.some((rule) =>
    (rule.AllowedOrigins ?? []).includes("*") && (rule.AllowedMethods ?? []).includes("GET")
  );
}

/** Whether an S3 error says the bucket has no CORS configuration. */
function noConfiguration(error: unknown): boolean {
  const e = error as { name?: string; Code?: string };
  return e?.name === "NoSuchCORSConfiguration" || e?.Code === "NoSuchCORSConfiguration";
}

/**
 * Adds {@linkcode PLAYER_CORS_RULE} to `bucket`'s CORS configuration unless a rule already
 * allows what it does; true when it wrote the configuration.
 *
 * @example
 * ```ts no_run
 * import { S3Client } from "@aws-sdk/client-s3";
 *
 * await allowPlayerReads(new S3Client({}), "vid-renders-123");
 * ```
 */
export async function allowPlayerReads(client: S3Client, bucket: string): Promise<boolean> {
  let rules: CORSRule[] = [];
  try {
    const answer = await client.send(new GetBucketCorsCommand({ Bucket: bucket }));
    rules = answer.CORSRules ?? [];
  } catch (error) {
    if (!noConfiguration(error)) throw error;
  }
  if (allowsPlayerReads(rules)) return false;
  await client.send(
    new PutBucketCorsCommand({
      Bucket: bucket,
      CORSConfiguration: { CORSRules: [...rules, PLAYER_CORS_RULE] },
    }),
  );
  return true;
}
