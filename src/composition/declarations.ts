/**
 * Variable declarations: the JSON array in a composition root's
 * `data-composition-variables` attribute. Invalid entries are dropped with a warning
 * rather than failing the whole composition.
 *
 * Beyond the spec's five types, a declaration may be an `image` (a project file path or
 * an http(s) URL), a `number` may carry `min`/`max`/`step`, and any declaration a
 * `description` and a `group` for editors. An invalid extra drops the declaration like
 * any other invalid field.
 *
 * @module
 */
import { EXIT_FAILED, VidError } from "../errors.ts";

/** The five variable types of the spec, plus `image`. */
export type VariableType = "string" | "number" | "color" | "boolean" | "enum" | "image";

/** The spec's five types, in its order. */
export const VARIABLE_TYPES: readonly VariableType[] = [
  "string",
  "number",
  "color",
  "boolean",
  "enum",
];

/** Every type a declaration may have: the spec's five, then `image`. */
export const ACCEPTED_VARIABLE_TYPES: readonly VariableType[] = [...VARIABLE_TYPES, "image"];

/**
 * Values keyed by variable id, as `window.__vid.getVariables()` returns them. The SDK's
 * entries spell it out (`Record<string, unknown>`) rather than export this name.
 */
export type Variables = Record<string, unknown>;

/** A declaration that passed every check. */
export interface VariableDeclaration {
  /** Variable name; the key in the runtime values object. */
  id: string;
  /** One of the five types. */
  type: VariableType;
  /** Human label for editors; the id when not given. */
  label: string;
  /**
   * Declared default, already checked against the type: a typed primitive (structured data
   * travels as a string the composition parses itself). Absent when not declared.
   */
  default?: string | number | boolean;
  /**
   * Options of an `enum`, normalised. In the attribute an option may be written as a plain
   * string (`"wide"`, which is both value and label) or as
   * `{ "value": "wide", "label": "Wide" }`.
   */
  options?: {
    /** The value the composition receives. */
    value: string;
    /** Label for editors; equals `value` when not given. */
    label: string;
  }[];
  /** Smallest value of a `number` (inclusive). */
  min?: number;
  /** Largest value of a `number` (inclusive). */
  max?: number;
  /** Increment of a `number` for editors' sliders and steppers (> 0). */
  step?: number;
  /** Longer help text for editors, shown by `vid info` and in generated types. */
  description?: string;
  /** Name of the group editors show the variable in (e.g. "Colours"). */
  group?: string;
}

/**
 * A variable's runtime value, {@linkcode VariableDeclaration.default}'s type. An internal
 * name: the SDK's entries export the declaration, not its parts (issue #35).
 */
export type VariableValue = NonNullable<VariableDeclaration["default"]>;

/** One `enum` option of {@linkcode VariableDeclaration.options}; an internal name, as above. */
export type EnumOption = NonNullable<VariableDeclaration["options"]>[number];

/** A declaration that was dropped, with why. */
export interface DroppedDeclaration {
  /** Zero-based position in the attribute's array. */
  index: number;
  /** The declaration's id, when it had a usable one. */
  id?: string;
  /** Why it was dropped. */
  reason: string;
}

/** Result of {@linkcode parseDeclarations}. */
export interface DeclarationsResult {
  /** The usable declarations, in document order. */
  declarations: VariableDeclaration[];
  /** Entries that were skipped, each with the reason. */
  dropped: DroppedDeclaration[];
}

/** Thrown by {@linkcode parseDeclarations} when the attribute is not a JSON array. */
export class DeclarationsSyntaxError extends VidError {
  /** Always `"DeclarationsSyntaxError"`. */
  override name = "DeclarationsSyntaxError";
  /** The attribute at fault. */
  override readonly field = "data-composition-variables";

  /** Creates the error; the CLI exits 1. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function parseOptions(raw: unknown): EnumOption[] | string {
  if (!Array.isArray(raw) || raw.length === 0) {
    return 'an enum needs a non-empty "options" array';
  }
  const options: EnumOption[] = [];
  for (const [i, option] of raw.entries()) {
    if (typeof option === "string") {
      options.push({ value: option, label: option });
    } else if (isRecord(option) && typeof option.value === "string") {
      const label = typeof option.label === "string" ? option.label : option.value;
      options.push({ value: option.value, label });
    } else {
      return `option ${i} must be a string or {"value": string, "label"?: string}`;
    }
  }
  const seen = new Set<string>();
  for (const option of options) {
    if (seen.has(option.value)) return `option value "${option.value}" appears twice`;
    seen.add(option.value);
  }
  return options;
}

/**
 * Reads `min`, `max`, `step`, `description` and `group` into `declaration`. Returns the
 * reason to drop it, or null when every extra given is valid.
 */
function parseExtras(
  entry: Record<string, unknown>,
  declaration: VariableDeclaration,
): string | null {
  for (const key of ["description", "group"] as const) {
    if (!(key in entry)) continue;
    if (typeof entry[key] !== "string") {
      return `"${key}" must be a string, got ${JSON.stringify(entry[key])}`;
    }
    declaration[key] = entry[key] as string;
  }
  for (const key of ["min", "max", "step"] as const) {
    if (!(key in entry)) continue;
    if (declaration.type !== "number") {
      return `"${key}" applies to number variables only, not ${declaration.type}`;
    }
    const value = entry[key];
    if (typeof value !== "number" || !Number.isFinite(value)) {
      return `"${key}" must be a finite number, got ${JSON.stringify(value)}`;
    }
    declaration[key] = value;
  }
  const { min, max, step } = declaration;
  if (min !== undefined && max !== undefined && min > max) {
    return `"min" ${min} is greater than "max" ${max}`;
  }
  if (step !== undefined && step <= 0) return `"step" must be greater than 0, got ${step}`;
  return null;
}

/**
 * Whether `text` can be an `image` value: empty (no image), an http(s) URL, or a
 * relative path that stays inside the project (no leading `/`, no `..` segment, no
 * other URL scheme such as `data:`).
 */
export function isImageReference(text: string): boolean {
  if (text === "") return true;
  if (/^https?:\/\//i.test(text)) return URL.canParse(text);
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(text) || text.startsWith("/") || text.startsWith("\\")) {
    return false;
  }
  return !text.split(/[\\/]/).includes("..");
}

/** "from 0 to 100", "at least 0", "at most 100". */
export function rangeText(declaration: Pick<VariableDeclaration, "min" | "max">): string {
  const { min, max } = declaration;
  if (min !== undefined && max !== undefined) return `from ${min} to ${max}`;
  if (min !== undefined) return `at least ${min}`;
  return `at most ${max}`;
}

/**
 * Checks `value` against a declaration's type (and a number's `min`/`max`). Returns null
 * when it fits, else the expectation in words ("a finite number", "one of wide, tall",
 * "a number from 0 to 100").
 */
export function typeMismatch(
  declaration: Pick<VariableDeclaration, "type" | "options" | "min" | "max">,
  value: unknown,
  isColor: (text: string) => boolean,
): string | null {
  switch (declaration.type) {
    case "string":
      return typeof value === "string" ? null : "a string";
    case "number": {
      const { min, max } = declaration;
      const ranged = min !== undefined || max !== undefined;
      const expected = ranged ? `a number ${rangeText(declaration)}` : "a finite number";
      if (typeof value !== "number" || !Number.isFinite(value)) return expected;
      if ((min !== undefined && value < min) || (max !== undefined && value > max)) {
        return expected;
      }
      return null;
    }
    case "image":
      return typeof value === "string" && isImageReference(value)
        ? null
        : 'a project file path (such as "img/logo.png") or an http(s) URL';
    case "boolean":
      return typeof value === "boolean" ? null : "true or false";
    case "color":
      return typeof value === "string" && isColor(value) ? null : 'a CSS colour such as "#ff0066"';
    case "enum": {
      const values = (declaration.options ?? []).map((o) => o.value);
      return typeof value === "string" && values.includes(value)
        ? null
        : `one of ${values.map((v) => JSON.stringify(v)).join(", ")}`;
    }
  }
}

/**
 * Parses the `data-composition-variables` attribute. Entries with no or a duplicate id,
 * an unknown type (such as `object`), an enum without options or a default of the wrong
 * type are dropped and listed in `dropped`; malformed JSON throws.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isCssColor } from "./color.ts";
 *
 * const { declarations, dropped } = parseDeclarations(
 *   '[{"id":"title","type":"string","default":"Hi"},{"id":"data","type":"object"}]',
 *   isCssColor,
 * );
 * assert.equal(declarations[0].id, "title");
 * assert.equal(
 *   dropped[0].reason,
 *   'unknown type "object" (expected string, number, color, boolean, enum or image)',
 * );
 * ```
 */
export function parseDeclarations(
  attribute: string,
  isColor: (text: string) => boolean,
): DeclarationsResult {
  let raw: unknown;
  try {
    raw = JSON.parse(attribute);
  } catch (error) {
    throw new DeclarationsSyntaxError(
      `data-composition-variables is not valid JSON: ${(error as Error).message}`,
    );
  }
  if (!Array.isArray(raw)) {
    throw new DeclarationsSyntaxError(
      "data-composition-variables must be a JSON array of declarations",
    );
  }
  const declarations: VariableDeclaration[] = [];
  const dropped: DroppedDeclaration[] = [];
  const ids = new Set<string>();
  for (const [index, entry] of raw.entries()) {
    const drop = (reason: string, id?: string) => dropped.push({ index, id, reason });
    if (!isRecord(entry)) {
      drop("a declaration must be a JSON object");
      continue;
    }
    const id = entry.id;
    if (typeof id !== "string" || id.trim() === "") {
      drop('missing "id" (a non-empty string)');
      continue;
    }
    if (ids.has(id)) {
      drop(`duplicate id "${id}" (the first declaration is kept)`, id);
      continue;
    }
    const type = entry.type;
    if (
      typeof type !== "string" || !(ACCEPTED_VARIABLE_TYPES as readonly string[]).includes(type)
    ) {
      drop(
        `unknown type ${JSON.stringify(type ?? null)} (expected string, number, color, ` +
          `boolean, enum or image)`,
        id,
      );
      continue;
    }
    const declaration: VariableDeclaration = {
      id,
      type: type as VariableType,
      label: typeof entry.label === "string" ? entry.label : id,
    };
    if (type === "enum") {
      const options = parseOptions(entry.options);
      if (typeof options === "string") {
        drop(options, id);
        continue;
      }
      declaration.options = options;
    }
    const extras = parseExtras(entry, declaration);
    if (extras !== null) {
      drop(extras, id);
      continue;
    }
    if ("default" in entry) {
      const expected = typeMismatch(declaration, entry.default, isColor);
      if (expected !== null) {
        drop(`default ${JSON.stringify(entry.default)} is not ${expected}`, id);
        continue;
      }
      declaration.default = entry.default as VariableValue;
    }
    ids.add(id);
    declarations.push(declaration);
  }
  return { declarations, dropped };
}
