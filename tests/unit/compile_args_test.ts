/**
 * `deno task compile` without compiling: the arguments each target passes to deno compile,
 * and how a denort failure is recognised and explained. Compiling, and a machine without
 * denort, are in tests/integration/compile_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  compileArgs,
  CompileArgumentError,
  compileFailureCause,
  DEFAULT_OUTDIR,
  denortMessage,
  isDenortFailure,
  outputPath,
  parseCompileArgs,
  type TargetName,
  TARGETS,
} from "../../scripts/compile.ts";
import { COMMAND_MODULES } from "../../src/cli/main.ts";

describe("deno compile arguments", () => {
  it("each of the five targets compiles cli.ts with -A, the runtime files and its own output", () => {
    const expected: Record<TargetName, [string, string]> = {
      "linux-x64": ["x86_64-unknown-linux-gnu", "dist/bin/vid-linux-x64"],
      "linux-arm64": ["aarch64-unknown-linux-gnu", "dist/bin/vid-linux-arm64"],
      "darwin-x64": ["x86_64-apple-darwin", "dist/bin/vid-darwin-x64"],
      "darwin-arm64": ["aarch64-apple-darwin", "dist/bin/vid-darwin-arm64"],
      "windows-x64": ["x86_64-pc-windows-msvc", "dist/bin/vid-windows-x64.exe"],
    };
    assert.deepEqual(Object.keys(TARGETS).sort(), Object.keys(expected).sort());
    for (const [target, [triple, output]] of Object.entries(expected)) {
      assert.deepEqual(compileArgs(target as TargetName), [
        "compile",
        "-A",
        "--self-extracting",
        "--no-check",
        "--exclude-unused-npm",
        "--include",
        "api/openapi.yaml",
        "--include",
        "dist/worker/index.mjs",
        ...COMMAND_MODULES.flatMap((command) => ["--include", command.file]),
        "--target",
        triple,
        "--output",
        output,
        "cli.ts",
      ]);
    }
    assert.equal(outputPath("darwin-arm64", "/tmp/bins"), "/tmp/bins/vid-darwin-arm64");
    assert.equal(DEFAULT_OUTDIR, "dist/bin");
  });

  it("--target takes names or Rust triples; all five by default; bad values are named", () => {
    assert.deepEqual(parseCompileArgs([]).targets, Object.keys(TARGETS));
    assert.deepEqual(
      parseCompileArgs(["--target", "linux-arm64", "--target=x86_64-apple-darwin"]),
      { targets: ["linux-arm64", "darwin-x64"], outdir: "dist/bin" },
    );
    assert.deepEqual(
      parseCompileArgs(["--target", "linux-x64", "--target", "linux-x64", "--outdir", "out"]),
      { targets: ["linux-x64"], outdir: "out" },
    );
    assert.throws(
      () => parseCompileArgs(["--target", "freebsd-x64"]),
      (error: unknown) =>
        error instanceof CompileArgumentError && error.field === "--target" &&
        /unknown target "freebsd-x64"; use one of linux-x64, linux-arm64, darwin-x64, darwin-arm64, windows-x64/
          .test(error.message),
    );
    assert.throws(() => parseCompileArgs(["--target"]), /--target: needs a value/);
    assert.throws(() => parseCompileArgs(["--verbose"]), /--verbose: unknown argument/);
    assert.throws(
      () => parseCompileArgs([], "/opt/denort"),
      /DENORT_BIN names one denort binary, which serves one target: name exactly one --target/,
    );
    assert.deepEqual(parseCompileArgs(["--target", "linux-x64"], "/opt/denort").targets, [
      "linux-x64",
    ]);
  });

  it("recognises deno compile's denort failures and names the way out", () => {
    const download = "error: Writing deno compile executable to temporary file 'x.tmp'\n\n" +
      "Caused by:\n    0: Setting up base binary.\n    1: error sending request for url " +
      "(https://dl.deno.land/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip): client error " +
      "(Connect)\n    2: dns error\n\nStack backtrace:\n   0: <unknown>\n";
    assert.ok(isDenortFailure(download));
    assert.match(compileFailureCause(download), /^error sending request for url \(https:\/\/dl/);
    assert.ok(!isDenortFailure('error: Module not found "file:///x/cli.ts".'));
    const message = denortMessage("windows-x64", "2.9.6", "dns error");
    assert.match(message, /cannot build the windows-x64 binary/);
    assert.match(message, /denort-x86_64-pc-windows-msvc\.zip of Deno 2\.9\.6/);
    assert.match(message, /network access to dl\.deno\.land/);
    assert.match(message, /DENORT_BIN=\/path\/to\/denort deno task compile --target windows-x64/);
    assert.match(message, /`deno task vid <command>`/);
  });
});
