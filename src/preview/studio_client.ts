/**
 * The studio's script, run in the browser on the page of `studio_page.ts`. It is
 * serialised with `Function.prototype.toString`, so {@linkcode studioClient} must not
 * reference anything outside its own body.
 *
 * The stage: the composition runs in an iframe at its native size (CSS-scaled to fit)
 * with the vid runtime the preview server injected, and every frame shown is reached
 * with `window.__vid.seek(n)`, exactly as capture reaches it. The runtime only seeks
 * forward, so showing an earlier frame, or new variable values, loads a fresh iframe
 * beneath the current one, seeks it, then swaps: the picture never flashes blank. Play
 * seeks frame by frame on the studio's own requestAnimationFrame at real-time pace, so a
 * paused frame is the frame the video has. A page with `<video>` elements reports their
 * sources to the preview server, which prepares the renderer's frame-exact proxies; the
 * page loads once more with them, so its videos show the frames a render shows.
 *
 * @module
 */

/**
 * Wires up the studio page. Runs in the browser.
 */
export function studioClient(): void {
  interface EnumOption {
    value: string;
    label: string;
  }
  interface Declaration {
    id: string;
    type: "string" | "number" | "color" | "boolean" | "enum";
    label: string;
    default?: string | number | boolean;
    options?: EnumOption[];
  }
  interface Info {
    id: string;
    entry: string;
    width: number;
    height: number;
    duration: number;
    aspectRatio: string | null;
    fps: number;
    frames: number;
    declarations: Declaration[];
    dropped: { index: number; id?: string; reason: string }[];
    defaults: Record<string, unknown>;
  }
  interface Problem {
    key: string;
    message: string;
  }
  interface RenderStatus {
    state: "idle" | "rendering" | "done" | "failed";
    id: number;
    progress?: { framesDone: number; framesTotal: number; stage: string; fps: number };
    file?: string;
    bytes?: number;
    frames?: number;
    elapsedMs?: number;
    error?: { message: string };
  }
  interface VidApi {
    seek(frame: number): Promise<void>;
    media(): { kind: "video" | "audio"; src: string }[];
  }
  interface Live {
    iframe: HTMLIFrameElement;
    key: string;
    frame: number;
  }

  const byId = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
  const stageArea = byId<HTMLDivElement>("stage-area");
  const stageBox = byId<HTMLDivElement>("stage-box");
  const stage = byId<HTMLDivElement>("stage");
  const stageMessage = byId<HTMLDivElement>("stage-message");
  const playButton = byId<HTMLButtonElement>("play");
  const scrubber = byId<HTMLInputElement>("scrubber");
  const frameReadout = byId<HTMLSpanElement>("frame-readout");
  const timeReadout = byId<HTMLSpanElement>("time-readout");
  const zoomSelect = byId<HTMLSelectElement>("zoom");
  const title = byId<HTMLSpanElement>("title");
  const banner = byId<HTMLDivElement>("banner");
  const connection = byId<HTMLSpanElement>("connection");
  const form = byId<HTMLFormElement>("variables");
  const droppedList = byId<HTMLUListElement>("dropped");
  const resetButton = byId<HTMLButtonElement>("reset");
  const copyButton = byId<HTMLButtonElement>("copy");
  const variablesJson = byId<HTMLElement>("variables-json");
  const copyStatus = byId<HTMLSpanElement>("copy-status");
  const renderButton = byId<HTMLButtonElement>("render");
  const renderProgress = byId<HTMLProgressElement>("render-progress");
  const renderStatus = byId<HTMLDivElement>("render-status");
  const renderMessage = byId<HTMLDivElement>("render-message");

  let info: Info | undefined;
  let values: Record<string, unknown> = {};
  let reloads = 0;
  let generation = 0;
  let live: Live | undefined;
  let wanted = 0;
  let busy = false;
  let playing = false;
  let playFrom = 0;
  let playStart = 0;
  let checkSeq = 0;
  let changeTimer: ReturnType<typeof setTimeout> | undefined;

  const lastFrame = (): number => (info ? info.frames - 1 : 0);
  const clampFrame = (f: number): number => Math.max(0, Math.min(lastFrame(), Math.round(f)));
  const stageKey = (): string => JSON.stringify([reloads, info?.fps, values]);

  // --- stage ---

  const showStageError = (message: string): void => {
    stageMessage.textContent = message;
    stageMessage.hidden = message === "";
  };

  const loadPage = (url: string): Promise<HTMLIFrameElement> => {
    const current = info!;
    return new Promise<HTMLIFrameElement>((resolve, reject) => {
      const iframe = document.createElement("iframe");
      iframe.className = "composition";
      iframe.title = `composition ${current.id}`;
      iframe.setAttribute("scrolling", "no");
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
   * Loads the stage page, then has the preview server prepare the frame-exact proxies of
   * its videos (what a render does before capturing); when the page was served an older
   * set of proxies than its videos need, it loads once more with the new set.
   */
  const loadFrame = async (key: string): Promise<Live> => {
    const current = info!;
    const url = `/${encodeURI(current.entry)}?fps=${current.fps}&r=${reloads}&vars=${
      encodeURIComponent(JSON.stringify(values))
    }`;
    for (let attempt = 0;; attempt++) {
      const iframe = await loadPage(url);
      const win = iframe.contentWindow as Window & { __vid: VidApi };
      const media = win.__vid.media().filter((m) => m.kind === "video");
      if (media.length === 0) return { iframe, key, frame: -1 };
      const served = iframe.contentDocument?.querySelector<HTMLScriptElement>(
        "script[data-vid-runtime]",
      )?.dataset.vidProxies;
      stage.dataset.state = "preparing";
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
      stage.dataset.state = "seeking";
      if (!body.ok) {
        iframe.remove();
        throw new Error(body.error?.message ?? "the videos cannot be prepared");
      }
      if (String(body.version) === served || attempt >= 2) return { iframe, key, frame: -1 };
      iframe.remove();
    }
  };

  const seekIn = async (target: Live, frame: number): Promise<void> => {
    const win = target.iframe.contentWindow as (Window & { __vid: VidApi }) | null;
    target.frame = frame;
    if (!win) throw new Error("the composition frame went away");
    await win.__vid.seek(frame);
  };

  const swap = (next: Live): void => {
    const previous = live;
    live = next;
    next.iframe.style.zIndex = "1";
    previous?.iframe.remove();
    generation++;
    stage.dataset.generation = String(generation);
  };

  const showFrame = (frame: number): void => {
    stage.dataset.frame = String(frame);
    if (document.activeElement !== scrubber) scrubber.value = String(frame);
  };

  const pump = async (): Promise<void> => {
    if (busy || !info) return;
    busy = true;
    try {
      while (info) {
        const key = stageKey();
        const target = clampFrame(wanted);
        if (live && live.key === key && live.frame === target) break;
        stage.dataset.state = "seeking";
        if (!live || live.key !== key || live.frame > target) {
          const next = await loadFrame(key);
          try {
            await seekIn(next, target);
          } finally {
            swap(next);
          }
        } else {
          await seekIn(live, target);
        }
        showFrame(target);
      }
      showStageError("");
      stage.dataset.state = "ready";
    } catch (error) {
      // The page is left as it threw; any later change loads a fresh one.
      if (live) live.key = "failed";
      showStageError((error as Error).message.replace(/^Error: /, ""));
      stage.dataset.state = "error";
    } finally {
      busy = false;
    }
  };

  const updateReadouts = (): void => {
    if (!info) return;
    const f = clampFrame(wanted);
    frameReadout.textContent = `frame ${f} / ${lastFrame()}`;
    timeReadout.textContent = `${(f / info.fps).toFixed(3)} s / ${info.duration.toFixed(3)} s`;
  };

  const go = (frame: number): void => {
    wanted = clampFrame(frame);
    updateReadouts();
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

  // --- playback ---

  const tick = (now: number): void => {
    if (!playing || !info) return;
    const f = clampFrame(playFrom + Math.floor(((now - playStart) * info.fps) / 1000));
    go(f);
    if (f >= lastFrame()) {
      setPlaying(false);
      return;
    }
    requestAnimationFrame(tick);
  };

  const setPlaying = (on: boolean): void => {
    if (on && !info) return;
    playing = on;
    playButton.textContent = on ? "Pause" : "Play";
    playButton.setAttribute("aria-pressed", String(on));
    if (!on) return;
    if (clampFrame(wanted) >= lastFrame()) go(0);
    playFrom = clampFrame(wanted);
    playStart = performance.now();
    requestAnimationFrame(tick);
  };

  playButton.addEventListener("click", () => setPlaying(!playing));
  scrubber.addEventListener("input", () => {
    setPlaying(false);
    go(Number(scrubber.value));
  });
  zoomSelect.addEventListener("change", layout);
  new ResizeObserver(layout).observe(stageArea);

  const typingIn = (target: EventTarget | null): boolean =>
    (target instanceof HTMLInputElement && target.type !== "range") ||
    target instanceof HTMLSelectElement || target instanceof HTMLTextAreaElement;

  document.addEventListener("keydown", (event) => {
    if (typingIn(event.target) || event.ctrlKey || event.metaKey || event.altKey) return;
    const step = event.shiftKey ? 10 : 1;
    if (event.key === " ") setPlaying(!playing);
    else if (event.key === "ArrowRight") {
      setPlaying(false);
      go(wanted + step);
    } else if (event.key === "ArrowLeft") {
      setPlaying(false);
      go(wanted - step);
    } else if (event.key === "Home") {
      setPlaying(false);
      go(0);
    } else if (event.key === "End") {
      setPlaying(false);
      go(lastFrame());
    } else return;
    event.preventDefault();
  });
  // A focused button would also "click" on the space key's release.
  document.addEventListener("keyup", (event) => {
    if (event.key === " " && !typingIn(event.target)) event.preventDefault();
  });

  // --- variables panel ---

  const fieldInput = (id: string): HTMLInputElement | HTMLSelectElement | null =>
    form.querySelector<HTMLInputElement | HTMLSelectElement>(`[data-var="${CSS.escape(id)}"]`);

  const hexOf = (colour: string): string | undefined => {
    if (/^#[0-9a-f]{6}$/i.test(colour)) return colour.toLowerCase();
    const probe = document.createElement("canvas").getContext("2d");
    if (!probe) return undefined;
    probe.fillStyle = "#010203";
    probe.fillStyle = colour;
    const parsed = String(probe.fillStyle);
    return /^#[0-9a-f]{6}$/i.test(parsed) && (parsed !== "#010203" || colour === "#010203")
      ? parsed
      : undefined;
  };

  const readField = (d: Declaration): unknown => {
    const input = fieldInput(d.id);
    if (!input) return values[d.id];
    if (d.type === "boolean") return (input as HTMLInputElement).checked;
    if (d.type === "number") {
      const text = input.value.trim();
      const n = Number(text);
      // What is not a number goes to the check as typed, and gets the CLI's message.
      return text !== "" && Number.isFinite(n) ? n : text;
    }
    return input.value;
  };

  const syncPicker = (d: Declaration, value: unknown): void => {
    const picker = form.querySelector<HTMLInputElement>(`[data-picker="${CSS.escape(d.id)}"]`);
    const hex = hexOf(String(value));
    if (picker && hex) picker.value = hex;
  };

  const writeField = (d: Declaration, value: unknown): void => {
    const input = fieldInput(d.id);
    if (!input) return;
    if (d.type === "boolean") (input as HTMLInputElement).checked = value === true;
    else input.value = value === undefined ? "" : String(value);
    if (d.type === "color") syncPicker(d, value);
  };

  const showProblems = (problems: Problem[]): void => {
    const byKey = new Map(problems.map((p) => [p.key, p.message]));
    for (const field of Array.from(form.querySelectorAll<HTMLElement>(".field"))) {
      const message = byKey.get(field.dataset.id ?? "") ?? "";
      field.classList.toggle("invalid", message !== "");
      const slot = field.querySelector<HTMLElement>(".problem");
      if (slot) slot.textContent = message;
      field.querySelector("[data-var]")?.setAttribute("aria-invalid", String(message !== ""));
    }
    const unplaced = problems.filter((p) => !fieldInput(p.key));
    renderMessage.dataset.kind = unplaced.length > 0 ? "error" : "";
    if (unplaced.length > 0) renderMessage.textContent = unplaced.map((p) => p.message).join("\n");
  };

  const check = async (): Promise<void> => {
    const seq = ++checkSeq;
    try {
      const response = await fetch("/__preview/variables", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ values }),
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
      showProblems(body.problems ?? []);
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
    }, 150);
  };

  const buildField = (d: Declaration): HTMLElement => {
    const field = document.createElement("div");
    field.className = "field";
    field.dataset.id = d.id;
    field.dataset.type = d.type;
    const inputId = `var-${d.id}`;
    const label = document.createElement("label");
    label.htmlFor = inputId;
    label.textContent = d.label;
    const meta = document.createElement("small");
    meta.textContent = `${d.id} · ${d.type}`;
    label.append(" ", meta);
    const row = document.createElement("div");
    row.className = "inputs";
    let input: HTMLInputElement | HTMLSelectElement;
    if (d.type === "enum") {
      const select = document.createElement("select");
      for (const option of d.options ?? []) {
        const element = document.createElement("option");
        element.value = option.value;
        element.textContent = option.label;
        select.append(element);
      }
      input = select;
    } else {
      const text = document.createElement("input");
      text.type = d.type === "boolean" ? "checkbox" : d.type === "number" ? "number" : "text";
      if (d.type === "number") text.step = "any";
      if (d.type === "color") text.spellcheck = false;
      input = text;
    }
    input.id = inputId;
    input.dataset.var = d.id;
    input.addEventListener(d.type === "enum" || d.type === "boolean" ? "change" : "input", () => {
      values[d.id] = readField(d);
      if (d.type === "color") syncPicker(d, values[d.id]);
      changed();
    });
    if (d.type === "color") {
      const picker = document.createElement("input");
      picker.type = "color";
      picker.dataset.picker = d.id;
      picker.setAttribute("aria-label", `${d.label} picker`);
      picker.addEventListener("input", () => {
        values[d.id] = picker.value;
        input.value = picker.value;
        changed();
      });
      row.append(picker);
    }
    row.append(input);
    const problem = document.createElement("div");
    problem.className = "problem";
    problem.id = `problem-${d.id}`;
    problem.setAttribute("role", "alert");
    field.append(label, row, problem);
    return field;
  };

  const buildPanel = (): void => {
    if (!info) return;
    form.replaceChildren(...info.declarations.map(buildField));
    if (info.declarations.length === 0) {
      const none = document.createElement("p");
      none.className = "hint";
      none.textContent = "This composition declares no variables.";
      form.append(none);
    }
    for (const d of info.declarations) writeField(d, values[d.id]);
    droppedList.replaceChildren(...info.dropped.map((d) => {
      const item = document.createElement("li");
      item.textContent = `declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} dropped: ${d.reason}`;
      return item;
    }));
  };

  resetButton.addEventListener("click", () => {
    if (!info) return;
    values = structuredClone(info.defaults);
    for (const d of info.declarations) writeField(d, values[d.id]);
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

  const refresh = async (): Promise<void> => {
    let body: { ok: boolean; composition?: Info; error?: { message: string } };
    try {
      body = await (await fetch("/__preview/composition")).json();
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
    const kept: Record<string, unknown> = {};
    for (const d of next.declarations) {
      const old = before?.declarations.find((o) => o.id === d.id && o.type === d.type);
      kept[d.id] = old && d.id in values ? values[d.id] : next.defaults[d.id];
    }
    info = next;
    values = kept;
    document.title = `${next.id} · vid preview`;
    title.textContent = `${next.id} · ${next.width}×${next.height}${
      next.aspectRatio ? ` (${next.aspectRatio})` : ""
    } · ${next.duration} s · ${next.fps} fps · ${next.frames} frames`;
    scrubber.max = String(next.frames - 1);
    if (!sameDeclarations) buildPanel();
    if (before) reloads++;
    layout();
    go(wanted);
    void check();
  };

  // --- render button ---

  const formatBytes = (n: number): string =>
    n >= 1048576 ? `${(n / 1048576).toFixed(1)} MB` : `${Math.max(1, Math.round(n / 1024))} KB`;

  const showRender = (status: RenderStatus): void => {
    renderStatus.dataset.state = status.state;
    renderProgress.hidden = status.state === "idle";
    const p = status.progress;
    renderProgress.max = p?.framesTotal || 1;
    renderProgress.value = status.state === "done" ? renderProgress.max : p?.framesDone ?? 0;
    renderStatus.replaceChildren();
    if (status.state === "rendering") {
      renderStatus.textContent = p && p.stage === "rendering"
        ? `Rendering: ${p.framesDone} / ${p.framesTotal} frames (${p.fps.toFixed(1)} fps)`
        : `Rendering: ${p?.stage ?? "starting"}`;
    } else if (status.state === "done" && status.file) {
      const link = document.createElement("a");
      link.id = "render-link";
      link.href = `/__preview/renders/${encodeURIComponent(status.file)}`;
      link.download = status.file;
      link.textContent = `renders/${status.file}`;
      renderStatus.append(
        "Done: ",
        link,
        ` (${status.frames} frames, ${formatBytes(status.bytes ?? 0)}, ${
          ((status.elapsedMs ?? 0) / 1000).toFixed(1)
        } s)`,
      );
    } else if (status.state === "failed") {
      renderStatus.textContent = `Render failed: ${status.error?.message ?? "unknown error"}`;
    }
  };

  renderButton.addEventListener("click", async () => {
    renderMessage.textContent = "";
    renderMessage.dataset.kind = "";
    try {
      const response = await fetch("/__preview/render", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ values }),
      });
      const body = await response.json() as {
        ok: boolean;
        status?: RenderStatus;
        error?: { message: string };
      };
      if (body.ok && body.status) {
        showRender(body.status);
        return;
      }
      renderMessage.textContent = body.error?.message ?? `render refused (${response.status})`;
      renderMessage.dataset.kind = response.status === 409 ? "busy" : "error";
    } catch (error) {
      renderMessage.textContent = `cannot reach vid preview: ${(error as Error).message}`;
      renderMessage.dataset.kind = "error";
    }
  });

  // --- live updates ---

  const events = new EventSource("/__preview/events");
  events.addEventListener("open", () => {
    connection.textContent = "live";
    connection.dataset.state = "live";
  });
  events.addEventListener("error", () => {
    connection.textContent = "disconnected: is vid preview still running?";
    connection.dataset.state = "down";
  });
  events.addEventListener("change", () => void refresh());
  events.addEventListener("render", (event) => {
    showRender(JSON.parse((event as MessageEvent<string>).data) as RenderStatus);
  });

  void (async () => {
    await refresh();
    try {
      showRender(await (await fetch("/__preview/render")).json() as RenderStatus);
    } catch {
      // shown by the next render event
    }
  })();
}
