/**
 * The body of `POST /v3/vid/renders`, checked: every render option with the declarations
 * of `src/request/` (a bad value is the same `RenderOptionError` the SDK and the CLI give,
 * named by its API field, and the app answers it as a 400), plus what only the hosted API
 * has: the source (`asset_id` or `url`) and the callback.
 *
 * @module
 */

import type { AspectRatio } from "../../composition/composition.ts";
import type { FrameRate } from "../../composition/frame_rate.ts";
import { parseFrameRate } from "../../composition/frame_rate.ts";
import type { OutputFormat, Quality } from "../../render/encode.ts";
import { checkApiField, OPTIONS, type Resolution } from "../../request/options.ts";
import { checkResolutionFormat } from "../../request/rules.ts";
import { MAX_COMPOSITION_LENGTH } from "../context.ts";
import { invalid } from "./errors.ts";
import {
  CallbackUrlError,
  checkCallbackTarget,
  checkCallbackUrl,
} from "../../webhooks/webhooks.ts";

/** A checked render request, defaults applied. */
export interface RenderRequest {
  /** The rate given, when one is; else the composition's data-fps, else 30, at submit. */
  rate?: FrameRate;
  quality: Quality;
  format: OutputFormat;
  resolution: Resolution;
  aspectRatio: AspectRatio;
  composition: string;
  variables: Record<string, unknown>;
  strict: boolean;
  /** Integrated loudness of the soundtrack, LUFS; undefined leaves the mix as it is. */
  loudness?: number;
  callbackUrl: string | null;
  callbackId: string | null;
  /** The render source: an asset of the caller's, or a URL to fetch into a new one. */
  source: { assetId: string } | { url: string };
}

/** What the callback check may reach (`vid server` flags). */
export interface CallbackPolicy {
  /** Plain http to a loopback receiver (`--allow-http-callbacks`). */
  allowHttpCallbacks: boolean;
  /** Private addresses (`--allow-private-urls`). */
  allowPrivateUrls: boolean;
}

/**
 * Checks a render body; throws `RenderOptionError` (a bad option, named by its API field)
 * or an `ApiError` 400.
 */
export async function checkRenderRequest(
  body: Record<string, unknown>,
  policy: CallbackPolicy,
): Promise<RenderRequest> {
  // 30, 29.97 (= 30000/1001) or "30000/1001"; the record keeps the rate's value num/den.
  const fps = checkApiField(OPTIONS.fps, body);
  const rate = fps === undefined ? undefined : parseFrameRate(fps);
  const quality = checkApiField(OPTIONS.quality, body) ?? OPTIONS.quality.default!;
  const format = checkApiField(OPTIONS.videoFormat, body) ?? OPTIONS.videoFormat.default!;
  const resolution = checkApiField(OPTIONS.resolution, body) ?? OPTIONS.resolution.default!;
  const aspectRatio = checkApiField(OPTIONS.aspectRatio, body) ?? OPTIONS.aspectRatio.default!;
  checkResolutionFormat(resolution, format);
  const composition = body.composition ?? OPTIONS.composition.default;
  if (typeof composition !== "string") throw invalid("composition", "must be a string");
  if (composition.length > MAX_COMPOSITION_LENGTH) {
    throw invalid("composition", `must be at most ${MAX_COMPOSITION_LENGTH} characters`);
  }
  const variables = checkApiField(OPTIONS.variableOverrides, body) ?? {};
  const strict = checkApiField(OPTIONS.strictVariables, body) ?? false;
  const callbackId = checkApiField(OPTIONS.callbackId, body) ?? null;
  const loudness = checkApiField(OPTIONS.loudness, body);
  return {
    rate,
    quality,
    format,
    resolution,
    aspectRatio,
    composition,
    variables,
    strict,
    ...(loudness !== undefined ? { loudness } : {}),
    callbackUrl: await checkedCallbackUrl(body.callback_url, policy),
    callbackId,
    source: renderSource(body),
  };
}

/** The callback URL, checked against the server's policy (and its DNS answer). */
async function checkedCallbackUrl(
  value: unknown,
  policy: CallbackPolicy,
): Promise<string | null> {
  if (value === undefined || value === null) return null;
  try {
    const checked = checkCallbackUrl(String(value), {
      allowHttpLoopback: policy.allowHttpCallbacks,
    });
    await checkCallbackTarget(checked, {
      allowPrivate: policy.allowPrivateUrls,
      allowLoopback: policy.allowHttpCallbacks,
    });
    return checked.href;
  } catch (error) {
    if (error instanceof CallbackUrlError) throw invalid("callback_url", error.message);
    throw error;
  }
}

/** `asset_id` or `url`, exactly one. */
function renderSource(body: Record<string, unknown>): RenderRequest["source"] {
  if (body.url !== undefined && body.asset_id !== undefined) {
    throw invalid("url", "give asset_id or url, not both");
  }
  if (body.url === undefined && typeof body.asset_id !== "string") {
    throw invalid("asset_id", "is required (or give url)");
  }
  if (body.url !== undefined && typeof body.url !== "string") {
    throw invalid("url", "must be an http(s) URL of a zip or an HTML file");
  }
  return body.url !== undefined
    ? { url: body.url as string }
    : { assetId: body.asset_id as string };
}
