/**
 * Runs the suite and ends with one summary line. Without arguments, everything: first
 * `deno fmt --check`, `deno lint` and `deno check --doc` of every TypeScript file outside
 * `pulumi/` (one test each; `--doc` type-checks every `@example` too) and, alongside them,
 * the Pulumi program in `pulumi/` under Node: `npm install` there (a quick no-op once
 * `node_modules` matches `package-lock.json`), `tsc --noEmit` (one test) and its unit tests
 * (`node --test` with the tsx loader, Pulumi mocks; its output is printed when it ends).
 * After the checks, still alongside Pulumi, the runnable `@example` blocks of the library
 * (`deno test --doc`, below) and, alongside them, `deno test --deny-run --parallel
 * tests/unit/` (its output printed after theirs); then, alone on the
 * machine, the integration tests in three groups: the files of `SERIAL_INTEGRATION` (below:
 * they assert deadlines) two at a time, then those of `ALONE_INTEGRATION` (they touch state
 * the whole test process shares, or measure the machine) one at a time, with any test file
 * still directly in `tests/`, then the others with `deno test --parallel` (one worker more
 * than the cores, `DENO_JOBS` to change it). Each group starts its `LONGEST_FIRST` files first, so no long
 * file starts last and runs on alone. No test is type-checked twice when `deno check`
 * passed. Every `deno test` and `node --test` run writes a JUnit report that is parsed for
 * the counts: `.test-results/junit.xml` holds the parallel integration tests (and any run
 * given a path), `serial-junit.xml` and `alone-junit.xml` the other two groups,
 * `unit-junit.xml`, `doc-junit.xml` and `pulumi-junit.xml` the others.
 *
 * `--unit` runs only the fast inner loop: `tests/unit/` (no browser, ffmpeg, subprocess or
 * server process; `deno test --deny-run` enforces the subprocess part) and the runnable
 * examples. `--integration` runs only `tests/integration/` (real Chromium, ffmpeg, servers,
 * S3 and worker processes). `deno task test:unit` and `deno task test:integration` are these.
 *
 * Examples: an `@example` block labelled `ts` is type-checked and run by `deno test --doc`
 * (pure computations state their results with `node:assert`); one labelled `ts no_run`
 * renders, launches a browser, touches the network, AWS or the user's files, so it is only
 * type-checked (deno has no such attribute: this script leaves those out of the run with a
 * `--filter` naming the runnable ones, and fails when one of those did not run).
 *
 * Other arguments go to `deno test` (and skip the examples and Pulumi); a path among them
 * replaces the test folders:
 *
 * ```sh
 * deno run -A scripts/test.ts --filter variables
 * deno run -A scripts/test.ts tests/unit/composition_test.ts
 * deno run -A scripts/test.ts --unit
 * ```
 *
 * The very last line printed is `N passed, N failed` (with `, N skipped` when some were
 * skipped). The exit code is non-zero when anything failed or no test ran.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { writeDocTests } from "./doc_tests.ts";

/** Counts of one run, and the names of what failed. */
interface Tally {
  passed: number;
  failed: number;
  skipped: number;
  failures: string[];
}

/** One `<testcase>` of a JUnit report. */
interface TestCase {
  name: string;
  classname: string;
  /** Absent for tests that `--filter` left out. */
  time?: string;
  failureMessage?: string;
  skipped: boolean;
}

const ROOT: string = fileURLToPath(new URL("../", import.meta.url));
const JUNIT_PATH = ".test-results/junit.xml";
const PULUMI_DIR: string = `${ROOT}pulumi`;
const PULUMI_JUNIT_PATH = ".test-results/pulumi-junit.xml";
const DOC_JUNIT_PATH = ".test-results/doc-junit.xml";
const UNIT_JUNIT_PATH = ".test-results/unit-junit.xml";
const SERIAL_JUNIT_PATH = ".test-results/serial-junit.xml";
const ALONE_JUNIT_PATH = ".test-results/alone-junit.xml";
/** Where the runnable examples are written as test files (scripts/doc_tests.ts). */
const DOC_TESTS_FOLDER = ".test-results/examples";
/** How many files they are spread over: one worker each, `--parallel` on every core. */
const DOC_TEST_FILES = 4;

/** Fast tests of pure logic: no browser, ffmpeg, subprocess or server process. */
const UNIT_TESTS = "tests/unit/";
/** End-to-end tests: real Chromium, ffmpeg, servers, S3 and worker processes. */
const INTEGRATION_TESTS = "tests/integration/";

/**
 * Integration files kept out of the parallel group (`deno test --parallel`: one worker more
 * than the cores, or `DENO_JOBS`), which keeps both cores busy: a file goes here when it asserts a
 * deadline or a duration that a saturated machine would stretch. These files mostly wait
 * (on a deadline, a lease, a server), so they run two at a time in a group of their own
 * (`DENO_JOBS=2`, workers of one process): one that changes or inspects process-wide state
 * (the environment, its children, the working folder), or measures the machine, must also
 * be in {@linkcode ALONE_INTEGRATION}. Every other file must hold its own ports (port 0),
 * folders (a temp dir) and processes (checks by its own pids, not the machine's).
 */
export const SERIAL_INTEGRATION: Readonly<Record<string, string>> = {
  // Deadlines and durations asserted, or time that must pass while a render runs.
  "security_server_deadlines_test.ts":
    "GET latency while zips are checked; frame, budget and SIGTERM deadlines",
  "server_queue_test.ts": "holds SQLite's write lock past its 5 s busy timeout mid-render",
  "startup_test.ts": "compares start-up times",
  "floor_bench_test.ts": "samples the CPU time of a process tree",
  "lambda_timecap_test.ts": "a 1 s task time cap",
  "lambda_sdk_test.ts": "bounds a run time between two figures; sets AWS_* in the test process",
  "video_presentation_test.ts": "the first capture within 1 s",
  "server_cluster_test.ts": "3 s leases renewed every second; kill -9 of workers mid-render",
  "security_ffmpeg_test.ts": "a deleted render's proxy conversion ends within 10 s",
  "player_test.ts": "a second of play moves the player's currentTime about a second",
  "aws_deadline_test.ts": "a 2 s AWS call deadline; a Ctrl-C ends a hung call within seconds",
  "browser_launch_test.ts": "sets VID_CHROMIUM_FLAGS in the test process for one launch",
};

/**
 * Integration files that run one at a time (`deno test` without `--parallel`), after the
 * others: they measure the machine, or change state the whole test process shares (its
 * environment), so no other file may run beside them.
 */
export const ALONE_INTEGRATION: ReadonlySet<string> = new Set([
  "startup_test.ts",
  "floor_bench_test.ts",
  "video_presentation_test.ts",
  "lambda_timecap_test.ts",
  // Its "DELETE of a hung render … within 5 s" failed twice in 2026-12 clean-clone runs
  // (ci6, ci2), both times paired with server_cluster_test's kill -9 scenarios, and passed
  // in every run where it was not: its deadlines are measured with the machine to itself.
  "security_server_deadlines_test.ts",
  // They set the test process's environment (AWS_*, VID_S3_ENDPOINT; VID_CHROMIUM_FLAGS),
  // which every file running beside them in that process would see.
  "lambda_sdk_test.ts",
  "browser_launch_test.ts",
]);

/**
 * The slowest integration files, slowest first (seconds measured on the idle 2-core machine).
 * Each group starts these before its other files (alphabetical): a long file started last
 * would run on with one core idle. An order, not a rule: a stale name is only ignored.
 */
export const LONGEST_FIRST: readonly string[] = [
  "hyperframes_test.ts", // 52
  "lambda_batch_test.ts", // 38 (50 before issue 35's cuts; scaled by a before/after run)
  "mistakes_test.ts", // 86 on a machine shared by five (the idle figure is lower)
  "server_postgres_test.ts", // 47
  "server_cluster_test.ts", // 39
  "chunk_identity_test.ts", // 26
  "npm_package_test.ts", // 34
  "server_lambda_test.ts", // 31
  "media_test.ts", // ~28 (32 before issue 35 cut its CPU 12 %; not re-timed idle)
  "readme_test.ts", // 31
  "preview_test.ts", // 30
  "lambda_local_test.ts", // 29
  "player_test.ts", // 29
  "cloud_test.ts", // 24 (28 before issue 35's cuts; scaled)
  "runtime_test.ts", // ~16 (28 before issue 35 cut its CPU 45 %; not re-timed idle)
  "security_server_deadlines_test.ts", // 21
  "security_ffmpeg_test.ts", // 20 (76 with the machine shared)
  "server_queue_test.ts", // 19
  "studio_test.ts", // 19
  "lambda_runtime_test.ts", // 16
  "examples_recipes_test.ts", // 17
  "security_network_test.ts", // 17
  "server_chunks_test.ts", // 14 (16 before issue 35's cuts; scaled)
  "server_test.ts", // 10 (16 before issue 35's cuts; scaled)
  "audio_mix_test.ts", // 15
  "oauth_test.ts", // 15
  "security_server_test.ts", // 15
  "example_hello_test.ts", // 14
  "render_cli_test.ts", // 13
];

/** `paths` with the files of {@linkcode LONGEST_FIRST} first, in its order, then the rest sorted. */
export function longestFirst(paths: readonly string[]): string[] {
  const rank = (path: string): number => {
    const index = LONGEST_FIRST.indexOf(path.slice(path.lastIndexOf("/") + 1));
    return index === -1 ? LONGEST_FIRST.length : index;
  };
  return [...paths].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The library whose `@example` blocks `deno test --doc` runs (the `no_run` ones aside). */
const DOC_TESTED: string[] = [
  "mod.ts",
  "render.ts",
  "lambda.ts",
  "cloud.ts",
  "server.ts",
  "cli.ts",
  "src",
];

/** A JSDoc line opening a fenced block; group 1 is the info string (language, attributes). */
const JSDOC_FENCE = /^\s*\*\s*```(.*)$/;
/** The info-string languages `deno test --doc` extracts from JSDoc (not unlabelled blocks). */
const DOC_LANGUAGES: ReadonlySet<string> = new Set([
  "js",
  "javascript",
  "mjs",
  "cjs",
  "jsx",
  "ts",
  "typescript",
  "mts",
  "cts",
  "tsx",
]);
/** A JSDoc line closing a fenced block. */
const CLOSING_FENCE = /^\s*\*\s*```\s*$/;

/** `deno test` flags whose value may follow as a separate argument. */
const FLAGS_WITH_VALUE: ReadonlySet<string> = new Set([
  "--filter",
  "--reporter",
  "--config",
  "-c",
  "--import-map",
  "--lock",
  "--cert",
  "--location",
  "--seed",
  "--ext",
  "--junit-path",
]);

/**
 * What `deno check` covers: every TypeScript file of the repository but the Pulumi program,
 * which `tsc` checks against its own package (below).
 */
const TYPE_CHECKED: string[] = [
  "mod.ts",
  "render.ts",
  "lambda.ts",
  "cloud.ts",
  "server.ts",
  "cli.ts",
  "src",
  "worker",
  "bench",
  "scripts",
  "tests",
];

/** Deno marks a parent test that failed only because of its steps with this message. */
const STEP_FAILURE = /^\d+ test steps? failed/;

/** Where a step's lines go: printed at once, or kept to print after a step run alongside. */
type Log = (text: string) => void;

async function runCheck(
  name: string,
  args: string[],
  tally: Tally,
  program: string = Deno.execPath(),
  cwd: string = ROOT,
  log: Log = console.log,
): Promise<void> {
  const started = performance.now();
  const result = await new Deno.Command(program, {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (result.code === 0) {
    tally.passed++;
    log(`ok    ${name} (${seconds}s)`);
    return;
  }
  tally.failed++;
  tally.failures.push(name);
  const command = program === Deno.execPath() ? "deno" : program;
  log(`FAIL  ${name}: ${command} ${args.join(" ")}`);
  const decoder = new TextDecoder();
  log((decoder.decode(result.stdout) + decoder.decode(result.stderr)).trimEnd());
}

/** Whether `args` names test files or directories (which then replace `tests/`). */
function hasPath(args: string[]): boolean {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--") return false;
    if (FLAGS_WITH_VALUE.has(arg)) {
      i++;
    } else if (!arg.startsWith("-")) {
      return true;
    }
  }
  return false;
}

function unescapeXml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|lt|gt|amp|quot|apos);/gi, (_, entity: string) => {
    const named: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };
    if (entity[0] !== "#") return named[entity.toLowerCase()];
    const code = entity[1] === "x" || entity[1] === "X"
      ? parseInt(entity.slice(2), 16)
      : parseInt(entity.slice(1), 10);
    return String.fromCodePoint(code);
  });
}

function attribute(attributes: string, name: string): string | undefined {
  const value = new RegExp(`\\s${name}="([^"]*)"`).exec(attributes)?.[1];
  return value === undefined ? undefined : unescapeXml(value);
}

/** The `<testcase>` elements of a JUnit report as written by `deno test --junit-path`. */
function parseJunit(xml: string): TestCase[] {
  const cases: TestCase[] = [];
  const pattern = /<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g;
  for (const match of xml.matchAll(pattern)) {
    const [, attributes, body = ""] = match;
    const failure = /<(failure|error)\b([^>]*)/.exec(body);
    cases.push({
      name: attribute(attributes, "name") ?? "(unnamed)",
      classname: attribute(attributes, "classname") ?? "",
      time: attribute(attributes, "time"),
      failureMessage: failure ? attribute(failure[2], "message") ?? failure[1] : undefined,
      skipped: /<skipped\b/.test(body),
    });
  }
  return cases;
}

/**
 * Adds the cases to the tally. Deno reports each step (`node:test` `it` inside `describe`) as
 * its own case named `parent > step` and the parent too; only the leaves are counted, so a
 * failing step is not counted twice. A parent counts only when it failed by itself.
 */
function countCases(cases: TestCase[], tally: Tally): void {
  const isParent = (parent: TestCase): boolean =>
    cases.some((child) =>
      child.name.startsWith(`${parent.name} > `) &&
      (child.classname === parent.classname || child.classname.startsWith("ext:"))
    );
  for (const testCase of cases) {
    const ownFailure = testCase.failureMessage !== undefined &&
      !STEP_FAILURE.test(testCase.failureMessage);
    if (isParent(testCase) && !ownFailure) continue;
    if (testCase.failureMessage !== undefined) {
      tally.failed++;
      tally.failures.push(`${testCase.classname} :: ${testCase.name}`);
    } else if (testCase.skipped) {
      // A case without a time was filtered out, not skipped by the test itself.
      if (testCase.time !== undefined) tally.skipped++;
    } else {
      tally.passed++;
    }
  }
}

async function readJunit(path: string): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(`${ROOT}${path}`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/**
 * Runs `deno test` and returns the counts of its tests. Its output is streamed live, or,
 * given `log`, kept and handed to `log` when it ends (for a run alongside another).
 * `defaultPaths` are tested unless `extraArgs` names paths; `flags` come before `extraArgs`.
 */
async function runTests(
  extraArgs: string[],
  defaultPaths: string[] = ["tests/"],
  flags: string[] = [],
  junitPath: string = JUNIT_PATH,
  log?: Log,
  env: Record<string, string> = {},
): Promise<Tally> {
  const tally: Tally = { passed: 0, failed: 0, skipped: 0, failures: [] };
  await Deno.mkdir(`${ROOT}.test-results`, { recursive: true });
  await Deno.remove(`${ROOT}${junitPath}`).catch(() => {});
  const args = ["test", "-A", ...flags, `--junit-path=${junitPath}`, ...extraArgs];
  if (!hasPath(extraArgs)) {
    const separator = args.indexOf("--");
    args.splice(separator === -1 ? args.length : separator, 0, ...defaultPaths);
  }
  const shown = args.map((arg) => arg.length > 120 ? `${arg.slice(0, 40)}…` : arg);
  const assignments = Object.entries(env).map(([name, value]) => `${name}=${value} `).join("");
  (log ?? console.log)(`\n$ ${assignments}deno ${shown.join(" ")}`);
  const output = log ? "piped" : "inherit";
  const result = await new Deno.Command(Deno.execPath(), {
    args,
    env,
    cwd: ROOT,
    stdin: "null",
    stdout: output,
    stderr: output,
  }).output();
  const code = result.code;
  if (log) {
    const decoder = new TextDecoder();
    log((decoder.decode(result.stdout) + decoder.decode(result.stderr)).trimEnd());
  }
  const xml = await readJunit(junitPath);
  if (xml === undefined) {
    tally.failed++;
    tally.failures.push(`deno test exited with code ${code} without writing ${junitPath}`);
    return tally;
  }
  countCases(parseJunit(xml), tally);
  if (code !== 0 && tally.failed === 0) {
    // An uncaught error at module level fails the run without a failing <testcase>.
    tally.failed++;
    tally.failures.push(`deno test exited with code ${code} (see its output above)`);
  }
  return tally;
}

/** The TypeScript files under `path` (a file or a folder), recursively. */
async function typeScriptFiles(path: string): Promise<string[]> {
  const absolute = join(ROOT, path);
  if ((await Deno.stat(absolute)).isFile) return [absolute];
  const files: string[] = [];
  for await (const entry of Deno.readDir(absolute)) {
    const child = join(path, entry.name);
    if (entry.isDirectory) files.push(...await typeScriptFiles(child));
    else if (entry.isFile && entry.name.endsWith(".ts")) files.push(join(ROOT, child));
  }
  return files;
}

/** One fenced code block of a JSDoc comment, as `deno test --doc` names it. */
interface Example {
  /** The module's URL and `#<opening fence line>-<closing fence line + 1>.ts`. */
  name: string;
  file: string;
  /** False for `no_run` (and `ignore`) blocks and for languages deno does not run. */
  run: boolean;
}

/**
 * The fenced blocks inside JSDoc comments (lines starting with `*`) of `paths` that
 * `deno test --doc` extracts: those labelled with a JavaScript or TypeScript language.
 */
export async function docExamples(paths: string[]): Promise<Example[]> {
  const examples: Example[] = [];
  for (const path of paths) {
    for (const file of (await typeScriptFiles(path)).sort()) {
      const lines = (await Deno.readTextFile(file)).split("\n");
      for (let i = 0; i < lines.length; i++) {
        const open = JSDOC_FENCE.exec(lines[i]);
        if (!open) continue;
        let close = i + 1;
        while (close < lines.length && !CLOSING_FENCE.test(lines[close])) close++;
        const [lang = "", ...attributes] = open[1].trim().split(/\s+/);
        if (!DOC_LANGUAGES.has(lang)) {
          i = close;
          continue;
        }
        examples.push({
          name: `${pathToFileURL(file).href}#${i + 1}-${close + 2}.ts`,
          file,
          run: !attributes.includes("no_run") && !attributes.includes("ignore"),
        });
        i = close;
      }
    }
  }
  return examples;
}

/**
 * Runs the library's runnable `@example` blocks as `deno test --doc` would, each a test of a
 * few generated files (`scripts/doc_tests.ts`), leaving out the `no_run` ones, which
 * `deno check --doc` type-checks with the rest of the repository. Every runnable example
 * must have run: one missing from the report is a failure, not a gap.
 * `typeChecked`: the examples were just type-checked (`deno check --doc`), so not again.
 */
async function runDocTests(typeChecked: boolean): Promise<Tally> {
  const examples = await docExamples(DOC_TESTED);
  const runnable = examples.filter((example) => example.run);
  const files = [...new Set(runnable.map((example) => relativeToRoot(example.file)))];
  if (files.length === 0) return { passed: 0, failed: 0, skipped: 0, failures: [] };
  console.log(
    `\n(${runnable.length} runnable examples in ${files.length} modules; ` +
      `${examples.length - runnable.length} no_run examples are type-checked only)`,
  );
  // `deno check --doc` keeps what it checked in its cache, so an unchanged module's examples
  // are not checked again (`deno test --doc` checks them all on every run).
  const checked: Tally = { passed: 0, failed: 0, skipped: 0, failures: [] };
  if (!typeChecked) await runCheck("examples check", ["check", "--doc", ...files], checked);
  // Each example as a test of a few generated files (scripts/doc_tests.ts), not a module of
  // its own as `deno test --doc` loads it: loading ~355 module graphs was all of its time.
  const generated = await writeDocTests(runnable, `${ROOT}${DOC_TESTS_FOLDER}`, DOC_TEST_FILES);
  const tally = add(
    checked,
    await runTests(
      generated.map(relativeToRoot),
      [],
      ["--parallel", "--no-check"],
      DOC_JUNIT_PATH,
    ),
  );
  const xml = await readJunit(DOC_JUNIT_PATH);
  if (xml === undefined) return tally; // deno test failed before running (counted above)
  const ran = new Set(
    parseJunit(xml).filter((c) => c.time !== undefined && !c.skipped).map((c) => c.name),
  );
  for (const example of runnable) {
    if (ran.has(example.name)) continue;
    tally.failed++;
    tally.failures.push(`example ${example.name} did not run`);
  }
  const root = pathToFileURL(ROOT).href;
  tally.failures = tally.failures.map((failure) => failure.replaceAll(root, ""));
  return tally;
}

function relativeToRoot(file: string): string {
  return file.startsWith(ROOT) ? file.slice(ROOT.length) : file;
}

/**
 * Installs, type-checks and unit-tests the Pulumi program in `pulumi/` with Node (Pulumi's
 * SDK targets Node; there is no Pulumi CLI here, the tests use `pulumi.runtime.setMocks`).
 * Its output goes to `log` (the run keeps it while the static checks run alongside).
 */
export async function runPulumiTests(log: Log = console.log): Promise<Tally> {
  const tally: Tally = { passed: 0, failed: 0, skipped: 0, failures: [] };
  const fail = (reason: string): Tally => {
    tally.failed++;
    tally.failures.push(`pulumi: ${reason}`);
    return tally;
  };
  log("\n$ npm install --no-audit --no-fund (pulumi/)");
  try {
    const install = await new Deno.Command("npm", {
      args: ["install", "--no-audit", "--no-fund"],
      cwd: PULUMI_DIR,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (install.code !== 0) {
      const decoder = new TextDecoder();
      log((decoder.decode(install.stdout) + decoder.decode(install.stderr)).trimEnd());
      return fail(`npm install exited with code ${install.code}`);
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return fail("npm not found (Node.js 20+ needed)");
    throw error;
  }
  await runCheck(
    "pulumi check",
    ["node_modules/typescript/bin/tsc", "-p", "."],
    tally,
    "node",
    PULUMI_DIR,
    log,
  );

  const files: string[] = [];
  for await (const entry of Deno.readDir(`${PULUMI_DIR}/tests`)) {
    if (entry.isFile && entry.name.endsWith("_test.ts")) files.push(`tests/${entry.name}`);
  }
  files.sort();
  await Deno.remove(`${ROOT}${PULUMI_JUNIT_PATH}`).catch(() => {});
  const args = [
    "--import",
    "tsx",
    "--test",
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    "--test-reporter=junit",
    `--test-reporter-destination=${ROOT}${PULUMI_JUNIT_PATH}`,
    ...files,
  ];
  log(`\n$ node ${args.join(" ")} (pulumi/)`);
  const node = await new Deno.Command("node", {
    args,
    cwd: PULUMI_DIR,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  log((decoder.decode(node.stdout) + decoder.decode(node.stderr)).trimEnd());
  const code = node.code;
  let xml: string;
  try {
    xml = await Deno.readTextFile(`${ROOT}${PULUMI_JUNIT_PATH}`);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return fail(`node --test exited with code ${code} without writing ${PULUMI_JUNIT_PATH}`);
  }
  // node:test names every case's class `test`; name them after the suite instead.
  const cases = parseJunit(xml).map((testCase) => ({ ...testCase, classname: "pulumi/tests" }));
  countCases(cases, tally);
  if (code !== 0 && tally.failed === 0) fail(`node --test exited with code ${code}`);
  return tally;
}

/** The sum of two tallies. */
function add(a: Tally, b: Tally): Tally {
  return {
    passed: a.passed + b.passed,
    failed: a.failed + b.failed,
    skipped: a.skipped + b.skipped,
    failures: [...a.failures, ...b.failures],
  };
}

/**
 * The integration tests in three groups, each with its own JUnit report (the tally is their
 * sum): the files of {@linkcode SERIAL_INTEGRATION} two at a time, then those of
 * {@linkcode ALONE_INTEGRATION} one at a time (a stray file too: nobody has decided it may
 * share the process yet), then all the others in parallel. With paths in `args`, those run
 * as given, one at a time.
 */
async function runIntegration(args: string[], flags: string[] = []): Promise<Tally> {
  if (hasPath(args)) return await runTests(args, [INTEGRATION_TESTS], flags);
  const stray = await strayTestFiles();
  const serial: string[] = [];
  const alone: string[] = [];
  const parallel: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}${INTEGRATION_TESTS}`)) {
    if (!entry.isFile || !entry.name.endsWith("_test.ts")) continue;
    const path = `${INTEGRATION_TESTS}${entry.name}`;
    if (ALONE_INTEGRATION.has(entry.name)) alone.push(path);
    else if (entry.name in SERIAL_INTEGRATION) serial.push(path);
    else parallel.push(path);
  }
  let tally: Tally = { passed: 0, failed: 0, skipped: 0, failures: [] };
  const stale = (reason: string): void => {
    tally.failed++;
    tally.failures.push(reason);
  };
  for (const name of Object.keys(SERIAL_INTEGRATION)) {
    // A renamed file would otherwise join the parallel run unnoticed.
    const path = `${INTEGRATION_TESTS}${name}`;
    if (serial.includes(path) || alone.includes(path)) continue;
    stale(`SERIAL_INTEGRATION (scripts/test.ts) names ${name}: not in tests/integration/`);
  }
  for (const name of ALONE_INTEGRATION) {
    if (!(name in SERIAL_INTEGRATION)) {
      stale(`ALONE_INTEGRATION (scripts/test.ts) names ${name}: not in SERIAL_INTEGRATION`);
    }
  }
  alone.push(...stray);
  console.log(
    `\n(integration: ${serial.length} files two at a time, ${alone.length} one at a time, ` +
      `then ${parallel.length} in parallel)`,
  );
  if (serial.length > 0) {
    // Two at a time: each mostly waits, and two leave the deadlines they assert untouched.
    const paired = [...flags, "--parallel"];
    tally = add(
      tally,
      await runTests(args, longestFirst(serial), paired, SERIAL_JUNIT_PATH, undefined, {
        DENO_JOBS: "2",
      }),
    );
  }
  if (alone.length > 0) {
    tally = add(tally, await runTests(args, longestFirst(alone), flags, ALONE_JUNIT_PATH));
  }
  if (parallel.length > 0) {
    tally = add(
      tally,
      await runTests(
        args,
        longestFirst(parallel),
        [...flags, "--parallel"],
        JUNIT_PATH,
        undefined,
        {
          DENO_JOBS: parallelJobs(),
        },
      ),
    );
  }
  return tally;
}

/**
 * Workers for the parallel integration group: `DENO_JOBS` when set, else one more than the
 * cores. Each integration file spends part of its time waiting (on a server it started, a
 * browser, ffmpeg's last frames), and a worker per core left a core idle then: measured on the
 * 2-core machine, 3 workers took the group from 392 s to 339 s, all green; 4 workers gave
 * nothing more (2026-12-06, two clean-clone `.ci/run`s of one commit: 573 s at 4 against 541 s
 * at 3, both all green).
 */
function parallelJobs(): string {
  return Deno.env.get("DENO_JOBS") ?? String(navigator.hardwareConcurrency + 1);
}

/**
 * Test files directly in `tests/` (in neither folder yet, e.g. just merged): they run with
 * the integration tests, and a line says where they belong.
 */
async function strayTestFiles(): Promise<string[]> {
  const stray: string[] = [];
  for await (const entry of Deno.readDir(`${ROOT}tests`)) {
    if (entry.isFile && entry.name.endsWith("_test.ts")) stray.push(`tests/${entry.name}`);
  }
  if (stray.length > 0) {
    console.log(
      `\n${stray.join(", ")}: in neither tests/unit/ nor tests/integration/; run with the ` +
        "integration tests (move it to tests/unit/ if it starts no process)",
    );
  }
  return stray.sort();
}

async function main(argv: string[]): Promise<number> {
  const unit = argv.includes("--unit");
  const integration = argv.includes("--integration");
  const args = argv.filter((arg) => arg !== "--unit" && arg !== "--integration");
  const empty = (): Tally => ({ passed: 0, failed: 0, skipped: 0, failures: [] });
  const checks = empty();
  let docs = empty();
  let tests = empty();
  let pulumi = empty();
  if (unit || integration) {
    // The inner loop: no fmt, lint or type check of the whole repository, no Pulumi.
    if (unit) {
      // The unit tests (one file per core) run while the examples load, and print after them.
      const unitLog: string[] = [];
      const unitRun = runTests(
        args,
        [UNIT_TESTS],
        ["--deny-run", "--parallel"],
        UNIT_JUNIT_PATH,
        (text) => unitLog.push(text),
      );
      docs = await runDocTests(false);
      tests = await unitRun;
      for (const text of unitLog) console.log(text);
    }
    if (integration) tests = add(tests, await runIntegration(args));
  } else {
    // The Pulumi program's install, type check and tests (Node, mostly one core) run while
    // the static checks, the examples and the unit tests run (none of them renders or times
    // a render); its output is printed after theirs. It ends before the integration tests
    // start, so no render shares the machine with it.
    const pulumiLog: string[] = [];
    const pulumiRun = args.length === 0
      ? runPulumiTests((text) => pulumiLog.push(text))
      : Promise.resolve(empty());
    await runCheck("fmt", ["fmt", "--check"], checks);
    await runCheck("lint", ["lint"], checks);
    await runCheck("check", ["check", "--doc", ...TYPE_CHECKED], checks);
    // Everything under tests/ and every example was type-checked just now: not again.
    const checked = checks.failed === 0 ? ["--no-check"] : [];
    if (hasPath(args)) {
      tests = await runTests(args, ["tests/"], checked);
    } else {
      // Unit tests under --deny-run, so one that starts a process fails here too; they run
      // while the examples load, and print after them.
      const unitLog: string[] = [];
      const unitRun = runTests(
        args,
        [UNIT_TESTS],
        [...checked, "--deny-run", "--parallel"],
        UNIT_JUNIT_PATH,
        (text) => unitLog.push(text),
      );
      if (args.length === 0) docs = await runDocTests(checked.length > 0);
      tests = await unitRun;
      for (const text of unitLog) console.log(text);
    }
    pulumi = await pulumiRun;
    for (const text of pulumiLog) console.log(text);
    if (!hasPath(args)) tests = add(tests, await runIntegration(args, checked));
  }

  const failures = [...checks.failures, ...docs.failures, ...tests.failures, ...pulumi.failures];
  if (failures.length > 0) {
    console.log("\nFailed:");
    for (const name of failures) console.log(`  ${name}`);
  }
  const noTestsRan = tests.passed + tests.failed === 0;
  if (noTestsRan) console.log("\nNo tests ran: check the path and --filter given to deno test.");
  const passed = checks.passed + docs.passed + tests.passed + pulumi.passed;
  const failed = checks.failed + docs.failed + tests.failed + pulumi.failed;
  const skippedCount = docs.skipped + tests.skipped + pulumi.skipped;
  const skipped = skippedCount > 0 ? `, ${skippedCount} skipped` : "";
  console.log(`\n${passed} passed, ${failed} failed${skipped}`);
  return failed > 0 || noTestsRan ? 1 : 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
