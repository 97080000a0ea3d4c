/**
 * The studio's script, run in the browser on the page of `studio_page.ts`. This module holds
 * the studio's state (composition, values, the frame wanted and the frame shown, playing)
 * and drives the stage, the transport and the composition's (re)loading and live updates;
 * the other concerns are modules beside it, given what they read of that state: the
 * variables panel (`variables_form.ts`), the render dialog (`render_dialog.ts`), the sound
 * (`sound.ts`), the timeline (`timeline.ts`), page errors (`page_error.ts`), timecode and
 * the URL's state. `main.ts` runs it; `scripts/build_page_code.ts` bundles them all into
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

import type { ErrorRecord, Info, Live, Problem, RenderStatus, VidApi } from "./types.ts";
import { formatTimecode, parseTimecode } from "./timecode.ts";
import { changedValues, readUrlState, urlSearch } from "./url_state.ts";
import { errorLocation, pageErrorMessage, projectFile, sourceExcerpt } from "./page_error.ts";
import { createStudioSound } from "./sound.ts";
import { wireRenderDialog } from "./render_dialog.ts";
import { createVariablesPanel, keptValues } from "./variables_form.ts";
import { byId, studioElements } from "./dom.ts";
import { createCheckPanel } from "./check_panel.ts";
import { listenForUpdates } from "./live_updates.ts";
import { wireTransport } from "./transport.ts";
import { clockFrame, clockSeconds, framePlan, startClock } from "./playback.ts";
import { settleFrame } from "../../runtime/frame_drawing.ts";
import { loadStagePage } from "./stage_pages.ts";
import { drawStudioTimeline, moveStudioPlayhead } from "./timeline_view.ts";
import {
  compositionTitle,
  createStudioState,
  lastFrame as lastFrameOf,
  stageKey as stageKeyOf,
  stageScale,
  studioFrame,
} from "./studio_state.ts";

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
  const {
    stageArea,
    stageBox,
    stage,
    stageMessage,
    stageErrorText,
    stageExcerpt,
    playButton,
    scrubber,
    frameInput,
    timecodeInput,
    frameReadout,
    timeReadout,
    zoomSelect,
    timeline,
    compositionSelect,
    title,
    banner,
    form,
    resetButton,
    copyButton,
    variablesJson,
    copyStatus,
  } = elements;

  // --- state, first from the URL ---

  const fromUrl = readUrlState(location.search);
  const state = createStudioState(fromUrl);

  const lastFrame = (): number => lastFrameOf(state);
  const clampFrame = (f: number): number => studioFrame(state, f);
  const stageKey = (): string => stageKeyOf(state);

  /** Writes the shareable state into the URL once things settle (not on every frame). */
  const saveUrl = (): void => {
    if (state.urlTimer !== undefined) clearTimeout(state.urlTimer);
    state.urlTimer = setTimeout(() => {
      state.urlTimer = undefined;
      if (!state.info) return;
      const search = urlSearch({
        entry: state.entry,
        frame: state.shown >= 0 ? state.shown : clampFrame(state.wanted),
        values: changedValues(state.values, state.info.defaults),
        muted: sound.muted,
        volume: sound.volume,
      }, state.defaultEntry);
      if (search !== location.search) history.replaceState(null, "", search);
    }, 250);
  };

  // --- timecode ---

  const timecodeOf = (frame: number): string => formatTimecode(frame, state.info?.fps ?? 30);
  const parseTime = (text: string): number | undefined =>
    parseTimecode(text, state.info?.fps ?? 30);

  // --- stage ---

  /** A script URL as the project names it: relative to the composition's folder. */
  const projectFileOf = (url: string): string =>
    projectFile(url, location.href, state.info?.entry ?? "");

  const showStageError = (message: string): void => {
    stageErrorText.textContent = message;
    stageExcerpt.textContent = "";
    stageMessage.hidden = message === "";
    for (const name of ["kind", "file", "line", "column"]) delete stageMessage.dataset[name];
  };

  /** Shows what the page threw: where, the first stack frames and the offending line. */
  const showPageError = async (record: ErrorRecord, fallbackFrame: number): Promise<void> => {
    const top = errorLocation(record);
    showStageError(pageErrorMessage(record, fallbackFrame, projectFileOf));
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
  };

  const loadFrame = (key: string, hidden: boolean): Promise<Live> =>
    loadStagePage(stage, state, key, hidden);

  /** Loads the next standby page in the background, unless one for these values exists. */
  const prepareStandby = (): void => {
    if (!state.info || state.standbyLoading) return;
    const key = stageKey();
    if (state.standby?.key === key) return;
    state.standby?.iframe.remove();
    state.standby = undefined;
    state.standbyLoadingKey = key;
    state.standbyLoading = (async () => {
      try {
        const page = await loadFrame(key, true);
        if (stageKey() === key && !state.standby) state.standby = page;
        else page.iframe.remove();
      } catch {
        // The stage reports load failures when it loads a page itself.
      } finally {
        state.standbyLoading = undefined;
      }
    })();
  };

  const seekIn = async (target: Live, frame: number): Promise<void> => {
    const win = target.iframe.contentWindow as (Window & { __vid: VidApi }) | null;
    target.frame = frame;
    if (!win) throw new Error("the composition frame went away");
    await win.__vid.seek(frame);
  };

  const presented = async (target: Live): Promise<void> => {
    const win = target.iframe.contentWindow as (Window & { __vid: VidApi }) | null;
    await win?.__vid.untilVideosPresented();
  };

  /**
   * Paused, the stage shows each video's frame painted in the page, as screenshot renders
   * do; playing, the videos show their own picture again (`settleFrame`, shared with the
   * player).
   */
  const paintVideos = async (target: Live): Promise<void> => {
    const win = target.iframe.contentWindow as (Window & { __vid: VidApi }) | null;
    if (win) await settleFrame(win.__vid, !state.playing);
  };

  const swap = (next: Live): void => {
    const previous = state.live;
    state.live = next;
    next.iframe.classList.remove("standby");
    next.iframe.setAttribute("aria-hidden", "false");
    next.iframe.style.zIndex = "1";
    previous?.iframe.remove();
    state.generation++;
    stage.dataset.generation = String(state.generation);
    sound.update(next.media);
  };

  const showReadouts = (): void => {
    if (!state.info) return;
    const f = Math.max(0, state.shown);
    frameReadout.textContent = `frame ${f} / ${lastFrame()}`;
    timeReadout.textContent = `${(f / state.info.fps).toFixed(3)} s / ${
      state.info.duration.toFixed(3)
    } s`;
    if (document.activeElement !== frameInput) {
      frameInput.value = String(f);
      frameInput.removeAttribute("aria-invalid");
    }
    if (document.activeElement !== timecodeInput) {
      timecodeInput.value = timecodeOf(f);
      timecodeInput.removeAttribute("aria-invalid");
    }
    movePlayhead(f);
  };

  /** The frame now on stage: every readout says this one. */
  const showFrame = (frame: number): void => {
    state.shown = frame;
    stage.dataset.frame = String(frame);
    if (document.activeElement !== scrubber) scrubber.value = String(frame);
    showReadouts();
    if (!state.playing) saveUrl();
  };

  const pump = async (): Promise<void> => {
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
        const key = stageKey();
        const target = clampFrame(state.wanted);
        const plan = framePlan(state.live, key, target);
        if (plan === "none") break;
        const began = performance.now();
        stage.dataset.state = "seeking";
        if (plan === "fresh" || !state.live) {
          // A standby for these values on its way is sooner than a load from scratch.
          if (state.standbyLoading && state.standbyLoadingKey === key && !state.standby) {
            await state.standbyLoading;
          }
          let next: Live;
          let path: string;
          if (state.standby && state.standby.key === key) {
            next = state.standby;
            state.standby = undefined;
            path = "standby";
          } else {
            next = await loadFrame(key, false);
            path = "load";
          }
          current = next;
          try {
            await seekIn(next, target);
          } finally {
            swap(next);
          }
          stage.dataset.path = path;
        } else {
          current = state.live;
          await seekIn(state.live, target);
          stage.dataset.path = "seek";
        }
        // 'seeked' does not mean the compositor has the video's new frame: the stage is
        // ready once it shows it (a swapped-in page is visible only now, so it waits here).
        await presented(current);
        stage.dataset.stepMs = String(Math.round(performance.now() - began));
        showFrame(target);
      }
      if (state.live) await paintVideos(state.live);
      showStageError("");
      stage.dataset.state = "ready";
      if (!state.playing) {
        prepareStandby();
        drawTimeline();
      }
    } catch (error) {
      // The page is left as it threw; any later change loads a fresh one.
      if (state.live) state.live.key = "failed";
      stage.dataset.state = "error";
      const win = current?.iframe.contentWindow as (Window & { __vid?: VidApi }) | null;
      const record = win?.__vid?.errors?.()[0];
      if (record) void showPageError(record, clampFrame(state.wanted));
      else showStageError((error as Error).message.replace(/^Error: /, ""));
      // No repaint: the page threw, and it is loaded again only on the next change.
      setPlaying(false, false);
    } finally {
      state.busy = false;
      if (state.pumpAgain) {
        state.pumpAgain = false;
        void pump();
      }
    }
  };

  const go = (frame: number): void => {
    state.wanted = clampFrame(frame);
    void pump();
  };

  const layout = (): void => {
    if (!state.info) return;
    const area = stageArea.getBoundingClientRect();
    const { width, height } = state.info;
    const scale = stageScale(area.width, area.height, width, height, zoomSelect.value);
    stage.style.width = `${state.info.width}px`;
    stage.style.height = `${state.info.height}px`;
    stage.style.transform = `scale(${scale})`;
    stageBox.style.width = `${state.info.width * scale}px`;
    stageBox.style.height = `${state.info.height * scale}px`;
    stage.dataset.scale = String(scale);
  };

  // --- sound ---

  /** Seconds on the composition timeline that the playhead is at right now. */
  const playheadSeconds = (): number =>
    state.info ? clockSeconds(state.clock, performance.now(), state.info.fps) : 0;

  const sound = createStudioSound(elements, byId<HTMLDivElement>("sounds"), {
    playing: () => state.playing,
    playheadSeconds,
    changed: saveUrl,
  }, fromUrl);

  // --- timeline: media clips, CSS/WAAPI animations and GSAP timelines ---

  const drawTimeline = (): void => drawStudioTimeline(timeline, state, sound.sourceDuration);
  const movePlayhead = (frame: number): void => moveStudioPlayhead(timeline, state.info, frame);

  timeline.addEventListener("click", (event) => {
    const track = (event.target as Element).closest<HTMLElement>(".track, #ruler");
    if (!track || !state.info) return;
    const box = track.getBoundingClientRect();
    setPlaying(false);
    go(Math.floor(((event.clientX - box.left) / box.width) * state.info.frames));
  });

  // --- playback ---

  const tick = (now: number): void => {
    if (!state.playing || !state.info) return;
    const f = clampFrame(clockFrame(state.clock, now, state.info.fps));
    go(f);
    sound.sync();
    if (f >= lastFrame()) {
      setPlaying(false);
      return;
    }
    requestAnimationFrame(tick);
  };

  /** Plays or pauses; pausing paints the frame playback stopped on (unless `repaint` is false). */
  const setPlaying = (on: boolean, repaint = true): void => {
    if (on && !state.info) return;
    const was = state.playing;
    state.playing = on;
    playButton.textContent = on ? "Pause" : "Play";
    playButton.setAttribute("aria-pressed", String(on));
    if (!on) {
      sound.pause();
      if (state.info) saveUrl();
      // The frame playback stopped on gets its painted video frames.
      if (was && repaint) void pump();
      return;
    }
    state.clock = startClock(state.wanted, state.info!.frames, performance.now());
    go(state.clock.fromFrame);
    sound.sync(true);
    requestAnimationFrame(tick);
  };

  playButton.addEventListener("click", () => setPlaying(!state.playing));
  scrubber.addEventListener("input", () => {
    setPlaying(false);
    go(Number(scrubber.value));
  });
  zoomSelect.addEventListener("change", layout);
  new ResizeObserver(() => {
    layout();
    movePlayhead(Math.max(0, state.shown));
  }).observe(stageArea);

  wireTransport(elements, {
    lastFrame,
    wanted: () => state.wanted,
    setPlaying: (on) => setPlaying(on),
    playing: () => state.playing,
    go,
    parseTime,
    timecodeOf,
    showReadouts,
  });

  // --- variables panel ---

  const panel = createVariablesPanel(elements, {
    values: () => state.values,
    changed: () => changed(),
  });

  const check = async (): Promise<void> => {
    const seq = ++state.checkSeq;
    try {
      const response = await fetch("/__preview/variables", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ values: state.values, entry: state.entry }),
      });
      const body = await response.json() as {
        ok: boolean;
        problems?: Problem[];
        variablesJson?: string;
        error?: { message: string };
      };
      if (seq !== state.checkSeq) return;
      if (!body.ok) {
        banner.textContent = body.error?.message ?? "cannot check the variables";
        banner.hidden = false;
        return;
      }
      panel.showProblems(body.problems ?? []);
      variablesJson.textContent = body.variablesJson ?? "{}";
      form.dataset.checked = String(seq);
    } catch (error) {
      if (seq === state.checkSeq) {
        copyStatus.textContent = `check failed: ${(error as Error).message}`;
      }
    }
  };

  /** Debounced: a burst of typing checks once and reloads the stage once. */
  const changed = (): void => {
    form.dataset.checked = "";
    if (state.changeTimer !== undefined) clearTimeout(state.changeTimer);
    state.changeTimer = setTimeout(() => {
      state.changeTimer = undefined;
      void check();
      void pump();
      saveUrl();
    }, 150);
  };

  resetButton.addEventListener("click", () => {
    if (!state.info) return;
    state.values = structuredClone(state.info.defaults);
    for (const d of state.info.declarations) panel.writeField(d, state.values[d.id]);
    changed();
  });

  copyButton.addEventListener("click", async () => {
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
  });

  // --- composition (re)loading ---

  /** Drops the stage pages (another composition, or its declarations changed shape). */
  const dropPages = (): void => {
    state.live?.iframe.remove();
    state.standby?.iframe.remove();
    state.live = undefined;
    state.standby = undefined;
    state.shown = -1;
  };

  const listCompositions = async (): Promise<void> => {
    try {
      const body = await (await fetch("/__preview/compositions")).json() as {
        ok: boolean;
        entry: string;
        compositions: { entry: string; id: string | null; error?: string }[];
      };
      if (!body.ok) return;
      state.defaultEntry = body.entry;
      if (state.entry === "") state.entry = state.defaultEntry;
      compositionSelect.replaceChildren(...body.compositions.map((c) => {
        const option = document.createElement("option");
        option.value = c.entry;
        option.textContent = c.id ? `${c.id} (${c.entry})` : `${c.entry} (cannot be read)`;
        if (c.error) option.title = c.error;
        return option;
      }));
      compositionSelect.value = state.entry;
      compositionSelect.hidden = body.compositions.length < 2;
    } catch {
      // The switcher stays hidden; the stage still works.
    }
  };

  compositionSelect.addEventListener("change", () => {
    state.entry = compositionSelect.value;
    setPlaying(false);
    dropPages();
    state.info = undefined;
    state.values = {};
    state.wanted = 0;
    state.reloads++;
    void refresh();
  });

  const refresh = async (): Promise<void> => {
    let body: { ok: boolean; composition?: Info; error?: { message: string } };
    try {
      body = await (await fetch(
        `/__preview/composition${state.entry ? `?entry=${encodeURIComponent(state.entry)}` : ""}`,
      )).json();
    } catch (error) {
      banner.textContent = `cannot reach vid preview: ${(error as Error).message}`;
      banner.hidden = false;
      return;
    }
    if (!body.ok || !body.composition) {
      // Mid-edit: say what is wrong and keep showing the last good stage.
      banner.textContent = body.error?.message ?? "the composition cannot be read";
      banner.hidden = false;
      return;
    }
    banner.hidden = true;
    const next = body.composition;
    const before = state.info;
    const sameDeclarations = before !== undefined &&
      JSON.stringify(before.declarations) === JSON.stringify(next.declarations) &&
      JSON.stringify(before.dropped) === JSON.stringify(next.dropped);
    const kept = keptValues(
      next.declarations,
      next.defaults,
      before?.declarations,
      state.values,
      state.urlValues,
    );
    state.urlValues = undefined;
    state.info = next;
    state.values = kept;
    document.title = `${next.id} · vid preview`;
    title.textContent = compositionTitle(next);
    scrubber.max = String(next.frames - 1);
    frameInput.max = String(next.frames - 1);
    if (!sameDeclarations) panel.build(next);
    if (before) state.reloads++;
    layout();
    showReadouts();
    go(state.wanted);
    void check();
    void checkPanel.refresh();
  };

  /** The Check panel: the static and media parts of vid check, again on every reload. */
  const checkPanel = createCheckPanel(elements, () => state.entry);

  // --- render dialog ---

  const { showRender } = wireRenderDialog(elements, {
    info: () => state.info,
    values: () => state.values,
    entry: () => state.entry,
    playheadFrame: () => clampFrame(Number(scrubber.value)),
    lastFrame,
  });

  // --- live updates ---

  listenForUpdates(elements, {
    changed: () => {
      void listCompositions();
      void refresh();
    },
    render: showRender,
  });

  sound.applyVolume();
  void (async () => {
    await listCompositions();
    await refresh();
    try {
      showRender(await (await fetch("/__preview/render")).json() as RenderStatus);
    } catch {
      // shown by the next render event
    }
  })();
}
