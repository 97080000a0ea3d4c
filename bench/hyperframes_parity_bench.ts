/**
 * Parity with HyperFrames: projects rendered by `vid render` and by the HyperFrames CLI
 * (installed and run as `peer_bench.ts` does: pinned, under Node 22, on the system's
 * chromium-headless-shell), at the same fps, their frames compared with ffmpeg's PSNR after
 * both are scaled to 480x270. Prints a Markdown table (case, exit codes of both, frames, mean and
 * worst PSNR) with the host's CPU model and Chromium version, the table docs/hyperframes.md shows.
 *
 * The cases: the tests' HyperFrames-style project and starter fixtures
 * (`tests/fixtures/hyperframes/`), and, when `HYPERFRAMES_REPO` names a clone of HyperFrames'
 * public repository (a bare git folder is enough: the examples are read with `git archive`),
 * its `registry/examples/*`. Each project is used as a HyperFrames user would bring it, with GSAP
 * served from the project instead of its CDN (vid's npm copy of GSAP, as `vid add gsap` would
 * give) and Three.js too (the version its jsDelivr URL names, from npm, installed once into
 * vid's cache); an example made for a video (`__VIDEO_SRC__`) gets a 10-second test clip.
 * Nothing of HyperFrames' repository is copied into this one.
 *
 * CPU-heavy (two renders of every case, HyperFrames' at 1920x1080): so each case is cut to
 * `--seconds` (2 by default: vid's `--frames`, and the root's `data-duration` and an empty
 * padding tween in HyperFrames' copy, which lasts longer where a sub-composition of the root
 * ends later) at `--fps` (10 by
 * default), and
 * `--only a,b` picks cases; `--keep <dir>` leaves the projects and both renders there. vid
 * renders with the environment of the bench: `VID_HYPERFRAMES_TEXT_RENDERING=0` measures vid
 * without HyperFrames' text rule (docs/hyperframes.md). Not a test: HyperFrames is installed
 * from npm on first use.
 *
 * ```sh
 * HYPERFRAMES_REPO=/path/to/hyperframes deno run -A bench/hyperframes_parity_bench.ts --only warm-grain
 * ```
 *
 * @module
 */

import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { node22 } from "../src/lambda/local/local_stack.ts";
import { cacheDir } from "../src/util/cache_dir.ts";
import { HEADLESS_SHELL, hyperframesCli } from "./peer_bench.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FIXTURES = join(ROOT, "tests", "fixtures", "hyperframes");
const GSAP = join(ROOT, "node_modules", "gsap", "dist", "gsap.min.js");
/** The size both renders are compared at. */
const COMPARE = { width: 480, height: 270 };

/** One project to render with both tools. */
interface ParityCase {
  /** Its name in the table. */
  name: string;
  /** Writes the project into `dir` (as its user would have it, GSAP vendored). */
  write(dir: string): Promise<void>;
}

/** What one case gave. */
export interface ParityRow {
  name: string;
  vidExit: number;
  hyperframesExit: number;
  frames: number;
  meanPsnr: number | null;
  worstPsnr: number | null;
  worstFrame: number | null;
  /** The first line of the failing tool's error, when one failed. */
  note: string;
}

/** Runs a command; returns its exit code and output, never throws on a failure. */
async function run(
  cmd: string,
  args: string[],
  env?: Record<string, string>,
): Promise<{ code: number; stdout: Uint8Array; stderr: string }> {
  const out = await new Deno.Command(cmd, {
    args,
    env,
    clearEnv: env !== undefined,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: out.stdout, stderr: new TextDecoder().decode(out.stderr) };
}

/**
 * PSNR (average over the R, G and B planes, dB) of each frame of `a` against `b`, both scaled
 * alike. Compared as RGB, each file decoded with the colour matrix it is tagged with: vid tags
 * its H.264 BT.601 and HyperFrames BT.709, so the same picture has other YUV values in each.
 */
export async function framePsnr(a: string, b: string, stats: string): Promise<number[]> {
  const scale = `scale=${COMPARE.width}:${COMPARE.height}:flags=area,format=gbrp`;
  const result = await run("ffmpeg", [
    "-v",
    "error",
    "-i",
    a,
    "-i",
    b,
    "-lavfi",
    `[0:v]${scale}[a];[1:v]${scale}[b];[a][b]psnr=stats_file=${stats}`,
    "-f",
    "null",
    "-",
  ]);
  if (result.code !== 0) throw new Error(`ffmpeg psnr failed:\n${result.stderr}`);
  return (await readFile(stats, "utf8")).trim().split("\n").map((line) => {
    const value = /psnr_avg:(\S+)/.exec(line)?.[1] ?? "inf";
    return value === "inf" ? Infinity : Number(value);
  });
}

async function copyTree(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  for (const entry of await readdir(from, { withFileTypes: true })) {
    if (entry.isDirectory()) await copyTree(join(from, entry.name), join(to, entry.name));
    else await copyFile(join(from, entry.name), join(to, entry.name));
  }
}

/**
 * A fixture of the tests, with gsap.min.js beside its entry and, for one made around the
 * user's video (the `from-file` starter), the test clip as its `clip.mp4`.
 */
function fixtureCase(name: string, folder: string, clip = false): ParityCase {
  return {
    name,
    async write(dir) {
      await copyTree(join(FIXTURES, folder), dir);
      await copyFile(GSAP, join(dir, "gsap.min.js"));
      if (clip) await testClip(join(dir, "clip.mp4"));
    },
  };
}

/** A 10-second 1920x1080 test clip with a tone, for the examples made around a video. */
async function testClip(file: string): Promise<void> {
  const result = await run("ffmpeg", [
    "-v",
    "error",
    "-y",
    "-f",
    "lavfi",
    "-i",
    "testsrc2=s=1920x1080:r=30:d=10",
    "-f",
    "lavfi",
    "-i",
    "sine=f=330:d=10",
    "-c:v",
    "libx264",
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-shortest",
    file,
  ]);
  if (result.code !== 0) throw new Error(`ffmpeg test clip failed:\n${result.stderr}`);
}

/** Three.js's module build as a page imports it from jsDelivr: `three@<version>/build/…`. */
const THREE_CDN = /https:\/\/cdn\.jsdelivr\.net\/npm\/three@([\w.-]+)\/build\/three\.module\.js/g;

/**
 * The `build/` folder of npm's `three@<version>`, installed once into vid's cache (the
 * version a page pins: vid's own dependency is another).
 */
async function threeBuild(version: string): Promise<string> {
  const prefix = join(cacheDir(), `three-${version}`);
  const build = join(prefix, "node_modules", "three", "build");
  if (await readdir(build).then(() => true, () => false)) return build;
  await mkdir(prefix, { recursive: true });
  const install = await run("npm", [
    "install",
    "--no-save",
    "--no-audit",
    "--no-fund",
    "--prefix",
    prefix,
    `three@${version}`,
  ]);
  if (install.code !== 0) throw new Error(`npm install three@${version}:\n${install.stderr}`);
  return build;
}

/** Every `.html` file under `dir`. */
async function htmlFiles(dir: string): Promise<string[]> {
  const found: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".html")) {
      found.push(join(entry.parentPath, entry.name));
    }
  }
  return found;
}

/** A registry example of HyperFrames' repository, GSAP vendored and placeholders filled. */
function exampleCase(repo: string, name: string): ParityCase {
  return {
    name,
    async write(dir) {
      await mkdir(dir, { recursive: true });
      const tar = join(dir, "..", `${name}.tar`);
      const archive = await run("git", [
        `--git-dir=${repo}`,
        "archive",
        "-o",
        tar,
        "HEAD",
        `registry/examples/${name}`,
      ]);
      if (archive.code !== 0) throw new Error(`git archive ${name}: ${archive.stderr}`);
      const untar = await run("tar", [
        "-xf",
        tar,
        "-C",
        dir,
        "--strip-components",
        "3",
      ]);
      if (untar.code !== 0) throw new Error(`tar ${name}: ${untar.stderr}`);
      await rm(tar);
      await copyFile(GSAP, join(dir, "gsap.min.js"));
      let clip = false;
      for (const file of await htmlFiles(dir)) {
        const html = await readFile(file, "utf8");
        const depth = file.slice(dir.length + 1).split("/").length - 1;
        const up = "../".repeat(depth);
        // Three.js's module imports its siblings (three.core.js since r171): the whole build
        // folder goes to three/, once per version (one version per project here).
        for (const [, version] of html.matchAll(THREE_CDN)) {
          await copyTree(await threeBuild(version), join(dir, "three"));
        }
        const vendored = html
          .replace(
            /https:\/\/cdn\.jsdelivr\.net\/npm\/gsap@[^"']*\/gsap\.min\.js/g,
            `${up}gsap.min.js`,
          )
          .replace(THREE_CDN, `./${up}three/three.module.js`)
          .replaceAll("__VIDEO_DURATION__", "10")
          .replaceAll("__VIDEO_SRC__", `${up}clip.mp4`)
          .replaceAll("__AUDIO_SRC__", `${up}clip.mp4`);
        if (vendored !== html) await writeFile(file, vendored);
        clip ||= html.includes("__VIDEO_SRC__");
      }
      if (clip) await testClip(join(dir, "clip.mp4"));
    },
  };
}

/**
 * Cuts the entry's root composition (its first `data-duration`) to `seconds` at most, and an
 * empty tween that pads a timeline to the video's length (`tl.to({}, { duration: 108 })`,
 * airbnb-deck's, whose sole registered timeline is HyperFrames' length of it) likewise.
 */
async function cutDuration(entry: string, seconds: number): Promise<void> {
  const html = await readFile(entry, "utf8");
  const cut = (all: string, value: string, text: string): string =>
    Number(value) > seconds ? text : all;
  await writeFile(
    entry,
    html
      .replace(
        /data-duration="([\d.]+)"/,
        (all, value: string) => cut(all, value, `data-duration="${seconds}"`),
      )
      .replace(
        /\.to\(\s*\{\s*\}\s*,\s*\{\s*duration:\s*([\d.]+)\s*\}\s*\)/g,
        (all, value: string) => cut(all, value, `.to({}, { duration: ${seconds} })`),
      ),
  );
}

const HYPERFRAMES_ENV = (): Record<string, string> => ({
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

/** The first line of an error out of a tool's stderr. */
function firstError(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim()).filter(Boolean);
  return lines.find((l) => /^error|error:|Error/.test(l))?.slice(0, 160) ??
    lines.at(-1)?.slice(0, 160) ?? "";
}

/** Renders one case with both tools and compares their frames. */
async function compare(
  item: ParityCase,
  work: string,
  options: { fps: number; seconds: number; cli: string; node: string },
): Promise<ParityRow> {
  // File names without the spaces and colons of a case's name (ffmpeg's filter options).
  const slug = item.name.replace(/[^\w-]+/g, "-");
  const dir = join(work, slug);
  await item.write(dir);
  // vid renders the project as it is, its first frames only (`--frames`); HyperFrames has no
  // such flag, so its copy has the root's length cut. (vid refuses a cut project whose clips
  // start after the cut end, which the whole project is not.)
  const vidDir = `${dir}-vid`;
  await copyTree(dir, vidDir);
  // Never past the project's own end (its root's first `data-duration`, when shorter).
  const own = Number(
    /data-duration="([\d.]+)"/.exec(await readFile(join(dir, "index.html"), "utf8"))?.[1],
  );
  const seconds = Number.isFinite(own) && own > 0
    ? Math.min(own, options.seconds)
    : options.seconds;
  await cutDuration(join(dir, "index.html"), options.seconds);
  const vid = join(work, `${slug}.vid.mp4`);
  const hf = join(work, `${slug}.hyperframes.mp4`);
  const fps = String(options.fps);
  const vidRun = await run(Deno.execPath(), [
    "run",
    "-A",
    join(ROOT, "cli.ts"),
    "render",
    vidDir,
    "-o",
    vid,
    "--fps",
    fps,
    "--frames",
    `0-${Math.round(seconds * options.fps) - 1}`,
    "--quality",
    "high",
  ]);
  const hfRun = await run(options.node, [
    options.cli,
    "render",
    dir,
    "-o",
    hf,
    "--fps",
    fps,
    "--quiet",
    "--workers",
    "1",
  ], HYPERFRAMES_ENV());
  const row: ParityRow = {
    name: item.name,
    vidExit: vidRun.code,
    hyperframesExit: hfRun.code,
    frames: 0,
    meanPsnr: null,
    worstPsnr: null,
    worstFrame: null,
    note: vidRun.code !== 0
      ? `vid: ${firstError(vidRun.stderr)}`
      : hfRun.code !== 0
      ? `HyperFrames: ${firstError(hfRun.stderr)}`
      : "",
  };
  if (vidRun.code !== 0 || hfRun.code !== 0) return row;
  const psnr = (await framePsnr(vid, hf, join(work, `${slug}.psnr.txt`)))
    .map((v) => Math.min(v, 100));
  row.frames = psnr.length;
  row.meanPsnr = psnr.reduce((sum, v) => sum + v, 0) / psnr.length;
  row.worstPsnr = Math.min(...psnr);
  row.worstFrame = psnr.indexOf(row.worstPsnr);
  return row;
}

/** The table docs/hyperframes.md shows. */
export function parityTable(rows: readonly ParityRow[]): string {
  const db = (v: number | null): string => v === null ? "-" : v.toFixed(1);
  return [
    "| case | vid exit | HyperFrames exit | frames | mean PSNR (dB) | worst PSNR (dB, frame) | note |",
    "| --- | --- | --- | --- | --- | --- | --- |",
    ...rows.map((r) =>
      `| ${r.name} | ${r.vidExit} | ${r.hyperframesExit} | ${r.frames} | ${db(r.meanPsnr)} | ` +
      `${db(r.worstPsnr)}${r.worstFrame === null ? "" : ` (${r.worstFrame})`} | ${r.note} |`
    ),
  ].join("\n");
}

async function chromiumVersion(): Promise<string> {
  const out = await run(HEADLESS_SHELL, ["--version"]).catch(() => undefined);
  return new TextDecoder().decode(out?.stdout ?? new Uint8Array()).trim() || "unknown";
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      fps: { type: "string", default: "10" },
      seconds: { type: "string", default: "2" },
      only: { type: "string" },
      keep: { type: "string" },
    },
  });
  const cases: ParityCase[] = [
    fixtureCase("tests: project", "project"),
    fixtureCase("tests: blank starter", "blank"),
    fixtureCase("tests: from-file starter", "from-file", true),
    fixtureCase("tests: first frame", "first-frame"),
  ];
  const repo = Deno.env.get("HYPERFRAMES_REPO");
  if (repo) {
    const listed = await run("git", [
      `--git-dir=${repo}`,
      "ls-tree",
      "-d",
      "--name-only",
      "HEAD",
      "registry/examples/",
    ]);
    for (const path of new TextDecoder().decode(listed.stdout).trim().split("\n")) {
      if (path) cases.push(exampleCase(repo, path.slice("registry/examples/".length)));
    }
  } else {
    console.error("HYPERFRAMES_REPO is not set: the registry examples are left out");
  }
  const only = values.only?.split(",");
  const chosen = only ? cases.filter((c) => only.some((o) => c.name.includes(o))) : cases;
  const [cli, node] = await Promise.all([hyperframesCli(console.error), node22()]);
  // --keep <dir>: the projects and both renders stay there, to look at what differs.
  const work = values.keep ?? await mkdtemp(join(tmpdir(), "vid-hyperframes-parity-"));
  await mkdir(work, { recursive: true });
  const rows: ParityRow[] = [];
  try {
    for (const item of chosen) {
      console.error(`rendering ${item.name}`);
      const row = await compare(item, work, {
        fps: Number(values.fps),
        seconds: Number(values.seconds),
        cli,
        node,
      });
      console.error(JSON.stringify(row));
      rows.push(row);
    }
  } finally {
    if (!values.keep) await rm(work, { recursive: true, force: true });
  }
  console.log(parityTable(rows));
  console.log(
    `\n${
      cpus()[0]?.model ?? "unknown CPU"
    } (${cpus().length} cores), ${await chromiumVersion()}, ` +
      `${values.fps} fps, first ${values.seconds} s, compared at ${COMPARE.width}x${COMPARE.height}` +
      (/^(0|off|false|no)$/i.test(Deno.env.get("VID_HYPERFRAMES_TEXT_RENDERING") ?? "")
        ? ", vid without HyperFrames' text rule"
        : ""),
  );
  if (rows.some((r) => r.meanPsnr !== null && r.meanPsnr < 30)) Deno.exitCode = 1;
}

if (import.meta.main) await main();
