/**
 * The static part of `vid check`: what can be known from the project's files alone, with
 * no browser and no ffmpeg, so it is cheap enough for `vid validate`, the batch commands
 * and the server's request path. It finds script syntax errors, files the page names that
 * the project lacks (letter case included) and font files that are not fonts, near misses
 * of the `data-*` attributes vid reads on any element (with a did-you-mean from the one
 * edit-distance checker), dropped declarations, variables read but not declared
 * (`variable_reads.ts`), variables that do not resolve, paused CSS animations and wall-clock
 * reads (`timing.ts`), and what vid would leave unrendered: a sub-composition file that is
 * missing, a `<template>` nothing instantiates, a clip starting after the end. Each
 * problem's severity is the one table's (`SEVERITY`).
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import type { Composition } from "../composition/composition.ts";
import type { Variables } from "../composition/declarations.ts";
import { checkOverrides, editDistance } from "../composition/variables.ts";
import { fileFinder, projectPath } from "./files.ts";
import { type CheckProblem, SEVERITY } from "./problems.ts";
import { cssUrls, type FileRef, readReferences, type References } from "./references.ts";
import { type ScriptSource, syntaxErrors } from "./syntax.ts";
import { timingProblems } from "./timing.ts";
import { type PlacedText, type VariableRead, variableReadProblems } from "./variable_reads.ts";

/**
 * The `data-*` attributes vid reads (or will read, as the HyperFrames and media work
 * lands): root attributes, clip timing, media mixing, and the text probe's opt-out. An
 * attribute on any element a short edit away from one of these is reported as a typo (a clip
 * whose every timing attribute is misspelt is no clip at all); any other `data-*` attribute
 * is the page's own and is left alone.
 */
export const KNOWN_ATTRIBUTES: readonly string[] = [
  "data-composition-id",
  "data-composition-variables",
  "data-composition-src",
  "data-variable-values",
  "data-var-text",
  "data-var-src",
  "data-no-timeline",
  "data-width",
  "data-height",
  "data-duration",
  "data-fps",
  "data-start",
  "data-end",
  "data-track-index",
  "data-media-start",
  "data-volume",
  "data-playback-rate",
  "data-fade-in",
  "data-fade-out",
  "data-duck",
  "data-voice",
  "data-captions",
  "data-text-ok",
];

/**
 * The known attribute `name` most likely means, or undefined: one edit (a swap counts
 * as one) for names up to 6 letters after `data-`, two beyond. Looser limits would flag
 * a page's own `data-state` as `data-start`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(attributeTypo("data-volumne"), "data-volume");
 * assert.equal(attributeTypo("data-strat"), "data-start");
 * assert.equal(attributeTypo("data-state"), undefined);
 * assert.equal(attributeTypo("data-start"), undefined);
 * ```
 */
export function attributeTypo(name: string): string | undefined {
  const lower = name.toLowerCase();
  if (KNOWN_ATTRIBUTES.includes(lower)) return undefined;
  const bare = lower.slice("data-".length);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const known of KNOWN_ATTRIBUTES) {
    const knownBare = known.slice("data-".length);
    const limit = Math.max(bare.length, knownBare.length) <= 6 ? 1 : 2;
    const distance = editDistance(bare, knownBare);
    if (distance <= limit && distance < bestDistance) {
      best = known;
      bestDistance = distance;
    }
  }
  return best;
}

/** The first bytes of each font format a browser loads. */
const FONT_SIGNATURES: readonly string[] = ["wOF2", "wOFF", "\0\x01\0\0", "OTTO", "true"];

/**
 * Why a file named like a font (`.woff2`, `.woff`, `.ttf`, `.otf`) is not one, judged by its
 * first four bytes, or undefined when it is one (or is not named like one).
 */
async function notAFont(path: string): Promise<string | undefined> {
  if (!/\.(woff2?|ttf|otf)$/i.test(path)) return undefined;
  const head = await readFile(path).then((b) => b.subarray(0, 4), () => undefined);
  if (head === undefined) return undefined;
  const magic = String.fromCharCode(...head);
  if (FONT_SIGNATURES.includes(magic)) return undefined;
  return head.length < 4 ? "the file is nearly empty" : `it starts with ${JSON.stringify(magic)}`;
}

/** Input of {@linkcode staticCheck}. */
export interface StaticInput {
  composition: Composition;
  /** The overrides (`--variables`, `--variables-file`, a batch row). @default {} */
  overrides?: Variables;
  /** Parse the scripts (esbuild). @default true; a render's warnings leave it out */
  syntax?: boolean;
}

/** What the static part read, for the media part. */
export interface StaticResult {
  problems: CheckProblem[];
  /** The HTML's references (media sources for the media part). */
  references: References;
}

/** What every part of the static check reads: the composition, its HTML and its references. */
interface StaticContext {
  composition: Composition;
  /** The entry file's name, as problems name it. */
  entry: string;
  /** The entry's lines, for each problem's `source`. */
  htmlLines: string[];
  refs: References;
  /** Whether a project file exists (`fileFinder`). */
  exists: ReturnType<typeof fileFinder>;
  /** Where the problems go, in the order they are found. */
  problems: CheckProblem[];
}

/**
 * Checks one file reference of `fromName` (the entry, or a stylesheet of the project): a
 * problem when it is outside the project, missing, differs in letter case or is a font file
 * that is not a font. Resolves to whether the file is there to read.
 */
async function checkRef(
  ctx: StaticContext,
  ref: FileRef,
  fromFile: string,
  fromName: string,
): Promise<boolean> {
  const { composition, entry, htmlLines, problems } = ctx;
  const path = projectPath(ref.url, fromFile, composition.projectDir);
  if (path.kind === "remote") return false;
  const unrendered = ref.kind === "composition";
  const kind = unrendered ? "unrendered" as const : "missing-file" as const;
  const base = {
    severity: SEVERITY[kind],
    part: "static" as const,
    kind,
    file: fromName,
    line: ref.line,
    column: ref.column,
    field: ref.url,
    ...(fromName === entry && { source: htmlLines[ref.line - 1] }),
  };
  const consequence = unrendered
    ? "; the sub-composition it hosts would not be rendered"
    : ref.kind === "script"
    ? "; the page would run without it"
    : "";
  if (path.kind === "outside") {
    problems.push({
      ...base,
      message: `${ref.what} "${ref.url}" is outside the project folder, which is all a ` +
        `render serves; move the file into the project${consequence}`,
    });
    return false;
  }
  const missing = await ctx.exists(path.relative);
  if (missing === null) {
    const font = ref.kind === "css" ? await notAFont(path.path) : undefined;
    if (font !== undefined) {
      problems.push({
        ...base,
        severity: SEVERITY.font,
        kind: "font",
        message: `${ref.what} "${ref.url}" is not a font (${font}); the text would fall ` +
          "back to another font: use a woff2, woff, ttf or otf file",
      });
    }
    return true;
  }
  problems.push({
    ...base,
    message: missing.reason === "case"
      ? `${ref.what} "${ref.url}": the project has "${missing.actual}" (letter case differs; ` +
        `renders read files case-sensitively)${consequence}`
      : `${ref.what} "${ref.url}" does not exist in the project${consequence}`,
  });
  return false;
}

/**
 * Checks every file the HTML refers to, then the url()s of the project's stylesheets it
 * links; resolves to those stylesheets' text, for the timing and variable checks.
 */
async function checkFiles(ctx: StaticContext): Promise<PlacedText[]> {
  const { composition, entry } = ctx;
  const stylesheets: PlacedText[] = [];
  for (const ref of ctx.refs.files) {
    const found = await checkRef(ctx, ref, composition.file, entry);
    if (found && ref.kind === "stylesheet") {
      const path = projectPath(ref.url, composition.file, composition.projectDir);
      if (path.kind !== "local") continue;
      const css = await readFile(path.path, "utf8").catch(() => "");
      stylesheets.push({ file: path.relative, text: css, start: { line: 1, column: 1 } });
      for (const { url, place } of cssUrls(css, { line: 1, column: 1 })) {
        await checkRef(
          ctx,
          { url, what: "url()", kind: "css", ...place },
          path.path,
          path.relative,
        );
      }
    }
  }
  return stylesheets;
}

/** The page's scripts to parse: inline text, and project files that exist. */
async function scriptSources(ctx: StaticContext): Promise<ScriptSource[]> {
  const { composition, entry } = ctx;
  const scripts: ScriptSource[] = [];
  for (const script of ctx.refs.scripts) {
    if (script.text !== undefined) {
      if (script.text.trim() === "") continue;
      scripts.push({
        file: entry,
        text: script.text,
        module: script.module,
        start: script.textStart ?? script,
      });
      continue;
    }
    const path = projectPath(script.src ?? "", composition.file, composition.projectDir);
    if (path.kind !== "local" || await ctx.exists(path.relative) !== null) continue;
    const text = await readFile(path.path, "utf8").catch(() => undefined);
    if (text === undefined) continue;
    scripts.push({
      file: path.relative,
      text,
      module: script.module,
      start: { line: 1, column: 1 },
    });
  }
  return scripts;
}

/**
 * Attributes vid reads, misspelt, on any element: a clip whose every timing attribute is
 * misspelt is not timed at all, and would show for the whole video.
 */
function attributeTypoProblems(ctx: StaticContext): CheckProblem[] {
  const problems: CheckProblem[] = [];
  for (const element of ctx.refs.data) {
    for (const attribute of element.attributes) {
      const meant = attributeTypo(attribute.name);
      if (meant === undefined) continue;
      problems.push({
        severity: SEVERITY["unknown-attribute"],
        part: "static",
        kind: "unknown-attribute",
        message: `<${element.tag}> has ${attribute.name}, which vid does not read; ` +
          `did you mean ${meant}?`,
        file: ctx.entry,
        ...attribute.place,
        source: ctx.htmlLines[attribute.place.line - 1],
        field: attribute.name,
      });
    }
  }
  return problems;
}

/** Clips whose window lies outside the composition: they start at or after its end. */
function lateClipProblems(ctx: StaticContext): CheckProblem[] {
  const { composition } = ctx;
  const problems: CheckProblem[] = [];
  for (const element of ctx.refs.timed) {
    if (element.role === "root") continue;
    const start = element.attributes.find((a) => a.name === "data-start");
    const value = start ? Number(start.value) : NaN;
    if (start && Number.isFinite(value) && value >= composition.duration) {
      problems.push({
        severity: SEVERITY.unrendered,
        part: "static",
        kind: "unrendered",
        message: `<${element.tag}> starts at data-start="${start.value}", at or after the ` +
          `composition's end (data-duration="${composition.duration}"); it would never be shown`,
        file: ctx.entry,
        ...start.place,
        source: ctx.htmlLines[start.place.line - 1],
        field: "data-start",
      });
    }
  }
  return problems;
}

/** Templates that no script instantiates (no script names them). */
function unusedTemplateProblems(ctx: StaticContext, scripts: ScriptSource[]): CheckProblem[] {
  const problems: CheckProblem[] = [];
  const allScripts = scripts.map((s) => s.text).join("\n");
  for (const template of ctx.refs.templates) {
    const used = template.id !== undefined
      ? allScripts.includes(template.id)
      : /template/i.test(allScripts);
    if (used) continue;
    problems.push({
      severity: SEVERITY.unrendered,
      part: "static",
      kind: "unrendered",
      message: `<template${template.id ? ` id="${template.id}"` : ""}> is never instantiated: ` +
        "no script names it, so its content would not be rendered",
      file: ctx.entry,
      line: template.line,
      column: template.column,
      source: ctx.htmlLines[template.line - 1],
      ...(template.id !== undefined && { field: template.id }),
    });
  }
  return problems;
}

/**
 * Declarations dropped with a warning, as the spec says (a read of one is an error of the
 * variable reads), and the overrides' problems.
 */
function declarationProblems(ctx: StaticContext, overrides: Variables): CheckProblem[] {
  const { composition } = ctx;
  const problems: CheckProblem[] = [];
  for (const d of composition.dropped) {
    problems.push({
      severity: SEVERITY["dropped-declaration"],
      part: "static",
      kind: "dropped-declaration",
      message: `declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} is dropped: ${d.reason}; ` +
        `the page reads ${d.id ? `getVariables().${d.id} as undefined` : "nothing for it"}`,
      file: ctx.entry,
      field: d.id ?? `data-composition-variables[${d.index}]`,
    });
  }
  for (
    const p of checkOverrides(composition.declarations, overrides, {
      projectDir: composition.projectDir,
    })
  ) {
    // An image that does not resolve is a broken render; other override problems are the
    // warnings a render prints (errors under --strict).
    const kind = p.expected === "a file in the project" ? "variable" : "override";
    problems.push({
      severity: SEVERITY[kind],
      part: "static",
      kind,
      message: p.message,
      field: p.key,
    });
  }
  return problems;
}

/** The HTML's `data-var-text` and `data-var-src` bindings, as the variable reads take them. */
function variableBindings(ctx: StaticContext): VariableRead[] {
  return ctx.refs.data.flatMap((element) =>
    element.attributes
      .filter((a) => a.name === "data-var-text" || a.name === "data-var-src")
      .map((a) => ({
        id: a.value.trim(),
        file: ctx.entry,
        how: a.name as "data-var-text" | "data-var-src",
        ...a.place,
      }))
  );
}

/**
 * Runs the static part of the check on a composition read by `readComposition`.
 *
 * @example
 * ```ts no_run
 * import { readComposition } from "../composition/composition.ts";
 *
 * const { problems } = await staticCheck({ composition: await readComposition("examples/hello") });
 * ```
 */
export async function staticCheck(input: StaticInput): Promise<StaticResult> {
  const { composition } = input;
  const entry = composition.entry;
  const html = await readFile(composition.file, "utf8");
  const refs = readReferences(html);
  const problems: CheckProblem[] = [];
  const htmlLines = html.split("\n");
  const ctx: StaticContext = {
    composition,
    entry,
    htmlLines,
    refs,
    exists: fileFinder(composition.projectDir),
    problems,
  };
  const css: PlacedText[] = [
    ...refs.styles.map((style) => ({ file: entry, ...style })),
    ...refs.styleAttributes.map((style) => ({ file: entry, ...style })),
  ];
  // Files: every reference of the HTML, then the url()s of the project's stylesheets.
  const stylesheets = await checkFiles(ctx);
  const scripts = await scriptSources(ctx);
  if (input.syntax !== false) problems.push(...await syntaxErrors(scripts));
  css.push(...stylesheets);
  problems.push(...attributeTypoProblems(ctx));
  problems.push(...lateClipProblems(ctx));
  problems.push(...unusedTemplateProblems(ctx, scripts));
  const overrides = input.overrides ?? {};
  problems.push(...declarationProblems(ctx, overrides));
  problems.push(...timingProblems(scripts, css, htmlLines, entry));
  problems.push(...variableReadProblems({
    declared: composition.declarations.map((d) => d.id),
    supplied: Object.keys(overrides),
    dropped: composition.dropped,
    scripts,
    bindings: variableBindings(ctx),
    css,
    htmlLines,
    entry,
  }));
  return { problems, references: refs };
}
