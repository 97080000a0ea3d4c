/**
 * The one base class of vid's input errors: a bad option, flag, body field, configuration
 * field or variable. It carries what every surface needs to report it in its own words:
 * the exit code of the CLI, the SDK path of the value at fault (`fps`, `variables.title`,
 * `config.fps`) and the command-line flag that sets it (`--fps`), so the CLI's top-level
 * handler, the server's error bodies and SDK callers read one shape instead of a mapping
 * per class.
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
  /** Exit code of the CLI. @default 2 (usage) */
  exitCode?: number;
  /** The error this one explains. */
  cause?: unknown;
}

/**
 * An input error of vid. `message` names the SDK `field`; {@linkcode VidError.cliMessage}
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
  }

  /** The message in the command line's words: the flag named where the SDK names the field. */
  cliMessage(): string {
    if (this.flag === undefined || this.detail === undefined) return this.message;
    return `${this.flag}: ${this.detail}`;
  }
}
