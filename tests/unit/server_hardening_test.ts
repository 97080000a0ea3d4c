/**
 * Server hardening without a server process: a database from before `deleted` is migrated
 * and its stranded renders refunded, idempotent bodies compare as canonical JSON, and
 * server paths are taken out of tenant messages. The attacks on a real server are in
 * tests/integration/security_server_test.ts (and, timed, security_server_deadlines_test.ts).
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { openDatabase } from "../../src/server/database/mod.ts";
import { tenantMessage } from "../../src/server/http/errors.ts";
import { canonicalJson } from "../../src/util/canonical_json.ts";

type Json = Record<string, unknown>;

describe("server hardening units", () => {
  it("compares idempotent bodies as canonical JSON", () => {
    assert.equal(
      canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } }),
      canonicalJson({ a: { c: null, d: [1, { y: 2, z: 1 }] }, b: 1 }),
    );
    assert.notEqual(canonicalJson({ a: [1, 2] }), canonicalJson({ a: [2, 1] }));
  });

  it("takes server paths out of tenant messages, keeping project paths", () => {
    const roots = ["/srv/vid", "/tmp"];
    assert.equal(
      tenantMessage(
        "/srv/vid/work/run-9/render-rnd_1-ab/project/index.html uses a file missing from " +
          "the project: /clips/a.mp4",
        roots,
      ),
      "index.html uses a file missing from the project: /clips/a.mp4",
    );
    assert.equal(
      tenantMessage("ffmpeg: /srv/vid/work/run-9/x.mp4: no frame (/usr/bin/ffmpeg)", roots),
      "ffmpeg: <server path>: no frame (<server path>)",
    );
    assert.equal(tenantMessage("at file:///opt/vid/src/a.ts:3", roots), "at <server path>");
  });

  it("migrates a database from before `deleted`: stranded deleted renders are refunded", async () => {
    const dir = await Deno.makeTempDir({ prefix: "vid-migrate-test-" });
    try {
      const old = new DatabaseSync(`${dir}/vid.db`);
      old.exec(`
        create table accounts (id text primary key, email text not null unique,
          password_hash text not null, credits real not null default 0, created_at text not null);
        create table renders (seq integer primary key autoincrement, id text not null unique,
          account_id text not null references accounts(id), asset_id text,
          status text not null check (status in ('queued', 'rendering', 'completed', 'failed')),
          progress real not null default 0, error text, request text not null, width integer,
          height integer, duration_seconds real, credits real not null default 0,
          warnings text not null default '[]', callback_url text, callback_id text,
          created_at text not null, started_at text, completed_at text, deleted_at text);
        alter table renders add column execution_arn text;
        insert into accounts values ('acct_1', 'a@b.co', 'x', 10, 'now');
        insert into renders (id, account_id, status, request, credits, created_at, deleted_at)
          values ('rnd_q', 'acct_1', 'queued', '{}', 4, 'now', 'then'),
                 ('rnd_c', 'acct_1', 'completed', '{}', 2, 'now', 'then'),
                 ('rnd_l', 'acct_1', 'queued', '{}', 1, 'now', null);
      `);
      old.close();
      const db = await openDatabase(`${dir}/vid.db`);
      const rows = await db.all<Json>("select id, status, seq from renders order by seq");
      assert.deepEqual(rows.map((r) => [r.id, r.status]), [
        ["rnd_q", "deleted"],
        ["rnd_c", "deleted"],
        ["rnd_l", "queued"],
      ]);
      assert.equal((await db.get<Json>("select credits from accounts"))?.credits, 14);
      await db.run(
        "insert into renders (id, account_id, status, request, created_at) values ('rnd_n', 'acct_1', 'deleted', '{}', 'now')",
      );
      assert.equal((await db.get<Json>("select seq from renders where id = 'rnd_n'"))?.seq, 4);
      await db.close();
      assert.equal((await Deno.stat(`${dir}/vid.db`)).mode! & 0o777, 0o600);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
});
