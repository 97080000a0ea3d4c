/**
 * The studio's script, run in the browser on the page of `studio_page.ts`. This module
 * creates the studio's state (`studio_state.ts`: composition, values, the frame wanted and
 * the frame shown, playing) and wires the page's events to the modules beside it that act
 * on it: the stage and playback (`stage.ts`), the composition's (re)loading and its
 * variables' check (`compositions.ts`), the variables panel (`variables_form.ts`), the
 * render dialog (`render_dialog.ts`), the sound (`sound.ts`), the timeline (`timeline.ts`),
 * page errors (`page_error.ts`), timecode and the URL's state. `main.ts` runs it; `scripts/build_page_code.ts` bundles them all into
 * `studio_bundle.ts`, which the studio page inlines.
 *
 * The stage: the composition runs in an iframe at its native size (CSS-scaled to fit)
 * with the vid runtime the preview server injected, and every frame shown is reached
 * with `window.__vid.seek(n)`, exactly as capture reaches it. The readouts, the typed
 * frame and timecode and the URL name the frame actually on stage, not the one asked for.
 *
 * The runtime only seeks forward (a page's timers and scripts cannot be rewound), so an
 * earlier frame needs a fresh page. The studio keeps one ready: a standby page, loaded
 * hidden with the same variables and not yet seeked, so a step back only seeks it from
 * frame 0 and swaps it in (no page load on the way), then loads the next standby in the
 * background. New variable values load a fresh page beneath the current one, seek it,
 * then swap: the picture never flashes blank.
 *
 * Play seeks frame by frame on the studio's own requestAnimationFrame at real-time pace,
 * so a paused frame is the frame the video has; the composition's sound (its `<audio>`
 * and unmuted `<video>` sources, as `__vid.media()` lists them) plays from elements of
 * the studio aligned to the same clock, silent while paused or scrubbing. A page with
 * `<video>` elements reports their sources to the preview server, which prepares the
 * renderer's frame-exact proxies; the page loads once more with them.
 *
 * A page that throws shows where: the file (relative to the project), line, column, the
 * first stack frames and the offending source line, from the runtime's `__vid.errors()`.
 *
 * State worth sharing (composition, frame, changed variables, mute and volume) lives in
 * the URL, so a reload or a shared link opens the same view.
 *
 * @module
 */

import type { RenderStatus } from "./types.ts";
import { parseTimecode } from "./timecode.ts";
import { readUrlState } from "./url_state.ts";
import { createStudioSound } from "./sound.ts";
import { wireRenderDialog } from "./render_dialog.ts";
import { createVariablesPanel } from "./variables_form.ts";
import { byId, type StudioElements, studioElements } from "./dom.ts";
import { createCheckPanel } from "./check_panel.ts";
import { listenForUpdates } from "./live_updates.ts";
import { wireTransport } from "./transport.ts";
import { moveStudioPlayhead } from "./timeline_view.ts";
import {
  createStudioState,
  lastFrame,
  studioFrame,
  switchEntry,
  timelineClickFrame,
} from "./studio_state.ts";
import {
  go,
  layout,
  playheadSeconds,
  saveUrl,
  setPlaying,
  showReadouts,
  timecodeOf,
} from "./stage.ts";
import {
  listCompositions,
  type PanelledStudio,
  refresh,
  resetValues,
  valuesChanged,
} from "./compositions.ts";

/**
 * Wires up the studio page. Runs in the browser, once (`main.ts`).
 *
 * @example
 * ```ts no_run
 * // On the studio page, after its markup:
 * studioClient();
 * ```
 */
export function studioClient(): void {
  const elements = studioElements();
  const fromUrl = readUrlState(location.search);
  const state = createStudioState(fromUrl);
  // The callbacks below run on later events, once `studio` exists.
  const sound = createStudioSound(elements, byId<HTMLDivElement>("sounds"), {
    playing: () => state.playing,
    playheadSeconds: () => playheadSeconds(state),
    changed: () => saveUrl(studio),
  }, fromUrl);
  const panel = createVariablesPanel(elements, {
    values: () => state.values,
    changed: () => valuesChanged(studio),
  });
  /** The Check panel: the static and media parts of vid check, again on every reload. */
  const checkPanel = createCheckPanel(elements, () => state.entry);
  const studio: PanelledStudio = { elements, state, sound, panel, checkPanel };

  wireStage(studio);
  wireVariables(studio);
  const { showRender } = wireRenderDialog(elements, {
    info: () => state.info,
    values: () => state.values,
    entry: () => state.entry,
    playheadFrame: () => studioFrame(state, Number(elements.scrubber.value)),
    lastFrame: () => lastFrame(state),
  });
  listenForUpdates(elements, {
    changed: () => {
      void listCompositions(studio);
      void refresh(studio);
    },
    render: showRender,
  });

  sound.applyVolume();
  void (async () => {
    await listCompositions(studio);
    await refresh(studio);
    try {
      showRender(await (await fetch("/__preview/render")).json() as RenderStatus);
    } catch {
      // shown by the next render event
    }
  })();
}

/** The timeline, the play button, the scrubber, zoom, the transport and the switcher. */
function wireStage(studio: PanelledStudio): void {
  const { state, elements } = studio;
  const { timeline, playButton, scrubber, zoomSelect, stageArea, compositionSelect } = elements;
  timeline.addEventListener("click", (event) => {
    const track = (event.target as Element).closest<HTMLElement>(".track, #ruler");
    if (!track || !state.info) return;
    const box = track.getBoundingClientRect();
    setPlaying(studio, false);
    go(studio, timelineClickFrame(event.clientX, box.left, box.width, state.info.frames));
  });
  playButton.addEventListener("click", () => setPlaying(studio, !state.playing));
  scrubber.addEventListener("input", () => {
    setPlaying(studio, false);
    go(studio, Number(scrubber.value));
  });
  zoomSelect.addEventListener("change", () => layout(studio));
  new ResizeObserver(() => {
    layout(studio);
    moveStudioPlayhead(timeline, state.info, Math.max(0, state.shown));
  }).observe(stageArea);
  wireTransport(elements, {
    lastFrame: () => lastFrame(state),
    wanted: () => state.wanted,
    setPlaying: (on) => setPlaying(studio, on),
    playing: () => state.playing,
    go: (frame) => go(studio, frame),
    parseTime: (text) => parseTimecode(text, state.info?.fps ?? 30),
    timecodeOf: (frame) => timecodeOf(state, frame),
    showReadouts: () => showReadouts(studio),
  });
  compositionSelect.addEventListener("change", () => {
    state.entry = compositionSelect.value;
    setPlaying(studio, false);
    switchEntry(state, state.entry);
    void refresh(studio);
  });
}

/** The variables panel's Reset and Copy buttons. */
function wireVariables(studio: PanelledStudio): void {
  const { resetButton, copyButton } = studio.elements;
  resetButton.addEventListener("click", () => resetValues(studio));
  copyButton.addEventListener("click", () => void copyVariables(studio.elements));
}

/** Copies the `--variables` JSON, or selects it where the clipboard is refused. */
async function copyVariables(
  elements: Pick<StudioElements, "variablesJson" | "copyStatus">,
): Promise<void> {
  const { variablesJson, copyStatus } = elements;
  const text = variablesJson.textContent ?? "{}";
  try {
    await navigator.clipboard.writeText(text);
    copyStatus.textContent = "copied";
  } catch {
    const range = document.createRange();
    range.selectNodeContents(variablesJson);
    getSelection()?.removeAllRanges();
    getSelection()?.addRange(range);
    copyStatus.textContent = "selected: press Ctrl+C to copy";
  }
}
