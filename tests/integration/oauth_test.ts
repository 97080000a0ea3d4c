/**
 * OAuth of `vid server` end to end, the way `vid auth login` drives it: the real server
 * process on loopback, the sign-in page fetched and submitted like a browser would (cookie,
 * CSRF token, manual redirect), the code exchanged with its PKCE verifier, and the tokens
 * used on `/v3/me`, refreshed, re-used, expired and revoked.
 *
 * @module
 */

import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { DatabaseSync } from "node:sqlite";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse as parseYaml } from "yaml";
import { ROOT, runVid, waitFor } from "../helpers.ts";
import { type ServerProcess, startServerProcess } from "../server_process.ts";
import { accessTokenSecondsFrom, OAuthConfigError } from "../../src/server/auth/oauth_tokens.ts";
import { hashPassword } from "../../src/server/auth/secrets.ts";

function base64Url(bytes: ArrayBuffer | Uint8Array): string {
  return btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

async function pkce(): Promise<{ verifier: string; challenge: string }> {
  const verifier = base64Url(crypto.getRandomValues(new Uint8Array(32)));
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return { verifier, challenge: base64Url(digest) };
}

function unescapeHtml(text: string): string {
  return text.replaceAll("&quot;", '"').replaceAll("&#39;", "'").replaceAll("&lt;", "<")
    .replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (
    const [, name, value] of html.matchAll(/<input type="hidden" name="(\w+)" value="([^"]*)">/g)
  ) {
    fields[name] = unescapeHtml(value);
  }
  return fields;
}

const OPENAPI = parseYaml(await Deno.readTextFile(`${ROOT}api/openapi.yaml`)) as {
  components: { schemas: Record<string, object> };
};
const ajv = new Ajv2020({ allErrors: true });

/** Asserts that a body matches a schema of api/openapi.yaml. */
function assertSchema(name: "TokenResponse" | "OAuthError", body: unknown): void {
  const validate = ajv.compile(OPENAPI.components.schemas[name]);
  assert.ok(
    validate(body),
    `${name}: ${JSON.stringify(validate.errors)} in ${JSON.stringify(body)}`,
  );
}

const REDIRECT = "http://127.0.0.1:53682/callback";
const EMAIL = "ana@example.com";
const PASSWORD = "correct horse";

interface Tokens {
  access_token: string;
  token_type: string;
  expires_in: number;
  refresh_token: string;
  scope: string;
}

/** `/v3/me`: the account, or the error of a 401. */
interface MeBody {
  email?: string;
  credential?: string;
  error: { code: string; message: string };
}

/** One OAuth client session against a server: the browser half and the CLI half. */
function client(server: () => ServerProcess) {
  const authorizeUrl = (params: Record<string, string | undefined>): string => {
    const url = new URL(`${server().url}/oauth/authorize`);
    for (const [name, value] of Object.entries(params)) {
      if (value !== undefined) url.searchParams.set(name, value);
    }
    return url.href;
  };
  const defaults = (challenge: string, state = "st-1"): Record<string, string> => ({
    response_type: "code",
    client_id: "vid-cli",
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state,
  });
  /** GETs the sign-in page and POSTs it like the browser does; the 302 is not followed. */
  const signIn = async (
    challenge: string,
    options: { email?: string; password?: string; state?: string; forwardedFor?: string } = {},
  ): Promise<{ response: Response; body: string }> => {
    const page = await fetch(authorizeUrl(defaults(challenge, options.state)));
    const html = await page.text();
    assert.equal(page.status, 200, html);
    const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
    assert.match(cookie, /^vid_oauth_csrf=csrf_[0-9a-f]{32}$/);
    const fields = hiddenFields(html);
    assert.match(fields.csrf_token, /^\d+\.[0-9a-f]{64}$/);
    const response = await fetch(`${server().url}/oauth/authorize`, {
      method: "POST",
      redirect: "manual",
      headers: {
        cookie,
        ...(options.forwardedFor !== undefined && { "x-forwarded-for": options.forwardedFor }),
      },
      body: new URLSearchParams({
        ...fields,
        email: options.email ?? EMAIL,
        password: options.password ?? PASSWORD,
      }),
    });
    return { response, body: await response.text() };
  };
  const token = async (
    params: Record<string, string>,
  ): Promise<{ status: number; body: Record<string, unknown>; headers: Headers }> => {
    const response = await fetch(`${server().url}/oauth/token`, {
      method: "POST",
      body: new URLSearchParams(params),
    });
    const body = await response.json();
    assertSchema(response.ok ? "TokenResponse" : "OAuthError", body);
    return { status: response.status, body, headers: response.headers };
  };
  /** Signs in and returns the code of the redirect. */
  const authorize = async (challenge: string): Promise<string> => {
    const { response } = await signIn(challenge);
    assert.equal(response.status, 302);
    return new URL(response.headers.get("location")!).searchParams.get("code")!;
  };
  const login = async (): Promise<Tokens> => {
    const { verifier, challenge } = await pkce();
    const code = await authorize(challenge);
    const exchanged = await token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
      code_verifier: verifier,
    });
    assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    return exchanged.body as unknown as Tokens;
  };
  const refresh = (refreshToken: string) =>
    token({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: "vid-cli" });
  const me = async (
    accessToken: string,
  ): Promise<{ status: number; body: MeBody }> => {
    const response = await fetch(`${server().url}/v3/me`, {
      headers: { authorization: `Bearer ${accessToken}` },
    });
    return { status: response.status, body: await response.json() };
  };
  const revoke = async (tokenValue: string): Promise<Response> => {
    const response = await fetch(`${server().url}/oauth/revoke`, {
      method: "POST",
      body: new URLSearchParams({ token: tokenValue, client_id: "vid-cli" }),
    });
    await response.body?.cancel();
    return response;
  };
  return { authorizeUrl, defaults, signIn, token, authorize, login, refresh, me, revoke };
}

describe("vid server OAuth", () => {
  let dataDir: string;
  let server: ServerProcess;
  const oauth = client(() => server);

  before(async () => {
    dataDir = await Deno.makeTempDir({ prefix: "vid-oauth-test-" });
    const added = await runVid([
      "server",
      "users",
      "add",
      EMAIL,
      "--password",
      PASSWORD,
      "--data-dir",
      dataDir,
    ]);
    assert.equal(added.code, 0, added.stderr);
    server = await startServerProcess(dataDir);
  });

  after(async () => {
    await server?.stop();
    await Deno.remove(dataDir, { recursive: true });
  });

  it("runs the PKCE flow: sign-in page, 302 with code and state, token exchange, /v3/me", async () => {
    const { verifier, challenge } = await pkce();
    const page = await fetch(oauth.authorizeUrl(oauth.defaults(challenge)));
    const html = await page.text();
    assert.equal(page.status, 200);
    assert.match(page.headers.get("content-type")!, /^text\/html/);
    assert.equal(page.headers.get("x-frame-options"), "DENY");
    assert.match(page.headers.get("content-security-policy")!, /frame-ancestors 'none'/);
    assert.match(html, /name="email"/);
    assert.match(html, /type="password" name="password"/);
    assert.match(html, />Approve<\/button>/);
    assert.match(html, /http:\/\/127\.0\.0\.1:53682/, "the page names where the code goes");

    const { response } = await oauth.signIn(challenge, { state: "xyz&<state>" });
    assert.equal(response.status, 302);
    const location = new URL(response.headers.get("location")!);
    assert.equal(`${location.origin}${location.pathname}`, REDIRECT);
    assert.equal(location.searchParams.get("state"), "xyz&<state>");
    const code = location.searchParams.get("code")!;
    assert.match(code, /^vid_ac_[0-9a-f]{64}$/);

    const exchanged = await oauth.token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
      code_verifier: verifier,
    });
    assert.equal(exchanged.status, 200, JSON.stringify(exchanged.body));
    assert.equal(exchanged.headers.get("cache-control"), "no-store");
    const tokens = exchanged.body as unknown as Tokens;
    assert.match(tokens.access_token, /^vid_at_[0-9a-f]{64}$/);
    assert.match(tokens.refresh_token, /^vid_rt_[0-9a-f]{64}$/);
    assert.equal(tokens.token_type, "Bearer");
    assert.equal(tokens.expires_in, 3600);
    assert.equal(tokens.scope, "render");

    const me = await oauth.me(tokens.access_token);
    assert.equal(me.status, 200);
    assert.equal(me.body.email, EMAIL);
    assert.equal(me.body.credential, "oauth");
  });

  it("stores only hashes of codes and tokens", async () => {
    const tokens = await oauth.login();
    const db = new DatabaseSync(`${dataDir}/vid.db`, { readOnly: true });
    try {
      const dump = JSON.stringify(db.prepare("select * from tokens").all());
      assert.ok(!dump.includes(tokens.access_token.slice(7)));
      assert.ok(!dump.includes(tokens.refresh_token.slice(7)));
      assert.ok(!dump.includes("vid_ac_"));
    } finally {
      db.close();
    }
  });

  it("hashes passwords with PBKDF2-SHA256 at 600,000 iterations; rewrites an old 100,000 one at sign-in", async () => {
    const passwordHash = (): string => {
      const db = new DatabaseSync(`${dataDir}/vid.db`, { readOnly: true });
      try {
        return String(
          (db.prepare("select password_hash from accounts where email = ?").get(EMAIL) as {
            password_hash: string;
          }).password_hash,
        );
      } finally {
        db.close();
      }
    };
    const current = passwordHash();
    assert.match(current, /^pbkdf2\$600000\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
    // A hash as vid wrote it before (100,000 iterations) still signs in, and is rewritten.
    const old = await hashPassword(PASSWORD, 100000);
    const db = new DatabaseSync(`${dataDir}/vid.db`);
    try {
      db.prepare("update accounts set password_hash = ? where email = ?").run(old, EMAIL);
    } finally {
      db.close();
    }
    const wrong = await oauth.signIn((await pkce()).challenge, { password: "not it" });
    assert.equal(wrong.response.status, 401);
    assert.equal(passwordHash(), old, "a failed sign-in rewrites nothing");
    const { response } = await oauth.signIn((await pkce()).challenge);
    assert.equal(response.status, 302);
    const rewritten = passwordHash();
    assert.match(rewritten, /^pbkdf2\$600000\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
    assert.notEqual(rewritten.split("$")[2], old.split("$")[2], "a fresh salt");
    assert.equal((await oauth.signIn((await pkce()).challenge)).response.status, 302);
  });

  it("refuses a wrong code_verifier with invalid_grant, and the code is spent", async () => {
    const { verifier, challenge } = await pkce();
    const code = await oauth.authorize(challenge);
    const wrong = await oauth.token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
      code_verifier: (await pkce()).verifier,
    });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error, "invalid_grant");
    assert.match(String(wrong.body.error_description), /code_verifier/);
    const retry = await oauth.token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
      code_verifier: verifier,
    });
    assert.equal(retry.body.error, "invalid_grant");
  });

  it("spends a code presented without code_verifier, so it cannot be probed", async () => {
    const { verifier, challenge } = await pkce();
    const code = await oauth.authorize(challenge);
    const probe = await oauth.token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
    });
    assert.equal(probe.status, 400);
    assert.equal(probe.body.error, "invalid_request");
    assert.match(String(probe.body.error_description), /code_verifier is missing/);
    const retry = await oauth.token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
      code_verifier: verifier,
    });
    assert.equal(retry.status, 400);
    assert.equal(retry.body.error, "invalid_grant");
    assert.match(String(retry.body.error_description), /already used/);
  });

  it("refuses a re-used code and revokes the tokens it was exchanged for", async () => {
    const { verifier, challenge } = await pkce();
    const code = await oauth.authorize(challenge);
    const request = {
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
      code_verifier: verifier,
    };
    const first = await oauth.token(request);
    assert.equal(first.status, 200);
    const again = await oauth.token(request);
    assert.equal(again.status, 400);
    assert.equal(again.body.error, "invalid_grant");
    assert.match(String(again.body.error_description), /already used/);
    assert.equal((await oauth.me(String(first.body.access_token))).status, 401);
    assert.equal(
      (await oauth.refresh(String(first.body.refresh_token))).body.error,
      "invalid_grant",
    );
  });

  it("refuses a redirect_uri or client_id that differs from the authorization request", async () => {
    const { verifier, challenge } = await pkce();
    const code = await oauth.authorize(challenge);
    const mismatch = await oauth.token({
      grant_type: "authorization_code",
      code,
      redirect_uri: "http://127.0.0.1:53683/callback",
      client_id: "vid-cli",
      code_verifier: verifier,
    });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.body.error, "invalid_grant");
    assert.match(String(mismatch.body.error_description), /redirect_uri/);
    const otherClient = await oauth.token({
      grant_type: "authorization_code",
      code: await oauth.authorize(challenge),
      redirect_uri: REDIRECT,
      client_id: "someone-else",
      code_verifier: verifier,
    });
    assert.equal(otherClient.status, 401);
    assert.equal(otherClient.body.error, "invalid_client");
  });

  it("refuses a code older than 60 seconds", async () => {
    const { verifier, challenge } = await pkce();
    const code = await oauth.authorize(challenge);
    const db = new DatabaseSync(`${dataDir}/vid.db`);
    try {
      db.exec("pragma busy_timeout = 5000");
      db.prepare("update tokens set expires_at = 0 where kind = 'code' and used_at is null").run();
    } finally {
      db.close();
    }
    const late = await oauth.token({
      grant_type: "authorization_code",
      code,
      redirect_uri: REDIRECT,
      client_id: "vid-cli",
      code_verifier: verifier,
    });
    assert.equal(late.body.error, "invalid_grant");
    assert.match(String(late.body.error_description), /expired/);
  });

  it("shows an error page and never redirects for a bad authorization request", async () => {
    const { challenge } = await pkce();
    const cases: Array<[Record<string, string | undefined>, RegExp]> = [
      [{ code_challenge_method: "plain" }, /code_challenge_method must be "S256"/],
      [{ code_challenge_method: undefined }, /plain is not accepted/],
      [{ code_challenge: "short" }, /code_challenge must be/],
      [{ code_challenge: undefined }, /code_challenge is missing/],
      [{ client_id: "evil" }, /unknown client_id/],
      [{ response_type: "token" }, /response_type must be "code"/],
      [{ scope: "admin" }, /scope must be "render"/],
      [{ redirect_uri: "http://example.com/callback" }, /redirect_uri/],
      [{ redirect_uri: "http://127.0.0.1.example.com/cb" }, /redirect_uri/],
      [{ redirect_uri: "http://127.0.0.1:5000/cb#frag" }, /fragment/],
      [{ redirect_uri: "https://user:pw@example.com/cb" }, /user info/],
      [{ redirect_uri: "javascript:alert(1)" }, /redirect_uri/],
      [{ redirect_uri: "/callback" }, /not an absolute URL/],
      [{ redirect_uri: undefined }, /redirect_uri is missing/],
    ];
    for (const [override, pattern] of cases) {
      const response = await fetch(
        oauth.authorizeUrl({ ...oauth.defaults(challenge), ...override }),
        { redirect: "manual" },
      );
      const html = await response.text();
      assert.equal(response.status, 400, JSON.stringify(override));
      assert.equal(response.headers.get("location"), null);
      assert.match(response.headers.get("content-type")!, /^text\/html/);
      assert.match(unescapeHtml(html), pattern, JSON.stringify(override));
      assert.doesNotMatch(html, /<form/);
    }
    const twice = await fetch(
      `${oauth.authorizeUrl(oauth.defaults(challenge))}&client_id=vid-cli`,
    );
    assert.equal(twice.status, 400);
    assert.match(await twice.text(), /client_id was sent more than once/);
    for (const redirect of ["http://[::1]:9/cb", "http://localhost/cb", "https://example.com/cb"]) {
      const ok = await fetch(
        oauth.authorizeUrl({ ...oauth.defaults(challenge), redirect_uri: redirect }),
      );
      await ok.body?.cancel();
      assert.equal(ok.status, 200, redirect);
    }
  });

  it("re-renders the page with an error for a wrong password or unknown email (401)", async () => {
    const { challenge } = await pkce();
    for (const credentials of [{ password: "wrong password" }, { email: "nobody@example.com" }]) {
      const { response, body } = await oauth.signIn(challenge, credentials);
      assert.equal(response.status, 401);
      assert.equal(response.headers.get("location"), null);
      assert.match(body, /Wrong email or password/);
      assert.match(body, /<form/);
      assert.match(hiddenFields(body).csrf_token, /^\d+\.[0-9a-f]{64}$/);
    }
  });

  it("refuses a sign-in without the CSRF cookie or with a token for another request", async () => {
    const { challenge } = await pkce();
    const page = await fetch(oauth.authorizeUrl(oauth.defaults(challenge)));
    const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
    const fields = hiddenFields(await page.text());
    const post = (headers: HeadersInit, extra: Record<string, string>) =>
      fetch(`${server.url}/oauth/authorize`, {
        method: "POST",
        redirect: "manual",
        headers,
        body: new URLSearchParams({ ...fields, email: EMAIL, password: PASSWORD, ...extra }),
      });
    const other = (await pkce()).challenge;
    for (
      const [headers, extra] of [
        [{}, {}],
        [{ cookie: "vid_oauth_csrf=csrf_00000000000000000000000000000000" }, {}],
        [{ cookie }, { code_challenge: other }],
        [{ cookie }, { csrf_token: "1.00" }],
      ] as Array<[HeadersInit, Record<string, string>]>
    ) {
      const response = await post(headers, extra);
      const html = await response.text();
      assert.equal(response.status, 403, JSON.stringify([headers, extra]));
      assert.equal(response.headers.get("location"), null);
      assert.match(html, /form expired or did not come from this page/);
    }
  });

  it("rotates refresh tokens; a re-used refresh token revokes the whole family", async () => {
    const first = await oauth.login();
    const rotated = await oauth.refresh(first.refresh_token);
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const second = rotated.body as unknown as Tokens;
    assert.notEqual(second.access_token, first.access_token);
    assert.notEqual(second.refresh_token, first.refresh_token);
    assert.equal(second.expires_in, 3600);
    assert.equal((await oauth.me(second.access_token)).body.credential, "oauth");

    const reused = await oauth.refresh(first.refresh_token);
    assert.equal(reused.status, 400);
    assert.equal(reused.body.error, "invalid_grant");
    assert.match(String(reused.body.error_description), /already used/);
    // The family is gone: the newest pair too, and the first access token.
    assert.equal((await oauth.refresh(second.refresh_token)).body.error, "invalid_grant");
    for (const access of [second.access_token, first.access_token]) {
      const me = await oauth.me(access);
      assert.equal(me.status, 401);
      assert.match(me.body.error.message, /invalid access token/);
    }
    // Another sign-in is untouched.
    const other = await oauth.login();
    assert.equal((await oauth.me(other.access_token)).status, 200);
  });

  it("answers RFC 6749 errors for malformed token requests", async () => {
    const cases: Array<[RequestInit, number, string, RegExp]> = [
      [
        { body: new URLSearchParams({ grant_type: "password" }) },
        400,
        "unsupported_grant_type",
        /password/,
      ],
      [{ body: new URLSearchParams({}) }, 400, "invalid_request", /grant_type is missing/],
      [
        { body: new URLSearchParams({ grant_type: "authorization_code", code: "x" }) },
        400,
        "invalid_request",
        /redirect_uri is missing/,
      ],
      [
        {
          body: JSON.stringify({ grant_type: "refresh_token" }),
          headers: { "content-type": "application/json" },
        },
        400,
        "invalid_request",
        /x-www-form-urlencoded/,
      ],
      [
        {
          body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: "vid_rt_nope" }),
        },
        400,
        "invalid_grant",
        /unknown or revoked/,
      ],
      [
        {
          body: new URLSearchParams({
            grant_type: "authorization_code",
            code: "vid_ac_nope",
            redirect_uri: REDIRECT,
            client_id: "vid-cli",
            code_verifier: "short",
          }),
        },
        400,
        "invalid_request",
        /code_verifier must be/,
      ],
    ];
    for (const [init, status, error, pattern] of cases) {
      const response = await fetch(`${server.url}/oauth/token`, { method: "POST", ...init });
      const body = await response.json();
      assertSchema("OAuthError", body);
      assert.equal(response.status, status, JSON.stringify(body));
      assert.equal(body.error, error);
      assert.match(body.error_description, pattern);
      assert.equal(response.headers.get("cache-control"), "no-store");
    }
  });

  it("revokes an access or refresh token with its family, and answers 200 for any token", async () => {
    const byAccess = await oauth.login();
    assert.equal((await oauth.revoke(byAccess.access_token)).status, 200);
    assert.equal((await oauth.me(byAccess.access_token)).status, 401);
    assert.equal((await oauth.refresh(byAccess.refresh_token)).body.error, "invalid_grant");

    const byRefresh = await oauth.login();
    assert.equal((await oauth.revoke(byRefresh.refresh_token)).status, 200);
    assert.equal((await oauth.me(byRefresh.access_token)).status, 401);
    assert.equal((await oauth.refresh(byRefresh.refresh_token)).body.error, "invalid_grant");

    assert.equal((await oauth.revoke("vid_rt_unknown")).status, 200);
    assert.equal((await oauth.revoke(byRefresh.refresh_token)).status, 200, "revoking twice");
  });

  it("throttles sign-in: 5 failures lock the account from that address, 20 the address (429 + Retry-After)", async () => {
    // A server of its own: the lock-out would refuse the other tests' sign-ins.
    const lockDir = await Deno.makeTempDir({ prefix: "vid-oauth-throttle-" });
    for (const email of [EMAIL, "bo@example.com"]) {
      const added = await runVid(
        ["server", "users", "add", email, "--password", PASSWORD, "--data-dir", lockDir],
      );
      assert.equal(added.code, 0, added.stderr);
    }
    // Behind a proxy on loopback, so a stranger's address can be told from the owner's.
    const locked = await startServerProcess(lockDir, ["--trusted-proxy", "127.0.0.1/32"]);
    const lockClient = client(() => locked);
    try {
      const { challenge } = await pkce();
      for (let i = 0; i < 5; i++) {
        const { response } = await lockClient.signIn(challenge, { password: `wrong ${i}` });
        assert.equal(response.status, 401);
      }
      // The right password now is refused too, without being checked.
      const refused = await lockClient.signIn(challenge);
      assert.equal(refused.response.status, 429);
      assert.match(refused.body, /Too many failed sign-ins/);
      const wait = Number(refused.response.headers.get("retry-after"));
      assert.ok(wait > 0 && wait <= 15 * 60, `Retry-After ${wait}`);
      assert.equal(refused.response.headers.get("location"), null);
      // Those were a stranger's failures: the account's owner, elsewhere, still signs in.
      const owner = await lockClient.signIn(challenge, { forwardedFor: "203.0.113.7" });
      assert.equal(owner.response.status, 302, owner.body);
      // Another account is not locked by the first one's failures...
      const other = await lockClient.signIn(challenge, { email: "bo@example.com" });
      assert.equal(other.response.status, 302);
      // ...until the address has failed 20 times.
      for (let i = 0; i < 15; i++) {
        const { response } = await lockClient.signIn(challenge, {
          email: `nobody${i}@example.com`,
        });
        assert.equal(response.status, 401, `failure ${6 + i}`);
      }
      const byAddress = await lockClient.signIn(challenge, { email: "bo@example.com" });
      assert.equal(byAddress.response.status, 429);
      assert.ok(Number(byAddress.response.headers.get("retry-after")) > 0);
    } finally {
      await locked.stop();
      await Deno.remove(lockDir, { recursive: true });
    }
  });

  it("expires access tokens after VID_ACCESS_TOKEN_SECONDS (401 expired), then refreshes", async () => {
    const shortDir = await Deno.makeTempDir({ prefix: "vid-oauth-short-" });
    const added = await runVid(
      ["server", "users", "add", EMAIL, "--password", PASSWORD, "--data-dir", shortDir],
    );
    assert.equal(added.code, 0, added.stderr);
    // A few seconds: long enough that a loaded machine still uses a new token before it
    // expires; the expiry itself is waited for by polling, never by a fixed sleep.
    const lifetime = 3;
    const shortLived = await startServerProcess(shortDir, [], {
      VID_ACCESS_TOKEN_SECONDS: String(lifetime),
    });
    const shortClient = client(() => shortLived);
    /** GET /v3/me with a token the server has just issued (`issued` ms ago at most). */
    const meFresh = async (token: string, issued: number) => {
      const answer = await shortClient.me(token);
      // A token lives at least `lifetime` s; a check slower than that proves nothing.
      if (Date.now() - issued < lifetime * 1000) {
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
      }
    };
    try {
      let issued = Date.now();
      const tokens = await shortClient.login();
      assert.equal(tokens.expires_in, lifetime);
      await meFresh(tokens.access_token, issued);
      const expired = await waitFor(`the ${lifetime} s access token to expire`, async () => {
        const answer = await shortClient.me(tokens.access_token);
        return answer.status === 401 && answer;
      }, { timeoutMs: 30_000, intervalMs: 200 });
      assert.equal(expired.body.error.code, "vid_unauthorized");
      assert.match(expired.body.error.message, /expired/);
      issued = Date.now();
      const refreshed = await shortClient.refresh(tokens.refresh_token);
      assert.equal(refreshed.status, 200);
      await meFresh(String(refreshed.body.access_token), issued);
    } finally {
      await shortLived.stop();
      await Deno.remove(shortDir, { recursive: true });
    }
  });
});

describe("accessTokenSecondsFrom", () => {
  it("reads VID_ACCESS_TOKEN_SECONDS, defaulting to 3600", () => {
    assert.equal(accessTokenSecondsFrom(undefined), 3600);
    assert.equal(accessTokenSecondsFrom("90"), 90);
    for (const bad of ["0", "-5", "1.5", "soon"]) {
      assert.throws(() => accessTokenSecondsFrom(bad), OAuthConfigError);
    }
  });
});
