/**
 * Sub-compositions as written in the files, without a browser: the `data-composition-src` hosts
 * of a composition (HyperFrames' model; `src/runtime/hyperframes.ts` mounts them in the page),
 * each with the file it loads and, read from that file's `<template>`, the hosts nested in it.
 * `vid info` lists them, so a project's structure and a host whose file is missing show before
 * a render.
 *
 * Paths resolve as HyperFrames resolves them in the page: against the project folder, except a
 * `../` path inside a sub-composition file, which is that file's.
 *
 * @module
 */

import { parse } from "parse5";
import type { DefaultTreeAdapterMap } from "parse5";
import { readFile } from "node:fs/promises";
import { dirname, relative, resolve } from "node:path";

type Node = DefaultTreeAdapterMap["node"];
type Element = DefaultTreeAdapterMap["element"];

/** One `data-composition-src` host and what it loads. */
export interface SubComposition {
  /** The host's `data-composition-id` (the id its timeline is registered under). */
  id: string;
  /** `data-composition-src` as written. */
  src: string;
  /** The file it loads, relative to the project folder. */
  file: string;
  /** `data-start` as written (seconds from the start of the composition around it, or a clip reference). */
  start: string;
  /** `data-duration` in seconds; null when the host has none (the file's timeline decides). */
  duration: number | null;
  /** Why the file could not be read; absent when it was. */
  error?: string;
  /** The hosts inside the file's `<template>`. */
  children: SubComposition[];
}

function isElement(node: Node): node is Element {
  return "tagName" in node;
}

function attribute(element: Element, name: string): string | undefined {
  return element.attrs.find((a) => a.name === name)?.value;
}

/** The hosts under `node`, outermost only (a host's own content is its file's). */
function hostsIn(node: Node, found: Element[] = []): Element[] {
  if (isElement(node) && attribute(node, "data-composition-src") !== undefined) {
    found.push(node);
    return found;
  }
  for (const child of "childNodes" in node ? node.childNodes : []) hostsIn(child, found);
  return found;
}

/** The first `<template>`'s content of a document, else the document. */
function templateOf(node: Node): Node | undefined {
  if (isElement(node) && node.tagName === "template" && "content" in node) {
    return (node as DefaultTreeAdapterMap["template"]).content;
  }
  for (const child of "childNodes" in node ? node.childNodes : []) {
    const found = templateOf(child);
    if (found) return found;
  }
  return undefined;
}

async function readHosts(
  projectDir: string,
  hosts: Element[],
  fromFile: string | null,
  depth: number,
): Promise<SubComposition[]> {
  return await Promise.all(hosts.map(async (host): Promise<SubComposition> => {
    const src = attribute(host, "data-composition-src") ?? "";
    const base = fromFile && src.trim().startsWith("../") ? dirname(fromFile) : projectDir;
    const file = resolve(base, src.trim().replace(/[?#].*$/, ""));
    const rawDuration = Number(attribute(host, "data-duration"));
    const entry: SubComposition = {
      id: attribute(host, "data-composition-id") ?? "",
      src,
      file: relative(projectDir, file),
      start: attribute(host, "data-start") ?? "0",
      duration: Number.isFinite(rawDuration) && rawDuration > 0 ? rawDuration : null,
      children: [],
    };
    if (depth >= 16) {
      entry.error = "nested deeper than 16 sub-compositions";
      return entry;
    }
    let html: string;
    try {
      html = await readFile(file, "utf8");
    } catch (error) {
      entry.error = (error as { code?: string }).code === "ENOENT"
        ? "no such file"
        : (error as Error).message;
      return entry;
    }
    const document = parse(html);
    const content = templateOf(document) ?? document;
    entry.children = await readHosts(projectDir, hostsIn(content), file, depth + 1);
    return entry;
  }));
}

/**
 * The sub-compositions of a composition file, nested ones inside their host's entry.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const subs = await readSubCompositions("tests/fixtures/hyperframes/project/index.html");
 * assert.deepEqual(subs.map((s) => [s.id, s.file, s.start]), [
 *   ["a", "compositions/a.html", "0.2"],
 *   ["c", "compositions/c.html", "0.4"],
 * ]);
 * assert.equal(subs[0].children[0].id, "b");
 * ```
 */
export async function readSubCompositions(file: string): Promise<SubComposition[]> {
  const absolute = resolve(file);
  const document = parse(await readFile(absolute, "utf8"));
  return await readHosts(dirname(absolute), hostsIn(document), null, 0);
}

/**
 * The hosts as indented lines, `vid info`'s form: id, file, window, and why a file is missing.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const lines = subCompositionLines([
 *   { id: "intro", src: "compositions/intro.html", file: "compositions/intro.html", start: "0", duration: 2, children: [] },
 * ]);
 * assert.deepEqual(lines, ["  intro  compositions/intro.html  at 0 s for 2 s"]);
 * ```
 */
export function subCompositionLines(subs: readonly SubComposition[], indent = "  "): string[] {
  return subs.flatMap((s) => [
    `${indent}${s.id || "(no id)"}  ${s.file}  at ${
      /^[\d.]+$/.test(s.start.trim()) ? `${s.start.trim()} s` : `"${s.start}"`
    }${s.duration !== null ? ` for ${s.duration} s` : ""}${s.error ? `  (${s.error})` : ""}`,
    ...subCompositionLines(s.children, `${indent}  `),
  ]);
}
