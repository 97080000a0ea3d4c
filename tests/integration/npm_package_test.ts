/**
 * The npm package of the SDK, used the way a Node user would: `scripts/build_npm.ts`
 * builds it, `npm pack` packs it, a fresh Node project (`npm init -y`) installs the
 * tarball from disk (its dependencies from the npm registry), and then:
 *
 * - plain Node 20 (the machine's `node`) imports `deploySite`, `renderToLambda`,
 *   `getRenderProgress` and `validateConfig` from the package, gets the
 *   `[validateConfig] config:` error for a too-large input, deploys a fixture site to the
 *   local stack, starts a render and polls it until it succeeds; the output video in the
 *   bucket has the composition's frames and colours;
 * - Node 22 (the Lambda runtime, from the local stack's cache) imports the package too;
 * - Node 20 and Node 22 each render the fixture locally with `renderComposition` (Chromium
 *   over CDP: Node 20 has no global WebSocket, so the package's `ws` dependency serves);
 *   the video has the composition's frame count and colours;
 * - `tsc --noEmit` type-checks a TypeScript consumer against the package's `.d.ts`, and
 *   rejects a second consumer that passes a string where a number belongs.
 *
 * Real parts throughout: npm, the registry, Node, s3rver, the local Step Functions
 * endpoint and the worker under Node 22 (Chromium + ffmpeg). build:npm's checks of the
 * module graph are in tests/unit/npm_build_checks_test.ts.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import {
  buildNpm,
  NPM_PACKAGE_NAME,
  TYPES_NODE_VERSION,
  TYPESCRIPT_VERSION,
} from "../../scripts/build_npm.ts";
import {
  type LocalStack,
  node22,
  S3_CREDENTIALS,
  startLocalStack,
} from "../../src/lambda/local/local_stack.ts";
import { compositionHtml, makeProject, near, pixelSeries, probeVideo, rgb } from "../helpers.ts";

/** A 2 s, 320x180 composition (20 frames at 10 fps) whose colour goes from red to blue. */
const HTML = compositionHtml(`<div id="fill"></div>`, {
  id: "npm-consumer",
  duration: 2,
  head: `<style>
#fill { position: absolute; inset: 0; background: #ff0000; animation: fade 2s linear forwards; }
@keyframes fade { to { background: #0000ff; } }
</style>`,
});

/** The consumer: plain Node, ESM, the package imported by name. */
const CONSUMER_SCRIPT = `
import { deploySite, getRenderProgress, renderToLambda, validateConfig } from "${NPM_PACKAGE_NAME}";

const env = process.env;
const out = {};
try {
  validateConfig({
    renderId: "r-too-large",
    bucketName: env.VID_LAMBDA_BUCKET,
    siteId: "site-0123456789abcdef",
    serveUrl: "https://example.invalid/sites/site-0123456789abcdef/",
    outputKey: "renders/r-too-large/out.mp4",
    config: { variables: { image: "data:image/png;base64," + "A".repeat(300 * 1024) } },
  });
  out.tooLarge = "no error";
} catch (error) {
  out.tooLarge = error.name + ": " + error.message;
}
// The hosted service's client entry: a webhook signed as the server signs it verifies.
const cloud = await import("${NPM_PACKAGE_NAME}/cloud");
const { createHmac } = await import("node:crypto");
const t = Math.floor(Date.now() / 1000);
const body = '{"render_id":"r_1"}';
const mac = createHmac("sha256", "whsec").update(t + "." + body).digest("hex");
out.cloudRender = typeof cloud.cloudRender;
out.webhookVerified = await cloud.verifyWebhook("whsec", "t=" + t + ",v1=" + mac, body);
out.forgedVerified = await cloud.verifyWebhook("whsec", "t=" + t + ",v1=" + "0".repeat(64), body);
// The player's entry imports under Node (no custom elements there: it defines nothing) and
// hands out the browser module's text for serving it.
const player = await import("${NPM_PACKAGE_NAME}/player");
out.player = [typeof player.definePlayer, typeof player.VidPlayer, player.PLAYER_BUNDLE.includes("vid-player")];
if (process.argv[2] === "validate-only") {
  console.log(JSON.stringify(out));
  process.exit(0);
}

const s3 = { endpoint: env.VID_S3_ENDPOINT, forcePathStyle: true };
const sfn = { endpoint: env.VID_SFN_ENDPOINT };
const bucketName = env.VID_LAMBDA_BUCKET;
const siteHandle = await deploySite({ projectDir: env.VID_TEST_PROJECT, bucketName, s3 });
out.siteId = siteHandle.siteId;
const render = await renderToLambda({
  siteHandle,
  bucketName,
  stateMachineArn: env.VID_LAMBDA_STATE_MACHINE_ARN,
  config: { fps: 10, format: "mp4", chunkSize: 10 },
  sfn,
  onWarning: (message) => console.error("warning: " + message),
});
out.renderId = render.renderId;
const deadline = Date.now() + 240_000;
let progress;
for (;;) {
  progress = await getRenderProgress({ executionArn: render.executionArn, sfn, s3 });
  if (progress.status !== "running" || Date.now() > deadline) break;
  await new Promise((resolve) => setTimeout(resolve, 500));
}
out.status = progress.status;
out.errors = progress.errors;
out.chunksDone = progress.chunksDone;
out.chunksTotal = progress.chunksTotal;
out.outputKey = progress.outputKey;
out.outputLocation = progress.outputLocation;
console.log(JSON.stringify(out));
`;

/** A local render from plain Node: Chromium over CDP (a WebSocket) and ffmpeg. */
const LOCAL_RENDER_SCRIPT = `
import { renderComposition } from "${NPM_PACKAGE_NAME}/render";
const result = await renderComposition({
  target: process.env.VID_TEST_PROJECT,
  output: process.argv[2],
  fps: 10,
});
console.log(JSON.stringify({ frames: result.frames, output: result.output }));
`;

/** Prints the names each of the package's entries exports at run time, as JSON. */
const EXPORTS_SCRIPT = `
const out = {};
for (const entry of ["", "/render", "/lambda", "/cloud"]) {
  out["${NPM_PACKAGE_NAME}" + entry] = Object.keys(await import("${NPM_PACKAGE_NAME}" + entry)).sort();
}
console.log(JSON.stringify(out));
`;

/** Type-checks: the SDK's calls with their real option and result types. */
const GOOD_CONSUMER = `
import {
  deploySite,
  getRenderProgress,
  type LambdaRenderProgress,
  type RenderConfig,
  renderToLambda,
  type SiteHandle,
  validateConfig,
} from "${NPM_PACKAGE_NAME}";

const config: RenderConfig = { fps: 30, format: "mp4", variables: { title: "Hi" } };
const siteHandle: SiteHandle = await deploySite({ projectDir: "site", bucketName: "b" });
const render = await renderToLambda({
  siteHandle,
  bucketName: "b",
  stateMachineArn: "arn:aws:states:us-east-1:000000000000:stateMachine:vid-render",
  config,
  sfn: { endpoint: "http://127.0.0.1:1" },
});
const progress: LambdaRenderProgress = await getRenderProgress({
  executionArn: render.executionArn,
});
const done: number = progress.chunksDone;
validateConfig({
  renderId: render.renderId,
  bucketName: "b",
  siteId: siteHandle.siteId,
  serveUrl: siteHandle.serveUrl,
  outputKey: render.outputKey,
  config,
});
export { done };
`;

/** Must not type-check: `chunkSize` is a number (`fps` also takes "30000/1001"). */
const BAD_CONSUMER = `
import { deploySite, renderToLambda } from "${NPM_PACKAGE_NAME}";

const siteHandle = await deploySite({ projectDir: "site", bucketName: "b" });
await renderToLambda({
  siteHandle,
  bucketName: "b",
  stateMachineArn: "arn:aws:states:us-east-1:000000000000:stateMachine:vid-render",
  config: { chunkSize: "ten" },
});
`;

interface Output {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(
  command: string,
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
): Promise<Output> {
  const out = await new Deno.Command(command, {
    args,
    cwd,
    env: { NO_COLOR: "1", npm_config_update_notifier: "false", ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: out.code,
    stdout: decoder.decode(out.stdout),
    stderr: decoder.decode(out.stderr),
  };
}

/** Runs a command that must succeed; returns its stdout. */
async function ok(command: string, args: string[], cwd: string): Promise<string> {
  const out = await run(command, args, cwd);
  assert.equal(out.code, 0, `${command} ${args.join(" ")}:\n${out.stdout}\n${out.stderr}`);
  return out.stdout;
}

/** The fixture's video: 20 frames of 320x180, red first, (nearly) blue last. */
async function assertRedToBlue(video: string): Promise<void> {
  const info = await probeVideo(video);
  assert.equal(info.frames, 20, video);
  assert.equal(info.width, 320);
  assert.equal(info.height, 180);
  const colours = await pixelSeries(video, 160, 90);
  assert.ok(
    near(colours[0], [255, 0, 0], 24),
    `${video}: first frame ${rgb(colours[0])}, want red`,
  );
  assert.ok(
    near(colours[19], [0, 0, 255], 32),
    `${video}: last frame ${rgb(colours[19])}, want (nearly) blue`,
  );
}

describe("the npm package in a fresh Node project", () => {
  let scratch: string;
  let consumer: string;
  let tarball: string;
  let stack: LocalStack | undefined;
  let project: string | undefined;

  before(async () => {
    scratch = await Deno.makeTempDir({ prefix: "vid-npm-test-" });
    const built = await buildNpm({ outdir: join(scratch, "package") });
    await ok("npm", ["pack", "--pack-destination", scratch], built.outdir);
    const packed = (await readdir(scratch)).filter((name) => name.endsWith(".tgz"));
    assert.equal(packed.length, 1, `one tarball expected, got ${packed.join(", ")}`);
    tarball = join(scratch, packed[0]);
    consumer = join(scratch, "consumer");
    await Deno.mkdir(consumer);
    await ok("npm", ["init", "-y"], consumer);
    // One install for the package and the type-check's tools: npm resolves and links once.
    await ok("npm", [
      "install",
      "--no-audit",
      "--no-fund",
      tarball,
      `typescript@${TYPESCRIPT_VERSION}`,
      `@types/node@${TYPES_NODE_VERSION}`,
    ], consumer);
    await Deno.writeTextFile(join(consumer, "render.mjs"), CONSUMER_SCRIPT);
    await Deno.writeTextFile(join(consumer, "local.mjs"), LOCAL_RENDER_SCRIPT);
    await Deno.writeTextFile(join(consumer, "exports.mjs"), EXPORTS_SCRIPT);
  });

  after(async () => {
    await stack?.close();
    if (project) await Deno.remove(project, { recursive: true });
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  it("the tarball holds ESM, declarations, README and licence; dependencies are exact", async () => {
    const listing = await ok("tar", ["-tzf", tarball], scratch);
    for (
      const file of [
        "package/package.json",
        "package/README.md",
        "package/LICENSE",
        "package/esm/mod.js",
        "package/esm/mod.d.ts",
        "package/esm/src/lambda/sdk.js",
        "package/esm/src/lambda/sdk.d.ts",
        "package/esm/cloud.js",
        "package/esm/cloud.d.ts",
      ]
    ) {
      assert.ok(listing.split("\n").includes(file), `${file} missing from:\n${listing}`);
    }
    const sources = listing.split("\n").filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"));
    assert.deepEqual(sources, [], "TypeScript sources are not shipped");
    const manifest = JSON.parse(
      await Deno.readTextFile(join(consumer, "node_modules", NPM_PACKAGE_NAME, "package.json")),
    );
    assert.equal(manifest.type, "module");
    assert.equal(manifest.engines.node, ">=20");
    assert.equal(manifest.exports["."].types, "./esm/mod.d.ts");
    assert.equal(manifest.exports["./render"].import, "./esm/render.js");
    assert.equal(manifest.exports["./lambda"].import, "./esm/lambda.js");
    assert.equal(manifest.exports["./cloud"].import, "./esm/cloud.js");
    assert.equal(manifest.exports["./player"].import, "./esm/player.js");
    assert.equal(manifest.exports["./server"], undefined, "the server is Deno-only");
    assert.ok(!listing.includes("package/esm/src/server/"), "no server module is shipped");
    const deno = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
    for (const [name, version] of Object.entries(manifest.dependencies as Record<string, string>)) {
      assert.match(version, /^\d+\.\d+\.\d+$/, `${name}@${version} is not exact`);
      assert.equal(`npm:${name}@${version}`, deno.imports[name], `${name} differs from deno.json`);
    }
    assert.ok("@aws-sdk/client-s3" in manifest.dependencies);
    assert.ok(!("s3rver" in manifest.dependencies), "the local stack is not part of the SDK");
  });

  it("each entry of the package exports what its Deno entry exports (the API snapshot), no more", async () => {
    const [render, lambda, cloud] = await Promise.all([
      import("../../render.ts"),
      import("../../lambda.ts"),
      import("../../cloud.ts"),
    ]);
    const names = (...entries: object[]) => [...new Set(entries.flatMap(Object.keys))].sort();
    assert.deepEqual(JSON.parse(await ok("node", ["exports.mjs"], consumer)), {
      [NPM_PACKAGE_NAME]: names(render, lambda, cloud),
      [`${NPM_PACKAGE_NAME}/render`]: names(render),
      [`${NPM_PACKAGE_NAME}/lambda`]: names(lambda),
      [`${NPM_PACKAGE_NAME}/cloud`]: names(cloud),
    });
  });

  it("Node 20 and Node 22 import the SDK; validateConfig rejects a too-large input", async () => {
    const version = (await ok("node", ["--version"], consumer)).trim();
    assert.match(version, /^v(2\d|[3-9]\d)\./, `Node 20+ expected, got ${version}`);
    const nodes = ["node", await node22()];
    const outs = await Promise.all(
      nodes.map((node) =>
        run(node, ["render.mjs", "validate-only"], consumer, { VID_LAMBDA_BUCKET: "vid-renders" })
      ),
    );
    for (const [i, node] of nodes.entries()) {
      const out = outs[i];
      assert.equal(out.code, 0, `${node}: ${out.stderr}`);
      const result = JSON.parse(out.stdout);
      assert.match(
        result.tooLarge,
        /^ExecutionInputTooLargeError: \[validateConfig\] config: the execution input is \d+ bytes, over the workflow limit of 262144 bytes/,
        node,
      );
      assert.match(result.tooLarge, /largest field is config\.variables\.image/);
      assert.deepEqual(
        [result.cloudRender, result.webhookVerified, result.forgedVerified],
        ["function", true, false],
        `${node}: vid-sdk/cloud`,
      );
      assert.deepEqual(result.player, ["function", "function", true], `${node}: vid-sdk/player`);
    }
  });

  it("plain Node 20 deploys a site and renders it through the local stack", async () => {
    [stack, project] = await Promise.all([startLocalStack(), makeProject(HTML)]);
    const out = await run("node", ["render.mjs"], consumer, {
      ...stack.env,
      VID_TEST_PROJECT: project,
    });
    assert.equal(out.code, 0, out.stdout + out.stderr);
    const result = JSON.parse(out.stdout.trim().split("\n").at(-1)!);
    assert.match(result.tooLarge, /\[validateConfig\] config:/);
    assert.match(result.siteId, /^site-[0-9a-f]{16}$/);
    assert.equal(result.status, "succeeded", JSON.stringify(result.errors));
    assert.equal(result.chunksTotal, 2);
    assert.equal(result.chunksDone, 2);
    assert.equal(result.outputLocation, `s3://${stack.RenderBucketName}/${result.outputKey}`);

    const client = new S3Client({
      region: stack.region,
      endpoint: stack.s3Endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    const video = join(scratch, "out.mp4");
    try {
      const object = await client.send(
        new GetObjectCommand({ Bucket: stack.RenderBucketName, Key: result.outputKey }),
      );
      await Deno.writeFile(video, await object.Body!.transformToByteArray());
    } finally {
      client.destroy();
    }
    await assertRedToBlue(video);
  });

  it("Node 20 and Node 22 render locally with renderComposition (Chromium over CDP)", async () => {
    const dir = project ??= await makeProject(HTML);
    // The two renders are independent (their own browser, their own file): at once.
    await Promise.all(["node", await node22()].map(async (node) => {
      const major = (await ok(node, ["--version"], consumer)).trim().split(".")[0];
      const video = join(scratch, `local-${major}.mp4`);
      const out = await run(node, ["local.mjs", video], consumer, { VID_TEST_PROJECT: dir });
      assert.equal(out.code, 0, `${node}: ${out.stdout}${out.stderr}`);
      assert.equal(JSON.parse(out.stdout.trim().split("\n").at(-1)!).frames, 20, node);
      await assertRedToBlue(video);
    }));
  });

  it("tsc type-checks a TypeScript consumer against the .d.ts and rejects a wrong call", async () => {
    const options = {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      strict: true,
      noEmit: true,
      types: ["node"],
    };
    await Deno.writeTextFile(join(consumer, "good.mts"), GOOD_CONSUMER);
    await Deno.writeTextFile(join(consumer, "bad.mts"), BAD_CONSUMER);
    // One program for both consumers (one tsc start, the .d.ts files read and checked once):
    // the good one passes when every error is the bad one's.
    await Deno.writeTextFile(
      join(consumer, "tsconfig.json"),
      JSON.stringify({ compilerOptions: options, files: ["good.mts", "bad.mts"] }),
    );
    const tsc = join(consumer, "node_modules", ".bin", "tsc");
    const checked = await run(
      tsc,
      ["--noEmit", "--pretty", "false", "-p", "tsconfig.json"],
      consumer,
    );
    assert.notEqual(checked.code, 0, "a string chunkSize must not type-check");
    const errors = checked.stdout.split("\n").filter((line) => /(^|: )error TS\d+:/.test(line));
    assert.deepEqual(
      errors.filter((line) => !line.startsWith("bad.mts(")),
      [],
      "the good consumer and the package's .d.ts files type-check:\n" + checked.stdout +
        checked.stderr,
    );
    assert.match(
      checked.stdout,
      /bad\.mts\(9,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/,
    );
  });
});
