/**
 * The check the paying commands run before spending anything: `vid render-batch`,
 * `vid lambda render-batch` and `vid cloud render` run the static and media parts of
 * `vid check` on the project (no browser: a second or so) and stop, naming each error,
 * before one row renders, a site is uploaded or a render is bought. `--no-check` skips it.
 *
 * @module
 */

import { Option } from "@commander-js/extra-typings";

/** The `--no-check` flag, the same on every command that runs the check. */
export function noCheckOption(): Option<"--no-check"> {
  return new Option(
    "--no-check",
    "skip the static and media parts of vid check run before anything is rendered or uploaded",
  );
}

/**
 * Warns, before a render, about what it would leave out without failing: elements vid
 * does not render (a missing sub-composition file, a template nothing instantiates, a
 * clip after the end) and misspelt attributes vid does not read. The static part of the
 * check without the script parse: no process is started. Never throws (the render
 * reports a composition it cannot read).
 *
 * @example
 * ```ts no_run
 * await warnUnrendered("examples/hello", "index.html", (m) => console.error(m));
 * ```
 */
export async function warnUnrendered(
  target: string,
  entry: string | undefined,
  warn: (message: string) => void,
): Promise<void> {
  try {
    const [{ readComposition }, { staticCheck }, { formatProblem }] = await Promise.all([
      import("../composition/composition.ts"),
      import("../check/static.ts"),
      import("../check/problems.ts"),
    ]);
    const composition = await readComposition(target, entry);
    const { problems } = await staticCheck({ composition, syntax: false });
    for (const p of problems) {
      if (p.kind !== "unrendered" && p.kind !== "unknown-attribute") continue;
      warn(
        formatProblem({ ...p, severity: "warning" }).split("\n")[0].replace(
          /^(\S+: )?warning: /,
          "$1",
        ),
      );
    }
  } catch {
    // the render itself says what is wrong with the composition
  }
}

/**
 * Runs the static and media check on a local project unless `enabled` is false; throws
 * `CheckFailedError` (exit 1) listing the errors.
 *
 * @example
 * ```ts no_run
 * await checkBeforeSpending("examples/hello", "index.html", true);
 * ```
 */
export async function checkBeforeSpending(
  target: string,
  entry: string | undefined,
  enabled: boolean,
): Promise<void> {
  if (!enabled) return;
  const [{ readComposition }, { preflight }] = await Promise.all([
    import("../composition/composition.ts"),
    import("../check/check.ts"),
  ]);
  await preflight(await readComposition(target, entry));
}
