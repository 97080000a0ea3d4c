/**
 * Progress display for long work on stderr: a redrawn bar on a terminal, plain lines at
 * most every few seconds otherwise (CI logs, pipes).
 *
 * @module
 */

import type { RenderProgress } from "../render/render.ts";

function formatEta(seconds: number | undefined): string {
  if (seconds === undefined || !Number.isFinite(seconds)) return "--";
  const s = Math.ceil(seconds);
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s` : `${s}s`;
}

/** Returns a progress callback writing to stderr. */
export function progressReporter(
  isTerminal: boolean = Deno.stderr.isTerminal(),
  intervalMs = 2000,
): (progress: RenderProgress) => void {
  const encoder = new TextEncoder();
  const write = (text: string) => Deno.stderr.writeSync(encoder.encode(text));
  let lastPrint = 0;
  let lastStage = "";
  return (p: RenderProgress) => {
    const now = performance.now();
    const ratio = p.framesTotal > 0 ? p.framesDone / p.framesTotal : 0;
    const summary = p.media
      ? `${p.media.file} (${p.media.index}/${p.media.count}) ${
        p.media.cached ? "cached" : `${Math.round(p.media.fraction * 100)}%`
      }`
      : `${p.framesDone}/${p.framesTotal} frames  ${p.fps.toFixed(1)} fps  ETA ${
        formatEta(p.etaSeconds)
      }`;
    if (isTerminal) {
      const busy = p.stage === "rendering" && p.framesDone < p.framesTotal ||
        p.media !== undefined && p.media.fraction < 1;
      if (busy && now - lastPrint < 100) return;
      lastPrint = now;
      const width = 30;
      const filled = Math.round(ratio * width);
      const bar = "█".repeat(filled) + "░".repeat(width - filled);
      const line = p.stage === "rendering" || p.stage === "done"
        ? `${bar} ${Math.round(ratio * 100)}%  ${summary}`
        : p.media
        ? `${p.stage} ${summary}`
        : p.stage;
      write(`\r\x1b[2K${line}`);
      if (p.stage === "done") write("\n");
      return;
    }
    // Each media source gets its own line as it starts and ends.
    const stage = p.media && (p.media.fraction === 0 || p.media.fraction === 1)
      ? `${p.stage} ${p.media.index} ${p.media.fraction}`
      : p.stage;
    const stageChanged = stage !== lastStage;
    if (!stageChanged && now - lastPrint < intervalMs) return;
    lastPrint = now;
    lastStage = stage;
    write(p.stage === "rendering" ? `rendering ${summary}\n` : `${p.stage} ${summary}\n`);
  };
}
