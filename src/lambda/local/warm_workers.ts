/**
 * Warm worker processes for the local stack, emulating how Lambda reuses execution
 * environments: each invocation runs in a Node 22 process that handles one invocation at a
 * time and is kept, idle, for the next one, so module-level state (the S3 client, the
 * downloaded sites, the chosen browser) survives between invocations as it does on Lambda.
 *
 * - An invocation takes the most recently used idle process, or starts a new one when none
 *   is idle (Lambda scales out), up to `concurrency` busy processes, like a function's
 *   reserved concurrency. Invocations past that wait for a free process in arrival order
 *   (AWS would throttle them and the workflow's retry would back off; one machine cannot run
 *   hundreds of browsers at once, so waiting is the useful emulation). The time cap counts
 *   from when a process takes the invocation.
 * - After an invocation the process stays warm while fewer than `maxWarm` are idle, else it
 *   exits; an idle process exits after `idleTimeoutMs`; `close()` ends them all.
 * - Each process is the leader of its own process group, and its browsers stay in that group
 *   (`VID_BROWSER_IN_PARENT_GROUP=1`, see `src/render/browser.ts`), as do its ffmpeg
 *   processes. Whenever a process ends, however it ends (SIGKILL, crash, time cap), the
 *   pool SIGKILLs its whole group, so no browser of it survives. Processes are stopped with
 *   SIGTERM (the driver exits, and the render code's exit hook kills the browsers it
 *   launched), then SIGKILL of the group if still there after a second. A process whose
 *   stdin closes (the pool's owner died, even by SIGKILL) exits at once, mid-invocation too.
 * - A handler that throws fails the invocation with its error name and message, and the
 *   process is reused (as on Lambda). A process that exits or crashes without a result fails
 *   the invocation with `Lambda.Unknown` and is discarded. One that runs past the time cap is
 *   killed and fails it with `Sandbox.Timedout` (`Task timed out after <n>.00 seconds`).
 *
 * Protocol: one JSON line per invocation on the process's stdin; the result comes back on
 * stdout as one line after a marker, so the handler's own `console.log` output cannot be
 * mistaken for it (those lines go to `onLog` with stderr).
 *
 * @module
 */

import { EXIT_FAILED, VidError } from "../../errors.ts";
import { within } from "../../util/async.ts";

/** Marks a result line, so stray output of the worker cannot be mistaken for one. */
const RESULT_MARK = "@@vid-task-result@@";

/** Runs in Node 22: loads the bundle once, then serves one invocation per stdin line. */
const DRIVER = `
import process from "node:process";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
let handler;
let loadError;
try {
  ({ handler } = await import(pathToFileURL(process.argv[1]).href));
} catch (error) {
  loadError = error;
}
process.on("SIGTERM", () => process.exit(143));
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
// The pool closed stdin, or died: nobody will read a result, so stop now (the exit hook
// kills the browsers), not after the invocation in progress.
lines.on("close", () => process.exit(0));
for await (const line of lines) {
  if (line === "") continue;
  let out;
  try {
    if (loadError) throw loadError;
    out = { result: (await handler(JSON.parse(line))) ?? null };
  } catch (error) {
    out = { error: {
      errorType: error?.name ?? "Error",
      errorMessage: error?.message ?? String(error),
    } };
  }
  process.stdout.write("\\n${RESULT_MARK}" + JSON.stringify(out) + "\\n");
}
process.exit(0);
`;

/** Options of {@linkcode startWarmWorkers}. */
export interface WarmWorkersOptions {
  /** Path of the Node 22 binary. */
  node: string;
  /** Path of the worker bundle (exports `handler`). */
  bundle: string;
  /** The whole environment of the worker processes. */
  env: Record<string, string>;
  /** The emulated function time cap, seconds: an invocation past it is killed. */
  timeoutSeconds: number;
  /**
   * Extra time past the cap before the process is killed, so that the workflow's own
   * `States.Timeout` (the same cap, as a Task's `TimeoutSeconds`) is what a render reports.
   * @default 250
   */
  killGraceMs?: number;
  /**
   * Most invocations running at once (the function's reserved concurrency); later ones
   * wait in arrival order. @default unlimited
   */
  concurrency?: number;
  /** Idle processes kept for reuse; 0 starts a fresh process per invocation. @default 4 */
  maxWarm?: number;
  /** An idle process exits after this many milliseconds. @default 120000 */
  idleTimeoutMs?: number;
  /** Receives the workers' stderr and stray stdout as it comes. @default dropped */
  onLog?(text: string): void;
}

/** Counters of a {@linkcode WarmWorkers} pool. */
export interface WarmWorkersStats {
  /** Processes started so far. */
  started: number;
  /** Invocations so far. */
  invocations: number;
  /** Invocations served by a process that had served one before. */
  reused: number;
  /** Processes idle now. */
  idle: number;
  /** Processes busy now. */
  busy: number;
  /** Invocations waiting now for a free process (past `concurrency`). */
  waiting: number;
  /** Most processes busy at once so far. */
  peakBusy: number;
}

/** A pool of warm worker processes. */
export interface WarmWorkers {
  /**
   * Runs one invocation: the handler's result, or a throw named as Lambda names it.
   * `onStart` is called once it has a free process slot (the wait for one is not run time).
   */
  invoke(payload: unknown, onStart?: () => void): Promise<unknown>;
  /** Counters, for tests and measurements. */
  stats(): WarmWorkersStats;
  /**
   * Pids of the processes now, busy and idle. Each leads its own process group, which holds
   * its browsers and ffmpeg: what a test or an operator watches for one pool's processes
   * when other work shares the machine.
   */
  pids(): number[];
  /** Ends every process, busy ones included; later invocations fail. */
  close(): Promise<void>;
}

/** An invocation failed the way a Lambda invocation fails; `name` is the error type. */
export class InvocationError extends VidError {
  /** The invocation's error type, e.g. `Sandbox.Timedout`. */
  override readonly field: string;
  constructor(errorType: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.name = errorType;
    this.field = errorType;
  }
}

interface Outcome {
  result?: unknown;
  error?: { errorType: string; errorMessage: string };
}

/** One Node 22 process serving invocations one at a time. */
class WorkerProcess {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #onLog?: (text: string) => void;
  /** Settles when the process has exited. */
  readonly exited: Promise<Deno.CommandStatus>;
  /** Settles when the process has exited and its output is read to the end. */
  readonly done: Promise<void>;
  /** False once the process has exited. */
  alive = true;
  /** Its output broke the protocol: it is stopped, not reused. */
  broken = false;
  #waiting?: (outcome: Outcome) => void;
  #stderrTail = "";
  invocations = 0;
  idleTimer?: ReturnType<typeof setTimeout>;

  constructor(options: WarmWorkersOptions) {
    this.#onLog = options.onLog;
    this.#child = new Deno.Command(options.node, {
      args: ["--input-type=module", "-e", DRIVER, options.bundle],
      env: { ...options.env, VID_BROWSER_IN_PARENT_GROUP: "1" },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      // A new session and process group led by the worker: see the module header.
      detached: true,
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    this.exited = this.#child.status.then((status) => {
      this.alive = false;
      // Reap what the worker left in its group: browsers, ffmpeg.
      this.#signalGroup("SIGKILL");
      return status;
    });
    this.done = Promise.all([this.exited, this.#readStdout(), this.#readStderr()]).then(() => {});
  }

  async #readStdout(): Promise<void> {
    let buffer = "";
    for await (const text of this.#child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += text;
      for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 1);
        if (line.startsWith(RESULT_MARK)) {
          const waiting = this.#waiting;
          this.#waiting = undefined;
          waiting?.(this.#outcome(line.slice(RESULT_MARK.length)));
        } else if (line !== "") {
          this.#onLog?.(line + "\n");
        }
      }
    }
  }

  /**
   * A result line's outcome. One that is not JSON (a handler that printed the marker, a
   * broken write) fails the invocation, and the process is not reused: which line answers
   * which invocation is no longer sure. A throw here would stop reading the process's
   * output and end the stack on an unhandled rejection.
   */
  #outcome(text: string): Outcome {
    try {
      const outcome = JSON.parse(text);
      if (typeof outcome === "object" && outcome !== null) return outcome as Outcome;
    } catch {
      // reported below
    }
    this.broken = true;
    const shown = text.length > 200 ? `${text.slice(0, 200)}…` : text;
    this.#onLog?.(`worker ${this.pid} wrote a result line that is not JSON: ${shown}\n`);
    return {
      error: {
        errorType: "Lambda.Unknown",
        errorMessage: `the worker process answered with a result that is not JSON: ${shown}`,
      },
    };
  }

  async #readStderr(): Promise<void> {
    for await (const text of this.#child.stderr.pipeThrough(new TextDecoderStream())) {
      this.#stderrTail = (this.#stderrTail + text).slice(-2000);
      this.#onLog?.(text);
    }
  }

  /** Sends one invocation; settles with its outcome, or with `undefined` if the process exits. */
  async run(payload: unknown): Promise<Outcome | undefined> {
    this.invocations++;
    this.#stderrTail = "";
    const outcome = new Promise<Outcome>((resolve) => (this.#waiting = resolve));
    try {
      await this.#writer.write(new TextEncoder().encode(JSON.stringify(payload) + "\n"));
    } catch {
      // The process is gone; its exit settles the race below.
    }
    return await Promise.race([outcome, this.exited.then(() => undefined)]);
  }

  /** The worker's process id (also its process group's id). */
  get pid(): number {
    return this.#child.pid;
  }

  /** Sends `signal` to every process of the worker's group. */
  #signalGroup(signal: Deno.Signal): void {
    try {
      Deno.kill(-this.#child.pid, signal);
    } catch {
      // the group is empty
    }
  }

  /** The last 2000 characters the process wrote to stderr during this invocation. */
  get stderrTail(): string {
    return this.#stderrTail;
  }

  /**
   * Stops the process and waits for it: SIGTERM first, so the driver exits through the
   * render code's exit hook (which kills the browsers it launched, in their own process
   * groups), then SIGKILL after `graceMs`.
   */
  async kill(graceMs = 1000): Promise<void> {
    const signal = (name: Deno.Signal): void => {
      try {
        this.#child.kill(name);
      } catch {
        // already exited
      }
    };
    signal("SIGTERM");
    const exited = await within(this.exited, graceMs);
    if (!exited) this.#signalGroup("SIGKILL");
    await this.#writer.close().catch(() => {});
    await this.done;
  }

  /** Lets an idle process exit by itself (end of input) and waits for it. */
  async retire(): Promise<void> {
    await this.#writer.close().catch(() => {});
    // The timer is cleared once the process exits, so a retired worker keeps nothing alive.
    const exited = await within(this.exited, 2000);
    if (!exited) await this.kill();
    await this.done;
  }
}

/**
 * Runs one invocation on `worker` within the function's timeout (plus the kill grace): the
 * handler's outcome (its result or its error), or an `InvocationError` as Lambda reports it:
 * `Sandbox.Timedout` (the process is killed) or `Lambda.Unknown` (the process died without a
 * result). `track` follows the end of a process that died.
 */
async function runWithTimeout(
  worker: WorkerProcess,
  payload: unknown,
  options: WarmWorkersOptions,
  killGraceMs: number,
  track: (ending: Promise<void>) => void,
): Promise<Outcome> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<"timeout">((resolve) => {
    timer = setTimeout(() => resolve("timeout"), options.timeoutSeconds * 1000 + killGraceMs);
  });
  try {
    const outcome = await Promise.race([worker.run(payload), timedOut]);
    if (outcome === "timeout") {
      await worker.kill();
      throw new InvocationError(
        "Sandbox.Timedout",
        `Task timed out after ${options.timeoutSeconds.toFixed(2)} seconds`,
      );
    }
    if (outcome === undefined) {
      track(worker.done);
      const status = await worker.exited;
      const how = status.signal ? `signal ${status.signal}` : `code ${status.code}`;
      // In the stack's log too: the workflow retries the task, which would otherwise be
      // visible only in the execution history.
      options.onLog?.(
        `worker ${worker.pid} exited with ${how} during a task; its process group ` +
          `(browsers, ffmpeg) was killed and the task fails with Lambda.Unknown\n`,
      );
      throw new InvocationError(
        "Lambda.Unknown",
        `worker process exited with ${how} without a result: ${worker.stderrTail}`,
      );
    }
    return outcome;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts an empty pool; processes start on demand.
 *
 * @example
 * ```ts no_run
 * import { node22 } from "./local_stack.ts";
 * import type { ExecutionInput } from "../config.ts";
 *
 * async function plan(input: ExecutionInput): Promise<unknown> {
 *   const workers = startWarmWorkers({
 *     node: await node22(), bundle: "dist/worker/index.mjs", env: {}, timeoutSeconds: 900,
 *   });
 *   const executionStartTime = new Date().toISOString();
 *   try {
 *     return await workers.invoke({ task: "plan", input, executionStartTime });
 *   } finally {
 *     await workers.close();
 *   }
 * }
 * ```
 */
export function startWarmWorkers(options: WarmWorkersOptions): WarmWorkers {
  const maxWarm = options.maxWarm ?? 4;
  const idleTimeoutMs = options.idleTimeoutMs ?? 120_000;
  const killGraceMs = options.killGraceMs ?? 250;
  const concurrency = options.concurrency ?? Infinity;
  const idle: WorkerProcess[] = [];
  /** Invocations waiting for a slot, first come first served. */
  const queue: (() => void)[] = [];
  let running = 0;
  const busy = new Set<WorkerProcess>();
  const endings = new Set<Promise<void>>();
  let closed = false;
  const counts = { started: 0, invocations: 0, reused: 0, peakBusy: 0 };

  const acquire = async (): Promise<void> => {
    if (running < concurrency) {
      running++;
      return;
    }
    // release() hands its slot straight to the first waiter, so `running` stays put.
    await new Promise<void>((resolve) => queue.push(resolve));
  };
  const release = (): void => {
    const next = queue.shift();
    if (next) next();
    else running--;
  };

  const track = (ending: Promise<void>): void => {
    // A rejected ending is logged, not left unhandled: that would end the whole stack.
    const settled = ending.catch((error) => options.onLog?.(`a worker's end failed: ${error}\n`));
    endings.add(settled);
    void settled.finally(() => endings.delete(settled));
  };

  const park = (worker: WorkerProcess): void => {
    if (closed || idle.length >= maxWarm) {
      track(worker.retire());
      return;
    }
    worker.idleTimer = setTimeout(() => {
      const at = idle.indexOf(worker);
      if (at >= 0) idle.splice(at, 1);
      track(worker.retire());
    }, idleTimeoutMs);
    idle.push(worker);
  };

  const invoke = async (payload: unknown, onStart?: () => void): Promise<unknown> => {
    if (closed) throw new InvocationError("Lambda.Unknown", "the local stack is closed");
    await acquire();
    try {
      if (closed) throw new InvocationError("Lambda.Unknown", "the local stack is closed");
      onStart?.();
      return await invokeNow(payload);
    } finally {
      release();
    }
  };

  const invokeNow = async (payload: unknown): Promise<unknown> => {
    let worker = idle.pop();
    // An idle process that died meanwhile is dropped; the invocation gets a fresh one.
    while (worker && !worker.alive) {
      clearTimeout(worker.idleTimer);
      track(worker.done);
      worker = idle.pop();
    }
    if (worker) {
      clearTimeout(worker.idleTimer);
      counts.reused++;
    } else {
      worker = new WorkerProcess(options);
      counts.started++;
    }
    counts.invocations++;
    busy.add(worker);
    counts.peakBusy = Math.max(counts.peakBusy, busy.size);
    try {
      const outcome = await runWithTimeout(worker, payload, options, killGraceMs, track);
      busy.delete(worker);
      if (worker.broken) track(worker.kill());
      else park(worker);
      if (outcome.error) {
        throw new InvocationError(outcome.error.errorType, outcome.error.errorMessage);
      }
      return outcome.result;
    } finally {
      busy.delete(worker);
    }
  };

  return {
    invoke,
    stats: () => ({ ...counts, idle: idle.length, busy: busy.size, waiting: queue.length }),
    pids: () => [...busy, ...idle].map((worker) => worker.pid),
    async close(): Promise<void> {
      closed = true;
      // Waiters wake up, see the pool closed and fail.
      for (const next of queue.splice(0)) next();
      for (const worker of idle.splice(0)) {
        clearTimeout(worker.idleTimer);
        track(worker.retire());
      }
      for (const worker of busy) track(worker.kill());
      while (endings.size > 0) await Promise.all([...endings]);
    },
  };
}
