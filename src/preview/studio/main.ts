/**
 * The studio client's entry: the studio page's one script runs this module (bundled with
 * everything it imports into `src/preview/studio_bundle.ts` by `deno task build:page`).
 *
 * @module
 */

import { studioClient } from "./client.ts";

studioClient();
