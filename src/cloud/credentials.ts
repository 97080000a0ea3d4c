/**
 * The stored credential of the hosted API and how the active one is chosen.
 *
 * Resolution order, first match wins: the environment variable
 * `CLOUD_API_KEY`, the environment variable `VID_API_KEY`, the credentials file. An empty
 * environment variable counts as unset.
 *
 * The credentials file is `~/.cloud/credentials` (home from `HOME`, else `USERPROFILE`);
 * the environment variable `VID_CREDENTIALS_FILE` points elsewhere (tests, several
 * profiles). It is shared with the provider's own command-line tool, so its format is
 * plain JSON with snake_case keys, one of:
 *
 * ```json
 * {"version": 1, "base_url": "http://127.0.0.1:8787", "type": "api_key", "api_key": "vid_sk_…"}
 * {"version": 1, "base_url": "http://127.0.0.1:8787", "type": "oauth",
 *  "access_token": "vid_at_…", "refresh_token": "vid_rt_…", "expires_at": 1767225600,
 *  "email": "ana@example.com"}
 * ```
 *
 * `base_url` is the API the credential was issued by; `expires_at` is when the access
 * token expires, in Unix seconds; `email` is informational. The file is written
 * atomically (a temporary file created with mode `0600` in the same folder, then renamed
 * over it) in a folder created with mode `0700`; existing modes are never widened. A file
 * readable by others is still read, with a warning for the caller to print.
 *
 * The API address: `CLOUD_API_URL` (which overrides the backend address), else the `base_url` of the
 * stored credential, else {@linkcode DEFAULT_BASE_URL}.
 *
 * Web standards and `node:` built-ins only, so the npm SDK can use it under Node.
 *
 * @module
 */

import { chmod, mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import process from "node:process";
import { isPlainObject } from "../util/json_shape.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/**
 * The API address when neither `CLOUD_API_URL` nor a stored credential names one: a
 * `vid server` on this machine with its default port. The service is self-hosted, so
 * there is no public address to default to.
 */
export const DEFAULT_BASE_URL = "http://127.0.0.1:8787";

/** Environment variables, as `process.env` or `Deno.env.toObject()` give them. */
export type Env = Readonly<Record<string, string | undefined>>;

/** A long-lived API key (`vid auth login --api-key`, or an environment variable). */
export interface ApiKeyCredentials {
  /** Format version of the file. */
  version: 1;
  /** The API the key belongs to. */
  base_url: string;
  /** An API key. */
  type: "api_key";
  /** The key. */
  api_key: string;
}

/** The tokens of a browser sign-in (`vid auth login`). */
export interface OAuthCredentials {
  /** Format version of the file. */
  version: 1;
  /** The API that issued the tokens. */
  base_url: string;
  /** An OAuth sign-in. */
  type: "oauth";
  /** Bearer token. */
  access_token: string;
  /** Token that gets a new access token. */
  refresh_token: string;
  /** When the access token expires, in Unix seconds. */
  expires_at: number;
  /** The signed-in account's email, for display. */
  email?: string;
}

/** A credential of the hosted API. */
export type Credentials = ApiKeyCredentials | OAuthCredentials;

/** Where the active credential came from. */
export type CredentialSource = "CLOUD_API_KEY" | "VID_API_KEY" | "file";

/** The active credential, as {@linkcode resolveCredential} finds it. */
export interface ResolvedCredential {
  /** Where the credential came from. */
  source: CredentialSource;
  /** The credential. */
  credential: Credentials;
  /** The API address to use with it (see {@linkcode baseUrl}). */
  baseUrl: string;
  /** The credentials file, when the credential came from it. */
  file?: string;
  /** Something the user should be told (e.g. a file readable by others). */
  warning?: string;
}

/** A credentials file that was read, with a warning about its mode when needed. */
export interface StoredCredential {
  /** The credential stored. */
  credential: Credentials;
  /** The credentials file. */
  file: string;
  /** A warning about the file (permissions), if any. */
  warning?: string;
}

/** No credential anywhere: no environment variable and no credentials file. */
export class NotSignedInError extends VidError {
  /** Always `"NotSignedInError"`. */
  override name = "NotSignedInError";
  /** Always `"credentials"`. */
  override readonly field = "credentials";
  /**
   * Creates the error.
   *
   * @param file The credentials file that was looked for.
   */
  constructor(file: string) {
    super(
      `not signed in: no CLOUD_API_KEY or VID_API_KEY in the environment and no credentials ` +
        `file at ${file}. Run \`vid auth login\` (browser) or \`vid auth login --api-key\`, ` +
        `or set CLOUD_API_KEY.`,
      { exitCode: EXIT_FAILED },
    );
  }
}

/** The credentials file cannot be read, parsed or written. */
export class CredentialsFileError extends VidError {
  /** Always `"CredentialsFileError"`. */
  override name = "CredentialsFileError";
  /** The field of the file at fault. */
  override readonly field: string;
  /** The credentials file. */
  readonly file: string;
  /**
   * Creates the error.
   *
   * @param file The credentials file.
   * @param field The field at fault.
   * @param message What is wrong and how to fix it.
   */
  constructor(file: string, field: string, message: string) {
    super(`credentials file ${file}: ${message}`, { exitCode: EXIT_FAILED });
    this.file = file;
    this.field = field;
  }
}

function setting(env: Env, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/**
 * The credentials file: `VID_CREDENTIALS_FILE`, else `~/.cloud/credentials`.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(credentialsPath({ HOME: "/home/ana" }), "/home/ana/.cloud/credentials");
 * ```
 */
export function credentialsPath(env: Env = process.env): string {
  const override = setting(env, "VID_CREDENTIALS_FILE");
  if (override) return override;
  const home = setting(env, "HOME") ?? setting(env, "USERPROFILE") ?? homedir();
  return join(home, ".cloud", "credentials");
}

/**
 * The API address: `CLOUD_API_URL`, else the address `credential` was issued by, else
 * {@linkcode DEFAULT_BASE_URL}. Without a trailing slash.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(baseUrl({ CLOUD_API_URL: "https://vid.example.com/" }), "https://vid.example.com");
 * assert.equal(baseUrl({}), "http://127.0.0.1:8787");
 * ```
 */
export function baseUrl(env: Env = process.env, credential?: Credentials): string {
  const url = setting(env, "CLOUD_API_URL") ?? credential?.base_url ?? DEFAULT_BASE_URL;
  return url.replace(/\/+$/, "");
}

function errorCode(error: unknown): string | undefined {
  return (error as { code?: string } | undefined)?.code;
}

/** Checks the parsed content of a credentials file. */
function parseCredentials(file: string, text: string): Credentials {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new CredentialsFileError(
      file,
      "credentials",
      `not valid JSON (${(error as Error).message}); sign in again with \`vid auth login\``,
    );
  }
  function fail(field: string, problem: string): never {
    throw new CredentialsFileError(
      file,
      field,
      `"${field}" ${problem}; sign in again with \`vid auth login\``,
    );
  }
  if (!isPlainObject(data)) fail("version", "is missing (the file must hold a JSON object)");
  const record = data;
  if (record.version !== 1) fail("version", `must be 1, got ${JSON.stringify(record.version)}`);
  function stringField(field: string): string {
    const value = record[field];
    if (typeof value !== "string" || value === "") fail(field, "must be a non-empty string");
    return value;
  }
  const base = stringField("base_url");
  if (record.type === "api_key") {
    return { version: 1, base_url: base, type: "api_key", api_key: stringField("api_key") };
  }
  if (record.type === "oauth") {
    const expiresAt = record.expires_at;
    if (typeof expiresAt !== "number" || !Number.isFinite(expiresAt)) {
      fail("expires_at", "must be a number of Unix seconds");
    }
    const email = record.email;
    if (email !== undefined && typeof email !== "string") fail("email", "must be a string");
    return {
      version: 1,
      base_url: base,
      type: "oauth",
      access_token: stringField("access_token"),
      refresh_token: stringField("refresh_token"),
      expires_at: expiresAt,
      ...(email === undefined ? {} : { email }),
    };
  }
  return fail("type", `must be "api_key" or "oauth", got ${JSON.stringify(record.type)}`);
}

/**
 * Reads the credentials file; `undefined` when there is none. A file whose mode lets
 * others read or write it is still read, with a `warning`.
 *
 * @example
 * ```ts no_run
 * const stored = await readCredentials();
 * if (stored?.warning) console.error(`warning: ${stored.warning}`);
 * ```
 */
export async function readCredentials(
  env: Env = process.env,
): Promise<StoredCredential | undefined> {
  const file = credentialsPath(env);
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if (errorCode(error) === "ENOENT") return undefined;
    throw new CredentialsFileError(file, "credentials", `cannot read: ${(error as Error).message}`);
  }
  const credential = parseCredentials(file, text);
  let warning: string | undefined;
  if (process.platform !== "win32") {
    const mode = (await stat(file)).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      warning = `credentials file ${file} has mode 0${
        mode.toString(8)
      }: other users may read your credential. Restrict it with \`chmod 600 ${file}\`.`;
    }
  }
  return warning ? { credential, file, warning } : { credential, file };
}

/**
 * Stores `credential` in the credentials file, atomically, readable by the owner only.
 * Returns the file's path.
 *
 * @example
 * ```ts no_run
 * await writeCredentials({
 *   version: 1,
 *   base_url: "http://127.0.0.1:8787",
 *   type: "api_key",
 *   api_key: "vid_sk_…",
 * });
 * ```
 */
export async function writeCredentials(
  credential: Credentials,
  env: Env = process.env,
): Promise<string> {
  const file = credentialsPath(env);
  const dir = dirname(file);
  try {
    // The mode applies to folders created here only; an existing folder keeps its mode.
    await mkdir(dir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw new CredentialsFileError(
      file,
      "credentials",
      `cannot create ${dir}: ${(error as Error).message}`,
    );
  }
  const random = Array.from(crypto.getRandomValues(new Uint8Array(6)))
    .map((b) => b.toString(16).padStart(2, "0")).join("");
  const temp = join(dir, `.credentials.${random}.tmp`);
  try {
    const handle = await open(temp, "wx", 0o600);
    try {
      // The creation mode is narrowed by the umask only, but a permissive ACL default
      // could still widen it on some systems: set it explicitly before writing the secret.
      if (process.platform !== "win32") await chmod(temp, 0o600);
      await handle.writeFile(JSON.stringify(credential, null, 2) + "\n", "utf8");
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temp, file);
  } catch (error) {
    await rm(temp, { force: true }).catch(() => {});
    throw new CredentialsFileError(
      file,
      "credentials",
      `cannot write: ${(error as Error).message}`,
    );
  }
  return file;
}

/**
 * Deletes the credentials file. Returns whether there was one.
 *
 * @example
 * ```ts no_run
 * if (!(await deleteCredentials())) console.log("not signed in");
 * ```
 */
export async function deleteCredentials(env: Env = process.env): Promise<boolean> {
  const file = credentialsPath(env);
  try {
    await rm(file);
    return true;
  } catch (error) {
    if (errorCode(error) === "ENOENT") return false;
    throw new CredentialsFileError(
      file,
      "credentials",
      `cannot delete: ${(error as Error).message}`,
    );
  }
}

/**
 * The active credential: `CLOUD_API_KEY`, else `VID_API_KEY`, else the credentials file.
 * Throws {@linkcode NotSignedInError} when there is none.
 *
 * @example
 * ```ts no_run
 * const { source, credential, baseUrl } = await resolveCredential();
 * ```
 */
export async function resolveCredential(env: Env = process.env): Promise<ResolvedCredential> {
  for (const source of ["CLOUD_API_KEY", "VID_API_KEY"] as const) {
    const key = setting(env, source);
    if (key) {
      const credential: ApiKeyCredentials = {
        version: 1,
        base_url: baseUrl(env),
        type: "api_key",
        api_key: key,
      };
      return { source, credential, baseUrl: credential.base_url };
    }
  }
  const stored = await readCredentials(env);
  if (!stored) throw new NotSignedInError(credentialsPath(env));
  return {
    source: "file",
    credential: stored.credential,
    baseUrl: baseUrl(env, stored.credential),
    file: stored.file,
    ...(stored.warning ? { warning: stored.warning } : {}),
  };
}
