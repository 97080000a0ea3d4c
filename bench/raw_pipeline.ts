/**
 * The raw capture+encode pipeline: the least a frame-exact render of a composition can do
 * with vid's parts, and the baseline the perf guard (bench/perf_guard.ts) measures `vid
 * render` against in the same run. One process: serve the project, launch the capture
 * browser (BeginFrame probe included), open one window, load the page, then for every
 * frame seek + capture + hand the image to the encoder (mp4, quality "standard"), and
 * close. No media discovery, no chunk plan, no join, no audio: what vid adds over this is
 * what the guard watches.
 *
 * ```sh
 * deno run -A bench/raw_pipeline.ts <project dir> <output.mp4>
 * ```
 *
 * @module
 */

import { readComposition } from "../src/composition/composition.ts";
import { parseFrameRate } from "../src/composition/frame_rate.ts";
import { navigate, openPage } from "../src/render/browser.ts";
import { createCapturer, seekFrame } from "../src/render/capture.ts";
import { launchForCapture } from "../src/render/capture_mode.ts";
import { startEncoder } from "../src/render/encode.ts";
import { serveProject } from "../src/render/serve.ts";
import { requireFfmpeg } from "../src/render/system.ts";
import { runtimeScript } from "../src/runtime/page_runtime.ts";

/** Renders `dir`'s composition at `fps` into `output` the raw way; returns the frame count. */
export async function rawPipeline(dir: string, output: string, fps = 30): Promise<number> {
  const composition = await readComposition(dir);
  const frames = Math.round(composition.duration * fps);
  const ffmpeg = await requireFfmpeg();
  const server = await serveProject(dir);
  const browser = await launchForCapture("auto");
  try {
    const page = await openPage(browser, {
      width: composition.width,
      height: composition.height,
      initScript: runtimeScript({
        variables: {},
        seed: 1,
        epochMs: 0,
        fps,
        readyTimeoutMs: 30000,
      }),
    });
    await navigate(page, server.url + "index.html");
    const capturer = createCapturer(page, { mode: browser.mode, format: "jpeg", fps });
    const encoder = startEncoder({
      ffmpeg,
      output,
      frameRate: parseFrameRate(fps),
      format: "mp4",
      quality: "standard",
      width: composition.width,
      height: composition.height,
      frameFormat: "jpeg",
    });
    for (let frame = 0; frame < frames; frame++) {
      await seekFrame(page, frame);
      await encoder.write(await capturer.capture());
    }
    await encoder.finish();
  } finally {
    await browser.close();
    await server.close();
  }
  return frames;
}

if (import.meta.main) {
  const [dir, output] = Deno.args;
  if (!dir || !output) throw new Error("usage: raw_pipeline.ts <project dir> <output.mp4>");
  await rawPipeline(dir, output);
}
