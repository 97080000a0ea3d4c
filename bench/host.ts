/**
 * The host a figure was measured on: CPU model, cores, Chromium and ffmpeg versions. Chromium's
 * CPU per frame doubled from one host to another (same version), so every benchmark prints this
 * line beside its figures and bench/README.md records it with each table.
 *
 * @example
 * ```ts no_run
 * import { describeHost, hostLine } from "./host.ts";
 * console.log(hostLine(await describeHost()));
 * ```
 *
 * @module
 */

import { execFile } from "node:child_process";
import { cpus } from "node:os";
import { chromiumVersion, findFfmpeg, findHeadlessShell } from "../src/render/system.ts";

/** What a benchmark figure depends on besides the code. */
export interface HostInfo {
  /** The CPU model the kernel reports (`/proc/cpuinfo`'s `model name`). */
  cpu: string;
  /** Logical cores. */
  cores: number;
  /** chromium-headless-shell's version, `"unknown"` when missing. */
  chromium: string;
  /** ffmpeg's version, `"unknown"` when missing. */
  ffmpeg: string;
}

function ffmpegVersion(ffmpeg: string): Promise<string> {
  return new Promise((resolve) => {
    execFile(ffmpeg, ["-version"], { timeout: 10_000 }, (error, stdout) => {
      resolve(error ? "unknown" : /^ffmpeg version (\S+)/.exec(String(stdout))?.[1] ?? "unknown");
    });
  });
}

/** Reads the host's CPU model, cores, Chromium and ffmpeg versions (~0.1 s). */
export async function describeHost(): Promise<HostInfo> {
  const shell = await findHeadlessShell();
  const { ffmpeg } = await findFfmpeg();
  return {
    cpu: cpus()[0]?.model.trim() || "unknown",
    cores: navigator.hardwareConcurrency,
    chromium: shell ? await chromiumVersion(shell) : "unknown",
    ffmpeg: ffmpeg ? await ffmpegVersion(ffmpeg) : "unknown",
  };
}

/** One line for a report: `host: AMD EPYC, 2 cores; Chromium 156.0.8078.114; ffmpeg 5.1.9`. */
export function hostLine(host: HostInfo): string {
  return `host: ${host.cpu}, ${host.cores} cores; Chromium ${host.chromium}; ffmpeg ${host.ffmpeg}`;
}
