/**
 * The `vid` command-line tool.
 *
 * ```sh
 * deno run -A cli.ts render examples/hello
 * ```
 *
 * @module
 */

import { main } from "./src/cli/main.ts";

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
