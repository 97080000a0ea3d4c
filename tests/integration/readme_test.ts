/**
 * README.md and the pages under docs/ are a user's guide whose commands are run, so it cannot
 * rot. This test reads their fenced code blocks and enforces the convention written at the end
 * of the README
 * ("The guide is tested"):
 *
 * - Every `sh` block is preceded by `<!-- run -->` (optionally `<!-- run: exit=<n> small -->`)
 *   or by one or more `<!-- mirrored: <file> "<test name>" -->`. A block with neither fails.
 *   - `run` blocks are executed in README order by bash (`set -e`, stderr merged into
 *     stdout) in one temporary working directory holding a copy of `examples/`, with `vid`
 *     on PATH meaning `deno run -A <repo>/cli.ts`, HOME an empty folder and no cloud or AWS
 *     credentials in the environment. `exit=<n>` is the expected exit status (default 0);
 *     `small` swaps `examples/hello` for a 320x180, 1-second copy with the same declarations
 *     and script while the block runs, so renders stay short.
 *   - `mirrored` names a test that runs the same command: the file must exist and contain
 *     the test name.
 * - A `text` block right after a `run` block is its expected output: each non-blank line must
 *   be a whole line of the output (indentation aside), in order, `…` matching anything. A `text` block after
 *   `<!-- source: <file> [<file>…] -->` is a message printed by that code: each piece between
 *   `…` (a leading `error: `, `warning: ` or `compile: ` aside) must appear in one of the
 *   files, string concatenations joined. Any other `text` block fails.
 * - `ts` blocks are type-checked by `deno check` with `@vid/cli` (and the npm package's name,
 *   `vid-sdk`) mapped to the repository's
 *   mod.ts, beside the `hello.variables.ts` that `vid types examples/hello` writes; a `ts`
 *   block preceded by `<!-- run -->` is also run with `deno run -A`, like a `sh` block.
 * - `json` and `jsonl` blocks must parse; the `html` block that declares variables must
 *   declare what examples/hello declares. A block in any other language fails.
 * - Links to headings (`#…`) and to repository files must resolve.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { posix } from "node:path";
import { parseComposition, readComposition } from "../../src/composition/composition.ts";
import { SYSTEM_PACKAGES } from "../../src/render/system.ts";
import { ROOT } from "../helpers.ts";

/** One fenced code block of a guide page. */
interface Block {
  /** The guide page it is in, relative to the repository root, e.g. `docs/lambda.md`. */
  file: string;
  /** The fence's info string, e.g. `sh`. */
  lang: string;
  /** The content, dedented by the fence's indentation. */
  code: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** Whole-line HTML comments directly above the fence (blank lines allowed between). */
  directives: string[];
  /** Whether only blank lines separate this block from the previous one. */
  followsBlock: boolean;
}

/** What a `<!-- run … -->` directive asks for. */
interface RunSpec {
  exit: number;
  small: boolean;
}

/** The guide: README.md, then the pages under docs/ it links to, each a file of markdown. */
const GUIDES: string[] = [
  "README.md",
  ...[...Deno.readDirSync(`${ROOT}docs`)].filter((e) => e.isFile && e.name.endsWith(".md"))
    .map((e) => `docs/${e.name}`).toSorted(),
];
const BLOCKS: Block[] = GUIDES.flatMap((file) =>
  parseBlocks(readFileSync(`${ROOT}${file}`, "utf8"), file)
);
/** The blocks of README.md alone. */
const README_BLOCKS: Block[] = BLOCKS.filter((b) => b.file === "README.md");

/** Splits markdown into fenced blocks with the comments attached above each. */
function parseBlocks(markdown: string, file: string): Block[] {
  const lines = markdown.split("\n");
  const blocks: Block[] = [];
  let lastBlockEnd = -2;
  for (let i = 0; i < lines.length; i++) {
    const open = lines[i].match(/^(\s*)```(\w*)\s*$/);
    if (!open) continue;
    const indent = open[1].length;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j])) {
      body.push(lines[j].slice(Math.min(indent, lines[j].search(/\S|$/))));
      j++;
    }
    const directives: string[] = [];
    let k = i - 1;
    while (k >= 0) {
      const text = lines[k].trim();
      if (text === "") {
        k--;
        continue;
      }
      const comment = text.match(/^<!--\s*(.*?)\s*-->$/);
      if (!comment) break;
      directives.unshift(comment[1]);
      k--;
    }
    blocks.push({
      file,
      lang: open[2],
      code: body.join("\n"),
      line: i + 1,
      directives,
      followsBlock: directives.length === 0 && k === lastBlockEnd,
    });
    lastBlockEnd = j;
    i = j;
  }
  return blocks;
}

/** The run directive of a block, or undefined. */
function runSpec(block: Block): RunSpec | undefined {
  const directive = block.directives.find((d) => /^run\b/.test(d));
  if (directive === undefined) return undefined;
  const options = directive.replace(/^run:?/, "").trim().split(/\s+/).filter(Boolean);
  const spec: RunSpec = { exit: 0, small: false };
  for (const option of options) {
    const exit = option.match(/^exit=(\d+)$/);
    if (exit) spec.exit = Number(exit[1]);
    else if (option === "small") spec.small = true;
    else throw new Error(`${block.file}:${block.line}: unknown run option "${option}"`);
  }
  return spec;
}

/** The `[file, test name]` pairs of a block's mirrored directives. */
function mirrors(block: Block): [string, string][] {
  return block.directives.flatMap((d) => {
    const m = d.match(/^mirrored:\s*(\S+)\s+"(.+)"$/);
    return m ? [[m[1], m[2]] as [string, string]] : [];
  });
}

/** The files of a block's source directive, or undefined. */
function sources(block: Block): string[] | undefined {
  const directive = block.directives.find((d) => d.startsWith("source:"));
  return directive?.slice("source:".length).trim().split(/\s+/);
}

/**
 * A regular expression for one expected line: the whole output line (indentation aside), `…`
 * matching anything. A part of a line is not enough: the guide once showed `2 would invoke`
 * for `2 would invoke, 0 failed to start, 0 skipped`.
 */
function linePattern(expected: string): RegExp {
  const parts = expected.split("…").map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  return new RegExp(`^\\s*${parts.join(".*")}\\s*$`);
}

/** Lines of `expected` not found, in order, among the lines of `output`. */
function missingLines(expected: string, output: string): string[] {
  const lines = output.split("\n");
  const missing: string[] = [];
  let at = 0;
  for (const want of expected.split("\n").map((l) => l.trim()).filter(Boolean)) {
    const pattern = linePattern(want);
    const found = lines.findIndex((line, index) => index >= at && pattern.test(line));
    if (found < 0) missing.push(want);
    else at = found + 1;
  }
  return missing;
}

/** Source text with adjacent string literals joined (`"a " +\n "b"` reads `"a b"`). */
function joinedSource(text: string): string {
  return text.replace(/(["'`])\s*\+\s*(["'`])/g, "").replaceAll("\\`", "`");
}

/** examples/hello at 320x180 for 1 s, declarations and script unchanged. */
function smallHello(html: string): string {
  const small = html.replaceAll("1920", "320").replaceAll("1080", "180")
    .replace('data-duration="5"', 'data-duration="1"');
  assert.notEqual(small, html, "examples/hello no longer has the size the small copy rewrites");
  return small;
}

describe("README.md and docs/", () => {
  it("opens with the quick start: deno task hello, then deno task test", () => {
    const first = README_BLOCKS.find((b) => b.lang === "sh");
    assert.equal(first?.code.trim(), "npx --yes deno@2 task hello\nnpx --yes deno@2 task test");
  });

  it("links only to headings and files that exist", () => {
    const anchorsOf = (file: string): Set<string> => {
      const prose = readFileSync(`${ROOT}${file}`, "utf8").replace(/^\s*```[\s\S]*?^\s*```/gm, "");
      return new Set(
        [...prose.matchAll(/^#+ (.+)$/gm)].map((m) =>
          m[1].toLowerCase().replace(/[^\p{L}\p{N}\s-]/gu, "").replace(/\s/g, "-")
        ),
      );
    };
    const broken: string[] = [];
    for (const file of GUIDES) {
      const prose = readFileSync(`${ROOT}${file}`, "utf8").replace(/^\s*```[\s\S]*?^\s*```/gm, "");
      for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^https?:/.test(target)) continue;
        const [path, anchor] = target.split("#");
        const linked = path === "" ? file : posix.normalize(posix.join(posix.dirname(file), path));
        if (!existsSync(`${ROOT}${linked}`)) broken.push(`${file}: ${target}`);
        else if (anchor !== undefined && linked.endsWith(".md") && !anchorsOf(linked).has(anchor)) {
          broken.push(`${file}: ${target}`);
        }
      }
    }
    assert.deepEqual(broken, []);
  });

  it("links every page under docs/ from README.md", () => {
    const readme = readFileSync(`${ROOT}README.md`, "utf8");
    const unlinked = GUIDES.filter((file) => file !== "README.md" && !readme.includes(`](${file}`));
    assert.deepEqual(unlinked, []);
  });

  it("has fenced blocks only in the languages this test checks", () => {
    const checked = new Set(["sh", "ts", "text", "json", "jsonl", "html"]);
    const other = BLOCKS.filter((b) => !checked.has(b.lang));
    assert.deepEqual(other.map((b) => `${b.file}:${b.line}: \`\`\`${b.lang}`), []);
  });

  it("has at least one sh block, and every sh block is run or mirrored", () => {
    const sh = BLOCKS.filter((b) => b.lang === "sh");
    assert.ok(sh.length > 10, `only ${sh.length} sh blocks`);
    const unmarked = sh.filter((b) => runSpec(b) === undefined && mirrors(b).length === 0);
    assert.deepEqual(
      unmarked.map((b) => `${b.file}:${b.line}: ${b.code.split("\n")[0]}`),
      [],
      'each sh block needs <!-- run --> or <!-- mirrored: tests/<file>_test.ts "<test name>" -->',
    );
  });

  it("names only mirrored tests that exist", () => {
    const problems: string[] = [];
    for (const block of BLOCKS) {
      for (const [file, name] of mirrors(block)) {
        let text: string;
        try {
          text = readFileSync(`${ROOT}${file}`, "utf8");
        } catch {
          problems.push(`${block.file}:${block.line}: ${file} does not exist`);
          continue;
        }
        if (!text.includes(name)) {
          problems.push(`${block.file}:${block.line}: ${file} has no test "${name}"`);
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  it("the install command lists every package setup installs", () => {
    const install = README_BLOCKS.find((b) =>
      b.lang === "sh" && b.code.includes("apt-get install")
    );
    assert.ok(install, "no apt-get install block");
    const listed = install.code.trim().split(/\s+/).slice(4);
    assert.deepEqual(install.code.trim().split(/\s+/).slice(0, 4), [
      "sudo",
      "apt-get",
      "install",
      "-y",
    ]);
    assert.deepEqual(listed.toSorted(), Object.values(SYSTEM_PACKAGES).flat().toSorted());
  });

  it("has a text block only as a run block's output or a sourced message", () => {
    const stray = BLOCKS.flatMap((block, i) => {
      if (block.lang !== "text" || sources(block)) return [];
      const previous = BLOCKS[i - 1];
      const isOutput = block.followsBlock && previous !== undefined && runSpec(previous);
      return isOutput ? [] : [`${block.file}:${block.line}`];
    });
    assert.deepEqual(stray, []);
  });

  it("quotes messages that the named source files print", () => {
    const problems: string[] = [];
    for (const block of BLOCKS) {
      const files = sources(block);
      if (!files) continue;
      const texts = files.map((f) => joinedSource(readFileSync(`${ROOT}${f}`, "utf8")));
      for (const line of block.code.split("\n")) {
        const message = line.trim().replace(/^(error|warning|compile): /, "");
        for (const piece of message.split("…").map((p) => p.trim()).filter(Boolean)) {
          if (!texts.some((t) => t.includes(piece))) {
            problems.push(`${block.file}:${block.line}: "${piece}" is not in ${files.join(", ")}`);
          }
        }
      }
    }
    assert.deepEqual(problems, []);
  });

  it("has json and jsonl blocks that parse (jsonl: batch entries)", () => {
    let count = 0;
    for (const block of BLOCKS) {
      if (block.lang === "json") {
        JSON.parse(block.code);
        count++;
      }
      if (block.lang === "jsonl") {
        for (const line of block.code.split("\n").filter((l) => l.trim())) {
          const entry = JSON.parse(line);
          assert.equal(typeof entry.outputKey, "string", `${block.file}:${block.line}: ${line}`);
          assert.equal(typeof entry.variables, "object", `${block.file}:${block.line}: ${line}`);
          count++;
        }
      }
    }
    assert.ok(count > 0, "no json or jsonl block");
  });

  it("shows the declarations of examples/hello as they are", async () => {
    const snippet = README_BLOCKS.find((b) =>
      b.lang === "html" && b.code.includes("data-composition-variables")
    );
    assert.ok(snippet, "no html block with data-composition-variables");
    const shown = parseComposition(`${snippet.code}</div>`, "README.md");
    const real = await readComposition(`${ROOT}examples/hello`);
    assert.deepEqual(
      [shown.id, shown.width, shown.height, shown.duration, shown.dropped],
      [real.id, real.width, real.height, real.duration, []],
    );
    assert.deepEqual(shown.declarations, real.declarations);
  });

  describe("runs the blocks marked run", () => {
    let scratch: string;
    let outcomes: Map<Block, Promise<RunOutcome>>;
    let typeCheck: Promise<RunOutcome>;

    before(async () => {
      scratch = await Deno.makeTempDir({ prefix: "vid-readme-" });
      typeCheck = checkTsBlocks(scratch);
      const setup = await runSetup(scratch);
      outcomes = new Map();
      const queue = BLOCKS.filter((b) => runSpec(b) !== undefined);
      const limit = limiter(RUN_CONCURRENCY);
      for (const block of queue) outcomes.set(block, limit(() => runBlock(block, setup)));
    });

    after(async () => {
      await Promise.allSettled([...(outcomes?.values() ?? []), typeCheck]);
      if (scratch) await Deno.remove(scratch, { recursive: true }).catch(() => {});
    });

    for (const [i, block] of BLOCKS.entries()) {
      const spec = runSpec(block);
      if (!spec) continue;
      const next = BLOCKS[i + 1];
      const expected = next?.lang === "text" && next.followsBlock ? next.code : undefined;
      const title = block.code.split("\n").find((l) => l.trim() && !/^\s*(#|\/\/)/.test(l)) ?? "";
      it(`${block.file}:${block.line}: ${block.lang} ${title.trim().slice(0, 60)} (exit ${spec.exit})`, async () => {
        const { code, output } = await outcomes.get(block)!;
        assert.equal(code, spec.exit, `exit status\n${output}`);
        if (expected !== undefined) {
          assert.deepEqual(missingLines(expected, output), [], `not in the output:\n${output}`);
        }
      });
    }

    it("type-checks the ts blocks against mod.ts", async () => {
      const { code, output } = await typeCheck;
      assert.equal(code, 0, output);
    });
  });
});

/** Exit status and combined output of a command. */
interface RunOutcome {
  code: number;
  output: string;
}

/** What every run block gets: the `vid` shim's folder, an empty HOME, the environment. */
interface RunSetup {
  scratch: string;
  env: Record<string, string>;
  hello: string;
}

/** Blocks run at once: most of a block's time is process start-up, not CPU. */
const RUN_CONCURRENCY = 3;

/** Runs at most `n` of the given tasks at once. */
function limiter(n: number): <T>(task: () => Promise<T>) => Promise<T> {
  let active = 0;
  const waiting: (() => void)[] = [];
  return async <T>(task: () => Promise<T>): Promise<T> => {
    while (active >= n) await new Promise<void>((resolve) => waiting.push(resolve));
    active++;
    try {
      return await task();
    } finally {
      active--;
      waiting.shift()?.();
    }
  };
}

/** The `vid` shim, an empty HOME and an environment without credentials. */
async function runSetup(scratch: string): Promise<RunSetup> {
  const bin = `${scratch}/bin`;
  const home = `${scratch}/home`;
  await Deno.mkdir(bin);
  await Deno.mkdir(home);
  const shim = `#!/bin/sh\nexec '${Deno.execPath()}' run -A '${ROOT}cli.ts' "$@"\n`;
  await Deno.writeTextFile(`${bin}/vid`, shim, { mode: 0o755 });
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(Deno.env.toObject())) {
    if (!/^(CLOUD_|VID_|AWS_)/.test(key)) env[key] = value;
  }
  // Deno's cache stays where it is: under the empty HOME every block would fetch it anew.
  const denoDir = env.DENO_DIR ??
    `${env.XDG_CACHE_HOME ?? `${env.HOME ?? home}/.cache`}/deno`;
  Object.assign(env, {
    HOME: home,
    DENO_DIR: denoDir,
    PATH: `${bin}:${env.PATH ?? "/usr/bin:/bin"}`,
    NO_COLOR: "1",
  });
  const hello = await Deno.readTextFile(`${ROOT}examples/hello/index.html`);
  return { scratch, env, hello };
}

/** Runs one block in its own working directory holding a copy of examples/. */
async function runBlock(block: Block, setup: RunSetup): Promise<RunOutcome> {
  const spec = runSpec(block)!;
  const work = `${setup.scratch}/${block.file.replace(/\W/g, "_")}-line-${block.line}`;
  await copyDir(`${ROOT}examples`, `${work}/examples`);
  if (spec.small) {
    await Deno.writeTextFile(`${work}/examples/hello/index.html`, smallHello(setup.hello));
  }
  let args = ["-c", `exec 2>&1\nset -e\n${block.code}`];
  if (block.lang === "ts") {
    const file = `${work}/readme_block.ts`;
    await Deno.writeTextFile(file, withModTs(block.code));
    args = [
      "-c",
      `exec 2>&1\nexec '${Deno.execPath()}' run -A --config '${ROOT}deno.json' ${file}`,
    ];
  }
  const result = await new Deno.Command("bash", {
    args,
    cwd: work,
    env: setup.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(180_000),
  }).output();
  return { code: result.code, output: new TextDecoder().decode(result.stdout) };
}

/**
 * A ts block importing the repository's entries where it says `@vid/cli` or `vid-sdk` (and
 * their `/render` and `/lambda` subpaths).
 */
function withModTs(code: string): string {
  let out = code;
  for (
    const [entry, file] of [["", "mod.ts"], ["/render", "render.ts"], ["/lambda", "lambda.ts"]]
  ) {
    const path = JSON.stringify(`${ROOT}${file}`);
    out = out.replaceAll(`"@vid/cli${entry}"`, path).replaceAll(`"vid-sdk${entry}"`, path);
  }
  return `${out}\nexport {};\n`;
}

/** Writes the ts blocks to temp files importing the repository's mod.ts and checks them. */
async function checkTsBlocks(scratch: string): Promise<RunOutcome> {
  const ts = BLOCKS.filter((b) => b.lang === "ts");
  assert.ok(ts.length > 0, "no ts block");
  const dir = `${scratch}/ts`;
  await Deno.mkdir(dir);
  // Blocks may import the type `vid types examples/hello` writes, as the README shows.
  const types = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `${ROOT}cli.ts`,
      "types",
      `${ROOT}examples/hello`,
      "-o",
      "hello.variables.ts",
    ],
    cwd: dir,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (types.code !== 0) {
    return { code: types.code, output: `vid types: ${new TextDecoder().decode(types.stderr)}` };
  }
  const files: string[] = [];
  for (const block of ts) {
    const file = `${dir}/${block.file.replace(/\W/g, "_")}_line_${block.line}.ts`;
    await Deno.writeTextFile(file, withModTs(block.code));
    files.push(file);
  }
  const result = await new Deno.Command(Deno.execPath(), {
    args: ["check", "--quiet", "--config", `${ROOT}deno.json`, ...files],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: result.code,
    output: decoder.decode(result.stdout) + decoder.decode(result.stderr),
  };
}

/** Copies a directory tree. */
async function copyDir(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) await copyDir(`${from}/${entry.name}`, `${to}/${entry.name}`);
    else if (entry.isFile) await Deno.copyFile(`${from}/${entry.name}`, `${to}/${entry.name}`);
  }
}
