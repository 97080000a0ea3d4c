/**
 * What a mounted HyperFrames sub-composition's scripts see: a `document` whose queries stay
 * inside the instance, a `window` whose `__timelines` registers under the host's id and whose
 * `__hyperframes` gives the instance's variables, and a `gsap` whose targets are the
 * instance's elements. One {@linkcode Scope} per mounted instance; its scripts are wrapped by
 * {@linkcode scopedScriptCode} to receive them.
 *
 * Runs in the page: part of the HyperFrames model (`hyperframes.ts`), bundled with the
 * runtime by `scripts/build_page_code.ts`.
 *
 * @module
 */

import { rootSelector } from "./hyperframes_css.ts";

/** The page's global object as the model reads and writes it. */
export type PageGlobal = Record<string, unknown> & Window;

/** One mounted sub-composition instance, as its scripts reach it. */
export interface Scope {
  /** The instance number (`data-vid-mount`, `data-vid-root`). */
  n: number;
  /** The id the file's root was authored with (`root` by convention), or "". */
  rootId: string;
  /** The `data-composition-src` element it is mounted into. */
  hostEl: Element;
  /** The file's `[data-composition-id]` root, or the host when it has none. */
  root: Element;
  /** The `window.__timelines` key its timeline registers under: the host's id, else the file's. */
  timelineId: string;
  /** The file's own `data-composition-id`. */
  innerId: string;
  /** Its variables: declared defaults, then the host's `data-variable-values`. */
  variables: Record<string, unknown>;
  /** Its scripts' `document`. */
  document: Document;
  /** Its scripts' `window`. */
  window: Window;
  /** Its scripts' `__hyperframes`. */
  hyperframes: unknown;
  /** Its scripts' `gsap`, read when they start. */
  gsap(): unknown;
}

/**
 * The source that runs one inline script of the instance at `index` of
 * `globalThis.__vidHyperframesScopes` with its `document`, `window`, `gsap` and
 * `__hyperframes`, named by the file it came from.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const code = scopedScriptCode("tl.play();", 0, "http://127.0.0.1/a.html");
 * assert.ok(code.includes("globalThis.__vidHyperframesScopes[0]"));
 * assert.ok(code.endsWith("//# sourceURL=http://127.0.0.1/a.html"));
 * ```
 */
export function scopedScriptCode(code: string, index: number, fileUrl: string): string {
  return `(function (scope) {\n(function (document, window, gsap, __hyperframes) {\n${code}\n}).call(globalThis, scope.document, scope.window, scope.gsap(), scope.hyperframes);\n})(globalThis.__vidHyperframesScopes[${index}]);\n//# sourceURL=${fileUrl}`;
}

/** The instance's `document`: the page's, with its queries kept inside the instance. */
export function scopedDocument(scope: () => Scope): Document {
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
}

/** A GSAP target: a selector string is looked up in the instance's document. */
function scopedTargets(scope: Scope, target: unknown): unknown {
  if (typeof target !== "string") return target;
  const doc = scope.document;
  return Array.from(doc.querySelectorAll(target));
}

/** A GSAP timeline whose tweens' selector targets are the instance's. */
function scopeTimeline(scope: Scope, timeline: Record<string, unknown>): unknown {
  for (const method of ["to", "from", "fromTo", "set"]) {
    const original = timeline[method];
    if (typeof original !== "function") continue;
    timeline[method] = function (this: unknown, target: unknown, ...rest: unknown[]) {
      return original.call(timeline, scopedTargets(scope, target), ...rest);
    };
  }
  return timeline;
}

/** The instance's `gsap`: the page's, its selector targets the instance's; undefined without GSAP. */
export function scopedGsap(w: PageGlobal, scope: Scope): unknown {
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
}

/**
 * The `window.__timelines` registry as the instance's scripts see it: the file registers
 * under its own id, and this instance's host may be named otherwise.
 */
function scopedRegistry(w: PageGlobal, scope: Scope): Record<string, unknown> {
  w.__timelines ??= {};
  const timelines = w.__timelines as Record<string, unknown>;
  if (scope.innerId === scope.timelineId) return timelines;
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
}

/** The instance's `window`: the page's, with its own `__timelines`, `__hyperframes` and `document`. */
export function scopedWindow(w: PageGlobal, scope: Scope): Window {
  return new Proxy(w, {
    get(target, prop) {
      if (prop === "__timelines") return scopedRegistry(w, scope);
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
}
