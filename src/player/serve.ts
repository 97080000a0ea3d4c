/**
 * `/player.js` as `vid preview` and `vid server` serve it: the `<vid-player>` module, with
 * `Access-Control-Allow-Origin: *` so a page of any origin can load it as a module script
 * (module scripts are fetched with CORS). The module holds no secret and reads nothing of
 * the server; the compositions it shows are reached by their own URLs.
 *
 * @module
 */

import { PLAYER_BUNDLE } from "./player_bundle.ts";

/** Where the servers answer {@linkcode playerScript}. */
export const PLAYER_PATH = "/player.js";

/**
 * The `/player.js` response.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const response = playerScript();
 * assert.equal(response.headers.get("access-control-allow-origin"), "*");
 * assert.match(await response.text(), /vid-player/);
 * ```
 */
export function playerScript(): Response {
  return new Response(PLAYER_BUNDLE, {
    headers: {
      "content-type": "text/javascript; charset=utf-8",
      "access-control-allow-origin": "*",
      "cache-control": "no-cache",
    },
  });
}
