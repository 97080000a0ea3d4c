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
 * Exit code for an error thrown by the SDK: an input error ({@linkcode VidError}) carries
 * its own (2 for a bad flag or value); anything else failed the run (1).
 */
export function exitCodeFor(error: unknown): number {
  return error instanceof VidError ? error.exitCode : EXIT.failed;
}

/** Prints an SDK error to stderr (or as JSON on stdout) and returns its exit code. */
export function reportError(error: unknown, json = false): number {
  const err = error instanceof Error ? error : new Error(String(error));
  const code = exitCodeFor(err);
  if (json) {
    const body: Record<string, unknown> = {
      ok: false,
      error: { name: err.name, message: err.message },
    };
    // The command line's words: the flag the value came through, else the SDK path.
    const field = err instanceof VidError
      ? err.flag ?? err.field
      : (err as { field?: unknown }).field;
    if (typeof field === "string") (body.error as Record<string, unknown>).field = field;
    if (err instanceof VidError && err.flag !== undefined && err.field !== undefined) {
      (body.error as Record<string, unknown>).path = err.field;
    }
    const api = apiCode(err);
    if (api) Object.assign(body.error as Record<string, unknown>, api);
    if (err instanceof StrictVariablesError || err instanceof CheckFailedError) {
      (body.error as Record<string, unknown>).problems = err.problems;
    }
    if (err instanceof PageError) {
      Object.assign(body.error as Record<string, unknown>, err.details());
    }
    console.log(JSON.stringify(body, null, 2));
  } else {
    const api = apiCode(err);
    const suffix = api && api.status > 0 ? ` (${api.code}, HTTP ${api.status})` : "";
    const message = err instanceof VidError ? err.cliMessage() : err.message;
    console.error(`error: ${message}${suffix}`);
  }
  return code;
}

/** The hosted API's error code and HTTP status carried by `error`, if any. */
function apiCode(error: Error): { code: string; status: number } | undefined {
  const { code, status } = error as { code?: unknown; status?: unknown };
  if (typeof code !== "string" || typeof status !== "number") return undefined;
  return { code, status };
}
