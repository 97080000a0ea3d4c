/**
 * build:npm's checks of the module graph, without building: each npm package the local
 * modules import is pinned at deno.json's exact version, Deno namespace use is found in
 * code (not comments or strings), and runtime files read through import.meta.url are found.
 * The package built and installed under Node is in tests/integration/npm_package_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  denoUsages,
  NPM_PACKAGE_NAME,
  NpmBuildError,
  npmDependencies,
  parseNpmSpecifier,
  rewriteEmittedText,
  runtimeAssetUrls,
} from "../../scripts/build_npm.ts";

describe("build:npm's checks of the source graph", () => {
  it("finds Deno namespace use in code, not in comments or strings", () => {
    const text = [
      "/** Deno.env is mentioned here only. */",
      "// Deno.exit(1) in a comment",
      'const hint = "run Deno.serve";',
      "const region = Deno.env.get('AWS_REGION');",
      "const other = myDeno.env;",
      "await Deno . readTextFile(path);",
    ].join("\n");
    assert.deepEqual(denoUsages(text), [
      { line: 4, text: "Deno.env" },
      { line: 6, text: "Deno.readTextFile" },
    ]);
  });

  it("pins each npm package the local modules import at deno.json's exact version", () => {
    const graph = {
      modules: [
        {
          specifier: "file:///r/mod.ts",
          dependencies: [
            { specifier: "fflate", code: { specifier: "npm:fflate@0.8.3" } },
            { specifier: "node:fs", code: { specifier: "node:fs" } },
            { specifier: "./a.ts", code: { specifier: "file:///r/a.ts" } },
          ],
        },
        {
          specifier: "file:///r/a.ts",
          dependencies: [{
            specifier: "@aws-sdk/client-s3",
            type: { specifier: "npm:/@aws-sdk/client-s3@3.1169.0/dist-types" },
          }],
        },
        {
          specifier: "npm:/some-dep@1.0.0/index.js",
          dependencies: [{ specifier: "x", code: { specifier: "npm:x@2.0.0" } }],
        },
      ],
    };
    assert.deepEqual(npmDependencies(graph), {
      "@aws-sdk/client-s3": "3.1169.0",
      fflate: "0.8.3",
    });
    assert.throws(
      () => parseNpmSpecifier("npm:fflate@^0.8.0"),
      (error: unknown) =>
        error instanceof NpmBuildError && /is a range; pin an exact version/.test(error.message),
    );
  });

  it("finds runtime files read through import.meta.url; rewrites declarations to .js", () => {
    assert.deepEqual(
      runtimeAssetUrls(
        'readFileSync(new URL("../../api/openapi.yaml", import.meta.url));\n' +
          "const root = new URL('../', import.meta.url);",
      ),
      ["../../api/openapi.yaml", "../"],
    );
    assert.equal(
      rewriteEmittedText(
        'export { a } from "./src/a.ts";\nimport type { B } from "../../b.ts";',
        true,
      ),
      'export { a } from "./src/a.js";\nimport type { B } from "../../b.js";',
    );
    assert.equal(
      rewriteEmittedText(' * import { deploySite } from "@vid/cli";', false),
      ` * import { deploySite } from "${NPM_PACKAGE_NAME}";`,
    );
  });
});
