/**
 * The distributed quickstart, end to end, as the README tells a new user to run it, each
 * command its own `vid` process:
 *
 * 1. `vid lambda local` in the background; the environment for the other commands is read
 *    from the `export KEY=value` lines it prints;
 * 2. `vid lambda sites create examples/hello` prints the Site ID;
 * 3. `vid lambda render examples/hello --site-id <id> --wait` (at 320x180, so it fits a
 *    2-core machine; the composition is 1920x1080 and is captured scaled down) prints the
 *    output's `s3://` location.
 *
 * Then the object is fetched from the local bucket with the S3 client and checked: an
 * H.264 MP4 of 320x180 with 150 frames (5 s at 30 fps) whose background has the colour of
 * the composition's gradient. Finally `vid lambda local` stops on SIGTERM.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { near, pixelSeries, probeVideo, rgb, ROOT, runVid } from "../helpers.ts";

const HELLO = join(ROOT, "examples", "hello");
/** What the other commands need from `vid lambda local`'s printed environment. */
const REQUIRED = [
  "VID_LAMBDA_BUCKET",
  "VID_LAMBDA_STATE_MACHINE_ARN",
  "VID_S3_ENDPOINT",
  "VID_SFN_ENDPOINT",
  "AWS_REGION",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
];

/** A background `vid lambda local`: its printed environment and its stderr so far. */
interface LocalProcess {
  child: Deno.ChildProcess;
  env: Record<string, string>;
  stdout: string;
  stderrTail(): string;
  /** Settles when both output streams are drained. */
  drained: Promise<void>;
}

/** Starts `vid lambda local` and reads its stdout until the environment is printed. */
async function startLocal(scratch: string): Promise<LocalProcess> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, "lambda", "local", "--data-dir", join(scratch, "s3")],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // The worker logs on stderr; read it continuously so a full pipe never blocks the stack.
  let stderr = "";
  const stderrDone = child.stderr.pipeThrough(new TextDecoderStream()).pipeTo(
    new WritableStream({ write: (text) => void (stderr = (stderr + text).slice(-4000)) }),
  );
  const env: Record<string, string> = {};
  let stdout = "";
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const deadline = Date.now() + 90_000;
  while (!REQUIRED.every((key) => key in env)) {
    if (Date.now() > deadline) {
      throw new Error(`vid lambda local printed no environment:\n${stderr}`);
    }
    const { value, done } = await reader.read();
    if (done) throw new Error(`vid lambda local exited early:\n${stdout}\n${stderr}`);
    stdout += value;
    for (const match of stdout.matchAll(/^export ([A-Z0-9_]+)=(.*)$/gm)) env[match[1]] = match[2];
  }
  const stdoutDone = (async () => {
    while (!(await reader.read()).done) {
      // drain
    }
  })();
  return {
    child,
    env,
    stdout,
    stderrTail: () => stderr,
    drained: Promise.all([stderrDone, stdoutDone]).then(() => {}),
  };
}

describe("distributed quickstart: vid lambda local, sites create, render --wait (examples/hello)", () => {
  let scratch: string;
  let local: LocalProcess;
  let siteId: string;
  let location: string;

  before(async () => {
    scratch = await Deno.makeTempDir({ prefix: "vid-lambda-hello-" });
    local = await startLocal(scratch);
  });

  after(async () => {
    if (local) {
      try {
        local.child.kill("SIGTERM");
      } catch {
        // already gone
      }
      await local.child.status;
      await local.drained;
    }
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  it("vid lambda local prints the stack outputs and the environment", () => {
    assert.match(local.stdout, /^RenderBucketName\s+vid-renders$/m);
    assert.match(
      local.stdout,
      /^RenderStateMachineArn\s+arn:aws:states:us-east-1:\d+:stateMachine:vid-render$/m,
    );
    assert.equal(local.env.VID_LAMBDA_BUCKET, "vid-renders");
    assert.match(local.env.VID_S3_ENDPOINT, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.match(local.env.VID_SFN_ENDPOINT, /^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it("vid lambda sites create examples/hello prints the Site ID", async () => {
    const out = await runVid(["lambda", "sites", "create", HELLO], { env: local.env });
    assert.equal(out.code, 0, out.stderr);
    siteId = out.stdout.trim();
    assert.match(siteId, /^site-[0-9a-f]{16}$/);
  });

  it("vid lambda render --site-id --wait writes the video to the local bucket", async () => {
    assert.ok(siteId, "no site id from the previous step");
    const t0 = performance.now();
    const out = await runVid([
      "lambda",
      "render",
      HELLO,
      "--site-id",
      siteId,
      "--width",
      "320",
      "--height",
      "180",
      "--chunk-size",
      "75",
      "--output-key",
      "quickstart/hello.mp4",
      "--wait",
    ], { env: local.env });
    const seconds = (performance.now() - t0) / 1000;
    assert.equal(out.code, 0, `${out.stderr}\n--- vid lambda local:\n${local.stderrTail()}`);
    location = out.stdout.trim();
    assert.equal(location, "s3://vid-renders/quickstart/hello.mp4");
    assert.match(out.stderr, /^started r-/m);
    assert.match(out.stderr, /succeeded: chunks 2\/2, frames 150\/150/);
    console.log(`vid lambda render examples/hello at 320x180: ${seconds.toFixed(1)} s`);
  });

  it("the object in the bucket is a 150-frame 320x180 H.264 MP4 of the composition", async () => {
    assert.ok(location, "no output from the previous step");
    const s3 = new S3Client({
      region: local.env.AWS_REGION,
      endpoint: local.env.VID_S3_ENDPOINT,
      forcePathStyle: true,
      credentials: {
        accessKeyId: local.env.AWS_ACCESS_KEY_ID,
        secretAccessKey: local.env.AWS_SECRET_ACCESS_KEY,
      },
    });
    const file = join(scratch, "hello.mp4");
    try {
      const object = await s3.send(
        new GetObjectCommand({ Bucket: local.env.VID_LAMBDA_BUCKET, Key: "quickstart/hello.mp4" }),
      );
      await Deno.writeFile(file, await object.Body!.transformToByteArray());
    } finally {
      s3.destroy();
    }
    const info = await probeVideo(file);
    assert.equal(info.codec, "h264");
    assert.match(info.formatName, /mp4/);
    assert.deepEqual([info.width, info.height], [320, 180]);
    assert.equal(info.frames, 150);
    assert.equal(info.fps, 30);
    // Top-right corner: the stage's 135deg gradient at its middle (about #131030, between
    // #0b0a1a and #141033), away from both glows, in the first and the last frame.
    const corner = await pixelSeries(file, 310, 6);
    assert.equal(corner.length, 150);
    for (const i of [0, 149]) {
      assert.ok(near(corner[i], [19, 16, 48], 14), `frame ${i}: ${rgb(corner[i])}`);
    }
    // The progress bar (accent #ff3d7f) fills the bottom row by the last frame only.
    const bar = await pixelSeries(file, 300, 179);
    assert.ok(bar[149][0] > bar[0][0] + 60, `bar: ${rgb(bar[0])} then ${rgb(bar[149])}`);
  });

  it("vid lambda local stops on SIGTERM", async () => {
    local.child.kill("SIGTERM");
    const status = await local.child.status;
    assert.equal(status.code, 0, local.stderrTail());
  });
});
