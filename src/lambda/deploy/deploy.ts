/**
 * `vid lambda deploy`: deploys the render stack (`pulumi/`) once per account and region with
 * the Pulumi Automation API, and returns its two outputs.
 *
 * Steps: check that the Pulumi CLI runs (the Automation API drives it; without it, a
 * {@linkcode PulumiCliMissingError} says how to install it, before any work); build the
 * packaged worker (`scripts/build_worker.ts` -> `dist/worker/`, unless `workerPath` names a
 * built one); install `pulumi/`'s packages when missing (`npm ci`); run `pulumi/deploy.ts`
 * under Node 22 with the tsx loader, which sets the stack config from the options and runs
 * `up` through `LocalWorkspace`. Pulumi's progress goes to `onProgress` (stderr by default).
 *
 * This lives beside the repository's `pulumi/` and `scripts/`: it deploys from a checkout.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { isAbsolute, join, resolve } from "node:path";
import { node22 } from "../local/local_stack.ts";
import { defaultRegion } from "../../aws/clients.ts";
import { EXIT_FAILED, VidError } from "../../errors.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const PULUMI_DIR = join(ROOT, "pulumi");

/** Where to install the Pulumi CLI. */
export const PULUMI_INSTALL_URL = "https://www.pulumi.com/docs/install/";

/** The Pulumi CLI is not on PATH (or does not run). */
export class PulumiCliMissingError extends VidError {
  override name = "PulumiCliMissingError";
  /** Always `"pulumi"`: the missing program. */
  override readonly field = "pulumi";
  constructor() {
    super(
      "the Pulumi CLI (`pulumi`) is not on PATH; `vid lambda deploy` needs it. Install it " +
        `from ${PULUMI_INSTALL_URL} (e.g. \`curl -fsSL https://get.pulumi.com | sh\`), then ` +
        "run the command again",
      { exitCode: EXIT_FAILED },
    );
  }
}

/** A step of the deploy failed; `field` names the step. */
export class DeployError extends VidError {
  override name = "DeployError";
  /** The step: `build`, `install` or `up`. */
  override readonly field: string;
  constructor(step: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = step;
  }
}

/** Options of {@linkcode deployStack}. */
export interface DeployStackOptions {
  /** Pulumi stack. @default "dev" */
  stack?: string;
  /** AWS region. @default env `AWS_REGION`, then `AWS_DEFAULT_REGION`, else "us-east-1" */
  region?: string;
  /** Memory of the render function, MB (128-10240). @default 10240 */
  memory?: number;
  /** Reserved concurrency; unset removes it (the account's unreserved pool). */
  concurrency?: number;
  /** A packaged worker to deploy as is. @default built into dist/worker first */
  workerPath?: string;
  /** Receives Pulumi's and the build's progress. @default written to stderr */
  onProgress?(text: string): void;
}

/** The stack's outputs. */
export interface DeployStackResult {
  /** The region deployed to. */
  region: string;
  /** The render bucket (the SDK's `bucketName`). */
  RenderBucketName: string;
  /** The render workflow (the SDK's `stateMachineArn`). */
  RenderStateMachineArn: string;
}

/** Whether `pulumi version` runs. */
export async function pulumiOnPath(): Promise<boolean> {
  try {
    const out = await new Deno.Command("pulumi", {
      args: ["version"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** Runs a step, streaming its stderr to `onProgress`; returns its stdout. */
async function step(
  name: string,
  command: string,
  args: string[],
  cwd: string,
  onProgress: (text: string) => void,
): Promise<string> {
  const child = new Deno.Command(command, {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let tail = "";
  const progress = (async () => {
    for await (const text of child.stderr.pipeThrough(new TextDecoderStream())) {
      tail = (tail + text).slice(-2000);
      onProgress(text);
    }
  })();
  const [out] = await Promise.all([child.output(), progress]);
  if (!out.success) {
    throw new DeployError(name, `${name} failed (exit ${out.code}): ${tail.trim()}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/**
 * Deploys the render stack and returns its outputs.
 *
 * @example
 * ```ts no_run
 * const { RenderBucketName, RenderStateMachineArn } = await deployStack({
 *   region: "eu-west-1",
 *   concurrency: 100,
 * });
 * ```
 */
export async function deployStack(options: DeployStackOptions = {}): Promise<DeployStackResult> {
  if (!(await pulumiOnPath())) throw new PulumiCliMissingError();
  const onProgress = options.onProgress ??
    ((text: string) => void Deno.stderr.write(new TextEncoder().encode(text)));
  const region = options.region ?? defaultRegion();
  let workerPath = join(ROOT, "dist", "worker");
  if (options.workerPath) {
    workerPath = isAbsolute(options.workerPath) ? options.workerPath : resolve(options.workerPath);
  } else {
    const built = await step(
      "build",
      Deno.execPath(),
      ["run", "-A", join(ROOT, "scripts", "build_worker.ts"), "--outdir", workerPath],
      ROOT,
      onProgress,
    );
    onProgress(built);
  }
  if (!(await exists(join(PULUMI_DIR, "node_modules", "@pulumi", "pulumi")))) {
    await step("install", "npm", ["ci", "--no-audit", "--no-fund"], PULUMI_DIR, onProgress);
  }
  const args = [
    "--import",
    "tsx",
    "deploy.ts",
    "--stack",
    options.stack ?? "dev",
    "--region",
    region,
    "--memory",
    String(options.memory ?? 10240),
    "--worker-path",
    workerPath,
  ];
  if (options.concurrency !== undefined) args.push("--concurrency", String(options.concurrency));
  const stdout = await step("up", await node22(), args, PULUMI_DIR, onProgress);
  const outputs = JSON.parse(stdout.trim().split("\n").at(-1) ?? "{}");
  return {
    region,
    RenderBucketName: outputs.RenderBucketName,
    RenderStateMachineArn: outputs.RenderStateMachineArn,
  };
}
