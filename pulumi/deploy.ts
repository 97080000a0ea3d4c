/**
 * `vid lambda deploy`'s engine: deploys this directory's program (`index.ts`, project
 * `vid-lambda`) with the Pulumi Automation API (`LocalWorkspace`), and prints the stack's two
 * outputs as one JSON object on stdout. Pulumi's progress goes to stderr.
 *
 * ```sh
 * node --import tsx deploy.ts --stack dev --region eu-west-1 --memory 10240 --concurrency 100 \
 *   --worker-path ../dist/worker
 * # stdout: {"RenderBucketName":"vid-renders-…","RenderStateMachineArn":"arn:aws:states:…"}
 * ```
 *
 * The flags are the desired state: `--memory`, `--concurrency`, `--region` and
 * `--worker-path` are written to the stack's config (`vid-lambda:memory`,
 * `vid-lambda:concurrency`, `aws:region`, `vid-lambda:workerPath`); without
 * `--concurrency` the reserved concurrency is removed (the account's unreserved pool).
 *
 * The Automation API drives the Pulumi CLI; without it this script exits 1 saying how to
 * install it. Exit codes: 0 deployed, 1 failed, 2 bad flags.
 *
 * @module
 */

import process from "node:process";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation/index.js";
import { MAX_MEMORY_MB, MIN_MEMORY_MB } from "./stack.ts";

/** Where to install the Pulumi CLI, named in every "not found" message. */
export const PULUMI_INSTALL_URL = "https://www.pulumi.com/docs/install/";

/** This program's directory (the Automation API's `workDir`). */
const PROGRAM_DIR = fileURLToPath(new URL(".", import.meta.url));

/** A flag of `deploy.ts` is missing or out of range. */
export class DeployUsageError extends Error {
  override name = "DeployUsageError";
  /** The flag at fault, e.g. `--memory`. */
  readonly field: string;
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/** What one deploy asks for. */
export interface DeployRequest {
  /** Pulumi stack name. */
  stack: string;
  /** AWS region. */
  region: string;
  /** Memory of the render function, MB. */
  memory: number;
  /** Reserved concurrency; undefined removes it. */
  concurrency?: number;
  /** The packaged worker directory, absolute. */
  workerPath: string;
}

/** The stack's config for a request: values to set, and keys to remove. */
export interface DeployConfig {
  set: Record<string, { value: string }>;
  remove: string[];
}

function integerFlag(flag: string, text: string | undefined, min: number, max?: number) {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || (max !== undefined && value > max)) {
    const range = max === undefined ? `${min} or more` : `${min} to ${max}`;
    throw new DeployUsageError(flag, `expected a whole number from ${range}, got ${text}`);
  }
  return value;
}

/**
 * Parses `deploy.ts`'s flags (relative `--worker-path` against `cwd`).
 *
 * @example
 * ```ts
 * parseDeployArgs(["--stack", "dev", "--memory", "4096"], "/repo/pulumi").memory; // 4096
 * ```
 */
export function parseDeployArgs(args: string[], cwd: string = process.cwd()): DeployRequest {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      options: {
        stack: { type: "string", default: "dev" },
        region: { type: "string" },
        memory: { type: "string", default: String(MAX_MEMORY_MB) },
        concurrency: { type: "string" },
        "worker-path": { type: "string", default: "../dist/worker" },
      },
    }));
  } catch (error) {
    throw new DeployUsageError("flags", (error as Error).message);
  }
  const region = values.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ??
    "us-east-1";
  if (!/^[a-z]{2}(-[a-z]+)+-\d+$/.test(region)) {
    throw new DeployUsageError("--region", `not an AWS region: ${region}`);
  }
  if (!values.stack) throw new DeployUsageError("--stack", "a stack name is required");
  return {
    stack: values.stack,
    region,
    memory: integerFlag("--memory", values.memory, MIN_MEMORY_MB, MAX_MEMORY_MB)!,
    concurrency: integerFlag("--concurrency", values.concurrency, 1),
    workerPath: resolve(cwd, values["worker-path"]!),
  };
}

/**
 * The stack config a request writes (see the module's notes on desired state).
 *
 * @example
 * ```ts
 * deployConfig({ stack: "dev", region: "eu-west-1", memory: 4096, workerPath: "/w" }).remove;
 * // ["vid-lambda:concurrency"]
 * ```
 */
export function deployConfig(request: DeployRequest): DeployConfig {
  const set: DeployConfig["set"] = {
    "aws:region": { value: request.region },
    "vid-lambda:memory": { value: String(request.memory) },
    "vid-lambda:workerPath": { value: request.workerPath },
  };
  const remove: string[] = [];
  if (request.concurrency === undefined) remove.push("vid-lambda:concurrency");
  else set["vid-lambda:concurrency"] = { value: String(request.concurrency) };
  return { set, remove };
}

/** The Pulumi CLI the Automation API will drive, or an error saying how to install it. */
async function pulumiCli(): Promise<PulumiCommand> {
  try {
    return await PulumiCommand.get();
  } catch (error) {
    throw new Error(
      "the Pulumi CLI (`pulumi`) is not on PATH or does not run; the Automation API needs " +
        `it. Install it from ${PULUMI_INSTALL_URL}, then run again`,
      { cause: error },
    );
  }
}

/**
 * Deploys the stack and returns its outputs.
 *
 * @example
 * ```ts
 * const outputs = await deploy(parseDeployArgs(["--stack", "dev"]));
 * console.log(outputs.RenderBucketName, outputs.RenderStateMachineArn);
 * ```
 */
export async function deploy(
  request: DeployRequest,
  onOutput: (text: string) => void = (text) => process.stderr.write(text),
): Promise<{ RenderBucketName: string; RenderStateMachineArn: string }> {
  const pulumiCommand = await pulumiCli();
  const stack = await LocalWorkspace.createOrSelectStack(
    { stackName: request.stack, workDir: PROGRAM_DIR },
    { pulumiCommand },
  );
  const config = deployConfig(request);
  await stack.setAllConfig(config.set);
  for (const key of config.remove) await stack.removeConfig(key);
  const result = await stack.up({ onOutput });
  return {
    RenderBucketName: String(result.outputs.RenderBucketName?.value),
    RenderStateMachineArn: String(result.outputs.RenderStateMachineArn?.value),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  let request: DeployRequest;
  try {
    request = parseDeployArgs(process.argv.slice(2));
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n`);
    process.exit(2);
  }
  try {
    const outputs = await deploy(request);
    process.stdout.write(JSON.stringify(outputs) + "\n");
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n`);
    process.exit(1);
  }
}
