/**
 * A `vid preview` child process for the studio and preview tests, and an ffmpeg runner for
 * reading their screenshots and renders.
 *
 * @module
 */

import { ROOT } from "./helpers.ts";

/** A running `vid preview` child process. */
export interface PreviewProcess {
  url: string;
  port: number;
  /** Process id of the `vid preview` process. */
  pid: number;
  child: Deno.ChildProcess;
  stderr(): string;
  /** Resolves with the exit status once stdout and stderr closed. */
  done: Promise<Deno.CommandStatus>;
}

/** Starts `vid preview <dir> --port 0 --json` and waits for its listening line. */
export async function startPreviewProcess(
  dir: string,
  args: string[] = [],
): Promise<PreviewProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, "preview", dir, "--port", "0", "--json", ...args],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let err = "";
  const errDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (err += text) }),
  );
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`vid preview exited before listening: ${out}${err}`);
    out += value;
  }
  const outDone = (async () => {
    while (!(await reader.read()).done) { /* drain */ }
  })();
  const line = JSON.parse(out.split("\n")[0]) as { url: string; port: number };
  return {
    ...line,
    pid: child.pid,
    child,
    stderr: () => err,
    done: Promise.all([child.status, errDone, outDone]).then(([status]) => status),
  };
}

/** Runs ffmpeg (quiet) with `input` on stdin; resolves with its stdout. */
export async function runFfmpeg(args: string[], input?: Uint8Array): Promise<Uint8Array> {
  const child = new Deno.Command("ffmpeg", {
    args: ["-v", "error", ...args],
    stdin: input ? "piped" : "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  if (input) {
    const writer = child.stdin.getWriter();
    await writer.write(input);
    await writer.close();
  }
  const output = await child.output();
  if (!output.success) throw new Error(new TextDecoder().decode(output.stderr));
  return output.stdout;
}
