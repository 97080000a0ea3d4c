/**
 * `vid completions bash|zsh|fish`: shell completion scripts generated from the live
 * command tree, so they list exactly the commands, options and choices `vid` accepts.
 *
 * Every script walks the words typed so far the same way: a word naming a subcommand of
 * the current command descends into it, an option that takes a value skips that value.
 * The word under the cursor then completes to the option's choices or a path (option
 * value), an option name (after `-`), or a subcommand, argument choice or path.
 *
 * @module
 */

import {
  Argument,
  type Command,
  type CommandUnknownOpts,
  type Option,
} from "@commander-js/extra-typings";

/** The shells `vid completions` writes scripts for. */
export const SHELLS = ["bash", "zsh", "fish"] as const;

/** One of {@linkcode SHELLS}. */
export type Shell = typeof SHELLS[number];

/** An option as the completion scripts see it. */
export interface CompletionOption {
  /** `--format`; absent for a short-only option. */
  long?: string;
  /** `-c`, when the option has a short form. */
  short?: string;
  /** One-line description. */
  description: string;
  /** Whether the option takes a value (`--fps <n>`). */
  takesValue: boolean;
  /** Allowed values, when commander knows them. */
  choices: readonly string[];
  /** Whether the value is a path (`<file>`, `<path>`, `<dir>`). */
  path: boolean;
}

/** A command as the completion scripts see it, keyed by its path (`vid lambda render`). */
export interface CompletionCommand {
  /** Words from the program name down to this command. */
  path: string[];
  /** One-line description. */
  description: string;
  /** Subcommands, including commander's implicit `help` where it adds one. */
  commands: { name: string; description: string }[];
  /** Options, including `--help` (and `--version` on the program). */
  options: CompletionOption[];
  /** Choices of the positional arguments (e.g. the shell names). */
  argumentChoices: readonly string[];
  /** Whether a positional argument is a path, so files complete. */
  pathArgument: boolean;
}

const PATH_VALUE = /<(?:file|path|dir|[a-z]+(?:Dir|File))>/;
const PATH_ARGUMENT = /\b(?:directory|file)\b/i;

/** The first sentence of a description, on one line, for menus. */
function brief(description: string): string {
  const flat = description.split(/\n\s*\n/)[0].replace(/\s+/g, " ").trim();
  // A sentence ends before a capital letter, so "e.g. --format" stays whole.
  const sentence = flat.match(/^.*?[.!?](?=\s+[A-Z]|$)/)?.[0] ?? flat;
  return sentence.replace(/[.]$/, "");
}

function optionOf(option: Option): CompletionOption {
  return {
    long: option.long,
    short: option.short,
    description: brief(option.description),
    takesValue: option.required || option.optional,
    choices: option.argChoices ?? [],
    path: PATH_VALUE.test(option.flags),
  };
}

/**
 * Every command of the tree under `program`, depth first, with what completion needs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { buildProgram } from "./main.ts";
 *
 * const tree = completionTree(await buildProgram());
 * const render = tree.find((c) => c.path.join(" ") === "vid render");
 * assert.ok(render?.options.some((o) => o.long === "--format"));
 * ```
 */
export function completionTree(program: CommandUnknownOpts): CompletionCommand[] {
  const out: CompletionCommand[] = [];
  // Commander's implicit `help [command]` is not in `commands`; its argument is a sibling.
  const walk = (
    command: CommandUnknownOpts,
    path: string[],
    siblings: string[],
    implicitHelp: boolean,
  ) => {
    const help = command.createHelp();
    const visible = help.visibleCommands(command);
    const args = command.registeredArguments;
    out.push({
      path,
      description: brief(command.summary() || command.description()),
      commands: visible.map((c) => ({
        name: c.name(),
        description: brief(c.summary() || c.description()),
      })),
      options: help.visibleOptions(command).map(optionOf),
      argumentChoices: implicitHelp ? siblings : args.flatMap((a) => a.argChoices ?? []),
      pathArgument: args.some((a) =>
        a.argChoices === undefined && PATH_ARGUMENT.test(a.description)
      ),
    });
    const names = visible.map((c) => c.name()).filter((n) => n !== "help");
    for (const sub of visible) {
      walk(sub, [...path, sub.name()], names, !command.commands.includes(sub));
    }
  };
  walk(program, [program.name()], [], false);
  return out;
}

/** Single-quotes `text` for POSIX shells (bash, zsh). */
function shQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Single-quotes `text` for fish. */
function fishQuote(text: string): string {
  return `'${text.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

function flagsOf(option: CompletionOption): string[] {
  return [option.short, option.long].filter((f): f is string => f !== undefined);
}

/** A `case` statement (valid bash and zsh) printing one word list per key. */
function shCase(name: string, entries: [string, string[]][]): string {
  const arms = entries.filter(([, words]) => words.length > 0).map(([key, words]) =>
    `    ${shQuote(key)}) printf '%s\\n' ${words.map(shQuote).join(" ")} ;;`
  );
  return [`${name}() {`, '  case "$1" in', ...arms, "  esac", "}"].join("\n");
}

/** The data functions both POSIX scripts share. */
function shData(prefix: string, tree: CompletionCommand[]): string {
  const key = (c: CompletionCommand) => c.path.join(" ");
  const choiceEntries: [string, string[]][] = [];
  const describedOptions: [string, string[]][] = [];
  for (const c of tree) {
    for (const o of c.options) {
      if (o.choices.length === 0) continue;
      for (const flag of flagsOf(o)) choiceEntries.push([`${key(c)} ${flag}`, [...o.choices]]);
    }
    describedOptions.push([
      key(c),
      c.options.flatMap((o) => flagsOf(o).map((f) => `${f.replace(/:/g, "\\:")}:${o.description}`)),
    ]);
  }
  return [
    `# Subcommands of a command path.`,
    shCase(`${prefix}_commands`, tree.map((c) => [key(c), c.commands.map((s) => s.name)])),
    `# Subcommands with descriptions (name:description).`,
    shCase(
      `${prefix}_command_lines`,
      tree.map((c) => [key(c), c.commands.map((s) => `${s.name}:${s.description}`)]),
    ),
    `# Options of a command path.`,
    shCase(`${prefix}_options`, tree.map((c) => [key(c), c.options.flatMap(flagsOf)])),
    `# Options with descriptions (flag:description).`,
    shCase(`${prefix}_option_lines`, describedOptions),
    `# Options that take a value.`,
    shCase(
      `${prefix}_value_options`,
      tree.map((c) => [key(c), c.options.filter((o) => o.takesValue).flatMap(flagsOf)]),
    ),
    `# Options whose value is a path.`,
    shCase(
      `${prefix}_path_options`,
      tree.map((c) => [key(c), c.options.filter((o) => o.path).flatMap(flagsOf)]),
    ),
    `# Choices of an option ("<command path> <flag>").`,
    shCase(`${prefix}_choices`, choiceEntries),
    `# Choices of a command's positional arguments.`,
    shCase(`${prefix}_argument_choices`, tree.map((c) => [key(c), [...c.argumentChoices]])),
    `# Commands whose positional argument is a path.`,
    shCase(
      `${prefix}_path_arguments`,
      tree.filter((c) => c.pathArgument).map((c) => [key(c), ["yes"]]),
    ),
    `${prefix}_in() {`,
    `  local needle=$1 item`,
    `  shift`,
    `  for item in "$@"; do [[ $item == "$needle" ]] && return 0; done`,
    `  return 1`,
    `}`,
  ].join("\n");
}

function header(shell: Shell, program: string, version: string): string {
  return `# ${shell} completion for ${program} ${version}, generated by \`${program} completions ` +
    `${shell}\` from the command tree.\n# Regenerate it after upgrading ${program}.`;
}

function bashScript(tree: CompletionCommand[], program: string, version: string): string {
  const fn = `_${program.replace(/\W/g, "_")}`;
  return `${header("bash", program, version)}
# Install: source <(${program} completions bash), or save it as
# ~/.local/share/bash-completion/completions/${program}

${shData(fn, tree)}

${fn}_paths() {
  local IFS=$'\\n' item
  for item in $(compgen -f -- "$1"); do COMPREPLY+=("$item"); done
  compopt -o filenames 2>/dev/null
  return 0
}

${fn}() {
  COMPREPLY=()
  local path=${shQuote(program)} word pending="" skip=0 i
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  for (( i = 1; i < COMP_CWORD; i++ )); do
    word="\${COMP_WORDS[i]}"
    if (( skip > 0 )); then (( skip-- )); continue; fi
    if [[ $word == -* ]]; then
      if ${fn}_in "$word" $(${fn}_value_options "$path"); then
        pending=$word
        # bash splits --flag=value at "=" (COMP_WORDBREAKS): skip the "=" too.
        if [[ \${COMP_WORDS[i+1]} == "=" ]]; then skip=2; else skip=1; fi
      fi
      continue
    fi
    if ${fn}_in "$word" $(${fn}_commands "$path"); then path="$path $word"; fi
  done
  if (( skip > 0 )); then
    [[ $cur == "=" ]] && cur=""
    local choices
    choices="$(${fn}_choices "$path $pending")"
    if [[ -n $choices ]]; then
      COMPREPLY=($(compgen -W "$choices" -- "$cur"))
    elif ${fn}_in "$pending" $(${fn}_path_options "$path"); then
      ${fn}_paths "$cur"
    fi
    return 0
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(${fn}_options "$path")" -- "$cur"))
    return 0
  fi
  COMPREPLY=($(compgen -W "$(${fn}_commands "$path") $(${fn}_argument_choices "$path")" -- "$cur"))
  if [[ -n $(${fn}_path_arguments "$path") ]]; then ${fn}_paths "$cur"; fi
  return 0
}

complete -F ${fn} ${program}
`;
}

function zshScript(tree: CompletionCommand[], program: string, version: string): string {
  const fn = `_${program.replace(/\W/g, "_")}`;
  return `#compdef ${program}
${header("zsh", program, version)}
# Install: save it as _${program} in a directory on $fpath (e.g. ~/.zfunc, with
# fpath=(~/.zfunc $fpath) before compinit in ~/.zshrc).

${shData(fn, tree)}

${fn}_lines() {
  local out
  out="$("$@")"
  reply=()
  [[ -n $out ]] && reply=("\${(@f)out}")
}

${fn}() {
  local cmdpath=${shQuote(program)} word pending="" skip=0 i
  local -a reply
  for (( i = 2; i < CURRENT; i++ )); do
    word=\${words[i]}
    if (( skip > 0 )); then (( skip-- )); continue; fi
    if [[ $word == -* ]]; then
      [[ $word == *=* ]] && continue
      if ${fn}_in "$word" $(${fn}_value_options "$cmdpath"); then pending=$word; skip=1; fi
      continue
    fi
    if ${fn}_in "$word" $(${fn}_commands "$cmdpath"); then cmdpath="$cmdpath $word"; fi
  done
  if [[ \${words[CURRENT]} == -*=* ]]; then
    pending=\${words[CURRENT]%%=*}
    compset -P '*='
    skip=1
  fi
  if (( skip > 0 )); then
    ${fn}_lines ${fn}_choices "$cmdpath $pending"
    if (( \${#reply} )); then
      compadd -a reply
    elif ${fn}_in "$pending" $(${fn}_path_options "$cmdpath"); then
      _files
    fi
    return
  fi
  if [[ $PREFIX == -* ]]; then
    ${fn}_lines ${fn}_option_lines "$cmdpath"
    (( \${#reply} )) && _describe -t options 'option' reply
    return
  fi
  ${fn}_lines ${fn}_command_lines "$cmdpath"
  (( \${#reply} )) && _describe -t commands 'command' reply
  ${fn}_lines ${fn}_argument_choices "$cmdpath"
  (( \${#reply} )) && compadd -a reply
  [[ -n $(${fn}_path_arguments "$cmdpath") ]] && _files
  return 0
}

if [[ $zsh_eval_context[-1] == loadautofunc ]]; then
  ${fn} "$@"
else
  compdef ${fn} ${program}
fi
`;
}

function fishScript(tree: CompletionCommand[], program: string, version: string): string {
  const fn = `__${program.replace(/\W/g, "_")}`;
  const key = (c: CompletionCommand) => c.path.join(" ");
  const sw = (name: string, entries: [string, string[]][]) =>
    [
      `function ${name}`,
      "    switch $argv[1]",
      ...entries.filter(([, words]) => words.length > 0).map(([k, words]) =>
        `        case ${fishQuote(k)}\n            printf '%s\\n' ${words.map(fishQuote).join(" ")}`
      ),
      "    end",
      "end",
    ].join("\n");
  const lines = [
    header("fish", program, version),
    `# Install: ${program} completions fish > ~/.config/fish/completions/${program}.fish`,
    "",
    sw(`${fn}_commands`, tree.map((c) => [key(c), c.commands.map((s) => s.name)])),
    "",
    sw(
      `${fn}_value_options`,
      tree.map((c) => [key(c), c.options.filter((o) => o.takesValue).flatMap(flagsOf)]),
    ),
    "",
    `# The command path of the words typed so far, e.g. "${program} lambda render".`,
    `function ${fn}_path`,
    `    set -l tokens (commandline -opc)`,
    `    set -l cmdpath ${fishQuote(program)}`,
    `    set -l skip 0`,
    `    for word in $tokens[2..-1]`,
    `        if test $skip -gt 0`,
    `            set skip 0`,
    `            continue`,
    `        end`,
    `        if string match -q -- '-*' $word`,
    `            if not string match -q -- '*=*' $word; and contains -- $word (${fn}_value_options "$cmdpath")`,
    `                set skip 1`,
    `            end`,
    `            continue`,
    `        end`,
    `        if contains -- $word (${fn}_commands "$cmdpath")`,
    `            set cmdpath "$cmdpath $word"`,
    `        end`,
    `    end`,
    `    echo $cmdpath`,
    `end`,
    "",
    `function ${fn}_at`,
    `    test (${fn}_path) = "$argv[1]"`,
    `end`,
    "",
    `complete -c ${program} -f`,
  ];
  for (const c of tree) {
    const at = `-n ${fishQuote(`${fn}_at ${fishQuote(key(c))}`)}`;
    lines.push("", `# ${key(c)}`);
    for (const s of c.commands) {
      lines.push(
        `complete -c ${program} ${at} -a ${fishQuote(s.name)} -d ${fishQuote(s.description)}`,
      );
    }
    for (const o of c.options) {
      const parts = [`complete -c ${program}`, at];
      if (o.long) parts.push(`-l ${o.long.replace(/^--/, "")}`);
      if (o.short) parts.push(`-s ${o.short.replace(/^-/, "")}`);
      if (o.takesValue && o.path) parts.push("-r -F");
      else if (o.takesValue) parts.push("-x");
      if (o.choices.length > 0) parts.push(`-a ${fishQuote(o.choices.join(" "))}`);
      parts.push(`-d ${fishQuote(o.description)}`);
      lines.push(parts.join(" "));
    }
    if (c.argumentChoices.length > 0) {
      lines.push(`complete -c ${program} ${at} -a ${fishQuote(c.argumentChoices.join(" "))}`);
    }
    if (c.pathArgument) lines.push(`complete -c ${program} ${at} -F`);
  }
  return lines.join("\n") + "\n";
}

/**
 * The completion script of `shell` for the command tree under `program`.
 *
 * @example
 * ```ts no_run
 * import { buildProgram } from "./main.ts";
 *
 * const script = completionScript("bash", await buildProgram(), "0.1.0");
 * await Deno.writeTextFile(`${Deno.env.get("HOME")}/.local/share/bash-completion/completions/vid`, script);
 * ```
 */
export function completionScript(
  shell: Shell,
  program: CommandUnknownOpts,
  version: string,
): string {
  const tree = completionTree(program);
  const name = program.name();
  switch (shell) {
    case "bash":
      return bashScript(tree, name, version);
    case "zsh":
      return zshScript(tree, name, version);
    case "fish":
      return fishScript(tree, name, version);
  }
}

/** Registers `vid completions`. `version` is printed in the scripts' header. */
export function registerCompletions(program: Command, version: string): void {
  program
    .command("completions")
    .summary("Print the shell completion script for bash, zsh or fish.")
    .description(
      "Print the shell completion script for bash, zsh or fish: commands, options, choices " +
        "(e.g. --format mp4|webm|mov) and paths.\n\n" +
        "Install:\n" +
        "  bash  source <(vid completions bash)   # or save it as\n" +
        "        ~/.local/share/bash-completion/completions/vid\n" +
        "  zsh   vid completions zsh > ~/.zfunc/_vid   # ~/.zfunc on $fpath before compinit\n" +
        "  fish  vid completions fish > ~/.config/fish/completions/vid.fish",
    )
    .addArgument(new Argument("<shell>", "the shell: bash, zsh or fish").choices(SHELLS))
    .action((shell) => {
      console.log(completionScript(shell, program, version).trimEnd());
    });
}
