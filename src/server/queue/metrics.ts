/**
 * What `vid server` tells Prometheus at `GET /metrics`: queue depth by state, renders by the
 * status they ended in, render and chunk durations as histograms, frames rendered and busy
 * workers, in the Prometheus text exposition format (version 0.0.4).
 *
 * Collection is kept off the render path: the backend wrapper (`meteredBackend`,
 * metered_backend.ts) bumps a few numbers in memory per render, and the queue's depth is one
 * indexed count read from the database when a scrape asks for it, so it is right after a
 * restart and the same on every instance that shares the database. Counters and the histograms count what this
 * process did since it started (Prometheus' `rate()` and `sum()` handle restarts and
 * instances).
 *
 * @module
 */

import type { Queries } from "../database/mod.ts";

/** The content type of the Prometheus text format. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * Upper bounds of the render duration histogram, in seconds: from a one-second clip to the
 * longest render a server accepts by default (600 s of output can take an hour).
 */
export const RENDER_DURATION_BUCKETS: readonly number[] = [
  1,
  2.5,
  5,
  10,
  30,
  60,
  120,
  300,
  600,
  1800,
  3600,
];

/**
 * Upper bounds of the chunk duration histogram, in seconds: a chunk is a few seconds of
 * output (`--chunk-size` frames), so the buckets start below a second and stop at the
 * longest a chunk of a render the server accepts could take.
 */
export const CHUNK_DURATION_BUCKETS: readonly number[] = [
  0.5,
  1,
  2.5,
  5,
  10,
  30,
  60,
  120,
  300,
  600,
];

/** How a render handed to the backend ended, as `vid_renders_total` labels it. */
export type RenderOutcome = "completed" | "failed" | "cancelled";

/** The queue states `vid_queue_depth` reports. */
export const QUEUE_STATES = ["queued", "rendering"] as const;

/** Names of the metrics a server exposes; the deployments' autoscaler names one of them. */
export const METRIC_NAMES = {
  queueDepth: "vid_queue_depth",
  rendersTotal: "vid_renders_total",
  renderDuration: "vid_render_duration_seconds",
  chunkDuration: "vid_chunk_duration_seconds",
  framesRendered: "vid_frames_rendered_total",
  workersBusy: "vid_workers_busy",
  workers: "vid_workers",
} as const;

/** One family's samples, ready to print. */
interface Family {
  name: string;
  help: string;
  type: "counter" | "gauge" | "histogram";
  samples: { suffix?: string; labels?: Record<string, string>; value: number }[];
}

/** A label value as the text format writes it: backslash, quote and newline escaped. */
function labelValue(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

/** A number as the text format writes it (`+Inf`, `NaN`, no exponent surprises). */
function sampleValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

/**
 * Families in the Prometheus text format: `# HELP` and `# TYPE` before each family's samples,
 * one sample a line, a newline at the end.
 */
function exposition(families: Family[]): string {
  const lines: string[] = [];
  for (const family of families) {
    lines.push(`# HELP ${family.name} ${family.help.replaceAll("\\", "\\\\")}`);
    lines.push(`# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples) {
      const labels = Object.entries(sample.labels ?? {});
      const text = labels.length === 0
        ? ""
        : `{${labels.map(([k, v]) => `${k}="${labelValue(v)}"`).join(",")}}`;
      lines.push(`${family.name}${sample.suffix ?? ""}${text} ${sampleValue(sample.value)}`);
    }
  }
  return lines.join("\n") + "\n";
}

/** Cumulative bucket counts, sum and count of one histogram series. */
class HistogramSeries {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly bounds: readonly number[]) {
    this.counts = bounds.map(() => 0);
  }
  observe(value: number): void {
    this.sum += value;
    this.count++;
    this.bounds.forEach((bound, i) => {
      if (value <= bound) this.counts[i]++;
    });
  }
}

/** Renders waiting and rendering, counted in the database (see `renders_by_status`). */
export type QueueDepth = Readonly<Record<(typeof QUEUE_STATES)[number], number>>;

/**
 * Counts the renders in each queue state: one query over the `(status, seq)` index, so a
 * scrape costs the same however many finished renders the table holds.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { openDatabase } from "../database/mod.ts";
 *
 * const db = await openDatabase(":memory:");
 * await db.run("insert into accounts (id, email, password_hash, created_at) values ('a', 'a@x', 'h', 'now')");
 * for (const [id, status] of [["r1", "queued"], ["r2", "queued"], ["r3", "completed"]]) {
 *   await db.run(
 *     "insert into renders (id, account_id, status, request, created_at) values (?, 'a', ?, '{}', 'now')",
 *     id,
 *     status,
 *   );
 * }
 * assert.deepEqual(await queueDepth(db), { queued: 2, rendering: 0 });
 * await db.close();
 * ```
 */
export async function queueDepth(db: Queries): Promise<QueueDepth> {
  const rows = await db.all(`select status, count(*) as n from renders
     where status in ('queued', 'rendering') and deleted_at is null group by status`) as {
    status: string;
    n: number;
  }[];
  const depth = { queued: 0, rendering: 0 };
  for (const row of rows) depth[row.status as keyof typeof depth] = Number(row.n);
  return depth;
}

/** The numbers one server process keeps for `GET /metrics`. */
export class ServerMetrics {
  /** Render slots of the backend (`vid_workers`). */
  workers = 0;
  /**
   * Renders the backend is running now, and chunks of other workers' renders its idle
   * workers are rendering (`vid_workers_busy`).
   */
  busy = 0;
  /** Frames of the renders that completed (`vid_frames_rendered_total`). */
  frames = 0;
  readonly #renders = new Map<RenderOutcome, number>();
  readonly #durations = new Map<RenderOutcome, HistogramSeries>();
  readonly #chunkDurations = new Map<RenderOutcome, HistogramSeries>();
  /** Where the queue's depth is read at each scrape; none reports zeros. */
  readonly #depth: () => Promise<QueueDepth> | QueueDepth;

  /** @param depth Reads the queue's depth when a scrape asks (see {@linkcode queueDepth}). */
  constructor(
    depth: () => Promise<QueueDepth> | QueueDepth = () => ({ queued: 0, rendering: 0 }),
  ) {
    this.#depth = depth;
    // Every series exists from the start, so `rate()` sees the first render.
    for (const outcome of ["completed", "failed", "cancelled"] as const) {
      this.#renders.set(outcome, 0);
      this.#durations.set(outcome, new HistogramSeries(RENDER_DURATION_BUCKETS));
      this.#chunkDurations.set(outcome, new HistogramSeries(CHUNK_DURATION_BUCKETS));
    }
  }

  /**
   * Records a render the backend finished: its outcome, how long it ran and, when it
   * completed, its frames.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   *
   * const metrics = new ServerMetrics();
   * metrics.renderFinished("completed", 3.2, 96);
   * assert.match(await metrics.text(), /^vid_renders_total\{status="completed"\} 1$/m);
   * assert.match(await metrics.text(), /^vid_frames_rendered_total 96$/m);
   * ```
   */
  renderFinished(outcome: RenderOutcome, seconds: number, frames = 0): void {
    this.#renders.set(outcome, (this.#renders.get(outcome) ?? 0) + 1);
    this.#durations.get(outcome)?.observe(seconds);
    this.frames += frames;
  }

  /**
   * Records a chunk (`--chunk-size`) one of this process's workers held: how it ended
   * (`cancelled`: handed back at shutdown, or its lease lost to another worker) and how long
   * the worker had it. Its frames count with its render, once, where the render completes.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   *
   * const metrics = new ServerMetrics();
   * metrics.chunkFinished("completed", 0.8);
   * const text = await metrics.text();
   * assert.match(text, /^vid_chunk_duration_seconds_bucket\{status="completed",le="1"\} 1$/m);
   * assert.match(text, /^vid_chunk_duration_seconds_count\{status="completed"\} 1$/m);
   * ```
   */
  chunkFinished(outcome: RenderOutcome, seconds: number): void {
    this.#chunkDurations.get(outcome)?.observe(seconds);
  }

  /**
   * Every metric in the Prometheus text format. Throws what the queue's depth read throws (a
   * database that is away), so a scrape fails rather than reporting an empty queue.
   *
   * @example
   * ```ts
   * import assert from "node:assert/strict";
   *
   * const text = await new ServerMetrics(() => ({ queued: 3, rendering: 1 })).text();
   * assert.match(text, /^# TYPE vid_queue_depth gauge$/m);
   * assert.match(text, /^vid_queue_depth\{state="queued"\} 3$/m);
   * ```
   */
  async text(): Promise<string> {
    const depth = await this.#depth();
    return exposition([
      {
        name: METRIC_NAMES.queueDepth,
        help: "Renders in the queue by state: queued (waiting) and rendering.",
        type: "gauge",
        samples: QUEUE_STATES.map((state) => ({ labels: { state }, value: depth[state] })),
      },
      {
        name: METRIC_NAMES.rendersTotal,
        help: "Renders this process finished, by how they ended " +
          "(cancelled: deleted while rendering, or handed back at shutdown).",
        type: "counter",
        samples: [...this.#renders].map(([status, value]) => ({ labels: { status }, value })),
      },
      {
        name: METRIC_NAMES.renderDuration,
        help: "Wall time of the renders this process ran, from start to stored video.",
        type: "histogram",
        samples: histogramSamples(this.#durations),
      },
      {
        name: METRIC_NAMES.chunkDuration,
        help: "Wall time of the chunks (--chunk-size) this process's workers held, " +
          "from claim to stored chunk.",
        type: "histogram",
        samples: histogramSamples(this.#chunkDurations),
      },
      {
        name: METRIC_NAMES.framesRendered,
        help: "Frames of the renders this process completed.",
        type: "counter",
        samples: [{ value: this.frames }],
      },
      {
        name: METRIC_NAMES.workersBusy,
        help: "Render workers of this process running a render or a chunk of one now.",
        type: "gauge",
        samples: [{ value: this.busy }],
      },
      {
        name: METRIC_NAMES.workers,
        help: "Render workers of this process (renders it runs at once).",
        type: "gauge",
        samples: [{ value: this.workers }],
      },
    ]);
  }
}

/** The `_bucket`, `_sum` and `_count` samples of one histogram, a series per status. */
function histogramSamples(series: Map<RenderOutcome, HistogramSeries>): Family["samples"] {
  const samples: Family["samples"] = [];
  for (const [status, { bounds, counts, sum, count }] of series) {
    bounds.forEach((bound, i) =>
      samples.push({
        suffix: "_bucket",
        labels: { status, le: sampleValue(bound) },
        value: counts[i],
      })
    );
    samples.push({ suffix: "_bucket", labels: { status, le: "+Inf" }, value: count });
    samples.push({ suffix: "_sum", labels: { status }, value: sum });
    samples.push({ suffix: "_count", labels: { status }, value: count });
  }
  return samples;
}
