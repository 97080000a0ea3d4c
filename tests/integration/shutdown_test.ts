/**
 * The long-running commands stop on SIGTERM within their deadline (`--shutdown-timeout`),
 * as real processes: `vid preview` and `vid lambda local` exit at once when nothing holds
 * them, and when a client holds a request open (the orderly stop waits on it) they exit
 * once the deadline passes, or at once on a second signal. The studio's render of a page
 * that busy-loops fails within `--frame-timeout`, leaving no browser or ffmpeg behind.
 * `vid server`'s stop with a hung render is in security_server_deadlines_test.ts. Its time
 * bounds are far from what they bound (a 1 s deadline checked within 10 s, a second signal
 * 1.7 s before a 2 s one, 320x180 frames of milliseconds against a 2 s frame deadline),
 * and it looks only at the processes it starts, so it runs in parallel with other files.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { compositionHtml, makeProject, ROOT } from "../helpers.ts";

/** A long-running `vid` command as a child process. */
interface Running {
  child: Deno.ChildProcess;
  stdout(): string;
  stderr(): string;
  /** The exit status, once both streams closed. */
  done: Promise<Deno.CommandStatus>;
}

/** Starts `vid …args` and resolves once its stdout matches `ready`. */
async function start(args: string[], ready: RegExp): Promise<Running> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, ...args],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let out = "";
  let err = "";
  const outDone = child.stdout.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (out += text) }),
  );
  const errDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (err = (err + text).slice(-8000)) }),
  );
  const done = Promise.all([child.status, outDone, errDone]).then(([status]) => status);
  const deadline = Date.now() + 90_000;
  while (!ready.test(out)) {
    const exited = await Promise.race([
      done.then(() => true),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 50)),
    ]);
    if (exited || Date.now() > deadline) {
      if (!exited) child.kill("SIGKILL");
      throw new Error(`vid ${args[0]} did not start:\n${out}\n${err}`);
    }
  }
  return { child, stdout: () => out, stderr: () => err, done };
}

/**
 * Sends a request whose body never ends (a client that stalls mid-upload): the command's
 * orderly stop waits for it. Settles when the command cuts the connection.
 */
function holdRequest(url: string, method = "POST"): Promise<unknown> {
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"values":'));
    },
  });
  return fetch(url, { method, body, headers: { "content-type": "application/json" } })
    .then((response) => response.body?.cancel(), () => undefined);
}

/** Sends `signal`, then resolves with the exit status and the seconds it took. */
async function stopWith(
  running: Running,
  signals: Deno.Signal[],
): Promise<{ code: number; seconds: number }> {
  const started = performance.now();
  for (const [i, signal] of signals.entries()) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 300));
    running.child.kill(signal);
  }
  const status = await running.done;
  return { code: status.code, seconds: (performance.now() - started) / 1000 };
}

describe("long-running commands: stop signals and hung pages", () => {
  const page = compositionHtml(`<div style="position:absolute;inset:0;background:#00f"></div>`);

  it("vid preview: exits 0 at once; held open by a client, exits at the deadline or on a second signal", async () => {
    const project = await makeProject(page);
    try {
      const base = ["preview", project, "--port", "0", "--json", "--shutdown-timeout"];
      // 2 s where the stop must beat the deadline (an idle stop, a second signal 0.3 s after
      // the first); 1 s where the test waits it out.
      const args = [...base, "2"];
      const idle = await start(args, /"url"/);
      const quiet = await stopWith(idle, ["SIGTERM"]);
      assert.equal(quiet.code, 0, idle.stderr());
      assert.match(idle.stderr(), /vid preview: stopped/);

      const held = await start([...base, "1"], /"url"/);
      const url = JSON.parse(held.stdout().split("\n")[0]).url;
      const request = holdRequest(`${url}__preview/variables`);
      // A grace period: the server taking the request in cannot be seen from outside.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const cut = await stopWith(held, ["SIGTERM"]);
      assert.equal(cut.code, 1, held.stderr());
      assert.ok(cut.seconds < 10, `exited ${cut.seconds.toFixed(1)} s after SIGTERM`);
      assert.match(held.stderr(), /took longer than 1 s \(--shutdown-timeout\)/);
      await request;

      const twice = await start(args, /"url"/);
      const url2 = JSON.parse(twice.stdout().split("\n")[0]).url;
      const request2 = holdRequest(`${url2}__preview/variables`);
      // A grace period: the server taking the request in cannot be seen from outside.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const again = await stopWith(twice, ["SIGTERM", "SIGTERM"]);
      assert.equal(again.code, 1, twice.stderr());
      // The second signal came 0.3 s after the first, well before the 2 s deadline.
      assert.match(twice.stderr(), /stopped at once on a second signal/);
      await request2;
    } finally {
      await Deno.remove(project, { recursive: true });
    }
  });

  it("vid lambda local: exits 0 at once; held open by a client, exits at the deadline", async () => {
    const scratch = await Deno.makeTempDir({ prefix: "vid-shutdown-test-" });
    try {
      const base = ["lambda", "local", "--data-dir", join(scratch, "s3"), "--shutdown-timeout"];
      // 2 s where the stop must beat the deadline (an idle stop); 1 s where the test waits
      // it out.
      const ready = /export VID_S3_ENDPOINT=(\S+)/;
      const idle = await start([...base, "2"], ready);
      const quiet = await stopWith(idle, ["SIGTERM"]);
      assert.equal(quiet.code, 0, idle.stderr());

      const held = await start([...base, "1"], ready);
      const endpoint = held.stdout().match(ready)![1];
      const bucket = held.stdout().match(/export VID_LAMBDA_BUCKET=(\S+)/)![1];
      // An object upload that never finishes.
      const request = holdRequest(`${endpoint}/${bucket}/held-open.bin`, "PUT");
      // A grace period: the server taking the request in cannot be seen from outside.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const cut = await stopWith(held, ["SIGTERM"]);
      assert.ok(cut.seconds < 10, `exited ${cut.seconds.toFixed(1)} s after SIGTERM`);
      assert.equal(cut.code, 1, held.stderr());
      assert.match(held.stderr(), /took longer than 1 s \(--shutdown-timeout\)/);
      await request;
    } finally {
      await Deno.remove(scratch, { recursive: true });
    }
  });

  it("vid preview: the studio's render of a page that busy-loops fails within --frame-timeout, nothing left running", async () => {
    const project = await makeProject(compositionHtml(
      `<div style="position:absolute;inset:0;background:#00f"></div>`,
      { after: "<script>setTimeout(() => { while (true) {} }, 300);</script>" },
    ));
    const preview = await start(
      ["preview", project, "--port", "0", "--json", "--frame-timeout", "2"],
      /"url"/,
    );
    try {
      const url = JSON.parse(preview.stdout().split("\n")[0]).url;
      const started = await fetch(`${url}__preview/render`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ values: {} }),
      });
      assert.ok(started.ok, await started.clone().text());
      await started.body?.cancel();
      const began = performance.now();
      let status: { state: string; error?: { name: string; message: string } } = { state: "" };
      while (status.state !== "failed" && performance.now() - began < 30000) {
        await new Promise((resolve) => setTimeout(resolve, 200));
        status = await (await fetch(`${url}__preview/render`)).json();
      }
      assert.equal(status.state, "failed", JSON.stringify(status));
      assert.equal(status.error?.name, "FrameTimeoutError");
      assert.match(status.error!.message, /^frame 9: the page stopped responding/);
      const left = (await descendants(preview.child.pid)).filter((name) =>
        /chrom|ffmpeg/i.test(name)
      );
      assert.deepEqual(left, [], "nothing of the render is left running");
    } finally {
      await stopWith(preview, ["SIGTERM"]);
      await Deno.remove(project, { recursive: true });
    }
  });
});

/** Names of the processes below `pid` (Linux /proc). */
async function descendants(pid: number): Promise<string[]> {
  const children = new Map<number, { pid: number; name: string }[]>();
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
      const close = stat.lastIndexOf(")");
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      const name = stat.slice(stat.indexOf("(") + 1, close);
      children.set(ppid, [...(children.get(ppid) ?? []), { pid: Number(entry.name), name }]);
    } catch {
      // gone meanwhile
    }
  }
  const found: string[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      found.push(child.name);
      queue.push(child.pid);
    }
  }
  return found;
}
