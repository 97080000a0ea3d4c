/**
 * Chooses the capture path at start-up: BeginFrame on chromium-headless-shell when a
 * probe shows it returns images, otherwise screenshots on Chromium.
 *
 * @module
 */

import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { type Browser, closePage, launchBrowser, openPage } from "./browser.ts";
import { CdpError } from "./cdp.ts";
import { cacheDir } from "../util/cache_dir.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { sleep, withTimeout } from "../util/async.ts";

// The capture preferences are a render option, declared in the request layer.
import { CAPTURE_PREFERENCES, type CapturePreference } from "../request/formats.ts";
export { CAPTURE_PREFERENCES, type CapturePreference };

/**
 * `capture: "beginframe"` was asked for, but this chromium-headless-shell returns no
 * images through BeginFrame; `auto` would have fallen back to screenshots.
 */
export class CaptureUnavailableError extends VidError {
  override name = "CaptureUnavailableError";
  constructor(reason: string) {
    super(`BeginFrame capture does not work with this chromium-headless-shell: ${reason}`, {
      exitCode: EXIT_FAILED,
      field: "capture",
    });
  }
}

/** Frames the BeginFrame probe tries before it gives up. */
const PROBE_FRAMES = 40;

/**
 * Whether BeginFrame capture returns an image in `browser`: undefined when it does, else
 * why not. The first frames of a new window often have no surface to read back yet, and
 * on a busy machine that lasts longer (5 frames fell back to the 2x slower screenshot path
 * under load), so up to {@linkcode PROBE_FRAMES} frames are tried, a little apart.
 */
export async function probeBeginFrame(browser: Browser): Promise<string | undefined> {
  try {
    const page = await openPage(browser, { width: 64, height: 64, initScript: "" });
    try {
      for (let frame = 1; frame <= PROBE_FRAMES; frame++) {
        if (frame > 5) await sleep(25);
        const result = await withTimeout(
          page.send<{ screenshotData?: string }>("HeadlessExperimental.beginFrame", {
            frameTimeTicks: frame * 33,
            interval: 33,
            screenshot: { format: "jpeg", quality: 50 },
          }),
          10000,
          () => new CdpError("HeadlessExperimental.beginFrame", "probe timed out after 10000 ms"),
        );
        if (typeof result.screenshotData === "string" && result.screenshotData.length > 0) {
          return undefined;
        }
      }
      return `BeginFrame returned no image in ${PROBE_FRAMES} frames`;
    } finally {
      await closePage(page);
    }
  } catch (error) {
    return (error as Error).message;
  }
}

/** Where the binaries whose BeginFrame probe passed are recorded. */
function probeRecordFile(): string {
  return join(cacheDir(), "beginframe-probe.json");
}

/**
 * What a passed probe is remembered by: the binary's path, size and modification time, and
 * the extra launch flags. Whether BeginFrame returns images is a property of the binary and
 * its flags, so a probe that passed once passes again until the binary changes (an upgrade
 * changes its size or time); skipping it saves a window and a renderer process per launch
 * (300 ms of a 1-frame render). Slow first frames on a busy machine are not the probe's
 * business after that: the capturer tries a new window's first frame up to 40 times too.
 */
async function probeKey(browser: Browser): Promise<string | undefined> {
  try {
    const info = await stat(browser.executable);
    return [browser.executable, info.size, info.mtimeMs, process.env.VID_CHROMIUM_FLAGS ?? ""]
      .join("|");
  } catch {
    return undefined;
  }
}

async function probeRecords(): Promise<string[]> {
  try {
    const records = JSON.parse(await readFile(probeRecordFile(), "utf8"));
    return Array.isArray(records) ? records.filter((r) => typeof r === "string") : [];
  } catch {
    return [];
  }
}

/** Remembers a passed probe (temp file then rename: readers never see half a file). */
async function recordProbe(key: string): Promise<void> {
  try {
    const records = [...new Set([...(await probeRecords()), key])].slice(-16);
    const file = probeRecordFile();
    await mkdir(cacheDir(), { recursive: true });
    const partial = `${file}.${process.pid}.partial`;
    await writeFile(partial, JSON.stringify(records));
    await rename(partial, file);
  } catch {
    // An unwritable cache only costs the next launch a probe.
  }
}

/**
 * Whether BeginFrame capture works in `browser`: undefined when it does, else why not. A
 * binary whose probe passed before (see {@linkcode probeKey}) is not probed again.
 */
async function checkBeginFrame(browser: Browser): Promise<string | undefined> {
  const key = await probeKey(browser);
  if (key !== undefined && (await probeRecords()).includes(key)) return undefined;
  const reason = await probeBeginFrame(browser);
  if (reason === undefined && key !== undefined) await recordProbe(key);
  return reason;
}

/**
 * Launches the browser for the preferred capture path. `VID_CAPTURE` (`beginframe` or
 * `screenshot`) overrides `auto`.
 *
 * @example
 * ```ts no_run
 * const browser = await launchForCapture("auto");
 * console.log(browser.mode); // "beginframe" where chromium-headless-shell is installed
 * ```
 */
export async function launchForCapture(
  preference: CapturePreference = "auto",
  onFallback: (reason: string) => void = () => {},
  scale = 1,
  networkFlags: readonly string[] = [],
): Promise<Browser> {
  const env = process.env.VID_CAPTURE;
  const wanted = preference === "auto" && (env === "beginframe" || env === "screenshot")
    ? env
    : preference;
  if (wanted === "screenshot") {
    return await launchBrowser({ mode: "screenshot", scale, networkFlags });
  }
  let reason: string | undefined;
  // A loaded machine sometimes starves the first frames of a new browser; one relaunch
  // before falling back keeps the fast path.
  for (let attempt = 1; attempt <= 2; attempt++) {
    let browser: Browser | undefined;
    try {
      browser = await launchBrowser({ mode: "beginframe", scale, networkFlags });
      reason = await checkBeginFrame(browser);
      if (reason === undefined) return browser;
    } catch (error) {
      if (wanted === "beginframe" && attempt === 2) throw error;
      reason = (error as Error).message.split("\n")[0];
    }
    await browser?.close();
  }
  if (wanted === "beginframe") {
    throw new CaptureUnavailableError(reason ?? "the BeginFrame probe failed");
  }
  onFallback(reason ?? "the BeginFrame probe failed");
  return await launchBrowser({ mode: "screenshot", scale, networkFlags });
}

/**
 * Browsers kept warm between renders by a process that renders many (the preview studio,
 * `vid server`): a render takes one from the pool instead of launching (and probing) a new
 * browser, and gives it back when done. One browser per capture preference and scale is
 * kept; a browser that died meanwhile is dropped and a new one launched.
 */
export interface BrowserPool {
  /** A live browser for the preference and scale: a kept one, else a newly launched one. */
  acquire(
    preference: CapturePreference,
    onFallback: (reason: string) => void,
    scale: number,
  ): Promise<Browser>;
  /** Gives a browser back after a render (its windows closed); closes it when one is kept. */
  release(browser: Browser): Promise<void>;
  /** Closes every kept browser. */
  close(): Promise<void>;
}

/** Whether a browser's process still runs and its CDP connection is open. */
function alive(browser: Browser): boolean {
  return browser.process.exitCode === null && browser.process.signalCode === null &&
    !browser.connection.closed;
}

/**
 * Creates an empty pool of warm capture browsers.
 *
 * @example
 * ```ts no_run
 * const pool = createBrowserPool();
 * const browser = await pool.acquire("auto", () => {}, 1);
 * await pool.release(browser); // kept for the next render
 * await pool.close();
 * ```
 */
export function createBrowserPool(): BrowserPool {
  const kept = new Map<string, Browser>();
  const keys = new WeakMap<Browser, string>();
  let closed = false;
  return {
    async acquire(preference, onFallback, scale): Promise<Browser> {
      const key = `${preference}@${scale}`;
      const warm = kept.get(key);
      kept.delete(key);
      if (warm && alive(warm)) return warm;
      await warm?.close();
      const browser = await launchForCapture(preference, onFallback, scale);
      keys.set(browser, key);
      return browser;
    },
    async release(browser: Browser): Promise<void> {
      const key = keys.get(browser);
      if (closed || key === undefined || kept.has(key) || !alive(browser)) {
        await browser.close();
        return;
      }
      // Windows a failed or cancelled render left open are closed; the launch's blank
      // window stays. A window that closes meanwhile (a chunk's page still closing) is no
      // reason to drop the browser; an unreachable browser is.
      try {
        const { targetInfos } = await browser.connection.send<
          { targetInfos: { targetId: string; type: string; url: string }[] }
        >("Target.getTargets");
        await Promise.all(
          targetInfos.filter((t) => t.type === "page" && t.url !== "about:blank").map((t) =>
            browser.connection.send("Target.closeTarget", { targetId: t.targetId })
              .catch(() => undefined)
          ),
        );
      } catch {
        await browser.close();
        return;
      }
      kept.set(key, browser);
    },
    async close(): Promise<void> {
      closed = true;
      const browsers = [...kept.values()];
      kept.clear();
      await Promise.allSettled(browsers.map((b) => b.close()));
    },
  };
}
