/**
 * vid: turn HTML compositions into finished videos, parameterised by typed template
 * variables.
 *
 * @example
 * ```ts no_run
 * import { readComposition, renderComposition } from "@vid/cli";
 *
 * const composition = await readComposition("examples/hello");
 * console.log(composition.declarations.map((d) => d.id));
 * const result = await renderComposition({
 *   target: "examples/hello",
 *   values: { title: "Launch day" },
 *   output: "renders/launch.mp4",
 * });
 * console.log(`${result.frames} frames in ${result.elapsedMs} ms`);
 * ```
 *
 * @module
 */

// Everything of the subpath entries: `@vid/cli/render` (this machine), `@vid/cli/lambda`
// (distributed on AWS), `@vid/cli/cloud` (a hosted render service's client) and
// `@vid/cli/server` (hosting that service; Deno only, left out of the npm package).
export * from "./render.ts";
export * from "./lambda.ts";
export * from "./cloud.ts";
export * from "./server.ts";
