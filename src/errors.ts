/**
 * The one base class of every error vid throws: a bad option, flag, body field,
 * configuration field or variable, and equally a failed render, a refused upload or an
 * unreachable stack. It carries what every surface needs to report it in its own words:
 * the exit code of the CLI, the SDK path of the value at fault (`fps`, `variables.title`,
 * `config.fps`), the command-line flag that sets it (`--fps`) and, for errors of an HTTP
 * API, the stable error code and HTTP status. The CLI's top-level handler, the server's
 * error bodies and SDK callers read this one shape instead of duck typing `code`,
 * `status` and `field` per class (tests/unit/error_tree_test.ts keeps every error class
 * under it; ARCHITECTURE.md draws the tree).
 *
 * @module
 */

/** Exit code of the CLI for a failed run (bad composition, failed render). */
export const EXIT_FAILED = 1;
/** Exit code of the CLI for bad input on the command line (a flag or its value). */
export const EXIT_USAGE = 2;

/** Options of {@linkcode VidError}. */
export interface VidErrorOptions {
  /** SDK path of the value at fault, e.g. `fps` or `variables.title`. */
  field?: string;
  /** Command-line flag that sets it, e.g. `--fps`. */
  flag?: string;
  /** What is wrong, without the name of the value; the message is `<field>: <detail>`. */
  detail?: string;
  /**
   * Exit code of the CLI. Input errors keep the default; an error of a run (a failed
   * render, an unreachable stack) says {@linkcode EXIT_FAILED} or its own code.
   * @default 2 (usage)
   */
  exitCode?: number;
  /** Stable machine-readable code, e.g. the API's `vid_not_found`. */
  code?: string;
  /** HTTP status an API answers (or answered) with this error. */
  status?: number;
  /** The error this one explains. */
  cause?: unknown;
}

/**
 * An error of vid. `message` names the SDK `field`; {@linkcode VidError.cliMessage}
 * names the `flag` instead, for the command line.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const error = new VidError("fps: must be a rate from 1 to 240, got 0", {
 *   field: "fps",
 *   flag: "--fps",
 *   detail: "must be a rate from 1 to 240, got 0",
 * });
 * assert.equal(error.cliMessage(), "--fps: must be a rate from 1 to 240, got 0");
 * ```
 */
export class VidError extends Error {
  /** The class name; subclasses set their own. */
  override name = "VidError";
  /** Exit code of the CLI: 2 for bad input on the command line, 1 otherwise. */
  readonly exitCode: number;
  /** SDK path of the value at fault, when there is one. */
  readonly field?: string;
  /** Command-line flag of the value at fault, when it has one. */
  readonly flag?: string;
  /** What is wrong, without the name of the value (when the message is built from it). */
  readonly detail?: string;
  /** Stable machine-readable code, e.g. the API's `vid_not_found`, when there is one. */
  readonly code?: string;
  /** HTTP status an API answers (or answered) with this error, when there is one. */
  readonly status?: number;

  /**
   * Creates the error.
   *
   * @param message The whole message.
   * @param options Field, flag, detail, exit code and cause.
   */
  constructor(message: string, options: VidErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.exitCode = options.exitCode ?? EXIT_USAGE;
    if (options.field !== undefined) this.field = options.field;
    if (options.flag !== undefined) this.flag = options.flag;
    if (options.detail !== undefined) this.detail = options.detail;
    if (options.code !== undefined) this.code = options.code;
    if (options.status !== undefined) this.status = options.status;
  }

  /** The message in the command line's words: the flag named where the SDK names the field. */
  cliMessage(): string {
    if (this.flag === undefined || this.detail === undefined) return this.message;
    return `${this.flag}: ${this.detail}`;
  }
}

/**
 * The message of anything thrown, for a log line: an `Error`'s message, else the value as
 * text (a rejected promise may carry anything).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { errorText } from "./errors.ts";
 *
 * assert.equal(errorText(new Error("database is locked")), "database is locked");
 * assert.equal(errorText("ECONNRESET"), "ECONNRESET");
 * ```
 */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
