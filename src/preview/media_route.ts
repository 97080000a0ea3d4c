/**
 * `POST /__preview/media`: a stage page reports its videos (`__vid.media()`), and the
 * preview server prepares their frame-exact proxies (`video_proxies.ts`), answering the
 * version the page must be loaded with to use them.
 *
 * @module
 */

import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { errorBody, json, originOf, type PreviewContext, readObject } from "./context.ts";

/** `POST /__preview/media`: prepares the proxies of a stage page's videos. */
export async function prepareMedia(ctx: PreviewContext, request: Request): Promise<Response> {
  const body = await readObject(request);
  const media = body?.media;
  if (
    !Array.isArray(media) ||
    !media.every((m) => isPlainObject(m) && typeof m.src === "string")
  ) {
    return json(errorBody(new Error('send {"media": __vid.media()}')), 400);
  }
  try {
    const version = await ctx.videos!.prepare(media as MediaDescriptor[], originOf(request));
    return json({ ok: true, version });
  } catch (error) {
    ctx.log(`video preparation failed: ${(error as Error).message}`);
    return json(errorBody(error), 422);
  }
}
