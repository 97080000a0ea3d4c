/**
 * The one way vid runs ffmpeg and ffprobe. Every run is tracked (killed when this process
 * exits, and by {@linkcode killLiveProcesses} when a server must stop now), ends when its
 * AbortSignal aborts or its deadline passes, and runs under the process-wide
 * {@linkcode ProcessPolicy}: `vid server` sets one so that tenants' media is decoded as the
 * unprivileged `--render-user` under resource limits, as its browsers run (see
 * `sandbox.ts`). Before this module each call site spawned ffmpeg itself, as root on a
 * server, untracked, and a cancelled render waited for a proxy conversion or the mix.
 *
 * A run under a policy goes through `setpriv` (the user, no supplementary groups, SIGKILL
 * when this process dies) and `prlimit` (the limits); both exec in place, so the pid,
 * process group and command line are ffmpeg's own. `node:child_process`: the Lambda worker
 * and the npm SDK run this module under Node.
 *
 * @module
 */

import { type ChildProcess, spawn } from "node:child_process";
import { statSync } from "node:fs";
import { chmod, chown, stat } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import type { Writable } from "node:stream";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** An unprivileged account processes run as (`vid server --render-user`). */
export interface ProcessUser {
  name: string;
  uid: number;
  gid: number;
}

/**
 * Resource limits of a process, applied with `setrlimit` (through util-linux `prlimit`)
 * before it runs. Soft and hard limits are the same: the process cannot raise them.
 */
export interface ProcessLimits {
  /** CPU seconds (RLIMIT_CPU); the kernel kills the process past them. */
  cpuSeconds?: number;
  /** Bytes of virtual memory (RLIMIT_AS); allocations past it fail. */
  addressSpaceBytes?: number;
  /** Bytes of the largest file it may write (RLIMIT_FSIZE). */
  fileSizeBytes?: number;
  /** Open file descriptors (RLIMIT_NOFILE). */
  openFiles?: number;
}

/** How every process of {@linkcode runProcess} runs unless a call says otherwise. */
export interface ProcessPolicy {
  /** Account the processes run as; undefined: this process's own. */
  user?: ProcessUser;
  /** Limits every process gets. */
  limits?: ProcessLimits;
}

/**
 * The limits `vid server` gives its ffmpeg and ffprobe runs: far above what a render within
 * the server's own bounds needs (a 1080p encode peaks near 1 GiB of address space), low
 * enough that a crafted file cannot fill the disk, exhaust memory or spin for hours.
 */
export const SERVER_PROCESS_LIMITS: Readonly<Required<ProcessLimits>> = {
  cpuSeconds: 4 * 3600,
  addressSpaceBytes: 8 * 1024 ** 3,
  fileSizeBytes: 16 * 1024 ** 3,
  openFiles: 1024,
};

/** The process-wide policy, see {@linkcode setProcessPolicy}. */
let policy: ProcessPolicy = {};

/**
 * Sets how every process {@linkcode runProcess} starts from now on runs; `undefined` goes
 * back to this process's own user without limits (the CLI: a user's own project).
 *
 * @example
 * ```ts no_run
 * setProcessPolicy({
 *   user: { name: "vid-render", uid: 999, gid: 995 },
 *   limits: SERVER_PROCESS_LIMITS,
 * });
 * ```
 */
export function setProcessPolicy(next: ProcessPolicy | undefined): void {
  policy = next ?? {};
}

/** The policy in force (see {@linkcode setProcessPolicy}). */
export function processPolicy(): ProcessPolicy {
  return policy;
}

/**
 * Hands files and folders to the policy's user, so its processes can read them and write
 * their outputs there (a render's work folder, a downloaded chunk). Nothing without a
 * policy user.
 *
 * @example
 * ```ts no_run
 * await grantToProcessUser("/tmp/vid-render-1234-abc");
 * ```
 */
export async function grantToProcessUser(...paths: string[]): Promise<void> {
  const user = policy.user;
  if (!user) return;
  for (const path of paths) await chown(path, user.uid, user.gid);
}

/**
 * Lets the policy's user pass through `dirs` (not list or read them): each keeps its
 * owner, takes the user's group and mode 0710. The server's data and work folders lead to
 * the render folders handed to that user (see {@linkcode grantToProcessUser}). Nothing
 * without a policy user.
 *
 * @example
 * ```ts no_run
 * await openPathToProcessUser(["/var/lib/vid", "/var/lib/vid/work"]);
 * ```
 */
export async function openPathToProcessUser(dirs: readonly string[]): Promise<void> {
  const user = policy.user;
  if (!user) return;
  for (const dir of dirs) {
    await chown(dir, (await stat(dir)).uid, user.gid);
    await chmod(dir, 0o710);
  }
}

/** A process could not be started at all (the binary is missing or not executable). */
export class ProcessStartError extends VidError {
  override name = "ProcessStartError";
  /** The program that did not start. */
  readonly command: string;
  constructor(command: string, reason: string, cause?: unknown) {
    super(`cannot run ${command}: ${reason}`, { exitCode: EXIT_FAILED, cause });
    this.command = command;
  }
}

/** A process ran past its `timeoutMs` and was killed. */
export class ProcessTimeoutError extends VidError {
  override name = "ProcessTimeoutError";
  constructor(command: string, timeoutMs: number) {
    super(`${command} did not finish within ${timeoutMs} ms and was killed`, {
      exitCode: EXIT_FAILED,
    });
  }
}

/** Options of {@linkcode runProcess} and {@linkcode startProcess}. */
export interface RunProcessOptions {
  /** Kills the process and rejects with the signal's reason when it aborts. */
  signal?: AbortSignal;
  /** Kills the process and rejects with {@linkcode ProcessTimeoutError} after this long. */
  timeoutMs?: number;
  /** Account to run as; `null` for this process's own. @default the policy's */
  user?: ProcessUser | null;
  /** Resource limits; `null` for none. @default the policy's */
  limits?: ProcessLimits | null;
  /** A writable stdin (`RunningProcess.stdin`) instead of none. @default false */
  stdin?: boolean;
  /** Told each piece of stdout as text; without it stdout is kept whole in the result. */
  onStdout?: (text: string) => void;
  /** Ignore stdout entirely. @default false */
  ignoreStdout?: boolean;
  /** Characters of stderr's end kept in the result. @default 4000 */
  stderrTail?: number;
}

/** How a process ended. */
export interface ProcessResult {
  /** Exit code; null when a signal ended it. */
  code: number | null;
  /** The signal that ended it, e.g. `SIGKILL`. */
  signal: string | null;
  /** Its stdout, unless streamed to `onStdout` or ignored. */
  stdout: string;
  /** The end of its stderr. */
  stderr: string;
}

/** A process of {@linkcode startProcess}. */
export interface RunningProcess {
  readonly pid: number | undefined;
  /** Its stdin, with `stdin: true`. */
  readonly stdin: Writable | null;
  /** Settles when it has ended and its output is read (see {@linkcode runProcess}). */
  readonly done: Promise<ProcessResult>;
  /** SIGKILLs it; `done` then settles. Safe to call twice. */
  kill(): void;
}

/** Processes of this module still running. */
const LIVE = new Set<ChildProcess>();
let exitHookInstalled = false;

/** Paths of util-linux programs, found once. */
const utilities = new Map<string, string | null>();

/** Where util-linux's `name` is on Linux; undefined elsewhere or when not installed. */
export function findUtility(name: string): string | undefined {
  if (!utilities.has(name)) {
    utilities.set(name, null);
    if (process.platform === "linux") {
      for (const dir of ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]) {
        try {
          if (statSync(join(dir, name)).isFile()) {
            utilities.set(name, join(dir, name));
            break;
          }
        } catch {
          // not there
        }
      }
    }
  }
  return utilities.get(name) ?? undefined;
}

/** The `prlimit` options of `limits`. */
function limitArgs(limits: ProcessLimits): string[] {
  const args: string[] = [];
  if (limits.cpuSeconds !== undefined) args.push(`--cpu=${limits.cpuSeconds}`);
  if (limits.addressSpaceBytes !== undefined) args.push(`--as=${limits.addressSpaceBytes}`);
  if (limits.fileSizeBytes !== undefined) args.push(`--fsize=${limits.fileSizeBytes}`);
  if (limits.openFiles !== undefined) args.push(`--nofile=${limits.openFiles}`);
  return args;
}

/** The environment of a process run as another user: not this process's secrets. */
function userEnv(): Record<string, string> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && /^(LANG|LANGUAGE|LC_\w+|TZ|FONTCONFIG_\w+)$/.test(name)) {
      env[name] = value;
    }
  }
  return env;
}

/** The command line that runs `command` as `user` under `limits`. */
function wrapped(
  command: string,
  args: readonly string[],
  user: ProcessUser | undefined,
  limits: ProcessLimits | undefined,
): [string, string[]] {
  let line = [command, ...args];
  const bounds = limits ? limitArgs(limits) : [];
  if (bounds.length > 0) {
    const prlimit = findUtility("prlimit");
    if (!prlimit) {
      throw new ProcessStartError(command, "prlimit (util-linux) is not installed");
    }
    line = [prlimit, ...bounds, "--", ...line];
  }
  if (user) {
    const setpriv = findUtility("setpriv");
    if (!setpriv) {
      throw new ProcessStartError(command, "setpriv (util-linux) is not installed");
    }
    line = [
      setpriv,
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      "--clear-groups",
      // After the uid change, which would clear it: the process dies with this one.
      "--pdeathsig=KILL",
      "--",
      ...line,
    ];
  }
  return [line[0], line.slice(1)];
}

/**
 * Starts `command` and returns it running: for a process fed through its stdin (the
 * encoder). Prefer {@linkcode runProcess} otherwise.
 *
 * @example
 * ```ts no_run
 * const run = startProcess("ffmpeg", ["-f", "image2pipe", "-i", "pipe:0", "out.mp4"], {
 *   stdin: true,
 * });
 * run.stdin!.end();
 * console.log((await run.done).code);
 * ```
 */
export function startProcess(
  command: string,
  args: readonly string[],
  options: RunProcessOptions = {},
): RunningProcess {
  const user = options.user === null ? undefined : options.user ?? policy.user;
  const limits = options.limits === null ? undefined : options.limits ?? policy.limits;
  const signal = options.signal;
  if (signal?.aborted) {
    return {
      pid: undefined,
      stdin: null,
      done: Promise.reject(signal.reason),
      kill: () => {},
    };
  }
  const [program, line] = wrapped(command, args, user, limits);
  const child = spawn(program, line, {
    stdio: [
      options.stdin ? "pipe" : "ignore",
      options.ignoreStdout ? "ignore" : "pipe",
      "pipe",
    ],
    ...(user && { env: userEnv() }),
  });
  LIVE.add(child);
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", () => killLiveProcesses());
  }
  const tail = options.stderrTail ?? 4000;
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8").on("data", (text: string) => {
    if (options.onStdout) options.onStdout(text);
    else stdout += text;
  });
  child.stderr!.setEncoding("utf8").on("data", (text: string) => {
    stderr = (stderr + text).slice(-tail);
  });
  // Reported through the exit status; a write after the exit must not crash the owner.
  child.stdin?.on("error", () => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  let failure: unknown;
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  };
  const onAbort = (): void => {
    failure ??= signal!.reason;
    kill();
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  if (options.timeoutMs !== undefined) {
    timer = setTimeout(() => {
      failure ??= new ProcessTimeoutError(command, options.timeoutMs!);
      kill();
    }, options.timeoutMs);
  }
  const done = new Promise<ProcessResult>((resolve, reject) => {
    const settle = (): void => {
      LIVE.delete(child);
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    child.once("error", (error) => {
      settle();
      reject(failure ?? new ProcessStartError(command, error.message, error));
    });
    // "close", not "exit": the process can exit before its output is read (a loaded machine
    // showed an empty stdout that way).
    child.once("close", (code, exitSignal) => {
      settle();
      if (failure !== undefined) reject(failure);
      else resolve({ code, signal: exitSignal, stdout, stderr });
    });
  });
  return { pid: child.pid, stdin: child.stdin, done, kill };
}

/**
 * Runs `command` to its end and returns how it ended, whatever its exit code (the caller
 * words its own error from the result). Rejects when it cannot start
 * ({@linkcode ProcessStartError}), with `signal.reason` when the signal aborts and with
 * {@linkcode ProcessTimeoutError} past `timeoutMs`, the process killed in both cases.
 *
 * @example
 * ```ts no_run
 * const result = await runProcess("ffprobe", ["-version"], { timeoutMs: 10_000 });
 * console.log(result.code, result.stdout.split("\n")[0]);
 * ```
 */
export function runProcess(
  command: string,
  args: readonly string[],
  options: RunProcessOptions = {},
): Promise<ProcessResult> {
  try {
    return startProcess(command, args, options).done;
  } catch (error) {
    return Promise.reject(error);
  }
}

/**
 * SIGKILLs every process of {@linkcode runProcess} that still runs, for a process that must
 * end now (`vid server` past its shutdown deadline): they share their owner's process group
 * and would otherwise finish their files after the owner is gone. Returns how many.
 *
 * @example
 * ```ts no_run
 * console.error(`killed ${killLiveProcesses()} ffmpeg process(es)`);
 * ```
 */
export function killLiveProcesses(): number {
  const running = [...LIVE];
  for (const child of running) child.kill("SIGKILL");
  return running.length;
}
