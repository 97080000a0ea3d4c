/**
 * Pages of a launched browser: open a window with the vid runtime installed, navigate it
 * under a host-owned deadline, close it without waiting on a hung renderer.
 *
 * @module
 */

import { type CdpConnection, CdpSession } from "./cdp.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";
import { within, withTimeout } from "../util/async.ts";

/**
 * What {@linkcode openPage} needs of a launched browser: its DevTools connection and how it
 * captures frames. A `Browser` of `browser.ts` is one; named here so that pages need nothing
 * of the launch (browser.ts imports this module, not the other way round).
 */
export interface PageHost {
  /** `"beginframe"` opens the window under BeginFrame control (browser.ts's `CaptureMode`). */
  readonly mode: "beginframe" | "screenshot";
  readonly connection: CdpConnection;
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
 * Opens a new window with the vid runtime installed before any page script.
 * The page is blank; navigate with {@linkcode navigate}.
 */
export async function openPage(browser: PageHost, options: PageOptions): Promise<CdpSession> {
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

/**
 * How long closing a window may take before the caller goes on without waiting. A healthy
 * browser closes one in milliseconds; only a hung renderer makes it wait, and then every
 * millisecond here delays the kill of that browser (a deleted render's must be gone within
 * 5 s), while the close already sent still happens if the browser lives on.
 */
const CLOSE_PAGE_WAIT_MS = 1000;

/**
 * Closes a page's window. Never waits more than a few seconds: a browser busy with a hung
 * renderer may not answer, and whoever owns it kills it anyway.
 */
export async function closePage(page: CdpSession): Promise<void> {
  page.dispose();
  await within(
    page.connection.send("Target.closeTarget", { targetId: page.targetId }).catch(() => {}),
    CLOSE_PAGE_WAIT_MS,
  );
}
