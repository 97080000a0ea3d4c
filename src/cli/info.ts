/**
 * `vid info [dir|file] [--json]`: what a composition is and which variables it takes.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { type Composition, readComposition } from "../composition/composition.ts";
import { rangeText, type VariableDeclaration } from "../composition/declarations.ts";
import { ffmpegRate, formatFrameRate, type FrameRate } from "../composition/frame_rate.ts";
import { fallbackValue } from "../composition/variables.ts";
import {
  readSubCompositions,
  type SubComposition,
  subCompositionLines,
} from "../composition/sub_compositions.ts";
import { reportError, warn } from "./shared.ts";
import { OPTIONS } from "../request/options.ts";
import { cliOptionWithDefault } from "./request_flags.ts";

/** The machine form of `vid info --json`. */
export interface InfoJson {
  id: string;
  file: string;
  width: number;
  height: number;
  duration: number;
  /** `data-fps` as a fraction (`{ num: 30000, den: 1001 }`), null when not pinned. */
  fps: FrameRate | null;
  aspectRatio: string | null;
  variables: VariableDeclaration[];
  dropped: Composition["dropped"];
  /** The `data-composition-src` hosts (HyperFrames sub-compositions), nested ones inside theirs. */
  subCompositions: SubComposition[];
}

function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => "  " + r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd())
    .join("\n");
}

/** The OPTIONS column: enum options, a number's range and step, an image's accepted forms. */
function optionsText(d: VariableDeclaration): string {
  if (d.options) {
    return d.options.map((o) => (o.label === o.value ? o.value : `${o.value} (${o.label})`))
      .join(", ");
  }
  if (d.type === "image") return "project file or http(s) URL";
  const range = d.min !== undefined || d.max !== undefined ? rangeText(d) : "";
  return [range, d.step !== undefined ? `step ${d.step}` : ""].filter((t) => t).join(", ");
}

/** Human description of a composition, as `vid info` prints it. */
export function describeComposition(
  c: Composition,
  subCompositions: readonly SubComposition[] = [],
): string {
  const lines = [
    `${c.id}  ${c.file}`,
    `  size        ${c.width}x${c.height}${c.aspectRatio ? ` (${c.aspectRatio})` : ""}`,
    `  duration    ${c.duration} s`,
    ...(c.fps
      ? [`  fps         ${formatFrameRate(c.fps)}${c.fps.den > 1 ? ` (${ffmpegRate(c.fps)})` : ""}`]
      : []),
    `  variables   ${c.declarations.length}${
      c.dropped.length ? ` (${c.dropped.length} dropped)` : ""
    }`,
  ];
  if (c.declarations.length > 0) {
    const grouped = c.declarations.some((d) => d.group !== undefined);
    const rows = [["ID", "TYPE", "DEFAULT", "LABEL", ...(grouped ? ["GROUP"] : []), "OPTIONS"]];
    for (const d of c.declarations) {
      rows.push([
        d.id,
        d.type,
        JSON.stringify(d.default ?? fallbackValue(d)) + (d.default === undefined ? " (none)" : ""),
        d.label,
        ...(grouped ? [d.group ?? ""] : []),
        optionsText(d),
      ]);
    }
    lines.push("", table(rows));
    const described = c.declarations.filter((d) => d.description !== undefined);
    if (described.length > 0) {
      lines.push("", ...described.map((d) => `  ${d.id}: ${d.description}`));
    }
  }
  if (subCompositions.length > 0) {
    lines.push("", "  sub-compositions", ...subCompositionLines(subCompositions, "    "));
  }
  return lines.join("\n");
}

/** Registers `vid info`. */
export function registerInfo(program: Command): void {
  program
    .command("info")
    .description("Show a composition's id, size, duration, aspect ratio and declared variables.")
    .argument("[target]", "project directory or HTML file", ".")
    .addOption(cliOptionWithDefault(OPTIONS.composition))
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (target, options) => {
      try {
        const c = await readComposition(target, options.composition);
        const subCompositions = await readSubCompositions(c.file);
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
            fps: c.fps ?? null,
            aspectRatio: c.aspectRatio,
            variables: c.declarations,
            dropped: c.dropped,
            subCompositions,
          };
          console.log(JSON.stringify(json, null, 2));
        } else {
          console.log(describeComposition(c, subCompositions));
        }
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
