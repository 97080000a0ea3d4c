/**
 * The studio's Check panel: the static and media parts of `vid check` for the composition on
 * stage (`/__preview/check`), asked again on every reload; an answer that arrives after a
 * newer question is dropped.
 *
 * @module
 */

import type { StudioElements } from "./dom.ts";

/** One finding of the check. */
export interface CheckProblem {
  /** `error` or `warning`. */
  severity: string;
  /** What `vid check` prints. */
  text: string;
}

/**
 * The panel's status line for a check's answer.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const problems = [{ severity: "error", text: "a" }, { severity: "warning", text: "b" }];
 * assert.equal(
 *   checkSummary(true, problems),
 *   "1 error, 1 warning: a render would get these wrong (vid check lists them too)",
 * );
 * assert.equal(checkSummary(false, [], "no such file"), "cannot check: no such file");
 * ```
 */
export function checkSummary(ok: boolean, problems: CheckProblem[], error?: string): string {
  const errors = problems.filter((p) => p.severity === "error").length;
  return !ok
    ? `cannot check: ${error ?? "unknown error"}`
    : problems.length === 0
    ? "no problems found (the stage shows what the page throws)"
    : `${errors} error${errors === 1 ? "" : "s"}, ${problems.length - errors} warning${
      problems.length - errors === 1 ? "" : "s"
    }: a render would get these wrong (vid check lists them too)`;
}

/**
 * Creates the panel; `entry` names the composition on stage ("" for the server's own).
 *
 * @example
 * ```ts no_run
 * import { studioElements } from "./dom.ts";
 *
 * const panel = createCheckPanel(studioElements(), () => "index.html");
 * await panel.refresh();
 * ```
 */
export function createCheckPanel(
  elements: Pick<StudioElements, "checkStatus" | "checkList">,
  entry: () => string,
): { refresh(): Promise<void> } {
  const { checkStatus, checkList } = elements;
  let projectCheckSeq = 0;
  const refresh = async (): Promise<void> => {
    const seq = ++projectCheckSeq;
    checkStatus.textContent = "checking…";
    const current = entry();
    try {
      const body = await (await fetch(
        `/__preview/check${current ? `?entry=${encodeURIComponent(current)}` : ""}`,
      )).json() as {
        ok: boolean;
        problems?: CheckProblem[];
        error?: { message: string };
      };
      if (seq !== projectCheckSeq) return;
      const problems = body.problems ?? [];
      checkList.replaceChildren(...problems.map((p) => {
        const item = document.createElement("li");
        item.dataset.severity = p.severity;
        item.textContent = p.text;
        return item;
      }));
      checkStatus.textContent = checkSummary(body.ok, problems, body.error?.message);
      checkList.dataset.checked = String(seq);
    } catch (error) {
      if (seq === projectCheckSeq) {
        checkStatus.textContent = `cannot check: ${(error as Error).message}`;
      }
    }
  };
  return { refresh };
}
