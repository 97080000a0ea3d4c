/**
 * The worker's Lambda runtime packaging, as far as it can be proven off AWS:
 *
 * - `scripts/build_worker.ts` builds the deployable artifact (bundle + `@sparticuz/chromium`
 *   + static ffmpeg and ffprobe from npm, pinned by `worker/runtime/package-lock.json`)
 *   under Lambda's 250 MB unzipped limit, with executable binaries and a manifest whose
 *   hash and size match the files;
 * - `resolveRuntime` keeps the precedence `VID_*` > packaged (on Lambda only) > system, and
 *   makes an executable copy of a binary that lost its mode in a zip;
 * - the worker bundle, run from the artifact under Node 22 with the Lambda code path
 *   selected (`AWS_LAMBDA_FUNCTION_NAME` set, no `VID_*` binaries, `HOME`/`TMPDIR` in a
 *   scratch folder), plans, renders two chunks with the packaged Chromium (inflated into
 *   that `TMPDIR`) and the packaged 2018 static ffmpeg, and assembles a 320x180 video with
 *   a soundtrack (probed by the packaged ffprobe) whose frames show the animation;
 * - one ffmpeg everywhere: with `VID_FFMPEG` / `VID_FFPROBE` at the packaged binaries,
 *   `vid render` encodes each chunk into the bytes the worker uploaded, and the whole file
 *   is byte-identical to the Lambda render's; with the system ffmpeg (Debian 12: 5.1, x264
 *   core 164, against the packaged 4.1's core 157) every video packet differs; and
 *   `deno task setup` prints the ffmpeg's version, with a note when it is not that build.
 *
 * The packaged Chromium is built for Amazon Linux 2023; it also runs on this Debian
 * machine, so the render is real. Which capture mode it used is recorded per chunk: the
 * BeginFrame probe passes with it (it is a headless shell); a second render forces the
 * screenshot path (`VID_CAPTURE=screenshot`) to show that one works with it too.
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
import { ARTIFACT_MANIFEST, type ArtifactManifest } from "../../worker/artifact_manifest.ts";
import {
  PACKAGED_BINARIES,
  PACKAGED_FFMPEG_VERSION,
  resolveRuntime,
} from "../../worker/lambda_runtime.ts";
import type { ExecutionInput } from "../../src/lambda/config.ts";
import { node22 } from "../../src/lambda/local/local_stack.ts";
import { findHeadlessShell } from "../../src/render/system.ts";
import {
  compositionHtml,
  makeProject,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  ROOT,
  runVid,
} from "../helpers.ts";
import { S3_CREDENTIALS, type S3Server, startS3Server } from "../s3_server.ts";

const BUCKET = "vid-runtime-test";
const SITE_ID = "site-00000000runtime0";

/**
 * 3 s at 5 fps (two chunks of whole 1 s grid cells), 320x180: a red box sliding right and
 * turning blue, and a quiet tone.
 */
const HTML = compositionHtml(
  `<div id="box"></div><audio src="tone.wav" data-start="0" data-volume="0.5"></audio>`,
  {
    id: "runtime",
    duration: 3,
    head: `<style>
#box { position: absolute; left: 0; top: 40px; width: 60px; height: 60px; background: #f00;
  animation: slide 3s linear forwards; }
@keyframes slide { to { left: 260px; background: #00f; } }
</style>`,
  },
);

/** Runs a command; throws with its output on failure; returns stdout and stderr. */
async function run(
  cmd: string,
  args: string[],
  options: { env?: Record<string, string>; clearEnv?: boolean; cwd?: string } = {},
): Promise<{ stdout: string; stderr: string }> {
  const out = await new Deno.Command(cmd, {
    args,
    env: options.env,
    clearEnv: options.clearEnv,
    cwd: options.cwd,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  const stdout = decoder.decode(out.stdout);
  const stderr = decoder.decode(out.stderr);
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed (${out.code}):\n${stderr}\n${stdout}`);
  }
  return { stdout, stderr };
}

/** Calls the bundle's handler as the state machine would: plan, each chunk, assemble. */
const DRIVER = `
import process from "node:process";
const { handler } = await import(process.argv[2]);
const input = JSON.parse(process.argv[3]);
const executionStartTime = new Date().toISOString();
const plan = await handler({ task: "plan", input, executionStartTime });
const chunks = [];
for (const chunk of plan.chunks) {
  chunks.push(await handler({
    task: "renderChunk", input, chunk, totalFrames: plan.totalFrames, executionStartTime,
  }));
}
const assembled = await handler({
  task: "assemble", input, totalFrames: plan.totalFrames, chunks, executionStartTime,
});
process.stdout.write(JSON.stringify({ plan, chunks, assembled, env: {
  VID_HEADLESS_SHELL: process.env.VID_HEADLESS_SHELL,
  VID_FFMPEG: process.env.VID_FFMPEG,
  VID_FFPROBE: process.env.VID_FFPROBE,
  VID_CHROMIUM_FLAGS: process.env.VID_CHROMIUM_FLAGS,
} }));
process.exit(0);
`;

/** framemd5 lines of `file`'s packets as stored (`-c copy`), read by the system ffmpeg. */
async function packets(file: string, stream: "v" | "a"): Promise<string[]> {
  const { stdout } = await run("ffmpeg", [
    "-v",
    "error",
    "-i",
    file,
    "-map",
    `0:${stream}:0`,
    "-c",
    "copy",
    "-f",
    "framemd5",
    "-",
  ]);
  return stdout.split("\n").filter((line) => line !== "" && !line.startsWith("#"));
}

/** A packet's size and MD5 (a framemd5 line's last two fields): its bytes, not its timestamps. */
function packetBytes(line: string): string {
  return line.split(",").slice(-2).map((field) => field.trim()).join(" ");
}

/** The x264 build that encoded `file`, from the version string x264 writes into the stream. */
async function x264Core(file: string): Promise<string | undefined> {
  const text = new TextDecoder("latin1").decode(await Deno.readFile(file));
  return /x264 - core (\d+)/.exec(text)?.[1];
}

describe("Lambda runtime packaging", () => {
  let scratch: string;
  let artifact: string;
  let manifest: ArtifactManifest;

  before(async () => {
    scratch = await Deno.makeTempDir({ prefix: "vid-runtime-test-" });
    artifact = join(scratch, "worker");
    await run(Deno.execPath(), ["run", "-A", "scripts/build_worker.ts", "--outdir", artifact], {
      cwd: ROOT,
    });
    manifest = JSON.parse(await Deno.readTextFile(join(artifact, ARTIFACT_MANIFEST)));
  });

  after(async () => {
    if (scratch) await Deno.remove(scratch, { recursive: true });
  });

  it("the artifact holds the bundle, pinned runtime packages and executable binaries, under 250 MB", async () => {
    const pinned = JSON.parse(
      await Deno.readTextFile(join(ROOT, "worker", "runtime", "package.json")),
    ).dependencies as Record<string, string>;
    assert.deepEqual(manifest.packages, pinned);
    assert.equal(manifest.limitBytes, 262_144_000);
    assert.ok(manifest.bytes < manifest.limitBytes, `${manifest.bytes} bytes`);
    assert.ok(manifest.bytes > 150e6, `${manifest.bytes} bytes: Chromium and ffmpeg are in`);
    assert.ok((await Deno.stat(join(artifact, "index.mjs"))).size > 100_000);
    assert.ok(
      (await Deno.stat(join(artifact, "node_modules/@sparticuz/chromium/bin/chromium.br")))
        .isFile,
    );
    // Lambda runs the code as another user: the binaries must be executable by all.
    for (const path of Object.values(PACKAGED_BINARIES)) {
      assert.equal((await Deno.stat(join(artifact, path))).mode! & 0o755, 0o755, path);
    }
    const ffmpeg = join(artifact, PACKAGED_BINARIES.ffmpeg);
    const encoders = (await run(ffmpeg, ["-hide_banner", "-encoders"])).stdout;
    for (const codec of ["libx264", "libvpx-vp9", "prores_ks", "aac", "libopus"]) {
      assert.match(encoders, new RegExp(` ${codec} `), codec);
    }
    // deno task setup compares the local ffmpeg with this version (a new pin must update it).
    const version = (await run(ffmpeg, ["-version"])).stdout;
    assert.match(version, new RegExp(`^ffmpeg version ${PACKAGED_FFMPEG_VERSION} `));
    const probe = await run(join(artifact, PACKAGED_BINARIES.ffprobe), ["-version"]);
    assert.match(probe.stdout, /^ffprobe version/);
  });

  it("deno task setup names the ffmpeg in use, the Chromium versions and the host, and notes when it is not the build the worker ships", async () => {
    const setup = async (env: Record<string, string>): Promise<string> =>
      (await run(Deno.execPath(), ["run", "-A", "scripts/setup.ts"], { cwd: ROOT, env })).stdout;
    const packaged = join(artifact, PACKAGED_BINARIES.ffmpeg);
    const same = await setup({ VID_FFMPEG: packaged });
    assert.match(
      same,
      new RegExp(`ok +ffmpeg +${packaged} \\(ffmpeg version ${PACKAGED_FFMPEG_VERSION}\\)`),
    );
    assert.doesNotMatch(same, /^note:/m);
    const system = await setup({ VID_FFMPEG: "" });
    assert.match(system, /^ok +ffmpeg +\S+ \(ffmpeg version \S+\)$/m);
    // Speed figures are read beside the Chromium version and the host (issue 36).
    assert.match(system, /^ok +chromium-headless-shell +\S+ \(Chromium \d+\.\d+\.\d+\.\d+\)$/m);
    assert.match(system, /^ok +chromium +\S+ \(Chromium \d+\.\d+\.\d+\.\d+\)$/m);
    assert.match(system, /^ok +host +.+, \d+ cores$/m);
    assert.match(
      system,
      /^note: ffmpeg \S+ is not the build the Lambda worker ships .*not byte-identical to Lambda's.* VID_FFMPEG=\$PWD\/dist\/worker\/node_modules\/@ffmpeg-installer\/linux-x64\/ffmpeg VID_FFPROBE=/m,
    );
  });

  it("the manifest's size and file count are those of the files on disk", async () => {
    let bytes = 0;
    let files = 0;
    const walk = async (dir: string): Promise<void> => {
      for await (const entry of Deno.readDir(dir)) {
        const path = join(dir, entry.name);
        if (entry.isDirectory) await walk(path);
        else if (path !== join(artifact, ARTIFACT_MANIFEST)) {
          bytes += (await Deno.lstat(path)).size;
          files++;
        }
      }
    };
    await walk(artifact);
    assert.equal(manifest.bytes, bytes);
    assert.equal(manifest.files, files);
    assert.match(manifest.sha256, /^[0-9a-f]{64}$/);
  });

  it("resolveRuntime: off Lambda nothing changes", async () => {
    const env: Record<string, string | undefined> = {};
    const binaries = await resolveRuntime({ env, root: artifact });
    assert.equal(binaries.onLambda, false);
    assert.deepEqual(binaries.sources, { browser: "system", ffmpeg: "system", ffprobe: "system" });
    assert.deepEqual(env, {});
  });

  it("resolveRuntime: on Lambda, VID_* wins over the packaged binaries, which win over the system", async () => {
    const env: Record<string, string | undefined> = {
      AWS_LAMBDA_FUNCTION_NAME: "vid-render",
      VID_FFMPEG: "/usr/bin/ffmpeg",
      VID_HEADLESS_SHELL: "/usr/lib/chromium/chromium-headless-shell",
    };
    const binaries = await resolveRuntime({ env, root: artifact });
    assert.deepEqual(binaries.sources, { browser: "env", ffmpeg: "env", ffprobe: "lambda" });
    assert.equal(env.VID_FFMPEG, "/usr/bin/ffmpeg");
    assert.equal(env.VID_FFPROBE, join(artifact, PACKAGED_BINARIES.ffprobe));
    assert.equal(env.VID_CHROMIUM_FLAGS, undefined);

    // No binaries in the artifact (a bundle-only build): the system's, as locally.
    const bare = { AWS_LAMBDA_FUNCTION_NAME: "vid-render", VID_HEADLESS_SHELL: "/x" };
    const none = await resolveRuntime({ env: bare, root: join(scratch, "nowhere") });
    assert.equal(none.sources.ffmpeg, "system");
    assert.equal("VID_FFMPEG" in bare, false);
  });

  it("resolveRuntime: the packaged Chromium is inflated into TMPDIR, with its recommended flags (stub import only for the path)", async () => {
    const env: Record<string, string | undefined> = { AWS_LAMBDA_FUNCTION_NAME: "vid-render" };
    let inflated = 0;
    const binaries = await resolveRuntime({
      env,
      root: artifact,
      loadChromium: () =>
        Promise.resolve({
          executablePath: () => Promise.resolve((inflated++, "/tmp/chromium")),
          args: ["--single-process", "--headless='shell'", "--no-zygote"],
        }),
    });
    assert.equal(inflated, 1);
    assert.equal(binaries.sources.browser, "lambda");
    assert.equal(env.VID_HEADLESS_SHELL, "/tmp/chromium");
    assert.equal(env.VID_CHROMIUM, "/tmp/chromium");
    // The launcher passes --headless itself.
    assert.equal(env.VID_CHROMIUM_FLAGS, "--single-process --no-zygote");
  });

  it("a packaged binary without its executable bit is run from an executable copy in the temporary folder (tmpDir, TMPDIR by default)", async () => {
    const root = join(scratch, "modeless");
    const target = join(root, PACKAGED_BINARIES.ffmpeg);
    await Deno.mkdir(join(target, ".."), { recursive: true });
    await Deno.copyFile(join(artifact, PACKAGED_BINARIES.ffmpeg), target);
    await Deno.chmod(target, 0o644);
    const tmp = join(scratch, "tmp-modeless");
    await Deno.mkdir(tmp);
    const env: Record<string, string | undefined> = {
      AWS_LAMBDA_FUNCTION_NAME: "vid-render",
      VID_HEADLESS_SHELL: "/x",
    };
    // The worker's TMPDIR, given explicitly: the test process's environment is shared.
    const binaries = await resolveRuntime({ env, root, tmpDir: tmp });
    assert.equal(binaries.sources.ffmpeg, "lambda");
    assert.equal(env.VID_FFMPEG, join(tmp, "vid-bin", "ffmpeg"));
    const version = await run(env.VID_FFMPEG!, ["-version"]);
    assert.match(version.stdout, /^ffmpeg version/);
  });

  describe("the bundle on the Lambda code path under Node 22", () => {
    let s3: S3Server;
    let client: S3Client;
    let project: string;

    before(async () => {
      s3 = await startS3Server();
      client = new S3Client({
        region: "us-east-1",
        endpoint: s3.endpoint,
        forcePathStyle: true,
        credentials: S3_CREDENTIALS,
      });
      await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
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
    });

    after(async () => {
      client?.destroy();
      await s3?.close();
      if (project) await Deno.remove(project, { recursive: true });
    });

    /** The TMPDIR of the first render, with the packaged Chromium inflated into it. */
    let packagedTmp: string | undefined;

    /**
     * Runs plan, the chunks and assemble from the artifact on the Lambda code path; returns
     * the driver's result, the worker's stderr, each chunk's capture mode and the video.
     * `chunkSize` 8 makes two chunks (frames 0-9 and 10-14: cells of 5), 15 one; `tmp` is
     * the TMPDIR of an earlier render (a warm container's /tmp), else a fresh one.
     */
    async function renderOnLambdaPath(
      renderId: string,
      extraEnv: Record<string, string> = {},
      { chunkSize = 8, tmp: warmTmp }: { chunkSize?: number; tmp?: string } = {},
    ) {
      const node = await node22();
      const home = join(scratch, `${renderId}-home`);
      const tmp = warmTmp ?? join(scratch, `${renderId}-tmp`);
      await Deno.mkdir(home);
      if (!warmTmp) await Deno.mkdir(tmp);
      await Deno.writeTextFile(join(scratch, "driver.mjs"), DRIVER);
      const input: ExecutionInput = {
        renderId,
        bucketName: BUCKET,
        siteId: SITE_ID,
        serveUrl: `${s3.endpoint}/${BUCKET}/sites/${SITE_ID}/`,
        composition: "index.html",
        outputKey: `renders/${renderId}/out.mp4`,
        config: { fps: 5, format: "mp4", chunkSize },
      };
      const { stdout, stderr } = await run(node, [
        join(scratch, "driver.mjs"),
        join(artifact, "index.mjs"),
        JSON.stringify(input),
      ], {
        clearEnv: true,
        env: {
          // What the Lambda runtime provides, and nothing of this machine's binaries on PATH.
          AWS_LAMBDA_FUNCTION_NAME: "vid-render",
          AWS_REGION: "us-east-1",
          PATH: "/nonexistent",
          HOME: home,
          TMPDIR: tmp,
          VID_S3_ENDPOINT: s3.endpoint,
          VID_S3_FORCE_PATH_STYLE: "1",
          AWS_ACCESS_KEY_ID: S3_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: S3_CREDENTIALS.secretAccessKey,
          ...extraEnv,
        },
      });
      const get = async (key: string): Promise<Uint8Array> => {
        const object = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }));
        return await object.Body!.transformToByteArray();
      };
      const result = JSON.parse(stdout);
      const captures: string[] = [];
      for (const { index } of result.chunks as { index: number }[]) {
        const chunk = JSON.parse(
          new TextDecoder().decode(await get(`renders/${renderId}/chunks/${index}.json`)),
        );
        captures.push(chunk.capture);
      }
      const video = join(scratch, `${renderId}.mp4`);
      await Deno.writeFile(video, await get(input.outputKey));
      // The chunk segments as the worker uploaded them, before assemble joined them.
      const chunkFiles: string[] = [];
      for (const chunk of result.chunks as { index: number; key: string }[]) {
        const file = join(scratch, `${renderId}-chunk-${chunk.index}.mp4`);
        await Deno.writeFile(file, await get(chunk.key));
        chunkFiles.push(file);
      }
      return { result, stderr, captures, video, chunkFiles, tmp };
    }

    /** The video has 15 frames of 320x180, a soundtrack, and the animation's pixels. */
    async function checkVideo(video: string): Promise<void> {
      const info = await probeVideo(video);
      assert.equal(info.frames, 15);
      assert.equal(info.width, 320);
      assert.equal(info.height, 180);
      assert.equal(info.hasAudio, true);
      // Frame 0: the red box at the left edge; the last frame: blue, at the right.
      const left = await pixelSeries(video, 30, 70);
      const right = await pixelSeries(video, 290, 70);
      assert.ok(near(left[0], [255, 0, 0], 40), `frame 0 at the left: ${rgb(left[0])}`);
      assert.ok(near(right[14], [0, 0, 255], 60), `frame 14 at the right: ${rgb(right[14])}`);
      assert.ok(near(right[0], [0, 0, 0], 30), `frame 0 at the right: ${rgb(right[0])}`);
    }

    it("plans, renders two chunks with the packaged Chromium and ffmpeg, and assembles with audio", async () => {
      const { result, stderr, captures, video, tmp } = await renderOnLambdaPath("r-runtime");
      packagedTmp = tmp;
      assert.equal(result.env.VID_HEADLESS_SHELL, join(tmp, "chromium"), stderr);
      assert.equal(result.env.VID_FFMPEG, join(artifact, PACKAGED_BINARIES.ffmpeg));
      assert.equal(result.env.VID_FFPROBE, join(artifact, PACKAGED_BINARIES.ffprobe));
      assert.match(result.env.VID_CHROMIUM_FLAGS, /--single-process/);
      assert.match(stderr, /vid worker runtime: browser lambda .*ffmpeg lambda .*ffprobe lambda/);
      // The runtime is chosen once per process: one log line for three invocations.
      assert.equal(stderr.match(/vid worker runtime:/g)?.length, 1, stderr);
      assert.equal(result.plan.totalFrames, 15);
      assert.equal(result.chunks.length, 2);
      assert.equal(result.assembled.audio, true);
      // The packaged browser is a headless shell: the BeginFrame probe passes, or falls back.
      assert.ok(captures.every((c) => c === "beginframe" || c === "screenshot"), `${captures}`);
      console.log(`packaged Chromium capture mode per chunk: ${captures.join(", ")}`);
      await checkVideo(video);
    });

    /*
     * One ffmpeg everywhere (issue 25): the packaged ffmpeg is a 2018 static build (4.1, x264
     * core 157) and no npm package carries a newer one vid can ship, so a local render with
     * the system's ffmpeg (Debian 12: 5.1, core 164) cannot equal a chunk made on Lambda.
     * Pointed at the same binaries with VID_FFMPEG / VID_FFPROBE, `vid render` encodes the
     * very bytes the worker does. Both sides use the system's headless shell here, so that
     * only ffmpeg varies (the packaged Chromium is another build than the system's).
     */
    it("one ffmpeg everywhere: `vid render` with VID_FFMPEG/VID_FFPROBE at the packaged binaries makes each Lambda chunk's video bytes and a byte-identical file; with the system ffmpeg (another x264 build) the video packets differ", async () => {
      const shell = await findHeadlessShell();
      assert.ok(shell, "the system's chromium-headless-shell");
      const lambda = await renderOnLambdaPath("r-one-ffmpeg", { VID_HEADLESS_SHELL: shell });
      assert.equal(lambda.result.env.VID_FFMPEG, join(artifact, PACKAGED_BINARIES.ffmpeg));
      assert.equal(lambda.result.env.VID_FFPROBE, join(artifact, PACKAGED_BINARIES.ffprobe));

      const local = async (
        name: string,
        env: Record<string, string>,
        args: string[] = [],
      ): Promise<string> => {
        const output = join(scratch, name);
        const result = await runVid(
          ["render", project, "-o", output, "--fps", "5", "--workers", "1", ...args],
          { env },
        );
        assert.equal(result.code, 0, result.stderr);
        return output;
      };
      // PATH leads nowhere: the packaged binaries are the only ffmpeg and ffprobe it can use.
      const packagedEnv = {
        PATH: "/nonexistent",
        VID_FFMPEG: join(artifact, PACKAGED_BINARIES.ffmpeg),
        VID_FFPROBE: join(artifact, PACKAGED_BINARIES.ffprobe),
      };
      const same = await local("one-ffmpeg-packaged.mp4", packagedEnv);
      const system = await local("one-ffmpeg-system.mp4", { VID_FFMPEG: "", VID_FFPROBE: "" });

      // Chunk 0 (frames 0-9) as the worker uploaded it: the local render's first packets.
      const [first, second] = lambda.chunkFiles;
      const { from, to } = lambda.result.plan.chunks[1];
      assert.deepEqual([from, to], [10, 14]);
      const localVideo = await packets(same, "v");
      assert.equal(localVideo.length, 15);
      assert.deepEqual(
        (await packets(first, "v")).map(packetBytes),
        localVideo.slice(0, 10).map(packetBytes),
        "chunk 0: packet bytes",
      );
      // Chunk 1 (frames 10-14, one grid cell) against `vid render --frames 10-14`: a file
      // joined from several cells repeats the SPS and PPS in each keyframe packet (39 bytes
      // more here), a file of one cell keeps them in its header only.
      const alone = await local("one-ffmpeg-frames.mp4", packagedEnv, [
        "--frames",
        `${from}-${to}`,
      ]);
      assert.deepEqual(
        (await packets(second, "v")).map(packetBytes),
        (await packets(alone, "v")).map(packetBytes),
        "chunk 1: packet bytes",
      );
      // Joined, with the soundtrack: the same packets, timestamps and audio.
      assert.deepEqual(await packets(lambda.video, "v"), localVideo);
      assert.deepEqual(await packets(lambda.video, "a"), await packets(same, "a"));
      // And the files themselves, byte for byte.
      const [x, y] = await Promise.all([Deno.readFile(lambda.video), Deno.readFile(same)]);
      assert.equal(x.length, y.length, "file sizes");
      assert.ok(x.every((byte, i) => byte === y[i]), "the Lambda render's file is vid render's");

      // The contrast: the system ffmpeg's x264 encodes the same frames into other bytes.
      const cores = {
        lambda: await x264Core(lambda.video),
        same: await x264Core(same),
        system: await x264Core(system),
      };
      console.log(
        `x264 core: Lambda ${cores.lambda}, local with VID_FFMPEG ${cores.same}, ` +
          `local with the system ffmpeg ${cores.system}`,
      );
      assert.equal(cores.lambda, "157");
      assert.equal(cores.same, cores.lambda);
      assert.notEqual(cores.system, cores.lambda, "the system ffmpeg is another x264 build");
      const systemVideo = await packets(system, "v");
      assert.equal(systemVideo.length, 15);
      const differing =
        systemVideo.filter((line, i) => packetBytes(line) !== packetBytes(localVideo[i])).length;
      assert.ok(differing > 0, "the system ffmpeg's packets differ from Lambda's (15 of 15 here)");
    });

    // One chunk, in the first render's TMPDIR (its packaged Chromium is inflated there, as in
    // a warm container): the two-chunk join is the first test's.
    it("the screenshot capture path works with the packaged Chromium too", async () => {
      const { result, captures, video } = await renderOnLambdaPath("r-runtime-shots", {
        VID_CAPTURE: "screenshot",
      }, { chunkSize: 15, tmp: packagedTmp });
      assert.equal(result.assembled.audio, true);
      assert.deepEqual(captures, ["screenshot"]);
      await checkVideo(video);
    });
  });
});
