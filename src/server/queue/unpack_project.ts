/**
 * A render's project on the worker's disk: the asset's zip read from storage and unpacked,
 * checked again on the way (`zip_check.ts`), into the render's work folder. Shared by every
 * way a worker renders (the local backend, a chunk of a spread render, the Lambda backend's
 * site upload), so none of them imports another for it.
 *
 * @module
 */

import { join } from "node:path";
import { grantToProcessUser } from "../../render/process_runner.ts";
import type { ServerContext } from "../context.ts";
import { extractProjectZip } from "../http/zip_check.ts";
import { StorageError } from "../storage/storage.ts";
import type { RenderJob } from "./render_backend.ts";

/**
 * Reads a render's project zip from storage and unpacks it into `dir/project`.
 *
 * @returns The project folder.
 */
export async function unpackProject(
  ctx: ServerContext,
  job: RenderJob,
  dir: string,
): Promise<string> {
  const zip = await ctx.storage.get(`assets/${job.assetId}/project.zip`);
  if (!zip) {
    throw new StorageError(
      `the project of asset ${job.assetId} is missing from storage`,
      `assets/${job.assetId}/project.zip`,
    );
  }
  const bytes = new Uint8Array(await new Response(zip.body).arrayBuffer());
  const project = join(dir, "project");
  await extractProjectZip(bytes, project, { composition: job.request.composition });
  // Extracted into a private (0700) folder; its files and subfolders are 0644 and 0755.
  await grantToProcessUser(project);
  return project;
}
