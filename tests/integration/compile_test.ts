/**
 * `deno task compile`: its failure here (no `denort` can be downloaded: a clear message,
 * exit 1, no binary left behind), and that the runtime files it embeds resolve from a
 * compiled layout. The `deno compile` arguments of each target and the task's argument
 * parsing are in tests/unit/compile_args_test.ts.
 *
 * A binary cannot be built on this machine, so the compiled layout is simulated the way
 * `--self-extracting` lays it out on disk: the modules of `cli.ts` and the `--include`d
 * files copied to a fresh folder at the same paths relative to the repository root
 * (npm packages from the repository's `node_modules`), then run from there: `vid server`
 * serves the OpenAPI document it reads through `import.meta.url`, and the local stack finds
 * the worker bundle, which a separate Node 22 process loads. The same layout without the
 * included files fails both ways, so the include list is what makes them work.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { cp, mkdir, readFile, symlink } from "node:fs/promises";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { parse as parseYaml } from "yaml";
import { RUNTIME_INCLUDES } from "../../scripts/compile.ts";
import { runtimeAssetUrls } from "../../scripts/build_npm.ts";
import { node22 } from "../../src/lambda/local/local_stack.ts";
import { ROOT } from "../helpers.ts";

const decoder = new TextDecoder();

interface Output {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; unset?: string[] } = {},
): Promise<Output> {
  const env: Record<string, string> = { ...Deno.env.toObject(), NO_COLOR: "1", ...options.env };
  for (const name of options.unset ?? []) delete env[name];
  const out = await new Deno.Command(command, {
    args,
    cwd: options.cwd ?? ROOT,
    env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** Local modules of `cli.ts`, relative to the repository root. */
async function cliModules(): Promise<string[]> {
  const info = await run(Deno.execPath(), ["info", "--json", "cli.ts"]);
  assert.equal(info.code, 0, info.stderr);
  const graph = JSON.parse(info.stdout) as { modules: { specifier: string }[] };
  return graph.modules
    .filter((m) => m.specifier.startsWith("file:"))
    .map((m) => relative(ROOT, fileURLToPath(m.specifier)));
}

/**
 * Lays out what a self-extracting binary writes to disk: `files` (modules and included
 * files) at their paths relative to the root, plus the lockfile the binary's npm snapshot
 * comes from and the npm packages (linked, not copied).
 */
async function compiledLayout(dir: string, files: readonly string[]): Promise<void> {
  for (const file of [...files, "deno.lock"]) {
    await mkdir(dirname(join(dir, file)), { recursive: true });
    await cp(join(ROOT, file), join(dir, file));
  }
  await symlink(join(ROOT, "node_modules"), join(dir, "node_modules"), "dir");
}

/** Starts `vid server` from `layout`; resolves its URL, or what it printed when it exited. */
async function startServer(
  layout: string,
  dataDir: string,
): Promise<{ url?: string; output: string; stop(): Promise<void> }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", join(layout, "cli.ts"), "server", "--port", "0", "--data-dir", dataDir],
    cwd: dataDir,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  let url: string | undefined;
  while (url === undefined) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
    url = /listening on (\S+)/.exec(out)?.[1];
  }
  return {
    url,
    output: out + await (url === undefined ? stderr : Promise.resolve("")),
    async stop(): Promise<void> {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
      await child.status;
      await reader.cancel().catch(() => {});
      await stderr.catch(() => "");
    },
  };
}

describe("deno task compile on a machine without denort", () => {
  let scratch: string;

  before(async () => {
    scratch = await Deno.makeTempDir({ prefix: "vid-compile-test-" });
  });

  after(async () => {
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  it("DENORT_BIN naming a missing file: exit 1, the clear message, no binary", async () => {
    const out = await run(Deno.execPath(), [
      "task",
      "compile",
      "--target",
      "linux-x64",
      "--outdir",
      scratch,
    ], { env: { DENORT_BIN: join(scratch, "no-such-denort") } });
    assert.equal(out.code, 1, out.stdout + out.stderr);
    assert.match(
      out.stderr,
      /compile: cannot build the linux-x64 binary: deno compile needs the denort runtime binary for x86_64-unknown-linux-gnu/,
    );
    assert.match(out.stderr, /deno compile said: Could not find denort at '.*no-such-denort'/);
    assert.match(out.stderr, /set DENORT_BIN to a denort binary of Deno \d+\.\d+\.\d+/);
    assert.match(out.stderr, /Meanwhile `deno task vid <command>`/);
    assert.deepEqual([...Deno.readDirSync(scratch)], [], "no binary and no temporary file left");
  });

  it("without DENORT_BIN the download from dl.deno.land fails with the same guidance", async (t) => {
    const reachable = await Deno.resolveDns("dl.deno.land", "A").then(() => true, () => false);
    if (reachable) {
      t.skip("dl.deno.land resolves here: deno compile could download denort");
      return;
    }
    const out = await run(Deno.execPath(), [
      "run",
      "-A",
      "scripts/compile.ts",
      "--target",
      "darwin-arm64",
      "--outdir",
      scratch,
    ], { unset: ["DENORT_BIN"] });
    assert.equal(out.code, 1, out.stdout + out.stderr);
    assert.match(out.stderr, /cannot build the darwin-arm64 binary/);
    assert.match(
      out.stderr,
      /deno compile said: error sending request for url \(https:\/\/dl\.deno\.land\/release\/v\d+\.\d+\.\d+\/denort-aarch64-apple-darwin\.zip\)/,
    );
    assert.match(out.stderr, /allow network access to dl\.deno\.land/);
    assert.deepEqual([...Deno.readDirSync(scratch)], [], "no binary and no temporary file left");
  });
});

describe("runtime files from a compiled layout", () => {
  let scratch: string;
  let modules: string[];

  before(async () => {
    scratch = await Deno.makeTempDir({ prefix: "vid-compiled-layout-" });
    modules = await cliModules();
  });

  after(async () => {
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  it("every file the command reads through import.meta.url is included (or documented)", async () => {
    const read = new Set<string>();
    for (const module of modules) {
      const text = await readFile(join(ROOT, module), "utf8");
      for (const url of runtimeAssetUrls(text)) {
        read.add(relative(ROOT, join(ROOT, dirname(module), url)) || ".");
      }
    }
    // "." is the repository root, which the local stack (dist/worker/index.mjs, included; its
    // build script runs only when the bundle is missing) and `vid lambda deploy` (pulumi/,
    // which needs a checkout: scripts/compile.ts says why) resolve their files from.
    const notFiles = new Set(["."]);
    const uncovered = [...read].filter((path) =>
      !notFiles.has(path) && !RUNTIME_INCLUDES.includes(path) && !modules.includes(path)
    );
    assert.deepEqual(
      uncovered,
      [],
      "read at run time but not embedded: add them to RUNTIME_INCLUDES in scripts/compile.ts",
    );
    assert.ok(read.has("api/openapi.yaml"), [...read].join(", "));
  });

  it("vid server serves the included OpenAPI document; the worker bundle loads in Node 22", async () => {
    const layout = join(scratch, "with-includes");
    await compiledLayout(layout, [...modules, ...RUNTIME_INCLUDES]);
    const dataDir = join(scratch, "data");
    await mkdir(dataDir);
    const server = await startServer(layout, dataDir);
    try {
      assert.ok(server.url, `vid server did not start from the layout:\n${server.output}`);
      const response = await fetch(`${server.url}/v3/openapi.json`);
      assert.equal(response.status, 200);
      const served = await response.json();
      const source = parseYaml(await readFile(join(ROOT, "api", "openapi.yaml"), "utf8"));
      assert.deepEqual(served, source);
    } finally {
      await server.stop();
    }

    await Deno.writeTextFile(
      join(layout, "probe.ts"),
      'import { workerBundle } from "./src/lambda/local/local_stack.ts";\n' +
        "console.log(await workerBundle());\n",
    );
    const probe = await run(Deno.execPath(), ["run", "-A", join(layout, "probe.ts")], {
      cwd: scratch,
    });
    assert.equal(probe.code, 0, probe.stderr);
    const bundle = probe.stdout.trim();
    assert.equal(bundle, join(layout, "dist", "worker", "index.mjs"));
    const node = await run(await node22(), [
      "--input-type=module",
      "-e",
      "const m = await import(process.argv[1]); console.log(typeof m.handler);",
      bundle,
    ], { cwd: scratch });
    assert.equal(node.code, 0, node.stderr);
    assert.equal(node.stdout.trim(), "function");
  });

  it("the same layout without the included files fails to find them", async () => {
    const layout = join(scratch, "without-includes");
    await compiledLayout(layout, modules);
    const dataDir = join(scratch, "data-without");
    await mkdir(dataDir);
    const server = await startServer(layout, dataDir);
    try {
      assert.equal(server.url, undefined, "vid server started without its OpenAPI document");
      assert.match(server.output, /openapi\.yaml/);
    } finally {
      await server.stop();
    }
    await Deno.writeTextFile(
      join(layout, "probe.ts"),
      'import { workerBundle } from "./src/lambda/local/local_stack.ts";\n' +
        "console.log(await workerBundle());\n",
    );
    const probe = await run(Deno.execPath(), ["run", "-A", join(layout, "probe.ts")], {
      cwd: scratch,
    });
    assert.notEqual(probe.code, 0, "the worker bundle was found without being included");
    assert.match(probe.stderr, /building the worker bundle failed/);
  });
});
