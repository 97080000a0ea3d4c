/**
 * Pieces every `vid` command shares: option parsers, exit codes, printing of warnings
 * and errors. Commands parse flags, call the SDK and print; no business logic here.
 *
 * @module
 */

import { InvalidArgumentError } from "@commander-js/extra-typings";
import {
  CompositionError,
  StrictVariablesError,
  VariablesInputError,
} from "../composition/errors.ts";
import { frameRateValue, parseFrameRate } from "../composition/frame_rate.ts";
import { PageError } from "../render/page_error.ts";
import { MissingDependencyError } from "../render/system.ts";

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

/** Help texts of the variable flags, shared by every command that takes them. */
export const VARIABLES_HELP = {
  variables: "inline JSON object of variable overrides (wins over --variables-file)",
  variablesFile: "JSON or JSONC file holding an object of variable overrides",
  strict: "fail on undeclared keys or wrong types instead of warning",
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

/** Help text of every `--fps` flag. */
export const FPS_HELP =
  "frames per second, 1-240: an integer, 29.97 / 23.976 / 59.94 (exactly 30000/1001 " +
  "etc.) or a fraction such as 30000/1001";

/**
 * Parses a frame-rate flag (`30`, `29.97`, `30000/1001`) with the one rate parser, naming
 * the flag on error. Returns the rate's value num/den, which every surface maps back to
 * the same fraction.
 */
export function frameRateArg(flag: string): (value: string) => number {
  return (value: string): number => {
    try {
      return frameRateValue(parseFrameRate(value, flag));
    } catch (error) {
      throw new InvalidArgumentError(`${(error as Error).message}.`);
    }
  };
}

/** Parses a positive integer flag. */
export function positiveInteger(flag: string): (value: string) => number {
  return integerIn(flag, 1, Number.MAX_SAFE_INTEGER);
}

/** Parses `--frames <from>-<to>`. */
export function frameRangeArg(value: string): { from: number; to: number } {
  const parts = value.split("-");
  const [from, to] = parts.map((p) => Number(p));
  if (
    parts.length !== 2 || parts.some((p) => p.trim() === "") || !Number.isInteger(from) ||
    !Number.isInteger(to) || from < 0 || to < from
  ) {
    throw new InvalidArgumentError(
      `--frames must be <from>-<to> with whole frame numbers, from <= to (e.g. 0-59).`,
    );
  }
  return { from, to };
}

/** Writes a warning line to stderr. */
export function warn(message: string): void {
  console.error(`warning: ${message}`);
}

/**
 * Errors of a bad option value, recognised by name: importing their classes would load the
 * renderer (and the cloud client) into every command, however small.
 */
const USAGE_ERROR_NAMES = new Set(["RenderOptionError", "CloudRenderError"]);

/** Exit code for an error thrown by the SDK. */
export function exitCodeFor(error: unknown): number {
  if (error instanceof VariablesInputError) return EXIT.usage;
  if (error instanceof Error && USAGE_ERROR_NAMES.has(error.name)) return EXIT.usage;
  if (
    error instanceof CompositionError || error instanceof StrictVariablesError ||
    error instanceof MissingDependencyError
  ) return EXIT.failed;
  return EXIT.failed;
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
    const field = (err as { field?: unknown }).field;
    if (typeof field === "string") (body.error as Record<string, unknown>).field = field;
    const api = apiCode(err);
    if (api) Object.assign(body.error as Record<string, unknown>, api);
    if (err instanceof StrictVariablesError) {
      (body.error as Record<string, unknown>).problems = err.problems;
    }
    if (err instanceof PageError) {
      Object.assign(body.error as Record<string, unknown>, err.details());
    }
    console.log(JSON.stringify(body, null, 2));
  } else {
    const api = apiCode(err);
    const suffix = api && api.status > 0 ? ` (${api.code}, HTTP ${api.status})` : "";
    console.error(`error: ${err.message}${suffix}`);
  }
  return code;
}

/** The hosted API's error code and HTTP status carried by `error`, if any. */
function apiCode(error: Error): { code: string; status: number } | undefined {
  const { code, status } = error as { code?: unknown; status?: unknown };
  if (typeof code !== "string" || typeof status !== "number") return undefined;
  return { code, status };
}
