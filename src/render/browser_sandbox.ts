/**
 * How render browsers are isolated: Chromium's sandbox on, preferred or off, optionally as
 * an unprivileged user (`setpriv`), chosen once per process. Apart from the launch in
 * `browser.ts` so the policy (a security decision) reads on its own page.
 *
 * @module
 */

import { findUtility } from "./process_runner.ts";
import { join } from "node:path";
import process from "node:process";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** An unprivileged account render browsers run as (see {@linkcode SandboxPolicy}). */
export interface RenderUser {
  name: string;
  uid: number;
  gid: number;
}

/**
 * How browsers are isolated from the host. Chromium's sandbox (namespaces and seccomp) keeps
 * a page that exploits the renderer inside it; Chromium refuses the sandbox to root, so a
 * process running as root starts its browsers as `user` (with `setpriv`), whose profile and
 * temporary folders it owns.
 *
 * - `required`: the sandbox or no browser ({@linkcode SandboxUnavailableError}); `vid server`.
 * - `preferred`: the sandbox where it starts; where it cannot (a container without user
 *   namespaces), `onUnavailable` is told once and every later launch runs without it.
 * - `off`: `--no-sandbox` (`vid server --allow-no-sandbox` on a host without the sandbox).
 */
export interface SandboxPolicy {
  sandbox: "required" | "preferred" | "off";
  /** Account the browsers run as; undefined: this process's own. */
  user?: RenderUser;
  /** Told why, once, when a `preferred` sandbox cannot start. */
  onUnavailable?: (reason: string) => void;
}

/**
 * Chromium could not start its sandbox on this host (no user namespaces, a seccomp policy of
 * the container, running as root). `reason` is Chromium's own line.
 */
export class SandboxUnavailableError extends VidError {
  override name = "SandboxUnavailableError";
  /** What Chromium said. */
  readonly reason: string;
  constructor(executable: string, reason: string) {
    super(`${executable} cannot start its sandbox: ${reason}`, { exitCode: EXIT_FAILED });
    this.reason = reason;
  }
}

/**
 * What Chromium prints when its sandbox cannot start (it then exits): no user namespaces,
 * root, a container that forbids the namespaces, a broken SUID helper.
 */
export const SANDBOX_FAILURE =
  /No usable sandbox!?.*|Running as root without --no-sandbox.*|Failed to move to new namespace.*|.*\b(SUID|setuid) sandbox.*/i;

/** The process-wide policy, see {@linkcode setSandboxPolicy}; undefined: the default. */
let sandboxPolicy: SandboxPolicy | undefined;

/**
 * Sets how every browser this process launches from now on is isolated; `undefined` goes
 * back to the default: `off` when this process runs as root (Chromium refuses its sandbox
 * to root, and `vid render` warns about it), `preferred` otherwise. `vid server` sets
 * `required` with its `--render-user` (see `src/render/sandbox.ts`).
 *
 * @example
 * ```ts no_run
 * import { launchBrowser } from "./browser.ts";
 *
 * setSandboxPolicy({ sandbox: "required", user: { name: "nobody", uid: 65534, gid: 65534 } });
 * const browser = await launchBrowser({ mode: "beginframe" }); // runs as nobody, sandboxed
 * await browser.close();
 * ```
 */
export function setSandboxPolicy(policy: SandboxPolicy | undefined): void {
  sandboxPolicy = policy;
}

/** The policy in force. */
export function currentSandbox(): SandboxPolicy {
  if (sandboxPolicy) return sandboxPolicy;
  const root = typeof process.getuid === "function" && process.getuid() === 0;
  sandboxPolicy = root ? { sandbox: "off" } : {
    sandbox: "preferred",
    onUnavailable: (reason) =>
      console.error(
        `warning: Chromium's sandbox cannot start here (${reason}); browsers run without it`,
      ),
  };
  return sandboxPolicy;
}

/**
 * The environment of a browser that runs as another user: the locale and a home inside its
 * profile, not this process's variables (they may hold the server's credentials).
 */
export function renderUserEnv(profile: string, scratch: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: profile,
    TMPDIR: scratch,
    XDG_CONFIG_HOME: join(profile, ".config"),
    XDG_CACHE_HOME: join(profile, ".cache"),
  };
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && /^(LANG|LANGUAGE|LC_\w+|TZ|FONTCONFIG_\w+)$/.test(name)) {
      env[name] = value;
    }
  }
  return env;
}

/**
 * The `setpriv` the browser is launched through so that the kernel kills it (SIGKILL, its
 * parent-death signal) the moment this process ends, however it ends: a browser leads its
 * own process group, so it would otherwise outlive an owner killed with SIGKILL until the
 * next owner reaped it (see `browser_records.ts`, still the second line). Its zygote and
 * renderers exit when their browser does. Undefined off Linux or without util-linux.
 */
export function setpriv(): string | undefined {
  return findUtility("setpriv");
}
