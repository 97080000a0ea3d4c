/**
 * Database locations as `vid server --database` takes them, and the errors that name them.
 * A database URL carries a password: every message shows the URL with it replaced by `***`,
 * so a log or a terminal never holds it.
 *
 * @module
 */

import { EXIT_FAILED, EXIT_USAGE, VidError } from "../../errors.ts";

/** How the value of `--database` / `VID_DATABASE_URL` is set. */
export const DATABASE_FLAG = "--database";
/** The environment variable `--database` falls back on. */
export const DATABASE_ENV = "VID_DATABASE_URL";

/**
 * `url` with its password replaced by `***` (a string that does not parse as a URL is shown
 * as `<not a URL>` rather than risk echoing a password).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(redactUrl("postgres://vid:s3cret@db:5432/vid"), "postgres://vid:***@db:5432/vid");
 * assert.equal(redactUrl("postgres://db/vid"), "postgres://db/vid");
 * ```
 */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== "") parsed.password = "***";
    return parsed.href;
  } catch {
    return "<not a URL>";
  }
}

/** `--database` is not a PostgreSQL URL vid can use. */
export class DatabaseUrlError extends VidError {
  override name = "DatabaseUrlError";
  constructor(url: string, detail: string) {
    // No `detail`: the command line's message keeps the (redacted) URL it is about.
    super(`${DATABASE_FLAG} ${redactUrl(url)}: ${detail}`, {
      field: "database",
      flag: DATABASE_FLAG,
      exitCode: EXIT_USAGE,
    });
  }
}

/** The database at a well-formed URL did not answer, or refused the connection. */
export class DatabaseUnreachableError extends VidError {
  override name = "DatabaseUnreachableError";
  constructor(url: string, reason: string, options: { cause?: unknown } = {}) {
    const password = safePassword(url);
    const said = password === "" ? reason : reason.split(password).join("***");
    super(
      `could not use the database at ${redactUrl(url)} (${said}): check that PostgreSQL runs ` +
        `there and accepts connections from this machine, and the URL's host, port, user, ` +
        `password and database name (${DATABASE_FLAG} or ${DATABASE_ENV})`,
      { field: "database", flag: DATABASE_FLAG, exitCode: EXIT_FAILED, cause: options.cause },
    );
  }
}

function safePassword(url: string): string {
  try {
    return decodeURIComponent(new URL(url).password);
  } catch {
    return "";
  }
}

/**
 * The database stopped answering a running server (restarted, network gone). The API answers
 * 503 with `Retry-After` meanwhile; the client reconnects by itself once it is back.
 */
export class DatabaseUnavailableError extends VidError {
  override name = "DatabaseUnavailableError";
  /** `Retry-After` of the API's 503 while the database is away. */
  static readonly RETRY_AFTER_SECONDS = 5;
  constructor(reason: string, options: { cause?: unknown } = {}) {
    super(`the database is not answering (${reason}); retrying as requests come`, {
      field: "database",
      exitCode: EXIT_FAILED,
      cause: options.cause,
    });
  }
}

/**
 * Checks a PostgreSQL URL: `postgres://` or `postgresql://`, a host and a database name.
 *
 * @throws {DatabaseUrlError} It is not one.
 */
export function checkPostgresUrl(url: string): URL {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new DatabaseUrlError(
      url,
      "is not a URL; give postgres://user:password@host:5432/database, or leave it out for " +
        "the SQLite database in --data-dir",
    );
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    throw new DatabaseUrlError(
      url,
      `${parsed.protocol}// is not supported; give postgres://user:password@host:5432/database`,
    );
  }
  if (parsed.hostname === "" || parsed.pathname.replace(/^\//, "") === "") {
    throw new DatabaseUrlError(
      url,
      "needs a host and a database name: postgres://user:password@host:5432/database",
    );
  }
  return parsed;
}
