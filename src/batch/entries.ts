/**
 * Batch entries, read and checked the same way for every batch: the distributed one
 * (`vid lambda render-batch`, src/lambda/batch.ts) and the local one (`vid render-batch`).
 *
 * A JSONL file has one `{"outputKey": ..., "variables": {...}}` object per line and is
 * streamed (`node:fs` `createReadStream` + `readline`), never loaded whole. A CSV file has
 * a header row of variable ids plus an `outputKey` column; each cell is typed by its
 * variable's declaration (`number` cells become numbers, `boolean` cells `true`/`false`,
 * the rest strings) and an empty cell leaves the variable at its default.
 *
 * Rows are numbered by the physical line they start on (1-based; a CSV header is line 1).
 * A blank line is not an entry; every problem of a line becomes that line's error and never
 * stops the batch.
 *
 * @module
 */

import { createReadStream } from "node:fs";
import { readFile } from "node:fs/promises";
import { createInterface } from "node:readline";
import type { VariableDeclaration, Variables } from "../composition/declarations.ts";
import type { VariableProblem } from "../composition/errors.ts";
import { checkOverrides } from "../composition/variables.ts";
import { isPlainObject } from "../util/json_shape.ts";
import { flagOf, OPTIONS } from "../request/options.ts";

/**
 * The render settings a row might name by mistake, with the flag that sets them for the
 * whole batch. A row carries `outputKey` and `variables` only, so such a key is refused
 * rather than silently ignored.
 */
const ROW_SETTINGS: ReadonlyMap<string, string> = new Map(
  [
    OPTIONS.fps,
    OPTIONS.format,
    OPTIONS.quality,
    OPTIONS.width,
    OPTIONS.height,
    OPTIONS.hdr,
    OPTIONS.chunkSize,
    OPTIONS.maxParallelChunks,
    OPTIONS.targetChunkFrames,
  ].map((d) => [d.key, flagOf(d)!]),
);

/** What one line of a batch file holds. */
export type ParsedBatchLine =
  /** A whitespace-only line: not an entry. */
  | { kind: "blank" }
  /** Not a valid entry; `error` starts with `line N:`. */
  | { kind: "invalid"; outputKey: string | null; error: string }
  /**
   * An entry. `warning` (starting with `line N:`) lists variable problems when not strict.
   */
  | {
    kind: "entry";
    outputKey: string;
    variables: Variables;
    warning?: string;
    /** The variable problems the warning lists, one each (for the manifest). */
    problems?: VariableProblem[];
  };

/**
 * Checks one decoded batch entry (`{"outputKey": ..., "variables": {...}}`) against the
 * declarations: in strict mode a variable problem makes the line invalid, else a warning.
 * `undefined` declarations (not known) check no variables.
 * A render option in a row (`"fps": 24`) makes the line invalid, naming the flag that sets
 * it for the whole batch.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const declarations = [{ id: "title", type: "string", label: "Title" } as const];
 * assert.deepEqual(
 *   checkBatchEntry({ outputKey: "a.mp4", variables: { title: "Ada" } }, 1, declarations),
 *   { kind: "entry", outputKey: "a.mp4", variables: { title: "Ada" } },
 * );
 * ```
 */
export function checkBatchEntry(
  entry: unknown,
  line: number,
  declarations: readonly VariableDeclaration[] | undefined,
  strict = false,
): ParsedBatchLine {
  if (!isPlainObject(entry)) {
    return {
      kind: "invalid",
      outputKey: null,
      error: `line ${line}: a batch entry must be a JSON object`,
    };
  }
  const outputKey = entry.outputKey;
  if (typeof outputKey !== "string" || outputKey === "") {
    return {
      kind: "invalid",
      outputKey: null,
      error: `line ${line}: "outputKey" must be a non-empty string`,
    };
  }
  for (const key of Object.keys(entry)) {
    const flag = ROW_SETTINGS.get(key);
    if (flag !== undefined) {
      return {
        kind: "invalid",
        outputKey,
        error: `line ${line}: ${key}: is not a row field (a row carries "outputKey" and ` +
          `"variables"); set ${flag} for the whole batch`,
      };
    }
  }
  const variables = entry.variables ?? {};
  if (!isPlainObject(variables)) {
    return { kind: "invalid", outputKey, error: `line ${line}: "variables" must be a JSON object` };
  }
  // Unknown declarations (a dry run of an uploaded site with no bucket to read it from) are
  // not "none": checking against none would call every variable undeclared.
  const problems = declarations === undefined
    ? []
    : checkOverrides(declarations, variables as Variables);
  if (problems.length > 0) {
    const detail = problems.map((p) => p.message).join("; ");
    if (strict) {
      return {
        kind: "invalid",
        outputKey,
        error: `line ${line}: variables do not match the declarations: ${detail}`,
      };
    }
    return {
      kind: "entry",
      outputKey,
      variables: variables as Variables,
      warning: `line ${line}: ${detail}`,
      problems,
    };
  }
  return { kind: "entry", outputKey, variables: variables as Variables };
}

/**
 * Parses and checks one JSONL line (see {@linkcode checkBatchEntry}).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseBatchLine('{"outputKey":"a.mp4"}', 1, []), {
 *   kind: "entry",
 *   outputKey: "a.mp4",
 *   variables: {},
 * });
 * assert.deepEqual(parseBatchLine("", 2, []), { kind: "blank" });
 * ```
 */
export function parseBatchLine(
  text: string,
  line: number,
  declarations: readonly VariableDeclaration[] | undefined,
  strict = false,
): ParsedBatchLine {
  if (text.trim() === "") return { kind: "blank" };
  let entry: unknown;
  try {
    entry = JSON.parse(text);
  } catch (error) {
    return {
      kind: "invalid",
      outputKey: null,
      error: `line ${line}: not valid JSON: ${(error as Error).message}`,
    };
  }
  return checkBatchEntry(entry, line, declarations, strict);
}

/** Reads the lines of a file one at a time (streamed). */
export async function* batchFileLines(path: string): AsyncGenerator<string> {
  const stream = createReadStream(path, { encoding: "utf8" });
  const reader = createInterface({ input: stream, crlfDelay: Infinity });
  try {
    yield* reader;
  } finally {
    reader.close();
    stream.destroy();
  }
}

/** One CSV record: the line it starts on and its cells. */
export interface CsvRecord {
  /** The 1-based line the record starts on. */
  line: number;
  /** The record's cells, unquoted. */
  cells: string[];
}

/**
 * Splits CSV text (RFC 4180: comma separated, `"` quotes, `""` an escaped quote, quoted
 * fields may hold commas and line breaks; CRLF or LF) into records. A blank line is a
 * record with no cells.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseCsv('outputKey,title\na.mp4,"Hello, world"\n'), [
 *   { line: 1, cells: ["outputKey", "title"] },
 *   { line: 2, cells: ["a.mp4", "Hello, world"] },
 * ]);
 * ```
 */
export function parseCsv(text: string): CsvRecord[] {
  const records: CsvRecord[] = [];
  let cells: string[] = [];
  let cell = "";
  let quoted = false;
  let line = 1;
  let start = 1;
  let touched = false;
  const endRecord = () => {
    if (touched || cells.length > 0) cells.push(cell);
    records.push({ line: start, cells });
    cells = [];
    cell = "";
    touched = false;
  };
  const body = text.startsWith("\ufeff") ? text.slice(1) : text;
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (quoted) {
      if (c === '"' && body[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else {
        if (c === "\n") line++;
        cell += c;
      }
      continue;
    }
    if (c === '"') {
      quoted = true;
      touched = true;
    } else if (c === ",") {
      cells.push(cell);
      cell = "";
      touched = true;
    } else if (c === "\n" || c === "\r") {
      if (c === "\r" && body[i + 1] === "\n") i++;
      endRecord();
      line++;
      start = line;
    } else {
      cell += c;
      touched = true;
    }
  }
  if (touched || cells.length > 0) endRecord();
  return records;
}

/** A CSV cell as its variable's declared type: numbers and booleans parsed, the rest text. */
function typedCell(
  value: string,
  declaration: VariableDeclaration | undefined,
): string | number | boolean {
  if (declaration?.type === "number") {
    const n = Number(value);
    return value.trim() !== "" && Number.isFinite(n) ? n : value;
  }
  if (declaration?.type === "boolean") {
    const lower = value.trim().toLowerCase();
    return lower === "true" ? true : lower === "false" ? false : value;
  }
  return value;
}

/**
 * Reads a batch file, JSONL or CSV (by the `.csv` extension), and yields each line's
 * number and what it holds. JSONL is streamed; a CSV is read whole (its quoted cells may
 * span lines). A CSV without an `outputKey` column is one invalid row naming the header.
 *
 * @example
 * ```ts no_run
 * import { readComposition } from "../composition/composition.ts";
 *
 * const { declarations } = await readComposition("examples/hello");
 * for await (const { line, parsed } of readBatchFile("rows.csv", declarations)) {
 *   if (parsed.kind === "entry") console.log(line, parsed.outputKey, parsed.variables);
 * }
 * ```
 */
export async function* readBatchFile(
  path: string,
  declarations: readonly VariableDeclaration[],
  strict = false,
): AsyncGenerator<{ line: number; parsed: ParsedBatchLine }> {
  if (!path.toLowerCase().endsWith(".csv")) {
    let line = 0;
    for await (const text of batchFileLines(path)) {
      line++;
      yield { line, parsed: parseBatchLine(text, line, declarations, strict) };
    }
    return;
  }
  const records = parseCsv(await readFile(path, "utf8"));
  const header = records.shift();
  const columns = header?.cells.map((c) => c.trim()) ?? [];
  const keyColumn = columns.indexOf("outputKey");
  if (keyColumn < 0) {
    yield {
      line: 1,
      parsed: {
        kind: "invalid",
        outputKey: null,
        error: `line 1: the CSV header must have an "outputKey" column beside the variable ids ` +
          `(got ${columns.length > 0 ? columns.join(", ") : "an empty line"})`,
      },
    };
    return;
  }
  const byId = new Map(declarations.map((d) => [d.id, d]));
  // A render setting as a column (and not a declared variable) is refused as in a JSONL row.
  const setting = columns.find((c) => ROW_SETTINGS.has(c) && !byId.has(c));
  if (setting !== undefined) {
    yield {
      line: 1,
      parsed: {
        kind: "invalid",
        outputKey: null,
        error: `line 1: ${setting}: is not a column (a row carries "outputKey" and the ` +
          `variables); set ${ROW_SETTINGS.get(setting)} for the whole batch`,
      },
    };
    return;
  }
  for (const record of records) {
    const { line, cells } = record;
    if (cells.every((c) => c.trim() === "")) {
      yield { line, parsed: { kind: "blank" } };
      continue;
    }
    if (cells.length !== columns.length) {
      yield {
        line,
        parsed: {
          kind: "invalid",
          outputKey: cells[keyColumn] || null,
          error: `line ${line}: ${cells.length} cells, but the header has ${columns.length} ` +
            `columns (quote a cell that holds a comma)`,
        },
      };
      continue;
    }
    const variables: Variables = {};
    columns.forEach((id, i) => {
      if (i === keyColumn || cells[i] === "") return;
      variables[id] = typedCell(cells[i], byId.get(id));
    });
    yield {
      line,
      parsed: checkBatchEntry(
        { outputKey: cells[keyColumn], variables },
        line,
        declarations,
        strict,
      ),
    };
  }
}
