/**
 * Sites in the render bucket: {@linkcode deploySite} uploads a project once under its
 * content address and {@linkcode siteHandleFromId} names one uploaded earlier without a
 * request; {@linkcode loadSite} checks that a site id names an
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
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { type PackagedFile, packageProject } from "../project/package.ts";
import { ConfigError, type RenderConfig } from "./config.ts";
import type { FrameRate } from "../composition/frame_rate.ts";
import { pool } from "../util/async.ts";
import { contentTypeOf } from "../util/mime.ts";
import type { VariableDeclaration } from "../composition/declarations.ts";
import { parseComposition } from "../composition/composition.ts";
import {
  clientLocation,
  defaultRegion,
  objectUrlFor as serveUrlFor,
  s3ClientFor,
  type S3Options,
  s3OptionsFromEnv,
} from "../aws/clients.ts";
import { explainStackError, StackError } from "./stack_error.ts";
import { allowPlayerReads } from "./site_cors.ts";
import { OPTIONS } from "../request/options.ts";

/**
 * A ready `S3Client` of `@aws-sdk/client-s3`, kept by the caller; an internal alias (see
 * `ReadyS3Client` in sdk.ts).
 *
 * @internal
 */
type ReadyS3Client = S3Client;

/** An uploaded site: what a render needs to find the project in the bucket. */
export interface SiteHandle {
  /** Content-addressed identifier: `site-` and 16 hex digits of the project zip's SHA-256. */
  siteId: string;
  /** Bucket holding the site. */
  bucketName: string;
  /** Key prefix of the site's files: `sites/<siteId>/`. */
  prefix: string;
  /** Absolute URL of the site's root, ending in `/`. */
  serveUrl: string;
  /** Entry HTML file inside the site. */
  composition: string;
  /** Files of the site, sorted by path; empty for a handle from {@linkcode siteHandleFromId}. */
  files: PackagedFile[];
  /** Whether this call uploaded anything (false when the site already existed). */
  uploaded: boolean;
  /**
   * Variables the composition declares, when known (from {@linkcode deploySite} or
   * `loadSite`; not from {@linkcode siteHandleFromId}): `renderToLambda` checks
   * `config.variables` against them.
   */
  declarations?: VariableDeclaration[];
  /**
   * The composition's `data-fps`, when it pins a rate and the handle knows it (from
   * {@linkcode deploySite} or `loadSite`): a render whose `config.fps` is unset renders at it.
   */
  fps?: FrameRate;
  /**
   * Set by {@linkcode deploySite} when it could not give the bucket the CORS rule
   * `<vid-player>` needs to read the site from a web page (`site_cors.ts`): why. Renders do
   * not need the rule.
   */
  playerCors?: string;
}

/**
 * `config` with the site composition's `data-fps` filled in where the caller gave no `fps`:
 * the distributed path honours `data-fps` as `vid render` does (an explicit `fps` wins).
 */
export function withSiteFrameRate(config: RenderConfig, site: SiteHandle): RenderConfig {
  if (config.fps !== undefined || site.fps === undefined) return config;
  const { num, den } = site.fps;
  return { ...config, fps: den === 1 ? num : `${num}/${den}` };
}

/** The manifest stored as `sites/<siteId>/site.json`. */
export interface SiteManifest {
  /** Content-addressed identifier of the site (`site-` and 16 hex digits). */
  siteId: string;
  /** Hex SHA-256 of the deterministic project zip. */
  sha256: string;
  /** Entry HTML file inside the site. */
  composition: string;
  /** Every file and its size in bytes. */
  files: PackagedFile[];
  /** Sum of the file sizes. */
  totalBytes: number;
  /** ISO 8601 time of the upload. */
  created: string;
}

/** Options of {@linkcode deploySite}. */
export interface DeploySiteOptions {
  /** The project directory to package. */
  projectDir: string;
  /** Bucket to upload to (the stack output `RenderBucketName`). */
  bucketName: string;
  /** Composition entry relative to `projectDir`. @default "index.html" */
  composition?: string;
  /** S3 connection options, or a ready client (which the caller keeps and destroys). */
  s3?: S3Options | ReadyS3Client;
  /** Files uploaded at once. @default 8 */
  uploadConcurrency?: number;
  /**
   * Files never uploaded, absolute or relative to the working directory: the batch file,
   * the manifest and outputs named on the command line, which would otherwise change the
   * site id (see `PackageProjectOptions.exclude`).
   */
  exclude?: readonly string[];
}

/** Options of {@linkcode siteHandleFromId}. */
export interface SiteHandleOptions {
  /** Entry HTML file inside the site. @default "index.html" */
  composition?: string;
  /** S3 connection options, used to build `serveUrl`. */
  s3?: S3Options;
}

/** Whether an S3 error means the object (or its key) does not exist. */
export function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === "NotFound" || e?.name === "NoSuchKey" ||
    e?.$metadata?.httpStatusCode === 404;
}

/**
 * Packages a project (see `packageProject`: deterministic zip, upload rules) and uploads
 * each included file to `sites/<siteId>/<path>`, then `sites/<siteId>/site.json`. The
 * site id is the zip's content address, so when `site.json` already exists for it the
 * whole upload is skipped (`uploaded: false`): the same tree is never uploaded twice, and
 * any change gives a new site id.
 *
 * @example
 * ```ts no_run
 * import { deploySite } from "@vid/cli";
 *
 * const site = await deploySite({ projectDir: "examples/hello", bucketName: "vid-renders-123" });
 * console.log(site.siteId, site.uploaded ? "uploaded" : "already there");
 * ```
 *
 * @param options Project, bucket, entry and S3 connection.
 * @returns The site handle to pass to `renderToLambda`.
 */
export async function deploySite(options: DeploySiteOptions): Promise<SiteHandle> {
  const pkg = await packageProject(options.projectDir, {
    composition: options.composition,
    exclude: options.exclude,
    keepContents: true,
  });
  const ownClient = !(options.s3 instanceof S3Client);
  const client = options.s3 instanceof S3Client ? options.s3 : s3ClientFor(options.s3);
  try {
    const location = options.s3 instanceof S3Client
      ? await clientLocation(options.s3)
      // The environment's endpoint when no options are given, as the client itself reads it.
      : { region: defaultRegion(), ...(options.s3 ?? s3OptionsFromEnv()) };
    const prefix = `sites/${pkg.siteId}/`;
    const handle: SiteHandle = {
      siteId: pkg.siteId,
      bucketName: options.bucketName,
      prefix,
      serveUrl: serveUrlFor(options.bucketName, prefix, location),
      composition: pkg.entry,
      files: pkg.files,
      uploaded: false,
    };
    // The files as packaged (the zip's bytes are only hashed here: the site is uploaded file
    // by file, so each is served with its own content type).
    const contents = pkg.contents!;
    try {
      const html = new TextDecoder().decode(contents[pkg.entry]);
      const parsed = parseComposition(html, pkg.entry);
      handle.declarations = parsed.declarations;
      if (parsed.fps) handle.fps = parsed.fps;
    } catch {
      // not a composition the parser accepts: the render reports it; nothing to check here
    }
    const manifestKey = `${prefix}site.json`;
    try {
      await client.send(new HeadObjectCommand({ Bucket: options.bucketName, Key: manifestKey }));
      return await withPlayerCors(client, handle);
    } catch (error) {
      // HeadObject answers a missing bucket with a bare 404, like a missing key.
      if (!isNotFound(error)) {
        throw explainStackError(error, {
          bucketName: options.bucketName,
          region: location.region,
        });
      }
    }
    try {
      await uploadSite(client, options, pkg, contents, prefix, manifestKey);
    } catch (error) {
      throw explainStackError(error, { bucketName: options.bucketName, region: location.region });
    }
    return await withPlayerCors(client, { ...handle, uploaded: true });
  } finally {
    if (ownClient) client.destroy();
  }
}

/**
 * `handle` once its bucket lets web pages read it for `<vid-player>` (`site_cors.ts`), or
 * with `playerCors` saying why it could not: a site renders without the rule.
 */
async function withPlayerCors(client: S3Client, handle: SiteHandle): Promise<SiteHandle> {
  try {
    await allowPlayerReads(client, handle.bucketName);
    return handle;
  } catch (error) {
    const reason = (error as Error).message || (error as Error).name;
    return {
      ...handle,
      playerCors: `could not let web pages read bucket ${handle.bucketName} for <vid-player> ` +
        `(s3:GetBucketCORS and s3:PutBucketCORS): ${reason}`,
    };
  }
}

/** Uploads every file of the package, then site.json. */
async function uploadSite(
  client: S3Client,
  options: DeploySiteOptions,
  pkg: Awaited<ReturnType<typeof packageProject>>,
  contents: Record<string, Uint8Array>,
  prefix: string,
  manifestKey: string,
): Promise<void> {
  await pool(pkg.files, Math.max(1, options.uploadConcurrency ?? 8), async (file) => {
    await client.send(
      new PutObjectCommand({
        Bucket: options.bucketName,
        Key: prefix + file.path,
        Body: contents[file.path],
        ContentType: contentTypeOf(file.path),
      }),
    );
  });
  const manifest: SiteManifest = {
    siteId: pkg.siteId,
    sha256: pkg.sha256,
    composition: pkg.entry,
    files: pkg.files,
    totalBytes: pkg.uncompressedBytes,
    created: new Date().toISOString(),
  };
  await client.send(
    new PutObjectCommand({
      Bucket: options.bucketName,
      Key: manifestKey,
      Body: JSON.stringify(manifest, null, 2),
      ContentType: "application/json",
    }),
  );
}

/**
 * A minimal handle of a site uploaded earlier (`--site-id`), without packaging or any
 * request. `files` is empty and `uploaded` false.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { siteHandleFromId } from "./sites.ts";
 *
 * const site = siteHandleFromId("site-0123456789abcdef", "vid-renders-123", {
 *   s3: { region: "eu-west-1" },
 * });
 * assert.equal(
 *   site.serveUrl,
 *   "https://vid-renders-123.s3.eu-west-1.amazonaws.com/sites/site-0123456789abcdef/",
 * );
 * ```
 */
export function siteHandleFromId(
  siteId: string,
  bucketName: string,
  options: SiteHandleOptions = {},
): SiteHandle {
  if (!/^[A-Za-z0-9_-]+$/.test(siteId)) {
    throw new ConfigError("siteId", `must be a site id such as site-0123456789abcdef`);
  }
  const prefix = `sites/${siteId}/`;
  return {
    siteId,
    bucketName,
    prefix,
    serveUrl: serveUrlFor(bucketName, prefix, { region: defaultRegion(), ...options.s3 }),
    composition: options.composition ?? OPTIONS.composition.default!,
    files: [],
    uploaded: false,
  };
}

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
 * import { renderToLambda } from "@vid/cli";
 * import { loadSite } from "./sites.ts";
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
      // The environment's endpoint when no options are given, as the client itself reads it.
      : { region: defaultRegion(), ...(options.s3 ?? s3OptionsFromEnv()) };
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
 * import { listSites } from "./sites.ts";
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
 * import { removeSite } from "./sites.ts";
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
