/**
 * Typed variables for code: turns a composition's variable declarations into a TypeScript
 * type and a JSON Schema (draft 2020-12), as `vid types` writes them.
 *
 * Every key is optional in both: a variable left out takes its declared default, and a
 * declaration without one still has a fallback (`""`, `0`, `false`, `"#000000"` or the
 * first enum option), so no variable ever has to be given. The type is a type alias
 * rather than an interface so it stays assignable to index-signature types such as
 * `Record<string, string | number | boolean>`.
 *
 * Both functions are pure: declarations in, text or a schema object out.
 *
 * @module
 */

import { rangeText, type VariableDeclaration, type VariableValue } from "./declarations.ts";
import { fallbackValue } from "./variables.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** Options of {@linkcode variablesTypeSource} and {@linkcode variablesJsonSchema}. */
export interface TypesGenOptions {
  /** The composition's `data-composition-id`, named in comments and the schema. */
  compositionId: string;
  /** Name of the exported type. @default typeNameFor(compositionId) */
  typeName?: string;
  /** Where the declarations came from, for the header comment (e.g. `examples/hello/index.html`). */
  source?: string;
}

/** A JSON Schema (draft 2020-12) object, as {@linkcode variablesJsonSchema} builds it. */
export interface JsonSchema {
  /** A keyword (`type`, `properties`, `enum`, ...) and its value. */
  [keyword: string]: unknown;
}

/** Thrown when a type name given for the generated type is not a TypeScript identifier. */
export class TypeNameError extends VidError {
  /** Always `"TypeNameError"`. */
  override name = "TypeNameError";
  /** The option that carried the name. */
  override readonly field: string;

  /**
   * Creates the error for one option.
   *
   * @param message What is wrong and how to fix it.
   * @param field The option that carried the name. @default "--name"
   */
  constructor(message: string, field = "--name") {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
  }
}

/** The JSON Schema dialect of {@linkcode variablesJsonSchema}. */
export const JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema";

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

// Words TypeScript does not accept as a type name.
const RESERVED = new Set([
  "any",
  "boolean",
  "break",
  "case",
  "catch",
  "class",
  "const",
  "continue",
  "debugger",
  "default",
  "delete",
  "do",
  "else",
  "enum",
  "export",
  "extends",
  "false",
  "finally",
  "for",
  "function",
  "if",
  "import",
  "in",
  "instanceof",
  "never",
  "new",
  "null",
  "number",
  "object",
  "string",
  "super",
  "switch",
  "symbol",
  "this",
  "throw",
  "true",
  "try",
  "typeof",
  "undefined",
  "unknown",
  "var",
  "void",
  "while",
  "with",
]);

/**
 * Checks that `name` can be the exported type's name; throws {@linkcode TypeNameError}
 * naming `field` otherwise.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * checkTypeName("HelloVariables");
 * assert.throws(() => checkTypeName("hello-variables"), TypeNameError);
 * ```
 */
export function checkTypeName(name: string, field = "--name"): void {
  if (!IDENTIFIER.test(name) || RESERVED.has(name)) {
    throw new TypeNameError(
      `${field} ${JSON.stringify(name)} is not a usable TypeScript type name: use letters, ` +
        `digits, _ or $, not starting with a digit (e.g. HelloVariables)`,
      field,
    );
  }
}

/**
 * The default type name for a composition id: PascalCase words of the id plus
 * `Variables`. An id that starts with a digit gets a `Composition` prefix.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(typeNameFor("hello"), "HelloVariables");
 * assert.equal(typeNameFor("product-launch_v2"), "ProductLaunchV2Variables");
 * assert.equal(typeNameFor("3d-intro"), "Composition3dIntroVariables");
 * ```
 */
export function typeNameFor(compositionId: string): string {
  const words = compositionId.split(/[^A-Za-z0-9]+/).filter((w) => w !== "");
  const pascal = words.map((w) => w[0].toUpperCase() + w.slice(1)).join("");
  const base = /^[0-9]/.test(pascal) ? `Composition${pascal}` : pascal;
  return `${base}Variables`;
}

/** The value a variable has when the caller leaves it out. */
function effectiveDefault(declaration: VariableDeclaration): VariableValue {
  return declaration.default ?? fallbackValue(declaration);
}

/** A JSDoc-safe line: no comment terminator, no line breaks. */
function docText(text: string): string {
  return text.replace(/\*\//g, "*\\/").replace(/\s*\n\s*/g, " ");
}

function propertyKey(id: string): string {
  return IDENTIFIER.test(id) ? id : JSON.stringify(id);
}

function tsType(declaration: VariableDeclaration): string {
  switch (declaration.type) {
    case "string":
    case "color":
    case "image":
      return "string";
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "enum":
      return (declaration.options ?? []).map((o) => JSON.stringify(o.value)).join(" | ");
  }
}

/** "From 0 to 100 in steps of 5." for a number with a range or step, else undefined. */
function numberNote(declaration: VariableDeclaration): string | undefined {
  const { min, max, step } = declaration;
  if (min === undefined && max === undefined && step === undefined) return undefined;
  const range = min !== undefined || max !== undefined ? rangeText(declaration) : "";
  const words = [range, step !== undefined ? `in steps of ${step}` : ""].filter((w) => w);
  const text = words.join(" ");
  return `${text[0].toUpperCase()}${text.slice(1)}.`;
}

const IMAGE_NOTE = 'A project file path (such as "img/logo.png") or an http(s) URL.';

function propertyDoc(declaration: VariableDeclaration): string[] {
  const lines: string[] = [];
  if (declaration.description !== undefined) lines.push(docText(declaration.description));
  if (declaration.type === "image") lines.push(IMAGE_NOTE);
  const note = numberNote(declaration);
  if (note !== undefined) lines.push(note);
  if (declaration.group !== undefined) lines.push(`Group: ${docText(declaration.group)}.`);
  if (declaration.type === "color") {
    lines.push('A CSS colour string, such as "#ff0066" or "rgb(255 0 102)".');
  }
  if (declaration.type === "enum") {
    const labelled = (declaration.options ?? []).filter((o) => o.label !== o.value);
    if (labelled.length > 0) {
      lines.push(
        `Options: ${
          (declaration.options ?? []).map((o) =>
            o.label === o.value
              ? JSON.stringify(o.value)
              : `${JSON.stringify(o.value)} (${docText(o.label)})`
          ).join(", ")
        }.`,
      );
    }
  }
  const fallback = declaration.default === undefined ? " (none declared: the type's fallback)" : "";
  const label = declaration.label !== declaration.id ? [docText(declaration.label)] : [];
  return [
    ...label,
    ...(label.length > 0 && lines.length > 0 ? [""] : []),
    ...lines,
    `@default ${docText(JSON.stringify(effectiveDefault(declaration)))}${fallback}`,
  ];
}

/**
 * The TypeScript source of the variables type: one exported type alias whose keys are
 * the variable ids, all optional, with labels, colour notes and defaults as JSDoc.
 * Strings and colours are `string`, numbers `number`, booleans `boolean`, enums the
 * union of their option values. The source is type-only, so it works as `.ts` or `.d.ts`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const source = variablesTypeSource(
 *   [{ id: "layout", type: "enum", label: "Layout", options: [
 *     { value: "center", label: "center" }, { value: "left", label: "left" },
 *   ] }],
 *   { compositionId: "hello" },
 * );
 * assert.match(source, /export type HelloVariables = \{/);
 * assert.match(source, /layout\?: "center" \| "left";/);
 * ```
 */
export function variablesTypeSource(
  declarations: readonly VariableDeclaration[],
  options: TypesGenOptions,
): string {
  const typeName = options.typeName ?? typeNameFor(options.compositionId);
  checkTypeName(typeName);
  const lines = [
    "// Generated by `vid types`. Do not edit: run `vid types` again after changing the",
    "// composition's data-composition-variables.",
    ...(options.source ? [`// Source: ${options.source.replace(/\s+/g, " ")}`] : []),
    "",
    "/**",
    ` * Variables of the composition ${docText(JSON.stringify(options.compositionId))}.`,
    " * Every key is optional: a variable left out takes its default.",
    " */",
  ];
  if (declarations.length === 0) {
    lines.push(`export type ${typeName} = Record<string, never>;`, "");
    return lines.join("\n");
  }
  lines.push(`export type ${typeName} = {`);
  for (const declaration of declarations) {
    const doc = propertyDoc(declaration);
    lines.push("  /**", ...doc.map((l) => `   * ${l}`.trimEnd()), "   */");
    lines.push(`  ${propertyKey(declaration.id)}?: ${tsType(declaration)};`);
  }
  lines.push("};", "");
  return lines.join("\n");
}

function propertySchema(declaration: VariableDeclaration): JsonSchema {
  const schema: JsonSchema = { title: declaration.label };
  switch (declaration.type) {
    case "string":
      schema.type = "string";
      break;
    case "color":
      schema.type = "string";
      schema.description = 'A CSS colour, such as "#ff0066" or "rgb(255 0 102)".';
      break;
    case "number":
      schema.type = "number";
      if (declaration.min !== undefined) schema.minimum = declaration.min;
      if (declaration.max !== undefined) schema.maximum = declaration.max;
      break;
    case "image":
      schema.type = "string";
      schema.description = IMAGE_NOTE;
      break;
    case "boolean":
      schema.type = "boolean";
      break;
    case "enum": {
      const options = declaration.options ?? [];
      schema.type = "string";
      schema.enum = options.map((o) => o.value);
      if (options.some((o) => o.label !== o.value)) {
        schema.description = `Options: ${
          options.map((o) => (o.label === o.value ? o.value : `${o.value} (${o.label})`)).join(
            ", ",
          )
        }.`;
      }
      break;
    }
  }
  if (declaration.description !== undefined) {
    schema.description = [declaration.description, schema.description].filter((d) => d).join(" ");
  }
  // Editors read the group and step from `vid info --json`; a schema keyword of our own
  // would fail strict validators, so they are noted in a comment.
  const comment = [
    declaration.group !== undefined ? `group: ${declaration.group}` : "",
    declaration.step !== undefined ? `step: ${declaration.step}` : "",
  ].filter((c) => c).join("; ");
  if (comment) schema.$comment = comment;
  schema.default = effectiveDefault(declaration);
  return schema;
}

/**
 * The JSON Schema (draft 2020-12) of a composition's variables object: one property per
 * declaration, none required, no other keys allowed (as `--strict-variables` checks).
 * Enums list their option values; colours are strings (their CSS syntax is checked by
 * vid, not by the schema).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const schema = variablesJsonSchema(
 *   [{ id: "count", type: "number", label: "Count", default: 3 }],
 *   { compositionId: "hello" },
 * );
 * assert.deepEqual(schema.properties, { count: { title: "Count", type: "number", default: 3 } });
 * ```
 */
export function variablesJsonSchema(
  declarations: readonly VariableDeclaration[],
  options: TypesGenOptions,
): JsonSchema {
  const typeName = options.typeName ?? typeNameFor(options.compositionId);
  checkTypeName(typeName);
  const properties: Record<string, JsonSchema> = {};
  for (const declaration of declarations) {
    properties[declaration.id] = propertySchema(declaration);
  }
  return {
    $schema: JSON_SCHEMA_DIALECT,
    title: typeName,
    description: `Variables of the composition ${
      JSON.stringify(options.compositionId)
    }. Every key is optional: a variable left out takes its default.`,
    type: "object",
    properties,
    additionalProperties: false,
  };
}
