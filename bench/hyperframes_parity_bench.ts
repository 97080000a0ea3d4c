/**
 * Parity with HyperFrames: the HyperFrames-style project of the tests
 * (`tests/fixtures/hyperframes/project`: two sub-compositions, one nesting a third, GSAP and CSS
 * timelines on their hosts' clocks) rendered by `vid render` and by the HyperFrames CLI (installed
 * and run as `peer_bench.ts` does: pinned, under Node 22, on the system's
 * chromium-headless-shell), compared frame by frame with ffmpeg's PSNR. Prints the mean, the
 * lowest frame and every frame under 30 dB; exits 1 when the mean is under 30 dB.
 *
 * Not a test: HyperFrames is installed from npm on first use and its render waits for its own
 * readiness checks.
 *
 * ```sh
 * deno run -A bench/hyperframes_parity_bench.ts
 * ```
 *
 * @module
 */

import { copyFile, mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { node22 } from "../src/lambda/local/local_stack.ts";
import { HEADLESS_SHELL, hyperframesCli } from "./peer_bench.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FIXTURE = join(ROOT, "tests", "fixtures", "hyperframes", "project");

/** Runs a command; throws with its stderr when it fails. */
async function run(cmd: string, args: string[], env?: Record<string, string>): Promise<string> {
  const out = await new Deno.Command(cmd, {
    args,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const stderr = new TextDecoder().decode(out.stderr);
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")} failed:\n${stderr}`);
  return stderr;
}

/** PSNR (average over the planes, dB) of each frame of `a` against `b`. */
export async function framePsnr(a: string, b: string, stats: string): Promise<number[]> {
  await run("ffmpeg", [
    "-v",
    "error",
    "-i",
    a,
    "-i",
    b,
    "-lavfi",
    `psnr=stats_file=${stats}`,
    "-f",
    "null",
    "-",
  ]);
  return (await Deno.readTextFile(stats)).trim().split("\n").map((line) => {
    const value = /psnr_avg:(\S+)/.exec(line)?.[1] ?? "inf";
    return value === "inf" ? Infinity : Number(value);
  });
}

async function main(): Promise<void> {
  const work = await mkdtemp(join(tmpdir(), "vid-hyperframes-parity-"));
  try {
    const project = join(work, "project");
    await mkdir(join(project, "compositions"), { recursive: true });
    for (const file of await readdir(join(FIXTURE, "compositions"))) {
      await copyFile(join(FIXTURE, "compositions", file), join(project, "compositions", file));
    }
    await copyFile(join(FIXTURE, "index.html"), join(project, "index.html"));
    await copyFile(
      join(ROOT, "node_modules", "gsap", "dist", "gsap.min.js"),
      join(project, "gsap.min.js"),
    );
    const [cli, node] = await Promise.all([hyperframesCli(console.error), node22()]);
    const vid = join(work, "vid.mp4");
    const hf = join(work, "hyperframes.mp4");
    await run(Deno.execPath(), ["run", "-A", join(ROOT, "cli.ts"), "render", project, "-o", vid]);
    await run(node, [cli, "render", project, "-o", hf, "--quiet", "--workers", "1"], {
      PATH: Deno.env.get("PATH") ?? "",
      HOME: Deno.env.get("HOME") ?? "/tmp",
      PRODUCER_HEADLESS_SHELL_PATH: HEADLESS_SHELL,
      HYPERFRAMES_BROWSER_PATH: HEADLESS_SHELL,
      PUPPETEER_SKIP_DOWNLOAD: "1",
      HYPERFRAMES_NO_TELEMETRY: "1",
      HF_CLI_TELEMETRY_DISABLED: "1",
      DO_NOT_TRACK: "1",
      NO_COLOR: "1",
    });
    const psnr = await framePsnr(vid, hf, join(work, "psnr.txt"));
    const finite = psnr.map((v) => Math.min(v, 100));
    const mean = finite.reduce((sum, v) => sum + v, 0) / finite.length;
    const lowest = finite.indexOf(Math.min(...finite));
    const under = psnr.flatMap((v, n) => v < 30 ? [`${n} (${v.toFixed(1)} dB)`] : []);
    console.log(
      `frames ${psnr.length}, mean PSNR ${mean.toFixed(1)} dB (identical frames count as 100)`,
    );
    console.log(`lowest: frame ${lowest}, ${finite[lowest].toFixed(1)} dB`);
    console.log(`under 30 dB: ${under.length > 0 ? under.join(", ") : "none"}`);
    if (mean < 30) Deno.exitCode = 1;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (import.meta.main) await main();
