/**
 * Script syntax errors without a browser: each inline and project script is parsed by
 * esbuild (a declared dependency, already the repository's bundler), which names the line,
 * the column and the source line. The browser would only say "SyntaxError" when the page
 * loads, and `vid validate` and the server's request path run no browser.
 *
 * @module
 */

import { type CheckProblem, SEVERITY } from "./problems.ts";

/** One script to parse. */
export interface ScriptSource {
  /** The project file it is in, for messages (`js/scene.js`, `index.html`). */
  file: string;
  text: string;
  /** An ES module (`import`/`export` allowed). */
  module: boolean;
  /** Where the text starts in `file` (an inline script's place in the HTML). */
  start: { line: number; column: number };
}

interface EsbuildMessage {
  text: string;
  location: { line: number; column: number; lineText: string } | null;
}

type Transform = (
  text: string,
  options: { loader: "js"; format?: "esm"; sourcefile: string; logLevel: "silent" },
) => Promise<unknown>;

/**
 * The syntax errors of `scripts`, one problem per script at most. Resolves to a warning
 * (not an error) when esbuild cannot start here: the browser part of `vid check` still
 * finds a syntax error when the page loads.
 *
 * @example
 * ```ts no_run
 * const problems = await syntaxErrors([
 *   { file: "a.js", text: "let x = ;", module: false, start: { line: 1, column: 1 } },
 * ]);
 * // problems[0].message: 'a.js: syntax error: Unexpected ";"'
 * ```
 */
export async function syntaxErrors(scripts: readonly ScriptSource[]): Promise<CheckProblem[]> {
  if (scripts.length === 0) return [];
  inFlight++;
  let esbuild: { transform: Transform; stop: () => Promise<void> | void };
  try {
    esbuild = await import("esbuild") as unknown as typeof esbuild;
  } catch (error) {
    inFlight--;
    return [unavailable(error)];
  }
  const problems: CheckProblem[] = [];
  try {
    for (const script of scripts) {
      try {
        await esbuild.transform(script.text, {
          loader: "js",
          ...(script.module ? { format: "esm" as const } : {}),
          sourcefile: script.file,
          logLevel: "silent",
        });
      } catch (error) {
        const messages = (error as { errors?: EsbuildMessage[] }).errors;
        if (!Array.isArray(messages)) return [unavailable(error)];
        const first = messages[0];
        if (!first) continue;
        const at = first.location;
        // esbuild's lines count from 1, its columns from 0; an inline script's first line
        // starts where the <script> text starts.
        const line = at ? script.start.line + at.line - 1 : script.start.line;
        const column = at
          ? (at.line === 1 ? script.start.column + at.column : at.column + 1)
          : script.start.column;
        problems.push({
          severity: SEVERITY.syntax,
          part: "static",
          kind: "syntax",
          message: `syntax error: ${first.text}; the page would throw while loading`,
          file: script.file,
          line,
          column,
          ...(at &&
            {
              source: at.line === 1
                ? " ".repeat(script.start.column - 1) + at.lineText
                : at.lineText,
            }),
        });
      }
    }
  } finally {
    // One esbuild service serves every caller of this process (the server checks uploads
    // side by side): the last one out stops it, so no child process outlives the work.
    if (--inFlight === 0) await esbuild.stop();
  }
  return problems;
}

/** Calls of {@linkcode syntaxErrors} under way: esbuild's service is shared by them. */
let inFlight = 0;

function unavailable(error: unknown): CheckProblem {
  return {
    severity: SEVERITY.checker,
    part: "static",
    kind: "checker",
    message: `scripts were not parsed (esbuild is unavailable: ${(error as Error).message}); ` +
      "the page load still reports a syntax error",
  };
}
