/**
 * Errors raised while reading a composition or its variables. Each carries the
 * offending file and field so the CLI can name them and callers can branch on them.
 *
 * @module
 */

import { EXIT_FAILED, VidError } from "../errors.ts";

/** A composition file could not be read or its root element is invalid. */
export class CompositionError extends VidError {
  /** Always `"CompositionError"`. */
  override name = "CompositionError";
  /** Path of the HTML file. */
  readonly file: string;
  /** Attribute (or other field) at fault, when there is one. */
  override readonly field?: string;
  /** The bad value as written, when there is one. */
  readonly value?: string;

  /**
   * Creates the error for one composition file.
   *
   * @param message What is wrong, naming the fix.
   * @param file Path of the HTML file.
   * @param field Attribute at fault, when there is one.
   * @param value The bad value as written, when there is one.
   */
  constructor(message: string, file: string, field?: string, value?: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.file = file;
    this.field = field;
    this.value = value;
  }
}

/** `--variables` / `--variables-file` could not be read or is not a JSON object. */
export class VariablesInputError extends VidError {
  /** Always `"VariablesInputError"`. */
  override name = "VariablesInputError";
  /** The SDK option at fault: `variables` or `variablesFile`. */
  declare readonly field: string;
  /** The flag at fault: `--variables` or `--variables-file`. */
  declare readonly flag: string;

  /**
   * Creates the error for one flag.
   *
   * @param message What is wrong, naming the fix.
   * @param flag The flag at fault: `--variables` or `--variables-file`.
   */
  constructor(message: string, flag: string) {
    const field = flag === "--variables-file" ? "variablesFile" : "variables";
    super(message, { field, flag, exitCode: 2 });
  }
}

/** One problem found when checking overrides against the declarations. */
export interface VariableProblem {
  /** The override key. */
  key: string;
  /** What the declaration expects, in words. */
  expected: string;
  /** What was given, as JSON. */
  given: string;
  /** The full sentence shown to the user. */
  message: string;
  /** For an undeclared key: the declared name it most likely meant (e.g. `title` for `tittle`). */
  suggestion?: string;
}

/** Overrides failed `--strict-variables` checking; carries every problem found. */
export class StrictVariablesError extends VidError {
  /** Always `"StrictVariablesError"`. */
  override name = "StrictVariablesError";
  /** Every problem, in override key order. */
  readonly problems: VariableProblem[];
  /** SDK path of the first override at fault, e.g. `variables.title`. */
  declare readonly field: string;

  /**
   * Creates the error, listing every problem in its message.
   *
   * @param problems Every problem found, in override key order (at least one).
   */
  constructor(problems: VariableProblem[]) {
    super(
      `variables do not match the composition's declarations (--strict-variables):\n` +
        problems.map((p) => `  - ${p.message}`).join("\n"),
      {
        field: problems[0] === undefined ? "variables" : `variables.${problems[0].key}`,
        exitCode: 1,
      },
    );
    this.problems = problems;
  }
}
