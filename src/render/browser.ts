/**
 * Launches headless Chromium for capture (its pages are in `page.ts`, its isolation in
 * `browser_sandbox.ts`, its processes in `browser_process.ts`). Two capture
 * modes: `beginframe` (chromium-headless-shell driven by HeadlessExperimental.beginFrame,
 * the fast and exact path) and `screenshot` (Page.captureScreenshot, the fallback that
 * works on any Chromium). Parallel pages are real windows: plain tabs stall on capture.
 *
 * @module
 */

import { type ChildProcess, spawn } from "node:child_process";
import { rmSync, statSync } from "node:fs";
import { chown, mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { CdpConnection } from "./cdp.ts";
import {
  findChromium,
  findHeadlessShell,
  MissingDependencyError,
  SYSTEM_PACKAGES,
} from "./system.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import {
  currentSandbox,
  type RenderUser,
  renderUserEnv,
  SANDBOX_FAILURE,
  type SandboxPolicy,
  SandboxUnavailableError,
  setpriv,
} from "./browser_sandbox.ts";
import {
  browserRecordsDir,
  inParentGroup,
  killBrowser,
  killOnExit,
  LIVE_BROWSERS,
  removeProfile,
  writeBrowserRecord,
} from "./browser_process.ts";

// The launch's parts, each in its own module; importers keep reaching them here.
export {
  type RenderUser,
  type SandboxPolicy,
  SandboxUnavailableError,
  setSandboxPolicy,
} from "./browser_sandbox.ts";
export {
  type BrowserRecord,
  killLiveBrowsers,
  recordBrowsersIn,
  writeBrowserRecord,
} from "./browser_process.ts";
export { closePage, navigate, openPage, PageLoadError, type PageOptions } from "./page.ts";

/** How frames are captured. */
export type CaptureMode = "beginframe" | "screenshot";

/**
 * Flags every launch uses: no network chatter, no first-run, fresh profile. The sandbox is
 * not among them: it is on unless the {@linkcode SandboxPolicy} turns it off.
 */
const COMMON_FLAGS = [
  "--headless",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--no-default-browser-check",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-extensions",
  "--disable-dev-shm-usage",
  "--disable-renderer-backgrounding",
  "--disable-background-timer-throttling",
  "--disable-backgrounding-occluded-windows",
  "--hide-scrollbars",
  "--mute-audio",
  "--font-render-hinting=none",
  "--force-color-profile=srgb",
  "--remote-debugging-port=0",
];

/** Flags that hand the compositor's clock to BeginFrame calls. */
const BEGIN_FRAME_FLAGS = [
  "--deterministic-mode",
  "--enable-begin-frame-control",
  "--disable-new-content-rendering-timeout",
  "--run-all-compositor-stages-before-draw",
  "--disable-threaded-animation",
  "--disable-threaded-scrolling",
  "--disable-checker-imaging",
  "--disable-partial-raster",
];

/**
 * Extra launch flags from `VID_CHROMIUM_FLAGS` (whitespace-separated): the Lambda worker
 * passes `@sparticuz/chromium`'s recommended flags this way (`worker/lambda_runtime.ts`).
 * A flag written `!--name` leaves out that flag of vid's own instead (flag-by-flag
 * experiments of bench/flags_bench.ts, e.g. `!--disable-gpu`).
 */
function extraFlags(): { add: string[]; drop: Set<string> } {
  const given = (process.env.VID_CHROMIUM_FLAGS ?? "").split(/\s+/).filter((flag) => flag !== "");
  return {
    add: given.filter((flag) => !flag.startsWith("!")),
    drop: new Set(given.filter((flag) => flag.startsWith("!")).map((flag) => flag.slice(1))),
  };
}

/**
 * Whether `user` (with no supplementary groups) may pass through every folder down to `dir`.
 *
 * @example
 * ```ts no_run
 * traversableBy("/var/lib/vid/work", { name: "vid-render", uid: 999, gid: 995 });
 * ```
 */
export function traversableBy(dir: string, user: RenderUser): boolean {
  for (let at = dir;; at = dirname(at)) {
    try {
      const info = statSync(at);
      const bits = info.uid === user.uid ? 0o100 : info.gid === user.gid ? 0o010 : 0o001;
      if ((info.mode & bits) === 0) return false;
    } catch {
      return false;
    }
    if (dirname(at) === at) return true;
  }
}

/**
 * Where the profile of a browser running as `user` goes: the temporary folder when that user
 * can reach it, else `/tmp`. A private TMPDIR (a 0700 folder of root's) would hide the
 * profile from its own browser, which then dies at start-up.
 */
function profileParent(user: RenderUser): string {
  for (const candidate of [tmpdir(), "/tmp"]) {
    if (traversableBy(candidate, user)) return candidate;
  }
  throw new BrowserStartError(
    "TMPDIR",
    `${user.name} cannot reach ${tmpdir()} or /tmp, where its browser profile would go; ` +
      "point TMPDIR at a folder every user may pass through (mode 0711 or wider)",
  );
}

/** Options of {@linkcode launchBrowser}. */
export interface LaunchOptions {
  /** Capture mode the browser is launched for. */
  mode: CaptureMode;
  /** Browser binary; found on the system when omitted. */
  executablePath?: string;
  /** Give up on start-up after this many ms. @default 30000 */
  timeoutMs?: number;
  /**
   * Device pixels per CSS pixel for every window. BeginFrame screenshots ignore the
   * per-page emulated scale, so the scale is a launch flag. @default 1
   */
  scale?: number;
  /** Network guard flags (`guardLaunchFlags` of `src/net/guard_proxy.ts`). */
  networkFlags?: readonly string[];
}

/** A running browser. */
export interface Browser {
  readonly mode: CaptureMode;
  /** The browser binary that runs. */
  readonly executable: string;
  readonly connection: CdpConnection;
  readonly process: ChildProcess;
  /** Kills the browser and removes its profile. Safe to call twice. */
  close(): Promise<void>;
}

async function browserPath(mode: CaptureMode): Promise<string> {
  if (mode === "beginframe") {
    const shell = await findHeadlessShell();
    if (!shell) {
      throw new MissingDependencyError(
        "chromium-headless-shell",
        SYSTEM_PACKAGES["chromium-headless-shell"],
        "VID_HEADLESS_SHELL",
      );
    }
    return shell;
  }
  const chromium = (await findChromium()) ?? (await findHeadlessShell());
  if (!chromium) {
    throw new MissingDependencyError("chromium", SYSTEM_PACKAGES.chromium, "VID_CHROMIUM");
  }
  return chromium;
}

/**
 * Starts a browser for `mode` and connects to it over CDP.
 *
 * @example
 * ```ts no_run
 * const browser = await launchBrowser({ mode: "beginframe" });
 * await browser.close();
 * ```
 */
export async function launchBrowser(options: LaunchOptions): Promise<Browser> {
  const executable = options.executablePath ?? await browserPath(options.mode);
  try {
    return await launchSandboxed(executable, options);
  } catch (error) {
    // A browser killed by a signal before it printed its DevTools address (seen under heavy
    // load with the Lambda Chromium's --single-process, where a hang watchdog takes the whole
    // browser down) is a transient start-up failure: one fresh launch, then the error.
    if (!(error instanceof BrowserStartupCrashError)) throw error;
    return await launchSandboxed(executable, options);
  }
}

/** One launch under the sandbox policy; a `preferred` sandbox that cannot start is dropped. */
async function launchSandboxed(executable: string, options: LaunchOptions): Promise<Browser> {
  const policy = currentSandbox();
  try {
    return await launchOnce(executable, options, policy);
  } catch (error) {
    if (!(error instanceof SandboxUnavailableError) || policy.sandbox !== "preferred") {
      throw error;
    }
    policy.sandbox = "off";
    policy.onUnavailable?.(error.reason);
    return await launchOnce(executable, options, policy);
  }
}

/**
 * The browser process died by a signal during start-up, before it was reachable.
 * {@linkcode launchBrowser} retries once on this error.
 */
export class BrowserStartupCrashError extends VidError {
  override name = "BrowserStartupCrashError";
  /** The signal that ended the browser, e.g. `SIGTRAP`. */
  readonly signal: string;
  constructor(executable: string, signal: string, stderr: string) {
    super(`${executable} was killed by ${signal} during start-up:\n${stderr}`, {
      exitCode: EXIT_FAILED,
    });
    this.signal = signal;
  }
}

/**
 * The browser did not start: it could not be spawned, exited with an error code, or gave
 * no DevTools address in time; or its profile has nowhere to go. `cause` holds the
 * spawn error when there is one; the message ends with what the browser printed.
 */
export class BrowserStartError extends VidError {
  override name = "BrowserStartError";
  /** The browser executable. */
  override readonly field: string;
  constructor(executable: string, message: string, options: ErrorOptions = {}) {
    super(message, { exitCode: EXIT_FAILED, field: executable, cause: options.cause });
    this.field = executable;
  }
}

/**
 * The DevTools address a starting browser prints on stderr. Rejects when it exits first
 * (a signal: {@linkcode BrowserStartupCrashError}, which the launch retries), cannot be
 * spawned, or prints none within `timeoutMs` (then it is killed). `output.stderr` gathers
 * what it printed, for the caller's sandbox check.
 */
function devToolsUrl(
  child: ChildProcess,
  executable: string,
  timeoutMs: number,
  output: { stderr: string },
): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new BrowserStartError(
          executable,
          `${executable} did not start within ${timeoutMs} ms:\n${output.stderr}`,
        ),
      );
    }, timeoutMs);
    child.stderr!.setEncoding("utf8");
    child.stderr!.on("data", (chunk: string) => {
      output.stderr += chunk;
      const match = output.stderr.match(/DevTools listening on (ws:\/\/\S+)/);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(
        new BrowserStartError(executable, `cannot start ${executable}: ${error.message}`, {
          cause: error,
        }),
      );
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      reject(
        signal
          ? new BrowserStartupCrashError(executable, signal, output.stderr)
          : new BrowserStartError(
            executable,
            `${executable} exited with code ${code} during start-up:\n${output.stderr}`,
          ),
      );
    });
  });
}

/** One launch attempt of {@linkcode launchBrowser}. */
async function launchOnce(
  executable: string,
  options: LaunchOptions,
  policy: SandboxPolicy,
): Promise<Browser> {
  const profile = await mkdtemp(
    join(policy.user ? profileParent(policy.user) : tmpdir(), "vid-chromium-"),
  );
  const extra = extraFlags();
  const args = [
    ...COMMON_FLAGS,
    ...(policy.sandbox === "off" ? ["--no-sandbox"] : []),
    ...(options.mode === "beginframe" ? BEGIN_FRAME_FLAGS : []),
    ...extra.add,
    ...(options.networkFlags ?? []),
    `--user-data-dir=${profile}`,
    ...(options.scale && options.scale !== 1
      ? [`--force-device-scale-factor=${options.scale}`]
      : []),
    "about:blank",
  ].filter((flag) => !extra.drop.has(flag));
  // Its own process group (or, in a local stack worker, the worker's, see inParentGroup), so
  // close() can kill the zygote, GPU, network and renderer processes with it: killed alone,
  // the main process leaves them writing to the profile.
  // Chromium's scratch files (shared memory with --disable-dev-shm-usage) go inside the
  // profile, so removing the profile removes them even after a SIGKILL.
  const scratch = join(profile, "tmp");
  await mkdir(scratch, { recursive: true });
  const ownGroup = !inParentGroup();
  const user = policy.user;
  if (user) {
    // The browser's user owns its profile and scratch (made 0700 by mkdtemp) and nothing
    // else of ours: the page is served over loopback HTTP and frames come back over CDP.
    await chown(profile, user.uid, user.gid);
    await chown(scratch, user.uid, user.gid);
  }
  // setpriv execs the browser in place: the pid, the process group and the command line
  // (which the reaper matches) are the browser's; this process, root, can still kill it.
  // It also sets the browser's parent-death signal (after the uid change, which would clear
  // it), so the browser dies with this process even when this process is SIGKILLed.
  const wrapper = setpriv();
  const dieWithOwner = wrapper ? ["--pdeathsig=KILL"] : [];
  const child = user
    ? spawn(wrapper ?? "setpriv", [
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      "--clear-groups",
      ...dieWithOwner,
      "--",
      executable,
      ...args,
    ], {
      stdio: ["ignore", "ignore", "pipe"],
      detached: ownGroup,
      env: renderUserEnv(profile, scratch),
    })
    : wrapper
    ? spawn(wrapper, [...dieWithOwner, "--", executable, ...args], {
      stdio: ["ignore", "ignore", "pipe"],
      detached: ownGroup,
      env: { ...process.env, TMPDIR: scratch },
    })
    : spawn(executable, args, {
      stdio: ["ignore", "ignore", "pipe"],
      detached: ownGroup,
      env: { ...process.env, TMPDIR: scratch },
    });
  const live = { pid: child.pid!, profile, ownGroup };
  killOnExit(live);
  child.once("exit", () => LIVE_BROWSERS.delete(live));
  const records = browserRecordsDir();
  if (records && child.pid) {
    const record = writeBrowserRecord(records, {
      pid: child.pid,
      owner: process.pid,
      profile,
    });
    child.once("exit", () => rmSync(record, { force: true }));
  }
  const timeoutMs = options.timeoutMs ?? 30000;
  const output = { stderr: "" };
  let connection: CdpConnection;
  try {
    const url = await devToolsUrl(child, executable, timeoutMs, output);
    // Keep draining stderr so the browser never blocks on a full pipe.
    child.stderr!.removeAllListeners("data");
    if (process.env.VID_DEBUG_BROWSER) child.stderr!.pipe(process.stderr);
    else child.stderr!.resume();
    // Inside the try: a browser whose DevTools socket refuses or never answers is killed
    // here with its profile, not left running until this process exits.
    connection = await CdpConnection.connect(url, timeoutMs);
  } catch (error) {
    const exited = child.exitCode === null && child.signalCode === null
      ? new Promise((resolve) => child.once("exit", resolve))
      : undefined;
    killBrowser(child.pid!, ownGroup);
    await exited;
    await removeProfile(profile);
    const sandboxFailure = policy.sandbox !== "off" ? output.stderr.match(SANDBOX_FAILURE) : null;
    if (sandboxFailure) throw new SandboxUnavailableError(executable, sandboxFailure[0].trim());
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    mode: options.mode,
    executable,
    connection,
    process: child,
    close(): Promise<void> {
      closing ??= (async () => {
        connection.close();
        const exited = child.exitCode === null && child.signalCode === null
          ? new Promise((resolve) => child.once("exit", resolve))
          : undefined;
        killBrowser(child.pid!, ownGroup);
        await exited;
        await removeProfile(profile);
      })();
      return closing;
    },
  };
}
