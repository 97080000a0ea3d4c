/**
 * The manifest of the deployable worker artifact, `vid-artifact.json` at its root: written
 * by `scripts/build_worker.ts`, read by the Pulumi program (which names the uploaded code
 * object after its content hash, so a new build means a new object and a code update) and
 * by the tests.
 *
 * Node built-ins only: read under Deno (build script, tests) and under Node (Pulumi, tsx).
 *
 * @module
 */

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { EXIT_FAILED, VidError } from "../src/errors.ts";

/** File name of the manifest at the artifact root. */
export const ARTIFACT_MANIFEST = "vid-artifact.json";

/** Lambda's limit on the unzipped size of a function's code plus its layers, in bytes. */
export const LAMBDA_UNZIPPED_LIMIT_BYTES = 262_144_000;

/** What `vid-artifact.json` says of the artifact. */
export interface ArtifactManifest {
  /** Manifest format version. */
  format: 1;
  /** Lowercase hex SHA-256 over every file's path, mode and content (the manifest excluded). */
  sha256: string;
  /** Sum of the files' sizes: the function's unzipped code size. */
  bytes: number;
  /** Number of files. */
  files: number;
  /** Lambda's unzipped limit the size was checked against. */
  limitBytes: number;
  /** Handler inside the artifact. */
  handler: string;
  /** Lambda runtime the bundle targets. */
  runtime: string;
  /** Versions of the packaged runtime packages, by npm name. */
  packages: Record<string, string>;
}

/** The manifest is missing or not one `build_worker.ts` wrote. */
export class ArtifactManifestError extends VidError {
  override name = "ArtifactManifestError";
  /** The folder that was read. */
  override readonly field: string;

  constructor(message: string, dir: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, field: dir, cause: options?.cause });
    this.field = dir;
  }
}

/**
 * Reads `vid-artifact.json` in `dir` (synchronously: the Pulumi program needs it while it
 * declares its resources).
 *
 * @example
 * ```ts
 * const manifest = readArtifactManifest("dist/worker");
 * console.log(manifest.sha256, manifest.bytes);
 * ```
 */
export function readArtifactManifest(dir: string): ArtifactManifest {
  const path = join(dir, ARTIFACT_MANIFEST);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new ArtifactManifestError(
      `${path} not found: ${dir} is not a packaged worker; build it with ` +
        "`deno task build:worker` (at the repository root) before deploying",
      dir,
      { cause: error },
    );
  }
  let value: Partial<ArtifactManifest> = {};
  try {
    value = JSON.parse(text) ?? {};
  } catch {
    // reported below, as any other manifest this module did not write
  }
  if (
    value.format !== 1 || typeof value.sha256 !== "string" ||
    !/^[0-9a-f]{64}$/.test(value.sha256) ||
    typeof value.bytes !== "number" || typeof value.handler !== "string"
  ) {
    throw new ArtifactManifestError(
      `${path} is not a manifest written by scripts/build_worker.ts; rebuild with ` +
        "`deno task build:worker`",
      dir,
    );
  }
  return value as ArtifactManifest;
}
