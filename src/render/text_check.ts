/**
 * A render's own look at its frame 0's text: visible text reading `undefined`, `NaN`, `null`
 * or `[object Object]` is a value that went wrong on its way to the screen (a variable read
 * but not declared, a dropped declaration, a wrong-typed override), and every frame of the
 * video would show it. The chunk renderer (every render: local, server, Lambda) and
 * `vid still` run `vid check`'s text probe (`src/runtime/text_probe.ts`) once, at frame 0
 * (`still` at its frame), and fail with {@linkcode BadTextError} naming the element, the text
 * and the variable. An element that means to show such a word carries `data-text-ok`.
 *
 * @module
 */

import { EXIT_FAILED, VidError } from "../errors.ts";
import { TEXT_PROBE_BUNDLE } from "../runtime/text_probe_bundle.ts";
import { badTextMessage, type TextFinding } from "../runtime/text_checks.ts";
import { evaluate } from "./capture.ts";
import type { CdpSession } from "./cdp.ts";

/** A render's frame shows text that reads `undefined`, `NaN`, `null` or `[object Object]`. */
export class BadTextError extends VidError {
  /** Always `"BadTextError"`. */
  override name = "BadTextError";
  /** The frame it was seen at. */
  readonly frame: number;
  /** What the probe found. */
  readonly findings: TextFinding[];

  /**
   * Creates the error for the findings of one frame.
   *
   * @param frame The frame.
   * @param findings The bad-text findings (at least one).
   */
  constructor(frame: number, findings: TextFinding[]) {
    const first = findings[0];
    const variable = first?.suspects?.[0]?.replace(/^dropped:/, "");
    super(
      `frame ${frame}: ${findings.map(badTextMessage).join("; ")}; nothing was written`,
      { field: variable ? `variables.${variable}` : "text", exitCode: EXIT_FAILED },
    );
    this.frame = frame;
    this.findings = findings;
  }
}

/**
 * Throws {@linkcode BadTextError} when the page, seeked to `frame`, shows bad text.
 *
 * @example
 * ```ts no_run
 * import type { CdpSession } from "./cdp.ts";
 *
 * declare const page: CdpSession;
 * await assertTextShown(page, 320, 180, 0);
 * ```
 */
export async function assertTextShown(
  page: CdpSession,
  width: number,
  height: number,
  frame: number,
): Promise<void> {
  const findings =
    (await evaluate(page, `(${TEXT_PROBE_BUNDLE})(${width}, ${height})`) as TextFinding[]).filter((
      f,
    ) => f.kind === "bad-text");
  if (findings.length > 0) throw new BadTextError(frame, findings);
}
