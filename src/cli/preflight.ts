/**
 * The check every command that renders runs first: `vid render`, `vid still`,
 * `vid render-batch`, `vid cloud render`, `vid lambda render` and `vid lambda render-batch`
 * run the static and media parts of `vid check` on the project (no browser: milliseconds
 * to a second) and stop, naming each error with its file:line:column and the fix, before
 * the first frame renders, a site is uploaded or a render is bought. What is an error is
 * the one severity table (`SEVERITY` in `src/check/problems.ts`). `--no-check` skips it,
 * and says so.
 *
 * @module
 */

import { Option } from "@commander-js/extra-typings";

/** The `--no-check` flag, the same on every command that runs the check. */
export function noCheckOption(): Option<"--no-check"> {
  return new Option(
    "--no-check",
    "render without first running the static and media parts of vid check (errors and all)",
  );
}

/** What {@linkcode checkBeforeSpending} checks besides the project. */
export interface SpendingCheck {
  /** False with `--no-check`: only the notice is printed. @default true */
  enabled?: boolean;
  /** Inline JSON overrides (`--variables`). */
  variables?: string;
  /** JSON/JSONC overrides file (`--variables-file`). */
  variablesFile?: string;
  /** Told that the check was skipped, and of a part the checker could not run. */
  warn?: (message: string) => void;
}

/**
 * Runs the static and media check on a local project, with the overrides the render
 * gets; throws `CheckFailedError` (exit 1) listing the errors. With `enabled: false` it
 * only says, through `warn`, that the render goes unchecked.
 *
 * @example
 * ```ts no_run
 * await checkBeforeSpending("examples/hello", "index.html", { variables: '{"title":"Hi"}' });
 * ```
 */
export async function checkBeforeSpending(
  target: string,
  entry: string | undefined,
  check: SpendingCheck = {},
): Promise<void> {
  if (check.enabled === false) {
    check.warn?.("--no-check: rendering without vid check; its errors are not looked for");
    return;
  }
  const [{ readComposition }, { preflight }, { loadOverrides }] = await Promise.all([
    import("../composition/composition.ts"),
    import("../check/check.ts"),
    import("../composition/variables.ts"),
  ]);
  const overrides = await loadOverrides(check);
  const warnings = await preflight(await readComposition(target, entry), overrides);
  // The render prints its own warnings about declarations and overrides; what only the
  // check knows is that it could not run a part.
  for (const p of warnings) if (p.kind === "checker") check.warn?.(p.message);
}
