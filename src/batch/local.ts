/**
 * Local batch rendering (`vid render-batch`, SDK `renderBatchLocal`): one render per row of
 * a JSONL or CSV batch file on this machine, with the row format, manifest and resume rules
 * of the distributed batch (src/lambda/batch.ts), and no cloud account.
 *
 * Decisions:
 * - Rows are read and checked by the shared batch reader (src/batch/entries.ts): one
 *   manifest row per line; blank lines are `skipped`; invalid lines, duplicate `outputKey`s
 *   and keys that leave the output folder are `failed-to-start`. Neither stops the batch.
 * - Each row renders with `renderComposition` (the one renderer) to `outDir/outputKey`; the
 *   key's extension picks the format (`.mp4`, `.webm`, `.mov`, `.gif`, `name/%05d.png`)
 *   unless `format` is set. Up to `concurrency` rows render at once, each in a window of
 *   one of `concurrency` browsers launched once for the batch (relaunched if one dies), so
 *   rows pay no browser start-up and capture side by side (a browser's compositor takes one
 *   BeginFrame at a time). A row whose render fails is `failed` with the reason; others go on.
 * - Row statuses add the local outcomes to the distributed ones: `rendered`,
 *   `already-rendered`, `failed`, besides `failed-to-start`, `skipped`, `not-started` and
 *   `would-invoke` (dry run). `executionArn` is always `null` (no workflow runs).
 * - Resume: a row's `renderId` is `batchRenderId` of its inputs, with the project's content
 *   address in place of the site: a SHA-256 over the files an upload would include (same
 *   ignore rules), leaving out the output folder, the manifest and the batch file, so an edit
 *   of the composition re-renders every row and new outputs or rows change nothing. The manifest is rewritten (temp file + rename) after every finished
 *   row, and on Ctrl-C. A rerun skips a row as `already-rendered` when the manifest has it
 *   rendered with the same `renderId` and its output is still there with the recorded size.
 * - Ctrl-C (`signal`) cancels the renders in flight (no partial output) and starts no more;
 *   those rows are `not-started` and a rerun renders them.
 *
 * @module
 */

import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { dirname, isAbsolute, join, normalize, relative, resolve, sep } from "node:path";
import { readComposition } from "../composition/composition.ts";
import type { Variables } from "../composition/declarations.ts";
import { BatchInputError, type BatchManifestRow, batchRenderId } from "./manifest.ts";
import type { ExecutionInput } from "../request/execution_input.ts";
import { projectRules } from "../project/ignore_rules.ts";
import type { Browser } from "../render/browser.ts";
import { type CapturePreference, launchForCapture } from "../render/capture_mode.ts";
import { hasFramePattern, type Quality, type RenderFormat } from "../render/encode.ts";
import {
  defaultWorkers,
  RenderCancelledError,
  renderComposition,
  type RenderProgress,
  resolveRenderFormat,
} from "../render/render.ts";
import { readBatchFile } from "./entries.ts";
import { OPTIONS } from "../request/options.ts";
import { RenderOptionError } from "../request/errors.ts";
import { pool } from "../util/async.ts";

/** One row of a local batch manifest: the distributed row's fields plus the output. */
export interface LocalBatchManifestRow extends Omit<BatchManifestRow, "status"> {
  /**
   * What happened to the row: the distributed statuses that apply here (`failed-to-start`,
   * `skipped`, `not-started`, `would-invoke`) and the render outcomes:
   * - `rendered`: this run rendered the row's output;
   * - `already-rendered`: an earlier run rendered it with the same inputs and it is intact;
   * - `failed`: the render of a valid row failed (see `error`).
   */
  status:
    | "rendered"
    | "already-rendered"
    | "failed"
    | "failed-to-start"
    | "skipped"
    | "not-started"
    | "would-invoke";
  /** Absolute path of the output (a pattern for a PNG sequence); set for valid rows. */
  output?: string;
  /** Bytes of the output (all frames of a PNG sequence); set once rendered. */
  bytes?: number;
  /** Frames rendered; set by a render of this run. */
  frames?: number;
  /** Wall time of the row's render, ms; set by a render of this run. */
  elapsedMs?: number;
  /**
   * What the row's variables got wrong that did not stop it (undeclared keys with a
   * did-you-mean, values of another type), one message each; absent when none.
   */
  warnings?: string[];
}

/**
 * Status of a local batch manifest row ({@linkcode LocalBatchManifestRow.status}). An
 * internal name: `@vid/cli/render` exports the row, not its parts (issue #35).
 */
export type LocalBatchRowStatus = LocalBatchManifestRow["status"];

/** Progress of a whole local batch. */
export interface LocalBatchProgress {
  /** Valid rows to render in this run (rows already rendered excluded). */
  rowsTotal: number;
  /** Rows of this run finished (rendered or failed). */
  rowsDone: number;
  /** Rows that failed so far. */
  rowsFailed: number;
  /** Frames rendered so far, all rows. */
  framesDone: number;
  /** Frames of the rows started so far (grows as rows start). */
  framesKnown: number;
  /** Rows rendering now. */
  active: number;
  /** Seconds left, estimated from the rows done; undefined before the first. */
  etaSeconds?: number;
}

/** Options of {@linkcode renderBatchLocal}. */
export interface RenderBatchLocalOptions {
  /** Project directory or HTML file. @default "." */
  target?: string;
  /** Entry HTML file inside the project directory. @default "index.html" */
  composition?: string;
  /** JSONL (`{"outputKey": ..., "variables": {...}}` per line) or CSV (header: ids + outputKey). */
  batchFile: string;
  /** Folder the `outputKey`s are relative to. @default "renders" */
  outDir?: string;
  /** Manifest file, rewritten as rows finish. @default "<outDir>/vid-batch-manifest.json" */
  manifest?: string;
  /** Format of every row; must agree with each key's extension. @default from the extension */
  format?: RenderFormat;
  /**
   * Frames per second, as `renderComposition` takes it (integer, `29.97` or `"30000/1001"`).
   * @default the composition's `data-fps`, else 30
   */
  fps?: number | string;
  /** Encoder preset. @default "standard" */
  quality?: Quality;
  /** Rows rendered at once, each in a window of its own browser. @default min(cores, 4) */
  concurrency?: number;
  /** Capture path. @default "auto" */
  capture?: CapturePreference;
  /** Fail a row whose variables do not match the declarations (else warn). */
  strict?: boolean;
  /** Check the file only: valid rows become `would-invoke`; nothing renders. */
  dryRun?: boolean;
  /** Stops the batch: renders in flight are cancelled, no more start. */
  signal?: AbortSignal;
  /** Called with each row once its outcome is known (in completion order). */
  onRow?(row: LocalBatchManifestRow): void;
  /** Called on progress of the whole batch. */
  onProgress?(progress: LocalBatchProgress): void;
  /** Receives warnings, each distinct message once. @default console.warn */
  onWarning?(message: string): void;
}

/** What {@linkcode renderBatchLocal} produced. */
export interface LocalBatchResult {
  /** One row per line of the batch file, in line order. */
  rows: LocalBatchManifestRow[];
  /** Path of the manifest written. */
  manifest: string;
  /** Whether the batch was interrupted through `signal`. */
  interrupted: boolean;
}

/** Counts of a local manifest's rows by status, and of rows with warnings (`warned`). */
export type LocalBatchSummary = Record<LocalBatchRowStatus, number> & {
  rows: number;
  warned: number;
};

/**
 * Counts a local manifest's rows by status.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { summarizeLocalBatch } from "./local.ts";
 *
 * const s = summarizeLocalBatch([]);
 * assert.equal(s.rows, 0);
 * assert.equal(s.rendered, 0);
 * assert.equal(s.warned, 0);
 * ```
 */
export function summarizeLocalBatch(rows: readonly LocalBatchManifestRow[]): LocalBatchSummary {
  const summary: LocalBatchSummary = {
    rows: rows.length,
    warned: rows.filter((row) => (row.warnings?.length ?? 0) > 0).length,
    rendered: 0,
    "already-rendered": 0,
    failed: 0,
    "failed-to-start": 0,
    skipped: 0,
    "not-started": 0,
    "would-invoke": 0,
  };
  for (const row of rows) summary[row.status]++;
  return summary;
}

/** Bytes of an output: the file, or every frame of a PNG sequence's folder. */
async function outputBytes(output: string, format: RenderFormat): Promise<number | undefined> {
  try {
    if (format !== "png") return (await stat(output)).size;
    const folder = dirname(output);
    let total = 0;
    for (const name of await readdir(folder)) total += (await stat(join(folder, name))).size;
    return total;
  } catch {
    return undefined;
  }
}

/** The previous manifest's rows by outputKey (an unreadable manifest counts as none). */
async function previousRows(
  path: string,
  warn: (message: string) => void,
): Promise<Map<string, LocalBatchManifestRow>> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch {
    return new Map();
  }
  try {
    const rows = JSON.parse(text) as LocalBatchManifestRow[];
    if (!Array.isArray(rows)) throw new Error("not an array of rows");
    // Only rendered rows count (a later duplicate of the same key failed to start).
    return new Map(
      rows.filter((r) =>
        typeof r?.outputKey === "string" &&
        (r.status === "rendered" || r.status === "already-rendered")
      ).map((r) => [r.outputKey!, r]),
    );
  } catch (error) {
    warn(`ignoring the manifest ${path} (${(error as Error).message}): every row renders again`);
    return new Map();
  }
}

/**
 * The content address of a project for resuming: `site-` and 16 hex digits of a SHA-256
 * over the path and SHA-256 of every file the upload rules include, except `skip` (absolute
 * paths of files or folders).
 */
async function projectContentId(projectDir: string, skip: readonly string[]): Promise<string> {
  const rules = await projectRules(projectDir);
  const hex = (bytes: ArrayBuffer) =>
    [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const lines: string[] = [];
  const walk = async (dir: string): Promise<void> => {
    const names = (await readdir(dir)).sort();
    for (const name of names) {
      const path = join(dir, name);
      if (skip.some((s) => path === s || path.startsWith(s + sep))) continue;
      const info = await stat(path).catch(() => undefined);
      if (!info) continue;
      const rel = relative(projectDir, path).split(sep).join("/");
      if (!rules.includes(rel, info.isDirectory())) continue;
      if (info.isDirectory()) await walk(path);
      else if (info.isFile()) {
        lines.push(
          `${rel}\0${
            hex(await crypto.subtle.digest("SHA-256", new Uint8Array(await readFile(path))))
          }`,
        );
      }
    }
  };
  await walk(projectDir);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(lines.join("\n")));
  return `site-${hex(digest).slice(0, 16)}`;
}

/** Writes `text` to `path` through a temporary file in the same folder and a rename. */
async function writeAtomically(path: string, text: string): Promise<void> {
  const temp = join(dirname(path), `.${crypto.randomUUID()}.tmp`);
  try {
    await writeFile(temp, text);
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/** Checks an outputKey stays inside the output folder; returns the output path. */
function outputFor(outDir: string, outputKey: string): string {
  const key = normalize(outputKey);
  if (isAbsolute(outputKey) || key === ".." || key.startsWith(`..${sep}`)) {
    throw new Error(`"outputKey" ${outputKey} leaves the output folder; use a relative path`);
  }
  return resolve(outDir, key);
}

/** A valid row waiting to be rendered: its manifest row, overrides and format. */
interface QueuedRow {
  row: LocalBatchManifestRow;
  variables: Variables;
  format: RenderFormat;
}

/** Checks `concurrency` and that the batch file is a file; returns the concurrency. */
async function checkLocalBatchOptions(options: RenderBatchLocalOptions): Promise<number> {
  const concurrency = options.concurrency ?? defaultWorkers();
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new BatchInputError(
      "concurrency",
      `concurrency must be a positive integer, got ${concurrency}`,
    );
  }
  try {
    if (!(await stat(options.batchFile)).isFile()) throw new Error("not a file");
  } catch (error) {
    throw new BatchInputError(
      "batchFile",
      `cannot read the batch file ${options.batchFile}: ${(error as Error).message}; pass a ` +
        `JSONL file (one {"outputKey": ..., "variables": {...}} per line) or a CSV file ` +
        `(header: variable ids and outputKey)`,
    );
  }
  return concurrency;
}

/** What {@linkcode planLocalRows} needs besides the options. */
interface PlanContext {
  composition: Awaited<ReturnType<typeof readComposition>>;
  outDir: string;
  siteId: string;
  previous: Map<string, LocalBatchManifestRow>;
  fps: RenderBatchLocalOptions["fps"];
  quality: Quality;
  warn: (message: string) => void;
}

/**
 * Reads the batch file and decides each row: skipped (blank), failed to start (invalid,
 * bad or duplicate `outputKey`), would-invoke (dry run), already rendered (the same render
 * id and output bytes as in the previous manifest), or queued to render.
 */
async function planLocalRows(
  options: RenderBatchLocalOptions,
  ctx: PlanContext,
): Promise<{ rows: LocalBatchManifestRow[]; queue: QueuedRow[] }> {
  const { composition, outDir, siteId, previous, fps, quality, warn } = ctx;
  const rows: LocalBatchManifestRow[] = [];
  const queue: QueuedRow[] = [];
  const seen = new Map<string, number>();
  for await (
    const { line, parsed } of readBatchFile(
      options.batchFile,
      composition.declarations,
      options.strict,
    )
  ) {
    const base = { line, executionArn: null, error: null };
    if (parsed.kind === "blank") {
      rows.push({ ...base, outputKey: null, status: "skipped", error: "blank line" });
      continue;
    }
    if (parsed.kind === "invalid") {
      rows.push({
        ...base,
        outputKey: parsed.outputKey,
        status: "failed-to-start",
        error: parsed.error,
      });
      continue;
    }
    const { outputKey, variables } = parsed;
    if (parsed.warning) warn(parsed.warning);
    const warned = parsed.problems && parsed.problems.length > 0
      ? { warnings: parsed.problems.map((p) => p.message) }
      : {};
    const fail = (error: string) =>
      rows.push({ ...base, outputKey, status: "failed-to-start", error: `line ${line}: ${error}` });
    let output: string;
    let format: RenderFormat;
    try {
      output = outputFor(outDir, outputKey);
      format = resolveRenderFormat(output, options.format);
      // `--format png` with a key naming a folder: the frames go inside it.
      if (format === "png" && !hasFramePattern(output)) output = join(output, "%05d.png");
    } catch (error) {
      // The key stands for the render's --output here: say so in the batch's words.
      fail(
        error instanceof RenderOptionError && error.field === "output"
          ? `"outputKey": ${error.detail}`
          : (error as Error).message,
      );
      continue;
    }
    const first = seen.get(outputKey);
    if (first !== undefined) {
      fail(`duplicate outputKey ${outputKey} (first on line ${first})`);
      continue;
    }
    seen.set(outputKey, line);
    const renderId = await batchRenderId({
      bucketName: "local",
      siteId,
      serveUrl: "",
      composition: composition.entry,
      outputKey,
      // The local config carries the local formats too (gif, png); only hashed here.
      config: { fps: fps ?? null, quality, format, variables } as unknown as ExecutionInput[
        "config"
      ],
    });
    const row: LocalBatchManifestRow = {
      ...base,
      outputKey,
      renderId,
      output,
      status: "would-invoke",
      ...warned,
    };
    if (options.dryRun) {
      rows.push(row);
      continue;
    }
    const before = previous.get(outputKey);
    if (
      before?.renderId === renderId &&
      (before.status === "rendered" || before.status === "already-rendered") &&
      before.bytes !== undefined && before.bytes === await outputBytes(output, format)
    ) {
      rows.push({ ...row, status: "already-rendered", bytes: before.bytes });
      continue;
    }
    queue.push({ row: { ...row, status: "not-started" }, variables, format });
    rows.push(queue.at(-1)!.row);
  }
  return { rows, queue };
}

/** One browser of the batch: launched on first use, relaunched if its process died. */
function browserSlot(
  capture: CapturePreference | undefined,
  warn: (message: string) => void,
): { get(): Promise<Browser>; close(): Promise<void> } {
  let browser: Browser | undefined;
  let launching: Promise<Browser> | undefined;
  return {
    async get(): Promise<Browser> {
      if (browser && browser.process.exitCode === null && browser.process.signalCode === null) {
        return browser;
      }
      launching ??= (async () => {
        await browser?.close();
        browser = await launchForCapture(
          capture ?? "auto",
          (reason) => warn(`BeginFrame capture unavailable (${reason}); using screenshots`),
        );
        return browser;
      })().finally(() => launching = undefined);
      return await launching;
    },
    async close(): Promise<void> {
      await browser?.close();
    },
  };
}

/**
 * The batch's browsers, one per row rendered at once: a browser's compositor takes one
 * BeginFrame at a time, so rows in windows of one browser captured in turn and a batch ran
 * at ~0.95 of one render's rate. A row leases a free browser and gives it back when done.
 */
function batchBrowsers(
  count: number,
  capture: CapturePreference | undefined,
  warn: (message: string) => void,
): {
  lease<T>(use: (browser: () => Promise<Browser>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
} {
  const slots = Array.from({ length: count }, () => browserSlot(capture, warn));
  const free = [...slots];
  return {
    async lease<T>(use: (browser: () => Promise<Browser>) => Promise<T>): Promise<T> {
      // The pool runs at most `count` rows at once, so a slot is always free here.
      const slot = free.pop() ?? slots[0];
      try {
        return await use(() => slot.get());
      } finally {
        free.push(slot);
      }
    },
    async close(): Promise<void> {
      await Promise.all(slots.map((slot) => slot.close()));
    },
  };
}

/** What {@linkcode renderQueuedRow} shares with the other rows of the batch. */
interface RowContext {
  options: RenderBatchLocalOptions;
  target: string;
  fps: RenderBatchLocalOptions["fps"];
  quality: Quality;
  signal?: AbortSignal;
  browser: () => Promise<Browser>;
  progress: LocalBatchProgress;
  report: () => void;
  warn: (message: string) => void;
  writeManifest: () => Promise<void>;
}

/**
 * Renders one queued row and records the outcome in its manifest row (rendered, failed,
 * or left not started when interrupted), counting progress; then writes the manifest. A
 * failed render fails its row, never the batch.
 */
async function renderQueuedRow(item: QueuedRow, ctx: RowContext): Promise<void> {
  const { row } = item;
  let known = 0;
  let done = 0;
  ctx.progress.active++;
  try {
    const result = await renderComposition({
      target: ctx.target,
      composition: ctx.options.composition,
      values: item.variables,
      strictVariables: ctx.options.strict,
      output: row.output,
      format: item.format,
      fps: ctx.fps,
      quality: ctx.quality,
      workers: 1,
      capture: ctx.options.capture,
      browser: await ctx.browser(),
      signal: ctx.signal,
      onWarning: ctx.warn,
      onProgress: (p: RenderProgress) => {
        if (known === 0 && p.framesTotal > 0) {
          known = p.framesTotal;
          ctx.progress.framesKnown += known;
        }
        ctx.progress.framesDone += p.framesDone - done;
        done = p.framesDone;
        ctx.report();
      },
    });
    Object.assign(row, {
      status: "rendered",
      output: result.output,
      bytes: await outputBytes(result.output, item.format),
      frames: result.frames,
      elapsedMs: Math.round(result.elapsedMs),
    });
  } catch (error) {
    if (error instanceof RenderCancelledError || ctx.signal?.aborted) {
      ctx.progress.framesDone -= done;
      row.error = `line ${row.line}: interrupted before this row was rendered; run the ` +
        `batch again to render it`;
    } else {
      row.status = "failed";
      row.error = `line ${row.line}: ${(error as Error).message}`;
      ctx.progress.rowsFailed++;
    }
  } finally {
    ctx.progress.active--;
  }
  if (row.status !== "not-started") {
    ctx.progress.rowsDone++;
    ctx.report();
  }
  ctx.options.onRow?.(row);
  await ctx.writeManifest();
}

/**
 * Renders one video per row of a JSONL or CSV batch file on this machine, in parallel
 * (a warm browser per row in flight), and returns the manifest (also written to
 * `<outDir>/vid-batch-manifest.json`). A rerun skips the rows already rendered with the
 * same inputs, so an interrupted batch resumes.
 *
 * @example
 * ```ts no_run
 * import { renderBatchLocal } from "@vid/cli";
 * import { summarizeLocalBatch } from "./local.ts";
 *
 * const { rows } = await renderBatchLocal({
 *   target: "examples/hello",
 *   batchFile: "rows.jsonl", // {"outputKey": "ada.mp4", "variables": {"title": "Ada"}}
 *   outDir: "renders/batch",
 * });
 * console.log(summarizeLocalBatch(rows)); // { rows: 1, rendered: 1, failed: 0, ... }
 * ```
 */
export async function renderBatchLocal(
  options: RenderBatchLocalOptions,
): Promise<LocalBatchResult> {
  const concurrency = await checkLocalBatchOptions(options);
  const warned = new Set<string>();
  const warn = (message: string) => {
    if (warned.has(message)) return;
    warned.add(message);
    (options.onWarning ?? ((m: string) => console.warn(m)))(message);
  };
  const target = options.target ?? ".";
  const composition = await readComposition(target, options.composition);
  const outDir = resolve(options.outDir ?? "renders");
  const manifestPath = resolve(options.manifest ?? join(outDir, "vid-batch-manifest.json"));
  // Left to renderComposition when unset, so a batch renders at the rate a single render would.
  const fps = options.fps;
  const quality = options.quality ?? OPTIONS.quality.default!;
  const siteId = await projectContentId(composition.projectDir, [
    outDir,
    manifestPath,
    resolve(options.batchFile),
  ]);
  const previous = await previousRows(manifestPath, warn);

  const { rows, queue } = await planLocalRows(options, {
    composition,
    outDir,
    siteId,
    previous,
    fps,
    quality,
    warn,
  });
  for (const row of rows) if (row.status !== "not-started") options.onRow?.(row);

  // Rows in line order, each with the distributed manifest's fields first.
  const byLine = (): LocalBatchManifestRow[] =>
    [...rows].sort((a, b) => a.line - b.line).map((row) => {
      const { line, outputKey, status, executionArn, error, ...local } = row;
      return { line, outputKey, status, executionArn, error, ...local };
    });
  const writeManifest = async () => {
    await mkdir(dirname(manifestPath), { recursive: true });
    await writeAtomically(manifestPath, JSON.stringify(byLine(), null, 2) + "\n");
  };
  if (options.dryRun) return { rows: byLine(), manifest: manifestPath, interrupted: false };

  const progress: LocalBatchProgress = {
    rowsTotal: queue.length,
    rowsDone: 0,
    rowsFailed: 0,
    framesDone: 0,
    framesKnown: 0,
    active: 0,
  };
  const started = performance.now();
  const report = () => {
    const seconds = (performance.now() - started) / 1000;
    progress.etaSeconds = progress.rowsDone > 0
      ? seconds / progress.rowsDone * (progress.rowsTotal - progress.rowsDone)
      : undefined;
    options.onProgress?.({ ...progress });
  };
  report();

  const signal = options.signal;
  const browsers = batchBrowsers(concurrency, options.capture, warn);

  const ctx: Omit<RowContext, "browser"> = {
    options,
    target,
    fps,
    quality,
    signal,
    progress,
    report,
    warn,
    writeManifest,
  };
  try {
    // An abort stops taking rows (the rows left are marked below), it is not an error here.
    await pool(
      queue,
      concurrency,
      (item) => browsers.lease((browser) => renderQueuedRow(item, { ...ctx, browser })),
      signal,
    ).catch((error) => {
      if (!signal?.aborted) throw error;
    });
  } finally {
    await browsers.close();
    for (const { row } of queue) {
      if (row.status === "not-started" && row.error === null) {
        row.error = `line ${row.line}: interrupted before this row was rendered; run the batch ` +
          `again to render it`;
        options.onRow?.(row);
      }
    }
    await writeManifest();
  }
  return { rows: byLine(), manifest: manifestPath, interrupted: signal?.aborted === true };
}
