/**
 * The entry `deno task build:page` bundles into `/player.js` (`player_bundle.ts`): defines
 * `<vid-player>` in the page that loads it.
 *
 * @module
 */

import { definePlayer } from "./element.ts";

definePlayer();
