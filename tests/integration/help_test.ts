/**
 * Help as a user gets it: `vid --help` and `vid lambda render --help` run as subprocesses
 * print the live tree's commands and the spec's defaults. The tree's descriptions and
 * each command's flags and defaults are checked in this process by
 * tests/unit/help_tree_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { buildProgram } from "../../src/cli/main.ts";
import { runVid } from "../helpers.ts";

/** Every command of the tree with its path. */
async function commands(): Promise<{ path: string; command: CommandUnknownOpts }[]> {
  const out: { path: string; command: CommandUnknownOpts }[] = [];
  const walk = (command: CommandUnknownOpts, path: string[]) => {
    out.push({ path: path.join(" "), command });
    for (const sub of command.commands) walk(sub, [...path, sub.name()]);
  };
  walk(await buildProgram(), ["vid"]);
  return out;
}

const TREE = await commands();

describe("help as a subprocess", () => {
  it("vid --help lists every top-level command, types and completions included", async () => {
    const result = await runVid(["--help"]);
    assert.equal(result.code, 0, result.stderr);
    const root = TREE.find((c) => c.path === "vid")!.command;
    for (const sub of root.commands) {
      assert.match(result.stdout, new RegExp(`^ {2}${sub.name()}\\b`, "m"), sub.name());
    }
    assert.match(result.stdout, /^ {2}types\b/m);
    assert.match(result.stdout, /^ {2}completions\b/m);
  });

  it("vid lambda render --help as a subprocess prints the same text", async () => {
    const result = await runVid(["lambda", "render", "--help"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /--chunk-size <n>\s+frames per chunk[^\n]*\n?[^\n]*default: 240/);
  });

  it("vid render --help as a subprocess lists every option the live tree gives it", async () => {
    const render = TREE.find((c) => c.path === "vid render")!.command;
    const flags = render.options.map((o) => o.long!).filter(Boolean);
    // The render options are declared once (src/request/options.ts); tests/unit/request_test.ts
    // checks in this process that each declared flag is in the help of every command taking it.
    assert.ok(flags.includes("--fps") && flags.includes("--workers"), flags.join(" "));
    const result = await runVid(["render", "--help"], { env: { COLUMNS: "200" } });
    assert.equal(result.code, 0, result.stderr);
    for (const flag of flags) {
      assert.ok(result.stdout.includes(flag), `vid render --help lacks ${flag}`);
    }
  });
});
