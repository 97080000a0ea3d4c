/**
 * A distributed render equals a local render of the same composition, frame for frame and
 * sample for sample, whatever the chunk plan: the GOP grid (chunk_plan.ts) and one encoder
 * run per grid cell (encode.ts) make every cell's bytes independent of the chunk it falls
 * in, and the joins carry exact timestamps.
 *
 * The distributed renders run the Lambda worker's code (worker/handler.ts: plan,
 * renderChunk per chunk, assemble) in a child process whose environment holds the S3
 * endpoint and keys, as a function's does (this process's environment is shared with the
 * test files running alongside), against a real S3 server (s3rver) holding the site, with
 * chunk plans of 1, 2, 3 and 5 chunks (all of them, and the target-frames plans, in one child
 * process); the local render is `renderComposition` (what `vid render` runs). Fixture: 320x180
 * at 5 fps for 4.6 s, 23 frames = four 5-frame grid cells (1 s) and a 3-frame one, a box
 * sliding and changing colour (so every frame differs) and a tone. Compared: `ffmpeg -f
 * framemd5` of the decoded frames, and of the video and audio packets as stored (`-c copy`:
 * bytes and timestamps in the stream's own time base, so a drift of a fraction of a frame at a
 * join shows). webm (VP9) and mov (ProRes) joins are checked with local renders of 1 and 5
 * chunks against the default plan, and a rational rate (29.97: cells of 30 frames, 1.001 s)
 * with 1 and 2 chunks. The local renders share one browser (as a local batch's renders do)
 * with one worker: neither changes a frame, and it spares a browser launch per render.
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
import type { Browser } from "../../src/render/browser.ts";
import { launchForCapture } from "../../src/render/capture_mode.ts";
import type { OutputFormat } from "../../src/render/encode.ts";
import type { ExecutionInput, RenderConfig } from "../../src/lambda/config.ts";
import type { PlanResult } from "../../src/lambda/state_machine.ts";
import { compositionHtml, imageDifference, makeProject, rgbFrames, ROOT } from "../helpers.ts";
import { S3_CREDENTIALS, type S3Server, startS3Server, workerEnv } from "../s3_server.ts";

const BUCKET = "vid-identity-test";
/** The worker keeps downloaded sites by id in `<tmpdir>/vid-sites`: its TMPDIR is fresh per run. */
const SITE_ID = "site-identity-0123";
/**
 * The same page, 8 frames long (the animation's own 4.6 s does not change, so its frames are
 * the first 8 of the long one's): for the plan of 3-frame cells, which needs no 23 frames.
 */
const SHORT_SITE_ID = "site-identity-short";
const SHORT_FRAMES = 8;
const EPOCH_MS = 1_700_000_000_000;
const FPS = 5;
const FRAMES = 23;

const page = (frames: number): string =>
  compositionHtml(
    `<div id="box"></div><audio src="tone.wav" data-start="0" data-volume="0.5"></audio>`,
    {
      id: "identity",
      duration: frames / FPS,
      head: `<style>
#box { position: absolute; left: 0; top: 40px; width: 60px; height: 60px; background: #f00;
  animation: slide 4.6s linear forwards; }
@keyframes slide { 50% { background: #0f0; } to { left: 260px; background: #00f; } }
</style>`,
    },
  );
const HTML = page(FRAMES);

async function run(cmd: string, args: string[]): Promise<string> {
  const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
  return new TextDecoder().decode(out.stdout);
}

/** Marks the driver's result line, so output of the worker cannot be mistaken for it. */
const RESULT_MARK = "@@identity-plans@@";

/**
 * Runs in a child `deno` process: calls the worker's handler as the state machine would
 * (plan, each chunk, assemble) for each execution input, one after the other, and prints
 * the plans.
 */
const DRIVER = `
const { handler } = await import(Deno.args[0]);
const plans = [];
for (const input of JSON.parse(Deno.args[1])) {
  const executionStartTime = new Date().toISOString();
  const plan = await handler({ task: "plan", input, executionStartTime });
  const chunks = [];
  for (const chunk of plan.chunks) {
    chunks.push(await handler({
      task: "renderChunk", input, chunk, totalFrames: plan.totalFrames, executionStartTime,
    }));
  }
  await handler({ task: "assemble", input, totalFrames: plan.totalFrames, chunks, executionStartTime });
  plans.push(plan);
}
console.log("${RESULT_MARK}" + JSON.stringify(plans));
Deno.exit(0);
`;

/** framemd5 lines (timestamps, size, hash), headers dropped. */
async function framemd5(file: string, args: string[]): Promise<string[]> {
  const out = await run("ffmpeg", ["-v", "error", "-i", file, ...args, "-f", "framemd5", "-"]);
  return out.split("\n").filter((line) => line !== "" && !line.startsWith("#"));
}

/** What must be equal between two renders of the same composition. */
interface Fingerprint {
  /** Decoded frames. */
  frames: string[];
  /** Video packets as stored: bytes and timestamps in the stream's time base. */
  videoPackets: string[];
  /** Audio packets as stored (empty for a silent video). */
  audioPackets: string[];
}

async function fingerprint(file: string): Promise<Fingerprint> {
  const [frames, videoPackets, audioPackets] = await Promise.all([
    framemd5(file, ["-map", "0:v:0"]),
    framemd5(file, ["-map", "0:v:0", "-c", "copy"]),
    framemd5(file, ["-map", "0:a?", "-c", "copy"]),
  ]);
  return { frames, videoPackets, audioPackets };
}

/** How many of `a`'s lines differ from `b`'s, position by position. */
function differing(a: string[], b: string[]): number {
  return Math.max(a.length, b.length) -
    a.filter((line, i) => line === b[i]).length;
}

function assertSame(
  actual: Fingerprint,
  expected: Fingerprint,
  what: string,
  frames = FRAMES,
): void {
  assert.equal(actual.frames.length, frames, `${what}: frame count`);
  assert.equal(differing(actual.frames, expected.frames), 0, `${what}: decoded frames differ`);
  assert.equal(
    differing(actual.videoPackets, expected.videoPackets),
    0,
    `${what}: video packets (bytes or timestamps) differ`,
  );
  assert.equal(
    differing(actual.audioPackets, expected.audioPackets),
    0,
    `${what}: audio packets differ`,
  );
}

describe("distributed render = local render, for any chunk plan", () => {
  let s3: S3Server;
  let client: S3Client;
  let project: string;
  let scratch: string;
  /** The one capture browser of the local renders (each opens its own windows in it). */
  let browser: Browser;
  /** The local mp4 render of the default plan, made once for the tests that compare with it. */
  let localMp4: Promise<string> | undefined;
  /** The distributed renders of the mp4 tests, made once in one child process. */
  let distributedMp4: Promise<{ plan: PlanResult; file: string }[]> | undefined;

  before(async () => {
    browser = await launchForCapture("auto");
    s3 = await startS3Server();
    client = new S3Client({
      region: "us-east-1",
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials: S3_CREDENTIALS,
    });
    await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
    project = await makeProject(HTML);
    scratch = await Deno.makeTempDir({ prefix: "vid-identity-" });
    await run("ffmpeg", [
      "-v",
      "error",
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=440:duration=5",
      join(project, "tone.wav"),
    ]);
    const tone = await Deno.readFile(join(project, "tone.wav"));
    const encoder = new TextEncoder();
    const sites: [string, string, Uint8Array][] = [
      [SITE_ID, "index.html", encoder.encode(HTML)],
      [SITE_ID, "tone.wav", tone],
      [SHORT_SITE_ID, "index.html", encoder.encode(page(SHORT_FRAMES))],
      [SHORT_SITE_ID, "tone.wav", tone],
    ];
    await Promise.all(sites.map(([site, name, body]) =>
      client.send(
        new PutObjectCommand({ Bucket: BUCKET, Key: `sites/${site}/${name}`, Body: body }),
      )
    ));
  });

  after(async () => {
    await browser?.close();
    client?.destroy();
    await s3?.close();
    if (project) await Deno.remove(project, { recursive: true });
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  /**
   * Renders through the worker's three tasks, as the state machine calls them, in one child
   * process for all of `renders` (one after the other): its environment gives the worker's
   * S3 client its endpoint and keys, and its TMPDIR (the worker keeps downloaded sites in
   * `<tmpdir>/vid-sites`) is in the scratch folder.
   */
  async function distributed(
    renders: { chunking: number | RenderConfig; renderId: string; siteId?: string }[],
  ): Promise<{ plan: PlanResult; file: string }[]> {
    const inputs: ExecutionInput[] = renders.map(({ chunking, renderId, siteId = SITE_ID }) => ({
      renderId,
      bucketName: BUCKET,
      siteId,
      serveUrl: `${s3.endpoint}/${BUCKET}/sites/${siteId}/`,
      composition: "index.html",
      outputKey: `renders/${renderId}/out.mp4`,
      config: {
        fps: FPS,
        format: "mp4",
        ...(typeof chunking === "number" ? { chunkSize: chunking } : chunking),
        epochMs: EPOCH_MS,
      },
    }));
    const tmp = join(scratch, "worker-tmp");
    await Deno.mkdir(tmp, { recursive: true });
    const child = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        DRIVER,
        new URL("../../worker/handler.ts", import.meta.url).href,
        JSON.stringify(inputs),
      ],
      cwd: ROOT,
      env: {
        ...workerEnv(s3.endpoint, tmp),
      },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(child.stdout);
    const result = stdout.split("\n").find((line) => line.startsWith(RESULT_MARK));
    assert.ok(
      child.success && result,
      `the worker failed (${child.code}):\n${new TextDecoder().decode(child.stderr)}\n${stdout}`,
    );
    const plans: PlanResult[] = JSON.parse(result.slice(RESULT_MARK.length));
    return await Promise.all(inputs.map(async (input, i) => {
      const object = await client.send(
        new GetObjectCommand({ Bucket: BUCKET, Key: input.outputKey }),
      );
      const file = join(scratch, `${input.renderId}.mp4`);
      await Deno.writeFile(file, await object.Body!.transformToByteArray());
      return { plan: plans[i], file };
    }));
  }

  async function local(format: OutputFormat, chunkSize?: number): Promise<string> {
    const result = await renderComposition({
      target: project,
      output: join(scratch, `local-${chunkSize ?? "default"}.${format}`),
      fps: FPS,
      format,
      chunkSize,
      epochMs: EPOCH_MS,
      browser,
      workers: 1,
    });
    assert.equal(result.frames, FRAMES);
    return result.output;
  }

  /**
   * Chunk sizes of 23, 12 and 8 frames (1, 2 and 3 chunks), a target of 7 frames (5 chunks:
   * the mp4 test's 5-chunk plan and the ceiling test's plan above a cell are the same one) and
   * a target of 3 on the short site: one child process for all.
   */
  function mp4Renders(): Promise<{ plan: PlanResult; file: string }[]> {
    return distributedMp4 ??= distributed([
      ...[23, 12, 8].map((chunkSize) => ({
        chunking: chunkSize,
        renderId: `r-identity-${chunkSize}`,
      })),
      { chunking: { targetChunkFrames: 7 }, renderId: "r-identity-t7" },
      { chunking: { targetChunkFrames: 3 }, renderId: "r-identity-t3", siteId: SHORT_SITE_ID },
    ]);
  }

  it("mp4: chunk plans of 1, 2, 3 and 5 chunks give the local render's frames and audio", async () => {
    const reference = await fingerprint(await (localMp4 ??= local("mp4")));
    assert.ok(reference.audioPackets.length > 0, "the fixture has audio");
    // Grid cells of 1 s = 5 frames; chunk sizes are whole cells, the last chunk ends at 22.
    // Chunk sizes 23, 12 and 8, then a target of 7 frames: one cell per chunk.
    const plans: number[][][] = [
      [[0, 22]],
      [[0, 14], [15, 22]],
      [[0, 9], [10, 19], [20, 22]],
      [[0, 4], [5, 9], [10, 14], [15, 19], [20, 22]],
    ];
    const renders = await mp4Renders();
    for (const [i, ranges] of plans.entries()) {
      const { plan, file } = renders[i];
      assert.deepEqual(plan.chunks.map((c) => [c.from, c.to]), ranges);
      assertSame(await fingerprint(file), reference, `${ranges.length} chunk(s)`);
    }
  });

  it("--target-chunk-frames is a ceiling: above a cell, whole cells and the same bytes; below a second, cells of the target (its frames, a keyframe every target frames)", async () => {
    const localFile = await (localMp4 ??= local("mp4"));
    const reference = await fingerprint(localFile);
    const [over, under] = (await mp4Renders()).slice(3);
    // 23 frames, target 7 over 5-frame cells: one cell per chunk (the count alone, 4, would
    // have made the first chunk 10 frames).
    assert.deepEqual(over.plan.chunks.map((c) => [c.from, c.to]), [
      [0, 4],
      [5, 9],
      [10, 14],
      [15, 19],
      [20, 22],
    ]);
    assertSame(await fingerprint(over.file), reference, "target 7");

    // Target 3, below the 1-second cell: cells of 3 frames, each its own encoder run (on the
    // 8-frame site: 3, 3 and 2 frames).
    assert.deepEqual(under.plan.chunks.map((c) => [c.from, c.to, c.cellFrames]), [
      [0, 2, 3],
      [3, 5, 3],
      [6, 7, 3],
    ]);
    const keyframes = (await run("ffprobe", [
      "-v",
      "error",
      "-select_streams",
      "v:0",
      "-show_entries",
      "packet=flags",
      "-of",
      "csv=p=0",
      under.file,
    ])).split("\n").filter((line) => line.startsWith("K")).length;
    assert.equal(keyframes, 3, "a keyframe every 3 frames");
    const [mine, theirs] = await Promise.all([
      rgbFrames(under.file, 320, 180),
      rgbFrames(localFile, 320, 180),
    ]);
    assert.equal(mine.length, SHORT_FRAMES);
    for (const [i, frame] of mine.entries()) {
      const { mean } = imageDifference(frame, theirs[i]);
      assert.ok(mean < 4, `frame ${i}: mean difference ${mean.toFixed(2)} from the local render`);
    }
  });

  it("29.97 fps (30000/1001): 1 and 2 chunks of 30-frame cells give the same mp4 and webm", async () => {
    // 40 frames: a whole 30-frame cell, then the join at 1.001 s and a part of the next.
    for (const format of ["mp4", "webm"] as const) {
      const render = async (chunkSize: number) =>
        await fingerprint(
          (await renderComposition({
            target: project,
            output: join(scratch, `ntsc-${chunkSize}.${format}`),
            fps: "30000/1001",
            frames: { from: 0, to: 39 },
            format,
            chunkSize,
            epochMs: EPOCH_MS,
            browser,
            workers: 1,
          })).output,
        );
      assertSame(await render(30), await render(40), `29.97 ${format}`, 40);
    }
  });

  for (const format of ["webm", "mov"] as const) {
    it(`${format}: 1 chunk and 5 chunks give the default plan's frames`, async () => {
      const reference = await fingerprint(await local(format));
      for (const chunkSize of [23, 5]) {
        assertSame(
          await fingerprint(await local(format, chunkSize)),
          reference,
          `${format} ${chunkSize}`,
        );
      }
    });
  }
});
