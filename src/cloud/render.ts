/**
 * `vid cloud render`: resolve the project, detect its aspect ratio, zip it, upload it
 * straight to storage, submit, poll and download; or render an uploaded asset
 * (`assetId`) or a `url` without uploading. Every flag is checked before any network call.
 *
 * Idempotency: the same key (the user's `--idempotency-key`, or one generated for this
 * invocation) is sent to both the upload and the submit, so retries inside one run never
 * create a second asset or bill twice. A re-run without `--idempotency-key` uses a new key.
 *
 * @module
 */

import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { type AspectRatio, aspectRatioOf, readComposition } from "../composition/composition.ts";
import type { Variables } from "../composition/declarations.ts";
import { StrictVariablesError, type VariableProblem } from "../composition/errors.ts";
import { checkOverrides, loadOverrides } from "../composition/variables.ts";
import { formatOfPath, OUTPUT_FORMATS, type OutputFormat, type Quality } from "../render/encode.ts";
import { VidError } from "../errors.ts";
import {
  ASPECT_RATIOS,
  checkOption,
  flagOf,
  type OptionDeclaration,
  OPTIONS,
  type Resolution,
  RESOLUTIONS,
} from "../request/options.ts";
import { RenderOptionError } from "../request/errors.ts";
import { checkResolutionFormat } from "../request/rules.ts";
import {
  HOSTED_UPLOAD_LIMIT_BYTES,
  type PackagedFile,
  packageProject,
} from "../project/package.ts";
import { CloudApiError, type CloudClient } from "./client.ts";
import { sleep } from "../util/async.ts";

/** Upload limit of the hosted service: a project zip of at most 200 MB (one figure). */
export const CLOUD_MAX_UPLOAD_BYTES: number = HOSTED_UPLOAD_LIMIT_BYTES;
// The accepted resolutions and aspect ratios are declared with the render request.
export { ASPECT_RATIOS, RESOLUTIONS };

/**
 * An option of a hosted render is wrong; names it (`field`: the SDK option, `flag`: the
 * flag of `vid cloud render`). Raised before any network call.
 */
export class CloudRenderError extends VidError {
  /** Always `"CloudRenderError"`. */
  override name = "CloudRenderError";
  /** The option at fault, e.g. `resolution`. */
  declare readonly field: string;
  /**
   * Creates the error for one option.
   *
   * @param field The SDK option at fault.
   * @param detail What is wrong; the message is `<field>: <detail>`.
   * @param flag The flag of the option.
   */
  constructor(field: string, detail: string, flag?: string) {
    super(`${field}: ${detail}`, { field, flag, detail, exitCode: 2 });
  }
}

/** A declared option's check, with its error as a {@linkcode CloudRenderError}. */
function checked<T>(declaration: OptionDeclaration<string, T>, value: unknown): T | undefined {
  try {
    return checkOption(declaration, value);
  } catch (error) {
    if (!(error instanceof RenderOptionError)) throw error;
    throw new CloudRenderError(error.field, error.detail, error.flag);
  }
}

/** A {@linkcode CloudRenderError} for the option `declaration` declares. */
function optionError(declaration: OptionDeclaration<string, unknown>, detail: string) {
  return new CloudRenderError(declaration.key, detail, flagOf(declaration));
}

/** Options of {@linkcode cloudRender}; the CLI flags of `vid cloud render`. */
export interface CloudRenderOptions {
  /** Project directory. @default "." */
  target?: string;
  /** Entry HTML file. @default "index.html" */
  composition?: string;
  /**
   * Frames per second, 1-240: 30, 29.97 (= 30000/1001) or "30000/1001".
   * @default the composition's data-fps, else 30 (decided by the server)
   */
  fps?: number | string;
  /** Encoding quality. @default "standard" */
  quality?: Quality;
  /**
   * Integrated loudness of the soundtrack, LUFS (-70 to -5), by two-pass EBU R128
   * `loudnorm`. @default the mix as it is
   */
  loudness?: number;
  /** Container of the video. @default "mp4" */
  format?: OutputFormat;
  /** Output resolution. @default "1080p" */
  resolution?: Resolution;
  /**
   * Aspect ratio of the output frame.
   * @default detected from the composition; "16:9" for assetId/url
   */
  aspectRatio?: AspectRatio;
  /**
   * Where the video is written, renamed into place once complete.
   * @default "renders/<render_id>.<format>"
   */
  output?: string;
  /** Package and check only: report what would be uploaded; no network. */
  dryRun?: boolean;
  /** Render an asset already uploaded (its id) instead of a project folder. */
  assetId?: string;
  /** Render a project zip the server fetches from this URL. */
  url?: string;
  /** Variable overrides, as a JSON object text. */
  variables?: string;
  /** Variable overrides from a JSON file. */
  variablesFile?: string;
  /** Refuse overrides that do not match the declarations (else warn). */
  strictVariables?: boolean;
  /** Return once the render is submitted, without waiting for it. */
  noWait?: boolean;
  /** URL the server POSTs the signed webhook to when the render ends. */
  callbackUrl?: string;
  /** Opaque id echoed in the webhook. */
  callbackId?: string;
  /** Seconds between polls. @default 10 */
  pollInterval?: number;
  /** Minutes to wait for the render. @default 60 */
  maxWait?: number;
  /** Key that makes a retried submission start the render once. */
  idempotencyKey?: string;
  /** Receives warnings. @default dropped */
  onWarning?: (message: string) => void;
  /** Told about each step ("packaging", "uploading", "submitted", "rendering" …). */
  onStage?: (stage: string, detail?: Record<string, unknown>) => void;
  /** Stops waiting (and the upload); the render already submitted goes on. */
  signal?: AbortSignal;
}

/** What `--dry-run` reports. */
export interface DryRunReport {
  /** Marks a dry run. */
  dryRun: true;
  /** The project folder packaged. */
  projectDir: string;
  /** The entry HTML file. */
  composition: string;
  /** The aspect ratio the render would use. */
  aspectRatio: AspectRatio;
  /** Size of the zip, bytes. */
  compressedBytes: number;
  /** Size of the files in it, bytes. */
  uncompressedBytes: number;
  /** Files in the zip. */
  fileCount: number;
  /** The largest files, largest first. */
  largest: PackagedFile[];
  /** Content address of the project. */
  siteId: string;
  /** SHA-256 of the zip, hex. */
  sha256: string;
  /** Warnings about the project. */
  warnings: string[];
}

/** The render record the API returns. */
export interface CloudRenderRecord {
  /** Id of the render. */
  render_id: string;
  /** Id of the uploaded project. */
  asset_id: string | null;
  /** Where the render is. */
  status: "queued" | "rendering" | "completed" | "failed" | "deleted";
  /** Fraction done, 0-1. */
  progress: number;
  /** Why it failed. */
  error: string | null;
  /** Signed download URL of the video, once completed. */
  video_url: string | null;
  /** Signed URL of the thumbnail, once completed. */
  thumbnail_url: string | null;
  /** Other fields of the API's render object. */
  [field: string]: unknown;
}

/** What {@linkcode cloudRender} did. */
export type CloudRenderResult =
  | DryRunReport
  | {
    dryRun: false;
    renderId: string;
    assetId: string | null;
    status: "queued";
    uploadedBytes: number;
  }
  | {
    dryRun: false;
    renderId: string;
    assetId: string | null;
    status: "completed";
    output: string;
    uploadedBytes: number;
    render: CloudRenderRecord;
  };

/**
 * The format of a hosted render: `--format`, else the one the `--output` extension names (as
 * `vid render` does), else mp4. The service renders mp4, webm and mov; a `--format` that
 * disagrees with the extension is an error naming both.
 */
function cloudFormat(options: CloudRenderOptions): OutputFormat {
  const format = checked(OPTIONS.videoFormat, options.format);
  const named = options.output === undefined ? undefined : formatOfPath(options.output);
  if (named === undefined) return format ?? OPTIONS.videoFormat.default!;
  if (named === null || !(OUTPUT_FORMATS as readonly string[]).includes(named)) {
    throw optionError(
      OPTIONS.output,
      `the hosted service renders ${OUTPUT_FORMATS.join(", ")}; end ${options.output} with ` +
        `.mp4, .webm or .mov (gif and PNG sequences render locally with vid render)`,
    );
  }
  if (format !== undefined && named !== format) {
    throw optionError(
      OPTIONS.videoFormat,
      `--format ${format} conflicts with the output extension of ${options.output} (${named}); ` +
        `drop --format to render ${named}, or name the output for ${format} (e.g. out.${format})`,
    );
  }
  return named as OutputFormat;
}

/**
 * Checks every flag that can be checked without the network, among them that 4k has no alpha
 * path (webm and mov need native resolution).
 */
export function checkCloudRenderOptions(options: CloudRenderOptions): void {
  for (
    const declaration of [
      OPTIONS.fps,
      OPTIONS.quality,
      OPTIONS.loudness,
      OPTIONS.resolution,
      OPTIONS.aspectRatio,
      OPTIONS.callbackId,
      OPTIONS.idempotencyKey,
      OPTIONS.pollInterval,
      OPTIONS.maxWait,
    ]
  ) {
    checked<unknown>(declaration, options[declaration.key as keyof CloudRenderOptions]);
  }
  const format = cloudFormat(options);
  try {
    checkResolutionFormat(options.resolution ?? OPTIONS.resolution.default!, format);
  } catch (error) {
    if (!(error instanceof RenderOptionError)) throw error;
    throw new CloudRenderError(error.field, error.detail, error.flag);
  }
  if (options.assetId !== undefined && options.url !== undefined) {
    throw new CloudRenderError("assetId", "give --asset-id or --url, not both", "--asset-id");
  }
  if (options.dryRun && (options.assetId !== undefined || options.url !== undefined)) {
    throw new CloudRenderError(
      "dryRun",
      "inspects a local project's zip; drop --asset-id/--url",
      "--dry-run",
    );
  }
  if (options.url !== undefined && !/^https?:\/\//i.test(options.url)) {
    throw new CloudRenderError("url", "must be an http(s) URL of a zip or an HTML file", "--url");
  }
  if (options.callbackUrl !== undefined) {
    let url: URL | undefined;
    try {
      url = new URL(options.callbackUrl);
    } catch {
      // reported below
    }
    // http is only for a loopback receiver of a self-hosted development server (started
    // with --allow-http-callbacks, which decides); anything else must be https.
    const loopback = url?.protocol === "http:" &&
      ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname);
    if (url?.protocol !== "https:" && !loopback) {
      throw new CloudRenderError("callbackUrl", "must be an https:// URL", "--callback-url");
    }
  }
}

/** The spec's aspect ratios only: a composition of another shape gets the nearest. */
function detectAspectRatio(width: number, height: number, warn: (m: string) => void): AspectRatio {
  const exact = aspectRatioOf(width, height);
  if (exact) return exact;
  const nearest: AspectRatio = width > height ? "16:9" : width < height ? "9:16" : "1:1";
  warn(
    `${width}x${height} is not 16:9, 9:16 or 1:1; rendering as ${nearest} (letterboxed). ` +
      `Pass --aspect-ratio to choose.`,
  );
  return nearest;
}

function randomKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return `vid-cli-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** What a hosted render of a local project uploads. */
interface PackagedUpload {
  zip: Uint8Array<ArrayBuffer>;
  sha256: string;
  aspectRatio: AspectRatio;
}

/**
 * Reads and checks the local project (its variables against its declarations) and zips it;
 * a dry run stops here with its report.
 */
async function packageForCloud(
  options: CloudRenderOptions,
  composition: string,
  overrides: Variables,
  warn: (message: string) => void,
  stage: NonNullable<CloudRenderOptions["onStage"]>,
): Promise<DryRunReport | PackagedUpload> {
  const projectDir = resolve(options.target ?? ".");
  const parsed = await readComposition(projectDir, composition);
  const aspectRatio = options.aspectRatio ??
    detectAspectRatio(parsed.width, parsed.height, warn);
  const problems: VariableProblem[] = checkOverrides(parsed.declarations, overrides, {
    projectDir: parsed.projectDir,
  });
  if (options.strictVariables && problems.length > 0) throw new StrictVariablesError(problems);
  for (const problem of problems) warn(problem.message);
  stage("packaging", { projectDir });
  const pkg = await packageProject(projectDir, {
    composition,
    maxBytes: CLOUD_MAX_UPLOAD_BYTES,
    // A previous download to -o inside the project is never uploaded with it.
    exclude: options.output !== undefined ? [options.output] : undefined,
  });
  for (const warning of pkg.warnings ?? []) warn(warning);
  if (options.dryRun) {
    return {
      dryRun: true,
      projectDir,
      composition: pkg.entry,
      aspectRatio,
      compressedBytes: pkg.compressedBytes,
      uncompressedBytes: pkg.uncompressedBytes,
      fileCount: pkg.fileCount,
      largest: pkg.largest,
      siteId: pkg.siteId,
      sha256: pkg.sha256,
      warnings: pkg.warnings ?? [],
    };
  }
  return { zip: new Uint8Array(pkg.zip), sha256: pkg.sha256, aspectRatio };
}

/** Creates the asset of a project zip and uploads it unless storage already has it. */
async function uploadAsset(
  client: CloudClient,
  options: CloudRenderOptions,
  upload: PackagedUpload,
  composition: string,
  key: string,
): Promise<{ assetId: string; uploadedBytes: number }> {
  const { zip, sha256 } = upload;
  options.onStage?.("uploading", { bytes: zip.length, idempotencyKey: key });
  const asset = await client.request<{ asset_id: string; status: string; upload_url?: string }>(
    "POST",
    "/v3/assets",
    {
      body: { size_bytes: zip.length, sha256, composition },
      idempotencyKey: key,
      what: "create the asset",
    },
  );
  if (asset.status === "ready") return { assetId: asset.asset_id, uploadedBytes: 0 };
  if (!asset.upload_url) throw new CloudApiError(500, "vid_internal", "no upload_url given");
  options.signal?.throwIfAborted();
  await client.upload(asset.upload_url, zip, "upload the project zip");
  return { assetId: asset.asset_id, uploadedBytes: zip.length };
}

/** Polls a submitted render until it completed; failed or past `--max-wait` is an error. */
async function waitForRender(
  client: CloudClient,
  options: CloudRenderOptions,
  submitted: CloudRenderRecord,
): Promise<CloudRenderRecord> {
  const renderId = submitted.render_id;
  const maxWait = options.maxWait ?? OPTIONS.maxWait.default!;
  const deadline = Date.now() + maxWait * 60000;
  let render = submitted;
  while (render.status !== "completed") {
    if (render.status === "failed") {
      throw new CloudApiError(0, "render_failed", `render ${renderId} failed: ${render.error}`);
    }
    if (Date.now() > deadline) {
      throw new CloudApiError(
        0,
        "max_wait",
        `render ${renderId} is still ${render.status} after ${maxWait} min; ` +
          `check it later with: vid cloud get ${renderId}`,
      );
    }
    await sleep((options.pollInterval ?? OPTIONS.pollInterval.default!) * 1000, options.signal);
    render = await client.request<CloudRenderRecord>("GET", `/v3/vid/renders/${renderId}`, {
      what: "poll the render",
    });
    options.onStage?.("rendering", { renderId, status: render.status, progress: render.progress });
  }
  return render;
}

/**
 * Runs the cloud render pipeline. `connect` is called only when the network is needed
 * (never for `dryRun`), so a dry run needs no sign-in.
 *
 * @example
 * ```ts no_run
 * import { connectCloud } from "./connect.ts";
 *
 * const result = await cloudRender({ target: "examples/hello" }, () => connectCloud());
 * if (!result.dryRun && result.status === "completed") console.log(result.output);
 * ```
 */
export async function cloudRender(
  options: CloudRenderOptions,
  connect: () => Promise<CloudClient>,
): Promise<CloudRenderResult> {
  checkCloudRenderOptions(options);
  const warn = options.onWarning ?? (() => {});
  const stage = options.onStage ?? (() => {});
  const composition = options.composition ?? OPTIONS.composition.default!;
  const format = cloudFormat(options);
  const overrides: Variables = await loadOverrides({
    variables: options.variables,
    variablesFile: options.variablesFile,
  });
  let aspectRatio = options.aspectRatio ?? "16:9";
  let upload: PackagedUpload | undefined;
  if (options.assetId === undefined && options.url === undefined) {
    const packaged = await packageForCloud(options, composition, overrides, warn, stage);
    if ("dryRun" in packaged) return packaged;
    upload = packaged;
    aspectRatio = packaged.aspectRatio;
  }

  // Cancelled while packaging, signing in, creating the asset or uploading: stop before
  // the next step, and above all before submitting a render that would be billed.
  options.signal?.throwIfAborted();
  const client = await connect();
  const key = options.idempotencyKey ?? randomKey();
  let assetId = options.assetId ?? null;
  let uploadedBytes = 0;
  if (upload) {
    ({ assetId, uploadedBytes } = await uploadAsset(client, options, upload, composition, key));
  }
  options.signal?.throwIfAborted();
  stage("submitting", { assetId });
  const submitted = await client.request<CloudRenderRecord>("POST", "/v3/vid/renders", {
    body: {
      ...(options.url !== undefined ? { url: options.url } : { asset_id: assetId }),
      composition,
      // Without a rate the server takes the composition's data-fps, else 30.
      ...(options.fps !== undefined && { fps: options.fps }),
      quality: options.quality ?? OPTIONS.quality.default,
      format,
      resolution: options.resolution ?? OPTIONS.resolution.default,
      aspect_ratio: aspectRatio,
      variables: overrides,
      strict_variables: options.strictVariables === true,
      ...(options.loudness !== undefined ? { loudness: options.loudness } : {}),
      ...(options.callbackUrl !== undefined ? { callback_url: options.callbackUrl } : {}),
      ...(options.callbackId !== undefined ? { callback_id: options.callbackId } : {}),
    },
    idempotencyKey: key,
    what: "submit the render",
  });
  const renderId = submitted.render_id;
  stage("submitted", { renderId, assetId: submitted.asset_id });
  if (options.noWait) {
    return {
      dryRun: false,
      renderId,
      assetId: submitted.asset_id,
      status: "queued",
      uploadedBytes,
    };
  }
  const render = await waitForRender(client, options, submitted);
  const output = resolve(options.output ?? join("renders", `${renderId}.${format}`));
  stage("downloading", { output });
  await downloadTo(client, render.video_url!, output);
  return {
    dryRun: false,
    renderId,
    assetId: render.asset_id,
    status: "completed",
    output,
    uploadedBytes,
    render,
  };
}

/** Downloads a signed URL to `output` through a temp file (nothing partial is left). */
export async function downloadTo(client: CloudClient, url: string, output: string): Promise<void> {
  const response = await client.download(url, "download the video");
  await mkdir(dirname(output), { recursive: true });
  const partial = join(dirname(output), `.${basename(output)}.partial-${Date.now()}`);
  try {
    await writeFile(partial, new Uint8Array(await response.arrayBuffer()));
    await rename(partial, output);
  } catch (error) {
    await rm(partial, { force: true });
    throw error;
  }
}
