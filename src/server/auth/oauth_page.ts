/**
 * The HTML of `vid server`'s OAuth sign-in: the page where a person approves `vid auth login`
 * with their email and password, and the page that says a sign-in request is not valid.
 * Apart from the endpoints (oauth.ts) so that the markup, its styles and its security headers
 * are read in one place, and the endpoints keep only the protocol: which fields the form
 * carries back and when it is shown.
 *
 * Everything a request supplies is escaped; the pages load nothing (a `default-src 'none'`
 * policy with inline styles only) and may not be framed.
 *
 * @module
 */

import type { Context } from "hono";

/** What the sign-in page shows and what its form sends back. */
export interface SignInForm {
  /** The scope the client asks for. */
  scope: string;
  /** Where the code goes once approved; the page shows its origin. */
  redirectUri: string;
  /** The form's hidden fields, name and value; a field without a value is left out. */
  hidden: Array<[string, string | undefined]>;
  /** Why the previous attempt was refused, shown above the form. */
  error?: string;
  /** The email typed before, filled in again. */
  email: string;
}

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")
    .replaceAll('"', "&quot;").replaceAll("'", "&#39;");
}

const STYLE = `
body { font: 16px/1.5 system-ui, sans-serif; background: #f4f4f5; color: #18181b; margin: 0; }
main { max-width: 26rem; margin: 4rem auto; background: #fff; padding: 2rem;
  border-radius: 12px; box-shadow: 0 1px 4px rgb(0 0 0 / 0.1); }
h1 { font-size: 1.4rem; margin-top: 0; }
label { display: block; margin: 1rem 0 0.25rem; font-weight: 600; }
input { width: 100%; box-sizing: border-box; padding: 0.5rem; font: inherit;
  border: 1px solid #a1a1aa; border-radius: 6px; }
button { margin-top: 1.5rem; width: 100%; padding: 0.6rem; font: inherit; font-weight: 600;
  color: #fff; background: #2563eb; border: 0; border-radius: 6px; cursor: pointer; }
.error { background: #fef2f2; color: #991b1b; padding: 0.75rem; border-radius: 6px; }
.note { color: #52525b; font-size: 0.9rem; }
code { background: #f4f4f5; padding: 0 0.25rem; border-radius: 4px; }
`;

function htmlPage(
  c: Context,
  status: 200 | 400 | 401 | 403 | 429,
  title: string,
  body: string,
) {
  return c.html(
    `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · vid</title>
<style>${STYLE}</style>
</head>
<body><main>
${body}
</main></body>
</html>
`,
    status,
    {
      "cache-control": "no-store",
      "content-security-policy":
        "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
    },
  );
}

/**
 * The page for an authorization request that is not valid: it says why and redirects
 * nowhere, so an unchecked `redirect_uri` is never followed.
 *
 * @example
 * ```ts no_run
 * import { Hono } from "hono";
 *
 * new Hono().get("/authorize", (c) => errorPage(c, "client_id is missing"));
 * ```
 */
export function errorPage(c: Context, message: string): Response {
  return htmlPage(
    c,
    400,
    "Sign-in request not valid",
    `<h1>This sign-in request is not valid</h1>
<p class="error" role="alert">${escapeHtml(message)}</p>
<p>Nothing was sent back to the application. Start again with <code>vid auth login</code>.</p>`,
  );
}

/**
 * The sign-in and approve page: what the client asks for, where the code will go, and a form
 * for email and password that posts back to `authorize` with the hidden fields.
 *
 * @example
 * ```ts no_run
 * import { Hono } from "hono";
 *
 * new Hono().get("/authorize", (c) =>
 *   signInPage(c, 200, {
 *     scope: "render",
 *     redirectUri: "http://127.0.0.1:8123/callback",
 *     hidden: [["client_id", "vid-cli"], ["csrf_token", "…"]],
 *     email: "",
 *   }));
 * ```
 */
export function signInPage(
  c: Context,
  status: 200 | 401 | 403 | 429,
  form: SignInForm,
): Response {
  const { scope, redirectUri, hidden, error, email } = form;
  const fields = hidden.filter(([, value]) => value !== undefined)
    .map(([name, value]) =>
      `<input type="hidden" name="${name}" value="${escapeHtml(value as string)}">`
    ).join("\n");
  const target = new URL(redirectUri);
  return htmlPage(
    c,
    status,
    "Sign in",
    `<h1>Sign in to approve vid</h1>
<p>The <strong>vid command-line tool</strong> asks to render videos with your account
(scope <code>${escapeHtml(scope)}</code>). Approving sends a one-time code to
<code>${escapeHtml(target.origin)}</code>.</p>
${error ? `<p class="error" role="alert">${escapeHtml(error)}</p>` : ""}
<form method="post" action="authorize">
${fields}
<label for="email">Email</label>
<input id="email" type="email" name="email" autocomplete="username" required autofocus value="${
      escapeHtml(email)
    }">
<label for="password">Password</label>
<input id="password" type="password" name="password" autocomplete="current-password" required>
<button type="submit">Approve</button>
</form>
<p class="note">Only approve if you just ran <code>vid auth login</code> yourself.</p>`,
  );
}
