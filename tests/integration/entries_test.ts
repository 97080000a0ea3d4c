/**
 * The package's entry points: `@vid/cli/render` (render on this machine) and
 * `@vid/cli/cloud` (a hosted service's client) reach no AWS SDK in their module graphs, so
 * they load no AWS code; `@vid/cli/lambda` is the distributed SDK; `@vid/cli/server` hosts
 * the service; `@vid/cli` (mod.ts) exports everything they export. Each entry exports the
 * names docs/sdk.md's table lists for it. Module graphs come from `deno info --json`, the
 * same resolution `deno run` uses.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as everything from "../../mod.ts";
import * as cloud from "../../cloud.ts";
import * as lambda from "../../lambda.ts";
import * as render from "../../render.ts";
import * as server from "../../server.ts";
import { ROOT } from "../helpers.ts";

/** The repository files (relative paths) that `entry` loads. */
async function localModulesOf(entry: string): Promise<string[]> {
  return (await moduleGraph(entry)).filter((s) => s.startsWith(`file://${ROOT}`))
    .map((s) => s.slice(`file://${ROOT}`.length));
}

/** The npm packages (name@version) whose modules `entry` loads. */
async function npmModulesOf(entry: string): Promise<string[]> {
  return (await moduleGraph(entry)).filter((s) => s.startsWith("npm:"))
    .map((s) => s.replace(/^npm:\/?/, ""));
}

/** The specifiers of every module `entry` loads. */
async function moduleGraph(entry: string): Promise<string[]> {
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
  return graph.modules.map((m) => m.specifier);
}

describe("entry points", () => {
  it("deno.json exports ., ./render, ./lambda, ./cloud, ./server, ./player and ./cli", async () => {
    const config = JSON.parse(await Deno.readTextFile(`${ROOT}deno.json`));
    assert.deepEqual(config.exports, {
      ".": "./mod.ts",
      "./render": "./render.ts",
      "./lambda": "./lambda.ts",
      "./cloud": "./cloud.ts",
      "./server": "./server.ts",
      "./player": "./player.ts",
      "./cli": "./cli.ts",
    });
  });

  it("@vid/cli/player reaches only browser code: parse5, no host-side vid", async () => {
    // The player reads a composition from any host with vid's own parser (parse5, pure
    // JavaScript, and its `entities`), checks its variables with vid's own checks and finds
    // the fonts HyperFrames embeds with the renderer's reading (embedded_fonts.ts).
    const npm = await npmModulesOf("player.ts");
    assert.deepEqual(npm.filter((m) => !/^(parse5|entities)@/.test(m)), [], npm.join(", "));
    const modules = await localModulesOf("player.ts");
    assert.ok(modules.includes("src/preview/studio/playback.ts"), modules.join(", "));
    assert.deepEqual(
      modules.filter((m) =>
        !/^(player\.ts|src\/errors\.ts|src\/(player|runtime|preview\/studio)\/)/.test(m) &&
        // The file-system-free part of the composition model, and the runtime's injection.
        !/^src\/(composition\/(color|declarations|embedded_fonts|errors|font_aliases|font_face|frame_rate|markup|names|values)\.ts|init\/font_catalog\.ts|preview\/inject\.ts)$/
          .test(m)
      ),
      [],
    );
  });

  it("the Lambda worker reaches nothing of the server or the CLI (no arrow between surfaces)", async () => {
    const modules = await localModulesOf("worker/handler.ts");
    assert.ok(modules.includes("src/webhooks/webhooks.ts"), modules.join(", "));
    assert.deepEqual(modules.filter((m) => /^src\/(server|cli)\//.test(m)), []);
  });

  it("@vid/cli/cloud reaches no AWS SDK and no browser driver", async () => {
    const cloudModules = await npmModulesOf("cloud.ts");
    assert.deepEqual(
      cloudModules.filter((m) => /^(@aws-sdk\/|puppeteer|ws@)/.test(m)),
      [],
      cloudModules.join(", "),
    );
    assert.ok(cloudModules.some((m) => m.startsWith("fflate@")), cloudModules.join(", "));
  });

  it("each entry exports the names docs/sdk.md lists for it", async () => {
    const entries: Record<string, Record<string, unknown>> = {
      "@vid/cli/render": render,
      "@vid/cli/lambda": lambda,
      "@vid/cli/cloud": cloud,
      "@vid/cli/server": server,
    };
    const guide = await Deno.readTextFile(`${ROOT}docs/sdk.md`);
    const listed = new Set<string>();
    for (const line of guide.split("\n")) {
      const cells = line.split("|").map((c) => c.trim());
      const entry = /^`(@vid\/cli\/\w+)`$/.exec(cells[1] ?? "")?.[1];
      if (!entry) continue;
      listed.add(entry);
      const names = [...(cells[4] ?? "").matchAll(/`(\w+)`/g)].map((m) => m[1]);
      assert.ok(names.length > 0, `docs/sdk.md lists no names for ${entry}`);
      const missing = names.filter((name) => !(name in entries[entry]));
      assert.deepEqual(missing, [], `${entry} does not export what docs/sdk.md says`);
    }
    assert.deepEqual([...listed].toSorted(), Object.keys(entries).toSorted());
  });

  it("@vid/cli/render reaches no AWS SDK; @vid/cli/lambda does", async () => {
    const renderModules = await npmModulesOf("render.ts");
    assert.deepEqual(renderModules.filter((m) => m.startsWith("@aws-sdk/")), []);
    assert.ok(renderModules.some((m) => m.startsWith("parse5@")), renderModules.join(", "));
    const lambdaModules = await npmModulesOf("lambda.ts");
    assert.ok(lambdaModules.some((m) => m.startsWith("@aws-sdk/client-sfn@")));
  });

  it("mod.ts exports exactly what the four entries export together", () => {
    const union = new Set([
      ...Object.keys(render),
      ...Object.keys(lambda),
      ...Object.keys(cloud),
      ...Object.keys(server),
    ]);
    assert.deepEqual(Object.keys(everything).toSorted(), [...union].toSorted());
    assert.equal(everything.renderComposition, render.renderComposition);
    assert.equal(everything.renderToLambda, lambda.renderToLambda);
    assert.equal(everything.cloudRender, cloud.cloudRender);
    assert.equal(everything.startServer, server.startServer);
    assert.equal(
      render.BatchInputError,
      lambda.BatchInputError,
      "one batch error for both batches",
    );
  });
});
