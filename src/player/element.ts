/**
 * `<vid-player>`: a composition's live preview in any web page, frame-exact with the render.
 *
 * The composition loads in a sandboxed iframe from the URL in `src` (served by `vid preview`,
 * which puts vid's page runtime into it as it does for the studio's stage); the element
 * reaches that runtime over postMessage (`page_link.ts`, `src/runtime/player_bridge.ts`) and
 * brings the page to each frame with the runtime's `drawFrame`, as capture does. Playback,
 * the plan for a frame (seek on or a fresh page: the runtime seeks only forward), the keys
 * and the sound are the studio's modules (`src/preview/studio/playback.ts`, `transport.ts`,
 * `sound.ts`), so the player has no playback engine of its own.
 *
 * New variables (or a seek back) load a fresh page beneath the shown one, seek it, then swap:
 * the host page never reloads and the picture never blanks. Every drawing step runs one at a
 * time on a queue, so `seek()` resolves when its frame is on screen.
 *
 * @module
 */

import {
  clampFrame,
  clockFrame,
  clockSeconds,
  framePlan,
  type PlaybackClock,
  startClock,
} from "../preview/studio/playback.ts";
import { keyCommand } from "../preview/studio/transport.ts";
import { createSoundPlayers, type SoundPlayers } from "../preview/studio/sound.ts";
import { pageErrorMessage, projectFile } from "../preview/studio/page_error.ts";
import type { MediaDescriptor } from "../runtime/page_runtime.ts";
import type { PlayerComposition } from "../runtime/player_bridge.ts";
import { linkPage, PAGE_ANSWER_MS, type PageLink, PlayerPageError } from "./page_link.ts";
import { type FetchedPage, fetchPage, SRCDOC_SANDBOX, srcdocPage } from "./remote_page.ts";
import { missingFontMessage, packagedFonts } from "./packaged_fonts.ts";
import type { RuntimeFontFace } from "../composition/font_face.ts";
import { PLAYER_SHADOW_HTML } from "./shadow.ts";

/** The player's state: loading its first frame, showing frames, or failed. */
export type PlayerReadyState = "loading" | "ready" | "error";

/** The attributes the element watches. */
export const PLAYER_ATTRIBUTES: readonly string[] = [
  "src",
  "variables",
  "controls",
  "autoplay",
  "loop",
  "muted",
  "poster",
  "playback-rate",
  "fps",
  "composition",
];

/**
 * What an iframe loading a page `vid preview` served may do: run its scripts in its own
 * origin (vid preview's); no popups, forms or top navigation. A composition the player
 * fetched itself runs with {@linkcode SRCDOC_SANDBOX}, scripts alone in an opaque origin.
 */
export const PLAYER_SANDBOX = "allow-scripts allow-same-origin";

/** A composition page in the player. */
interface PlayerPage {
  iframe: HTMLIFrameElement;
  link: PageLink;
  key: string;
  frame: number;
  painted: boolean;
  media: MediaDescriptor[];
}

/**
 * The composition's URL: `src`, or `composition` (an entry file) beside it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(compositionUrl("http://h/demo/", "b.html"), "http://h/demo/b.html");
 * ```
 */
export function compositionUrl(src: string, composition: string): string {
  return new URL(composition || src, new URL(src, globalThis.location?.href)).href;
}

/**
 * The composition page's URL for `src` (and `composition`, an entry file beside it), with
 * the frame rate and variables as `vid preview` reads them (`fps`, `vars`) and a reload count.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const url = playerPageUrl("http://h/demo/index.html", "", { t: "Hi" }, "", 0);
 * assert.equal(url, "http://h/demo/index.html?vars=%7B%22t%22%3A%22Hi%22%7D&r=0");
 * assert.ok(playerPageUrl("http://h/demo/", "b.html", {}, "25", 1).startsWith("http://h/demo/b.html?fps=25"));
 * ```
 */
export function playerPageUrl(
  src: string,
  composition: string,
  values: Record<string, unknown>,
  fps: string,
  reloads: number,
): string {
  const url = new URL(compositionUrl(src, composition));
  if (fps) url.searchParams.set("fps", fps);
  url.searchParams.set("vars", JSON.stringify(values));
  url.searchParams.set("r", String(reloads));
  return url.href;
}

/**
 * The variables of a `variables` attribute: a JSON object, else an error naming the attribute.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseVariablesAttribute('{"title":"Hi"}'), { title: "Hi" });
 * assert.deepEqual(parseVariablesAttribute(null), {});
 * assert.throws(() => parseVariablesAttribute("[1]"), /variables: /);
 * ```
 */
export function parseVariablesAttribute(raw: string | null): Record<string, unknown> {
  if (raw === null || raw.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (error) {
    throw new Error(`variables: not JSON (${(error as Error).message}); write a JSON object`);
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new Error(`variables: write a JSON object of variable values, like {"title": "Hi"}`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * Where the element's box shows a `width` x `height` composition: the scale that fits it
 * whole and the offsets that center it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(fitBox(640, 180, 320, 180), { scale: 1, left: 160, top: 0 });
 * ```
 */
export function fitBox(
  boxWidth: number,
  boxHeight: number,
  width: number,
  height: number,
): { scale: number; left: number; top: number } {
  const scale = Math.max(0.001, Math.min(boxWidth / width, boxHeight / height));
  return {
    scale,
    left: (boxWidth - width * scale) / 2,
    top: (boxHeight - height * scale) / 2,
  };
}

/**
 * The class `<vid-player>` extends: the browser's `HTMLElement`, or an empty class outside a
 * browser so the module imports in Deno and Node.
 */
export const PlayerElementBase: typeof HTMLElement = globalThis.HTMLElement ??
  (class {} as typeof HTMLElement);

/**
 * The `<vid-player>` element. Define it with {@linkcode definePlayer} (the `player` module
 * does on import in a browser).
 *
 * @example
 * ```ts no_run
 * const player = document.querySelector("vid-player") as VidPlayer;
 * player.addEventListener("ready", async () => {
 *   await player.seek(2);
 *   player.variables = { title: "Ada" };
 * });
 * ```
 */
export class VidPlayer extends PlayerElementBase {
  /** The attributes whose changes the element follows. */
  static get observedAttributes(): readonly string[] {
    return PLAYER_ATTRIBUTES;
  }

  #root: ShadowRoot | undefined;
  #info: PlayerComposition | undefined;
  #values: Record<string, unknown> = {};
  #reloads = 0;
  #live: PlayerPage | undefined;
  #wanted = 0;
  #shown = -1;
  #playing = false;
  #clock: PlaybackClock = { fromFrame: 0, startMs: 0 };
  #state: PlayerReadyState = "loading";
  #queue: Promise<unknown> = Promise.resolve();
  #drawing = false;
  #sound: SoundPlayers | undefined;
  #resize: ResizeObserver | undefined;
  #connected = false;
  /** The composition's HTML as fetched, for the URL it came from (fresh on a new `src`). */
  #source: { url: string; page: FetchedPage; fonts: RuntimeFontFace[] } | undefined;
  /** What `Date.now()` returns at time 0 in the pages this element loads. */
  #epochMs = Math.floor(Date.now() / 1000) * 1000;

  /** `"loading"` until the first frame is drawn, `"ready"`, or `"error"`. */
  get readyState(): PlayerReadyState {
    return this.#state;
  }
  /** The composition's duration in seconds (NaN until known). */
  get duration(): number {
    return this.#info?.duration ?? NaN;
  }
  /** The frame rate the composition plays at (NaN until known). */
  get fps(): number {
    return this.#info?.fps ?? NaN;
  }
  /** The composition's frame count (0 until known). */
  get frames(): number {
    return this.#info?.frames ?? 0;
  }
  /** The frame on screen (0 before the first). */
  get currentFrame(): number {
    return Math.max(0, this.#shown);
  }
  /** The time of the frame on screen, in seconds. */
  get currentTime(): number {
    return this.#info ? this.currentFrame / this.#info.fps : 0;
  }
  set currentTime(seconds: number) {
    void this.seek(seconds).catch(() => {/* reported by the error event */});
  }
  /** Not playing. */
  get paused(): boolean {
    return !this.#playing;
  }
  /** The variable values the composition is shown with (the `variables` attribute, parsed). */
  get variables(): Record<string, unknown> {
    return structuredClone(this.#values);
  }
  /** New values: the current frame is drawn again with them (the host page does not reload). */
  set variables(values: Record<string, unknown>) {
    this.setAttribute("variables", JSON.stringify(values ?? {}));
  }
  /** Playback speed, 1 for real time (the `playback-rate` attribute). */
  get playbackRate(): number {
    const rate = Number(this.getAttribute("playback-rate") ?? "1");
    return Number.isFinite(rate) && rate > 0 ? rate : 1;
  }
  set playbackRate(rate: number) {
    this.setAttribute("playback-rate", String(rate));
  }
  /** Sound off (the `muted` attribute). */
  get muted(): boolean {
    return this.hasAttribute("muted");
  }
  set muted(on: boolean) {
    this.toggleAttribute("muted", on);
  }

  #part<T extends Element>(name: string): T {
    return this.#root!.querySelector<T>(`[part=${name}]`)!;
  }

  /** Builds the shadow root and loads `src`. */
  connectedCallback(): void {
    this.#connected = true;
    if (!this.#root) this.#build();
    if (!this.hasAttribute("tabindex")) this.tabIndex = 0;
    this.#resize ??= new ResizeObserver(() => this.#layout());
    this.#resize.observe(this);
    this.#applyAttributes();
    if (this.#readVariables()) this.#reload();
  }

  /** Stops playback and drops the page. */
  disconnectedCallback(): void {
    this.#connected = false;
    this.pause();
    this.#resize?.disconnect();
    this.#live?.link.close();
    this.#live?.iframe.remove();
    this.#live = undefined;
  }

  /** Follows an attribute's change. */
  attributeChangedCallback(name: string, before: string | null, after: string | null): void {
    if (!this.#connected || before === after) return;
    this.#applyAttributes();
    if (name === "src" || name === "composition" || name === "fps") this.#reload();
    else if (name === "variables" && this.#readVariables()) this.#redraw();
    else if (name === "playback-rate" && this.#playing && this.#info) {
      // The new speed runs from the frame due now; the sound follows at once.
      this.#clock = { fromFrame: this.#wanted, startMs: performance.now() };
      this.#sound?.sync(true);
    }
  }

  /** Takes the `variables` attribute's values; false (and an error event) when unreadable. */
  #readVariables(): boolean {
    try {
      this.#values = parseVariablesAttribute(this.getAttribute("variables"));
      return true;
    } catch (error) {
      this.#fail(error);
      return false;
    }
  }

  #build(): void {
    this.#root = this.attachShadow({ mode: "open" });
    this.#root.innerHTML = PLAYER_SHADOW_HTML;
    this.#sound = createSoundPlayers(this.#part<HTMLElement>("sounds"), {
      playing: () => this.#playing,
      playheadSeconds: () =>
        this.#info
          ? clockSeconds(this.#clock, performance.now(), this.#info.fps, this.playbackRate)
          : 0,
      rate: () => this.playbackRate,
    });
    this.#part<HTMLButtonElement>("play").addEventListener("click", () => this.#toggle());
    this.#part<HTMLButtonElement>("mute").addEventListener("click", () => {
      this.muted = !this.muted;
    });
    this.#part<HTMLInputElement>("seek").addEventListener("input", (event) => {
      this.pause();
      void this.seekToFrame(Number((event.target as HTMLInputElement).value)).catch(() => {});
    });
    this.addEventListener("keydown", (event) => this.#key(event));
  }

  #applyAttributes(): void {
    if (!this.#root) return;
    this.#part<HTMLElement>("controls").hidden = !this.hasAttribute("controls");
    const poster = this.#part<HTMLImageElement>("poster");
    const url = this.getAttribute("poster");
    if (url) poster.src = url;
    poster.hidden = !url || this.#shown >= 0;
    const mute = this.#part<HTMLButtonElement>("mute");
    mute.textContent = this.muted ? "Muted" : "Sound on";
    mute.setAttribute("aria-pressed", String(this.muted));
    mute.setAttribute("aria-label", this.muted ? "Unmute" : "Mute");
    this.#sound?.setVolume(this.muted, 1);
  }

  #key(event: KeyboardEvent): void {
    if (event.composedPath()[0] instanceof HTMLInputElement && event.key !== " ") return;
    const command = keyCommand(
      event.key,
      event.shiftKey,
      this.#shown < 0 ? this.#wanted : this.#shown,
      this.frames - 1,
    );
    if (!command) return;
    event.preventDefault();
    if (command.kind === "toggle-play") this.#toggle();
    else if (command.kind === "mute") this.muted = !this.muted;
    else {
      this.pause();
      void this.seekToFrame(command.frame).catch(() => {});
    }
  }

  #toggle(): void {
    if (this.#playing) this.pause();
    else void this.play().catch(() => {});
  }

  #layout(): void {
    if (!this.#info || !this.#root) return;
    const { scale, left, top } = fitBox(
      this.clientWidth,
      this.clientHeight,
      this.#info.width,
      this.#info.height,
    );
    const stage = this.#part<HTMLElement>("stage");
    stage.style.width = `${this.#info.width}px`;
    stage.style.height = `${this.#info.height}px`;
    stage.style.transform = `translate(${left}px, ${top}px) scale(${scale})`;
  }

  #pageKey(): string {
    return JSON.stringify([
      this.getAttribute("src"),
      this.getAttribute("composition"),
      this.getAttribute("fps"),
      this.#values,
      this.#reloads,
    ]);
  }

  #enqueue<T>(step: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(step, step);
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Loads the composition afresh (`src`, `composition` or `fps` changed). */
  #reload(): void {
    this.pause();
    this.#reloads++;
    this.#info = undefined;
    this.#source = undefined;
    this.#shown = -1;
    this.#setState("loading");
    this.#applyAttributes();
    if (!this.getAttribute("src")) return;
    void this.#show(0, true).then(() => {
      if (this.hasAttribute("autoplay")) void this.play().catch(() => {});
    }, () => {});
  }

  /** The variables changed: the frame on screen, drawn with the new values. */
  #redraw(): void {
    if (!this.getAttribute("src")) return;
    void this.#show(this.#playing ? this.#wanted : this.currentFrame, !this.#playing)
      .catch(() => {});
  }

  #setState(state: PlayerReadyState): void {
    this.#state = state;
    this.dataset.state = state;
  }

  #fail(error: unknown): Error {
    const message = error instanceof PlayerPageError && error.record
      ? pageErrorMessage(error.record, this.#wanted, (url) => this.#fileOf(url))
      : (error as Error).message;
    this.#playing = false;
    this.#sound?.pause();
    this.#setState("error");
    const box = this.#part<HTMLElement>("message");
    box.textContent = message;
    box.hidden = false;
    this.dispatchEvent(new CustomEvent("error", { detail: { message } }));
    return new Error(message);
  }

  /** A page error's URL as a file of the composition's folder, as the studio names it. */
  #fileOf(url: string): string {
    const page = new URL(
      compositionUrl(this.getAttribute("src") ?? "", this.getAttribute("composition") ?? ""),
    );
    if (url === "about:srcdoc") url = page.href;
    return projectFile(url, page.href, page.pathname.slice(1));
  }

  /**
   * The composition's HTML, fetched once per `src`: served with vid's runtime, or plain;
   * with a plain page, the faces vid embeds for its HyperFrames fonts, from the project
   * folder (`src`'s) where vid's packager put them.
   */
  async #fetched(): Promise<{ page: FetchedPage; fonts: RuntimeFontFace[] }> {
    const src = this.getAttribute("src")!;
    const url = compositionUrl(src, this.getAttribute("composition") ?? "");
    if (this.#source?.url !== url) {
      const page = await fetchPage(url);
      let fonts: RuntimeFontFace[] = [];
      if (page.kind === "plain") {
        const root = new URL(".", new URL(src, globalThis.location?.href)).href;
        const found = await packagedFonts(page.html, page.url, root);
        for (const family of found.missing) console.warn(missingFontMessage(family, root));
        fonts = found.faces;
      }
      this.#source = { url, page, fonts };
    }
    return this.#source;
  }

  async #load(key: string): Promise<PlayerPage> {
    const { page: source, fonts } = await this.#fetched();
    const url = playerPageUrl(
      this.getAttribute("src")!,
      this.getAttribute("composition") ?? "",
      this.#values,
      this.getAttribute("fps") ?? "",
      this.#reloads,
    );
    const page = source.kind === "plain"
      ? srcdocPage(source.html, {
        url: source.url,
        values: this.#values,
        fps: this.getAttribute("fps") ?? "",
        epochMs: this.#epochMs,
        fonts,
      })
      : undefined;
    const iframe = document.createElement("iframe");
    iframe.setAttribute("sandbox", page ? SRCDOC_SANDBOX : PLAYER_SANDBOX);
    iframe.setAttribute("scrolling", "no");
    iframe.title = "composition";
    iframe.style.zIndex = "0";
    if (this.#info) {
      iframe.width = String(this.#info.width);
      iframe.height = String(this.#info.height);
    }
    let loadTimer: ReturnType<typeof setTimeout> | undefined;
    const loaded = new Promise<void>((resolve, reject) => {
      iframe.addEventListener("load", () => resolve(), { once: true });
      loadTimer = setTimeout(
        () => reject(new PlayerPageError(`${url} did not load within ${PAGE_ANSWER_MS / 1000} s`)),
        PAGE_ANSWER_MS,
      );
    }).finally(() => clearTimeout(loadTimer));
    if (page) iframe.srcdoc = page.srcdoc;
    else iframe.src = url;
    this.#part<HTMLElement>("stage").append(iframe);
    // An opaque origin has no name to post to: the messages carry nothing private.
    const link = page ? linkPage(iframe, "*", source.url) : linkPage(iframe, new URL(url).origin);
    try {
      await loaded;
      const hello = await link.hello();
      if (hello.problem) throw new PlayerPageError(hello.problem);
      if (!hello.composition) {
        throw new PlayerPageError(
          `${url} is not a composition vid preview knows (no data-composition-id root?)`,
        );
      }
      this.#info = hello.composition;
      iframe.width = String(hello.composition.width);
      iframe.height = String(hello.composition.height);
      this.#layout();
      return { iframe, link, key, frame: -1, painted: false, media: hello.media };
    } catch (error) {
      link.close();
      iframe.remove();
      throw error;
    }
  }

  #swap(next: PlayerPage): void {
    const previous = this.#live;
    this.#live = next;
    next.iframe.style.zIndex = "1";
    previous?.link.close();
    previous?.iframe.remove();
    this.#sound?.update(next.media);
  }

  /** Draws `frame` (paused: `paint`), on the queue; resolves once it is on screen. */
  #show(frame: number, paint: boolean): Promise<void> {
    this.#wanted = frame;
    return this.#enqueue(async () => {
      this.#drawing = true;
      try {
        const key = this.#pageKey();
        const target = this.#info ? clampFrame(this.#wanted, this.#info.frames) : 0;
        const plan = framePlan(this.#live, key, target);
        if (plan === "fresh" || !this.#live) {
          const next = await this.#load(key);
          const first = this.#info ? clampFrame(this.#wanted, this.#info.frames) : 0;
          await next.link.draw(first, paint);
          next.frame = first;
          next.painted = paint;
          this.#swap(next);
        } else if (plan === "seek" || (paint && !this.#live.painted)) {
          await this.#live.link.draw(target, paint);
          this.#live.frame = target;
          this.#live.painted = paint;
        }
        this.#drawn();
      } catch (error) {
        throw this.#fail(error);
      } finally {
        this.#drawing = false;
      }
    });
  }

  #drawn(): void {
    const frame = this.#live!.frame;
    const changed = frame !== this.#shown;
    this.#shown = frame;
    this.#part<HTMLElement>("message").hidden = true;
    this.#part<HTMLImageElement>("poster").hidden = true;
    const seek = this.#part<HTMLInputElement>("seek");
    seek.max = String(this.frames - 1);
    seek.value = String(frame);
    seek.setAttribute("aria-valuetext", `${this.currentTime.toFixed(2)} seconds`);
    this.#part<HTMLElement>("time").textContent = `${this.currentTime.toFixed(2)} / ${
      this.duration.toFixed(2)
    }`;
    this.dataset.frame = String(frame);
    if (this.#state !== "ready") {
      this.#setState("ready");
      this.dispatchEvent(new Event("ready"));
    }
    if (changed) this.dispatchEvent(new Event("timeupdate"));
  }

  /** Shows the frame at `seconds` (rounded to a frame); resolves when it is drawn. */
  seek(seconds: number): Promise<void> {
    const fps = this.#info?.fps ?? 30;
    return this.seekToFrame(Math.round(seconds * fps));
  }

  /** Shows frame `n` (clamped to the composition); resolves when it is drawn. */
  seekToFrame(n: number): Promise<void> {
    if (this.#playing && this.#info) {
      this.#clock = { fromFrame: clampFrame(n, this.#info.frames), startMs: performance.now() };
      this.#sound?.sync(true);
    }
    return this.#show(n, !this.#playing);
  }

  /** Plays in real time (times `playback-rate`) from the frame on screen. */
  async play(): Promise<void> {
    if (this.#playing) return;
    if (!this.#info) await this.#queue;
    if (!this.#info || this.#state === "error") throw new Error("the composition is not ready");
    this.#clock = startClock(this.#wanted, this.#info.frames, performance.now());
    this.#playing = true;
    this.#controlsPlaying(true);
    this.dispatchEvent(new Event("play"));
    this.#sound?.sync(true);
    requestAnimationFrame((now) => this.#tick(now));
  }

  /** Stops on the frame on screen, painted as a paused frame is. */
  pause(): void {
    if (!this.#playing) return;
    this.#playing = false;
    this.#sound?.pause();
    this.#controlsPlaying(false);
    this.dispatchEvent(new Event("pause"));
    if (this.#live) void this.#show(this.#live.frame, true).catch(() => {});
  }

  #controlsPlaying(on: boolean): void {
    if (!this.#root) return;
    const button = this.#part<HTMLButtonElement>("play");
    button.textContent = on ? "Pause" : "Play";
    button.setAttribute("aria-label", on ? "Pause" : "Play");
  }

  #tick(now: number): void {
    if (!this.#playing || !this.#info) return;
    const last = this.#info.frames - 1;
    const due = clockFrame(this.#clock, now, this.#info.fps * this.playbackRate);
    if (due > last && this.#shown >= last && !this.#drawing) {
      this.dispatchEvent(new Event("ended"));
      if (this.hasAttribute("loop")) {
        this.#clock = { fromFrame: 0, startMs: now };
        this.#sound?.sync(true);
        void this.#show(0, false).catch(() => {});
      } else {
        this.pause();
        return;
      }
    } else if (!this.#drawing && clampFrame(due, this.#info.frames) !== this.#shown) {
      void this.#show(clampFrame(due, this.#info.frames), false).catch(() => {});
      this.#sound?.sync();
    }
    requestAnimationFrame((t) => this.#tick(t));
  }
}

/**
 * Defines `<vid-player>` (under `name`) in a browser; does nothing where there are no custom
 * elements (a server importing the module) or when the name is taken.
 *
 * @example
 * ```ts no_run
 * definePlayer();
 * document.body.insertAdjacentHTML("beforeend", '<vid-player src="http://127.0.0.1:4173/"></vid-player>');
 * ```
 */
export function definePlayer(name = "vid-player"): void {
  const registry = globalThis.customElements;
  if (!registry || registry.get(name)) return;
  registry.define(name, VidPlayer);
}
