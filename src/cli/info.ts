/**
 * `vid info [dir|file] [--json]`: what a composition is and which variables it takes.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { type Composition, readComposition } from "../composition/composition.ts";
import type { VariableDeclaration } from "../composition/declarations.ts";
import { fallbackValue } from "../composition/variables.ts";
import { reportError, warn } from "./shared.ts";

/** The machine form of `vid info --json`. */
export interface InfoJson {
  id: string;
  file: string;
  width: number;
  height: number;
  duration: number;
  aspectRatio: string | null;
  variables: VariableDeclaration[];
  dropped: Composition["dropped"];
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => "  " + r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd())
    .join("\n");
}

/** Human description of a composition, as `vid info` prints it. */
export function describeComposition(c: Composition): string {
  const lines = [
    `${c.id}  ${c.file}`,
    `  size        ${c.width}x${c.height}${c.aspectRatio ? ` (${c.aspectRatio})` : ""}`,
    `  duration    ${c.duration} s`,
    `  variables   ${c.declarations.length}${
      c.dropped.length ? ` (${c.dropped.length} dropped)` : ""
    }`,
  ];
  if (c.declarations.length > 0) {
    const rows = [["ID", "TYPE", "DEFAULT", "LABEL", "OPTIONS"]];
    for (const d of c.declarations) {
      rows.push([
        d.id,
        d.type,
        JSON.stringify(d.default ?? fallbackValue(d)) + (d.default === undefined ? " (none)" : ""),
        d.label,
        d.options?.map((o) => (o.label === o.value ? o.value : `${o.value} (${o.label})`))
          .join(", ") ?? "",
      ]);
    }
    lines.push("", table(rows));
  }
  return lines.join("\n");
}

/** Registers `vid info`. */
export function registerInfo(program: Command): void {
  program
    .command("info")
    .description("Show a composition's id, size, duration, aspect ratio and declared variables.")
    .argument("[target]", "project directory or HTML file", ".")
    .option(
      "-c, --composition <file>",
      "entry HTML file inside the project directory",
      "index.html",
    )
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (target, options) => {
      try {
        const c = await readComposition(target, options.composition);
        for (const d of c.dropped) {
          warn(`declaration ${d.index}${d.id ? ` ("${d.id}")` : ""} dropped: ${d.reason}`);
        }
        if (options.json) {
          const json: InfoJson = {
            id: c.id,
            file: c.file,
            width: c.width,
            height: c.height,
            duration: c.duration,
            aspectRatio: c.aspectRatio,
            variables: c.declarations,
            dropped: c.dropped,
          };
          console.log(JSON.stringify(json, null, 2));
        } else {
          console.log(describeComposition(c));
        }
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
