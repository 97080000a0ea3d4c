/**
 * The project's files as `vid preview` serves them: a composition's HTML as a stage page
 * (the vid runtime injected with the variables and frame rate the studio asks for, so the
 * stage seeks exactly as capture does), anything else from the project's own file server.
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { hyperframesFonts, runtimeFontFaces } from "../composition/fonts.ts";
import { looksLikeHyperframes } from "../composition/font_aliases.ts";
import { applyingTextRule } from "../composition/text_rendering.ts";
import type { Variables } from "../composition/declarations.ts";
import { StrictVariablesError } from "../composition/errors.ts";
import { checkOverrides, mergeVariables } from "../composition/variables.ts";
import {
  frameCountOf,
  type FrameRate,
  frameRateValue,
  parseFrameRate,
} from "../composition/frame_rate.ts";
import type { ProjectServer } from "../render/serve.ts";
import { injectRuntime, RUNTIME_LOADER_PATH } from "./inject.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { NO_STORE, originOf, type PreviewContext, rateOf, readEntry } from "./context.ts";

/** The stage's `fps` query parameter (the rate's value, as the client got it), parsed once. */
function fpsParam(raw: string | null, fallback: FrameRate): FrameRate {
  try {
    return raw !== null ? parseFrameRate(raw) : fallback;
  } catch {
    return fallback;
  }
}

/**
 * A composition's page for the stage (`GET /<entry>.html`): the runtime injected with the
 * variables of its `vars` query parameter (JSON) at the frame rate of `fps`, the video
 * proxies prepared so far, and what `<vid-player>` reads of the composition.
 */
export async function stageHtml(
  ctx: PreviewContext,
  request: Request,
  url: URL,
  entry: string,
): Promise<Response> {
  const html = await readFile(join(ctx.projectDir, entry), "utf8");
  let values: Variables = {};
  const raw = url.searchParams.get("vars");
  if (raw !== null) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (isPlainObject(parsed)) values = parsed;
    } catch {
      return new Response(`vars: not a JSON object of variable values`, { status: 400 });
    }
  }
  // A composition mid-edit may not parse; its page still loads with the values given.
  const current = await readEntry(ctx, entry).catch(() => undefined);
  const declarations = current?.declarations ?? [];
  const pageRate = fpsParam(url.searchParams.get("fps"), rateOf(ctx, current));
  const marks: Record<string, string> = { "vid-proxies": String(ctx.videos?.version ?? 0) };
  if (current) {
    // What `<vid-player>` reads through its page bridge (src/runtime/player_bridge.ts):
    // the composition as vid reads it, and a bad value in the words of --strict-variables.
    marks["vid-composition"] = JSON.stringify({
      id: current.id,
      width: current.width,
      height: current.height,
      duration: current.duration,
      fps: frameRateValue(pageRate),
      frames: frameCountOf(current.duration, pageRate),
    });
    const problems = checkOverrides(declarations, values, { projectDir: ctx.projectDir });
    if (problems.length > 0) marks["vid-problem"] = new StrictVariablesError(problems).message;
  }
  const page = injectRuntime(
    html,
    {
      variables: mergeVariables(declarations, values),
      seed: 1,
      epochMs: ctx.epochMs,
      fps: frameRateValue(pageRate),
      frameRate: pageRate,
      readyTimeoutMs: 30000,
      // The same frame-exact stand-ins a render uses, as far as they are prepared: the
      // studio reports the page's videos and reloads it when this set was behind.
      videoProxies: ctx.videos?.config(originOf(request)),
      // The faces a render embeds for HyperFrames' fonts, so the stage draws the same glyphs
      // (a composition mid-edit that cannot be read for them still loads, with the render's
      // warning to come).
      fonts: await runtimeFontFaces(
        (await hyperframesFonts(join(ctx.projectDir, entry), ctx.projectDir).catch(() => ({
          faces: [],
        }))).faces,
      ),
      // HyperFrames' text rule, as a render of the project decides it
      // (src/composition/text_rendering.ts).
      ...(applyingTextRule() && looksLikeHyperframes([html]) && { hyperframesTextRendering: true }),
    },
    marks,
    RUNTIME_LOADER_PATH,
  );
  return new Response(page, {
    headers: { "content-type": "text/html; charset=utf-8", ...NO_STORE },
  });
}

/** Any other file of the project, from the project's file server (ranges passed on). */
export async function proxy(project: ProjectServer, request: Request, url: URL): Promise<Response> {
  const headers = new Headers();
  const range = request.headers.get("range");
  if (range) headers.set("range", range);
  const answer = await fetch(project.url + url.pathname.slice(1) + url.search, {
    method: request.method === "HEAD" ? "HEAD" : "GET",
    headers,
  });
  const out = new Headers();
  for (const name of ["content-type", "content-length", "content-range", "accept-ranges"]) {
    const value = answer.headers.get(name);
    if (value !== null) out.set(name, value);
  }
  out.set("cache-control", "no-store");
  return new Response(answer.body, { status: answer.status, headers: out });
}
