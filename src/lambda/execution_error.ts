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
  const json = error.indexOf("{");
  if (json < 0) return error;
  try {
    const parsed = JSON.parse(error.slice(json)) as { errorMessage?: unknown };
    if (typeof parsed.errorMessage !== "string") return error;
    const before = error.slice(0, json).trimEnd();
    return /^chunk \d+ /.test(parsed.errorMessage) || before === ""
      ? parsed.errorMessage
      : `${before} ${parsed.errorMessage}`;
  } catch {
    return error;
  }
}
