/**
 * Chooses the capture path at start-up: BeginFrame on chromium-headless-shell when a
 * probe shows it returns images, otherwise screenshots on Chromium.
 *
 * @module
 */

import process from "node:process";
import { type Browser, type CaptureMode, closePage, launchBrowser, openPage } from "./browser.ts";

/** `auto` probes BeginFrame first; the other two force a path. */
export type CapturePreference = "auto" | CaptureMode;

/** The accepted capture preferences. */
export const CAPTURE_PREFERENCES: readonly CapturePreference[] = [
  "auto",
  "beginframe",
  "screenshot",
];

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Whether BeginFrame capture returns an image in `browser`: undefined when it does, else
 * why not. The first frame of a new window often has no surface to read back yet, so a
 * few frames are tried.
 */
export async function probeBeginFrame(browser: Browser): Promise<string | undefined> {
  try {
    const page = await openPage(browser, { width: 64, height: 64, initScript: "" });
    try {
      for (let frame = 1; frame <= 5; frame++) {
        const result = await withTimeout(
          page.send<{ screenshotData?: string }>("HeadlessExperimental.beginFrame", {
            frameTimeTicks: frame * 33,
            interval: 33,
            screenshot: { format: "jpeg", quality: 50 },
          }),
          10000,
          "BeginFrame probe",
        );
        if (typeof result.screenshotData === "string" && result.screenshotData.length > 0) {
          return undefined;
        }
      }
      return "BeginFrame returned no image in 5 frames";
    } finally {
      await closePage(page);
    }
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * Launches the browser for the preferred capture path. `VID_CAPTURE` (`beginframe` or
 * `screenshot`) overrides `auto`.
 *
 * @example
 * ```ts
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
      reason = await probeBeginFrame(browser);
      if (reason === undefined) return browser;
    } catch (error) {
      if (wanted === "beginframe" && attempt === 2) throw error;
      reason = (error as Error).message.split("\n")[0];
    }
    await browser?.close();
  }
  if (wanted === "beginframe") {
    throw new Error(
      `BeginFrame capture does not work with this chromium-headless-shell: ${reason}`,
    );
  }
  onFallback(reason ?? "the BeginFrame probe failed");
  return await launchBrowser({ mode: "screenshot", scale, networkFlags });
}
