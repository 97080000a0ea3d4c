/**
 * `vid init [dir]`: creates a starter project (composition, example batch rows, vendored
 * libraries) and prints the next steps: preview, render, batch. `vid add <library...>`
 * copies a library into an existing project.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import { relative } from "node:path";
import { addLibraries, initProject, listStarters } from "../init/init.ts";
import { LIBRARIES, LIBRARY_NAMES } from "../init/vendor.ts";
import { FONT_PACKAGES } from "../init/font_packages.ts";
import { reportError } from "./shared.ts";

/** Quotes a path for a shell command line when it needs it. */
function shellPath(path: string): string {
  return /^[\w./-]+$/.test(path) ? path : `'${path.replaceAll("'", `'\\''`)}'`;
}

/** Registers `vid init`. */
export function registerInit(program: Command): void {
  program
    .command("init")
    .summary("Create a starter project (social story, lower third, product card).")
    .description(
      "Create a starter project in [dir]: a composition with typed variables, example batch\n" +
        "rows (batch.jsonl) and the libraries it animates with copied into lib/, so it\n" +
        "renders offline. A folder that is not empty is refused unless --force.",
    )
    .argument("[dir]", "folder for the new project", ".")
    .option("-t, --template <name>", "starter to use (see --list)", "social")
    .option("--list", "list the starters and exit")
    .option("--force", "write into a folder that is not empty (same-named files are replaced)")
    .option("--json", "print a machine-readable result on stdout")
    .action(async (dir, options) => {
      if (options.list) {
        const starters = listStarters();
        if (options.json) console.log(JSON.stringify(starters, null, 2));
        else {
          const width = Math.max(...starters.map((s) => s.name.length));
          for (const s of starters) console.log(`${s.name.padEnd(width)}  ${s.description}`);
        }
        return;
      }
      try {
        const result = await initProject({ dir, template: options.template, force: options.force });
        if (options.json) {
          console.log(JSON.stringify({ ok: true, ...result }, null, 2));
          return;
        }
        const where = relative(Deno.cwd(), result.dir) || ".";
        console.log(
          `created ${where} from the ${result.template} starter ` +
            `(${result.width}x${result.height}, ${result.duration} s)`,
        );
        for (const file of result.files) console.log(`  ${file}`);
        const cd = where === "." ? "" : `  cd ${shellPath(where)}\n`;
        console.log(
          `\nnext steps:\n${cd}` +
            `  vid preview                 # live studio: edit index.html, try variables\n` +
            `  vid render -o ${result.output}\n` +
            `  vid render-batch . --batch batch.jsonl --out-dir renders`,
        );
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}

/** Registers `vid add`. */
export function registerAdd(program: Command): void {
  program
    .command("add")
    .summary("Copy GSAP, Lottie, Three.js or a font HyperFrames embeds into a project.")
    .description(
      "Copy libraries into a project so its page loads them from its own folder (the page is\n" +
        "served from the project folder alone, so this is what makes it render offline):\n" +
        LIBRARY_NAMES.map((n) => `  ${n.padEnd(6)} ${LIBRARIES[n].package}: ${LIBRARIES[n].use}`)
          .join("\n") +
        "\nFonts HyperFrames embeds, each copied into fonts/ (regular and bold, woff2, licence)\n" +
        "with fonts/<name>.css, which index.html is made to link: inter (from vid's own\n" +
        "dependency) and, fetched once from the npm registry at a pinned version checked\n" +
        `against its integrity: ${Object.keys(FONT_PACKAGES).join(", ")}`,
    )
    .argument("<library...>", `one or more of ${LIBRARY_NAMES.join(", ")} or a font's name`)
    .option("-d, --dir <project>", "project folder", ".")
    .option("--json", "print a machine-readable result on stdout")
    .action(async (names, options) => {
      try {
        const added = await addLibraries(names, options.dir);
        if (options.json) {
          console.log(JSON.stringify({ ok: true, libraries: added }, null, 2));
          return;
        }
        for (const library of added) {
          console.log(`${library.package} ${library.version}: ${library.files.join(", ")}`);
          console.log(`  use: ${library.use}`);
        }
      } catch (error) {
        Deno.exitCode = reportError(error, options.json);
      }
    });
}
