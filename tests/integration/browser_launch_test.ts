/**
 * `launchBrowser` start-up failures: a browser killed by a signal before it printed its
 * DevTools address (a transient crash, seen under load with the Lambda Chromium) is launched
 * once more and the render goes on; a browser that crashes every time, or exits with a code,
 * fails with a message naming the executable and the signal or code; a browser whose DevTools
 * socket refuses the connection is killed with its profile before the launch fails. The
 * crashing and refusing browsers are real wrapper scripts around the system's
 * chromium-headless-shell. So is the stand-in for a host without the sandbox: it fails as
 * Chromium does unless given --no-sandbox.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  BrowserStartError,
  BrowserStartupCrashError,
  launchBrowser,
  SandboxUnavailableError,
  setSandboxPolicy,
} from "../../src/render/browser.ts";
import { findHeadlessShell } from "../../src/render/system.ts";

let scratch: string;
let shell: string;

before(async () => {
  scratch = await Deno.makeTempDir({ prefix: "vid-launch-" });
  shell = (await findHeadlessShell())!;
  assert.ok(shell, "chromium-headless-shell is installed");
});

after(async () => {
  await Deno.remove(scratch, { recursive: true });
});

/**
 * Writes an executable that kills itself with SIGSEGV on its first `crashes` runs (counted in
 * a file) and then runs the real headless shell with the same arguments.
 */
async function crashingBrowser(name: string, crashes: number): Promise<string> {
  const counter = join(scratch, `${name}.count`);
  const path = join(scratch, name);
  await Deno.writeTextFile(
    path,
    `#!/bin/sh
n=$(cat '${counter}' 2>/dev/null || echo 0)
echo $((n + 1)) > '${counter}'
if [ "$n" -lt ${crashes} ]; then kill -SEGV $$; fi
exec '${shell}' "$@"
`,
  );
  await Deno.chmod(path, 0o755);
  return path;
}

async function runs(name: string): Promise<number> {
  return Number(await Deno.readTextFile(join(scratch, `${name}.count`)));
}

describe("launchBrowser start-up", () => {
  it("launches once more after a crash by a signal, and the browser works", async () => {
    const executable = await crashingBrowser("once", 1);
    const browser = await launchBrowser({ mode: "beginframe", executablePath: executable });
    try {
      const { product } = await browser.connection.send<{ product: string }>(
        "Browser.getVersion",
      );
      assert.match(product, /Chrome/);
    } finally {
      await browser.close();
    }
    assert.equal(await runs("once"), 2);
  });

  it("VID_CHROMIUM_FLAGS adds flags, and leaves out vid's own written as !--flag", async () => {
    const before = Deno.env.get("VID_CHROMIUM_FLAGS");
    Deno.env.set("VID_CHROMIUM_FLAGS", "--disable-gpu-compositing !--hide-scrollbars");
    const browser = await launchBrowser({ mode: "beginframe" }).finally(() =>
      before === undefined
        ? Deno.env.delete("VID_CHROMIUM_FLAGS")
        : Deno.env.set("VID_CHROMIUM_FLAGS", before)
    );
    try {
      const args = Deno.readTextFileSync(`/proc/${browser.process.pid}/cmdline`).split("\0");
      assert.ok(args.includes("--disable-gpu-compositing"), args.join(" "));
      assert.ok(!args.includes("--hide-scrollbars"), args.join(" "));
      assert.ok(args.includes("--enable-begin-frame-control"), args.join(" "));
    } finally {
      await browser.close();
    }
  });

  it("gives up after the second crash, naming the executable and the signal", async () => {
    const executable = await crashingBrowser("always", 5);
    await assert.rejects(
      launchBrowser({ mode: "beginframe", executablePath: executable }),
      (error: unknown) => {
        assert.ok(error instanceof BrowserStartupCrashError, String(error));
        assert.equal(error.signal, "SIGSEGV");
        assert.match(error.message, new RegExp(`${executable} was killed by SIGSEGV`));
        return true;
      },
    );
    assert.equal(await runs("always"), 2);
  });

  it("does not retry a browser that exits with a code", async () => {
    const path = join(scratch, "exits");
    await Deno.writeTextFile(path, `#!/bin/sh\necho "bad flag" >&2\nexit 3\n`);
    await Deno.chmod(path, 0o755);
    await assert.rejects(
      launchBrowser({ mode: "screenshot", executablePath: path }),
      (error: Error) => {
        assert.ok(error instanceof BrowserStartError, String(error));
        assert.equal(error.field, path);
        assert.match(error.message, /exits exited with code 3 during start-up:\nbad flag/);
        return true;
      },
    );
  });

  it("kills a browser whose DevTools socket refuses the connection, and removes its profile", async () => {
    // A port nobody listens on: the real browser's announced address is rewritten to it.
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const closed = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const argsFile = join(scratch, "refusing.args");
    const path = join(scratch, "refusing");
    await Deno.writeTextFile(
      path,
      `#!/bin/sh
echo "$@" > '${argsFile}'
'${shell}' "$@" 2>&1 >/dev/null | sed -u 's#ws://127.0.0.1:[0-9]*/#ws://127.0.0.1:${closed}/#' >&2
`,
    );
    await Deno.chmod(path, 0o755);
    await assert.rejects(
      launchBrowser({ mode: "beginframe", executablePath: path }),
      /cannot connect to the browser at ws:\/\/127\.0\.0\.1:\d+\//,
    );
    const profile = (await Deno.readTextFile(argsFile)).match(/--user-data-dir=(\S+)/)![1];
    // Nothing of that browser runs on (it used to until this process exited), and its
    // profile is gone.
    const running = await new Deno.Command("pgrep", { args: ["-f", profile], stdout: "piped" })
      .output();
    assert.equal(new TextDecoder().decode(running.stdout).trim(), "", "the browser still runs");
    await assert.rejects(Deno.stat(profile));
  });
});

describe("launchBrowser sandbox policy (stand-in browser that fails its sandbox)", () => {
  /** Fails like Chromium without user namespaces unless told --no-sandbox; counts its runs. */
  async function sandboxlessBrowser(name: string): Promise<string> {
    const path = join(scratch, name);
    await Deno.writeTextFile(
      path,
      `#!/bin/sh
n=$(cat '${scratch}/${name}.count' 2>/dev/null || echo 0)
echo $((n + 1)) > '${scratch}/${name}.count'
case " $* " in *" --no-sandbox "*) exec '${shell}' "$@";; esac
echo "[1:1:FATAL:zygote_host_impl_linux.cc(128)] No usable sandbox! Update your kernel." >&2
exit 1
`,
    );
    await Deno.chmod(path, 0o755);
    return path;
  }

  after(() => setSandboxPolicy(undefined));

  it("required: fails with Chromium's reason and launches nothing else", async () => {
    const executable = await sandboxlessBrowser("required");
    setSandboxPolicy({ sandbox: "required" });
    await assert.rejects(
      launchBrowser({ mode: "beginframe", executablePath: executable }),
      (error: unknown) =>
        error instanceof SandboxUnavailableError &&
        error.reason === "No usable sandbox! Update your kernel.",
    );
    assert.equal(await runs("required"), 1);
  });

  it("preferred: warns once, then this and later launches run without the sandbox", async () => {
    const executable = await sandboxlessBrowser("preferred");
    const warnings: string[] = [];
    setSandboxPolicy({ sandbox: "preferred", onUnavailable: (reason) => warnings.push(reason) });
    for (let i = 0; i < 2; i++) {
      const browser = await launchBrowser({ mode: "beginframe", executablePath: executable });
      await browser.close();
    }
    assert.deepEqual(warnings, ["No usable sandbox! Update your kernel."]);
    // The first launch tried the sandbox; its retry and the second launch did not.
    assert.equal(await runs("preferred"), 3);
  });
});
