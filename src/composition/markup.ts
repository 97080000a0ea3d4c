/**
 * A composition's markup as vid reads it: the top-level composition element, found with a
 * real HTML parser, its root attributes and its variable declarations. Pure (no file
 * system), so `<vid-player>` reads a composition it fetched with the very code `vid check`
 * and the renderer run (`composition.ts` adds where the file is).
 *
 * @module
 */

import { parse } from "parse5";
import type { DefaultTreeAdapterMap } from "parse5";
import { isCssColor } from "./color.ts";
import {
  DeclarationsSyntaxError,
  type DroppedDeclaration,
  parseDeclarations,
  type VariableDeclaration,
} from "./declarations.ts";
import { CompositionError } from "./errors.ts";
import { type FrameRate, FrameRateError, parseFrameRate } from "./frame_rate.ts";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

/** The aspect ratios the hosted service knows; anything else is `null`. */
export type AspectRatio = "16:9" | "9:16" | "1:1";

/** A parsed composition. */
export interface Composition {
  /** Absolute path of the HTML file. */
  file: string;
  /** Absolute path of the project directory (the file's folder). */
  projectDir: string;
  /** Entry file name relative to the project directory. */
  entry: string;
  /** `data-composition-id`. */
  id: string;
  /** `data-width` in pixels. */
  width: number;
  /** `data-height` in pixels. */
  height: number;
  /** `data-duration` in seconds. */
  duration: number;
  /**
   * `data-fps`: the frame rate the composition is made for, when it pins one (`30`,
   * `29.97` = 30000/1001, `30000/1001`). A render's `--fps` (SDK `fps`) wins over it.
   */
  fps?: FrameRate;
  /** Derived from width and height; null when it is none of the known ratios. */
  aspectRatio: AspectRatio | null;
  /** Declarations that passed every check. */
  declarations: VariableDeclaration[];
  /** Declarations dropped with a reason (shown as warnings). */
  dropped: DroppedDeclaration[];
}

/** What a composition's markup says: a `Composition` but where its file is. */
export type CompositionMarkup = Omit<Composition, "file" | "projectDir" | "entry">;

/**
 * The aspect ratio of a size, if it is exactly 16:9, 9:16 or 1:1.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(aspectRatioOf(1920, 1080), "16:9");
 * assert.equal(aspectRatioOf(1000, 700), null);
 * ```
 */
export function aspectRatioOf(width: number, height: number): AspectRatio | null {
  if (width * 9 === height * 16) return "16:9";
  if (width * 16 === height * 9) return "9:16";
  if (width === height) return "1:1";
  return null;
}

function isElement(node: Node): node is Element {
  return "tagName" in node;
}

function attribute(element: Element, name: string): string | undefined {
  return element.attrs.find((a) => a.name === name)?.value;
}

/**
 * The composition root, chosen as HyperFrames' runtime chooses it: the element marked
 * `data-root="true"` (with a `data-composition-id`) if there is one, else the first element
 * carrying `data-composition-id` in document order (the topmost one).
 */
function findRoot(document: Node): Element | undefined {
  return findFirst(document, (el) => attribute(el, "data-root") === "true") ??
    findFirst(document, () => true);
}

/** Depth-first search for the first element carrying `data-composition-id` that `accept`s. */
function findFirst(node: Node, accept: (element: Element) => boolean): Element | undefined {
  if (isElement(node) && attribute(node, "data-composition-id") !== undefined && accept(node)) {
    return node;
  }
  const children = "childNodes" in node ? node.childNodes : [];
  for (const child of children) {
    const found = findFirst(child, accept);
    if (found) return found;
  }
  // <template> content lives in a separate fragment.
  if (isElement(node) && node.tagName === "template" && "content" in node) {
    return findFirst((node as DefaultTreeAdapterMap["template"]).content, accept);
  }
  return undefined;
}

function positiveInteger(file: string, root: Element, name: string): number {
  const raw = attribute(root, name);
  if (raw === undefined) {
    throw new CompositionError(
      `${file}: the composition root has no ${name} attribute (a positive integer in pixels)`,
      file,
      name,
    );
  }
  // Decimal digits only: Number() would also take "0x780", "1e3" or "1920.0".
  const value = /^\+?\d+$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new CompositionError(
      `${file}: ${name}="${raw}" is not a positive integer number of pixels`,
      file,
      name,
      raw,
    );
  }
  return value;
}

/** A decimal number of seconds, or NaN (Number() would also take "0x5" or "0b1"). */
function decimalSeconds(raw: string): number {
  return /^\+?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
}

/**
 * Where the last of the root's own sub-compositions ends (`data-start` + `data-duration`, both
 * in seconds): the length HyperFrames gives a root that declares none (its runtime's "authored
 * composition duration floor"). Null when no sub-composition of the root has both.
 */
function childCompositionsEnd(root: Element): number | null {
  let end = 0;
  const visit = (node: Node): void => {
    for (const child of "childNodes" in node ? node.childNodes : []) {
      if (!isElement(child)) continue;
      if (attribute(child, "data-composition-id") === undefined) {
        visit(child);
        continue;
      }
      // A sub-composition of the root: its own children count from it, so stop here.
      const start = decimalSeconds(attribute(child, "data-start") ?? "");
      const length = decimalSeconds(attribute(child, "data-duration") ?? "");
      if (Number.isFinite(start) && Number.isFinite(length) && length > 0) {
        end = Math.max(end, start + length);
      }
    }
  };
  visit(root);
  return end > 0 ? end : null;
}

/** Every element of the document that carries `data-composition-id`, in document order. */
function compositionElements(node: Node, found: Element[] = []): Element[] {
  if (isElement(node) && attribute(node, "data-composition-id") !== undefined) found.push(node);
  for (const child of "childNodes" in node ? node.childNodes : []) {
    compositionElements(child, found);
  }
  return found;
}

/** The text of every inline `<script>` of the document. */
function inlineScripts(node: Node, found: string[] = []): string[] {
  if (isElement(node) && node.tagName === "script" && attribute(node, "src") === undefined) {
    found.push(node.childNodes.map((c) => ("value" in c ? String(c.value) : "")).join(""));
  }
  for (const child of "childNodes" in node ? node.childNodes : []) inlineScripts(child, found);
  return found;
}

/**
 * The ids the page registers a GSAP timeline under, read from its markup: the string keys of
 * `window.__timelines["id"] = …` and `__timelines.id = …` in its inline scripts, and each host
 * of a sub-composition file (`data-composition-src`, registered under the host's id). Null when
 * a registration's key cannot be read without running the page (a computed key, or the list
 * form `window.__timelines = [tl]`, which HyperFrames gives the root's id).
 */
function registeredTimelineIds(document: Node, compositions: Element[]): Set<string> | null {
  const ids = new Set<string>();
  for (const script of inlineScripts(document)) {
    const keyed = /__timelines\s*(?:\[\s*(["'`])([^"'`\n]+)\1\s*\]|\.([A-Za-z_$][\w$]*))\s*=(?!=)/g;
    for (const match of script.matchAll(keyed)) ids.add((match[2] ?? match[3]).trim());
    if (/__timelines\s*\[\s*[^\s"'`]/.test(script) || /__timelines\s*=\s*\[/.test(script)) {
      return null;
    }
  }
  for (const host of compositions) {
    if (attribute(host, "data-composition-src") === undefined) continue;
    const id = attribute(host, "data-composition-id")?.trim();
    if (!id) return null;
    ids.add(id);
  }
  return ids;
}

/**
 * The length HyperFrames' runtime gives a root that declares none and has no sub-composition
 * with one: with no timeline under the root's own id, it plays the page's sole registered
 * timeline (HyperFrames' `airbnb-deck`: a `<canvas>` first, then the composition of the
 * scenes, whose timeline is the only one). vid reads lengths from the markup, so that timeline
 * lasts what its composition element declares (`data-duration`, else until its last
 * sub-composition ends). Null when the markup does not tell (no registration, more than one,
 * one under the root's id, a key read only by running the page, or no such element).
 */
function soleTimelineLength(document: Node, root: Element): number | null {
  const compositions = compositionElements(document);
  const ids = registeredTimelineIds(document, compositions);
  const rootId = attribute(root, "data-composition-id")?.trim();
  if (ids === null || ids.size !== 1 || (rootId !== undefined && ids.has(rootId))) return null;
  const [id] = ids;
  const owner = compositions.find((el) =>
    el !== root && attribute(el, "data-composition-id")?.trim() === id
  );
  if (!owner) return null;
  const declared = decimalSeconds(attribute(owner, "data-duration") ?? "");
  if (Number.isFinite(declared) && declared > 0) return declared;
  return childCompositionsEnd(owner);
}

function positiveSeconds(file: string, root: Element, name: string, document: Node): number {
  const raw = attribute(root, name);
  if (raw === undefined) {
    // As HyperFrames: a root without a length lasts until its last sub-composition ends, and
    // one without those too plays the page's sole registered timeline.
    const end = childCompositionsEnd(root) ?? soleTimelineLength(document, root);
    if (end !== null) return end;
    throw new CompositionError(
      `${file}: the composition root has no ${name} attribute (positive seconds, e.g. "5")`,
      file,
      name,
    );
  }
  const value = decimalSeconds(raw);
  if (!Number.isFinite(value) || value <= 0) {
    throw new CompositionError(
      `${file}: ${name}="${raw}" is not a positive number of seconds`,
      file,
      name,
      raw,
    );
  }
  return value;
}

/**
 * Parses composition HTML. `file` names it in messages.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const c = parseCompositionMarkup(
 *   '<div data-composition-id="intro" data-width="1080" data-height="1920" data-duration="3"></div>',
 *   "intro/index.html",
 * );
 * assert.equal(c.aspectRatio, "9:16");
 * ```
 */
export function parseCompositionMarkup(html: string, file: string): CompositionMarkup {
  const document = parse(html);
  const root = findRoot(document);
  if (!root) {
    throw new CompositionError(
      `${file}: no composition element found; the top-level element needs a ` +
        `data-composition-id attribute`,
      file,
      "data-composition-id",
    );
  }
  const rawId = attribute(root, "data-composition-id") ?? "";
  const id = rawId.trim();
  if (id === "") {
    throw new CompositionError(
      `${file}: data-composition-id is empty; give the composition a name`,
      file,
      "data-composition-id",
      rawId,
    );
  }
  const width = positiveInteger(file, root, "data-width");
  const height = positiveInteger(file, root, "data-height");
  const duration = positiveSeconds(file, root, "data-duration", document);
  const rawFps = attribute(root, "data-fps");
  let fps: FrameRate | undefined;
  if (rawFps !== undefined) {
    try {
      fps = parseFrameRate(rawFps, "data-fps");
    } catch (error) {
      if (!(error instanceof FrameRateError)) throw error;
      throw new CompositionError(`${file}: ${error.message}`, file, "data-fps", rawFps);
    }
  }
  // HyperFrames declares variables on <html>; vid on the root. Both are read, the root's
  // declaration of an id winning (HyperFrames' order: <html> first, then the composition).
  const htmlElement = document.childNodes.find((n): n is Element =>
    isElement(n) && n.tagName === "html"
  );
  let declarations: VariableDeclaration[] = [];
  let dropped: DroppedDeclaration[] = [];
  for (const element of htmlElement && htmlElement !== root ? [htmlElement, root] : [root]) {
    const rawDeclarations = attribute(element, "data-composition-variables");
    if (rawDeclarations === undefined || rawDeclarations.trim() === "") continue;
    try {
      const parsed = parseDeclarations(rawDeclarations, isCssColor);
      const ids = new Set(parsed.declarations.map((d) => d.id));
      declarations = [...declarations.filter((d) => !ids.has(d.id)), ...parsed.declarations];
      dropped = [...dropped, ...parsed.dropped];
    } catch (error) {
      if (error instanceof DeclarationsSyntaxError) {
        throw new CompositionError(
          `${file}: ${error.message}`,
          file,
          error.field,
          rawDeclarations,
        );
      }
      throw error;
    }
  }
  return {
    id,
    width,
    height,
    duration,
    ...(fps && { fps }),
    aspectRatio: aspectRatioOf(width, height),
    declarations,
    dropped,
  };
}
