/**
 * `vid check` against `vid render` on the same composition: a 1920x1080, 10 s copy of
 * `examples/hello` (its declarations, script and animation), each command timed as a
 * whole process, alternating, median of `--runs`. The check is meant to cost under 20% of
 * the render it guards (the batch commands run part of it before every batch), so the
 * ratio is printed against that goal. The load average is printed too: the machine is
 * shared and both figures move with it, their ratio less.
 *
 * ```sh
 * deno run -A bench/check_bench.ts            # 3 rounds
 * deno run -A bench/check_bench.ts --runs 5 --json
 * ```
 *
 * @module
 */

import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** The check should cost less than this share of the render. */
const GOAL = 0.2;

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/** Wall seconds of one `vid` process; throws with its output when it fails. */
async function timeVid(args: string[]): Promise<number> {
  const started = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}cli.ts`, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const seconds = (performance.now() - started) / 1000;
  if (!output.success) {
    const text = new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr);
    throw new Error(`vid ${args.join(" ")} failed:\n${text}`);
  }
  return seconds;
}

const { values: flags } = parseArgs({
  args: Deno.args,
  options: { runs: { type: "string", default: "3" }, json: { type: "boolean", default: false } },
});
const runs = Math.max(1, Number(flags.runs) || 3);

const dir = await mkdtemp(join(tmpdir(), "vid-check-bench-"));
try {
  const html = await readFile(`${ROOT}examples/hello/index.html`, "utf8");
  const tenSeconds = html.replace(/data-duration="[^"]*"/, 'data-duration="10"');
  if (tenSeconds === html && !html.includes('data-duration="10"')) {
    throw new Error("examples/hello has no data-duration to set to 10 s");
  }
  await writeFile(join(dir, "index.html"), tenSeconds);
  const check: number[] = [];
  const render: number[] = [];
  // One warm-up of each (module cache, proxies, the browser's disk cache), not counted.
  await timeVid(["check", dir]);
  await timeVid(["render", dir, "-o", join(dir, "out.mp4")]);
  for (let i = 0; i < runs; i++) {
    check.push(await timeVid(["check", dir]));
    render.push(await timeVid(["render", dir, "-o", join(dir, "out.mp4")]));
  }
  const result = {
    composition: "examples/hello at 1920x1080, 10 s, 30 fps (300 frames)",
    runs,
    checkSeconds: median(check),
    renderSeconds: median(render),
    ratio: median(check) / median(render),
    goal: GOAL,
    load: loadavg().map((l) => Number(l.toFixed(2))),
  };
  if (flags.json) {
    console.log(JSON.stringify(result, null, 2));
  } else {
    console.log(result.composition);
    console.log(`vid check   ${result.checkSeconds.toFixed(2)} s (median of ${runs})`);
    console.log(`vid render  ${result.renderSeconds.toFixed(2)} s (median of ${runs})`);
    console.log(
      `check / render = ${(result.ratio * 100).toFixed(1)}% (goal < ${GOAL * 100}%: ${
        result.ratio < GOAL ? "met" : "not met"
      }), load ${result.load.join(" ")}`,
    );
  }
} finally {
  await rm(dir, { recursive: true, force: true });
}
