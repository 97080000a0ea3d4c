/**
 * Builds the npm package of the SDK into `npm/`: the `mod.ts` surface as ES modules for
 * Node 20+ with `.d.ts` declarations, a package.json whose dependencies are the exact
 * versions of deno.json's `imports`, a README and the licence.
 *
 * ```sh
 * deno task build:npm                  # -> npm/
 * deno run -A scripts/build_npm.ts --outdir /tmp/vid-npm
 * cd npm && npm pack                   # -> vid-sdk-<version>.tgz
 * ```
 *
 * Choices:
 *
 * - The package has the subpath entries that run under Node ({@linkcode NPM_ENTRIES}:
 *   `vid-sdk/render`, `vid-sdk/lambda`, `vid-sdk/cloud`) and a root `vid-sdk` that exports
 *   them all: mod.ts without its Deno-only entries (`server.ts`: `Deno.serve`), see
 *   {@linkcode npmIndex}.
 * - `tsc` (TypeScript's own compiler) with `rewriteRelativeImportExtensions`, over a
 *   staging copy of those entries and exactly the `src/` files they reach (`deno info --json`),
 *   so the source keeps Deno's `./x.ts` imports and the output has `./x.js`. `@deno/dnt`
 *   is not on npm.
 * - TypeScript and `@types/node` are build tools, not dependencies of the project: they are
 *   installed once with npm into `~/.cache/vid/npm-build-<versions>` (pinned below), like
 *   the local stack's Node 22, and never enter deno.json (an `@types/node` there would
 *   change how Deno type-checks everyone's code).
 * - Bare imports (`@aws-sdk/client-s3`, `fflate`, ...) stay bare; the staging copy resolves
 *   them from the repository's `node_modules` (filled by `deno install` from deno.json), and
 *   each one the SDK reaches becomes a dependency pinned to the version deno.json maps it
 *   to, so npm users run the versions our tests ran.
 * - The SDK must not touch `Deno.*` (DESIGN: code that runs under Node uses web standards
 *   and `node:` built-ins). The build fails, naming file and line, when a reached module
 *   does.
 * - JSON modules (`with { type: "json" }`) are part of the compiled graph; files a module
 *   reads at run time through `new URL("<relative>", import.meta.url)` are copied beside the
 *   output at the same relative place, so they resolve in the npm layout as they do in the
 *   repository. The build fails when such a file is missing.
 * - Packages the SDK loads only at run time, by a computed name the module graph cannot see,
 *   are declared here ({@linkcode RUNTIME_DEPENDENCIES}): `ws`, the WebSocket of Node 20
 *   (src/render/cdp.ts), at deno.json's version.
 * - Package name `vid-sdk` (unscoped: publishing needs no npm organisation), ESM only
 *   (`"type": "module"`), `"engines": {"node": ">=20"}`.
 * - The package is staged and compiled in a temporary folder, copied beside `outdir` and
 *   renamed into place, so a failed build leaves the previous `npm/` (or nothing), never
 *   half a package.
 *
 * @module
 */

import { cp, mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from "node:fs/promises";
import { homedir, tmpdir } from "node:os";
import { basename, dirname, isAbsolute, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** Name of the npm package. */
export const NPM_PACKAGE_NAME = "vid-sdk";

/** Version of TypeScript that compiles the package (supports `rewriteRelativeImportExtensions`). */
export const TYPESCRIPT_VERSION = "6.0.3";

/** Version of `@types/node` the package is compiled against: the oldest Node it supports. */
export const TYPES_NODE_VERSION = "20.19.43";

/**
 * npm packages the SDK imports by a computed specifier (so `deno info` does not list
 * them), each mapped in deno.json: `ws` gives Node 20 the WebSocket Node 22 has built in.
 */
export const RUNTIME_DEPENDENCIES: readonly string[] = ["ws"];

/**
 * The subpath entries of deno.json that the npm package has, each `vid-sdk/<name>`: the ones
 * that run under Node. `server.ts` (`@vid/cli/server`) is Deno-only and left out.
 */
export const NPM_ENTRIES: readonly string[] = ["render.ts", "lambda.ts", "cloud.ts", "player.ts"];

/**
 * The npm package's root module: mod.ts without the `export * from` lines of entries that
 * are not in {@linkcode NPM_ENTRIES}. Throws when mod.ts re-exports anything else, so a new
 * entry is a decision, not an accident.
 *
 * @example
 * ```ts
 * npmIndex('export * from "./render.ts";\nexport * from "./server.ts";\n');
 * // 'export * from "./render.ts";\n'
 * ```
 */
export function npmIndex(modText: string): string {
  const lines = modText.split("\n").filter((line) => {
    const entry = /^export \* from "\.\/([^"/]+\.ts)";$/.exec(line)?.[1];
    return entry === undefined || NPM_ENTRIES.includes(entry);
  });
  for (const line of lines) {
    if (/^export .* from /.test(line) && !/^export \* from "\.\/[^"/]+\.ts";$/.test(line)) {
      throw new NpmBuildError("mod.ts", `exports other than whole entries: ${line}`);
    }
  }
  return lines.join("\n");
}

/** Oldest Node.js major the package supports. */
export const MIN_NODE_MAJOR = 20;

/** The build cannot go on; the message says what is wrong and how to fix it. */
export class NpmBuildError extends Error {
  /** Always `"NpmBuildError"`. */
  override name = "NpmBuildError";
  /** What is at fault: a file, an import, or the build step that failed. */
  readonly field: string;

  /**
   * Creates the error for one fault.
   *
   * @param field What is at fault.
   * @param message What is wrong and how to fix it.
   */
  constructor(field: string, message: string) {
    super(`${field}: ${message}`);
    this.field = field;
  }
}

/** The part of `deno info --json` the build reads. */
export interface ModuleGraph {
  /** Every module of the graph. */
  modules: GraphModule[];
}

/** One module of {@linkcode ModuleGraph}. */
export interface GraphModule {
  /** Resolved specifier: `file:///...`, `npm:...`, `node:...`. */
  specifier: string;
  /** `Json` for JSON modules, `TypeScript` etc. for code. */
  mediaType?: string;
  /** Imports of the module as written, with what each resolved to. */
  dependencies?: {
    specifier: string;
    code?: { specifier: string };
    type?: { specifier: string };
  }[];
}

/** A file of the package's source graph, relative to the repository root. */
export interface SourceFile {
  /** Posix path relative to the repository root, e.g. `src/lambda/sdk.ts`. */
  path: string;
  /** Whether it is a JSON module. */
  json: boolean;
}

/** Package name of a bare specifier: `@scope/name/sub` -> `@scope/name`, `name/sub` -> `name`. */
export function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0];
}

/**
 * Splits an `npm:` specifier into package name and exact version.
 *
 * @example
 * ```ts
 * parseNpmSpecifier("npm:@aws-sdk/client-s3@3.1169.0/dist"); // { name: "@aws-sdk/client-s3", version: "3.1169.0" }
 * ```
 */
export function parseNpmSpecifier(specifier: string): { name: string; version: string } {
  const body = specifier.replace(/^npm:\/?/, "");
  const match = /^(@[^/@]+\/[^/@]+|[^/@]+)@([^/]+)/.exec(body);
  if (!match) {
    throw new NpmBuildError(
      specifier,
      "an npm import must pin an exact version (npm:name@1.2.3) in deno.json",
    );
  }
  const [, name, version] = match;
  if (!/^\d+\.\d+\.\d+(-[\w.]+)?$/.test(version)) {
    throw new NpmBuildError(
      specifier,
      `the version "${version}" is a range; pin an exact version in deno.json so npm users ` +
        "get what the tests ran",
    );
  }
  return { name, version };
}

/** Local files of the graph (under `root`), sorted; fails on remote (`https:`, `jsr:`) modules. */
export function sourceFiles(graph: ModuleGraph, root: string): SourceFile[] {
  const files: SourceFile[] = [];
  for (const module of graph.modules) {
    const { specifier } = module;
    if (specifier.startsWith("npm:") || specifier.startsWith("node:")) continue;
    if (!specifier.startsWith("file:")) {
      throw new NpmBuildError(
        specifier,
        "the SDK reaches a module that is neither a local file nor an npm package; " +
          "npm users could not install it",
      );
    }
    const path = relative(root, fileURLToPath(specifier)).split("\\").join("/");
    if (path.startsWith("../")) {
      throw new NpmBuildError(path, "the SDK reaches a file outside the repository");
    }
    files.push({ path, json: module.mediaType === "Json" });
  }
  return files.sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * The npm packages the local modules of the graph import, each at the exact version its
 * `npm:` mapping names. Imports made by npm packages themselves are theirs to declare.
 *
 * @example
 * ```ts
 * npmDependencies({ modules: [{ specifier: "file:///r/mod.ts", dependencies: [
 *   { specifier: "fflate", code: { specifier: "npm:fflate@0.8.3" } },
 * ] }] }); // { fflate: "0.8.3" }
 * ```
 */
export function npmDependencies(graph: ModuleGraph): Record<string, string> {
  const found = new Map<string, string>();
  for (const module of graph.modules) {
    if (!module.specifier.startsWith("file:")) continue;
    for (const dependency of module.dependencies ?? []) {
      for (const resolved of [dependency.code?.specifier, dependency.type?.specifier]) {
        if (!resolved?.startsWith("npm:")) continue;
        const { name, version } = parseNpmSpecifier(resolved);
        const seen = found.get(name);
        if (seen !== undefined && seen !== version) {
          throw new NpmBuildError(
            name,
            `imported at two versions (${seen} and ${version}); map one version in deno.json`,
          );
        }
        found.set(name, version);
      }
    }
  }
  return Object.fromEntries([...found].sort(([a], [b]) => a.localeCompare(b)));
}

/** Removes comments and string/template contents, keeping line breaks (for line numbers). */
function codeOnly(text: string): string {
  return text.replace(
    /\/\*[\s\S]*?\*\/|\/\/[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`/g,
    (match) => match.replace(/[^\n]/g, " "),
  );
}

/**
 * Lines of `text` (1-based) that use the `Deno` namespace in code (comments and strings
 * aside): such code cannot run under Node.
 *
 * @example
 * ```ts
 * denoUsages("// Deno.env is not used\nconst x = Deno.env.get('A');"); // [{ line: 2, text: "Deno.env" }]
 * ```
 */
export function denoUsages(text: string): { line: number; text: string }[] {
  const usages: { line: number; text: string }[] = [];
  codeOnly(text).split("\n").forEach((line, index) => {
    const match = /(?<![\w$.])Deno\s*\.\s*[\w$]+/.exec(line);
    if (match) usages.push({ line: index + 1, text: match[0].replace(/\s/g, "") });
  });
  return usages;
}

/**
 * Relative paths a module reads at run time through `new URL("<path>", import.meta.url)`.
 *
 * @example
 * ```ts
 * runtimeAssetUrls('const u = new URL("../../api/openapi.yaml", import.meta.url);'); // ["../../api/openapi.yaml"]
 * ```
 */
export function runtimeAssetUrls(text: string): string[] {
  const found = new Set<string>();
  const pattern = /new\s+URL\(\s*(["'`])(\.{1,2}\/[^"'`]*)\1\s*,\s*import\.meta\.url\s*\)/g;
  for (const match of text.matchAll(pattern)) found.add(match[2]);
  return [...found];
}

/** What goes into the package's package.json besides the dependencies. */
export interface PackageMeta {
  /** Package version (deno.json `version`). */
  version: string;
  /** SPDX licence (deno.json `license`). */
  license: string;
}

/** The package.json of the npm package. */
export function packageJson(
  meta: PackageMeta,
  dependencies: Record<string, string>,
): Record<string, unknown> {
  return {
    name: NPM_PACKAGE_NAME,
    version: meta.version,
    description:
      "vid SDK: render HTML compositions to video with headless Chromium and ffmpeg, locally " +
      "or distributed over AWS Lambda and Step Functions",
    license: meta.license,
    type: "module",
    engines: { node: `>=${MIN_NODE_MAJOR}` },
    main: "./esm/mod.js",
    types: "./esm/mod.d.ts",
    exports: {
      ".": { types: "./esm/mod.d.ts", import: "./esm/mod.js", default: "./esm/mod.js" },
      // The subpath entries of deno.json: local rendering without the AWS SDK, and Lambda.
      "./render": {
        types: "./esm/render.d.ts",
        import: "./esm/render.js",
        default: "./esm/render.js",
      },
      "./lambda": {
        types: "./esm/lambda.d.ts",
        import: "./esm/lambda.js",
        default: "./esm/lambda.js",
      },
      // The hosted service's client (no AWS SDK, no browser code).
      "./cloud": {
        types: "./esm/cloud.d.ts",
        import: "./esm/cloud.js",
        default: "./esm/cloud.js",
      },
      // <vid-player>: importing it in a browser defines the element.
      "./player": {
        types: "./esm/player.d.ts",
        import: "./esm/player.js",
        default: "./esm/player.js",
      },
      "./package.json": "./package.json",
    },
    files: ["esm/", "README.md", "LICENSE"],
    // Only the player's entry does something on import: it defines <vid-player>.
    sideEffects: ["./esm/player.js"],
    keywords: ["video", "render", "html", "chromium", "ffmpeg", "lambda", "step-functions"],
    dependencies,
  };
}

/** The compiler options: ESM for Node 20+, declarations, `.ts` imports rewritten to `.js`. */
export function tsconfig(outDir: string, typeRoots: string): Record<string, unknown> {
  return {
    compilerOptions: {
      target: "ES2022",
      lib: ["ES2023", "DOM", "DOM.Iterable"],
      module: "NodeNext",
      moduleResolution: "NodeNext",
      rewriteRelativeImportExtensions: true,
      resolveJsonModule: true,
      declaration: true,
      strict: true,
      skipLibCheck: true,
      types: ["node"],
      typeRoots: [typeRoots],
      rootDir: ".",
      outDir,
      newLine: "lf",
      noEmitOnError: true,
    },
    files: ["mod.ts", ...NPM_ENTRIES],
  };
}

/**
 * Rewrites one emitted file: relative `.ts` specifiers in declarations become `.js` (tsc
 * rewrites them in JavaScript only, and a `.d.ts` naming `./x.ts` confuses older
 * TypeScript), and examples import the npm package by its npm name.
 *
 * @example
 * ```ts
 * rewriteEmittedText('export { a } from "./src/a.ts";', true); // 'export { a } from "./src/a.js";'
 * ```
 */
export function rewriteEmittedText(text: string, declaration: boolean): string {
  let out = text.replaceAll('from "@vid/cli"', `from "${NPM_PACKAGE_NAME}"`);
  if (declaration) {
    out = out.replace(
      /((?:from|import)\s*\(?\s*["'])(\.{1,2}\/[^"']*?)\.ts(["'])/g,
      (_match, head: string, path: string, quote: string) => `${head}${path}.js${quote}`,
    );
  }
  return out;
}

async function rewriteEmitted(dir: string): Promise<void> {
  for await (const entry of Deno.readDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory) {
      await rewriteEmitted(path);
    } else if (entry.name.endsWith(".js") || entry.name.endsWith(".d.ts")) {
      const text = await readFile(path, "utf8");
      const out = rewriteEmittedText(text, entry.name.endsWith(".d.ts"));
      if (out !== text) await writeFile(path, out);
    }
  }
}

/** Output of a finished child process. */
interface CommandResult {
  success: boolean;
  stdout: string;
  stderr: string;
}

async function run(command: string, args: string[], cwd: string): Promise<CommandResult> {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    success: out.success,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Folder holding `node_modules/typescript` and `node_modules/@types/node` at the pinned
 * versions, installed with npm on first use.
 */
export async function buildTools(): Promise<string> {
  const prefix = join(
    homedir(),
    ".cache",
    "vid",
    `npm-build-ts${TYPESCRIPT_VERSION}-node${TYPES_NODE_VERSION}`,
  );
  const tsc = join(prefix, "node_modules", "typescript", "bin", "tsc");
  if (await exists(tsc) && await exists(join(prefix, "node_modules", "@types", "node"))) {
    return prefix;
  }
  await mkdir(prefix, { recursive: true });
  const out = await run("npm", [
    "install",
    "--no-save",
    "--no-audit",
    "--no-fund",
    "--prefix",
    prefix,
    `typescript@${TYPESCRIPT_VERSION}`,
    `@types/node@${TYPES_NODE_VERSION}`,
  ], prefix);
  if (!out.success) {
    throw new NpmBuildError(
      "build tools",
      `npm install typescript@${TYPESCRIPT_VERSION} @types/node@${TYPES_NODE_VERSION} ` +
        `failed (the npm registry must be reachable):\n${out.stderr.slice(-2000)}`,
    );
  }
  return prefix;
}

/** Text of the package's README. */
export function npmReadme(version: string, dependencies: Record<string, string>): string {
  return `# ${NPM_PACKAGE_NAME}

The SDK of vid for Node.js ${MIN_NODE_MAJOR}+: turn HTML
compositions into videos with headless Chromium and ffmpeg, locally or distributed over AWS
Lambda + Step Functions. ESM only, with TypeScript declarations. Version ${version}.

\`\`\`sh
npm install ${NPM_PACKAGE_NAME}
\`\`\`

\`${NPM_PACKAGE_NAME}\` exports everything; each part also has its own entry, which loads only
what it needs: \`${NPM_PACKAGE_NAME}/render\` (this machine, no AWS SDK),
\`${NPM_PACKAGE_NAME}/lambda\` (AWS Lambda + Step Functions), \`${NPM_PACKAGE_NAME}/cloud\`
(the client of a hosted render service: \`cloudRender\`, credentials, \`verifyWebhook\`) and
\`${NPM_PACKAGE_NAME}/player\` (the \`<vid-player>\` element, for a browser bundle).

## Distributed rendering (AWS Lambda, or the local stack)

\`\`\`js
import { deploySite, getRenderProgress, renderToLambda } from "${NPM_PACKAGE_NAME}";

const bucketName = "vid-renders-123"; // the stack output RenderBucketName
const siteHandle = await deploySite({ projectDir: "my-video", bucketName });
const render = await renderToLambda({
  siteHandle,
  bucketName,
  stateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:vid-render",
  config: { fps: 30, format: "mp4", variables: { title: "Launch day" } },
});
let progress;
do {
  await new Promise((r) => setTimeout(r, 1000));
  progress = await getRenderProgress({ executionArn: render.executionArn });
} while (progress.status === "running");
console.log(progress.status, progress.outputLocation);
\`\`\`

Credentials and region come from the AWS SDK's default chain (\`AWS_REGION\`,
\`AWS_ACCESS_KEY_ID\`, ...). \`s3\` and \`sfn\` options take an endpoint (for an
S3-compatible service or the local stack of \`vid lambda local\`) or a ready client. A ready
client must come from the same \`@aws-sdk/client-s3\` / \`@aws-sdk/client-sfn\` version this
package depends on (${dependencies["@aws-sdk/client-s3"] ?? "see package.json"} /
${dependencies["@aws-sdk/client-sfn"] ?? "see package.json"}); otherwise pass options.

## Local rendering

\`renderComposition\` and \`renderStill\` run Chromium and ffmpeg on this machine: they need
\`chromium-headless-shell\` (or Chromium) and \`ffmpeg\` installed (on Debian:
\`apt-get install chromium-headless-shell chromium ffmpeg\`).

## Checking a render before sending it

\`validateConfig(input)\` checks a distributed render's execution input offline and throws a
\`ConfigError\` whose message starts with \`[validateConfig] <field>:\` and names the fix.

The \`vid\` command itself (CLI, server, local stack) is Deno-first and not part of this
package: see the project's README.
`;
}

/** Options of {@linkcode buildNpm}. */
export interface BuildNpmOptions {
  /** Output folder, replaced whole. @default `<repo>/npm` */
  outdir?: string;
  /** Receives progress lines. @default dropped */
  onLog?(line: string): void;
}

/** What {@linkcode buildNpm} produced. */
export interface BuildNpmResult {
  /** The package folder (`npm pack` it). */
  outdir: string;
  /** The package.json written. */
  packageJson: Record<string, unknown>;
  /** Source files compiled, relative to the repository root. */
  sources: string[];
  /** Runtime files copied beside the output, relative to the repository root. */
  assets: string[];
}

/**
 * Builds the npm package of `mod.ts` into `outdir`.
 *
 * @example
 * ```ts
 * const { outdir } = await buildNpm({ outdir: "/tmp/vid-npm" });
 * ```
 */
export async function buildNpm(options: BuildNpmOptions = {}): Promise<BuildNpmResult> {
  const log = options.onLog ?? (() => {});
  const outdir = resolve(options.outdir ?? join(ROOT, "npm"));
  const config = JSON.parse(await readFile(join(ROOT, "deno.json"), "utf8")) as {
    version?: string;
    license?: string;
    imports?: Record<string, string>;
  };
  if (!config.version) throw new NpmBuildError("deno.json", "has no version");

  const install = await run(Deno.execPath(), ["install"], ROOT);
  if (!install.success) {
    throw new NpmBuildError("deno install", install.stderr.slice(-2000));
  }
  // One graph for the entries together: each module once.
  const graph: ModuleGraph = { modules: [] };
  const seen = new Set<string>();
  for (const entry of NPM_ENTRIES) {
    const info = await run(Deno.execPath(), ["info", "--json", entry], ROOT);
    if (!info.success) throw new NpmBuildError(`deno info ${entry}`, info.stderr.slice(-2000));
    for (const module of (JSON.parse(info.stdout) as ModuleGraph).modules) {
      if (seen.has(module.specifier)) continue;
      seen.add(module.specifier);
      graph.modules.push(module);
    }
  }
  const sources = sourceFiles(graph, ROOT);
  const dependencies = npmDependencies(graph);
  for (const name of RUNTIME_DEPENDENCIES) {
    const mapped = config.imports?.[name];
    if (!mapped?.startsWith("npm:")) {
      throw new NpmBuildError(
        name,
        `not mapped in deno.json imports; add "${name}": "npm:${name}@<version>"`,
      );
    }
    dependencies[name] = parseNpmSpecifier(mapped).version;
  }
  log(`${sources.length} modules, ${Object.keys(dependencies).length} npm dependencies`);

  const work = await mkdtemp(join(tmpdir(), "vid-npm-build-"));
  let landing: string | undefined;
  try {
    const staging = join(work, "staging");
    const pkg = join(work, "package");
    const assets: string[] = [];
    const problems: string[] = [];
    for (const source of sources) {
      const text = await readFile(join(ROOT, source.path), "utf8");
      if (!source.json) {
        for (const usage of denoUsages(text)) {
          problems.push(`${source.path}:${usage.line} uses ${usage.text}`);
        }
        for (const url of runtimeAssetUrls(text)) {
          assets.push(join(dirname(source.path), url).split("\\").join("/"));
        }
      }
      await mkdir(dirname(join(staging, source.path)), { recursive: true });
      await writeFile(join(staging, source.path), text);
    }
    if (problems.length > 0) {
      throw new NpmBuildError(
        "Deno namespace",
        "the npm SDK runs under Node, where Deno.* does not exist; use web standards or " +
          `node: built-ins instead:\n  ${problems.join("\n  ")}`,
      );
    }
    await writeFile(
      join(staging, "mod.ts"),
      npmIndex(await readFile(join(ROOT, "mod.ts"), "utf8")),
    );
    await writeFile(join(staging, "package.json"), JSON.stringify({ type: "module" }));
    await symlink(join(ROOT, "node_modules"), join(staging, "node_modules"), "dir");

    const tools = await buildTools();
    const esm = join(pkg, "esm");
    await writeFile(
      join(staging, "tsconfig.json"),
      JSON.stringify(tsconfig(esm, join(tools, "node_modules", "@types")), null, 2),
    );
    log(`tsc ${TYPESCRIPT_VERSION} (types of Node ${TYPES_NODE_VERSION})`);
    const tsc = await run(
      "node",
      [join(tools, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.json"],
      staging,
    );
    if (!tsc.success) {
      throw new NpmBuildError("tsc", `the SDK does not compile for Node:\n${tsc.stdout}`);
    }

    await rewriteEmitted(esm);

    for (const asset of [...new Set(assets)]) {
      if (!await exists(join(ROOT, asset))) {
        throw new NpmBuildError(asset, "read at run time by the SDK but missing; build it first");
      }
      await mkdir(dirname(join(esm, asset)), { recursive: true });
      await cp(join(ROOT, asset), join(esm, asset), { recursive: true });
    }

    const manifest = packageJson(
      { version: config.version, license: config.license ?? "MIT" },
      dependencies,
    );
    await writeFile(join(pkg, "package.json"), JSON.stringify(manifest, null, 2) + "\n");
    await writeFile(join(pkg, "README.md"), npmReadme(config.version, dependencies));
    await cp(join(ROOT, "LICENSE"), join(pkg, "LICENSE"));

    // Copied beside outdir first, so the final step is a rename on one file system.
    await mkdir(dirname(outdir), { recursive: true });
    landing = await mkdtemp(join(dirname(outdir), `.${basename(outdir)}.tmp-`));
    await cp(pkg, landing, { recursive: true });
    await rm(outdir, { recursive: true, force: true });
    await rename(landing, outdir);
    landing = undefined;
    return {
      outdir,
      packageJson: manifest,
      sources: sources.map((s) => s.path),
      assets: [...new Set(assets)],
    };
  } finally {
    await rm(work, { recursive: true, force: true });
    if (landing) await rm(landing, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const at = Deno.args.indexOf("--outdir");
  const given = at >= 0 ? Deno.args[at + 1] : undefined;
  try {
    const result = await buildNpm({
      outdir: given === undefined ? undefined : isAbsolute(given) ? given : resolve(given),
      onLog: (line) => console.error(line),
    });
    const deps = Object.entries(result.packageJson.dependencies as Record<string, string>)
      .map(([name, version]) => `${name}@${version}`).join(", ");
    console.log(
      `built ${NPM_PACKAGE_NAME}@${result.packageJson.version} in ${result.outdir} ` +
        `(${result.sources.length} modules; dependencies: ${deps})`,
    );
  } catch (error) {
    if (error instanceof NpmBuildError) {
      console.error(`build:npm failed: ${error.message}`);
      Deno.exit(1);
    }
    throw error;
  }
}
