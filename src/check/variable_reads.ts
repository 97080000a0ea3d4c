/**
 * The variables a project reads, found in its files with no browser, against what the
 * composition declares: a read of an id that is not declared (or whose declaration was
 * dropped) gets `undefined`, which reaches the screen as "Welcome undefined" or `NaN`. Found
 * here: `getVariables()` reads in scripts (`getVariables().name`, a variable holding the
 * result and its `.name` / `["name"]`, a destructuring of it), `data-var-text` and
 * `data-var-src` bindings, and CSS `var(--id)` with no fallback that nothing in the project
 * defines. A read this misses (a computed key) is caught in the page by the runtime's read
 * tracking (`src/runtime/variable_reads.ts`), named the same way.
 *
 * @module
 */

import type { DroppedDeclaration } from "../composition/declarations.ts";
import { nearestName } from "../composition/names.ts";
import { type CheckProblem, SEVERITY } from "./problems.ts";
import type { Place } from "./references.ts";
import type { ScriptSource } from "./syntax.ts";

/** One read of a variable, where it is. */
export interface VariableRead extends Place {
  id: string;
  /** The project file it is in. */
  file: string;
  /** How it reads it: `script`, `data-var-text`, `data-var-src` or `var()`. */
  how: "script" | "data-var-text" | "data-var-src" | "var()";
}

/** Text with a known start in its file. */
export interface PlacedText {
  file: string;
  text: string;
  start: Place;
}

const IDENT = "[A-Za-z_$][\\w$]*";
const CALL = /\b__(?:vid|hyperframes)\s*\.\s*getVariables\s*\(\s*\)/g;

/** The place of `offset` in `text`, which starts at `start`. */
function placeAt(text: string, offset: number, start: Place): Place {
  const before = text.slice(0, offset);
  const lines = before.split("\n");
  return lines.length === 1
    ? { line: start.line, column: start.column + before.length }
    : { line: start.line + lines.length - 1, column: lines.at(-1)!.length + 1 };
}

/** Comments blanked out (same length, newlines kept), so places stay right. */
function withoutComments(text: string): string {
  return text.replace(
    /\/\*[\s\S]*?\*\/|(?<![:"'\\])\/\/[^\n]*/g,
    (comment) => comment.replace(/[^\n]/g, " "),
  );
}

/**
 * The variable ids a script reads through `getVariables()`, with their places.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const reads = scriptReads({
 *   file: "index.html", module: false, start: { line: 10, column: 9 },
 *   text: "const v = __vid.getVariables();\nel.textContent = v.firstName;",
 * });
 * assert.deepEqual(reads.map((r) => [r.id, r.line, r.column]), [["firstName", 11, 20]]);
 * ```
 */
export function scriptReads(script: ScriptSource): VariableRead[] {
  const text = withoutComments(script.text);
  const reads: VariableRead[] = [];
  const add = (id: string, offset: number): void => {
    reads.push({ id, file: script.file, how: "script", ...placeAt(text, offset, script.start) });
  };
  for (const call of text.matchAll(CALL)) {
    const end = call.index + call[0].length;
    const after = text.slice(end);
    const member = new RegExp(`^\\s*\\??\\.\\s*(${IDENT})|^\\s*\\[\\s*(["'])(.*?)\\2\\s*\\]`)
      .exec(after);
    if (member) {
      const id = member[1] ?? member[3];
      add(id, end + member.index + member[0].indexOf(id));
      continue;
    }
    const before = text.slice(0, call.index);
    const alias = new RegExp(`\\b(?:const|let|var)\\s+(${IDENT})\\s*=\\s*(?:window\\s*\\.\\s*)?$`)
      .exec(before);
    if (alias) {
      const name = alias[1].replace(/\$/g, "\\$");
      const use = new RegExp(
        `(?<![\\w$.])${name}\\s*(?:\\??\\.\\s*(${IDENT})|\\[\\s*(["'])(.*?)\\2\\s*\\])`,
        "g",
      );
      for (const m of after.matchAll(use)) {
        const id = m[1] ?? m[3];
        add(id, end + m.index + m[0].lastIndexOf(id));
      }
      continue;
    }
    const pattern = /\b(?:const|let|var)\s*\{([^}]*)\}\s*=\s*(?:window\s*\.\s*)?$/.exec(before);
    if (pattern) {
      let offset = pattern.index + pattern[0].indexOf("{") + 1;
      for (const part of pattern[1].split(",")) {
        const key = new RegExp(`^\\s*(${IDENT})`).exec(part);
        if (key && !part.trimStart().startsWith("...")) {
          add(key[1], offset + key[0].length - key[1].length);
        }
        offset += part.length + 1;
      }
    }
  }
  return reads;
}

/**
 * The `var(--id)` uses of CSS text that have no fallback, and the custom properties it
 * defines (`--id:`), with places.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const css = cssVariables({ file: "a.css", text: ".t { color: var(--acent); --x: 1; width: var(--w, 2px) }", start: { line: 1, column: 1 } });
 * assert.deepEqual(css.uses.map((u) => u.id), ["acent"]);
 * assert.deepEqual([...css.defined], ["x"]);
 * ```
 */
export function cssVariables(css: PlacedText): { uses: VariableRead[]; defined: Set<string> } {
  const text = css.text.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, " "));
  const uses: VariableRead[] = [];
  for (const m of text.matchAll(/var\(\s*--([\w-]+)\s*\)/g)) {
    uses.push({
      id: m[1],
      file: css.file,
      how: "var()",
      ...placeAt(text, m.index + m[0].indexOf("--"), css.start),
    });
  }
  const defined = new Set<string>();
  for (const m of text.matchAll(/--([\w-]+)\s*:/g)) defined.add(m[1]);
  return { uses, defined };
}

/** Input of {@linkcode variableReadProblems}. */
export interface ReadsInput {
  /** The declared ids, in order. */
  declared: readonly string[];
  /**
   * Ids the overrides supply although nothing declares them: the page gets their values
   * (warn mode passes every override), so reading them is no undefined; the override's
   * own warning names them. @default []
   */
  supplied?: readonly string[];
  /** The declarations the reader dropped. */
  dropped: readonly DroppedDeclaration[];
  scripts: readonly ScriptSource[];
  /** `data-var-text` / `data-var-src` bindings, as reads. */
  bindings: readonly VariableRead[];
  /** Every CSS text of the project the page uses (styles, style attributes, stylesheets). */
  css: readonly PlacedText[];
  /** The HTML's lines, for the source line of a problem in it. */
  htmlLines: readonly string[];
  /** The HTML file's name in the project. */
  entry: string;
}

/**
 * One error per read of an id that is not declared, naming the id, the place, the dropped
 * declaration when there is one, and a did-you-mean.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const [p] = variableReadProblems({
 *   declared: ["title"], dropped: [], bindings: [], css: [], htmlLines: [], entry: "index.html",
 *   scripts: [{ file: "index.html", module: false, start: { line: 10, column: 1 },
 *     text: "el.textContent = __vid.getVariables().titel;" }],
 * });
 * assert.equal(p.message, "`titel` is read at index.html:10:39 but not declared; did you mean `title`? declared: title");
 * ```
 */
export function variableReadProblems(input: ReadsInput): CheckProblem[] {
  const declared = new Set([...input.declared, ...input.supplied ?? []]);
  const defined = new Set<string>();
  const cssUses: VariableRead[] = [];
  for (const css of input.css) {
    const found = cssVariables(css);
    cssUses.push(...found.uses);
    for (const id of found.defined) defined.add(id);
  }
  // A custom property a script sets (`style.setProperty("--x", …)`) is defined too.
  for (const script of input.scripts) {
    for (const m of script.text.matchAll(/["'`]--([\w-]+)["'`]/g)) defined.add(m[1]);
  }
  const reads = [
    ...input.scripts.flatMap(scriptReads),
    ...input.bindings,
    ...cssUses.filter((u) => !defined.has(u.id)),
  ];
  const problems: CheckProblem[] = [];
  const seen = new Set<string>();
  const known = input.declared.join(", ") || "none";
  for (const read of reads) {
    if (declared.has(read.id)) continue;
    // `v.hasOwnProperty(…)`, `v.toString()`: the object's methods, not variables.
    if (read.how === "script" && (read.id in Object.prototype || read.id === "toJSON")) continue;
    const key = `${read.id}|${read.file}:${read.line}:${read.column}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const where = `${read.file}:${read.line}:${read.column}`;
    const by = read.how === "script" ? "" : ` (${read.how})`;
    const dropped = input.dropped.find((d) => d.id === read.id);
    const near = nearestName(read.id, input.declared);
    const message = dropped
      ? `\`${read.id}\` is read at ${where}${by} but its declaration is dropped ` +
        `(declaration ${dropped.index}: ${dropped.reason}); fix the declaration`
      : `\`${read.id}\` is read at ${where}${by} but not declared;` +
        (near ? ` did you mean \`${near}\`?` : " declare it in data-composition-variables;") +
        ` declared: ${known}`;
    problems.push({
      severity: SEVERITY["undeclared-read"],
      part: "static",
      kind: "undeclared-read",
      message,
      file: read.file,
      line: read.line,
      column: read.column,
      ...(read.file === input.entry && { source: input.htmlLines[read.line - 1] }),
      field: read.id,
    });
  }
  return problems;
}
