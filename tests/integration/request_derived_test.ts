/**
 * The surfaces that still restated a render option's check or default now take it from the
 * declarations (`src/request/options.ts`), so they say what `vid render` says: the studio's
 * render dialog (format, quality, frame range), batch rows (`vid render-batch`,
 * `vid lambda render-batch`: a row cannot carry a render setting), the chunk planner and
 * `validateConfig` (chunk options), and `--capture`. CLI cases run a real `vid` process.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { checkBatchEntry, parseBatchLine } from "../../src/batch/entries.ts";
import { VidError } from "../../src/errors.ts";
import { ConfigError, type ExecutionInput, validateConfig } from "../../src/lambda/config.ts";
import { planChunks } from "../../src/lambda/state_machine.ts";
import { renderRequestFrom } from "../../src/preview/render_job.ts";
import { CAPTURE_PREFERENCES as RENDER_CAPTURE } from "../../src/render/capture_mode.ts";
import { chunkPlan, ChunkPlanError } from "../../src/render/chunk_plan.ts";
import { renderComposition } from "../../src/render/render.ts";
import { checkOption, OPTIONS, RenderOptionError } from "../../src/request/mod.ts";
import { compositionHtml, makeProject, runVid } from "../helpers.ts";

/** The error `run` throws, checked to be one of vid's input errors. */
async function thrown(run: () => unknown): Promise<VidError> {
  try {
    await run();
  } catch (error) {
    assert.ok(error instanceof VidError, String(error));
    return error;
  }
  assert.fail("not refused");
}

/** The detail the declaration gives for `value`. */
function detailOf(declaration: Parameters<typeof checkOption>[0], value: unknown): string {
  try {
    checkOption(declaration, value);
  } catch (error) {
    assert.ok(error instanceof RenderOptionError);
    return error.detail;
  }
  assert.fail(`${JSON.stringify(value)} passes`);
}

const execution = (config: Record<string, unknown>): ExecutionInput =>
  ({
    renderId: "r1",
    bucketName: "b",
    siteId: "site-0123456789abcdef",
    serveUrl: "https://b.s3.amazonaws.com/sites/site-0123456789abcdef/",
    outputKey: "renders/r1/out.mp4",
    config,
  }) as ExecutionInput;

describe("request, derived: the surfaces that restated a check now say what vid render says", () => {
  let project: string;

  before(async () => {
    project = await makeProject(compositionHtml("<p>hi</p>", { duration: 1 }));
  });

  after(async () => {
    await Deno.remove(project, { recursive: true }).catch(() => {});
  });

  const base = { values: {}, fps: 30, compositionId: "t", frames: 30 };

  it("studio render dialog: a bad format or quality is refused with the declaration's words", async () => {
    const format = await thrown(() => renderRequestFrom({ format: "avi" }, base));
    assert.ok(format instanceof RenderOptionError);
    assert.equal(format.field, "format");
    // The studio renders vid render's one-file formats: its words are vid render --format's.
    assert.equal(format.message, 'format: must be one of mp4, webm, mov, gif, png, got "avi"');
    assert.equal(format.detail, detailOf(OPTIONS.format, "avi"));

    const quality = await thrown(() => renderRequestFrom({ quality: "best" }, base));
    assert.equal(quality.field, "quality");
    assert.equal(quality.detail, detailOf(OPTIONS.quality, "best"));

    const ok = renderRequestFrom({ format: "webm", quality: "draft", from: 5, to: 14 }, base);
    assert.deepEqual([ok.format, ok.quality, ok.frames], ["webm", "draft", { from: 5, to: 14 }]);
  });

  it("studio render dialog: a reversed range has the words of `vid render --frames 20-3`", async () => {
    const dialog = await thrown(() => renderRequestFrom({ from: 20, to: 3 }, base));
    assert.equal(dialog.field, "frames");
    const cli = await runVid(["render", project, "--frames", "20-3", "-o", `${project}/x.mp4`]);
    assert.equal(cli.code, 2, cli.stderr);
    assert.ok(cli.stderr.includes(`--frames: ${dialog.detail}`), `${dialog.detail}\n${cli.stderr}`);
    assert.equal(await Deno.stat(`${project}/x.mp4`).catch(() => null), null);

    // Past the composition's last frame (29): named as the range, with the last frame.
    const late = await thrown(() => renderRequestFrom({ from: 0, to: 30 }, base));
    assert.equal(late.field, "frames");
    assert.match(late.message, /^frames: must end at or before the last frame, 29, got 0-30$/);
    // A half-open range takes the other end from the composition.
    assert.deepEqual(renderRequestFrom({ from: 10 }, base).frames, { from: 10, to: 29 });
  });

  it("batch rows: a row naming a render setting fails to start, naming the line and the flag", () => {
    for (
      const [key, flag] of [["fps", "--fps"], ["quality", "--quality"], [
        "chunkSize",
        "--chunk-size",
      ]]
    ) {
      const parsed = checkBatchEntry({ outputKey: "a.mp4", [key]: 0 }, 7, []);
      assert.equal(parsed.kind, "invalid");
      assert.ok(parsed.kind === "invalid");
      assert.equal(parsed.outputKey, "a.mp4");
      assert.equal(
        parsed.error,
        `line 7: ${key}: is not a row field (a row carries "outputKey" and "variables"); ` +
          `set ${flag} for the whole batch`,
      );
    }
    // Other keys are not render settings: left alone, as before.
    assert.equal(parseBatchLine('{"outputKey":"a.mp4","note":"x"}', 1, []).kind, "entry");
  });

  it("vid render-batch --dry-run: the row with fps 0 fails to start, the other is checked", async () => {
    await Deno.writeTextFile(
      `${project}/rows.jsonl`,
      '{"outputKey":"a.mp4"}\n{"outputKey":"b.mp4","fps":0}\n',
    );
    const cli = await runVid([
      "render-batch",
      project,
      "--batch",
      `${project}/rows.jsonl`,
      "--dry-run",
      "--json",
      "--out-dir",
      `${project}/out`,
    ]);
    assert.equal(cli.code, 1, cli.stderr);
    const rows = JSON.parse(cli.stdout) as { line: number; status: string; error: string }[];
    assert.deepEqual(rows.map((r) => [r.line, r.status]), [
      [1, "would-invoke"],
      [2, "failed-to-start"],
    ]);
    assert.match(
      rows[1].error,
      /^line 2: fps: is not a row field .* set --fps for the whole batch$/,
    );
  });

  it("validateConfig's chunk errors have the words of the CLI's --chunk-size and friends", async () => {
    for (
      const [field, flag, value] of [
        ["chunkSize", "--chunk-size", 0],
        ["maxParallelChunks", "--max-parallel-chunks", 2.5],
        ["targetChunkFrames", "--target-chunk-frames", -1],
      ] as const
    ) {
      const config = await thrown(() => validateConfig(execution({ [field]: value })));
      assert.ok(config instanceof ConfigError, String(config));
      assert.equal(config.field, `config.${field}`);
      assert.equal(config.flag, flag);
      const cli = await runVid(["lambda", "render", project, flag, String(value)]);
      assert.equal(cli.code, 2, cli.stderr);
      assert.ok(
        cli.stderr.includes(`${flag}: ${config.detail}`),
        `${config.detail}\n${cli.stderr}`,
      );

      // The planner itself: a VidError with the SDK key, the flag and the same words.
      const plan = await thrown(() => chunkPlan({ frames: 100, [field]: value }));
      assert.ok(plan instanceof ChunkPlanError);
      assert.deepEqual([plan.field, plan.flag, plan.detail], [field, flag, config.detail]);
    }
  });

  it("the distributed plan takes its default rate from the declaration", () => {
    // 90 frames at the declared default rate (30): cells of 30 frames, 3 chunks of one cell.
    assert.equal(OPTIONS.fps.default, 30);
    const plan = planChunks(execution({ chunkSize: 30 }), 90);
    assert.deepEqual(plan.chunks.map((c) => c.frames), [30, 30, 30]);
  });

  it("--capture is declared: `vid render --capture bogus` exits 2 naming the choices", async () => {
    assert.equal(RENDER_CAPTURE, OPTIONS.capture.choices);
    const cli = await runVid(["render", project, "--capture", "bogus", "-o", `${project}/y.mp4`]);
    assert.equal(cli.code, 2, cli.stderr);
    assert.ok(
      cli.stderr.includes('--capture: must be one of auto, beginframe, screenshot, got "bogus"'),
      cli.stderr,
    );
    const help = await runVid(["still", "--help"]);
    assert.match(help.stdout.replace(/\s+/g, " "), /--capture <mode> capture path: auto probes/);

    // The SDK refuses it before launching anything, with the same words.
    const sdk = await thrown(() =>
      renderComposition({ target: project, capture: "bogus" as "auto", output: `${project}/y.mp4` })
    );
    assert.deepEqual([sdk.field, sdk.flag], ["capture", "--capture"]);
    assert.equal(sdk.detail, 'must be one of auto, beginframe, screenshot, got "bogus"');
    assert.equal(await Deno.stat(`${project}/y.mp4`).catch(() => null), null);
  });
});
