/**
 * `<vid-player>`: a composition's live preview in any web page, frame-exact with the render.
 * Importing this module in a browser defines the element; elsewhere (a server, Node) it
 * defines nothing, and {@linkcode PLAYER_BUNDLE} is the browser module's text for serving it
 * yourself (`vid preview` and `vid server` serve it at `/player.js`). See docs/player.md.
 *
 * @example
 * ```ts no_run
 * import { type VidPlayer } from "@vid/cli/player";
 *
 * const player = document.querySelector("vid-player") as VidPlayer;
 * await player.seek(2);
 * player.variables = { title: "Ada" };
 * ```
 *
 * @module
 */

import { definePlayer } from "./src/player/element.ts";

export {
  definePlayer,
  PlayerElementBase,
  type PlayerReadyState,
  VidPlayer,
} from "./src/player/element.ts";
export { PLAYER_BUNDLE } from "./src/player/player_bundle.ts";

definePlayer();
