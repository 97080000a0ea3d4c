/**
 * `vid render-batch` (local) and the SDK's `renderBatchLocal`: a small JSONL batch with
 * broken, blank and failing rows (outputs checked by colour in four formats), the manifest,
 * resume (rows already rendered are skipped, changed or missing ones render again), CSV
 * rows typed by the declarations, interruption through the SDK's signal and through
 * SIGINT (exit 130, manifest written, a browser per row in flight, nothing left running).
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { renderBatchLocal } from "../../mod.ts";
import {
  compositionHtml,
  makeProject,
  near,
  pixelSeries,
  probeVideo,
  rgb,
  ROOT,
  runVid,
  waitFor,
} from "../helpers.ts";

/** The page's background is the `color` variable; `boom` makes the page throw. */
function batchHtml(duration: number): string {
  return compositionHtml(
    `<div id="box" style="position:absolute;left:0;top:0;height:20px;background:#fff"></div>`,
    {
      id: "batch",
      duration,
      variables: [
        { id: "color", type: "color", default: "#000000" },
        { id: "n", type: "number", default: 1 },
        { id: "boom", type: "boolean", default: false },
      ],
      after: `<script>
const v = window.__vid.getVariables();
document.body.style.background = v.color;
document.getElementById("root").style.background = v.color;
document.getElementById("box").style.width = (v.n * 20) + "px";
if (v.boom === true) setTimeout(() => { throw new Error("boom requested by the row"); }, 100);
</script>`,
    },
  );
}

const ROWS = [
  `{"outputKey":"red.mp4","variables":{"color":"#ff0000"}}`,
  `{"outputKey":"green.webm","variables":{"color":"#00ff00"}}`,
  ``,
  `{"outputKey":"blue.gif","variables":{"color":"#0000ff"}}`,
  `{"outputKey": not json`,
  `{"outputKey":"seq/%03d.png","variables":{"color":"#ffff00"}}`,
  `{"outputKey":"red.mp4","variables":{}}`,
  `{"outputKey":"boom.mp4","variables":{"boom":true}}`,
].join("\n") + "\n";

const VIDIGNORE = "*.jsonl\n*.csv\n";

let project: string;

before(async () => {
  // Batch files are not part of the page: ignored, editing one changes no row's renderId.
  project = await makeProject(batchHtml(0.5), { "rows.jsonl": ROWS, ".vidignore": VIDIGNORE });
});

after(async () => {
  await Deno.remove(project, { recursive: true });
});

interface Row {
  line: number;
  outputKey: string | null;
  status: string;
  executionArn: null;
  error: string | null;
  renderId?: string;
  output?: string;
  bytes?: number;
}

function statuses(rows: Row[]): string[] {
  return rows.map((r) => `${r.line} ${r.status}`);
}

async function batch(args: string[]): Promise<{ code: number; rows: Row[]; stderr: string }> {
  const result = await runVid([
    "render-batch",
    project,
    "--fps",
    "4",
    "--json",
    "--out-dir",
    `${project}/renders`,
    ...args,
  ]);
  let rows: Row[] = [];
  try {
    rows = JSON.parse(result.stdout);
  } catch {
    assert.fail(`no JSON manifest (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
  return { code: result.code, rows, stderr: result.stderr };
}

describe("vid render-batch (local)", () => {
  const out = () => `${project}/renders`;

  it("renders 4 good rows in 4 formats; broken, duplicate, blank and failing rows are reported", async () => {
    const { code, rows, stderr } = await batch([
      "--batch",
      `${project}/rows.jsonl`,
      "--concurrency",
      "2",
    ]);
    assert.equal(code, 1, "a failed row makes the exit status 1");
    assert.deepEqual(statuses(rows), [
      "1 rendered",
      "2 rendered",
      "3 skipped",
      "4 rendered",
      "5 failed-to-start",
      "6 rendered",
      "7 failed-to-start",
      "8 failed",
    ], stderr);
    assert.match(rows[4].error!, /^line 5: not valid JSON/);
    assert.match(rows[6].error!, /^line 7: duplicate outputKey red\.mp4 \(first on line 1\)/);
    assert.match(rows[7].error!, /^line 8: .*boom requested by the row/);
    assert.ok(rows.every((r) => r.executionArn === null));
    assert.match(rows[0].renderId!, /^b-[0-9a-f]{40}$/);

    const colours: [string, number[]][] = [
      [`${out()}/red.mp4`, [255, 0, 0]],
      [`${out()}/green.webm`, [0, 255, 0]],
      [`${out()}/blue.gif`, [0, 0, 255]],
    ];
    for (const [file, want] of colours) {
      assert.equal((await probeVideo(file)).frames, 2, file);
      const [c] = await pixelSeries(file, 200, 100);
      assert.ok(near(c, want, 10), `${file}: ${rgb(c)}`);
    }
    const [yellow] = await pixelSeries(`${out()}/seq/001.png`, 200, 100);
    assert.ok(near(yellow, [255, 255, 0]), rgb(yellow));
    await assert.rejects(Deno.stat(`${out()}/boom.mp4`), "a failed row leaves no file");
    const manifest = JSON.parse(await Deno.readTextFile(`${out()}/vid-batch-manifest.json`));
    assert.deepEqual(manifest, rows);
  });

  it("a rerun skips intact rows; a missing output and a changed row render again", async () => {
    const mtime = async (f: string) => (await Deno.stat(`${out()}/${f}`)).mtime!.getTime();
    const redBefore = await mtime("red.mp4");
    const again = await batch(["--batch", `${project}/rows.jsonl`]);
    assert.deepEqual(statuses(again.rows), [
      "1 already-rendered",
      "2 already-rendered",
      "3 skipped",
      "4 already-rendered",
      "5 failed-to-start",
      "6 already-rendered",
      "7 failed-to-start",
      "8 failed",
    ]);
    assert.equal(await mtime("red.mp4"), redBefore);

    await Deno.remove(`${out()}/green.webm`);
    await Deno.writeTextFile(
      `${project}/rows.jsonl`,
      ROWS.replace(`"color":"#0000ff"`, `"color":"#ff00ff"`),
    );
    const third = await batch(["--batch", `${project}/rows.jsonl`]);
    assert.deepEqual(statuses(third.rows).slice(0, 4), [
      "1 already-rendered",
      "2 rendered",
      "3 skipped",
      "4 rendered",
    ]);
    const [magenta] = await pixelSeries(`${out()}/blue.gif`, 10, 170);
    assert.ok(near(magenta, [255, 0, 255], 10), rgb(magenta));
    await Deno.writeTextFile(`${project}/rows.jsonl`, ROWS);
  });

  it("CSV: header of ids plus outputKey, cells typed by the declarations (strict passes)", async () => {
    await Deno.writeTextFile(
      `${project}/rows.csv`,
      `outputKey,color,n,boom\r\n` +
        `csv/wide.mp4,#00ffff,8,false\r\n` +
        `"csv/quoted, name.mp4",#ff8000,,\r\n` +
        `csv/short.mp4,#ffffff\r\n`,
    );
    const { code, rows, stderr } = await batch([
      "--batch",
      `${project}/rows.csv`,
      "--strict-variables",
      "--out-dir",
      `${project}/renders-csv`,
    ]);
    assert.equal(code, 1, stderr);
    assert.deepEqual(statuses(rows), ["2 rendered", "3 rendered", "4 failed-to-start"]);
    assert.match(rows[2].error!, /line 4: 2 cells, but the header has 4 columns/);
    // n = 8 (a number, or strict mode would have refused it): the white box is 160 px wide.
    const wide = `${project}/renders-csv/csv/wide.mp4`;
    const [inBox] = await pixelSeries(wide, 150, 10);
    const [pastBox] = await pixelSeries(wide, 170, 10);
    assert.ok(near(inBox, [255, 255, 255], 10), rgb(inBox));
    assert.ok(near(pastBox, [0, 255, 255], 10), rgb(pastBox));
    const [orange] = await pixelSeries(`${project}/renders-csv/csv/quoted, name.mp4`, 200, 100);
    assert.ok(near(orange, [255, 128, 0], 10), rgb(orange));
  });

  it("a CSV without an outputKey column is one failed-to-start row naming the header", async () => {
    await Deno.writeTextFile(`${project}/nokey.csv`, "color,n\n#ff0000,1\n");
    const { code, rows } = await batch(["--batch", `${project}/nokey.csv`, "--dry-run"]);
    assert.equal(code, 1);
    assert.match(rows[0].error!, /"outputKey" column.*got color, n/);
  });
});

describe("renderBatchLocal (SDK): output keys", () => {
  it("--dry-run: keys that leave the output folder or name no format fail to start", async () => {
    const dir = await makeProject(batchHtml(0.5));
    const file = `${dir}/rows.jsonl`;
    await Deno.writeTextFile(
      file,
      ["ok/a.gif", "../escape.mp4", "/abs.mp4", "b.mkv", "c.mp4"].map((key) =>
        JSON.stringify({ outputKey: key })
      ).join("\n"),
    );
    const { rows } = await renderBatchLocal({
      target: dir,
      batchFile: file,
      outDir: `${dir}/out`,
      dryRun: true,
      onWarning: () => {},
    });
    assert.deepEqual(rows.map((r) => r.status), [
      "would-invoke",
      "failed-to-start",
      "failed-to-start",
      "failed-to-start",
      "would-invoke",
    ]);
    assert.match(rows[1].error!, /^line 2: "outputKey" \.\.\/escape\.mp4 leaves the output folder/);
    assert.match(rows[2].error!, /^line 3: "outputKey" \/abs\.mp4 leaves the output folder/);
    assert.match(rows[3].error!, /^line 4: "outputKey": no output format writes \.mkv files/);
    assert.equal(rows[0].output, `${dir}/out/ok/a.gif`);
    await assert.rejects(Deno.stat(`${dir}/out`), "a dry run writes nothing");
    await Deno.remove(dir, { recursive: true });
  });
});

describe("vid render-batch checks the project before rendering", () => {
  it("a mistake no row can fix (a missing script) fails the batch before any render; --no-check skips", async () => {
    const dir = await makeProject(
      batchHtml(0.5).replace("</body>", '<script src="js/Scene.js"></script></body>'),
      { "js/scene.js": "", "rows.jsonl": ROWS, ".vidignore": VIDIGNORE },
    );
    const out = `${dir}/out`;
    const failed = await runVid([
      "render-batch",
      dir,
      "--batch",
      `${dir}/rows.jsonl`,
      "--out-dir",
      out,
    ]);
    assert.equal(failed.code, 1, failed.stderr);
    assert.match(
      failed.stderr,
      /^error: the project fails vid check \(1 error\); nothing was rendered/m,
    );
    assert.match(
      failed.stderr,
      /index\.html:\d+:\d+: error: <script src> "js\/Scene\.js": the project has "js\/scene\.js"/,
    );
    await assert.rejects(Deno.stat(out), "no render started, no manifest written");

    const json = await runVid([
      "render-batch",
      dir,
      "--batch",
      `${dir}/rows.jsonl`,
      "--out-dir",
      out,
      "--json",
    ]);
    const error = JSON.parse(json.stdout).error;
    assert.equal(error.name, "CheckFailedError");
    assert.equal(error.problems[0].kind, "missing-file");

    const skipped = await runVid([
      "render-batch",
      dir,
      "--batch",
      `${dir}/rows.jsonl`,
      "--out-dir",
      out,
      "--dry-run",
      "--no-check",
    ]);
    assert.equal(skipped.code, 1, "the bad rows of ROWS still fail to start");
    assert.match(skipped.stdout, /^5 would render/m);
    await Deno.remove(dir, { recursive: true });
  });
});

describe("renderBatchLocal (SDK): interruption and resume", () => {
  it("an abort after the first row leaves the rest not-started; a rerun renders only them", async () => {
    const dir = await makeProject(batchHtml(0.5));
    const file = `${dir}/rows.jsonl`;
    await Deno.writeTextFile(
      file,
      ["#ff0000", "#00ff00", "#0000ff"].map((c, i) =>
        JSON.stringify({ outputKey: `r${i}.mp4`, variables: { color: c } })
      ).join("\n"),
    );
    const controller = new AbortController();
    const first = await renderBatchLocal({
      target: dir,
      batchFile: file,
      outDir: `${dir}/out`,
      fps: 4,
      concurrency: 1,
      signal: controller.signal,
      onWarning: () => {},
      onRow: (row) => {
        if (row.status === "rendered") controller.abort();
      },
    });
    assert.equal(first.interrupted, true);
    assert.deepEqual(first.rows.map((r) => r.status), ["rendered", "not-started", "not-started"]);
    assert.match(first.rows[1].error!, /interrupted.*run the batch again/);
    const manifest = JSON.parse(await Deno.readTextFile(first.manifest));
    assert.deepEqual(manifest.map((r: Row) => r.status), [
      "rendered",
      "not-started",
      "not-started",
    ]);

    const second = await renderBatchLocal({
      target: dir,
      batchFile: file,
      outDir: `${dir}/out`,
      fps: 4,
      onWarning: () => {},
    });
    assert.deepEqual(second.rows.map((r) => r.status), [
      "already-rendered",
      "rendered",
      "rendered",
    ]);
    const [blue] = await pixelSeries(`${dir}/out/r2.mp4`, 100, 100);
    assert.ok(near(blue, [0, 0, 255], 10), rgb(blue));
    await Deno.remove(dir, { recursive: true });
  });
});

/** Pids of the direct children of `pid`. */
async function childrenOf(pid: number): Promise<number[]> {
  const out = await new Deno.Command("pgrep", { args: ["-P", String(pid)], stdout: "piped" })
    .output();
  return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean).map(Number);
}

function commandLine(pid: number): string {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ");
  } catch {
    return "";
  }
}

function alive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(Deno.readTextFileSync(`/proc/${pid}/status`));
  } catch {
    return false;
  }
}

describe("vid render-batch: Ctrl-C", () => {
  it("two rows in flight render in a browser each, launched once for the batch; SIGINT exits 130 with the manifest written", async () => {
    const dir = await makeProject(batchHtml(10));
    await Deno.writeTextFile(
      `${dir}/rows.jsonl`,
      ["#ff0000", "#00ff00", "#0000ff"].map((c, i) =>
        JSON.stringify({ outputKey: `r${i}.mp4`, variables: { color: c } })
      ).join("\n"),
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `${ROOT}cli.ts`,
        "render-batch",
        dir,
        "--batch",
        `${dir}/rows.jsonl`,
        "--out-dir",
        `${dir}/renders`,
        "--concurrency",
        "2",
        "--fps",
        "30",
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).spawn();
    let stderr = "";
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    const stderrDone = (async () => {
      while (true) {
        const { value, done } = await reader.read();
        if (done) break;
        stderr += value;
      }
    })();
    const deadline = Date.now() + 60000;
    while (!/0\/3 rows \(0 failed, 2 rendering\)/.test(stderr)) {
      if (Date.now() > deadline) throw new Error(`the batch never rendered:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    // The second row's browser may still be starting when both rows count as rendering.
    const browsers = await waitFor("a browser for each row in flight", async () => {
      const found = (await childrenOf(child.pid)).filter((pid) =>
        commandLine(pid).includes("--remote-debugging-port")
      );
      return found.length >= 2 ? found : undefined;
    }, { timeoutMs: 60_000 });
    assert.equal(browsers.length, 2, "two rows in flight, a browser each (never one per row)");
    child.kill("SIGINT");
    const [status, stdout] = await Promise.all([
      child.status,
      new Response(child.stdout).text(),
      stderrDone,
    ]);
    assert.equal(status.code, 130, stderr);
    assert.match(
      stdout,
      /0 rendered, 0 already rendered, 0 failed, 0 failed to start, 0 skipped, 3 not started \(interrupted\)/,
    );
    const manifest = JSON.parse(await Deno.readTextFile(`${dir}/renders/vid-batch-manifest.json`));
    assert.deepEqual(manifest.map((r: Row) => r.status), [
      "not-started",
      "not-started",
      "not-started",
    ]);
    const left = await Array.fromAsync(Deno.readDir(`${dir}/renders`));
    assert.deepEqual(left.map((e) => e.name), ["vid-batch-manifest.json"], "no partial outputs");
    await waitFor("the batch's browsers to exit", () => !browsers.some(alive), { timeoutMs: 5000 });
    await Deno.remove(dir, { recursive: true });
  });
});
