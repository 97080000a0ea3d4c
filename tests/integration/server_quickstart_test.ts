/**
 * The README's server quickstart (examples/server_quickstart.sh) runs as written: start
 * the server, create a user and key, upload a zip, render, poll and download a playable
 * video, and leaves no server process behind. Keeps the documented script from rotting.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { compositionHtml, makeProject, probeVideo, ROOT } from "../helpers.ts";

describe("examples/server_quickstart.sh", () => {
  it("ends with a playable video downloaded from the server", async () => {
    const project = await makeProject(compositionHtml(
      `<h1 id="t" style="color:#fff;margin:0"></h1>`,
      {
        variables: [{ id: "title", type: "string", default: "x" }],
        after: `<script>t.textContent = window.__vid.getVariables().title;</script>`,
      },
    ));
    const output = `${project}/out/video.mp4`;
    // The script's data folder (mktemp -d) lands here, so its server is recognisable.
    const tmp = await Deno.makeTempDir({ prefix: "vid-quickstart-" });
    const result = await new Deno.Command("bash", {
      args: [`${ROOT}examples/server_quickstart.sh`, project, output],
      cwd: ROOT,
      env: { TMPDIR: tmp },
      stdout: "piped",
      stderr: "piped",
      stdin: "null",
    }).output();
    const text = new TextDecoder().decode(result.stdout) + new TextDecoder().decode(result.stderr);
    assert.equal(result.code, 0, text);
    assert.match(text, /completed 1/);
    const info = await probeVideo(output);
    assert.deepEqual([info.codec, info.frames, info.width, info.height], ["h264", 30, 1920, 1080]);
    assert.deepEqual(await processesMentioning(tmp), [], "the script's server must be stopped");
    await Deno.remove(project, { recursive: true });
    await Deno.remove(tmp, { recursive: true });
  });
});

/** Command lines of running processes that mention `text` (waits up to 3 s for exits). */
async function processesMentioning(text: string): Promise<string[]> {
  let found: string[] = [];
  for (const deadline = Date.now() + 3000; Date.now() < deadline;) {
    found = [];
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const cmdline = (await Deno.readTextFile(`/proc/${entry.name}/cmdline`)).replaceAll(
          "\0",
          " ",
        );
        if (cmdline.includes(text)) found.push(`${entry.name}: ${cmdline}`);
      } catch {
        // exited meanwhile
      }
    }
    if (found.length === 0) return found;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return found;
}
