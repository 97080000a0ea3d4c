/**
 * The `<video>` proxy cache: proxies are made once per source content (and proxy settings)
 * into the cache folder (`VID_CACHE_DIR` here, so tests never touch the user's cache),
 * reused by the next render without running ffmpeg, remade when the source's bytes
 * change, written atomically so concurrent renders of an empty cache both succeed, and
 * reported as progress naming the file. Where the cache lives follows the platform rules.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { cacheDir } from "../../src/util/cache_dir.ts";
import { compositionHtml, frameHashes, makeProject, pixelSeries, runVid } from "../helpers.ts";

const FULL = "position:absolute;left:0;top:0;width:320px;height:180px;object-fit:fill";

/** A 1 s, 30 fps 320x180 clip of one flat grey. */
async function clip(file: string, grey: number): Promise<void> {
  const out = await new Deno.Command("ffmpeg", {
    args: [
      "-hide_banner",
      "-nostdin",
      "-y",
      "-f",
      "lavfi",
      "-i",
      `color=c=0x${grey.toString(16).padStart(2, "0").repeat(3)}:s=320x180:r=30:d=1`,
      "-pix_fmt",
      "yuv420p",
      file,
    ],
    stdout: "null",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
}

async function cacheFiles(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(join(dir, "proxies"))) names.push(entry.name);
  return names.sort();
}

let project: string;
let scratch: string;

before(async () => {
  project = await makeProject(
    compositionHtml(`<video src="clip.mp4" muted style="${FULL}"></video>`, {
      id: "cached",
      duration: 1,
    }),
  );
  await clip(join(project, "clip.mp4"), 0x60);
  scratch = await Deno.makeTempDir({ prefix: "vid-media-cache-" });
});

after(async () => {
  await Deno.remove(project, { recursive: true });
  await Deno.remove(scratch, { recursive: true });
});

/** Renders the project at 5 fps with `cache` as the cache folder. */
function render(cache: string, output: string) {
  return runVid(["render", project, "--fps", "5", "--workers", "1", "-o", output], {
    env: { VID_CACHE_DIR: cache },
  });
}

describe("video proxy cache", () => {
  it("the first render converts once into the cache, the second reuses it without ffmpeg", async () => {
    const cache = join(scratch, "one");
    const first = await render(cache, join(scratch, "first.mp4"));
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /preparing media clip\.mp4 \(1\/1\) 0%/);
    assert.match(first.stderr, /preparing media clip\.mp4 \(1\/1\) 100%/);
    const files = await cacheFiles(cache);
    assert.equal(files.length, 2, files.join(", "));
    assert.match(files[0], /^[0-9a-f]{64}\.webm$/);
    assert.equal(files[1], `${files[0]}.json`);
    const proxy = join(cache, "proxies", files[0]);
    const made = (await Deno.stat(proxy)).mtime?.getTime();

    const second = await render(cache, join(scratch, "second.mp4"));
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /preparing media clip\.mp4 \(1\/1\) cached/);
    assert.doesNotMatch(second.stderr, /\d+%.*clip|clip\.mp4 \(1\/1\) \d+%/);
    assert.deepEqual(await cacheFiles(cache), files);
    assert.equal((await Deno.stat(proxy)).mtime?.getTime(), made, "the proxy was rewritten");
    assert.deepEqual(
      await frameHashes(join(scratch, "second.mp4")),
      await frameHashes(join(scratch, "first.mp4")),
    );
  });

  it("changed source bytes make a new proxy, and the render shows the new picture", async () => {
    const cache = join(scratch, "change");
    const before = await render(cache, join(scratch, "grey60.mp4"));
    assert.equal(before.code, 0, before.stderr);
    const other = await makeProject(
      compositionHtml(`<video src="clip.mp4" muted style="${FULL}"></video>`, {
        id: "cached",
        duration: 1,
      }),
    );
    try {
      await clip(join(other, "clip.mp4"), 0xc0);
      const changed = await runVid(
        ["render", other, "--fps", "5", "--workers", "1", "-o", join(scratch, "greyc0.mp4")],
        { env: { VID_CACHE_DIR: cache } },
      );
      assert.equal(changed.code, 0, changed.stderr);
      assert.match(changed.stderr, /clip\.mp4 \(1\/1\) 100%/);
    } finally {
      await Deno.remove(other, { recursive: true });
    }
    assert.equal((await cacheFiles(cache)).filter((f) => f.endsWith(".webm")).length, 2);
    const [a] = await pixelSeries(join(scratch, "grey60.mp4"), 160, 90);
    const [b] = await pixelSeries(join(scratch, "greyc0.mp4"), 160, 90);
    assert.ok(Math.abs(a[0] - 0x60) <= 6, `grey ${a[0]}`);
    assert.ok(Math.abs(b[0] - 0xc0) <= 6, `grey ${b[0]}`);
  });

  it("two renders filling an empty cache at once both succeed with the same frames", async () => {
    const cache = join(scratch, "race");
    const [a, b] = await Promise.all([
      render(cache, join(scratch, "race-a.mp4")),
      render(cache, join(scratch, "race-b.mp4")),
    ]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(b.code, 0, b.stderr);
    const files = await cacheFiles(cache);
    assert.equal(files.length, 2, `temp files left: ${files.join(", ")}`);
    assert.deepEqual(
      await frameHashes(join(scratch, "race-a.mp4")),
      await frameHashes(join(scratch, "race-b.mp4")),
    );
  });

  it("lives in VID_CACHE_DIR, /tmp on Lambda, XDG_CACHE_HOME, else ~/.cache/vid", () => {
    assert.equal(cacheDir({ VID_CACHE_DIR: "/srv/c", HOME: "/home/u" }), "/srv/c");
    assert.equal(cacheDir({ AWS_LAMBDA_FUNCTION_NAME: "f", HOME: "/home/u" }), "/tmp/vid-cache");
    assert.equal(cacheDir({ XDG_CACHE_HOME: "/x", HOME: "/home/u" }), "/x/vid");
    assert.equal(cacheDir({ HOME: "/home/u" }), "/home/u/.cache/vid");
  });
});
