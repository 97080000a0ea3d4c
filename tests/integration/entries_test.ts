/**
 * The package's entry points: `@vid/cli/render` (render on this machine) reaches no cloud
 * SDK in its module graph, so a local render loads no AWS code; `@vid/cli/lambda` is the
 * distributed SDK; `@vid/cli` (mod.ts) exports everything both export. Module graphs come
 * from `deno info --json`, the same resolution `deno run` uses.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as everything from "../../mod.ts";
import * as lambda from "../../lambda.ts";
import * as render from "../../render.ts";
import { ROOT } from "../helpers.ts";

/** The npm packages (name@version) whose modules `entry` loads. */
async function npmModulesOf(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const graph = JSON.parse(new TextDecoder().decode(out.stdout)) as {
    modules: { specifier: string }[];
  };
  return graph.modules.map((m) => m.specifier).filter((s) => s.startsWith("npm:"))
    .map((s) => s.replace(/^npm:\/?/, ""));
}

describe("entry points", () => {
  it("deno.json exports ., ./render, ./lambda and ./cli", async () => {
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
    assert.deepEqual(config.exports, {
      ".": "./mod.ts",
      "./render": "./render.ts",
      "./lambda": "./lambda.ts",
      "./cli": "./cli.ts",
    });
  });

  it("@vid/cli/render reaches no AWS SDK; @vid/cli/lambda does", async () => {
    const renderModules = await npmModulesOf("render.ts");
    assert.deepEqual(renderModules.filter((m) => m.startsWith("@aws-sdk/")), []);
    assert.ok(renderModules.some((m) => m.startsWith("parse5@")), renderModules.join(", "));
    const lambdaModules = await npmModulesOf("lambda.ts");
    assert.ok(lambdaModules.some((m) => m.startsWith("@aws-sdk/client-sfn@")));
  });

  it("mod.ts exports exactly what render.ts and lambda.ts export together", () => {
    const union = new Set([...Object.keys(render), ...Object.keys(lambda)]);
    assert.deepEqual(Object.keys(everything).toSorted(), [...union].toSorted());
    assert.equal(everything.renderComposition, render.renderComposition);
    assert.equal(everything.renderToLambda, lambda.renderToLambda);
    assert.equal(render.batchRenderId, lambda.batchRenderId, "one batch id for both batches");
  });
});
