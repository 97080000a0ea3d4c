/**
 * The hosted render's states (`src/server/queue/renders.ts`): the transition table, and that a
 * move outside it leaves the row as it was and is logged, against a real database made by
 * `openDatabase`.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { type Database, openDatabase } from "../../src/server/database/mod.ts";
import {
  canTransition,
  RENDER_STATUSES,
  RENDER_TRANSITIONS,
  type RenderStatus,
  setTransitionLog,
  transitionRender,
} from "../../src/server/queue/renders.ts";

describe("render states", () => {
  const dir = Deno.makeTempDirSync({ prefix: "vid-render-states-" });
  let db: Database;
  before(async () => {
    db = await openDatabase(`${dir}/vid.db`);
    await db.run(
      "insert into accounts (id, email, password_hash, created_at) values ('acc', 'a@example.com', '', '')",
    );
  });
  let n = 0;
  const render = async (status: RenderStatus): Promise<string> => {
    const id = `rnd_${++n}`;
    await db.run(
      "insert into renders (id, account_id, status, request, created_at) values (?, 'acc', ?, '{}', '')",
      id,
      status,
    );
    return id;
  };
  const statusOf = async (id: string): Promise<unknown> =>
    (await db.get<{ status: string }>("select status from renders where id = ?", id))?.status;

  after(async () => {
    await db.close();
    Deno.removeSync(dir, { recursive: true });
  });

  it("allows exactly the moves of the render's life", () => {
    const allowed = RENDER_STATUSES.flatMap((from) =>
      RENDER_STATUSES.filter((to) => canTransition(from, to)).map((to) => `${from}->${to}`)
    );
    assert.deepEqual(allowed, [
      "queued->rendering",
      "queued->deleted",
      "rendering->queued",
      "rendering->completed",
      "rendering->failed",
      "rendering->deleted",
      "completed->deleted",
      "failed->deleted",
    ]);
    assert.deepEqual(RENDER_TRANSITIONS.deleted, []);
  });

  it("moves a row along every allowed move and refuses, logs and leaves it on any other", async () => {
    const logged: string[] = [];
    const previous = setTransitionLog((message) => logged.push(message));
    try {
      for (const from of RENDER_STATUSES) {
        for (const to of RENDER_STATUSES) {
          const id = await render(from);
          const moved = await transitionRender(db, id, to);
          assert.equal(moved, canTransition(from, to), `${from} -> ${to}`);
          assert.equal(await statusOf(id), moved ? to : from, `${from} -> ${to}`);
        }
      }
      const refusals = RENDER_STATUSES.length ** 2 - 8;
      assert.equal(logged.length, refusals);
      assert.ok(
        logged.some((m) => /^render rnd_\d+: completed -> rendering refused/.test(m)),
        logged.join("\n"),
      );
    } finally {
      setTransitionLog(previous);
    }
  });

  it("never moves a render once deleted_at is set, whatever its status says", async () => {
    const previous = setTransitionLog(() => {});
    try {
      const id = await render("rendering");
      await db.run("update renders set deleted_at = 'x' where id = ?", id);
      assert.equal(await transitionRender(db, id, "completed", { progress: 1 }), false);
      assert.equal(await statusOf(id), "rendering");
    } finally {
      setTransitionLog(previous);
    }
  });

  it("sets the given columns with the status", async () => {
    const id = await render("queued");
    assert.ok(await transitionRender(db, id, "rendering", { started_at: "2026-01-01T00:00:00Z" }));
    assert.ok(await transitionRender(db, id, "failed", { error: "boom", completed_at: "t" }));
    const row = await db.get(
      "select status, started_at, error, completed_at from renders where id = ?",
      id,
    );
    assert.deepEqual({ ...row }, {
      status: "failed",
      started_at: "2026-01-01T00:00:00Z",
      error: "boom",
      completed_at: "t",
    });
  });
});
