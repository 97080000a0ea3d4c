/**
 * The media part of `vid check`: every `<video>`, `<audio>`, `<source>` and `<img>` file
 * of the project is probed with the renderer's media probe (`probeMedia`, ffprobe) and
 * its first half second decoded by ffmpeg, so a file that is not what its element needs
 * (a corrupt clip, a picture without a video stream, a text file named `.mp3`) is named
 * with ffmpeg's own reason before a render spends anything on it. No browser.
 *
 * @module
 */

import type { Composition } from "../composition/composition.ts";
import { runFfmpeg } from "../render/encode.ts";
import { probeMedia } from "../render/media.ts";
import { requireFfmpeg, requireFfprobe } from "../render/system.ts";
import { fileFinder, projectPath } from "./files.ts";
import { type CheckProblem, SEVERITY } from "./problems.ts";
import type { References } from "./references.ts";

/** Formats ffmpeg does not read, left to the browser (which decodes them at load). */
const BROWSER_ONLY = /\.(svg|avif|ico)$/i;

/**
 * Probes the media files `references` name. Files that do not exist are the static
 * part's finding and are skipped here.
 *
 * @example
 * ```ts no_run
 * import { readComposition } from "../composition/composition.ts";
 * import { staticCheck } from "./static.ts";
 *
 * const composition = await readComposition("examples/hello");
 * const { references } = await staticCheck({ composition });
 * const problems = await mediaCheck(composition, references);
 * ```
 */
export async function mediaCheck(
  composition: Composition,
  references: References,
): Promise<CheckProblem[]> {
  const exists = fileFinder(composition.projectDir);
  const seen = new Map<string, { tag: string; line: number; column: number; url: string }>();
  for (const ref of references.files) {
    if (ref.kind !== "media" && ref.kind !== "image") continue;
    const path = projectPath(ref.url, composition.file, composition.projectDir);
    if (path.kind !== "local" || BROWSER_ONLY.test(path.relative)) continue;
    if (seen.has(path.relative) || await exists(path.relative) !== null) continue;
    seen.set(path.relative, {
      tag: ref.tag ?? "media",
      line: ref.line,
      column: ref.column,
      url: ref.url,
    });
  }
  if (seen.size === 0) return [];
  const [ffmpeg, ffprobe] = await Promise.all([requireFfmpeg(), requireFfprobe()]);
  const problems: CheckProblem[] = [];
  // Two at a time: each is a short ffmpeg run.
  const entries = [...seen.entries()];
  const probeOne = async ([relative, ref]: (typeof entries)[number]): Promise<void> => {
    const file = `${composition.projectDir}/${relative}`;
    const base = {
      severity: SEVERITY.media,
      part: "media" as const,
      kind: "media" as const,
      file: composition.entry,
      line: ref.line,
      column: ref.column,
      field: ref.url,
    };
    try {
      const probe = await probeMedia(ffprobe, file);
      const needsPicture = ref.tag === "video" || ref.tag === "img";
      if (needsPicture && !probe.hasVideo) {
        problems.push({
          ...base,
          message: `<${ref.tag}> "${ref.url}" has no picture (no video stream)`,
        });
        return;
      }
      if (ref.tag === "audio" && !probe.hasAudio) {
        problems.push({ ...base, message: `<audio> "${ref.url}" has no audio stream` });
        return;
      }
      await runFfmpeg(ffmpeg, ["-i", file, "-t", "0.5", "-f", "null", "-"], relative);
    } catch (error) {
      const reason = (error as Error).message
        .replace(/^cannot read media [^:]*: /, "")
        .replace(/^ffmpeg failed writing [^:]*: /, "")
        .replaceAll(file, relative)
        .split("\n").filter((l) => l.trim() !== "").slice(-2).join("; ");
      problems.push({
        ...base,
        message: `<${ref.tag}> "${ref.url}" cannot be decoded: ${reason}`,
      });
    }
  };
  for (let i = 0; i < entries.length; i += 2) {
    await Promise.all(entries.slice(i, i + 2).map(probeOne));
  }
  return problems;
}
