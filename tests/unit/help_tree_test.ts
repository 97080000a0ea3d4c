/**
 * Help consistency: every command, argument and option of the live `vid` tree has a
 * description, and the spec's flag names and defaults appear in each command's help as
 * a user reads it (the text `--help` prints, built in this process; the subprocess runs
 * that prove it is the same text are in tests/integration/help_test.ts).
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { buildProgram } from "../../src/cli/main.ts";

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

/** The `--help` text of `path`, at the usual 80 columns. */
function helpOf(path: string): string {
  const entry = TREE.find((c) => c.path === path);
  assert.ok(entry, `no command ${path}`);
  return entry.command.helpInformation({ error: false });
}

/** The help line(s) of one option (its description may wrap onto following lines). */
function optionHelp(path: string, flag: string): string {
  const lines = helpOf(path).split("\n");
  const start = lines.findIndex((l) => new RegExp(`^ {2}(-\\w, )?${flag}\\b`).test(l));
  assert.ok(start >= 0, `${path} --help has no ${flag}:\n${helpOf(path)}`);
  const out = [lines[start]];
  for (const line of lines.slice(start + 1)) {
    if (!/^ {6,}\S/.test(line)) break;
    out.push(line);
  }
  return out.map((l) => l.trim()).join(" ");
}

describe("help: the whole tree is described", () => {
  it("every command, argument and option has a non-empty description", () => {
    assert.ok(TREE.length >= 25, `only ${TREE.length} commands`);
    const missing: string[] = [];
    for (const { path, command } of TREE) {
      if (command.description().trim() === "") missing.push(`${path} (command)`);
      for (const argument of command.registeredArguments) {
        if (argument.description.trim() === "") missing.push(`${path} <${argument.name()}>`);
      }
      for (const option of command.options) {
        if (option.description.trim() === "") missing.push(`${path} ${option.flags}`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it("a command list shows one line per command (summaries, not whole descriptions)", () => {
    for (const { path, command } of TREE) {
      if (command.commands.length === 0) continue;
      const help = helpOf(path);
      const list = help.slice(help.indexOf("Commands:"));
      assert.doesNotMatch(list, /Connection \(flags win/, `${path} lists a whole description`);
    }
  });
});

describe("help: the spec's flags and defaults", () => {
  it("vid render: --fps 30, --format mp4|webm|mov|gif|png, --quality standard, the variable flags", () => {
    assert.match(optionHelp("vid render", "--fps"), /1-240.*default: 30/);
    assert.match(
      optionHelp("vid render", "--format"),
      /default: from the --output extension, else mp4\)[\s\S]*choices: "mp4", "webm", "mov", "gif", "png"/,
    );
    assert.match(
      optionHelp("vid render", "--quality"),
      /choices: "draft", "standard", "high", default: "standard"/,
    );
    assert.match(optionHelp("vid render", "--composition"), /default: "index.html"/);
    for (const flag of ["--variables", "--variables-file", "--strict-variables", "--output"]) {
      optionHelp("vid render", flag);
    }
  });

  it("vid cloud render: every flag of the spec's table with its default", () => {
    const path = "vid cloud render";
    const defaults: [string, RegExp][] = [
      ["--fps", /1-240.*default: 30/],
      ["--quality", /"draft", "standard", "high", default: "standard"/],
      ["--format", /"mp4", "webm", "mov", default: "mp4"/],
      ["--resolution", /"1080p", "4k", default: "1080p"/],
      ["--aspect-ratio", /auto.*data-width\/data-height.*16:9.*"16:9", "9:16", "1:1"/],
      ["--composition", /default: "index.html"/],
      ["--output", /default: renders\/<render_id>\.<ext>/],
      ["--poll-interval", /default: 10/],
      ["--max-wait", /default: 60/],
      ["--idempotency-key", /1-255/],
    ];
    for (const [flag, expected] of defaults) assert.match(optionHelp(path, flag), expected, flag);
    for (
      const flag of [
        "--dry-run",
        "--asset-id",
        "--url",
        "--variables",
        "--variables-file",
        "--strict-variables",
        "--no-wait",
        "--callback-url",
        "--callback-id",
      ]
    ) optionHelp(path, flag);
    assert.match(helpOf("vid cloud render"), /\[dir\][\s\S]*default: "\."/);
    for (const flag of ["--limit", "--token", "--all"]) optionHelp("vid cloud list", flag);
    optionHelp("vid cloud delete", "--no-confirm");
  });

  it("vid lambda deploy: --concurrency and --memory default 10240", () => {
    optionHelp("vid lambda deploy", "--concurrency");
    assert.match(optionHelp("vid lambda deploy", "--memory"), /default: 10240/);
  });

  it("vid lambda render: chunking defaults 16 and 240, and the spec's options", () => {
    const path = "vid lambda render";
    assert.match(optionHelp(path, "--max-parallel-chunks"), /default: 16/);
    assert.match(optionHelp(path, "--chunk-size"), /default: 240/);
    assert.match(optionHelp(path, "--target-chunk-frames"), /ignored when --chunk-size/);
    assert.match(optionHelp(path, "--fps"), /default: 30/);
    assert.match(optionHelp(path, "--format"), /default: mp4/);
    for (const flag of ["--site-id", "--width", "--height", "--variables", "--output-key"]) {
      optionHelp(path, flag);
    }
    assert.match(optionHelp(path, "--wait"), /progress/);
  });

  it("vid lambda render-batch: --batch required, --max-concurrent 50, the spec's flags", () => {
    const path = "vid lambda render-batch";
    const help = helpOf(path);
    assert.match(help, /--batch <file>/);
    assert.match(optionHelp(path, "--max-concurrent"), /start calls.*default: 50/);
    assert.match(optionHelp(path, "--chunk-size"), /default: 240/);
    assert.match(optionHelp(path, "--max-parallel-chunks"), /default: 16/);
    for (const flag of ["--width", "--height", "--site-id", "--json", "--dry-run"]) {
      optionHelp(path, flag);
    }
  });

  it("vid server: the distributed backend's chunking defaults are the spec's 240 and 16", () => {
    assert.match(optionHelp("vid server", "--lambda-chunk-size"), /default: 240/);
    assert.match(optionHelp("vid server", "--lambda-max-parallel-chunks"), /default: 16/);
    assert.match(optionHelp("vid server", "--render-backend"), /default: local/);
  });

  it("vid auth: login (--api-key), status, refresh, logout", () => {
    optionHelp("vid auth login", "--api-key");
    for (const sub of ["status", "refresh", "logout"]) helpOf(`vid auth ${sub}`);
  });

  it("vid types and vid completions document their flags", () => {
    for (const flag of ["--output", "--json-schema", "--name", "--composition", "--json"]) {
      optionHelp("vid types", flag);
    }
    assert.match(helpOf("vid completions"), /choices: "bash", "zsh", "fish"/);
  });
});
