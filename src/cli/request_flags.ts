/**
 * Commander options derived from the render option declarations (`src/request/options.ts`):
 * the flag, its help text (with the default and choices), its parser and its error message
 * all come from the one declaration, so `vid render`, `vid still`, `vid render-batch`,
 * `vid cloud render` and `vid lambda render`/`render-batch` cannot drift apart.
 *
 * @module
 */

import { InvalidArgumentError, Option } from "@commander-js/extra-typings";
import { type OptionDeclaration, parseOption, RenderOptionError } from "../request/mod.ts";

/** Changes a command may make to a derived option's help (never to its parsing). */
export interface FlagHelp {
  /** Help text to use instead of the declaration's, for a command whose meaning differs. */
  help?: string;
  /** How this command states the default, instead of the declaration's. */
  defaultText?: string;
}

/** The help text of a declaration: its text, the env variable and the default. */
export function flagHelp(
  declaration: OptionDeclaration<string, unknown>,
  overrides: FlagHelp = {},
  withValue = false,
): string {
  const parts = [overrides.help ?? declaration.help];
  if (declaration.env !== undefined) parts.push(`(env ${declaration.env})`);
  // A default commander supplies is shown by commander itself.
  const text = overrides.defaultText ?? declaration.defaultText ??
    (declaration.default !== undefined ? String(declaration.default) : undefined);
  if (!withValue && text !== undefined) parts.push(`(default: ${text})`);
  return parts.join(" ");
}

/** The flags of a declaration; an SDK-only option has none to add to a command. */
function flagsOf<F extends string>(declaration: OptionDeclaration<F, unknown>): F {
  if (declaration.flags === undefined) {
    throw new TypeError(`option ${declaration.key} has no command-line flag`);
  }
  return declaration.flags;
}

/**
 * The property commander stores a declared option's value under: the camel case of its long
 * flag (`--frame-timeout` gives `frameTimeout`), which need not be the declaration's key
 * (`frameTimeoutMs`). Code reading parsed flags by declaration goes through this.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { OPTIONS } from "../request/options.ts";
 *
 * assert.equal(flagProperty(OPTIONS.frameTimeoutMs), "frameTimeout");
 * assert.equal(flagProperty(OPTIONS.videoFormat), "format");
 * ```
 */
export function flagProperty(declaration: OptionDeclaration<string, unknown>): string {
  return new Option(flagsOf(declaration)).attributeName();
}

/** Parses a flag's text with its declaration; a bad value is commander's usage error. */
function parser<T, C extends T>(declaration: OptionDeclaration<string, T, C>): (text: string) => C {
  return (text: string): C => {
    try {
      // Without a parser the check of the text is the parse, and returns the text's type.
      return parseOption(declaration, text) as C;
    } catch (error) {
      if (error instanceof RenderOptionError) {
        throw new InvalidArgumentError(`${error.cliMessage()}.`);
      }
      throw error;
    }
  };
}

/**
 * The commander option of a declared option that takes a value. The value is unset when
 * the flag is absent (the SDK applies the default, so `--format` can yield to the
 * `--output` extension); the help states the default.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { Command } from "@commander-js/extra-typings";
 * import { OPTIONS } from "../request/options.ts";
 *
 * const command = new Command("render");
 * command.addOption(cliOption(OPTIONS.fps));
 * assert.ok(command.options.some((option) => option.long === "--fps"));
 * ```
 */
export function cliOption<const F extends string, T, C extends T>(
  declaration: OptionDeclaration<F, T, C>,
  overrides: FlagHelp = {},
): Option<F, undefined, undefined, C, false, undefined> {
  const option = new Option(flagsOf(declaration), flagHelp(declaration, overrides))
    .argParser(parser(declaration));
  if (declaration.choices) option.argChoices = [...declaration.choices];
  return option;
}

/**
 * The commander option of a declared option whose default commander fills in (shown as
 * `default: "standard"` in the help).
 */
export function cliOptionWithDefault<const F extends string, T, C extends T>(
  declaration: OptionDeclaration<F, T, C>,
  overrides: FlagHelp = {},
): Option<F, undefined, T, C, false, undefined> {
  if (declaration.default === undefined) {
    throw new TypeError(`option ${declaration.key} declares no default`);
  }
  const option = new Option(flagsOf(declaration), flagHelp(declaration, overrides, true))
    .argParser(parser(declaration))
    .default(declaration.default);
  if (declaration.choices) option.argChoices = [...declaration.choices];
  return option;
}

/** The commander option of a declared on/off switch (`--hdr`, `--strict-variables`). */
export function cliSwitch<const F extends string>(
  declaration: OptionDeclaration<F, boolean>,
  overrides: FlagHelp = {},
): Option<F> {
  return new Option(flagsOf(declaration), overrides.help ?? declaration.help);
}
