/**
 * The studio's render dialog: the Render button opens it filled from the composition (its
 * formats, qualities, scales, frame rate and range; a still at the playhead's frame), "start"
 * posts the render, Cancel cancels it, and the render's progress and result show beneath.
 * The body of the request (`POST /__preview/render`), the range at another frame rate and
 * how sizes read are pure functions, unit-tested.
 *
 * @module
 */

import { sleep } from "../../util/async.ts";
import type { StudioElements } from "./dom.ts";
import type { Info, RenderStatus } from "./types.ts";

/** What the dialog shows for a choice whose value is not self-explaining. */
export const OPTION_LABELS: Readonly<Record<string, string>> = {
  png: "PNG sequence",
  still: "Still (PNG)",
};

/**
 * A file size as the dialog shows it: MB with one decimal from 1 MiB, else whole KB (at
 * least 1).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(formatBytes(3 * 1048576 + 200000), "3.2 MB");
 * assert.equal(formatBytes(10), "1 KB");
 * ```
 */
export function formatBytes(n: number): string {
  return n >= 1048576
    ? `${(n / 1048576).toFixed(1)} MB`
    : `${Math.max(1, Math.round(n / 1024))} KB`;
}

/**
 * The last frame of a `duration`-second composition rendered at `fps` (at least frame 0).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(lastFrameAt(2, 30), 59);
 * assert.equal(lastFrameAt(0.01, 24), 0);
 * ```
 */
export function lastFrameAt(duration: number, fps: number): number {
  return Math.max(1, Math.round(duration * fps + 1e-9)) - 1;
}

/** The dialog's fields, as typed. */
export interface RenderDialogFields {
  /** The changed variable values. */
  values: Record<string, unknown>;
  /** The composition's entry file. */
  entry: string;
  /** `mp4`, `png`, `still`, … */
  format: string;
  /** The quality preset. */
  quality: string;
  /** The scale, `"1"` for none. */
  scale: string;
  /** The frame rate field. */
  fps: string;
  /** The first frame field. */
  from: string;
  /** The last frame field. */
  to: string;
  /** The last frame of the whole composition at the chosen rate (the "to" field's max). */
  toMax: string;
  /** The output name, "" for the default. */
  name: string;
}

/**
 * The render request's body: only what differs from the composition's own (scale 1, its
 * frame rate `compositionFps`, the whole range) is sent; a still renders the one frame in
 * "from".
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const fields = { values: {}, entry: "index.html", format: "mp4", quality: "standard",
 *   scale: "1", fps: "30", from: "0", to: "59", toMax: "59", name: " " };
 * assert.deepEqual(renderRequestBody(fields, 30), {
 *   values: {}, entry: "index.html", format: "mp4", quality: "standard",
 * });
 * assert.deepEqual(renderRequestBody({ ...fields, format: "still", from: "12" }, 30), {
 *   values: {}, entry: "index.html", format: "still", quality: "standard", from: 12, to: 12,
 * });
 * ```
 */
export function renderRequestBody(
  fields: RenderDialogFields,
  compositionFps: number,
): Record<string, unknown> {
  const from = Number(fields.from);
  const to = Number(fields.to);
  return {
    values: fields.values,
    entry: fields.entry,
    format: fields.format,
    quality: fields.quality,
    ...(fields.scale !== "1" ? { scale: Number(fields.scale) } : {}),
    ...(fields.fps !== String(+compositionFps.toFixed(3)) ? { fps: Number(fields.fps) } : {}),
    ...(fields.format === "still"
      ? { from, to: from }
      : from !== 0 || to !== Number(fields.toMax)
      ? { from, to }
      : {}),
    ...(fields.name.trim() ? { name: fields.name.trim() } : {}),
  };
}

/** The render dialog's elements (`studio_page.ts`). */
export type RenderDialogElements = Pick<
  StudioElements,
  | "renderButton"
  | "renderCancel"
  | "renderProgress"
  | "renderStatus"
  | "renderMessage"
  | "renderDialog"
  | "renderFormat"
  | "renderQuality"
  | "renderScale"
  | "renderFps"
  | "renderFrom"
  | "renderTo"
  | "renderName"
>;

/** What the render dialog reads from the studio when it opens and starts a render. */
export interface RenderDialogHost {
  /** The composition on stage; undefined until it is read. */
  info(): Info | undefined;
  /** The variable values on stage. */
  values(): Record<string, unknown>;
  /** The composition's entry file. */
  entry(): string;
  /** The frame under the playhead (a still's default). */
  playheadFrame(): number;
  /** The composition's last frame. */
  lastFrame(): number;
}

/**
 * What the status line says of a render under way: frames done of all, the rate and the
 * time left once the frames are being drawn, else the stage it is at.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   renderingText({ stage: "rendering", framesDone: 3, framesTotal: 60, fps: 12.34,
 *     etaSeconds: 4.2 }),
 *   "Rendering: 3 / 60 frames (12.3 fps, about 5 s left)",
 * );
 * assert.equal(renderingText(undefined), "Rendering: starting");
 * ```
 */
export function renderingText(progress: RenderStatus["progress"]): string {
  const p = progress;
  const eta = p?.etaSeconds !== undefined && Number.isFinite(p.etaSeconds)
    ? `, about ${Math.max(0, Math.ceil(p.etaSeconds))} s left`
    : "";
  return p && p.stage === "rendering"
    ? `Rendering: ${p.framesDone} / ${p.framesTotal} frames (${p.fps.toFixed(1)} fps${eta})`
    : `Rendering: ${p?.stage ?? "starting"}`;
}

/**
 * Where a finished render downloads from: its path under `renders/`, each part encoded.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(renderHref("my clip/00000.png"), "/__preview/renders/my%20clip/00000.png");
 * ```
 */
export function renderHref(file: string): string {
  return `/__preview/renders/${file.split("/").map(encodeURIComponent).join("/")}`;
}

/**
 * The figures after a finished render's link: frames, size and time taken.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   renderDoneFigures({ state: "done", id: 1, frames: 60, bytes: 2048, elapsedMs: 1500 }),
 *   " (60 frames, 2 KB, 1.5 s)",
 * );
 * ```
 */
export function renderDoneFigures(status: RenderStatus): string {
  return ` (${status.frames} frames, ${formatBytes(status.bytes ?? 0)}, ${
    ((status.elapsedMs ?? 0) / 1000).toFixed(1)
  } s)`;
}

/** Shows a render's status (from the server's events) beneath the Render button. */
function showRenderStatus(elements: RenderDialogElements, status: RenderStatus): void {
  const { renderCancel, renderProgress, renderStatus } = elements;
  renderStatus.dataset.state = status.state;
  renderProgress.hidden = status.state === "idle";
  renderCancel.hidden = status.state !== "rendering";
  const p = status.progress;
  renderProgress.max = p?.framesTotal || 1;
  renderProgress.value = status.state === "done" ? renderProgress.max : p?.framesDone ?? 0;
  renderStatus.replaceChildren();
  if (status.state === "rendering") {
    renderStatus.textContent = renderingText(p);
    renderStatus.dataset.eta = p?.etaSeconds === undefined ? "" : String(p.etaSeconds);
  } else if (status.state === "done" && status.file) {
    // A PNG sequence is a folder: the link opens its first frame, the text names the folder.
    const file = status.file;
    const link = document.createElement("a");
    link.id = "render-link";
    link.href = renderHref(file);
    link.download = file.split("/").pop()!;
    link.textContent = `renders/${file}`;
    renderStatus.append(
      status.folder ? `Done: renders/${status.folder} (first frame: ` : "Done: ",
      link,
      status.folder ? ")" : "",
      renderDoneFigures(status),
    );
  } else if (status.state === "cancelled") {
    renderStatus.textContent = "Render cancelled; no file was written.";
  } else if (status.state === "failed") {
    renderStatus.textContent = `Render failed: ${status.error?.message ?? "unknown error"}`;
  }
}

/** Fills a choice with `options`, keeping what was chosen before when it is still offered. */
function fillOptions(select: HTMLSelectElement, options: readonly string[], chosen: string): void {
  const keep = select.value || chosen;
  select.replaceChildren(...options.map((value) => {
    const option = document.createElement("option");
    option.value = value;
    option.textContent = OPTION_LABELS[value] ?? value;
    return option;
  }));
  select.value = options.includes(keep) ? keep : chosen;
}

/** How long a click on Render waits for the composition on stage to be read. */
const INFO_WAIT_MS = 15_000;

/** The composition on stage, waiting up to `ms` while it is being read; undefined after that. */
async function readInfo(host: RenderDialogHost, ms: number): Promise<Info | undefined> {
  const until = Date.now() + ms;
  let info = host.info();
  while (!info && Date.now() < until) {
    await sleep(50);
    info = host.info();
  }
  return info;
}

/** Opens the dialog filled from the composition; resolves whether the check holds a render. */
function openDialog(
  elements: RenderDialogElements,
  host: RenderDialogHost,
  info: Info,
): Promise<() => boolean> {
  const { renderDialog, renderFormat, renderQuality, renderScale } = elements;
  const { renderFps, renderFrom, renderTo, renderName } = elements;
  fillOptions(renderFormat, info.render.formats, "mp4");
  fillOptions(renderQuality, info.render.qualities, "standard");
  fillOptions(renderScale, info.render.scales, "1");
  renderFps.value = String(+info.fps.toFixed(3));
  renderFrom.max = renderTo.max = String(host.lastFrame());
  renderTo.disabled = renderFormat.value === "still";
  renderFrom.value = renderFormat.value === "still" ? String(host.playheadFrame()) : "0";
  renderTo.value = String(host.lastFrame());
  renderName.placeholder = `${info.id}-<date>-<time>`;
  renderDialog.showModal();
  return gateOnCheck(renderDialog, host.entry());
}

/** The dialog's fields as typed, with the values and entry on stage. */
function dialogFields(elements: RenderDialogElements, host: RenderDialogHost): RenderDialogFields {
  const { renderFormat, renderQuality, renderScale, renderFps, renderFrom, renderTo } = elements;
  return {
    values: host.values(),
    entry: host.entry(),
    format: renderFormat.value,
    quality: renderQuality.value,
    scale: renderScale.value,
    fps: renderFps.value,
    from: renderFrom.value,
    to: renderTo.value,
    toMax: renderTo.max,
    name: elements.renderName.value,
  };
}

/** Posts the render (`POST /__preview/render`); a refusal shows under the Render button. */
async function startRender(elements: RenderDialogElements, host: RenderDialogHost): Promise<void> {
  const { renderMessage } = elements;
  renderMessage.textContent = "";
  renderMessage.dataset.kind = "";
  try {
    const response = await fetch("/__preview/render", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(
        renderRequestBody(dialogFields(elements, host), host.info()?.fps ?? 0),
      ),
    });
    const body = await response.json() as {
      ok: boolean;
      status?: RenderStatus;
      error?: { message: string };
    };
    if (body.ok && body.status) {
      showRenderStatus(elements, body.status);
      return;
    }
    renderMessage.textContent = body.error?.message ?? `render refused (${response.status})`;
    renderMessage.dataset.kind = response.status === 409 ? "busy" : "error";
  } catch (error) {
    renderMessage.textContent = `cannot reach vid preview: ${(error as Error).message}`;
    renderMessage.dataset.kind = "error";
  }
}

/** Stops the render under way (`POST /__preview/render/cancel`). */
async function cancelRender(renderCancel: HTMLButtonElement): Promise<void> {
  renderCancel.disabled = true;
  try {
    await fetch("/__preview/render/cancel", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
  } finally {
    renderCancel.disabled = false;
  }
}

/**
 * The frame range at a frame rate typed: a range left whole stays whole (the server counts
 * its frames), an edited one is kept as typed.
 */
function followFrameRate(elements: RenderDialogElements, info: Info | undefined): void {
  const { renderFps, renderFrom, renderTo } = elements;
  const fps = Number(renderFps.value);
  const whole = renderFrom.value === "0" && renderTo.value === renderTo.max;
  if (!info || !(fps >= 1 && fps <= 240) || !whole) return;
  const last = String(lastFrameAt(info.duration, fps));
  renderFrom.max = renderTo.max = last;
  renderTo.value = last;
}

/**
 * Wires the render dialog: the Render button opens it filled from the composition, closing
 * it with "start" posts the render, Cancel cancels one under way; returns how a render's
 * status (from the server's events) is shown.
 *
 * @example
 * ```ts no_run
 * import { studioElements } from "./dom.ts";
 *
 * const { showRender } = wireRenderDialog(studioElements(), {
 *   info: () => undefined,
 *   values: () => ({}),
 *   entry: () => "index.html",
 *   playheadFrame: () => 0,
 *   lastFrame: () => 0,
 * });
 * showRender({ state: "idle", id: 0 });
 * ```
 */
export function wireRenderDialog(
  elements: RenderDialogElements,
  host: RenderDialogHost,
): { showRender(status: RenderStatus): void } {
  const { renderButton, renderCancel, renderDialog, renderFormat, renderFps } = elements;
  const { renderFrom, renderTo } = elements;
  // Whether the check holds the render (an error listed and "render anyway" not ticked).
  let held: Promise<() => boolean> = Promise.resolve(() => false);

  renderFps.addEventListener("input", () => followFrameRate(elements, host.info()));
  // A still is one frame: the playhead's, which "from" then holds (and the user may change).
  renderFormat.addEventListener("change", () => {
    if (renderFormat.value === "still") {
      renderFrom.value = String(host.playheadFrame());
    }
    renderTo.disabled = renderFormat.value === "still";
  });
  // Clicked while another composition is being read: the dialog opens once it is read
  // (within INFO_WAIT_MS), not never.
  renderButton.addEventListener("click", async () => {
    const info = await readInfo(host, INFO_WAIT_MS);
    if (info && !elements.renderDialog.open) held = openDialog(elements, host, info);
  });
  renderDialog.addEventListener("close", async () => {
    const start = renderDialog.returnValue === "start";
    renderDialog.returnValue = "";
    if (!start) return;
    // Started before the check answered: the answer decides, and a held render reopens
    // the dialog with the errors named instead of starting.
    if ((await held)()) renderDialog.showModal();
    else void startRender(elements, host);
  });
  renderCancel.addEventListener("click", () => void cancelRender(renderCancel));
  return { showRender: (status) => showRenderStatus(elements, status) };
}

/**
 * Holds the dialog's Render button while the Check panel's check (`/__preview/check`, the
 * static and media parts every render runs first) lists an error: the dialog names how many
 * and offers an explicit "render anyway" box, as `--no-check` does on the command line.
 * The question is asked again each time the dialog opens, so the answer is the project's
 * as it is now; a check that cannot be asked does not hold the render. Resolves to a
 * question for the moment the render is started: is it held?
 */
async function gateOnCheck(dialog: HTMLDialogElement, entry: string): Promise<() => boolean> {
  const free = (): boolean => false;
  const start = dialog.querySelector<HTMLButtonElement>("#render-start");
  const actions = dialog.querySelector(".actions");
  if (!start || !actions) return free;
  let gate = dialog.querySelector<HTMLDivElement>("#render-check");
  if (!gate) {
    gate = document.createElement("div");
    gate.id = "render-check";
    gate.className = "row";
    actions.before(gate);
  }
  gate.hidden = true;
  gate.replaceChildren();
  start.disabled = false;
  let errors = 0;
  try {
    const body = await (await fetch(
      `/__preview/check${entry ? `?entry=${encodeURIComponent(entry)}` : ""}`,
    )).json() as { problems?: { severity: string }[] };
    errors = (body.problems ?? []).filter((p) => p.severity === "error").length;
  } catch {
    // the render itself still fails on what it cannot draw
  }
  if (errors === 0) return free;
  start.disabled = true;
  const box = document.createElement("input");
  box.type = "checkbox";
  box.id = "render-anyway";
  box.addEventListener("change", () => start.disabled = !box.checked);
  const label = document.createElement("label");
  label.htmlFor = box.id;
  label.textContent = "render anyway";
  gate.append(
    `The Check panel lists ${errors} error${errors === 1 ? "" : "s"}: the render would ` +
      "get them wrong. ",
    box,
    label,
  );
  gate.hidden = false;
  return () => !box.checked;
}
