/**
 * The code vid runs inside pages is bundled at build time (`deno task build:page`,
 * scripts/build_page_code.ts) and checked in: each checked-in bundle must be exactly what
 * esbuild builds from today's sources, or a change to an in-page module would silently not
 * reach renders. And the bundling stays a build step: `vid render`'s and the SDK's module
 * graphs reach neither esbuild nor the in-page modules themselves, only their bundles.
 * (Integration tier: esbuild runs as a subprocess.)
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  buildPageBundle,
  bundleFile,
  bundleModule,
  PAGE_BUNDLES,
} from "../../scripts/build_page_code.ts";
import { ROOT } from "../helpers.ts";

/** One module `entry` loads and what it imports (`deno info --json`, as `deno run` resolves). */
interface GraphModule {
  specifier: string;
  dependencies?: { specifier: string }[];
}

async function moduleGraph(entry: string): Promise<GraphModule[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", entry],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  return (JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: GraphModule[] }).modules;
}

describe("page bundles", () => {
  for (const bundle of PAGE_BUNDLES) {
    it(`${bundle.output} is the bundle of ${bundle.entry} (else: deno task build:page)`, async () => {
      const built = await buildPageBundle(bundle);
      const checkedIn = await Deno.readTextFile(`${ROOT}${bundle.output}`);
      assert.ok(
        checkedIn === bundleModule(bundle, built),
        `${bundle.output} is stale: run deno task build:page and commit it`,
      );
      const module = await import(`${ROOT}${bundle.output}`) as Record<string, string>;
      assert.equal(module[bundle.constant], built, "the template literal reads back as the code");
      // An inline <script> ends at the first "</script" (and "<!--" can hide it): never in a
      // bundle that is inlined (the player's is served only as /player.js).
      if (bundle.inline !== false) assert.doesNotMatch(built, /<\/script|<!--/i);
      for (const file of bundle.files ?? []) {
        assert.ok(
          await Deno.readTextFile(`${ROOT}${file}`) === bundleFile(bundle, built),
          `${file} is stale: run deno task build:page and commit it`,
        );
      }
    });
  }

  it("vid and the SDK load the bundles, not the in-page modules; esbuild only for vid check", async () => {
    const inPage = PAGE_BUNDLES.map((b) => `file://${ROOT}${b.entry}`);
    for (const entry of ["cli.ts", "render.ts"]) {
      const graph = await moduleGraph(entry);
      const specifiers = graph.map((m) => m.specifier);
      assert.deepEqual(specifiers.filter((s) => inPage.includes(s)), [], entry);
      // vid reaches every bundle (vid preview the studio's); the SDK at least the runtime's.
      for (const bundle of entry === "cli.ts" ? PAGE_BUNDLES : PAGE_BUNDLES.slice(0, 1)) {
        assert.ok(
          specifiers.includes(`file://${ROOT}${bundle.output}`),
          `${entry} -> ${bundle.output}`,
        );
      }
      // vid check's syntax pass imports esbuild when it runs (and does without it where it
      // cannot start); nothing on a render's path does.
      const importers = graph.filter((m) =>
        m.specifier.startsWith("file://") &&
        (m.dependencies ?? []).some((d) => d.specifier === "esbuild")
      ).map((m) => m.specifier.slice(`file://${ROOT}`.length));
      assert.deepEqual(importers.filter((path) => path !== "src/check/syntax.ts"), [], entry);
    }
  });
});
