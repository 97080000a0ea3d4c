/**
 * The studio's renders over HTTP: `POST /__preview/render` checks the values and starts one
 * render (`render_job.ts` runs it), `GET /__preview/renders/<file>` downloads a finished
 * one (a PNG sequence's frames as `<folder>/<frame>.png`).
 *
 * @module
 */

import { stat } from "node:fs/promises";
import { basename, extname, join } from "node:path";
import { checkOverrides } from "../composition/variables.ts";
import { frameCountOf, frameRateValue } from "../composition/frame_rate.ts";
import { RENDER_EXTENSIONS, RenderBusyError, renderRequestFrom } from "./render_job.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { VidError } from "../errors.ts";
import {
  entryOf,
  errorBody,
  json,
  NO_STORE,
  type PreviewContext,
  PreviewEntryError,
  rateOf,
  readEntry,
  readObject,
} from "./context.ts";

/** `POST /__preview/render`: checks the values, then starts one render. */
export async function startRender(ctx: PreviewContext, request: Request): Promise<Response> {
  const body = await readObject(request);
  if (!body || !isPlainObject(body.values)) {
    return json(errorBody(new Error('send {"values": {…}}')), 400);
  }
  try {
    const entry = entryOf(ctx, body.entry as string | undefined);
    const c = await readEntry(ctx, entry);
    const problems = checkOverrides(c.declarations, body.values, { projectDir: ctx.projectDir });
    if (problems.length > 0) {
      return json({
        ok: false,
        error: {
          name: "StrictVariablesError",
          message: `fix the marked values before rendering: ${
            problems.map((p) => p.message).join("; ")
          }`,
          field: problems[0].key,
          problems,
        },
      }, 400);
    }
    const status = ctx.jobs.start(renderRequestFrom(body, {
      values: body.values,
      fps: frameRateValue(rateOf(ctx, c)),
      compositionId: c.id,
      composition: entry === ctx.defaultEntry ? undefined : entry,
      frames: frameCountOf(c.duration, rateOf(ctx, c)),
      duration: c.duration,
    }));
    ctx.log(`rendering ${c.id} into ${ctx.rendersDir}`);
    return json({ ok: true, status }, 202);
  } catch (error) {
    const status = error instanceof RenderBusyError ? 409 : error instanceof PreviewEntryError ||
        (error instanceof VidError && error.field !== undefined)
      ? 400
      : 422;
    return json(errorBody(error), status);
  }
}

/** `GET /__preview/renders/<name>`: a finished render, for download. */
export async function download(rendersDir: string, name: string): Promise<Response> {
  const file = join(rendersDir, name);
  const type = RENDER_EXTENSIONS[extname(name).slice(1)];
  // A render is a file in the folder, or a frame of a PNG sequence's folder (`clip/00000.png`).
  const parts = name.split("/");
  const safe = parts.length <= 2 && parts.every((p) => p !== "" && !p.startsWith(".")) &&
    (parts.length === 1 || extname(name) === ".png") && !name.includes("\\");
  if (!safe || type === undefined) {
    return json(errorBody(new Error(`not a render: ${name}`)), 404);
  }
  const info = await stat(file).catch(() => undefined);
  if (!info?.isFile()) return json(errorBody(new Error(`no such render: ${name}`)), 404);
  const data = await Deno.open(file, { read: true });
  return new Response(data.readable, {
    headers: {
      "content-type": type,
      "content-length": String(info.size),
      "content-disposition": `attachment; filename="${basename(name)}"`,
      ...NO_STORE,
    },
  });
}
