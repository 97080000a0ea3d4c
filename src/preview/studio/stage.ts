/**
 * The studio's stage and playback: shows the frame the playhead wants (a seek of the live
 * page, the standby page swapped in, or a fresh page), keeps the readouts, the scrubber and
 * the URL on the frame actually shown, says what a page threw, lays the stage out, and plays
 * in real time. Each function takes the {@linkcode Studio}: the state object of
 * `studio_state.ts`, the page's elements and the sound; `client.ts` creates it and wires the
 * page's events to these functions.
 *
 * @module
 */

import type { StudioElements } from "./dom.ts";
import type { ErrorRecord, Live, VidApi } from "./types.ts";
import type { StudioSound } from "./sound.ts";
import { formatTimecode } from "./timecode.ts";
import { urlSearch } from "./url_state.ts";
import { errorLocation, pageErrorMessage, projectFile, sourceExcerpt } from "./page_error.ts";
import { clockFrame, clockSeconds, framePlan, startClock } from "./playback.ts";
import { settleFrame } from "../../runtime/frame_drawing.ts";
import { loadStagePage } from "./stage_pages.ts";
import { drawStudioTimeline, moveStudioPlayhead } from "./timeline_view.ts";
import {
  lastFrame,
  readouts,
  stageKey,
  stageScale,
  studioFrame,
  type StudioState,
  studioUrlState,
  takeStandby,
} from "./studio_state.ts";

/** One studio page: its state, its elements and its sound. */
export interface Studio {
  readonly elements: StudioElements;
  readonly state: StudioState;
  readonly sound: Pick<
    StudioSound,
    "muted" | "volume" | "update" | "sync" | "pause" | "sourceDuration"
  >;
}

/** The stage page's `window.__vid`, while the page is there. */
function vidOf(target: Live | undefined): VidApi | undefined {
  const win = target?.iframe.contentWindow as (Window & { __vid?: VidApi }) | null | undefined;
  return win?.__vid;
}

/** Writes the shareable state into the URL once things settle (not on every frame). */
export function saveUrl(studio: Studio): void {
  const { state, sound } = studio;
  if (state.urlTimer !== undefined) clearTimeout(state.urlTimer);
  state.urlTimer = setTimeout(() => {
    state.urlTimer = undefined;
    const url = studioUrlState(state, sound);
    if (!url) return;
    const search = urlSearch(url, state.defaultEntry);
    if (search !== location.search) history.replaceState(null, "", search);
  }, 250);
}

/** A frame's timecode at the composition's rate. */
export function timecodeOf(state: StudioState, frame: number): string {
  return formatTimecode(frame, state.info?.fps ?? 30);
}

/** Shows `message` over the stage ("" hides it). */
export function showStageError(elements: StudioElements, message: string): void {
  const { stageMessage, stageErrorText, stageExcerpt } = elements;
  stageErrorText.textContent = message;
  stageExcerpt.textContent = "";
  stageMessage.hidden = message === "";
  for (const name of ["kind", "file", "line", "column"]) delete stageMessage.dataset[name];
}

/** Shows what the page threw: where, the first stack frames and the offending line. */
async function showPageError(
  studio: Studio,
  record: ErrorRecord,
  fallbackFrame: number,
): Promise<void> {
  const { stageMessage, stageExcerpt } = studio.elements;
  /** A script URL as the project names it: relative to the composition's folder. */
  const projectFileOf = (url: string): string =>
    projectFile(url, location.href, studio.state.info?.entry ?? "");
  const top = errorLocation(record);
  showStageError(studio.elements, pageErrorMessage(record, fallbackFrame, projectFileOf));
  stageMessage.dataset.kind = record.phase;
  if (!top) return;
  stageMessage.dataset.file = projectFileOf(top.url);
  stageMessage.dataset.line = String(top.line);
  stageMessage.dataset.column = String(top.column);
  try {
    const source = await (await fetch(top.url)).text();
    if (stageMessage.dataset.file === projectFileOf(top.url)) {
      stageExcerpt.textContent = sourceExcerpt(source, top.line, top.column);
    }
  } catch {
    // The message alone still says where.
  }
}

/** Loads the next standby page in the background, unless one for these values exists. */
function prepareStandby(studio: Studio): void {
  const { state } = studio;
  if (!state.info || state.standbyLoading) return;
  const key = stageKey(state);
  if (state.standby?.key === key) return;
  state.standby?.iframe.remove();
  state.standby = undefined;
  state.standbyLoadingKey = key;
  state.standbyLoading = (async () => {
    try {
      const page = await loadStagePage(studio.elements.stage, state, key, true);
      if (stageKey(state) === key && !state.standby) state.standby = page;
      else page.iframe.remove();
    } catch {
      // The stage reports load failures when it loads a page itself.
    } finally {
      state.standbyLoading = undefined;
    }
  })();
}

async function seekIn(target: Live, frame: number): Promise<void> {
  const vid = vidOf(target);
  target.frame = frame;
  if (!vid) throw new Error("the composition frame went away");
  await vid.seek(frame);
}

/** Puts `next` on stage in place of the live page. */
function swap(studio: Studio, next: Live): void {
  const { state, elements: { stage } } = studio;
  const previous = state.live;
  state.live = next;
  next.iframe.classList.remove("standby");
  next.iframe.setAttribute("aria-hidden", "false");
  next.iframe.style.zIndex = "1";
  previous?.iframe.remove();
  state.generation++;
  stage.dataset.generation = String(state.generation);
  studio.sound.update(next.media);
}

/** The readouts, the fields not being typed in and the playhead, at the frame on stage. */
export function showReadouts(studio: Studio): void {
  const { state, elements } = studio;
  const { frameReadout, timeReadout, frameInput, timecodeInput, timeline } = elements;
  if (!state.info) return;
  const f = Math.max(0, state.shown);
  const text = readouts(state.info, f);
  frameReadout.textContent = text.frame;
  timeReadout.textContent = text.time;
  if (document.activeElement !== frameInput) {
    frameInput.value = String(f);
    frameInput.removeAttribute("aria-invalid");
  }
  if (document.activeElement !== timecodeInput) {
    timecodeInput.value = timecodeOf(state, f);
    timecodeInput.removeAttribute("aria-invalid");
  }
  moveStudioPlayhead(timeline, state.info, f);
}

/** The frame now on stage: every readout says this one. */
function showFrame(studio: Studio, frame: number): void {
  const { state, elements: { stage, scrubber } } = studio;
  state.shown = frame;
  stage.dataset.frame = String(frame);
  if (document.activeElement !== scrubber) scrubber.value = String(frame);
  showReadouts(studio);
  if (!state.playing) saveUrl(studio);
}

/** The media clips, animations and GSAP timelines of the live page, drawn on the timeline. */
export function drawTimeline(studio: Studio): void {
  drawStudioTimeline(studio.elements.timeline, studio.state, studio.sound.sourceDuration);
}

/**
 * A fresh page for `key`: the standby page when it was loaded for these values (waiting for
 * one on its way, sooner than a load from scratch), else one loaded now.
 */
async function freshPage(studio: Studio, key: string): Promise<{ page: Live; path: string }> {
  const { state } = studio;
  if (state.standbyLoading && state.standbyLoadingKey === key && !state.standby) {
    await state.standbyLoading;
  }
  const standby = takeStandby(state, key);
  if (standby) return { page: standby, path: "standby" };
  return { page: await loadStagePage(studio.elements.stage, state, key, false), path: "load" };
}

/**
 * Shows the frame wanted, again until the frame and the values stop changing; a call while
 * the stage is busy makes that loop look once more. A page that throws stays as it threw,
 * with what it threw over the stage, and playback stops.
 */
export async function pump(studio: Studio): Promise<void> {
  const { state, elements: { stage } } = studio;
  if (state.busy) {
    // Asked while the stage is busy: the frame or values may have changed after the loop
    // below last looked (while painting the videos, say), so it runs again when done.
    state.pumpAgain = true;
    return;
  }
  if (!state.info) return;
  state.busy = true;
  let current: Live | undefined;
  try {
    while (state.info) {
      const key = stageKey(state);
      const target = studioFrame(state, state.wanted);
      const plan = framePlan(state.live, key, target);
      if (plan === "none") break;
      const began = performance.now();
      stage.dataset.state = "seeking";
      if (plan === "fresh" || !state.live) {
        const { page, path } = await freshPage(studio, key);
        current = page;
        try {
          await seekIn(page, target);
        } finally {
          swap(studio, page);
        }
        stage.dataset.path = path;
      } else {
        current = state.live;
        await seekIn(state.live, target);
        stage.dataset.path = "seek";
      }
      // 'seeked' does not mean the compositor has the video's new frame: the stage is
      // ready once it shows it (a swapped-in page is visible only now, so it waits here).
      await vidOf(current)?.untilVideosPresented();
      stage.dataset.stepMs = String(Math.round(performance.now() - began));
      showFrame(studio, target);
    }
    // Paused, the stage shows each video's frame painted in the page, as screenshot renders
    // do; playing, the videos show their own picture again (`settleFrame`, shared with the
    // player).
    const vid = vidOf(state.live);
    if (vid) await settleFrame(vid, !state.playing);
    showStageError(studio.elements, "");
    stage.dataset.state = "ready";
    if (!state.playing) {
      prepareStandby(studio);
      drawTimeline(studio);
    }
  } catch (error) {
    // The page is left as it threw; any later change loads a fresh one.
    if (state.live) state.live.key = "failed";
    stage.dataset.state = "error";
    const record = vidOf(current)?.errors?.()[0];
    if (record) void showPageError(studio, record, studioFrame(state, state.wanted));
    else showStageError(studio.elements, (error as Error).message.replace(/^Error: /, ""));
    // No repaint: the page threw, and it is loaded again only on the next change.
    setPlaying(studio, false, false);
  } finally {
    state.busy = false;
    if (state.pumpAgain) {
      state.pumpAgain = false;
      void pump(studio);
    }
  }
}

/** Moves the playhead to `frame` (clamped) and shows it. */
export function go(studio: Studio, frame: number): void {
  studio.state.wanted = studioFrame(studio.state, frame);
  void pump(studio);
}

/** Scales the stage to the zoom chosen (or to fit its area). */
export function layout(studio: Studio): void {
  const { state, elements: { stageArea, stage, stageBox, zoomSelect } } = studio;
  if (!state.info) return;
  const area = stageArea.getBoundingClientRect();
  const { width, height } = state.info;
  const scale = stageScale(area.width, area.height, width, height, zoomSelect.value);
  stage.style.width = `${width}px`;
  stage.style.height = `${height}px`;
  stage.style.transform = `scale(${scale})`;
  stageBox.style.width = `${width * scale}px`;
  stageBox.style.height = `${height * scale}px`;
  stage.dataset.scale = String(scale);
}

/** Seconds on the composition timeline that the playhead is at right now. */
export function playheadSeconds(state: StudioState): number {
  return state.info ? clockSeconds(state.clock, performance.now(), state.info.fps) : 0;
}

/** One animation frame of playback: the frame the clock is at, and the sound with it. */
function tick(studio: Studio, now: number): void {
  const { state } = studio;
  if (!state.playing || !state.info) return;
  const f = studioFrame(state, clockFrame(state.clock, now, state.info.fps));
  go(studio, f);
  studio.sound.sync();
  if (f >= lastFrame(state)) {
    setPlaying(studio, false);
    return;
  }
  requestAnimationFrame((next) => tick(studio, next));
}

/** Plays or pauses; pausing paints the frame playback stopped on (unless `repaint` is false). */
export function setPlaying(studio: Studio, on: boolean, repaint = true): void {
  const { state, elements: { playButton } } = studio;
  if (on && !state.info) return;
  const was = state.playing;
  state.playing = on;
  playButton.textContent = on ? "Pause" : "Play";
  playButton.setAttribute("aria-pressed", String(on));
  if (!on) {
    studio.sound.pause();
    if (state.info) saveUrl(studio);
    // The frame playback stopped on gets its painted video frames.
    if (was && repaint) void pump(studio);
    return;
  }
  state.clock = startClock(state.wanted, state.info!.frames, performance.now());
  go(studio, state.clock.fromFrame);
  studio.sound.sync(true);
  requestAnimationFrame((next) => tick(studio, next));
}
