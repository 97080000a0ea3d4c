/**
 * The corpus of mistakes vid must catch: one project per mistake in
 * `tests/fixtures/mistakes/<name>/`, each with an `expected.json` saying what the mistake is
 * (`why`), the messages `vid check` must print (each naming the variable or attribute and
 * its place), whether it needs the browser part of the check (`browser`), whether it is a
 * warning that only `--strict` fails on (`strict`), the flags both commands get (`args`),
 * and for a few, what `vid render` must fail with (`render`) before writing anything. The
 * static ones run `vid check --no-browser`, the check every render runs first, so the
 * corpus stays fast as it grows.
 *
 * @module
 */

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { ROOT, runVid } from "../helpers.ts";

const CORPUS = `${ROOT}tests/fixtures/mistakes`;

/** What one mistake's `expected.json` holds. */
interface Expected {
  why: string;
  messages: string[];
  args?: string[];
  browser?: boolean;
  strict?: boolean;
  render?: string[];
}

const names = (await Array.fromAsync(Deno.readDir(CORPUS)))
  .filter((e) => e.isDirectory)
  .map((e) => e.name)
  .sort();

async function expected(name: string): Promise<Expected> {
  return JSON.parse(await Deno.readTextFile(`${CORPUS}/${name}/expected.json`));
}

describe("the corpus of mistakes", () => {
  it("holds at least 20 mistakes, each with its expected messages", async () => {
    assert.ok(names.length >= 20, `${names.length} mistakes`);
    for (const name of names) assert.ok((await expected(name)).messages.length > 0, name);
  });

  for (const name of names) {
    it(`${name}: vid check fails naming it and its place`, async () => {
      const e = await expected(name);
      const result = await runVid([
        "check",
        `${CORPUS}/${name}`,
        ...e.browser ? [] : ["--no-browser"],
        ...e.strict ? ["--strict"] : [],
        ...e.args ?? [],
      ]);
      const out = result.stdout + result.stderr;
      assert.equal(result.code, 1, `${e.why}: ${out}`);
      for (const message of e.messages) assert.ok(out.includes(message), `${message}\n${out}`);
    });
  }

  for (const name of names) {
    it(`${name}: vid render refuses it, writing nothing`, async (t) => {
      const e = await expected(name);
      if (e.render === undefined) return t.skip("check only");
      const dir = await Deno.makeTempDir({ prefix: "vid-mistake-" });
      try {
        const output = `${dir}/out.mp4`;
        const result = await runVid([
          "render",
          `${CORPUS}/${name}`,
          "--frames",
          "0-1",
          "-o",
          output,
          ...e.args ?? [],
        ]);
        assert.equal(result.code, 1, `${e.why}: ${result.stderr}`);
        for (const message of e.render) {
          assert.ok(result.stderr.includes(message), `${message}\n${result.stderr}`);
        }
        assert.deepEqual(await Array.fromAsync(Deno.readDir(dir)), [], "no output");
      } finally {
        await Deno.remove(dir, { recursive: true });
      }
    });
  }
});
