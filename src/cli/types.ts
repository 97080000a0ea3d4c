/**
 * `vid types [dir]`: the TypeScript type (and optionally the JSON Schema) of a
 * composition's variables, for code that renders it with the SDK.
 *
 * @module
 */

import { VidError } from "../errors.ts";
import { type Command, InvalidArgumentError } from "@commander-js/extra-typings";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve } from "node:path";
import { readComposition } from "../composition/composition.ts";
import {
  checkTypeName,
  typeNameFor,
  variablesJsonSchema,
  variablesTypeSource,
} from "../composition/types_gen.ts";
import { reportError, warn } from "./shared.ts";
import { OPTIONS } from "../request/options.ts";
import { cliOptionWithDefault } from "./request_flags.ts";

/** A usage problem of `vid types` found after parsing (exit 2). */
export class TypesUsageError extends VidError {
  override name = "UsageError";
  /** @param flag The flag at fault. */
  constructor(message: string, flag: string) {
    super(message, { flag, exitCode: 2 });
  }
}

function typeNameArg(value: string): string {
  try {
    checkTypeName(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
  return value;
}

/** A file write that leaves nothing behind on failure. */
interface StagedFile {
  partial: string;
  path: string;
}

async function stage(path: string, text: string, flag: string): Promise<StagedFile> {
  const absolute = resolve(path);
  const partial = join(dirname(absolute), `.${basename(absolute)}.partial-${Date.now()}`);
  try {
    await mkdir(dirname(absolute), { recursive: true });
    await writeFile(partial, text);
  } catch (error) {
    await rm(partial, { force: true }).catch(() => {});
    throw new TypesUsageError(
      `${flag} ${path}: cannot write it (${(error as Error).message})`,
      flag,
    );
  }
  return { partial, path: absolute };
}

/** Registers `vid types`. */
export function registerTypes(program: Command): void {
  program
    .command("types")
    .summary("Generate the TypeScript type and JSON Schema of a composition's variables.")
    .description(
      "Generate the TypeScript type of a composition's variables (and optionally their JSON " +
        "Schema, draft 2020-12) for code that renders it with the SDK, e.g. " +
        "renderToLambda<HelloVariables>(...). Enums become unions of their option values, " +
        "colours strings; every key is optional, since each variable has a default. The type " +
        "goes to stdout unless --output is given; files appear only when complete.",
    )
    .argument("[target]", "project directory or HTML file", ".")
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .option("-o, --output <file>", "write the TypeScript type to this file (.ts or .d.ts)")
    .option("--json-schema <file>", "also write the JSON Schema of the variables to this file")
    .option(
      "--name <TypeName>",
      "name of the exported type (default: PascalCase data-composition-id + Variables)",
      typeNameArg,
    )
    .option("--json", "print machine-readable JSON on stdout (the type source and the schema)")
    .action(async (target, options) => {
      const staged: StagedFile[] = [];
      try {
        if (
          options.output !== undefined && options.jsonSchema !== undefined &&
          resolve(options.output) === resolve(options.jsonSchema)
        ) {
          throw new TypesUsageError(
            "--output and --json-schema name the same file; give the schema its own path " +
              "(e.g. variables.schema.json)",
            "--json-schema",
          );
        }
        const c = await readComposition(target, options.composition);
        for (const d of c.dropped) {
          warn(
            `declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} dropped: ${d.reason}; ` +
              "it is not in the generated type",
          );
        }
        const typeName = options.name ?? typeNameFor(c.id);
        const gen = { compositionId: c.id, typeName, source: relative(Deno.cwd(), c.file) };
        const source = variablesTypeSource(c.declarations, gen);
        const schema = variablesJsonSchema(c.declarations, gen);
        if (options.output !== undefined) {
          staged.push(await stage(options.output, source, "--output"));
        }
        if (options.jsonSchema !== undefined) {
          staged.push(
            await stage(
              options.jsonSchema,
              JSON.stringify(schema, null, 2) + "\n",
              "--json-schema",
            ),
          );
        }
        for (const file of staged) await rename(file.partial, file.path);
        const output = options.output !== undefined ? resolve(options.output) : null;
        const schemaFile = options.jsonSchema !== undefined ? resolve(options.jsonSchema) : null;
        if (options.json) {
          console.log(JSON.stringify(
            {
              ok: true,
              compositionId: c.id,
              typeName,
              variables: c.declarations.length,
              output,
              jsonSchemaFile: schemaFile,
              typescript: source,
              jsonSchema: schema,
            },
            null,
            2,
          ));
          return;
        }
        const summary = `${typeName} (${c.declarations.length} variables)`;
        // Without --output stdout carries only the type, so notes go to stderr.
        const note = output === null ? console.error : console.log;
        if (output === null) console.log(source.trimEnd());
        else note(`wrote ${summary} to ${output}`);
        if (schemaFile !== null) note(`wrote the JSON Schema of ${summary} to ${schemaFile}`);
      } catch (error) {
        for (const file of staged) await rm(file.partial, { force: true }).catch(() => {});
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
