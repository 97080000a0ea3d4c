/**
 * Sites already in the render bucket: {@linkcode loadSite} checks that a site id names an
 * uploaded site holding the composition, and reads the composition's declarations from
 * the bucket so a render by `--site-id` checks its variables like any other render;
 * {@linkcode listSites} and {@linkcode removeSite} keep the bucket tidy.
 *
 * A site is complete once its `sites/<siteId>/site.json` exists (`deploySite` writes it
 * last); `removeSite` deletes it first, so a site half-removed is never taken for a
 * complete one.
 *
 * @module
 */

import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  S3Client,
} from "@aws-sdk/client-s3";
import type { VariableDeclaration } from "../composition/declarations.ts";
import { parseComposition } from "../composition/composition.ts";
import { isNotFound, type SiteHandle, type SiteManifest } from "./sdk.ts";
import {
  clientLocation,
  defaultRegion,
  objectUrlFor as serveUrlFor,
  s3ClientFor,
  type S3Options,
} from "../aws/clients.ts";
import { explainStackError, StackError } from "./stack_error.ts";
import { OPTIONS } from "../request/options.ts";

/**
 * A ready `S3Client` of `@aws-sdk/client-s3`, kept by the caller; an internal alias (see
 * `ReadyS3Client` in sdk.ts).
 *
 * @internal
 */
type ReadyS3Client = S3Client;

/** Options of the site functions: where the bucket is. */
export interface SiteOptions {
  /** S3 connection options, or a ready client (kept by the caller). */
  s3?: S3Options | ReadyS3Client;
}

/** Options of {@linkcode loadSite}. */
export interface LoadSiteOptions extends SiteOptions {
  /** Entry HTML file inside the site. @default the site's own entry (site.json) */
  composition?: string;
}

/** A site in the bucket, checked: its handle, with the composition's declarations. */
export interface LoadedSite extends SiteHandle {
  /** Variables the site's composition declares. */
  declarations: VariableDeclaration[];
  /** `data-duration` of the composition, seconds. */
  duration: number;
  /** The site manifest. */
  manifest: SiteManifest;
}

/** One site of {@linkcode listSites}. */
export interface SiteSummary {
  /** Content-addressed identifier. */
  siteId: string;
  /** Entry HTML file; `null` for an incomplete site (no site.json). */
  composition: string | null;
  /** Files of the site. */
  files: number;
  /** Bytes of the site's objects. */
  bytes: number;
  /** ISO 8601 time of the upload; `null` for an incomplete site. */
  created: string | null;
  /** Whether site.json exists (the upload finished). */
  complete: boolean;
}

const SITE_ID = /^site-[A-Za-z0-9_-]+$|^[A-Za-z0-9_-]+$/;

function checkSiteId(siteId: string): void {
  if (!SITE_ID.test(siteId)) {
    throw new StackError(
      "siteId",
      `${JSON.stringify(siteId)} is not a site id; pass the id \`vid lambda sites create\` ` +
        "printed (site- and 16 hex digits), or see `vid lambda sites list`",
    );
  }
}

/** The region of the connection options (unknown for a ready client). */
function regionOf(s3: S3Options | ReadyS3Client | undefined): string | undefined {
  return s3 instanceof S3Client ? undefined : s3?.region ?? defaultRegion();
}

/** Runs `work` with the caller's client or one of its own, destroyed afterwards. */
async function withS3<T>(
  s3: S3Options | ReadyS3Client | undefined,
  work: (client: S3Client) => Promise<T>,
): Promise<T> {
  const own = !(s3 instanceof S3Client);
  const client = s3 instanceof S3Client ? s3 : s3ClientFor(s3);
  try {
    return await work(client);
  } finally {
    if (own) client.destroy();
  }
}

async function readText(client: S3Client, bucket: string, key: string): Promise<string> {
  const object = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
  return await object.Body!.transformToString();
}

function notFound(siteId: string, bucketName: string): StackError {
  return new StackError(
    "siteId",
    `site ${siteId} is not in the bucket ${bucketName}: upload the project with \`vid lambda ` +
      "sites create <projectDir>` (or render without --site-id), or pick one from " +
      "`vid lambda sites list`",
  );
}

/**
 * A site uploaded earlier, checked before anything is started: its manifest must exist in
 * the bucket and hold the composition, whose declarations and duration are read from the
 * bucket. Throws {@linkcode StackError} with `field` `siteId` (no such site),
 * `composition` (not in the site) or `bucketName` (no such bucket).
 *
 * @example
 * ```ts no_run
 * import { loadSite, renderToLambda } from "@vid/cli";
 *
 * const siteHandle = await loadSite("site-0123456789abcdef", "vid-renders-123");
 * siteHandle.declarations.map((d) => d.id); // ["title", ...]
 * await renderToLambda({
 *   siteHandle,
 *   bucketName: "vid-renders-123",
 *   stateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render",
 *   config: { variables: { title: "Hi" } },
 *   strictVariables: true,
 * });
 * ```
 */
export async function loadSite(
  siteId: string,
  bucketName: string,
  options: LoadSiteOptions = {},
): Promise<LoadedSite> {
  checkSiteId(siteId);
  const prefix = `sites/${siteId}/`;
  return await withS3(options.s3, async (client) => {
    let manifest: SiteManifest;
    try {
      manifest = JSON.parse(await readText(client, bucketName, `${prefix}site.json`));
    } catch (error) {
      if ((error as { name?: string }).name !== "NoSuchBucket" && isNotFound(error)) {
        throw notFound(siteId, bucketName);
      }
      if (error instanceof SyntaxError) {
        throw new StackError("siteId", `${prefix}site.json is not JSON; upload the site again`);
      }
      throw explainStackError(error, { bucketName, region: regionOf(options.s3) });
    }
    const composition = options.composition ?? manifest.composition ?? OPTIONS.composition.default!;
    const files = Array.isArray(manifest.files) ? manifest.files : [];
    if (!files.some((f) => f.path === composition)) {
      const html = files.map((f) => f.path).filter((p) => /\.html?$/i.test(p));
      throw new StackError(
        "composition",
        `site ${siteId} has no ${composition}; its HTML files: ${html.join(", ") || "none"}. ` +
          "Pass --composition with one of them, or upload the project again",
      );
    }
    const html = await readText(client, bucketName, prefix + composition);
    const parsed = parseComposition(html, `sites/${siteId}/${composition}`);
    const location = options.s3 instanceof S3Client
      ? await clientLocation(options.s3)
      : { region: defaultRegion(), ...options.s3 };
    return {
      siteId,
      bucketName,
      prefix,
      serveUrl: serveUrlFor(bucketName, prefix, location),
      composition,
      files,
      uploaded: false,
      declarations: parsed.declarations,
      duration: parsed.duration,
      ...(parsed.fps && { fps: parsed.fps }),
      manifest,
    };
  });
}

/** Every key under `prefix`, with its size. */
async function listKeys(
  client: S3Client,
  bucketName: string,
  prefix: string,
): Promise<{ key: string; size: number }[]> {
  const keys: { key: string; size: number }[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: bucketName, Prefix: prefix, ContinuationToken: token }),
    );
    for (const o of page.Contents ?? []) keys.push({ key: o.Key!, size: o.Size ?? 0 });
    token = page.NextContinuationToken;
  } while (token);
  return keys;
}

/**
 * The sites in the bucket, newest first (incomplete ones, whose upload never finished,
 * last).
 *
 * @example
 * ```ts no_run
 * import { listSites } from "@vid/cli";
 *
 * for (const site of await listSites("vid-renders-123")) {
 *   console.log(site.siteId, site.created, site.bytes);
 * }
 * ```
 */
export async function listSites(
  bucketName: string,
  options: SiteOptions = {},
): Promise<SiteSummary[]> {
  return await withS3(options.s3, async (client) => {
    let keys;
    try {
      keys = await listKeys(client, bucketName, "sites/");
    } catch (error) {
      throw explainStackError(error, { bucketName, region: regionOf(options.s3) });
    }
    const bySite = new Map<string, { key: string; size: number }[]>();
    for (const k of keys) {
      const id = k.key.slice("sites/".length).split("/")[0];
      if (!id) continue;
      bySite.set(id, [...(bySite.get(id) ?? []), k]);
    }
    const sites = await Promise.all([...bySite].map(async ([siteId, objects]) => {
      const files = objects.filter((o) => o.key !== `sites/${siteId}/site.json`);
      const bytes = objects.reduce((sum, o) => sum + o.size, 0);
      let manifest: Partial<SiteManifest> | undefined;
      if (files.length < objects.length) {
        try {
          manifest = JSON.parse(await readText(client, bucketName, `sites/${siteId}/site.json`));
        } catch {
          manifest = undefined;
        }
      }
      return {
        siteId,
        composition: manifest?.composition ?? null,
        files: files.length,
        bytes,
        created: manifest?.created ?? null,
        complete: manifest !== undefined,
      };
    }));
    return sites.sort((a, b) =>
      (b.created ?? "").localeCompare(a.created ?? "") || a.siteId.localeCompare(b.siteId)
    );
  });
}

/**
 * Deletes a site's objects (site.json first). Renders already started from it may fail;
 * finished outputs are kept. Returns how many objects were deleted; throws
 * {@linkcode StackError} (`siteId`) when the site has no object in the bucket.
 *
 * @example
 * ```ts no_run
 * import { removeSite } from "@vid/cli";
 *
 * const deleted = await removeSite("site-0123456789abcdef", "vid-renders-123");
 * ```
 */
export async function removeSite(
  siteId: string,
  bucketName: string,
  options: SiteOptions = {},
): Promise<number> {
  checkSiteId(siteId);
  const prefix = `sites/${siteId}/`;
  return await withS3(options.s3, async (client) => {
    try {
      const keys = (await listKeys(client, bucketName, prefix)).map((k) => k.key);
      if (keys.length === 0) throw notFound(siteId, bucketName);
      const manifest = `${prefix}site.json`;
      const ordered = [
        ...keys.filter((k) => k === manifest),
        ...keys.filter((k) => k !== manifest),
      ];
      for (let i = 0; i < ordered.length; i += 1000) {
        const batch = ordered.slice(i, i + 1000);
        const result = await client.send(
          new DeleteObjectsCommand({
            Bucket: bucketName,
            Delete: { Objects: batch.map((Key) => ({ Key })), Quiet: true },
          }),
        );
        const failed = result.Errors ?? [];
        if (failed.length > 0) {
          throw new StackError(
            "siteId",
            `could not delete ${failed.length} object(s) of site ${siteId} (first: ` +
              `${failed[0].Key}: ${failed[0].Message}); run \`vid lambda sites rm\` again`,
          );
        }
      }
      return keys.length;
    } catch (error) {
      throw explainStackError(error, { bucketName, region: regionOf(options.s3) });
    }
  });
}
