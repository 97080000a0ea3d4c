/**
 * The media template of the "done when": a background video, a music track, a
 * voice clip at 1.5 s, a brand font and a remote logo from a variable render together
 * correctly through `vid render`, checked in the frames and the audio timing.
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

async function ffmpeg(args: string[]): Promise<Uint8Array> {
  const out = await new Deno.Command("ffmpeg", {
    args: ["-hide_banner", "-nostdin", "-v", "error", ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (out.code !== 0) {
    throw new Error(`ffmpeg ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
  return out.stdout;
}

/** Mean volume (dB) of the output's audio between `start` and `start + length`. */
async function meanVolume(file: string, start: number, length: number): Promise<number> {
  const out = await new Deno.Command("ffmpeg", {
    args: [
      "-hide_banner",
      "-ss",
      String(start),
      "-t",
      String(length),
      "-i",
      file,
      "-vn",
      "-af",
      "volumedetect",
      "-f",
      "null",
      "-",
    ],
    stderr: "piped",
  }).output();
  const match = new TextDecoder().decode(out.stderr).match(/mean_volume: (-?[\d.]+) dB/);
  assert.ok(match, "no volume measured");
  return Number(match[1]);
}

describe("media template (video + music + voice + brand font + remote logo)", () => {
  it("renders every element frame-exactly with the voice at 1.5 s", async () => {
    const dir = await makeProject("");
    // Background clip: frame k is grey 16 + 4k (limited range), 30 fps, 3 s.
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "color=black:s=320x180:r=30:d=3,format=yuv444p,geq=lum='16+2*N':cb=128:cr=128",
      "-c:v",
      "libx264",
      "-pix_fmt",
      "yuv420p",
      "-g",
      "30",
      `${dir}/background.mp4`,
    ]);
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=220:duration=3:sample_rate=48000",
      "-af",
      "volume=0.5",
      `${dir}/music.wav`,
    ]);
    await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "sine=frequency=880:duration=0.5:sample_rate=48000",
      `${dir}/voice.wav`,
    ]);
    await Deno.mkdir(`${dir}/fonts`);
    await Deno.copyFile(
      "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
      `${dir}/fonts/brand.ttf`,
    );
    const logo = await ffmpeg([
      "-f",
      "lavfi",
      "-i",
      "color=c=0xff0000:s=32x32",
      "-frames:v",
      "1",
      "-f",
      "image2pipe",
      "-c:v",
      "png",
      "-",
    ]);
    let logoRequests = 0;
    const server = createServer((_request, response) => {
      logoRequests++;
      response.writeHead(200, { "content-type": "image/png" }).end(logo);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const logoUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}/logo.png`;
    await Deno.writeTextFile(
      `${dir}/index.html`,
      compositionHtml(
        `<video src="background.mp4" style="position:absolute;left:0;top:0;width:320px;height:180px;object-fit:fill"></video>
         <audio src="music.wav"></audio>
         <audio src="voice.wav" data-start="1.5"></audio>
         <img id="logo" style="position:absolute;right:0;top:0;width:40px;height:40px">
         <div id="font-ok" style="position:absolute;left:0;bottom:0;width:40px;height:40px;background:#000"></div>
         <div style="position:absolute;left:60px;top:60px;font:24px Brand;color:#fff">Brand</div>`,
        {
          duration: 3,
          head: `<style>@font-face { font-family: Brand; src: url(fonts/brand.ttf); }</style>`,
          variables: [{ id: "logo", type: "string", label: "Logo URL", default: "" }],
          after: `<script>
            document.getElementById("logo").src = window.__vid.getVariables().logo;
            window.__vid.onSeek(() => {
              const ok = document.fonts.check("24px Brand") &&
                [...document.fonts].some((f) => f.family === "Brand" && f.status === "loaded");
              document.getElementById("font-ok").style.background = ok ? "#00ff00" : "#ff00ff";
            });
          </script>`,
        },
      ),
    );
    try {
      const output = `${dir}/out.mp4`;
      const result = await runVid([
        "render",
        dir,
        "-o",
        output,
        "--workers",
        "2",
        "--variables",
        JSON.stringify({ logo: logoUrl }),
        "--json",
      ]);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(logoRequests, 1);
      const info = await probeVideo(output);
      assert.equal(info.frames, 90);
      assert.ok(info.hasAudio);

      const background = await pixelSeries(output, 100, 40);
      const source = await pixelSeries(`${dir}/background.mp4`, 100, 40);
      for (const frame of [0, 29, 30, 59, 60, 89]) {
        assert.ok(
          near(background[frame], source[frame], 4),
          `background frame ${frame}: ${rgb(background[frame])} vs source ${rgb(source[frame])}`,
        );
      }
      const logoPixels = await pixelSeries(output, 300, 20);
      const fontMarker = await pixelSeries(output, 20, 160);
      for (const frame of [0, 45, 89]) {
        assert.ok(
          near(logoPixels[frame], [255, 0, 0], 12),
          `logo at ${frame}: ${rgb(logoPixels[frame])}`,
        );
        assert.ok(
          near(fontMarker[frame], [0, 255, 0], 12),
          `brand font at ${frame}: ${rgb(fontMarker[frame])}`,
        );
      }

      const musicOnly = await meanVolume(output, 0.5, 0.8);
      const withVoice = await meanVolume(output, 1.6, 0.3);
      const afterVoice = await meanVolume(output, 2.2, 0.6);
      assert.ok(
        withVoice > musicOnly + 3,
        `voice not audible at 1.5 s: ${withVoice} vs ${musicOnly} dB`,
      );
      assert.ok(
        Math.abs(afterVoice - musicOnly) < 1,
        `after the voice ${afterVoice} vs ${musicOnly} dB`,
      );
      assert.ok(musicOnly > -40, `music missing: ${musicOnly} dB`);
    } finally {
      server.close();
      await Deno.remove(dir, { recursive: true });
    }
  });
});
