/**
 * The HyperFrames composition model inside the page, so a HyperFrames project renders in vid
 * as it is: timed clips (`data-start`, `data-duration`, `data-end`), sub-compositions loaded
 * from `data-composition-src` hosts (their `<template>`, scoped styles and scripts, per-instance
 * `data-variable-values`, nested), and the clock each composition's timeline runs on.
 *
 * The semantics follow HyperFrames' runtime and its documentation
 * (`skills/hyperframes-core/references/*.md`): a clip is visible while
 * `start <= t < start + duration` (a clip that runs to the end of the video stays to its last
 * frame); `data-start` counts from the start of the composition the element belongs to (the
 * closest `[data-composition-id]`), so a sub-composition's clips move with its host;
 * `data-track-index` is a timeline lane only and never changes what is drawn on top (CSS
 * `z-index` does); a hidden clip hides everything inside it.
 *
 * Sub-compositions are mounted synchronously when the document has been parsed (before the
 * `load` event, so the renderer's first look at the page, `__vid.media()` included, sees
 * them): each file is read with a synchronous request, only its `<template>`'s content is
 * mounted into the host (as HyperFrames does: the rest of the file is its own preview), its
 * styles are scoped to the instance and its scripts run in order, before `load`, with a
 * `document`, `window.__timelines`, `gsap` and `__hyperframes.getVariables()` of the instance.
 * Each composition's variables are bound as HyperFrames binds them: a `--<id>` CSS property of
 * its root, `data-var-text` and `data-var-src`.
 *
 * Runs in the page: the runtime (`install.ts`) creates the model, and is bundled with it by
 * `scripts/build_page_code.ts`.
 *
 * @module
 */

import type { TimedWindow } from "./timed_window.ts";
import type { RuntimeFontFace } from "./page_runtime.ts";

/** What the page runtime gives the model. */
export interface HyperframesHost {
  /** The top-level variables (`__vid.getVariables()`). */
  getVariables(): Readonly<Record<string, unknown>>;
  /** Records an error that fails the render with its message. */
  report(error: Error): void;
  /**
   * Leave a sub-composition whose file cannot be loaded out without an error (vid check,
   * whose static part names the file, so the other frames are still looked at).
   * @default false
   */
  skipMissing?: boolean;
  /** The faces HyperFrames would embed for families the page does not declare. */
  fonts?: readonly RuntimeFontFace[];
}

/** A media element's window on the composition timeline, in seconds. */
export interface MediaWindow {
  /** Absolute start on the video's timeline. */
  start: number;
  /** Seconds into the source at that start. */
  mediaStart: number;
  /** How long it plays; null to the end of its source. */
  duration: number | null;
}

/** The HyperFrames model of one page. */
export interface HyperframesModel {
  /** Mounts every `data-composition-src` host (nested ones too); called once the DOM is parsed. */
  mount(): void;
  /** Absolute start of a timed element, in seconds (its composition's start added). */
  startOf(el: Element): number;
  /**
   * The time a `window.__timelines` entry is seeked to at video time `t`: the composition of
   * that id runs on its own clock from its start; a key naming no composition runs on `t`.
   */
  timelineTime(id: string, t: number): number;
  /** Where a `window.__timelines` entry starts on the video's timeline: its composition's start. */
  timelineStart(id: string): number;
  /** Shows every timed clip inside its window at `t` and hides it outside. */
  applyClips(t: number): void;
  /** Whether `el` is, or is inside, a clip hidden at the last {@linkcode applyClips}. */
  hiddenByClip(el: Element): boolean;
  /**
   * The window of a `<video>`/`<audio>` whose `data-start` counts from its composition, cut
   * to the windows of the clips and compositions around it.
   */
  mediaWindow(el: HTMLMediaElement, own: MediaWindow, rate: number): MediaWindow;
  /** Start (ms) of the sub-composition an animated element belongs to; 0 at the top level. */
  compositionStartMs(el: Element | null): number;
  /** The sub-compositions and clips with their windows, for the studio's timeline. */
  windows(): TimedWindow[];
}

export type { TimedWindow };

/**
 * Adds the faces HyperFrames' renderer would inject to `document.fonts` (no DOM needed, so
 * before any page script) and starts loading them: the readiness gate waits for
 * `document.fonts.ready`, so frame 0 is drawn in them. A face that cannot be decoded is a
 * page error, as a broken font file of the project would be a warning: the family's files
 * came from vid's verified cache, so it means the cache is damaged.
 */
function embedFonts(host: HyperframesHost): void {
  for (const face of host.fonts ?? []) {
    const font = new FontFace(face.family, `url(${face.url})`, {
      weight: face.weight,
      style: "normal",
      display: "block",
    });
    document.fonts.add(font);
    font.load().catch((error) =>
      host.report(
        new Error(`the embedded font "${face.family}" ${face.weight} does not load: ${error}`),
      )
    );
  }
}

/**
 * Creates the model of one page and installs `window.__hyperframes`.
 *
 * @example
 * ```ts no_run
 * // In the page, from the runtime:
 * const model = createHyperframesModel({ getVariables: () => ({}), report: console.error });
 * document.addEventListener("DOMContentLoaded", () => model.mount());
 * ```
 */
export function createHyperframesModel(host: HyperframesHost): HyperframesModel {
  const w = globalThis as unknown as Record<string, unknown> & Window;
  const EPSILON = 1e-6;
  const MOUNT = "data-vid-mount";
  const ROOT = "data-vid-root";

  interface Scope {
    n: number;
    rootId: string;
    hostEl: Element;
    root: Element;
    timelineId: string;
    innerId: string;
    variables: Record<string, unknown>;
    document: Document;
    window: Window;
    hyperframes: unknown;
    gsap(): unknown;
  }
  const scopes: Scope[] = [];
  // Where a sub-composition's script finds its instance (its wrapper reads it by index).
  Object.defineProperty(w, "__vidHyperframesScopes", { value: scopes, enumerable: false });

  const base = Object.freeze({
    getVariables: () => host.getVariables(),
  });
  Object.defineProperty(w, "__hyperframes", { value: base, configurable: true });
  // HyperFrames' runtime makes the registry before any page script, and its starters end with
  // a top-level `window.__timelines["main"] = tl;` that relies on it. A page may still replace
  // it (`window.__timelines = [tl]`, `= window.__timelines || {}`): the seek reads it each frame.
  w.__timelines ??= {};
  embedFonts(host);

  // --- timing: HyperFrames' start resolver ---
  const parseSeconds = (raw: string | null): number | null => {
    if (raw === null || raw.trim() === "") return null;
    const value = Number(raw.trim());
    return Number.isFinite(value) ? value : null;
  };
  /** `data-start`: seconds, or `<id>`, `<id> + n`, `<id> - n` (when that clip ends). */
  const parseStart = (
    raw: string | null,
  ): { seconds: number } | { ref: string; offset: number } | null => {
    if (raw === null || raw.trim() === "") return null;
    const seconds = parseSeconds(raw);
    if (seconds !== null) return { seconds };
    const match = /^\s*([A-Za-z_][\w-]*)\s*(?:([+-])\s*(\d+(?:\.\d+)?|\.\d+))?\s*$/.exec(raw);
    if (!match) return null;
    const offset = match[3] ? Number(match[3]) * (match[2] === "-" ? -1 : 1) : 0;
    return { ref: match[1], offset };
  };
  const compositionOf = (el: Element): Element | null =>
    (el.hasAttribute("data-composition-id") ? el.parentElement : el)?.closest(
      "[data-composition-id]",
    ) ?? null;
  const visiting = new Set<Element>();
  const startOf = (el: Element): number => {
    if (visiting.has(el)) return 0;
    visiting.add(el);
    try {
      const expression = parseStart(el.getAttribute("data-start"));
      if (!expression) {
        // A sub-composition's own root inside its host starts with the host.
        const parent = el.parentElement;
        if (
          el.hasAttribute("data-composition-id") && parent &&
          (parent.hasAttribute(MOUNT) || parent.hasAttribute("data-composition-src"))
        ) {
          return startOf(parent);
        }
        const composition = compositionOf(el);
        return composition ? startOf(composition) : 0;
      }
      if ("seconds" in expression) {
        const composition = compositionOf(el);
        return Math.max(0, (composition ? startOf(composition) : 0) + expression.seconds);
      }
      const target = document.getElementById(expression.ref) ??
        document.querySelector(`[data-composition-id="${CSS.escape(expression.ref)}"]`);
      if (!target) return 0;
      const length = durationOf(target);
      return Math.max(0, startOf(target) + (length ?? 0) + expression.offset);
    } finally {
      visiting.delete(el);
    }
  };
  /** `data-duration`, else `data-end` − start; null when neither gives a positive length. */
  const durationOf = (el: Element): number | null => {
    const duration = parseSeconds(el.getAttribute("data-duration"));
    if (duration !== null && duration > 0) return duration;
    const end = parseSeconds(el.getAttribute("data-end"));
    if (end !== null) {
      const composition = compositionOf(el);
      const length = end - (startOf(el) - (composition ? startOf(composition) : 0));
      if (length > 0) return length;
    }
    if (el instanceof HTMLMediaElement && !el.classList.contains("clip")) return null;
    const id = el.getAttribute("data-composition-id");
    if (id) {
      const timeline = (w.__timelines as Record<string, { duration?: () => number }> | undefined)
        ?.[id];
      const length = typeof timeline?.duration === "function" ? Number(timeline.duration()) : NaN;
      if (Number.isFinite(length) && length > 0) return length;
    }
    return null;
  };

  // A <video> or <audio> keeps vid's own rule (shown on its first frame before its start and
  // its last after it ends, silent outside its window) unless it is a clip: README
  // compositions rely on it. Any other element with a data-start is a clip.
  const isClip = (el: Element): boolean => {
    const tag = el.tagName;
    if (tag === "SCRIPT" || tag === "STYLE" || tag === "LINK" || tag === "META") return false;
    if (el instanceof HTMLMediaElement) return el.classList.contains("clip");
    return true;
  };
  // HyperFrames also keeps a clip ending at or after the video's end to its last frame;
  // every frame's time is below the video's duration, so the half-open window says that too.
  const visibleAt = (el: Element, t: number): boolean => {
    const start = startOf(el);
    if (t < start - EPSILON) return false;
    const length = durationOf(el);
    return length === null || t < start + length - EPSILON;
  };
  const shown = new WeakMap<HTMLElement, string>();
  let hidden = new WeakSet<Element>();
  const hiddenByClip = (el: Element): boolean => {
    for (let at: Element | null = el; at; at = at.parentElement) if (hidden.has(at)) return true;
    return false;
  };
  const applyClips = (t: number): void => {
    hidden = new WeakSet<Element>();
    const timed = Array.from(document.querySelectorAll<HTMLElement>("[data-start]"));
    for (const el of timed) {
      if (!isClip(el)) continue;
      let visible = visibleAt(el, t);
      // A clip inside a hidden clip stays hidden, whatever its own window says.
      for (let up = el.parentElement; visible && up; up = up.parentElement) {
        if (up.hasAttribute("data-start") && isClip(up) && !visibleAt(up, t)) {
          visible = false;
        }
      }
      if (!shown.has(el)) shown.set(el, el.style.getPropertyValue("visibility"));
      if (visible) {
        const authored = shown.get(el) ?? "";
        if (authored) el.style.setProperty("visibility", authored);
        else el.style.removeProperty("visibility");
      } else {
        hidden.add(el);
        el.style.setProperty("visibility", "hidden", "important");
      }
    }
  };

  const timelineStart = (id: string): number => {
    const scope = scopes.find((s) => s.timelineId === id);
    const el = scope?.hostEl ??
      document.querySelector(`[data-composition-id="${CSS.escape(id)}"]`);
    return el ? startOf(el) : 0;
  };
  const timelineTime = (id: string, t: number): number => Math.max(0, t - timelineStart(id));

  const mediaWindow = (el: HTMLMediaElement, own: MediaWindow, rate: number): MediaWindow => {
    const composition = compositionOf(el);
    let start = own.start + (composition ? startOf(composition) : 0);
    let mediaStart = own.mediaStart;
    let end = own.duration === null ? Infinity : start + own.duration;
    for (let up = el.parentElement; up; up = up.parentElement) {
      if (!up.hasAttribute("data-start") || !isClip(up)) continue;
      const upStart = startOf(up);
      const upLength = durationOf(up);
      if (upStart > start) {
        mediaStart += (upStart - start) * rate;
        start = upStart;
      }
      if (upLength !== null) end = Math.min(end, upStart + upLength);
    }
    return {
      start,
      mediaStart,
      duration: end === Infinity ? null : Math.max(0, end - start),
    };
  };

  const compositionStartMs = (el: Element | null): number => {
    const host = el?.closest(`[${MOUNT}]`);
    return host ? startOf(host) * 1000 : 0;
  };

  // --- sub-compositions ---
  /** HyperFrames' rule: a `../` path is the sub-composition file's; any other, the project's. */
  const rebase = (value: string, fileUrl: string): string => {
    const trimmed = value.trim();
    if (!trimmed.startsWith("../") && trimmed !== "..") return value;
    try {
      return new URL(trimmed, fileUrl).href;
    } catch {
      return value;
    }
  };
  const rebaseCss = (css: string, fileUrl: string): string =>
    css.replace(
      /url\(\s*(["']?)([^"')]+)\1\s*\)/g,
      (_all, quote: string, url: string) => `url(${quote}${rebase(url, fileUrl)}${quote})`,
    );

  /** Splits a selector list at its top-level commas. */
  const splitSelectors = (text: string): string[] => {
    const parts: string[] = [];
    let depth = 0;
    let quote = "";
    let current = "";
    for (const char of text) {
      if (quote) {
        if (char === quote) quote = "";
      } else if (char === '"' || char === "'") quote = char;
      else if (char === "(" || char === "[") depth++;
      else if (char === ")" || char === "]") depth--;
      else if (char === "," && depth === 0) {
        parts.push(current.trim());
        current = "";
        continue;
      }
      current += char;
    }
    if (current.trim()) parts.push(current.trim());
    return parts;
  };
  /**
   * Scopes one selector to a mounted instance, as HyperFrames scopes a sub-composition's CSS:
   * `S` matches inside the instance only; the composition's root (`#root`, its own id, its
   * `[data-composition-id]`, or `html`/`body`/`:root`) is the instance's root.
   */
  const scopeSelector = (selector: string, n: number, rootId: string, compId: string): string => {
    const root = `[${ROOT}="${n}"]`;
    if (/^(html|body|:root)$/i.test(selector)) return root;
    let scoped = selector.replace(
      new RegExp(
        `\\[\\s*data-composition-id\\s*=\\s*(["']?)${
          compId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")
        }\\1\\s*\\]`,
        "g",
      ),
      root,
    );
    scoped = rootSelector(scoped, n, rootId);
    return scoped.startsWith(root) ? scoped : `[${MOUNT}="${n}"] ${scoped}`;
  };
  const scopeRules = (rules: CSSRuleList, n: number, rootId: string, compId: string): void => {
    for (const rule of Array.from(rules)) {
      if (rule instanceof CSSStyleRule) {
        rule.selectorText = splitSelectors(rule.selectorText)
          .map((s) => scopeSelector(s, n, rootId, compId))
          .join(", ");
      } else if (
        rule instanceof CSSMediaRule || rule instanceof CSSSupportsRule ||
        (typeof CSSLayerBlockRule !== "undefined" && rule instanceof CSSLayerBlockRule)
      ) {
        scopeRules((rule as CSSGroupingRule).cssRules, n, rootId, compId);
      }
      // @keyframes and @font-face are global, as in HyperFrames.
    }
  };

  const readFile = (url: string): string | null => {
    const request = new XMLHttpRequest();
    try {
      request.open("GET", url, false);
      request.send();
    } catch {
      return null;
    }
    return request.status >= 200 && request.status < 300 ? request.responseText : null;
  };

  const declaredDefaults = (raw: string | null): Record<string, unknown> => {
    const defaults: Record<string, unknown> = {};
    if (!raw) return defaults;
    try {
      const parsed = JSON.parse(raw);
      if (Array.isArray(parsed)) {
        for (const d of parsed) {
          if (d && typeof d.id === "string" && "default" in d) defaults[d.id] = d.default;
        }
      }
    } catch {
      // A malformed declaration list gives no defaults, as in HyperFrames.
    }
    return defaults;
  };

  /** A selector of a composition's scripts: its root's id names this instance's root. */
  const rootSelector = (selector: string, n: number, rootId: string): string =>
    rootId
      ? selector.replace(
        new RegExp(`#${rootId.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\w-])`, "g"),
        `[${ROOT}="${n}"]`,
      )
      : selector;
  const scopedDocument = (scope: () => Scope): Document => {
    const query = (selector: string): Element[] => {
      const { hostEl, n, rootId } = scope();
      const scoped = rootSelector(selector, n, rootId);
      const found = Array.from(hostEl.querySelectorAll(scoped));
      return hostEl.matches(scoped) ? [hostEl, ...found] : found;
    };
    return new Proxy(document, {
      get(target, prop) {
        if (prop === "querySelectorAll") return (s: string) => query(s);
        if (prop === "querySelector") return (s: string) => query(s)[0] ?? null;
        if (prop === "getElementById") {
          return (id: string) => {
            const { rootId, root } = scope();
            return id === rootId ? root : query(`[id="${CSS.escape(id)}"]`)[0] ?? null;
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  const scopedTargets = (scope: Scope, target: unknown): unknown => {
    if (typeof target !== "string") return target;
    const doc = scope.document;
    return Array.from(doc.querySelectorAll(target));
  };
  const scopeTimeline = (scope: Scope, timeline: Record<string, unknown>): unknown => {
    for (const method of ["to", "from", "fromTo", "set"]) {
      const original = timeline[method];
      if (typeof original !== "function") continue;
      timeline[method] = function (this: unknown, target: unknown, ...rest: unknown[]) {
        return original.call(timeline, scopedTargets(scope, target), ...rest);
      };
    }
    return timeline;
  };
  const scopedGsap = (scope: Scope): unknown => {
    const gsap = w.gsap as Record<string, (...args: unknown[]) => unknown> | undefined;
    if (!gsap) return undefined;
    return new Proxy(gsap, {
      get(target, prop) {
        if (prop === "timeline") {
          return (...args: unknown[]) =>
            scopeTimeline(scope, target.timeline(...args) as Record<string, unknown>);
        }
        if (prop === "to" || prop === "from" || prop === "fromTo" || prop === "set") {
          return (first: unknown, ...rest: unknown[]) =>
            target[prop](scopedTargets(scope, first), ...rest);
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  };
  const scopedWindow = (scope: Scope): Window => {
    const registry = (): Record<string, unknown> => {
      w.__timelines ??= {};
      const timelines = w.__timelines as Record<string, unknown>;
      if (scope.innerId === scope.timelineId) return timelines;
      // The file registers under its own id; this instance's host may be named otherwise.
      return new Proxy(timelines, {
        get: (target, key) =>
          key === scope.innerId && !(key in target)
            ? target[scope.timelineId]
            : Reflect.get(target, key),
        set: (target, key, value) => {
          target[key === scope.innerId ? scope.timelineId : String(key)] = value;
          return true;
        },
      });
    };
    return new Proxy(w, {
      get(target, prop) {
        if (prop === "__timelines") return registry();
        if (prop === "__hyperframes") return scope.hyperframes;
        if (prop === "document") return scope.document;
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" && value.prototype === undefined
          ? value.bind(target)
          : value;
      },
      set(target, prop, value) {
        if (prop === "__timelines") {
          if (value && typeof value === "object" && value !== target.__timelines) {
            target.__timelines = value;
          }
          return true;
        }
        return Reflect.set(target, prop, value, target);
      },
    }) as unknown as Window;
  };

  let mounts = 0;
  const scripts: { src?: string; code?: string }[] = [];
  const mountHost = (hostEl: Element, depth: number): void => {
    const src = hostEl.getAttribute("data-composition-src") ?? "";
    if (depth > 16) {
      host.report(new Error(`data-composition-src="${src}": sub-compositions nest deeper than 16`));
      return;
    }
    const fileUrl = new URL(src, document.baseURI).href;
    const html = readFile(fileUrl);
    if (html === null) {
      if (host.skipMissing) return;
      host.report(
        new Error(
          `data-composition-src="${src}": cannot load ${fileUrl} (the file is missing or unreadable)`,
        ),
      );
      return;
    }
    const parsed = new DOMParser().parseFromString(html, "text/html");
    const template = parsed.querySelector("template");
    const content = template
      ? document.importNode(template.content, true)
      : document.importNode(parsed.body, true);
    const fragment = document.createDocumentFragment();
    for (const node of Array.from(content.childNodes)) fragment.append(node);
    const n = ++mounts;
    const inner = fragment.querySelector("[data-composition-id]");
    const innerId = inner?.getAttribute("data-composition-id") ?? "";
    const timelineId = hostEl.getAttribute("data-composition-id") || innerId;
    const rootId = inner?.id ?? "";
    for (const el of Array.from(fragment.querySelectorAll("[src], [href], [poster]"))) {
      for (const name of ["src", "href", "poster"]) {
        const value = el.getAttribute(name);
        if (value !== null) el.setAttribute(name, rebase(value, fileUrl));
      }
    }
    for (const el of Array.from(fragment.querySelectorAll<HTMLElement>("[style]"))) {
      el.setAttribute("style", rebaseCss(el.getAttribute("style") ?? "", fileUrl));
    }
    const instanceValues = (() => {
      const raw = hostEl.getAttribute("data-variable-values");
      if (!raw) return {};
      try {
        const parsedValues = JSON.parse(raw);
        return parsedValues && typeof parsedValues === "object" ? parsedValues : {};
      } catch {
        host.report(
          new Error(
            `data-variable-values on the host of ${src} is not a JSON object: ${raw.slice(0, 80)}`,
          ),
        );
        return {};
      }
    })();
    const variables = {
      ...declaredDefaults(parsed.documentElement.getAttribute("data-composition-variables")),
      ...declaredDefaults(inner?.getAttribute("data-composition-variables") ?? null),
      ...instanceValues,
    };
    const pending: { src?: string; code?: string }[] = [];
    for (const script of Array.from(fragment.querySelectorAll("script"))) {
      const type = script.getAttribute("type");
      if (!type || /^(text|application)\/javascript$/i.test(type)) {
        pending.push(
          script.hasAttribute("src")
            ? { src: new URL(script.getAttribute("src")!, document.baseURI).href }
            : { code: script.textContent ?? "" },
        );
        script.remove();
      }
    }
    hostEl.setAttribute(MOUNT, String(n));
    (inner ?? hostEl).setAttribute(ROOT, String(n));
    // The root's id (`root`, by HyperFrames' convention, in every file) moves off the element,
    // as HyperFrames moves it: the host page's own `#root` rules must not style it.
    if (inner && rootId) {
      inner.removeAttribute("id");
      inner.setAttribute("data-vid-authored-id", rootId);
    }
    for (const style of Array.from(fragment.querySelectorAll("style"))) {
      style.textContent = rebaseCss(style.textContent ?? "", fileUrl);
    }
    // Sized as HyperFrames sizes a mount: host and root take the root's data-width and
    // data-height (the root fills the host without them), so a root with no CSS box of its own
    // still gives its children the frame to lay out in.
    if (inner instanceof HTMLElement) {
      const px = (name: string): string | null => {
        const value = Number(inner.getAttribute(name));
        return Number.isFinite(value) && value > 0 ? `${value}px` : null;
      };
      const width = px("data-width");
      const height = px("data-height");
      if (hostEl instanceof HTMLElement) {
        if (width) hostEl.style.width = width;
        if (height) hostEl.style.height = height;
      }
      inner.style.width = width ?? "100%";
      inner.style.height = height ?? "100%";
    }
    hostEl.replaceChildren(fragment);
    bind(inner ?? hostEl, variables);
    for (const style of Array.from(hostEl.querySelectorAll("style"))) {
      if (style.sheet && !style.hasAttribute(MOUNT)) {
        style.setAttribute(MOUNT + "-style", String(n));
        scopeRules(style.sheet.cssRules, n, rootId, innerId);
      }
    }
    const scope: Scope = {
      n,
      rootId,
      hostEl,
      root: inner ?? hostEl,
      timelineId,
      innerId,
      variables,
      document: document,
      window: w,
      hyperframes: undefined,
      gsap: () => scopedGsap(scope),
    };
    scope.document = scopedDocument(() => scope);
    scope.hyperframes = Object.freeze({
      getVariables: () => Object.freeze(structuredClone(scope.variables)),
    });
    scope.window = scopedWindow(scope);
    scopes.push(scope);
    const index = scopes.length - 1;
    for (const item of pending) {
      scripts.push(
        item.src !== undefined ? { src: item.src } : {
          code:
            `(function (scope) {\n(function (document, window, gsap, __hyperframes) {\n${item.code}\n}).call(globalThis, scope.document, scope.window, scope.gsap(), scope.hyperframes);\n})(globalThis.__vidHyperframesScopes[${index}]);\n//# sourceURL=${fileUrl}`,
        },
      );
    }
    for (const nested of Array.from(hostEl.querySelectorAll("[data-composition-src]"))) {
      mountHost(nested, depth + 1);
    }
  };

  /**
   * HyperFrames' declarative bindings inside one composition (nested mounts left to their own
   * values): each scalar variable as a `--<id>` CSS property on its root, `data-var-text` the
   * element's own text (its child elements kept), `data-var-src` its `src`.
   */
  const bind = (root: Element, variables: Record<string, unknown>): void => {
    for (const [id, value] of Object.entries(variables)) {
      if (["string", "number", "boolean"].includes(typeof value) && root instanceof HTMLElement) {
        root.style.setProperty(`--${id}`, String(value));
      }
    }
    const own = (el: Element): boolean =>
      el.parentElement?.closest(`[${MOUNT}]`) === root.closest(`[${MOUNT}]`);
    for (const el of Array.from(root.querySelectorAll("[data-var-text], [data-var-src]"))) {
      if (!own(el)) continue;
      const text = el.getAttribute("data-var-text");
      if (text !== null && text in variables) {
        const value = variables[text];
        for (const node of Array.from(el.childNodes)) {
          if (node.nodeType === Node.TEXT_NODE) node.remove();
        }
        el.prepend(String(value));
      }
      const src = el.getAttribute("data-var-src");
      if (src !== null && src in variables) {
        const value = variables[src] as unknown;
        const url = typeof value === "object" && value !== null && "url" in value
          ? String((value as { url: unknown }).url)
          : String(value);
        if (url) el.setAttribute("src", url);
      }
    }
  };

  const mount = (): void => {
    const top = document.querySelector("[data-composition-id]");
    if (top && !top.closest(`[${MOUNT}]`)) bind(top, host.getVariables());
    for (const hostEl of Array.from(document.querySelectorAll("[data-composition-src]"))) {
      if (hostEl.closest(`[${MOUNT}]`)) continue;
      mountHost(hostEl, 0);
    }
    // In order, one after the other, and before `load`: dynamically inserted scripts with
    // async = false keep their insertion order and hold the load event.
    for (const item of scripts) {
      const script = document.createElement("script");
      script.async = false;
      script.src = item.src ??
        URL.createObjectURL(new Blob([item.code ?? ""], { type: "text/javascript" }));
      document.head.append(script);
    }
    scripts.length = 0;
  };

  const windows = (): TimedWindow[] =>
    Array.from(document.querySelectorAll("[data-composition-src], .clip[data-start]")).map(
      (el) => {
        const start = startOf(el);
        const length = durationOf(el);
        const composition = el.hasAttribute("data-composition-src");
        return {
          kind: composition ? "composition" : "clip",
          label: composition
            ? el.getAttribute("data-composition-id") || el.getAttribute("data-composition-src")!
            : el.id
            ? `#${el.id}`
            : `${el.tagName.toLowerCase()}.clip`,
          start,
          end: length === null ? null : start + length,
        };
      },
    );

  return {
    windows,
    timelineStart,
    mount,
    startOf,
    timelineTime,
    applyClips,
    hiddenByClip,
    mediaWindow,
    compositionStartMs,
  };
}
