/**
 * The error of a bad render option, thrown by the option declarations of
 * `src/request/options.ts` on every surface: the SDK throws it as is, the CLI prints it
 * with the flag, the server answers it as a 400 naming the API field, `validateConfig`
 * rethrows it as a `ConfigError` naming `config.<field>`. One `detail` text, so each
 * surface says the same thing about the same value.
 *
 * @module
 */

import { VidError } from "../errors.ts";

/** An option of a render is out of range or malformed; names the option. */
export class RenderOptionError extends VidError {
  /** Always `"RenderOptionError"`. */
  override name = "RenderOptionError";
  /** SDK name of the option at fault, e.g. `fps`. */
  declare readonly field: string;
  /** What is wrong, e.g. `must be a rate from 1 to 240, got 0 (frames per second)`. */
  declare readonly detail: string;

  /**
   * Creates the error for one option.
   *
   * @param field SDK name of the option at fault (e.g. `fps`).
   * @param detail What is wrong; the message is `<field>: <detail>`.
   * @param flag The command-line flag of the option (e.g. `--fps`), when it has one.
   */
  constructor(field: string, detail: string, flag?: string) {
    super(`${field}: ${detail}`, { field, flag, detail, exitCode: 2 });
  }
}
