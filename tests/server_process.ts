/**
 * Test helper: the real `vid server` process on loopback, as tests of the server, the
 * OAuth flow, the contract and the cloud client start it.
 *
 * @module
 */

import { ROOT, runVid } from "./helpers.ts";

/** A running `vid server` child process. */
export interface ServerProcess {
  /** Base URL it listens at. */
  url: string;
  child: Deno.ChildProcess;
  /** Everything it printed on stdout so far. */
  output(): string;
  /** Everything it printed on stderr so far (warnings and logged errors). */
  errors(): string;
  /** Resolves when stdout closed (the process is ending). */
  closed: Promise<void>;
  /** Sends `signal` (SIGTERM by default) and waits for the exit status. */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** Starts `vid server --port 0 --data-dir <dataDir> …args` and waits until it listens. */
export async function startServerProcess(
  dataDir: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, "server", "--port", "0", "--data-dir", dataDir, ...args],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let err = "";
  const errDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (err += text) }),
  ).catch(() => {});
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!/listening on (\S+)/.test(out)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`vid server exited before listening: ${out}`);
    out += value;
  }
  const closed = (async () => {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      out += value;
    }
  })();
  return {
    url: out.match(/listening on (\S+)/)![1],
    child,
    output: () => out,
    errors: () => err,
    closed,
    async stop(signal: Deno.Signal = "SIGTERM"): Promise<Deno.CommandStatus> {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
      const status = await child.status;
      await closed;
      await errDone;
      return status;
    },
  };
}

/** Adds an account with `vid server users add` and returns a new API key for it. */
export async function createAccount(
  dataDir: string,
  email: string,
  options: { password?: string; credits?: number } = {},
): Promise<string> {
  const added = await runVid([
    "server",
    "users",
    "add",
    email,
    "--password",
    options.password ?? "a long enough password",
    "--data-dir",
    dataDir,
    ...(options.credits !== undefined ? ["--credits", String(options.credits)] : []),
  ]);
  if (added.code !== 0) throw new Error(`users add failed: ${added.stderr}`);
  const key = await runVid(["server", "keys", "create", email, "--data-dir", dataDir]);
  if (key.code !== 0) throw new Error(`keys create failed: ${key.stderr}`);
  return key.stdout.trim();
}
