/**
 * `vid auth` end to end against the real `vid server` process on loopback, each test with
 * its own temporary home (so the default `~/.cloud/credentials` is the file under test):
 * API key sign-in from a pipe and from a hidden terminal prompt (a real pty via `script`),
 * status, the credential resolution order, wrong keys, file modes, logout; and the browser
 * sign-in with PKCE driven through real headless Chromium over the project's CDP client,
 * then refresh rotation, refresh on expiry, reuse detection and revocation.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ROOT } from "../helpers.ts";
import { createAccount, type ServerProcess, startServerProcess } from "../server_process.ts";
import {
  type Browser,
  closePage,
  launchBrowser,
  navigate,
  openPage,
} from "../../src/render/browser.ts";
import {
  baseUrl,
  CredentialsFileError,
  credentialsPath,
  DEFAULT_BASE_URL,
  NotSignedInError,
  readCredentials,
  resolveCredential,
  writeCredentials,
} from "../../src/cloud/credentials.ts";
import { CLIENT_ID, createPkce, loginWithPkce, OAuthError } from "../../src/cloud/oauth_client.ts";

const EMAIL = "ana@example.com";
const PASSWORD = "correct horse";
const OTHER_EMAIL = "bo@example.com";

interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Where Deno caches: the subprocesses get another HOME, but must not re-download. */
async function denoDir(): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  return JSON.parse(new TextDecoder().decode(output.stdout)).denoDir;
}

function mode(path: string): number {
  return Deno.statSync(path).mode! & 0o777;
}

describe("vid auth", () => {
  let dataDir: string;
  let server: ServerProcess;
  let key: string;
  let otherKey: string;
  let cacheDir: string;
  let browser: Browser | undefined;
  const homes: string[] = [];

  /** A fresh home directory; its credentials file is `<home>/.cloud/credentials`. */
  const newHome = async (): Promise<{ home: string; file: string }> => {
    const home = await Deno.makeTempDir({ prefix: "vid-auth-home-" });
    homes.push(home);
    return { home, file: `${home}/.cloud/credentials` };
  };

  const envFor = (home: string, extra: Record<string, string> = {}): Record<string, string> => ({
    HOME: home,
    USERPROFILE: home,
    DENO_DIR: cacheDir,
    NO_COLOR: "1",
    CLOUD_API_URL: server.url,
    CLOUD_API_KEY: "",
    VID_API_KEY: "",
    VID_CREDENTIALS_FILE: "",
    VID_NO_BROWSER: "1",
    ...extra,
  });

  /** Runs `vid <args>` in `home`, with `stdin` piped in when given. */
  const vid = async (
    home: string,
    args: string[],
    options: { stdin?: string; env?: Record<string, string> } = {},
  ): Promise<Result> => {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}cli.ts`, ...args],
      cwd: ROOT,
      env: envFor(home, options.env),
      stdin: options.stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    if (options.stdin !== undefined) {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(options.stdin));
      await writer.close();
    }
    const output = await child.output();
    const decoder = new TextDecoder();
    return {
      code: output.code,
      stdout: decoder.decode(output.stdout),
      stderr: decoder.decode(output.stderr),
    };
  };

  const me = async (
    credential: string,
  ): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${server.url}/v3/me`, {
      headers: { authorization: `Bearer ${credential}` },
    });
    return { status: response.status, body: await response.json() };
  };

  const refreshGrant = async (
    refreshToken: string,
  ): Promise<{ status: number; body: Record<string, unknown> }> => {
    const response = await fetch(`${server.url}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({
        grant_type: "refresh_token",
        refresh_token: refreshToken,
        client_id: CLIENT_ID,
      }),
    });
    return { status: response.status, body: await response.json() };
  };

  const readJson = async (file: string) => JSON.parse(await Deno.readTextFile(file));

  /**
   * Approves a sign-in page in Chromium the way a person would: fills the form and clicks
   * Approve. Returns the text and address of the page the browser ends on.
   */
  const approveInBrowser = async (
    url: string,
    email = EMAIL,
    password = PASSWORD,
  ): Promise<{ href: string; text: string }> => {
    browser ??= await launchBrowser({ mode: "screenshot" });
    const page = await openPage(browser, { width: 800, height: 600, initScript: "" });
    try {
      await navigate(page, url);
      const loaded = page.once("Page.loadEventFired");
      await page.send("Runtime.evaluate", {
        expression: `
          document.querySelector("#email").value = ${JSON.stringify(email)};
          document.querySelector("#password").value = ${JSON.stringify(password)};
          [...document.querySelectorAll("button")].find((b) => b.textContent === "Approve")
            .click();`,
      });
      await loaded;
      const { result } = await page.send<{ result: { value: string } }>("Runtime.evaluate", {
        expression: "JSON.stringify({ href: location.href, text: document.body.innerText })",
        returnByValue: true,
      });
      return JSON.parse(result.value);
    } finally {
      await closePage(page);
    }
  };

  /** `vid auth login` in `home`, approved in Chromium; the CLI's result and the page. */
  const browserLogin = async (
    home: string,
    args: string[] = [],
  ): Promise<Result & { page: { href: string; text: string }; url: string }> => {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", `${ROOT}cli.ts`, "auth", "login", ...args],
      cwd: ROOT,
      env: envFor(home),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const stdout = new Response(child.stdout).text();
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let stderr = "";
    let url: string | undefined;
    while (!url) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`vid auth login exited early: ${stderr}`);
      stderr += value;
      url = stderr.match(/Open this URL to sign in: (\S+)/)?.[1];
    }
    const page = await approveInBrowser(url);
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      stderr += value;
    }
    const { code } = await child.status;
    return { code, stdout: await stdout, stderr, page, url };
  };

  before(async () => {
    cacheDir = await denoDir();
    dataDir = await Deno.makeTempDir({ prefix: "vid-auth-server-" });
    key = await createAccount(dataDir, EMAIL, { password: PASSWORD, credits: 100 });
    otherKey = await createAccount(dataDir, OTHER_EMAIL, { credits: 7 });
    assert.match(key, /^vid_sk_/);
    server = await startServerProcess(dataDir);
  });

  after(async () => {
    await browser?.close();
    await server?.stop();
    for (const dir of [dataDir, ...homes]) await Deno.remove(dir, { recursive: true });
  });

  it("login --api-key stores the piped key in ~/.cloud/credentials (0600) and never echoes it", async () => {
    const { home, file } = await newHome();
    const result = await vid(home, ["auth", "login", "--api-key"], { stdin: `${key}\n` });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Signed in to .* as ana@example\.com with an API key/);
    assert.ok(!(result.stdout + result.stderr).includes(key), "the key was printed");
    assert.equal(mode(file), 0o600);
    assert.equal(mode(`${home}/.cloud`), 0o700);
    assert.deepEqual(await readJson(file), {
      version: 1,
      base_url: server.url,
      type: "api_key",
      api_key: key,
    });
    assert.deepEqual(
      [...Deno.readDirSync(`${home}/.cloud`)].map((e) => e.name),
      ["credentials"],
      "no temporary file is left behind",
    );
  });

  it("login --api-key reads a hidden prompt on a terminal without echoing the key", async () => {
    const { home, file } = await newHome();
    const command = [Deno.execPath(), "run", "-A", `${ROOT}cli.ts`, "auth", "login", "--api-key"]
      .map((a) => `'${a}'`).join(" ");
    // `script` gives the CLI a real pseudo-terminal; its stdout is the terminal's transcript.
    const child = new Deno.Command("script", {
      args: ["-qfec", command, "/dev/null"],
      cwd: ROOT,
      env: envFor(home),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let transcript = "";
    while (!transcript.includes("API key (input hidden): ")) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`no prompt: ${transcript}`);
      transcript += value;
    }
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(`${key}\r`));
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      transcript += value;
    }
    await writer.close().catch(() => {});
    const { code } = await child.status;
    await child.stderr.cancel();
    assert.equal(code, 0, transcript);
    assert.match(transcript, /as ana@example\.com with an API key/);
    assert.ok(!transcript.includes(key), `the key was echoed: ${transcript}`);
    assert.equal((await readJson(file)).api_key, key);
  });

  it("status shows source, identity and credits, never the key; --json has a fixed shape", async () => {
    const { home, file } = await newHome();
    await vid(home, ["auth", "login", "--api-key"], { stdin: key });
    const human = await vid(home, ["auth", "status"]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(human.stdout, /Signed in as ana@example\.com \(account acct_\w+\)/);
    assert.match(human.stdout, new RegExp(`source\\s+credentials file ${file}`));
    assert.match(human.stdout, new RegExp(`API\\s+${server.url}`));
    assert.match(human.stdout, /credential\s+API key/);
    assert.match(human.stdout, /credits\s+100/);
    assert.ok(!(human.stdout + human.stderr).includes("vid_sk_"), "a secret was printed");

    const json = await vid(home, ["auth", "status", "--json"]);
    assert.equal(json.code, 0, json.stderr);
    assert.ok(!json.stdout.includes("vid_sk_"));
    const body = JSON.parse(json.stdout);
    assert.deepEqual(Object.keys(body).sort(), [
      "account",
      "base_url",
      "file",
      "ok",
      "refreshed",
      "source",
      "type",
    ]);
    assert.deepEqual({ ...body, account: { ...body.account, account_id: "x" } }, {
      ok: true,
      source: "file",
      file,
      base_url: server.url,
      type: "api_key",
      refreshed: false,
      account: { account_id: "x", email: EMAIL, credential: "api_key", credits: 100 },
    });
  });

  it("resolves CLOUD_API_KEY, then VID_API_KEY, then the file", async () => {
    const { home } = await newHome();
    const source = async (env: Record<string, string>) => {
      const result = await vid(home, ["auth", "status", "--json"], { env });
      assert.equal(result.code, 0, result.stderr);
      const body = JSON.parse(result.stdout);
      return [body.source, body.account.email];
    };
    const none = await vid(home, ["auth", "status"]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /not signed in: .*Run `vid auth login`.*or set CLOUD_API_KEY/);
    assert.deepEqual(await source({ VID_API_KEY: otherKey }), ["VID_API_KEY", OTHER_EMAIL]);
    await vid(home, ["auth", "login", "--api-key"], { stdin: key });
    assert.deepEqual(await source({}), ["file", EMAIL]);
    assert.deepEqual(await source({ VID_API_KEY: otherKey }), ["VID_API_KEY", OTHER_EMAIL]);
    assert.deepEqual(
      await source({ VID_API_KEY: otherKey, CLOUD_API_KEY: key }),
      ["CLOUD_API_KEY", EMAIL],
    );
    const human = await vid(home, ["auth", "status"], { env: { CLOUD_API_KEY: otherKey } });
    assert.match(human.stdout, /source\s+environment variable CLOUD_API_KEY\n/);
    assert.match(human.stdout, /credits\s+7/);
  });

  it("refuses a wrong key with exit 1 and stores nothing", async () => {
    const { home, file } = await newHome();
    const wrong = `vid_sk_${"0".repeat(48)}`;
    const result = await vid(home, ["auth", "login", "--api-key"], { stdin: wrong });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /error: the API key was refused by http:\/\/127\.0\.0\.1:\d+: invalid or revoked API key\. Nothing was stored/,
    );
    assert.ok(!result.stderr.includes(wrong));
    assert.throws(() => Deno.statSync(file), Deno.errors.NotFound);

    const json = await vid(home, ["auth", "login", "--api-key", "--json"], { stdin: "nope" });
    assert.equal(json.code, 1);
    const body = JSON.parse(json.stdout);
    assert.equal(body.ok, false);
    assert.equal(body.error.field, "api_key");
    assert.match(body.error.message, /start with "vid_sk_"/);

    const empty = await vid(home, ["auth", "login", "--api-key"], { stdin: "\n" });
    assert.equal(empty.code, 1);
    assert.match(empty.stderr, /no API key given/);

    const badEnv = await vid(home, ["auth", "status"], { env: { CLOUD_API_KEY: wrong } });
    assert.equal(badEnv.code, 1);
    assert.match(badEnv.stderr, /the API key in CLOUD_API_KEY was refused/);
  });

  it("warns about a credentials file others can read, and still uses it", async () => {
    const { home, file } = await newHome();
    await vid(home, ["auth", "login", "--api-key"], { stdin: key });
    await Deno.chmod(file, 0o644);
    const result = await vid(home, ["auth", "status"]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(
      result.stderr,
      /warning: credentials file .* has mode 0644: other users may read your credential\. Restrict it with `chmod 600/,
    );
    assert.match(result.stdout, /ana@example\.com/);
    assert.equal(mode(file), 0o644, "reading does not change the mode");
    await vid(home, ["auth", "login", "--api-key"], { stdin: key });
    assert.equal(mode(file), 0o600, "writing replaces the file with a private one");
  });

  it("refresh explains that API keys do not refresh", async () => {
    const { home } = await newHome();
    await vid(home, ["auth", "login", "--api-key"], { stdin: key });
    const result = await vid(home, ["auth", "refresh"]);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /API keys do not expire and have nothing to refresh/);
    const fromEnv = await vid(home, ["auth", "refresh", "--json"], { env: { VID_API_KEY: key } });
    assert.equal(fromEnv.code, 1);
    assert.match(JSON.parse(fromEnv.stdout).error.message, /environment variable VID_API_KEY/);
  });

  it("logout deletes the file, and explains keys that come from the environment", async () => {
    const { home, file } = await newHome();
    await vid(home, ["auth", "login", "--api-key"], { stdin: key });
    const out = await vid(home, ["auth", "logout"]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /Signed out: deleted .*credentials\./);
    assert.throws(() => Deno.statSync(file), Deno.errors.NotFound);
    const again = await vid(home, ["auth", "logout", "--json"]);
    assert.equal(again.code, 0);
    assert.deepEqual(JSON.parse(again.stdout), { ok: true, file, deleted: false, revoked: null });
    const env = await vid(home, ["auth", "logout"], { env: { CLOUD_API_KEY: key } });
    assert.equal(env.code, 0);
    assert.match(env.stdout, /CLOUD_API_KEY is set in the environment.*Unset it/);
  });

  it("login signs in through the browser with PKCE and stores a working OAuth credential", async () => {
    const { home, file } = await newHome();
    const result = await browserLogin(home);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.url, /\/oauth\/authorize\?.*code_challenge_method=S256/);
    const redirect = new URL(result.url).searchParams.get("redirect_uri")!;
    assert.match(redirect, /^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    assert.ok(result.page.href.startsWith(`${redirect}?code=`), result.page.href);
    assert.match(result.page.text, /signed in as ana@example\.com\. You can close this tab/);
    assert.match(result.stdout, /Signed in to .* as ana@example\.com/);
    assert.ok(!/vid_(at|rt)_/.test(result.stdout + result.stderr), "a token was printed");
    assert.equal(mode(file), 0o600);
    const stored = await readJson(file);
    assert.deepEqual(Object.keys(stored).sort(), [
      "access_token",
      "base_url",
      "email",
      "expires_at",
      "refresh_token",
      "type",
      "version",
    ]);
    assert.equal(stored.type, "oauth");
    assert.equal(stored.email, EMAIL);
    assert.equal(stored.base_url, server.url);
    assert.ok(Math.abs(stored.expires_at - (Date.now() / 1000 + 3600)) < 60);
    const account = await me(stored.access_token);
    assert.equal(account.status, 200);
    assert.equal(account.body.credential, "oauth");
    assert.equal(account.body.email, EMAIL);

    const status = await vid(home, ["auth", "status"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(
      status.stdout,
      /credential\s+OAuth sign-in \(access token expires in (59|60) min\)/,
    );
  });

  it("refresh rotates the tokens; the old refresh token is rejected and ends the sign-in", async () => {
    const { home, file } = await newHome();
    assert.equal((await browserLogin(home)).code, 0);
    const before = await readJson(file);
    const result = await vid(home, ["auth", "refresh", "--json"]);
    assert.equal(result.code, 0, result.stderr);
    const body = JSON.parse(result.stdout);
    assert.equal(body.ok, true);
    assert.equal(body.type, "oauth");
    const after = await readJson(file);
    assert.notEqual(after.refresh_token, before.refresh_token);
    assert.notEqual(after.access_token, before.access_token);
    assert.equal(after.email, EMAIL);
    assert.equal(body.expires_at, after.expires_at);
    assert.equal(mode(file), 0o600);
    assert.equal((await me(after.access_token)).status, 200);

    const reused = await refreshGrant(before.refresh_token);
    assert.equal(reused.status, 400);
    assert.equal(reused.body.error, "invalid_grant");
    // The reuse revoked the whole sign-in, so the CLI must send the user back to login.
    const status = await vid(home, ["auth", "status"]);
    assert.equal(status.code, 1);
    assert.match(status.stderr, /cannot be refreshed: .*vid auth login/);
    const refresh = await vid(home, ["auth", "refresh", "--json"]);
    assert.equal(refresh.code, 1);
    assert.equal(JSON.parse(refresh.stdout).error.field, "refresh_token");
  });

  it("status refreshes an expired access token, and logout revokes the sign-in", async () => {
    const { home, file } = await newHome();
    assert.equal((await browserLogin(home)).code, 0);
    const stored = await readJson(file);
    await writeCredentials(
      { ...stored, expires_at: 0 },
      { VID_CREDENTIALS_FILE: file },
    );
    const status = await vid(home, ["auth", "status", "--json"]);
    assert.equal(status.code, 0, status.stderr);
    const body = JSON.parse(status.stdout);
    assert.equal(body.refreshed, true);
    assert.equal(body.type, "oauth");
    assert.equal(body.account.credential, "oauth");
    const refreshed = await readJson(file);
    assert.notEqual(refreshed.refresh_token, stored.refresh_token);

    const logout = await vid(home, ["auth", "logout", "--json"]);
    assert.equal(logout.code, 0, logout.stderr);
    assert.deepEqual(JSON.parse(logout.stdout), {
      ok: true,
      file,
      deleted: true,
      revoked: true,
    });
    assert.throws(() => Deno.statSync(file), Deno.errors.NotFound);
    assert.equal((await me(refreshed.access_token)).status, 401);
    assert.equal((await refreshGrant(refreshed.refresh_token)).status, 400);
  });

  it("loginWithPkce ignores a foreign state, fails on error=, and times out clearly", async () => {
    const pages: Array<{ status: number; text: string }> = [];
    const denied = loginWithPkce({
      baseUrl: server.url,
      openBrowser: async (url) => {
        const redirect = new URL(url).searchParams.get("redirect_uri")!;
        const state = new URL(url).searchParams.get("state")!;
        for (const query of [`code=x&state=forged`, `error=access_denied&state=${state}`]) {
          const response = await fetch(`${redirect}?${query}`);
          pages.push({ status: response.status, text: await response.text() });
        }
        return false;
      },
    });
    await assert.rejects(denied, (error: unknown) => {
      assert.ok(error instanceof OAuthError);
      assert.equal(error.field, "code");
      assert.match(error.message, /the sign-in was refused: access_denied/);
      return true;
    });
    assert.equal(pages[0].status, 400);
    assert.match(pages[0].text, /state does not match/);
    assert.equal(pages[1].status, 400);
    assert.match(pages[1].text, /Sign-in failed/);

    const urls: Array<[string, boolean]> = [];
    await assert.rejects(
      loginWithPkce({
        baseUrl: server.url,
        timeoutMs: 200,
        openBrowser: () => Promise.resolve(false),
        onUrl: (url, opened) => urls.push([url, opened]),
      }),
      /no sign-in arrived within 0\.2 s; run `vid auth login` again/,
    );
    assert.equal(urls.length, 1);
    assert.equal(urls[0][1], false);
    const { challenge } = await createPkce();
    assert.match(challenge, /^[A-Za-z0-9_-]{43}$/);
  });

  it("credentials: path, base URL and resolution rules", async () => {
    const { home, file } = await newHome();
    assert.equal(credentialsPath({ HOME: home }), file);
    assert.equal(credentialsPath({ USERPROFILE: home }), file);
    assert.equal(credentialsPath({ HOME: home, VID_CREDENTIALS_FILE: "/x/c" }), "/x/c");
    assert.equal(baseUrl({}), DEFAULT_BASE_URL);
    assert.equal(baseUrl({ CLOUD_API_URL: "https://v.example/" }), "https://v.example");
    const stored = {
      version: 1 as const,
      base_url: "https://issuer.example",
      type: "api_key" as const,
      api_key: "vid_sk_a",
    };
    assert.equal(baseUrl({}, stored), "https://issuer.example");
    assert.equal(baseUrl({ CLOUD_API_URL: "https://o.example" }, stored), "https://o.example");
    await assert.rejects(resolveCredential({ HOME: home }), NotSignedInError);
    const env = { HOME: home, CLOUD_API_KEY: " ", VID_API_KEY: "" };
    await writeCredentials(stored, env);
    const resolved = await resolveCredential(env);
    assert.equal(resolved.source, "file");
    assert.equal(resolved.baseUrl, "https://issuer.example");
    assert.equal(resolved.warning, undefined);
    await Deno.writeTextFile(file, JSON.stringify({ ...stored, type: "password" }));
    await assert.rejects(readCredentials(env), (error: unknown) => {
      assert.ok(error instanceof CredentialsFileError);
      assert.equal(error.field, "type");
      assert.match(error.message, /"type" must be "api_key" or "oauth", got "password"/);
      return true;
    });
  });
});
