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

import type {
  ErrorRecord,
  Info,
  Live,
  Problem,
  RenderStatus,
  TimelineItem,
  VidApi,
} from "./types.ts";
import { formatTimecode, parseTimecode } from "./timecode.ts";
import { changedValues, readUrlState, urlSearch } from "./url_state.ts";
import { errorLocation, pageErrorMessage, projectFile, sourceExcerpt } from "./page_error.ts";
import { timelineItems, timelineTracks, timeRuler } from "./timeline.ts";
import { createStudioSound } from "./sound.ts";
import { wireRenderDialog } from "./render_dialog.ts";
import { createVariablesPanel, keptValues } from "./variables_form.ts";
import { byId, studioElements } from "./dom.ts";
import { createCheckPanel } from "./check_panel.ts";
import { listenForUpdates } from "./live_updates.ts";
import { wireTransport } from "./transport.ts";

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
  /** The composition's entry file; "" until the server said which one it started with. */
  let entry = fromUrl.entry;
  let defaultEntry = "";
  /** Variables from the URL, applied once the declarations are known. */
  let urlValues = fromUrl.values;
  let info: Info | undefined;
  let values: Record<string, unknown> = {};
  let reloads = 0;
  let generation = 0;
  let live: Live | undefined;
  let standby: Live | undefined;
  let standbyLoading: Promise<void> | undefined;
  /** The stage key the standby page being loaded is for. */
  let standbyLoadingKey = "";
  let wanted = fromUrl.frame;
  let shown = -1;
  let busy = false;
  let pumpAgain = false;
  let playing = false;
  let playFrom = 0;
  let playStart = 0;
  let checkSeq = 0;
  let changeTimer: ReturnType<typeof setTimeout> | undefined;
  let urlTimer: ReturnType<typeof setTimeout> | undefined;

  const lastFrame = (): number => (info ? info.frames - 1 : 0);
  const clampFrame = (f: number): number => Math.max(0, Math.min(lastFrame(), Math.round(f)));
  const stageKey = (): string => JSON.stringify([entry, reloads, info?.fps, values]);

  /** Writes the shareable state into the URL once things settle (not on every frame). */
  const saveUrl = (): void => {
    if (urlTimer !== undefined) clearTimeout(urlTimer);
    urlTimer = setTimeout(() => {
      urlTimer = undefined;
      if (!info) return;
      const search = urlSearch({
        entry,
        frame: shown >= 0 ? shown : clampFrame(wanted),
        values: changedValues(values, info.defaults),
        muted: sound.muted,
        volume: sound.volume,
      }, defaultEntry);
      if (search !== location.search) history.replaceState(null, "", search);
    }, 250);
  };

  // --- timecode ---

  const timecodeOf = (frame: number): string => formatTimecode(frame, info?.fps ?? 30);
  const parseTime = (text: string): number | undefined => parseTimecode(text, info?.fps ?? 30);

  // --- stage ---

  /** A script URL as the project names it: relative to the composition's folder. */
  const projectFileOf = (url: string): string => projectFile(url, location.href, info?.entry ?? "");

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

  const loadPage = (url: string, hidden: boolean): Promise<HTMLIFrameElement> => {
    const current = info!;
    return new Promise<HTMLIFrameElement>((resolve, reject) => {
      const iframe = document.createElement("iframe");
      iframe.className = hidden ? "composition standby" : "composition";
      iframe.title = `composition ${current.id}`;
      iframe.setAttribute("scrolling", "no");
      iframe.setAttribute("aria-hidden", String(hidden));
      iframe.width = String(current.width);
      iframe.height = String(current.height);
      iframe.style.zIndex = "0";
      const timer = setTimeout(() => {
        iframe.remove();
        reject(new Error(`the composition did not load within 30 s (${url})`));
      }, 30000);
      iframe.addEventListener("load", () => {
        clearTimeout(timer);
        const win = iframe.contentWindow as (Window & { __vid?: VidApi }) | null;
        if (!win?.__vid) {
          iframe.remove();
          reject(new Error("the composition page has no window.__vid (did it load?)"));
          return;
        }
        resolve(iframe);
      }, { once: true });
      iframe.src = url;
      stage.append(iframe);
    });
  };

  /**
   * Loads a stage page, then has the preview server prepare the frame-exact proxies of
   * its videos (what a render does before capturing); when the page was served an older
   * set of proxies than its videos need, it loads once more with the new set.
   */
  const loadFrame = async (key: string, hidden: boolean): Promise<Live> => {
    const current = info!;
    const url = `/${encodeURI(current.entry)}?fps=${current.fps}&r=${reloads}&vars=${
      encodeURIComponent(JSON.stringify(values))
    }`;
    for (let attempt = 0;; attempt++) {
      const iframe = await loadPage(url, hidden);
      const win = iframe.contentWindow as Window & { __vid: VidApi };
      const all = win.__vid.media();
      // The studio plays the sound itself; a page's autoplay (a hidden standby page's
      // above all) must stay silent until the runtime's first seek takes over.
      for (const el of Array.from(iframe.contentDocument?.querySelectorAll("audio, video") ?? [])) {
        const media = el as HTMLMediaElement;
        media.autoplay = false;
        media.muted = true;
        media.pause();
      }
      const media = all.filter((m) => m.kind === "video");
      if (media.length === 0) return { iframe, key, frame: -1, media: all };
      const served = iframe.contentDocument?.querySelector<HTMLScriptElement>(
        "script[data-vid-runtime]",
      )?.dataset.vidProxies;
      if (!hidden) stage.dataset.state = "preparing";
      let body: { ok: boolean; version?: number; error?: { message: string } };
      try {
        body = await (await fetch("/__preview/media", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ media }),
        })).json();
      } catch (error) {
        iframe.remove();
        throw new Error(`cannot reach vid preview: ${(error as Error).message}`);
      }
      if (!hidden) stage.dataset.state = "seeking";
      if (!body.ok) {
        iframe.remove();
        throw new Error(body.error?.message ?? "the videos cannot be prepared");
      }
      if (String(body.version) === served || attempt >= 2) {
        return { iframe, key, frame: -1, media: all };
      }
      iframe.remove();
    }
  };

  /** Loads the next standby page in the background, unless one for these values exists. */
  const prepareStandby = (): void => {
    if (!info || standbyLoading) return;
    const key = stageKey();
    if (standby?.key === key) return;
    standby?.iframe.remove();
    standby = undefined;
    standbyLoadingKey = key;
    standbyLoading = (async () => {
      try {
        const page = await loadFrame(key, true);
        if (stageKey() === key && !standby) standby = page;
        else page.iframe.remove();
      } catch {
        // The stage reports load failures when it loads a page itself.
      } finally {
        standbyLoading = undefined;
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
   * do (video_paint.ts: a browser's own picture of a paused video can stay a seek behind).
   * Playing, the videos show their own picture again.
   */
  const paintVideos = async (target: Live): Promise<void> => {
    const win = target.iframe.contentWindow as (Window & { __vid: VidApi }) | null;
    if (playing) win?.__vid.clearVideoFrames();
    else await win?.__vid.paintVideoFrames();
  };

  const swap = (next: Live): void => {
    const previous = live;
    live = next;
    next.iframe.classList.remove("standby");
    next.iframe.setAttribute("aria-hidden", "false");
    next.iframe.style.zIndex = "1";
    previous?.iframe.remove();
    generation++;
    stage.dataset.generation = String(generation);
    sound.update(next.media);
  };

  const showReadouts = (): void => {
    if (!info) return;
    const f = Math.max(0, shown);
    frameReadout.textContent = `frame ${f} / ${lastFrame()}`;
    timeReadout.textContent = `${(f / info.fps).toFixed(3)} s / ${info.duration.toFixed(3)} s`;
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
    shown = frame;
    stage.dataset.frame = String(frame);
    if (document.activeElement !== scrubber) scrubber.value = String(frame);
    showReadouts();
    if (!playing) saveUrl();
  };

  const pump = async (): Promise<void> => {
    if (busy) {
      // Asked while the stage is busy: the frame or values may have changed after the loop
      // below last looked (while painting the videos, say), so it runs again when done.
      pumpAgain = true;
      return;
    }
    if (!info) return;
    busy = true;
    let current: Live | undefined;
    try {
      while (info) {
        const key = stageKey();
        const target = clampFrame(wanted);
        if (live && live.key === key && live.frame === target) break;
        const began = performance.now();
        stage.dataset.state = "seeking";
        if (!live || live.key !== key || live.frame > target) {
          // A standby for these values on its way is sooner than a load from scratch.
          if (standbyLoading && standbyLoadingKey === key && !standby) await standbyLoading;
          let next: Live;
          let path: string;
          if (standby && standby.key === key) {
            next = standby;
            standby = undefined;
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
          current = live;
          await seekIn(live, target);
          stage.dataset.path = "seek";
        }
        // 'seeked' does not mean the compositor has the video's new frame: the stage is
        // ready once it shows it (a swapped-in page is visible only now, so it waits here).
        await presented(current);
        stage.dataset.stepMs = String(Math.round(performance.now() - began));
        showFrame(target);
      }
      if (live) await paintVideos(live);
      showStageError("");
      stage.dataset.state = "ready";
      if (!playing) {
        prepareStandby();
        drawTimeline();
      }
    } catch (error) {
      // The page is left as it threw; any later change loads a fresh one.
      if (live) live.key = "failed";
      stage.dataset.state = "error";
      const win = current?.iframe.contentWindow as (Window & { __vid?: VidApi }) | null;
      const record = win?.__vid?.errors?.()[0];
      if (record) void showPageError(record, clampFrame(wanted));
      else showStageError((error as Error).message.replace(/^Error: /, ""));
      // No repaint: the page threw, and it is loaded again only on the next change.
      setPlaying(false, false);
    } finally {
      busy = false;
      if (pumpAgain) {
        pumpAgain = false;
        void pump();
      }
    }
  };

  const go = (frame: number): void => {
    wanted = clampFrame(frame);
    void pump();
  };

  const layout = (): void => {
    if (!info) return;
    const area = stageArea.getBoundingClientRect();
    const fit = Math.min((area.width - 32) / info.width, (area.height - 32) / info.height);
    const scale = zoomSelect.value === "fit" ? Math.max(0.01, fit) : Number(zoomSelect.value);
    stage.style.width = `${info.width}px`;
    stage.style.height = `${info.height}px`;
    stage.style.transform = `scale(${scale})`;
    stageBox.style.width = `${info.width * scale}px`;
    stageBox.style.height = `${info.height * scale}px`;
    stage.dataset.scale = String(scale);
  };

  // --- sound ---

  /** Seconds on the composition timeline that the playhead is at right now. */
  const playheadSeconds = (): number =>
    info ? playFrom / info.fps + (performance.now() - playStart) / 1000 : 0;

  const sound = createStudioSound(elements, byId<HTMLDivElement>("sounds"), {
    playing: () => playing,
    playheadSeconds,
    changed: saveUrl,
  }, fromUrl);

  // --- timeline: media clips, CSS/WAAPI animations and GSAP timelines ---

  /** What the live page knows of its timed elements, in composition seconds. */
  const liveTimelineItems = (): TimelineItem[] => {
    const win = live?.iframe.contentWindow as
      | (Window & { __vid?: VidApi; __timelines?: unknown })
      | null;
    const doc = live?.iframe.contentDocument;
    if (!info || !win?.__vid || !doc) return [];
    return timelineItems({
      win,
      doc,
      duration: info.duration,
      fps: info.fps,
      shown,
      media: live?.media ?? [],
      sourceDuration: sound.sourceDuration,
    });
  };

  const drawTimeline = (): void => {
    if (!info) return;
    const span = info.duration || 1;
    const rows = timelineTracks(liveTimelineItems(), span);
    const playhead = document.createElement("div");
    playhead.id = "playhead";
    timeline.replaceChildren(
      ...(rows.length > 0 ? [timeRuler(span)] : []),
      ...rows,
      ...(rows.length > 0 ? [playhead] : []),
    );
    movePlayhead(Math.max(0, shown));
  };

  const movePlayhead = (frame: number): void => {
    const playhead = document.getElementById("playhead");
    const track = timeline.querySelector<HTMLElement>(".track");
    if (!playhead || !track || !info) return;
    playhead.style.left = `${track.offsetLeft - 120 + (track.clientWidth * frame) / info.frames}px`;
  };

  timeline.addEventListener("click", (event) => {
    const track = (event.target as Element).closest<HTMLElement>(".track, #ruler");
    if (!track || !info) return;
    const box = track.getBoundingClientRect();
    setPlaying(false);
    go(Math.floor(((event.clientX - box.left) / box.width) * info.frames));
  });

  // --- playback ---

  const tick = (now: number): void => {
    if (!playing || !info) return;
    const f = clampFrame(playFrom + Math.floor(((now - playStart) * info.fps) / 1000));
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
    if (on && !info) return;
    const was = playing;
    playing = on;
    playButton.textContent = on ? "Pause" : "Play";
    playButton.setAttribute("aria-pressed", String(on));
    if (!on) {
      sound.pause();
      if (info) saveUrl();
      // The frame playback stopped on gets its painted video frames.
      if (was && repaint) void pump();
      return;
    }
    if (clampFrame(wanted) >= lastFrame()) go(0);
    playFrom = clampFrame(wanted);
    playStart = performance.now();
    sound.sync(true);
    requestAnimationFrame(tick);
  };

  playButton.addEventListener("click", () => setPlaying(!playing));
  scrubber.addEventListener("input", () => {
    setPlaying(false);
    go(Number(scrubber.value));
  });
  zoomSelect.addEventListener("change", layout);
  new ResizeObserver(() => {
    layout();
    movePlayhead(Math.max(0, shown));
  }).observe(stageArea);

  wireTransport(elements, {
    lastFrame,
    wanted: () => wanted,
    setPlaying: (on) => setPlaying(on),
    playing: () => playing,
    go,
    parseTime,
    timecodeOf,
    showReadouts,
  });

  // --- variables panel ---

  const panel = createVariablesPanel(elements, {
    values: () => values,
    changed: () => changed(),
  });

  const check = async (): Promise<void> => {
    const seq = ++checkSeq;
    try {
      const response = await fetch("/__preview/variables", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ values, entry }),
      });
      const body = await response.json() as {
        ok: boolean;
        problems?: Problem[];
        variablesJson?: string;
        error?: { message: string };
      };
      if (seq !== checkSeq) return;
      if (!body.ok) {
        banner.textContent = body.error?.message ?? "cannot check the variables";
        banner.hidden = false;
        return;
      }
      panel.showProblems(body.problems ?? []);
      variablesJson.textContent = body.variablesJson ?? "{}";
      form.dataset.checked = String(seq);
    } catch (error) {
      if (seq === checkSeq) copyStatus.textContent = `check failed: ${(error as Error).message}`;
    }
  };

  /** Debounced: a burst of typing checks once and reloads the stage once. */
  const changed = (): void => {
    form.dataset.checked = "";
    if (changeTimer !== undefined) clearTimeout(changeTimer);
    changeTimer = setTimeout(() => {
      changeTimer = undefined;
      void check();
      void pump();
      saveUrl();
    }, 150);
  };

  resetButton.addEventListener("click", () => {
    if (!info) return;
    values = structuredClone(info.defaults);
    for (const d of info.declarations) panel.writeField(d, values[d.id]);
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
    live?.iframe.remove();
    standby?.iframe.remove();
    live = undefined;
    standby = undefined;
    shown = -1;
  };

  const listCompositions = async (): Promise<void> => {
    try {
      const body = await (await fetch("/__preview/compositions")).json() as {
        ok: boolean;
        entry: string;
        compositions: { entry: string; id: string | null; error?: string }[];
      };
      if (!body.ok) return;
      defaultEntry = body.entry;
      if (entry === "") entry = defaultEntry;
      compositionSelect.replaceChildren(...body.compositions.map((c) => {
        const option = document.createElement("option");
        option.value = c.entry;
        option.textContent = c.id ? `${c.id} (${c.entry})` : `${c.entry} (cannot be read)`;
        if (c.error) option.title = c.error;
        return option;
      }));
      compositionSelect.value = entry;
      compositionSelect.hidden = body.compositions.length < 2;
    } catch {
      // The switcher stays hidden; the stage still works.
    }
  };

  compositionSelect.addEventListener("change", () => {
    entry = compositionSelect.value;
    setPlaying(false);
    dropPages();
    info = undefined;
    values = {};
    wanted = 0;
    reloads++;
    void refresh();
  });

  const refresh = async (): Promise<void> => {
    let body: { ok: boolean; composition?: Info; error?: { message: string } };
    try {
      body = await (await fetch(
        `/__preview/composition${entry ? `?entry=${encodeURIComponent(entry)}` : ""}`,
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
    const before = info;
    const sameDeclarations = before !== undefined &&
      JSON.stringify(before.declarations) === JSON.stringify(next.declarations) &&
      JSON.stringify(before.dropped) === JSON.stringify(next.dropped);
    const kept = keptValues(
      next.declarations,
      next.defaults,
      before?.declarations,
      values,
      urlValues,
    );
    urlValues = undefined;
    info = next;
    values = kept;
    document.title = `${next.id} · vid preview`;
    title.textContent = `${next.id} · ${next.width}×${next.height}${
      next.aspectRatio ? ` (${next.aspectRatio})` : ""
    } · ${next.duration} s · ${Number(next.fps.toFixed(3))} fps · ${next.frames} frames`;
    scrubber.max = String(next.frames - 1);
    frameInput.max = String(next.frames - 1);
    if (!sameDeclarations) panel.build(next);
    if (before) reloads++;
    layout();
    showReadouts();
    go(wanted);
    void check();
    void checkPanel.refresh();
  };

  /** The Check panel: the static and media parts of vid check, again on every reload. */
  const checkPanel = createCheckPanel(elements, () => entry);

  // --- render dialog ---

  const { showRender } = wireRenderDialog(elements, {
    info: () => info,
    values: () => values,
    entry: () => entry,
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
