/**
 * The README's first command, as a user runs it: `deno task hello` sets up and renders
 * examples/hello to renders/hello.mp4: 150 frames of 1920x1080 at 30 fps.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { probeVideo, ROOT } from "../helpers.ts";

describe("deno task hello", () => {
  it("renders examples/hello to renders/hello.mp4 (150 frames, 1920x1080, 30 fps)", async () => {
    const output = `${ROOT}renders/hello.mp4`;
    await Deno.remove(output).catch(() => {});
    const result = await new Deno.Command(Deno.execPath(), {
      args: ["task", "hello"],
      cwd: ROOT,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(result.stdout) + new TextDecoder().decode(result.stderr);
    assert.equal(result.code, 0, text);
    const info = await probeVideo(output);
    assert.deepEqual(
      [info.codec, info.frames, info.width, info.height, info.fps],
      ["h264", 150, 1920, 1080, 30],
    );
    assert.ok(Math.abs(info.duration - 5) < 0.05, `duration ${info.duration}`);
  });
});
