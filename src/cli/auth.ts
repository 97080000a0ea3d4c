/**
 * `vid auth`: sign in to the hosted API and manage the stored credential.
 *
 * - `vid auth login`: OAuth 2.0 with PKCE in the browser. The sign-in URL is always printed
 *   on stderr ("Open this URL to sign in: …" when no browser opened), so it can be opened
 *   by hand; `--no-browser` or `VID_NO_BROWSER=1` skip the attempt to open one.
 * - `vid auth login --api-key`: the key from a hidden prompt (stdin a terminal) or from
 *   standard input (piped), checked with `GET /v3/me` before it is stored.
 * - `vid auth status`, `vid auth refresh`, `vid auth logout`.
 *
 * No command prints a secret, not even a prefix of it. `--json` prints one JSON object on
 * stdout; errors then have the shape `{"ok": false, "error": {…}}`.
 *
 * @module
 */

import type { Command } from "@commander-js/extra-typings";
import {
  baseUrl,
  type Credentials,
  type CredentialSource,
  credentialsPath,
  deleteCredentials,
  type Env,
  readCredentials,
  resolveCredential,
  type ResolvedCredential,
  writeCredentials,
} from "../cloud/credentials.ts";
import {
  type Account,
  CredentialRejectedError,
  DEFAULT_LOGIN_TIMEOUT_MS,
  fetchAccount,
  loginWithPkce,
  openInBrowser,
  refreshStoredCredential,
  revokeToken,
} from "../cloud/oauth_client.ts";
import { EXIT, integerIn, reportError, warn } from "./shared.ts";
import { EXIT_FAILED, VidError } from "../errors.ts";

/** The machine form of `vid auth status --json`. */
export interface AuthStatusJson {
  ok: true;
  source: CredentialSource;
  /** The credentials file, when the credential came from it. */
  file?: string;
  base_url: string;
  type: Credentials["type"];
  /** OAuth only: when the access token expires, in Unix seconds. */
  expires_at?: number;
  /** Whether the access token was refreshed to answer. */
  refreshed: boolean;
  account: Account;
}

/** The user left the hidden prompt with Ctrl-C or Ctrl-D. */
class PromptCancelledError extends VidError {
  override name = "PromptCancelledError";

  /** Creates the error; the CLI exits 1. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
  }
}

/** A credential that cannot do what was asked (an API key cannot refresh). */
class AuthCommandError extends VidError {
  override name = "AuthCommandError";
  override readonly field: string;
  constructor(field: string, message: string) {
    super(message, { exitCode: EXIT_FAILED });
    this.field = field;
  }
}

function env(): Env {
  return Deno.env.toObject();
}

const SOURCE_TEXT: Record<CredentialSource, string> = {
  CLOUD_API_KEY: "environment variable CLOUD_API_KEY",
  VID_API_KEY: "environment variable VID_API_KEY",
  file: "credentials file",
};

/** The environment variable holding a key that wins over the credentials file, if any. */
function envKeySource(vars: Env): CredentialSource | undefined {
  for (const name of ["CLOUD_API_KEY", "VID_API_KEY"] as const) {
    if (vars[name]?.trim()) return name;
  }
  return undefined;
}

function print(json: boolean, value: Record<string, unknown>, human: string): void {
  console.log(json ? JSON.stringify(value, null, 2) : human);
}

function fail(error: unknown, json: boolean): void {
  if (error instanceof PromptCancelledError) {
    console.error("cancelled; nothing was stored");
    Deno.exitCode = EXIT.cancelled;
  } else {
    Deno.exitCode = reportError(error, json);
  }
}

function duration(seconds: number): string {
  if (seconds <= 0) return "expired";
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3600)} h`;
}

/**
 * Reads a line from the terminal without echoing it: raw mode, bytes up to Enter.
 * Backspace and Ctrl-U edit; Ctrl-C (or Ctrl-D on an empty line) cancels.
 */
async function readHidden(prompt: string): Promise<string> {
  const encoder = new TextEncoder();
  const bytes: number[] = [];
  const buffer = new Uint8Array(1024);
  // Echo goes off before the prompt shows, so a key pasted the moment it appears is hidden.
  Deno.stdin.setRaw(true);
  try {
    await Deno.stderr.write(encoder.encode(prompt));
    while (true) {
      const n = await Deno.stdin.read(buffer);
      if (n === null) break;
      for (const byte of buffer.subarray(0, n)) {
        if (byte === 0x0d || byte === 0x0a) return new TextDecoder().decode(new Uint8Array(bytes));
        if (byte === 0x03 || (byte === 0x04 && bytes.length === 0)) {
          throw new PromptCancelledError("cancelled");
        }
        if (byte === 0x7f || byte === 0x08) bytes.pop();
        else if (byte === 0x15) bytes.length = 0;
        else if (byte >= 0x20) bytes.push(byte);
      }
    }
    return new TextDecoder().decode(new Uint8Array(bytes));
  } finally {
    Deno.stdin.setRaw(false);
    await Deno.stderr.write(encoder.encode("\n"));
  }
}

/** The API key from a hidden prompt, or from standard input when it is not a terminal. */
async function readApiKey(): Promise<string> {
  const key = Deno.stdin.isTerminal()
    ? (await readHidden("API key (input hidden): ")).trim()
    : (await new Response(Deno.stdin.readable).text()).trim();
  if (key === "") {
    throw new AuthCommandError(
      "api_key",
      "no API key given: type it at the prompt, or pipe it on stdin " +
        "(e.g. `printenv VID_KEY | vid auth login --api-key`)",
    );
  }
  if (/\s/.test(key)) {
    throw new AuthCommandError(
      "api_key",
      "the API key must be one word without spaces or line breaks; pipe only the key on stdin",
    );
  }
  return key;
}

/** The API to sign in to: `CLOUD_API_URL`, else the one of the stored credential. */
async function loginBaseUrl(vars: Env): Promise<string> {
  const stored = await readCredentials(vars).catch(() => undefined);
  return baseUrl(vars, stored?.credential);
}

/** Revokes the sign-in a new login replaces, so its tokens do not outlive it. */
async function revokeReplaced(replaced: Credentials | undefined): Promise<void> {
  if (replaced?.type !== "oauth") return;
  await revokeToken(replaced.base_url, replaced.refresh_token).catch(() => {});
}

function warnEnvWins(vars: Env): void {
  const winner = envKeySource(vars);
  if (winner) {
    warn(`${winner} is set and wins over the stored credential; unset it to use this sign-in`);
  }
}

/**
 * The account of the active credential. An OAuth access token that expired (or expires
 * within a minute) is refreshed first; a 401 on an OAuth token refreshes once and asks
 * again (a refused OAuth token gets one forced refresh and one replay, never more).
 */
async function accountOf(
  resolved: ResolvedCredential,
  vars: Env,
): Promise<{ account: Account; credential: Credentials; refreshed: boolean }> {
  let credential = resolved.credential;
  if (credential.type === "api_key") {
    try {
      return {
        account: await fetchAccount(resolved.baseUrl, credential.api_key),
        credential,
        refreshed: false,
      };
    } catch (error) {
      if (error instanceof CredentialRejectedError) {
        const where = resolved.source === "file"
          ? `the API key in ${resolved.file}`
          : `the API key in ${resolved.source}`;
        throw new CredentialRejectedError(
          `${where} was refused by ${resolved.baseUrl}: ${error.reason}. Check it, or ` +
            "sign in again with `vid auth login --api-key`",
          error.reason,
        );
      }
      throw error;
    }
  }
  let refreshed = false;
  if (credential.expires_at <= Math.floor(Date.now() / 1000) + 60) {
    credential = await refreshStoredCredential(credential, resolved.baseUrl, vars);
    refreshed = true;
  }
  try {
    return {
      account: await fetchAccount(resolved.baseUrl, credential.access_token),
      credential,
      refreshed,
    };
  } catch (error) {
    if (!(error instanceof CredentialRejectedError) || refreshed) throw error;
  }
  credential = await refreshStoredCredential(credential, resolved.baseUrl, vars);
  return {
    account: await fetchAccount(resolved.baseUrl, credential.access_token),
    credential,
    refreshed: true,
  };
}

async function loginWithApiKey(json: boolean): Promise<void> {
  const vars = env();
  const base = await loginBaseUrl(vars);
  const key = await readApiKey();
  let account: Account;
  try {
    account = await fetchAccount(base, key);
  } catch (error) {
    if (error instanceof CredentialRejectedError) {
      const hint = key.startsWith("vid_sk_")
        ? ""
        : ' (API keys of vid server start with "vid_sk_")';
      throw new AuthCommandError(
        "api_key",
        `the API key was refused by ${base}: ${error.reason}. Nothing was stored; check the ` +
          `key${hint}.`,
      );
    }
    throw error;
  }
  if (account.credential !== "api_key") {
    throw new AuthCommandError(
      "api_key",
      "that is an OAuth access token, not an API key; use `vid auth login` to sign in " +
        "with the browser",
    );
  }
  const replaced = (await readCredentials(vars).catch(() => undefined))?.credential;
  const file = await writeCredentials(
    { version: 1, base_url: base, type: "api_key", api_key: key },
    vars,
  );
  await revokeReplaced(replaced);
  warnEnvWins(vars);
  print(
    json,
    { ok: true, type: "api_key", base_url: base, file, account },
    `Signed in to ${base} as ${account.email} with an API key (saved to ${file}).`,
  );
}

async function loginWithBrowser(
  json: boolean,
  options: { browser: boolean; timeout: number },
): Promise<void> {
  const vars = env();
  const base = await loginBaseUrl(vars);
  const credential = await loginWithPkce({
    baseUrl: base,
    timeoutMs: options.timeout * 1000,
    openBrowser: options.browser ? (url) => openInBrowser(url, vars) : () => Promise.resolve(false),
    onUrl: (url, opened) => {
      console.error(
        opened
          ? `Opened the browser to sign in. If it did not open, visit this URL: ${url}`
          : `Open this URL to sign in: ${url}`,
      );
      console.error("Waiting for the sign-in (Ctrl-C to cancel)…");
    },
  });
  const replaced = (await readCredentials(vars).catch(() => undefined))?.credential;
  const file = await writeCredentials(credential, vars);
  await revokeReplaced(replaced);
  warnEnvWins(vars);
  print(
    json,
    {
      ok: true,
      type: "oauth",
      base_url: base,
      file,
      email: credential.email,
      expires_at: credential.expires_at,
    },
    `Signed in to ${base} as ${credential.email} (saved to ${file}).`,
  );
}

async function status(json: boolean): Promise<void> {
  const vars = env();
  const resolved = await resolveCredential(vars);
  if (resolved.warning) warn(resolved.warning);
  const { account, credential, refreshed } = await accountOf(resolved, vars);
  const body: AuthStatusJson = {
    ok: true,
    source: resolved.source,
    ...(resolved.file ? { file: resolved.file } : {}),
    base_url: resolved.baseUrl,
    type: credential.type,
    ...(credential.type === "oauth" ? { expires_at: credential.expires_at } : {}),
    refreshed,
    account,
  };
  let kind = "API key";
  if (credential.type === "oauth") {
    const left = duration(credential.expires_at - Math.floor(Date.now() / 1000));
    kind = `OAuth sign-in (access token ${left === "expired" ? left : `expires in ${left}`}${
      refreshed ? ", just refreshed" : ""
    })`;
  }
  print(
    json,
    body as unknown as Record<string, unknown>,
    [
      `Signed in as ${account.email} (account ${account.account_id})`,
      `  source      ${SOURCE_TEXT[resolved.source]}${resolved.file ? ` ${resolved.file}` : ""}`,
      `  API         ${resolved.baseUrl}`,
      `  credential  ${kind}`,
      `  credits     ${account.credits}`,
    ].join("\n"),
  );
}

async function refresh(json: boolean): Promise<void> {
  const vars = env();
  const resolved = await resolveCredential(vars);
  if (resolved.warning) warn(resolved.warning);
  const credential = resolved.credential;
  if (credential.type === "api_key") {
    throw new AuthCommandError(
      "credentials",
      `the active credential is an API key (${SOURCE_TEXT[resolved.source]}): API keys do not ` +
        "expire and have nothing to refresh. Only a browser sign-in (`vid auth login`) has " +
        "tokens to refresh.",
    );
  }
  const fresh = await refreshStoredCredential(credential, resolved.baseUrl, vars);
  print(
    json,
    {
      ok: true,
      type: "oauth",
      base_url: resolved.baseUrl,
      file: resolved.file,
      expires_at: fresh.expires_at,
    },
    `Refreshed the sign-in${fresh.email ? ` of ${fresh.email}` : ""}: the new access token ` +
      `expires in ${duration(fresh.expires_at - Math.floor(Date.now() / 1000))}.`,
  );
}

async function logout(json: boolean): Promise<void> {
  const vars = env();
  const file = credentialsPath(vars);
  let stored: Credentials | undefined;
  try {
    stored = (await readCredentials(vars))?.credential;
  } catch {
    // An unreadable file is deleted all the same.
  }
  let revoked: boolean | null = null;
  if (stored?.type === "oauth") {
    try {
      await revokeToken(baseUrl(vars, stored), stored.refresh_token);
      revoked = true;
    } catch (error) {
      revoked = false;
      warn(
        `could not revoke the sign-in at the server (${
          (error as Error).message
        }); the stored tokens are deleted anyway and expire on their own`,
      );
    }
  }
  const deleted = await deleteCredentials(vars);
  const fromEnv = envKeySource(vars);
  const lines = [
    deleted
      ? `Signed out: deleted ${file}${revoked ? " and revoked the sign-in at the server" : ""}.`
      : `No credentials file at ${file}; nothing to delete.`,
  ];
  if (fromEnv) {
    lines.push(
      `${fromEnv} is set in the environment and still authenticates vid: the key comes from ` +
        `there, not from a file, so vid cannot remove it. Unset it (\`unset ${fromEnv}\`).`,
    );
  }
  print(
    json,
    { ok: true, file, deleted, revoked, ...(fromEnv ? { env_source: fromEnv } : {}) },
    lines.join("\n"),
  );
}

/** Registers `vid auth` and its subcommands. */
export function registerAuth(program: Command): void {
  const auth = program
    .command("auth")
    .summary("Sign in to the hosted API and manage the stored credential.")
    .description(
      "Sign in to the hosted API (`vid cloud`) and manage the stored credential.\n" +
        "Credential order: CLOUD_API_KEY, VID_API_KEY, then the credentials file " +
        "(~/.cloud/credentials, or VID_CREDENTIALS_FILE). CLOUD_API_URL sets the API address.",
    );

  auth
    .command("login")
    .description(
      "Sign in with the browser (OAuth with PKCE; the URL is printed on stderr too), or " +
        "store an API key with --api-key (hidden prompt, or piped on stdin).",
    )
    .option("--api-key", "store a long-lived API key (CI, headless) instead")
    .option("--no-browser", "do not try to open a browser (also: VID_NO_BROWSER=1)")
    .option(
      "--timeout <seconds>",
      "give up when the browser sign-in has not finished by then",
      integerIn("--timeout", 1, 3600),
      DEFAULT_LOGIN_TIMEOUT_MS / 1000,
    )
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      const json = options.json === true;
      try {
        if (options.apiKey) await loginWithApiKey(json);
        else await loginWithBrowser(json, options);
      } catch (error) {
        fail(error, json);
      }
    });

  auth
    .command("status")
    .description("Show the active credential's source, the account and its credits.")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        await status(options.json === true);
      } catch (error) {
        fail(error, options.json === true);
      }
    });

  auth
    .command("refresh")
    .description("Get a new OAuth access token now (API keys do not need it).")
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        await refresh(options.json === true);
      } catch (error) {
        fail(error, options.json === true);
      }
    });

  auth
    .command("logout")
    .description(
      "Revoke the browser sign-in at the server and delete the credentials file.\n" +
        "Keys in CLOUD_API_KEY / VID_API_KEY stay active until unset.",
    )
    .option("--json", "print machine-readable JSON on stdout")
    .action(async (options) => {
      try {
        await logout(options.json === true);
      } catch (error) {
        fail(error, options.json === true);
      }
    });
}
