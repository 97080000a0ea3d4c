/**
 * Pieces every `vid` command shares: option parsers, exit codes, printing of warnings
 * and errors. Commands parse flags, call the SDK and print; no business logic here.
 *
 * @module
 */

import { InvalidArgumentError } from "@commander-js/extra-typings";
import { CheckFailedError } from "../check/problems.ts";
import { StrictVariablesError } from "../composition/errors.ts";
import { VidError } from "../errors.ts";
import { PageError } from "../render/page_error.ts";

/** Exit codes of the CLI. */
export const EXIT = {
  ok: 0,
  /** Invalid input (composition, variables in strict mode) or a failed render. */
  failed: 1,
  /** Bad command line: unknown flag, malformed flag value. */
  usage: 2,
  /** Interrupted with Ctrl-C or SIGTERM. */
  cancelled: 130,
} as const;

/** Parses an integer flag within `min`..`max`, naming the flag on error. */
export function integerIn(flag: string, min: number, max: number): (value: string) => number {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${flag} must be an integer from ${min} to ${max}.`);
    }
    return n;
  };
}

/** Parses a positive integer flag. */
export function positiveInteger(flag: string): (value: string) => number {
  return integerIn(flag, 1, Number.MAX_SAFE_INTEGER);
}

/** Writes a warning line to stderr. */
export function warn(message: string): void {
  console.error(`warning: ${message}`);
}

/**
 * `vid render`, `still` and `render-batch` run as root: Chromium refuses its sandbox to
 * root, so their browsers run without it; say so, once. The CLI does not switch accounts
 * itself (it renders the user's own project, into the user's files; `vid server`, which
 * renders tenants' pages, does, see `--render-user`).
 */
export function warnIfRoot(): void {
  if (Deno.uid() !== 0) return;
  warn(
    "running as root: Chromium's sandbox is off for root, so a page that exploits the " +
      "browser would run as root; render as an unprivileged user for the sandbox",
  );
}

/**
 * Exit code for an error thrown by the SDK: every error of vid ({@linkcode VidError})
 * carries its own (2 for a bad flag or value); anything else (a bug, a runtime's own
 * error) failed the run (1).
 */
export function exitCodeFor(error: unknown): number {
  return error instanceof VidError ? error.exitCode : EXIT.failed;
}

/**
 * `error` as a {@linkcode VidError}: itself, or a plain error (one vid did not make: a bug,
 * a runtime's own error) wrapped with its name and message kept, so the report below has
 * one shape to read.
 */
function asVidError(error: unknown): VidError {
  if (error instanceof VidError) return error;
  const plain = error instanceof Error ? error : new Error(String(error));
  const wrapped = new VidError(plain.message, { exitCode: EXIT.failed, cause: plain });
  wrapped.name = plain.name;
  return wrapped;
}

/**
 * Prints an SDK error to stderr (or as JSON on stdout) and returns its exit code.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { VidError } from "../errors.ts";
 *
 * const error = new VidError("fps: must be a rate", {
 *   field: "fps",
 *   flag: "--fps",
 *   detail: "must be a rate",
 * });
 * const log = console.error;
 * let printed = "";
 * console.error = (line: string) => printed = line;
 * try {
 *   assert.equal(reportError(error), 2);
 * } finally {
 *   console.error = log;
 * }
 * assert.equal(printed, "error: --fps: must be a rate");
 * ```
 */
export function reportError(error: unknown, json = false): number {
  const err = asVidError(error);
  // An API's error code and status, printed only when the error came over HTTP.
  const api = err.code !== undefined && err.status !== undefined
    ? { code: err.code, status: err.status }
    : undefined;
  if (json) {
    const body: Record<string, unknown> = { name: err.name, message: err.message };
    // The command line's words: the flag the value came through, else the SDK path.
    const field = err.flag ?? err.field;
    if (field !== undefined) body.field = field;
    if (err.flag !== undefined && err.field !== undefined) body.path = err.field;
    if (api) Object.assign(body, api);
    if (err instanceof StrictVariablesError || err instanceof CheckFailedError) {
      body.problems = err.problems;
    }
    if (err instanceof PageError) Object.assign(body, err.details());
    console.log(JSON.stringify({ ok: false, error: body }, null, 2));
  } else {
    const suffix = api && api.status > 0 ? ` (${api.code}, HTTP ${api.status})` : "";
    console.error(`error: ${err.cliMessage()}${suffix}`);
  }
  return err.exitCode;
}
