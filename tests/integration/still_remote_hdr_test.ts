/**
 * `vid still`, remote media from variables, missing project files and `--hdr`, through
 * the real CLI: image pixels equal the video frame, a remote URL is downloaded once per
 * render whatever the worker count, a missing file fails by name, and HDR output carries
 * the documented codec and colour tags.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import {
  compositionHtml,
  makeProject,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  runVid,
} from "../helpers.ts";

const FADE = {
  head:
    `<style>@keyframes fade { from { background: rgb(0,0,0) } to { background: rgb(0,255,0) } }</style>`,
};
const FADE_BODY = `<div style="position:absolute;inset:0;animation:fade 1s linear both"></div>`;

async function imagePixel(file: string, x: number, y: number): Promise<number[]> {
  const out = await new Deno.Command("ffmpeg", {
    args: [
      "-v",
      "error",
      "-i",
      file,
      "-vf",
      `format=rgb24,crop=1:1:${x}:${y}`,
      "-f",
      "rawvideo",
      "-",
    ],
    stdout: "piped",
  }).output();
  return [...out.stdout];
}

describe("vid still", () => {
  it("writes the frame at --time / --frame as PNG or JPEG with the video's pixels", async () => {
    const dir = await makeProject(compositionHtml(FADE_BODY, FADE));
    const png = await runVid(["still", dir, "--time", "0.5", "-o", `${dir}/half.png`, "--json"]);
    assert.equal(png.code, 0, png.stderr);
    const summary = JSON.parse(png.stdout);
    assert.equal(summary.frame, 15);
    assert.equal(summary.imageFormat, "png");
    const pixel = await imagePixel(`${dir}/half.png`, 160, 90);
    assert.ok(near(pixel, [0, 128, 0], 2), rgb(pixel));
    const jpg = await runVid(["still", dir, "--frame", "29", "-o", `${dir}/last.jpg`]);
    assert.equal(jpg.code, 0, jpg.stderr);
    const bytes = await Deno.readFile(`${dir}/last.jpg`);
    assert.deepEqual([...bytes.slice(0, 2)], [0xff, 0xd8], "not a JPEG");
    assert.ok(near(await imagePixel(`${dir}/last.jpg`, 160, 90), [0, 246, 0], 4));
    await Deno.remove(dir, { recursive: true });
  });

  it("a PNG keeps the page's transparency; --background flattens it; a JPEG is on white", async () => {
    const dir = await makeProject(compositionHtml(
      `<div style="position:absolute;left:140px;top:70px;width:40px;height:40px;background:#0000ff"></div>`,
      { head: "<style>html, body { background: transparent; }</style>" },
    ));
    const alpha = async (file: string, x: number, y: number): Promise<number[]> => {
      const out = await new Deno.Command("ffmpeg", {
        args: [
          "-v",
          "error",
          "-i",
          file,
          "-vf",
          `format=rgba,crop=1:1:${x}:${y}`,
          "-f",
          "rawvideo",
          "-",
        ],
        stdout: "piped",
      }).output();
      return [...out.stdout];
    };
    const png = await runVid(["still", dir, "-o", `${dir}/clear.png`]);
    assert.equal(png.code, 0, png.stderr);
    assert.equal((await alpha(`${dir}/clear.png`, 0, 0))[3], 0, "the corner is transparent");
    assert.deepEqual(await alpha(`${dir}/clear.png`, 160, 90), [0, 0, 255, 255]);
    const flat = await runVid(["still", dir, "-o", `${dir}/flat.png`, "--background", "red"]);
    assert.equal(flat.code, 0, flat.stderr);
    assert.deepEqual(await alpha(`${dir}/flat.png`, 0, 0), [255, 0, 0, 255]);
    assert.deepEqual(await alpha(`${dir}/flat.png`, 160, 90), [0, 0, 255, 255]);
    const jpg = await runVid(["still", dir, "-o", `${dir}/white.jpg`]);
    assert.equal(jpg.code, 0, jpg.stderr);
    assert.ok(near(await imagePixel(`${dir}/white.jpg`, 0, 0), [255, 255, 255], 3));
    const bad = await runVid(["still", dir, "-o", `${dir}/bad.png`, "--background", "blurple"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--background: must be a CSS colour/);
    await Deno.remove(dir, { recursive: true });
  });

  it("rejects a frame outside the composition, both --frame and --time, and a bad extension", async () => {
    const dir = await makeProject(compositionHtml(FADE_BODY, FADE));
    const outside = await runVid(["still", dir, "--frame", "30"]);
    assert.equal(outside.code, 2);
    assert.match(outside.stderr, /--frame.*frames 0-29/);
    const both = await runVid(["still", dir, "--frame", "1", "--time", "0.5"]);
    assert.equal(both.code, 2);
    assert.match(both.stderr, /--frame or --time, not both/);
    const gif = await runVid(["still", dir, "-o", `${dir}/x.gif`]);
    assert.equal(gif.code, 2);
    assert.match(gif.stderr, /--output.*\.png, \.jpg or \.jpeg/);
    const left = [...Deno.readDirSync(dir)].map((e) => e.name);
    assert.deepEqual(left, ["index.html"]);
    await Deno.remove(dir, { recursive: true });
  });
});

describe("remote media and missing files", () => {
  it("downloads a remote URL from a variable once per render, for every worker", async () => {
    const png = await new Deno.Command("ffmpeg", {
      args: [
        "-v",
        "error",
        "-f",
        "lavfi",
        "-i",
        "color=c=0x0000ff:s=32x32",
        "-frames:v",
        "1",
        "-f",
        "image2pipe",
        "-c:v",
        "png",
        "-",
      ],
      stdout: "piped",
    }).output();
    let requests = 0;
    const server = createServer((_request, response) => {
      requests++;
      response.writeHead(200, { "content-type": "image/png" }).end(png.stdout);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    const dir = await makeProject(compositionHtml(
      `<img id="logo" style="position:absolute;inset:0;width:320px;height:180px">`,
      {
        duration: 3,
        variables: [{ id: "logo", type: "string", default: "" }],
        after:
          `<script>document.getElementById("logo").src = window.__vid.getVariables().logo;</script>`,
      },
    ));
    try {
      const result = await runVid([
        "render",
        dir,
        "-o",
        `${dir}/out.mp4`,
        "--workers",
        "2",
        "--variables",
        JSON.stringify({ logo: `http://127.0.0.1:${port}/logo.png` }),
        "--json",
      ]);
      assert.equal(result.code, 0, result.stderr);
      assert.ok(JSON.parse(result.stdout).chunks >= 2, "expected several chunks");
      assert.equal(requests, 1, "the remote logo was downloaded more than once");
      const series = await pixelSeries(`${dir}/out.mp4`, 160, 90);
      for (const frame of [0, 45, 89]) {
        assert.ok(near(series[frame], [0, 0, 255], 8), `frame ${frame}: ${rgb(series[frame])}`);
      }
    } finally {
      server.close();
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("fails naming a remote URL that cannot be downloaded, and the variable", async () => {
    const dir = await makeProject(compositionHtml(`<img id="logo">`, {
      variables: [{ id: "logo", type: "string", default: "" }],
    }));
    const result = await runVid([
      "render",
      dir,
      "-o",
      `${dir}/out.mp4`,
      "--variables",
      '{"logo":"http://127.0.0.1:9/missing.png"}',
    ]);
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /variable "logo": cannot download http:\/\/127\.0\.0\.1:9\/missing\.png/,
    );
    assert.ok(!(await Deno.stat(`${dir}/out.mp4`).catch(() => undefined)));
    await Deno.remove(dir, { recursive: true });
  });

  it("fails naming project files the page asks for that do not exist", async () => {
    const dir = await makeProject(compositionHtml(
      `<img src="assets/logo.png"><div style="font-family: Brand">x</div>`,
      { head: `<style>@font-face { font-family: Brand; src: url(fonts/brand.woff2); }</style>` },
    ));
    const result = await runVid(["render", dir, "-o", `${dir}/out.mp4`]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /assets\/logo\.png/);
    assert.match(result.stderr, /fonts\/brand\.woff2/);
    assert.ok(!(await Deno.stat(`${dir}/out.mp4`).catch(() => undefined)));
    await Deno.remove(dir, { recursive: true });
  });
});

describe("vid render --hdr", () => {
  it("writes 10-bit HEVC tagged BT.2020 + HLG, and refuses webm", async () => {
    const dir = await makeProject(compositionHtml(FADE_BODY, FADE));
    const result = await runVid(["render", dir, "--hdr", "-o", `${dir}/hdr.mp4`, "--json"]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(JSON.parse(result.stdout).hdr, true);
    const out = await new Deno.Command("ffprobe", {
      args: [
        "-v",
        "error",
        "-show_entries",
        "stream=codec_name,profile,pix_fmt,color_transfer,color_primaries,color_space",
        "-of",
        "json",
        `${dir}/hdr.mp4`,
      ],
      stdout: "piped",
    }).output();
    const stream = JSON.parse(new TextDecoder().decode(out.stdout)).streams[0];
    assert.deepEqual(
      [
        stream.codec_name,
        stream.profile,
        stream.pix_fmt,
        stream.color_transfer,
        stream.color_primaries,
      ],
      ["hevc", "Main 10", "yuv420p10le", "arib-std-b67", "bt2020"],
    );
    assert.equal((await probeVideo(`${dir}/hdr.mp4`)).frames, 30);
    const webm = await runVid(["render", dir, "--hdr", "--format", "webm"]);
    assert.equal(webm.code, 2);
    assert.match(webm.stderr, /--hdr/);
    await Deno.remove(dir, { recursive: true });
  });
});
