/**
 * Execution errors as a person reads them, shared by `vid lambda progress` and the server's
 * distributed backend.
 *
 * @module
 */

/**
 * An execution error as a person reads it. A failed chunk's cause carries the function's
 * error as Lambda reports it, JSON (`{"errorType":…,"errorMessage":"chunk 1 (frames
 * 10-19) failed: …"}`); its message already names the chunk, so it stands alone.
 */
export function readableExecutionError(error: string): string {
  return sitePaths(parsedCause(error));
}

/**
 * The worker keeps a site's files under `<tmpdir>/vid-sites/<siteId>/`; a path there means
 * nothing to the user, who knows the file by its path in the project.
 */
function sitePaths(message: string): string {
  return message.replace(
    /(?:\/[^\s"'():,]+)*\/vid-sites\/(site-[A-Za-z0-9_-]+)\/([^\s"':,]+)/g,
    (_all, siteId: string, path: string) => `${path} (in site ${siteId})`,
  );
}

function parsedCause(error: string): string {
  const json = error.indexOf("{");
  if (json < 0) return error;
  const message = errorMessageOf(error.slice(json));
  if (message === undefined) return error;
  const before = error.slice(0, json).trimEnd();
  return /^chunk \d+ /.test(message) || before === "" ? message : `${before} ${message}`;
}

/**
 * The `errorMessage` of Lambda's error JSON. The workflow splices a function's cause into
 * its own with `States.Format`, which does not escape quotes, so a message holding `"`
 * arrives as broken JSON: then the message is what lies between `"errorMessage":"` and the
 * closing `"}` (or `","trace"`).
 */
function errorMessageOf(text: string): string | undefined {
  try {
    const parsed = JSON.parse(text) as { errorMessage?: unknown };
    return typeof parsed.errorMessage === "string" ? parsed.errorMessage : undefined;
  } catch {
    const match = /^\{"errorType":"[^"]*","errorMessage":"([\s\S]*?)"(?:,"trace":[\s\S]*)?\}$/
      .exec(text.trim());
    return match?.[1];
  }
}
