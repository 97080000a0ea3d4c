/**
 * What a composition's HTML refers to, read once with the composition reader's parser
 * (parse5) and located by line and column: its scripts (inline text or a file), the files
 * its elements and styles name, and the elements vid times (the root, media and clips)
 * with their `data-*` attributes. The static and media parts of `vid check` read this
 * instead of walking the HTML each.
 *
 * @module
 */

import { parse } from "parse5";
import type { DefaultTreeAdapterMap, Token } from "parse5";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

/** A place in the HTML file. Lines and columns count from 1. */
export interface Place {
  line: number;
  column: number;
}

/** One `<script>`: its text (inline) or the file it loads. */
export interface ScriptRef extends Place {
  /** `src` as written; absent for an inline script. */
  src?: string;
  /** The inline text; absent with `src`. */
  text?: string;
  /** Where the inline text starts (its first character). */
  textStart?: Place;
  /** An ES module (`type="module"`). */
  module: boolean;
}

/** Which element names a file, and how. */
export type RefKind = "script" | "stylesheet" | "media" | "image" | "composition" | "css" | "other";

/** One file the page names. */
export interface FileRef extends Place {
  /** The URL as written. */
  url: string;
  /** The element and attribute, e.g. `<img src>`, or `url()` in a style. */
  what: string;
  kind: RefKind;
  /** The tag of a media element (`video`, `audio`, `img`). */
  tag?: string;
}

/** An element vid reads `data-*` attributes of. */
export interface TimedElement extends Place {
  tag: string;
  /** `root`, `media` (video, audio, img) or `clip` (carries a timing attribute). */
  role: "root" | "media" | "clip";
  /** Its `data-*` attributes with their places. */
  attributes: { name: string; value: string; place: Place }[];
}

/** Any element with `data-*` attributes: misspelt ones are looked for on every element. */
export interface DataElement extends Place {
  tag: string;
  /** Its `data-*` attributes with their places. */
  attributes: { name: string; value: string; place: Place }[];
}

/** One `<template>` element. */
export interface TemplateRef extends Place {
  id?: string;
}

/** Everything {@linkcode readReferences} found. */
export interface References {
  scripts: ScriptRef[];
  files: FileRef[];
  timed: TimedElement[];
  /** Every element carrying a `data-*` attribute, the timed ones included. */
  data: DataElement[];
  templates: TemplateRef[];
  /** The text of inline `<style>` elements, with where each starts. */
  styles: { text: string; start: Place }[];
  /** The text of `style` attributes, with where each value starts. */
  styleAttributes: { text: string; start: Place }[];
}

/** Attributes whose presence makes an element a clip vid (or HyperFrames) times. */
const CLIP_ATTRIBUTES = ["data-start", "data-composition-src", "data-track-index"];

function isElement(node: Node): node is Element {
  return "tagName" in node;
}

function attr(element: Element, name: string): string | undefined {
  return element.attrs.find((a) => a.name === name)?.value;
}

function hasCompositionRoot(node: Node): boolean {
  if (isElement(node) && attr(node, "data-composition-id") !== undefined) return true;
  return ("childNodes" in node ? node.childNodes : []).some(hasCompositionRoot);
}

function placeOf(location: Token.Location | undefined | null): Place {
  return { line: location?.startLine ?? 1, column: location?.startCol ?? 1 };
}

function attrPlace(element: Element, name: string): Place {
  const location = element.sourceCodeLocation as Token.ElementLocation | undefined;
  return placeOf(location?.attrs?.[name] ?? location);
}

/** Where an attribute's value starts (after `name="`), for places inside it. */
function attrValuePlace(element: Element, name: string): Place {
  const at = attrPlace(element, name);
  const raw = element.sourceCodeLocation?.attrs?.[name];
  const quoted = raw && raw.endOffset - raw.startOffset > name.length + 1 ? 2 : 1;
  return { line: at.line, column: at.column + name.length + quoted };
}

/** The `url(...)` references of CSS text, with their places relative to `start`. */
export function cssUrls(text: string, start: Place): { url: string; place: Place }[] {
  const found: { url: string; place: Place }[] = [];
  const pattern = /url\(\s*(["']?)([^"')]+?)\1\s*\)/g;
  for (const match of text.matchAll(pattern)) {
    const before = text.slice(0, match.index);
    const lines = before.split("\n");
    const line = start.line + lines.length - 1;
    const column = lines.length === 1 ? start.column + before.length : lines.at(-1)!.length + 1;
    found.push({ url: match[2].trim(), place: { line, column } });
  }
  return found;
}

/**
 * Reads the scripts, file references, timed elements and templates of composition HTML.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const refs = readReferences(
 *   '<div data-composition-id="a"><img src="logo.png" data-strat="1"></div><script>go()</script>',
 * );
 * assert.deepEqual(refs.files.map((f) => [f.url, f.line]), [["logo.png", 1]]);
 * assert.equal(refs.scripts[0].text, "go()");
 * assert.equal(refs.timed[1].attributes[0].name, "data-strat");
 * ```
 */
export function readReferences(html: string): References {
  const refs: References = {
    scripts: [],
    files: [],
    timed: [],
    data: [],
    templates: [],
    styles: [],
    styleAttributes: [],
  };
  let rootSeen = false;
  const file = (element: Element, name: string, kind: RefKind, tag?: string): void => {
    const url = attr(element, name);
    if (url === undefined || url.trim() === "") return;
    refs.files.push({
      url: url.trim(),
      what: `<${element.tagName} ${name}>`,
      kind,
      ...(tag && { tag }),
      ...attrPlace(element, name),
    });
  };
  const visit = (node: Node): void => {
    if (isElement(node)) {
      const tag = node.tagName;
      const place = placeOf(node.sourceCodeLocation);
      if (tag === "script") {
        const type = (attr(node, "type") ?? "").trim().toLowerCase();
        const javascript = type === "" || type === "module" || /javascript|ecmascript/.test(type);
        const src = attr(node, "src");
        if (src !== undefined) file(node, "src", "script");
        if (javascript) {
          const textNode = node.childNodes.find((c) => c.nodeName === "#text") as
            | DefaultTreeAdapterMap["textNode"]
            | undefined;
          refs.scripts.push({
            ...place,
            module: type === "module",
            ...(src !== undefined ? { src: src.trim() } : {
              text: textNode?.value ?? "",
              textStart: placeOf(textNode?.sourceCodeLocation),
            }),
          });
        }
      } else if (tag === "link") {
        const rel = (attr(node, "rel") ?? "").toLowerCase().split(/\s+/);
        // An icon or a preload does not change a frame: not looked up.
        if (rel.includes("stylesheet")) file(node, "href", "stylesheet");
      } else if (tag === "video" || tag === "audio" || tag === "img") {
        file(node, "src", tag === "img" ? "image" : "media", tag);
        if (tag === "video") file(node, "poster", "image", "img");
      } else if (tag === "source") {
        file(node, "src", "media", "source");
      } else if (tag === "iframe" || tag === "track" || tag === "embed") {
        file(node, "src", "other");
      } else if (tag === "style") {
        const textNode = node.childNodes.find((c) => c.nodeName === "#text") as
          | DefaultTreeAdapterMap["textNode"]
          | undefined;
        if (textNode) {
          refs.styles.push({ text: textNode.value, start: placeOf(textNode.sourceCodeLocation) });
        }
      } else if (tag === "template") {
        const id = attr(node, "id");
        // A template holding the composition root is the composition (a HyperFrames
        // sub-composition file), not content waiting to be instantiated.
        const content = (node as DefaultTreeAdapterMap["template"]).content;
        if (!hasCompositionRoot(content)) {
          refs.templates.push({ ...place, ...(id !== undefined && { id }) });
        }
      }
      if (attr(node, "data-composition-src") !== undefined) {
        file(node, "data-composition-src", "composition");
      }
      const style = attr(node, "style");
      if (style !== undefined) {
        refs.styleAttributes.push({ text: style, start: attrValuePlace(node, "style") });
        for (const { url, place: at } of cssUrls(style, attrPlace(node, "style"))) {
          refs.files.push({ url, what: `url() in a style attribute`, kind: "css", ...at });
        }
      }
      const isRoot = !rootSeen && attr(node, "data-composition-id") !== undefined;
      if (isRoot) rootSeen = true;
      const role = isRoot
        ? "root"
        : tag === "video" || tag === "audio" || tag === "img"
        ? "media"
        : CLIP_ATTRIBUTES.some((a) => attr(node, a) !== undefined)
        ? "clip"
        : undefined;
      const attributes = node.attrs
        .filter((a) => a.name.startsWith("data-"))
        .map((a) => ({ name: a.name, value: a.value, place: attrPlace(node, a.name) }));
      if (attributes.length > 0) refs.data.push({ tag, ...place, attributes });
      if (role) refs.timed.push({ tag, role, ...place, attributes });
    }
    for (const child of "childNodes" in node ? node.childNodes : []) visit(child);
    if (isElement(node) && node.tagName === "template" && "content" in node) {
      visit((node as DefaultTreeAdapterMap["template"]).content);
    }
  };
  visit(parse(html, { sourceCodeLocationInfo: true }));
  for (const style of refs.styles) {
    for (const { url, place } of cssUrls(style.text, style.start)) {
      refs.files.push({ url, what: "url() in a <style>", kind: "css", ...place });
    }
  }
  return refs;
}
