/**
 * `vid completions bash|zsh|fish`. The scripts come from the real CLI and run in the real
 * shells: bash by calling the completion function with COMP_WORDS/COMP_CWORD, fish with
 * `complete -C`, zsh with its parser (`zsh -n`) and with the completion system's
 * builtins (compadd, _describe, _files) stubbed to print what they are given. Tests of a
 * shell that is not installed are skipped, saying so in their name.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import type { CommandUnknownOpts } from "@commander-js/extra-typings";
import { buildProgram } from "../../src/cli/main.ts";
import { runVid } from "../helpers.ts";

/** Whether `shell` is on PATH. */
function installed(shell: string): boolean {
  try {
    return new Deno.Command("sh", { args: ["-c", `command -v ${shell}`], stdout: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
}

const HAS_ZSH = installed("zsh");
const HAS_FISH = installed("fish");

/** Every command path of the live tree, with its subcommand names and long options. */
async function liveTree(): Promise<{ path: string; commands: string[]; longs: string[] }[]> {
  const out: { path: string; commands: string[]; longs: string[] }[] = [];
  const walk = (command: CommandUnknownOpts, path: string[]) => {
    const help = command.createHelp();
    out.push({
      path: path.join(" "),
      commands: help.visibleCommands(command).map((c) => c.name()),
      longs: help.visibleOptions(command).flatMap((o) => (o.long ? [o.long] : [])),
    });
    for (const sub of command.commands) walk(sub, [...path, sub.name()]);
  };
  walk(await buildProgram(), ["vid"]);
  return out;
}

const TREE = await liveTree();

function sorted(words: string[]): string[] {
  return [...words].sort();
}

async function run(cmd: string, args: string[], cwd?: string): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${decoder.decode(out.stderr)}`);
  return decoder.decode(out.stdout);
}

let dir: string;
const scripts: Record<string, string> = {};

before(async () => {
  dir = await Deno.makeTempDir({ prefix: "vid-completions-" });
  for (const shell of ["bash", "zsh", "fish"]) {
    const result = await runVid(["completions", shell]);
    assert.equal(result.code, 0, result.stderr);
    scripts[shell] = `${dir}/vid.${shell}`;
    await Deno.writeTextFile(scripts[shell], result.stdout);
  }
  await Deno.mkdir(`${dir}/files/project`, { recursive: true });
  await Deno.writeTextFile(`${dir}/files/batch.jsonl`, "");
  await Deno.writeTextFile(`${dir}/files/my clip.mp4`, "");
});

after(async () => {
  await Deno.remove(dir, { recursive: true });
});

describe("vid completions bash (real bash)", () => {
  const BASH_DRIVER = 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); ' +
    'COMPREPLY=(); _vid; printf "%s\\n" "${COMPREPLY[@]}"';

  /** COMPREPLY for the command line `words` (the last word is under the cursor). */
  async function complete(words: string[], cwd?: string): Promise<string[]> {
    const out = await run("bash", [
      "--norc",
      "--noprofile",
      "-c",
      BASH_DRIVER,
      "bash",
      scripts.bash,
      ...words,
    ], cwd);
    return out.split("\n").filter((l) => l !== "");
  }

  it("vid ren<TAB> -> render; vid render --fo<TAB> -> --format", async () => {
    assert.deepEqual(await complete(["vid", "ren"]), ["render", "render-batch"]);
    assert.deepEqual(await complete(["vid", "render", "--fo"]), ["--format"]);
  });

  it("vid lambda <TAB> lists the lambda subcommands of the live tree", async () => {
    const lambda = TREE.find((c) => c.path === "vid lambda")!;
    assert.ok(lambda.commands.includes("render-batch"));
    assert.deepEqual(sorted(await complete(["vid", "lambda", ""])), sorted(lambda.commands));
  });

  it("option values complete to commander's choices, also after --flag=", async () => {
    assert.deepEqual(await complete(["vid", "render", "--format", ""]), [
      "mp4",
      "webm",
      "mov",
      "gif",
      "png",
    ]);
    assert.deepEqual(await complete(["vid", "render", "--format", "=", "w"]), ["webm"]);
    assert.deepEqual(await complete(["vid", "cloud", "render", "--format", "="]), [
      "mp4",
      "webm",
      "mov",
    ]);
    assert.deepEqual(
      await complete(["vid", "cloud", "render", "--quality", ""]),
      ["draft", "standard", "high"],
    );
    assert.deepEqual(await complete(["vid", "completions", ""]), ["bash", "zsh", "fish"]);
  });

  it("an option's value is skipped when finding the command, and free values get nothing", async () => {
    assert.deepEqual(await complete(["vid", "render", "--fps", "30", "--qu"]), ["--quality"]);
    assert.deepEqual(await complete(["vid", "render", "--fps", ""]), []);
    // "render" here is the --site-id value, not a command.
    const lambdaRender = TREE.find((c) => c.path === "vid lambda render")!;
    assert.deepEqual(
      sorted(await complete(["vid", "lambda", "render", "--site-id", "render", "--w"])),
      sorted(lambdaRender.longs.filter((f) => f.startsWith("--w"))),
    );
  });

  it("path arguments and path options complete files, one entry per file", async () => {
    const cwd = `${dir}/files`;
    const files = sorted(["batch.jsonl", "my clip.mp4", "project"]);
    assert.deepEqual(sorted(await complete(["vid", "render", ""], cwd)), files);
    assert.deepEqual(sorted(await complete(["vid", "render", "-o", "my"], cwd)), ["my clip.mp4"]);
    assert.deepEqual(
      await complete(["vid", "lambda", "render-batch", "project", "--batch", "b"], cwd),
      ["batch.jsonl"],
    );
    assert.deepEqual(await complete(["vid", "cloud", "get", ""], cwd), [], "a render id");
  });

  it("vid help <TAB> and vid lambda help <TAB> offer the sibling commands", async () => {
    const root = TREE.find((c) => c.path === "vid")!.commands.filter((c) => c !== "help");
    assert.deepEqual(sorted(await complete(["vid", "help", ""])), sorted(root));
    assert.deepEqual(sorted(await complete(["vid", "lambda", "help", "re"])), [
      "render",
      "render-batch",
    ]);
  });

  it("every command's options complete after --, exactly the live tree's long flags", async () => {
    for (const command of TREE) {
      const words = [...command.path.split(" "), "--"];
      assert.deepEqual(sorted(await complete(words)), sorted(command.longs), command.path);
    }
  });
});

describe("vid completions zsh", () => {
  it(HAS_ZSH ? "is valid zsh (zsh -n) and names every command" : "SKIPPED: zsh not installed", {
    skip: !HAS_ZSH,
  }, async () => {
    await run("zsh", ["-n", scripts.zsh]);
    const text = await Deno.readTextFile(scripts.zsh);
    assert.match(text, /^#compdef vid$/m);
    for (const command of TREE) assert.ok(text.includes(`'${command.path}')`), command.path);
  });

  it(
    HAS_ZSH
      ? "walks the words in real zsh (compsys builtins stubbed to print their candidates)"
      : "SKIPPED: zsh not installed",
    { skip: !HAS_ZSH },
    async () => {
      const driver = [
        "compdef() { : }",
        'source "$1"; shift',
        'compadd() { if [[ $1 == -a ]]; then print -rl -- "${(@P)2}"; else print -rl -- "$@"; fi }',
        '_describe() { local x; for x in "${(@P)4}"; do print -r -- "${x%%:*}"; done }',
        "_files() { print -r -- '<files>' }",
        "compset() { PREFIX=${PREFIX#*=} }",
        'words=("$@"); CURRENT=$#words; PREFIX=${words[CURRENT]}',
        "_vid",
      ].join("\n");
      const complete = async (words: string[]) =>
        (await run("zsh", ["-f", "-c", driver, "zsh", scripts.zsh, ...words])).split("\n")
          .filter((l) => l !== "");
      const lambda = TREE.find((c) => c.path === "vid lambda")!;
      assert.deepEqual(sorted(await complete(["vid", "lambda", ""])), sorted(lambda.commands));
      assert.deepEqual(await complete(["vid", "render", "--format", ""]), [
        "mp4",
        "webm",
        "mov",
        "gif",
        "png",
      ]);
      assert.deepEqual(await complete(["vid", "render", "--format=w"]), [
        "mp4",
        "webm",
        "mov",
        "gif",
        "png",
      ]);
      assert.deepEqual(await complete(["vid", "render", "-o", ""]), ["<files>"]);
      assert.deepEqual(await complete(["vid", "cloud", "get", ""]), []);
      const render = TREE.find((c) => c.path === "vid render")!;
      const options = await complete(["vid", "render", "--fps", "30", "-"]);
      for (const long of render.longs) assert.ok(options.includes(long), long);
    },
  );
});

describe("vid completions fish", () => {
  /** What fish offers for `line` (`complete -C`), candidates only. */
  async function complete(line: string, cwd?: string): Promise<string[]> {
    const out = await run(
      "fish",
      ["--no-config", "-c", "source $argv[1]; complete -C $argv[2]", scripts.fish, line],
      cwd,
    );
    return out.split("\n").filter((l) => l !== "").map((l) => l.split("\t")[0]);
  }

  it(HAS_FISH ? "is valid fish (fish -n) and names every command" : "SKIPPED: fish not installed", {
    skip: !HAS_FISH,
  }, async () => {
    await run("fish", ["--no-config", "-n", scripts.fish]);
    const text = await Deno.readTextFile(scripts.fish);
    for (const command of TREE) assert.ok(text.includes(`# ${command.path}\n`), command.path);
  });

  it(
    HAS_FISH ? "completes in real fish (complete -C)" : "SKIPPED: fish not installed",
    { skip: !HAS_FISH },
    async () => {
      assert.deepEqual(await complete("vid ren"), ["render"]);
      assert.deepEqual(await complete("vid render --fo"), ["--format"]);
      const lambda = TREE.find((c) => c.path === "vid lambda")!;
      assert.deepEqual(sorted(await complete("vid lambda ")), sorted(lambda.commands));
      assert.deepEqual(sorted(await complete("vid render --format ")), ["mov", "mp4", "webm"]);
      assert.deepEqual(await complete("vid render --format=w"), ["--format=webm"]);
      assert.deepEqual(sorted(await complete("vid completions ")), ["bash", "fish", "zsh"]);
      assert.deepEqual(await complete("vid render --fps 30 --qu"), ["--quality"]);
      const cwd = `${dir}/files`;
      assert.deepEqual(await complete("vid render -o my", cwd), ["my clip.mp4"]);
      assert.deepEqual(await complete("vid cloud get ", cwd), []);
    },
  );
});

describe("vid completions: usage", () => {
  it("a bad shell name exits 2 naming the value and the choices", async () => {
    const result = await runVid(["completions", "tcsh"]);
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /'tcsh'/);
    assert.match(result.stderr, /bash, zsh, fish/);
    assert.equal(result.stdout, "");
  });

  it("--help says how to install each script", async () => {
    const result = await runVid(["completions", "--help"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /source <\(vid completions bash\)/);
    assert.match(result.stdout, /_vid/);
    assert.match(result.stdout, /completions\/vid\.fish/);
  });
});
