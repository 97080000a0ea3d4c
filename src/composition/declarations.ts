/**
 * Variable declarations: the JSON array in a composition root's
 * `data-composition-variables` attribute. Invalid entries are dropped with a warning
 * (spec rule 5) rather than failing the whole composition.
 *
 * @module
 */

/** The five variable types of the spec. */
export type VariableType = "string" | "number" | "color" | "boolean" | "enum";

/** The list of accepted types, in the spec's order. */
export const VARIABLE_TYPES: readonly VariableType[] = [
  "string",
  "number",
  "color",
  "boolean",
  "enum",
];

/** A variable's runtime value: a typed primitive (spec rule 4). */
export type VariableValue = string | number | boolean;

/** Values keyed by variable id, as `window.__vid.getVariables()` returns them. */
export type Variables = Record<string, unknown>;

/**
 * One `enum` option. In the attribute an option may be written as a plain string
 * (`"wide"`, which is both value and label) or as `{ "value": "wide", "label": "Wide" }`.
 */
export interface EnumOption {
  /** The value the composition receives. */
  value: string;
  /** Label for editors; equals `value` when not given. */
  label: string;
}

/** A declaration that passed every check. */
export interface VariableDeclaration {
  /** Variable name; the key in the runtime values object. */
  id: string;
  /** One of the five types. */
  type: VariableType;
  /** Human label for editors; the id when not given. */
  label: string;
  /** Declared default, already checked against the type. Absent when not declared. */
  default?: VariableValue;
  /** Options of an `enum`, normalised. */
  options?: EnumOption[];
}

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
export class DeclarationsSyntaxError extends Error {
  /** Always `"DeclarationsSyntaxError"`. */
  override name = "DeclarationsSyntaxError";
  /** The attribute at fault. */
  readonly field = "data-composition-variables";
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
 * Checks `value` against a declaration's type. Returns null when it fits, else the
 * expectation in words ("a finite number", "one of wide, tall").
 */
export function typeMismatch(
  declaration: Pick<VariableDeclaration, "type" | "options">,
  value: unknown,
  isColor: (text: string) => boolean,
): string | null {
  switch (declaration.type) {
    case "string":
      return typeof value === "string" ? null : "a string";
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : "a finite number";
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
 * const { declarations, dropped } = parseDeclarations(
 *   '[{"id":"title","type":"string","default":"Hi"},{"id":"data","type":"object"}]',
 *   isCssColor,
 * );
 * declarations[0].id; // "title"
 * dropped[0].reason; // 'unknown type "object" (expected string, number, color, boolean or enum)'
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
    if (typeof type !== "string" || !(VARIABLE_TYPES as readonly string[]).includes(type)) {
      drop(
        `unknown type ${JSON.stringify(type ?? null)} (expected string, number, color, ` +
          `boolean or enum)`,
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
