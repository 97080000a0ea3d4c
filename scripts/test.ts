/**
 * Runs the whole suite and ends with one summary line: `deno fmt --check`, `deno lint` and
 * `deno check` of every TypeScript file outside `pulumi/` (one test each), then `deno test` over `tests/` with a JUnit report
 * that is parsed for the counts. Run by `deno task test` after setup.
 *
 * A run without arguments then tests the Pulumi program in `pulumi/` under Node: `npm install`
 * there (a quick no-op once `node_modules` matches `package-lock.json`), `tsc --noEmit` (one
 * test), and its unit tests (`node --test` with the tsx loader, Pulumi mocks), counted from
 * their JUnit report like those of `deno test`.
 *
 * Extra arguments go to `deno test`; a path among them replaces `tests/`:
 *
 * ```sh
 * deno run -A scripts/test.ts --filter variables
 * deno run -A scripts/test.ts tests/composition_test.ts
 * ```
 *
 * The very last line printed is `N passed, N failed` (with `, N skipped` when some were
 * skipped). The exit code is non-zero when anything failed or no test ran.
 *
 * @module
 */

import { fileURLToPath } from "node:url";

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

async function runCheck(
  name: string,
  args: string[],
  tally: Tally,
  program: string = Deno.execPath(),
  cwd: string = ROOT,
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
    console.log(`ok    ${name} (${seconds}s)`);
    return;
  }
  tally.failed++;
  tally.failures.push(name);
  const command = program === Deno.execPath() ? "deno" : program;
  console.log(`FAIL  ${name}: ${command} ${args.join(" ")}`);
  const decoder = new TextDecoder();
  console.log((decoder.decode(result.stdout) + decoder.decode(result.stderr)).trimEnd());
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

async function readJunit(): Promise<string | undefined> {
  try {
    return await Deno.readTextFile(`${ROOT}${JUNIT_PATH}`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

/** Runs `deno test` with the output streamed live and returns the counts of its tests. */
async function runTests(extraArgs: string[]): Promise<Tally> {
  const tally: Tally = { passed: 0, failed: 0, skipped: 0, failures: [] };
  await Deno.mkdir(`${ROOT}.test-results`, { recursive: true });
  await Deno.remove(`${ROOT}${JUNIT_PATH}`).catch(() => {});
  const args = ["test", "-A", `--junit-path=${JUNIT_PATH}`, ...extraArgs];
  if (!hasPath(extraArgs)) {
    const separator = args.indexOf("--");
    args.splice(separator === -1 ? args.length : separator, 0, "tests/");
  }
  console.log(`\n$ deno ${args.join(" ")}`);
  const { code } = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  const xml = await readJunit();
  if (xml === undefined) {
    tally.failed++;
    tally.failures.push(`deno test exited with code ${code} without writing ${JUNIT_PATH}`);
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

/**
 * Installs, type-checks and unit-tests the Pulumi program in `pulumi/` with Node (Pulumi's
 * SDK targets Node; there is no Pulumi CLI here, the tests use `pulumi.runtime.setMocks`).
 */
async function runPulumiTests(): Promise<Tally> {
  const tally: Tally = { passed: 0, failed: 0, skipped: 0, failures: [] };
  const fail = (reason: string): Tally => {
    tally.failed++;
    tally.failures.push(`pulumi: ${reason}`);
    return tally;
  };
  console.log("\n$ npm install --no-audit --no-fund (pulumi/)");
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
      console.log((decoder.decode(install.stdout) + decoder.decode(install.stderr)).trimEnd());
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
  console.log(`\n$ node ${args.join(" ")} (pulumi/)`);
  const { code } = await new Deno.Command("node", {
    args,
    cwd: PULUMI_DIR,
    stdin: "null",
    stdout: "inherit",
    stderr: "inherit",
  }).output();
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

async function main(args: string[]): Promise<number> {
  const checks: Tally = { passed: 0, failed: 0, skipped: 0, failures: [] };
  await runCheck("fmt", ["fmt", "--check"], checks);
  await runCheck("lint", ["lint"], checks);
  await runCheck("check", ["check", ...TYPE_CHECKED], checks);
  const tests = await runTests(args);
  const pulumi: Tally = args.length === 0
    ? await runPulumiTests()
    : { passed: 0, failed: 0, skipped: 0, failures: [] };

  const failures = [...checks.failures, ...tests.failures, ...pulumi.failures];
  if (failures.length > 0) {
    console.log("\nFailed:");
    for (const name of failures) console.log(`  ${name}`);
  }
  const noTestsRan = tests.passed + tests.failed === 0;
  if (noTestsRan) console.log("\nNo tests ran: check the path and --filter given to deno test.");
  const passed = checks.passed + tests.passed + pulumi.passed;
  const failed = checks.failed + tests.failed + pulumi.failed;
  const skippedCount = tests.skipped + pulumi.skipped;
  const skipped = skippedCount > 0 ? `, ${skippedCount} skipped` : "";
  console.log(`\n${passed} passed, ${failed} failed${skipped}`);
  return failed > 0 || noTestsRan ? 1 : 0;
}

Deno.exit(await main(Deno.args));
