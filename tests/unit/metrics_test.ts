/**
 * `GET /metrics` without a browser: the real queue over real SQLite hands renders to a
 * stand-in backend wrapped by `meteredBackend`, and the exposition, read back by the strict
 * parser in tests/prometheus_text.ts, shows queue depth from the database, busy workers while
 * a render runs, and each outcome (completed, failed, cancelled by a delete) with its
 * duration and frames. The parser itself is held to refuse what Prometheus refuses. The
 * server on loopback with a real render is in tests/integration/server_ops_test.ts.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { addUser } from "../../src/server/auth/accounts.ts";
import { type ServerContext, serverLimits } from "../../src/server/context.ts";
import { now, openDatabase } from "../../src/server/database/mod.ts";
import { startQueue } from "../../src/server/queue/queue.ts";
import type { RenderBackend } from "../../src/server/queue/render_backend.ts";
import { transitionRender } from "../../src/server/queue/renders.ts";
import { FsStorage } from "../../src/server/storage/storage_file.ts";
import { METRIC_NAMES, queueDepth, ServerMetrics } from "../../src/server/queue/metrics.ts";
import { meteredBackend } from "../../src/server/queue/metered_backend.ts";
import { parsePrometheusText, sampleValue } from "../prometheus_text.ts";
import { waitFor } from "../helpers.ts";

describe("server metrics", () => {
  it("follows Prometheus naming: vid_ prefix, _total counters, base units, help on every family", async () => {
    const families = parsePrometheusText(await new ServerMetrics().text());
    assert.deepEqual([...families.keys()].toSorted(), Object.values(METRIC_NAMES).toSorted());
    for (const family of families.values()) {
      assert.match(family.name, /^vid_[a-z_]+$/);
      assert.ok(family.help.length > 10, `${family.name} has no help`);
      if (family.type === "counter") assert.match(family.name, /_total$/);
      if (family.type === "histogram") assert.match(family.name, /_seconds$/);
    }
  });

  it("reports queue depth, busy workers and each render's outcome, duration and frames", async () => {
    const dir = await Deno.makeTempDir({ prefix: "vid-metrics-" });
    const db = await openDatabase(`${dir}/vid.db`);
    const account = await addUser(db, "m@example.com", "long enough password", 100);
    // 2 s at 10 fps: 20 frames.
    const insert = (id: string) =>
      db.run(
        "insert into renders (id, account_id, asset_id, status, request, width, height, duration_seconds, credits, created_at) values (?, ?, 'ast_x', 'queued', ?, 320, 180, 2, 1, ?)",
        id,
        account.id,
        JSON.stringify({ composition: "index.html", fps: 10, format: "mp4", variables: {} }),
        now(),
      );
    for (const id of ["rnd_ok", "rnd_bad", "rnd_gone"]) await insert(id);
    const gates = new Map<string, PromiseWithResolvers<void>>();
    const started: string[] = [];
    const standIn: RenderBackend = {
      kind: "local",
      slots: 1,
      async render(_ctx, job, signal): Promise<void> {
        started.push(job.id);
        const gate = Promise.withResolvers<void>();
        gates.set(job.id, gate);
        signal.addEventListener("abort", () => gate.reject(signal.reason), { once: true });
        await gate.promise;
        if (job.id === "rnd_bad") throw new Error("a file is missing from the project");
      },
      close: () => {},
    };
    const metrics = new ServerMetrics(() => queueDepth(db));
    const ctx: ServerContext = {
      db,
      storage: new FsStorage(`${dir}/storage`),
      secret: "s",
      publicUrl: "http://127.0.0.1",
      workDir: `${dir}/work`,
      allowHttpCallbacks: false,
      allowPrivateUrls: false,
      limits: serverLimits({}, 1),
      wake: () => {},
      metrics,
    };
    const read = async () => parsePrometheusText(await metrics.text());
    const queue = startQueue(ctx, meteredBackend(standIn, metrics));
    try {
      await waitFor("the first render started", () => started.length === 1, { timeoutMs: 10_000 });
      let m = await read();
      assert.equal(sampleValue(m, "vid_queue_depth", { state: "queued" }), 2);
      assert.equal(sampleValue(m, "vid_queue_depth", { state: "rendering" }), 1);
      assert.equal(sampleValue(m, "vid_workers_busy"), 1);
      assert.equal(sampleValue(m, "vid_workers"), 1);

      gates.get("rnd_ok")!.resolve();
      await waitFor("the second render started", () => started.length === 2, { timeoutMs: 10_000 });
      gates.get("rnd_bad")!.resolve();
      await waitFor("the third render started", () => started.length === 3, { timeoutMs: 10_000 });
      // A delete aborts the render in flight: it counts as cancelled, not failed.
      await transitionRender(db, "rnd_gone", "deleted", { deleted_at: now() });
      queue.cancel("rnd_gone");
      await waitFor(
        "the deleted render counted",
        async () => sampleValue(await read(), "vid_renders_total", { status: "cancelled" }) === 1,
        { timeoutMs: 10_000 },
      );
      m = await read();
      assert.equal(sampleValue(m, "vid_renders_total", { status: "completed" }), 1);
      assert.equal(sampleValue(m, "vid_renders_total", { status: "failed" }), 1);
      assert.equal(sampleValue(m, "vid_frames_rendered_total"), 20, "only the completed one");
      for (const status of ["completed", "failed", "cancelled"]) {
        assert.equal(sampleValue(m, "vid_render_duration_seconds_count", { status }), 1);
        assert.equal(
          sampleValue(m, "vid_render_duration_seconds_bucket", { status, le: "+Inf" }),
          1,
        );
      }
      await waitFor(
        "workers idle",
        async () => sampleValue(await read(), "vid_workers_busy") === 0,
        { timeoutMs: 10_000 },
      );
      m = await read();
      assert.equal(sampleValue(m, "vid_queue_depth", { state: "queued" }), 0);
      assert.equal(sampleValue(m, "vid_queue_depth", { state: "rendering" }), 0);
    } finally {
      for (const gate of gates.values()) gate.resolve();
      await queue.stop();
      await db.close();
      await Deno.remove(dir, { recursive: true });
    }
  });

  it("a scrape fails rather than report an empty queue when the database is away", async () => {
    const metrics = new ServerMetrics(() => {
      throw new Error("database is locked");
    });
    await assert.rejects(() => metrics.text(), /database is locked/);
  });
});

describe("the test's Prometheus text parser", () => {
  const refuses = (text: string, pattern: RegExp) =>
    assert.throws(() => parsePrometheusText(text), pattern);

  it("refuses what a scraper refuses", () => {
    refuses("# TYPE a gauge\na 1", /end with a newline/);
    refuses("# TYPE a gauge\na one\n", /not a number/);
    refuses('# TYPE a gauge\na{x="1} 1\n', /not closed/);
    refuses('# TYPE a gauge\na{x="\\t"} 1\n', /bad escape/);
    refuses("# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na 2\n", /split/);
    refuses("# TYPE a gauge\na 1\n# TYPE a counter\n", /TYPE after/);
    refuses(
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n',
      /not cumulative/,
    );
    refuses('# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', /\+Inf/);
    refuses('# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n', /!= _count/);
  });

  it("reads escaped label values back", () => {
    const families = parsePrometheusText('# TYPE a gauge\na{x="q\\"\\\\\\n"} 1\n');
    assert.deepEqual(families.get("a")?.samples[0].labels, { x: 'q"\\\n' });
  });
});
