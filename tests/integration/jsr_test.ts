/**
 * JSR readiness: deno.json carries what `deno publish` needs (a scoped name, a version,
 * exports, a publish include list that covers them and leaves tests and build output out),
 * `deno doc --lint mod.ts` finds every export documented with explicit types, and
 * `deno publish --dry-run` (which runs offline) accepts the package and lists exactly the
 * files meant to be published.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT } from "../helpers.ts";

interface Output {
  code: number;
  stdout: string;
  stderr: string;
}

async function deno(args: string[]): Promise<Output> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

interface DenoJson {
  name?: string;
  version?: string;
  license?: string;
  exports?: Record<string, string>;
  publish?: { include?: string[]; exclude?: string[] };
}

describe("JSR readiness", () => {
  it("deno.json has a scoped name, a version, exports and a publish include list", async () => {
    const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))) as DenoJson;
    assert.match(config.name ?? "", /^@[a-z0-9-]+\/[a-z0-9-]+$/);
    assert.match(config.version ?? "", /^\d+\.\d+\.\d+(-[\w.]+)?$/);
    assert.equal(config.license, "MIT");
    assert.equal(config.exports?.["."], "./mod.ts");
    const include = config.publish?.include ?? [];
    for (const needed of ["mod.ts", "src/", "README.md", "LICENSE", "deno.json"]) {
      assert.ok(include.includes(needed), `publish.include lacks ${needed}: ${include}`);
    }
    for (const target of Object.values(config.exports ?? {})) {
      const path = target.replace(/^\.\//, "");
      assert.ok(
        include.some((entry) => entry === path || (entry.endsWith("/") && path.startsWith(entry))),
        `export ${target} is not published`,
      );
    }
    for (const kept of ["tests/", "npm/", "dist/", "renders/"]) {
      assert.ok(!include.some((entry) => entry.startsWith(kept)), `${kept} must not be published`);
    }
  });

  it("deno doc --lint of every entry: every export documented, no private type in a public one", async () => {
    const out = await deno([
      "doc",
      "--lint",
      "mod.ts",
      "render.ts",
      "lambda.ts",
      "cloud.ts",
      "server.ts",
      "player.ts",
    ]);
    assert.equal(out.code, 0, out.stderr);
    assert.doesNotMatch(out.stderr, /error\[/);
  });

  it("deno publish --dry-run accepts the package and lists only the published files", async () => {
    const out = await deno(["publish", "--dry-run", "--allow-dirty"]);
    assert.equal(out.code, 0, out.stdout + out.stderr);
    const text = out.stdout + out.stderr;
    assert.match(text, /Simulating publish of @vid\/cli@\d+\.\d+\.\d+ with files:/);
    assert.match(text, /Success Dry run complete/);
    const files = [...text.matchAll(/file:\/\/(\S+)/g)].map((m) => m[1].slice(ROOT.length));
    for (const expected of ["mod.ts", "cli.ts", "deno.json", "LICENSE", "README.md"]) {
      assert.ok(files.includes(expected), `${expected} not published: ${files.join(", ")}`);
    }
    assert.ok(files.includes("src/lambda/sdk.ts"));
    const stray = files.filter((f) =>
      ![
        "mod.ts",
        "render.ts",
        "lambda.ts",
        "cloud.ts",
        "server.ts",
        "player.ts",
        "cli.ts",
        "deno.json",
        "LICENSE",
        "README.md",
      ].includes(f) &&
      !f.startsWith("src/")
    );
    assert.deepEqual(stray, [], "only the SDK, the CLI and their sources are published");
  });
});
