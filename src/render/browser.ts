/**
 * Launches headless Chromium for capture and opens composition pages in it. Two capture
 * modes: `beginframe` (chromium-headless-shell driven by HeadlessExperimental.beginFrame,
 * the fast and exact path) and `screenshot` (Page.captureScreenshot, the fallback that
 * works on any Chromium). Parallel pages are real windows: plain tabs stall on capture.
 *
 * @module
 */

import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { chown, mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { CdpConnection, CdpSession } from "./cdp.ts";
import {
  findChromium,
  findHeadlessShell,
  MissingDependencyError,
  SYSTEM_PACKAGES,
} from "./system.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { sleep, withTimeout } from "../util/async.ts";

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
 */
function extraFlags(): string[] {
  return (process.env.VID_CHROMIUM_FLAGS ?? "").split(/\s+/).filter((flag) => flag !== "");
}

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
const SANDBOX_FAILURE =
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
 * setSandboxPolicy({ sandbox: "required", user: { name: "nobody", uid: 65534, gid: 65534 } });
 * const browser = await launchBrowser({ mode: "beginframe" }); // runs as nobody, sandboxed
 * await browser.close();
 * ```
 */
export function setSandboxPolicy(policy: SandboxPolicy | undefined): void {
  sandboxPolicy = policy;
}

/** The policy in force. */
function currentSandbox(): SandboxPolicy {
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
function renderUserEnv(profile: string, scratch: string): Record<string, string> {
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

/** Whether `user` (with no supplementary groups) may pass through every folder down to `dir`. */
function traversableBy(dir: string, user: RenderUser): boolean {
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

/** Options of {@linkcode openPage}. */
export interface PageOptions {
  width: number;
  height: number;
  /** Script evaluated before any page script (the vid runtime). */
  initScript: string;
  /** Transparent page background, for alpha output. */
  transparent?: boolean;
  /** Device pixels per CSS pixel. @default 1 */
  scale?: number;
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
 * Removes a browser profile. A process of the killed browser may still be finishing a
 * write when the main process exits (ENOTEMPTY), so it is tried a few times.
 */
async function removeProfile(profile: string): Promise<void> {
  for (let attempt = 1;; attempt++) {
    try {
      await rm(profile, { recursive: true, force: true });
      return;
    } catch (error) {
      if (attempt >= 5) throw error;
      await sleep(50 * attempt);
    }
  }
}

/**
 * Whether browsers stay in this process's process group (`VID_BROWSER_IN_PARENT_GROUP=1`):
 * the local stack starts each warm worker as a process group and kills the group when the
 * worker ends, however it ends (SIGKILL included), so the worker's browsers must be in it.
 * Otherwise a browser gets its own group, killed with it.
 */
function inParentGroup(): boolean {
  return process.env.VID_BROWSER_IN_PARENT_GROUP === "1";
}

/** `pid` and its descendants, parents first (Linux `/proc`; just `pid` elsewhere). */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  try {
    for (const name of readdirSync("/proc")) {
      if (!/^\d+$/.test(name)) continue;
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "utf8");
        // pid (comm) state ppid ...; comm may hold spaces and parentheses.
        const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        children.set(ppid, [...(children.get(ppid) ?? []), Number(name)]);
      } catch {
        // exited meanwhile
      }
    }
  } catch {
    // no /proc
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/**
 * SIGKILLs a browser with its zygote, GPU, network and renderer processes: its process
 * group, or (in the parent's group) the process tree, listed before the first kill.
 */
function killBrowser(pid: number, ownGroup: boolean): void {
  for (const target of ownGroup ? [-pid] : processTree(pid)) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // already gone
    }
  }
}

/** Where `setpriv` (util-linux) is, when this is Linux and it is installed. */
let setprivPath: string | null | undefined;

/**
 * The `setpriv` the browser is launched through so that the kernel kills it (SIGKILL, its
 * parent-death signal) the moment this process ends, however it ends: a browser leads its
 * own process group, so it would otherwise outlive an owner killed with SIGKILL until the
 * next owner reaped it (see `browser_records.ts`, still the second line). Its zygote and
 * renderers exit when their browser does. Undefined off Linux or without util-linux.
 */
function setpriv(): string | undefined {
  if (setprivPath === undefined) {
    setprivPath = null;
    if (process.platform === "linux") {
      for (const dir of ["/usr/bin", "/bin", "/usr/sbin", "/sbin"]) {
        try {
          if (statSync(join(dir, "setpriv")).isFile()) {
            setprivPath = join(dir, "setpriv");
            break;
          }
        } catch {
          // not there
        }
      }
    }
  }
  return setprivPath ?? undefined;
}

/** Browsers of this process still running: their pid, profile and whether they lead a group. */
const LIVE_BROWSERS: Set<{ pid: number; profile: string; ownGroup: boolean }> = new Set();
let exitHookInstalled = false;

/**
 * Kills a browser's process group (and removes its profile) when this process exits while
 * the browser still runs: browsers live in their own process group, so a worker that is
 * told to stop (the local stack's warm workers exit on SIGTERM) would otherwise leave them
 * behind.
 */
function killOnExit(browser: { pid: number; profile: string; ownGroup: boolean }): void {
  LIVE_BROWSERS.add(browser);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => {
    for (const { pid, profile, ownGroup } of LIVE_BROWSERS) {
      killBrowser(pid, ownGroup);
      try {
        rmSync(profile, { recursive: true, force: true });
      } catch {
        // best effort
      }
    }
  });
}

/**
 * Kills every browser this process launched that still runs (each with its process group,
 * its profile removed), at once: for a process that must end now, such as `vid server`
 * past its shutdown deadline. Returns how many were killed.
 *
 * @example
 * ```ts no_run
 * const killed = killLiveBrowsers();
 * console.error(`killed ${killed} browser(s)`);
 * ```
 */
export function killLiveBrowsers(): number {
  const browsers = [...LIVE_BROWSERS];
  for (const { pid, profile, ownGroup } of browsers) {
    killBrowser(pid, ownGroup);
    try {
      rmSync(profile, { recursive: true, force: true });
    } catch {
      // a process of the browser may still be writing; the reaper removes it later
    }
  }
  return browsers.length;
}

/** A recorded browser. */
export interface BrowserRecord {
  /** The browser's pid, which is also its process group. */
  pid: number;
  /** The pid of the process that launched it. */
  owner: number;
  /** Its profile folder (`--user-data-dir`), removed when it is reaped. */
  profile: string;
}

/**
 * Records a running browser in `dir` as `browser-<pid>.json`; returns the record's path.
 * The record is written whole under a name the reaper skips, then renamed into place: an
 * owner starting meanwhile (the CLI's commands share one folder) would otherwise read an
 * empty record, delete it as unreadable, and the browser would outlive a SIGKILL of its
 * owner.
 */
export function writeBrowserRecord(dir: string, record: BrowserRecord): string {
  const path = join(dir, `browser-${record.pid}.json`);
  const partial = join(dir, `.browser-${record.pid}.json.partial`);
  writeFileSync(partial, JSON.stringify(record));
  renameSync(partial, path);
  return path;
}

/** Folder where running browsers are recorded, see {@linkcode recordBrowsersIn}. */
let browserRecords: string | undefined;

/**
 * Records every browser this process launches from now on as `<dir>/browser-<pid>.json`
 * (`{ pid, owner, profile }`; the pid is also its process group) while it runs. A browser
 * lives in its own process group, so it outlives an owner killed with SIGKILL; the owner's
 * successor reads these records to kill what was left (the render server does, on start).
 * `undefined` stops recording.
 */
export function recordBrowsersIn(dir: string | undefined): void {
  browserRecords = dir;
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

/** A page could not be loaded: Chromium refused the URL, or its load event never came. */
export class PageLoadError extends VidError {
  override name = "PageLoadError";
  /** The URL that was loading. */
  override readonly field: string;
  constructor(url: string, message: string) {
    super(message, { exitCode: EXIT_FAILED, field: url });
    this.field = url;
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
  const args = [
    ...COMMON_FLAGS,
    ...(policy.sandbox === "off" ? ["--no-sandbox"] : []),
    ...(options.mode === "beginframe" ? BEGIN_FRAME_FLAGS : []),
    ...extraFlags(),
    ...(options.networkFlags ?? []),
    `--user-data-dir=${profile}`,
    ...(options.scale && options.scale !== 1
      ? [`--force-device-scale-factor=${options.scale}`]
      : []),
    "about:blank",
  ];
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
  if (browserRecords && child.pid) {
    const record = writeBrowserRecord(browserRecords, {
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

/**
 * Opens a new window with the vid runtime installed before any page script.
 * The page is blank; navigate with {@linkcode navigate}.
 */
export async function openPage(browser: Browser, options: PageOptions): Promise<CdpSession> {
  const { targetId } = await browser.connection.send<{ targetId: string }>(
    "Target.createTarget",
    {
      url: "about:blank",
      width: options.width,
      height: options.height,
      newWindow: true,
      enableBeginFrameControl: browser.mode === "beginframe",
    },
  );
  const { sessionId } = await browser.connection.send<{ sessionId: string }>(
    "Target.attachToTarget",
    { targetId, flatten: true },
  );
  const page = new CdpSession(browser.connection, sessionId, targetId);
  await Promise.all([
    page.send("Page.enable"),
    page.send("Runtime.enable"),
    page.send("Inspector.enable"),
    page.send("Emulation.setDeviceMetricsOverride", {
      width: options.width,
      height: options.height,
      deviceScaleFactor: options.scale ?? 1,
      mobile: false,
    }),
    page.send("Emulation.setFocusEmulationEnabled", { enabled: true }),
    page.send("Page.addScriptToEvaluateOnNewDocument", { source: options.initScript }),
    options.transparent
      ? page.send("Emulation.setDefaultBackgroundColorOverride", {
        color: { r: 0, g: 0, b: 0, a: 0 },
      })
      : Promise.resolve(),
  ]);
  return page;
}

/** Navigates and resolves once the load event fired. */
export async function navigate(page: CdpSession, url: string, timeoutMs = 60000): Promise<void> {
  const loaded = page.once("Page.loadEventFired");
  const result = await page.send<{ errorText?: string }>("Page.navigate", { url });
  if (result.errorText) throw new PageLoadError(url, `cannot load ${url}: ${result.errorText}`);
  await withTimeout(
    loaded,
    timeoutMs,
    () => new PageLoadError(url, `${url} did not finish loading within ${timeoutMs} ms`),
  );
}

/** How long closing a window may take before the caller goes on without waiting. */
const CLOSE_PAGE_WAIT_MS = 5000;

/**
 * Closes a page's window. Never waits more than a few seconds: a browser busy with a hung
 * renderer may not answer, and whoever owns it kills it anyway.
 */
export async function closePage(page: CdpSession): Promise<void> {
  page.dispose();
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    page.connection.send("Target.closeTarget", { targetId: page.targetId }).catch(() => {}),
    new Promise((resolve) => timer = setTimeout(resolve, CLOSE_PAGE_WAIT_MS)),
  ]);
  clearTimeout(timer);
}
