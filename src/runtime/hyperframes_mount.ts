/**
 * Mounting HyperFrames sub-compositions: each `data-composition-src` host gets its file's
 * `<template>` content (URLs rebased, styles scoped, sized as HyperFrames sizes a mount), its
 * variables bound (`--<id>`, `data-var-text`, `data-var-src`), a {@linkcode Scope} for its
 * scripts, and its scripts queued to run in order before `load`; nested hosts mount in turn.
 *
 * Runs in the page: part of the HyperFrames model (`hyperframes.ts`), bundled with the
 * runtime by `scripts/build_page_code.ts`.
 *
 * @module
 */

import type { HyperframesState, PendingScript } from "./hyperframes_state.ts";
import { MOUNT, rebase, rebaseCss, ROOT, scopeRules } from "./hyperframes_css.ts";
import {
  type Scope,
  scopedDocument,
  scopedGsap,
  scopedScriptCode,
  scopedWindow,
} from "./hyperframes_scope.ts";
import { compositionRoot } from "./composition_root.ts";

/** How deep sub-compositions may nest. */
const MAX_DEPTH = 16;

/** A file's text by a synchronous request, or null when it cannot be read. */
function readFileSync(url: string): string | null {
  const request = new XMLHttpRequest();
  try {
    request.open("GET", url, false);
    request.send();
  } catch {
    return null;
  }
  return request.status >= 200 && request.status < 300 ? request.responseText : null;
}

/**
 * The defaults of a `data-composition-variables` declaration list, by id; none when it is
 * absent or malformed, as in HyperFrames.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const raw = '[{"id":"title","type":"string","default":"Hi"},{"id":"n"}]';
 * assert.deepEqual(declaredDefaults(raw), { title: "Hi" });
 * assert.deepEqual(declaredDefaults("{oops"), {});
 * ```
 */
export function declaredDefaults(raw: string | null): Record<string, unknown> {
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
}

/**
 * HyperFrames' declarative bindings inside one composition (nested mounts left to their own
 * values): each scalar variable as a `--<id>` CSS property on its root, `data-var-text` the
 * element's own text (its child elements kept), `data-var-src` its `src`.
 */
export function bind(root: Element, variables: Record<string, unknown>): void {
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
}

/** A sub-composition file's mountable content: its `<template>`'s, else its body's. */
function fileFragment(parsed: Document): DocumentFragment {
  const template = parsed.querySelector("template");
  const content = template
    ? document.importNode(template.content, true)
    : document.importNode(parsed.body, true);
  const fragment = document.createDocumentFragment();
  for (const node of Array.from(content.childNodes)) fragment.append(node);
  return fragment;
}

/** Rebases the fragment's `src`, `href`, `poster` and inline-style URLs to the file's. */
function rebaseFragment(fragment: DocumentFragment, fileUrl: string): void {
  for (const el of Array.from(fragment.querySelectorAll("[src], [href], [poster]"))) {
    for (const name of ["src", "href", "poster"]) {
      const value = el.getAttribute(name);
      if (value !== null) el.setAttribute(name, rebase(value, fileUrl));
    }
  }
  for (const el of Array.from(fragment.querySelectorAll<HTMLElement>("[style]"))) {
    el.setAttribute("style", rebaseCss(el.getAttribute("style") ?? "", fileUrl));
  }
}

/** The host's `data-variable-values`; a value that is not JSON is reported and gives none. */
function instanceValues(
  state: HyperframesState,
  hostEl: Element,
  src: string,
): Record<string, unknown> {
  const raw = hostEl.getAttribute("data-variable-values");
  if (!raw) return {};
  try {
    const parsedValues = JSON.parse(raw);
    return parsedValues && typeof parsedValues === "object" ? parsedValues : {};
  } catch {
    state.host.report(
      new Error(
        `data-variable-values on the host of ${src} is not a JSON object: ${raw.slice(0, 80)}`,
      ),
    );
    return {};
  }
}

/** Takes the fragment's JavaScript scripts out of it, in order, to run once it is mounted. */
function takeScripts(fragment: DocumentFragment): PendingScript[] {
  const pending: PendingScript[] = [];
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
  return pending;
}

/**
 * Sizes a mount as HyperFrames does: host and root take the root's data-width and
 * data-height (the root fills the host without them), so a root with no CSS box of its own
 * still gives its children the frame to lay out in.
 */
function sizeMount(hostEl: Element, inner: HTMLElement): void {
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

/** The scope of a mounted instance, with its `document`, `window` and `__hyperframes`. */
function createScope(
  state: HyperframesState,
  fields: Pick<Scope, "n" | "rootId" | "hostEl" | "root" | "timelineId" | "innerId" | "variables">,
): Scope {
  const scope: Scope = {
    ...fields,
    document: document,
    window: state.w,
    hyperframes: undefined,
    gsap: () => scopedGsap(state.w, scope),
  };
  scope.document = scopedDocument(() => scope);
  scope.hyperframes = Object.freeze({
    getVariables: () => Object.freeze(structuredClone(scope.variables)),
  });
  scope.window = scopedWindow(state.w, scope);
  return scope;
}

/** The file of a host, or null after reporting why it is not mounted (too deep, unreadable). */
function loadHostFile(
  state: HyperframesState,
  src: string,
  depth: number,
): { fileUrl: string; html: string } | null {
  if (depth > MAX_DEPTH) {
    state.host.report(
      new Error(`data-composition-src="${src}": sub-compositions nest deeper than ${MAX_DEPTH}`),
    );
    return null;
  }
  const fileUrl = new URL(src, document.baseURI).href;
  const html = readFileSync(fileUrl);
  if (html === null) {
    if (state.host.skipMissing) return null;
    state.host.report(
      new Error(
        `data-composition-src="${src}": cannot load ${fileUrl} (the file is missing or unreadable)`,
      ),
    );
    return null;
  }
  return { fileUrl, html };
}

/** Mounts one host's sub-composition (and, in turn, the hosts inside it). */
function mountHost(state: HyperframesState, hostEl: Element, depth: number): void {
  const src = hostEl.getAttribute("data-composition-src") ?? "";
  const file = loadHostFile(state, src, depth);
  if (!file) return;
  const { fileUrl } = file;
  const parsed = new DOMParser().parseFromString(file.html, "text/html");
  const fragment = fileFragment(parsed);
  const n = ++state.mounts;
  const inner = fragment.querySelector("[data-composition-id]");
  const innerId = inner?.getAttribute("data-composition-id") ?? "";
  const timelineId = hostEl.getAttribute("data-composition-id") || innerId;
  const rootId = inner?.id ?? "";
  rebaseFragment(fragment, fileUrl);
  const variables = {
    ...declaredDefaults(parsed.documentElement.getAttribute("data-composition-variables")),
    ...declaredDefaults(inner?.getAttribute("data-composition-variables") ?? null),
    ...instanceValues(state, hostEl, src),
  };
  const pending = takeScripts(fragment);
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
  if (inner instanceof HTMLElement) sizeMount(hostEl, inner);
  hostEl.replaceChildren(fragment);
  bind(inner ?? hostEl, variables);
  for (const style of Array.from(hostEl.querySelectorAll("style"))) {
    if (style.sheet && !style.hasAttribute(MOUNT)) {
      style.setAttribute(MOUNT + "-style", String(n));
      scopeRules(style.sheet.cssRules, n, rootId, innerId);
    }
  }
  const root = inner ?? hostEl;
  state.scopes.push(
    createScope(state, { n, rootId, hostEl, root, timelineId, innerId, variables }),
  );
  const index = state.scopes.length - 1;
  for (const item of pending) {
    state.scripts.push(
      item.src !== undefined ? { src: item.src } : {
        code: scopedScriptCode(item.code ?? "", index, fileUrl),
      },
    );
  }
  for (const nested of Array.from(hostEl.querySelectorAll("[data-composition-src]"))) {
    mountHost(state, nested, depth + 1);
  }
}

/**
 * Binds the top-level composition's variables and mounts every `data-composition-src` host
 * (nested ones too), then queues their scripts: in order, one after the other, and before
 * `load`.
 */
export function mountAll(state: HyperframesState): void {
  const top = compositionRoot(document);
  if (top && !top.closest(`[${MOUNT}]`)) bind(top, state.host.getVariables());
  for (const hostEl of Array.from(document.querySelectorAll("[data-composition-src]"))) {
    if (hostEl.closest(`[${MOUNT}]`)) continue;
    mountHost(state, hostEl, 0);
  }
  // Dynamically inserted scripts with async = false keep their insertion order and hold the
  // load event.
  for (const item of state.scripts) {
    const script = document.createElement("script");
    script.async = false;
    script.src = item.src ??
      URL.createObjectURL(new Blob([item.code ?? ""], { type: "text/javascript" }));
    document.head.append(script);
  }
  state.scripts.length = 0;
}
