/**
 * What `getVariables()` hands the page (vid's `__vid.getVariables()` and
 * `window.__hyperframes.getVariables()`): the values, frozen, as a plain object whose
 * prototype is a proxy of `Object.prototype`, so a read of an id the values lack (which falls
 * through to the prototype) is noticed, while the object itself still clones
 * (`structuredClone`, `postMessage`) and serializes as before. Such a read yields `undefined`, which reaches the screen as
 * "Welcome undefined" or `NaN`; so it is recorded as a page error, created inside the read so
 * its stack names the reading script's file and line, and the render (and `vid check`) fails
 * with the id, the declared ids and a did-you-mean. Each id is recorded once.
 *
 * Runs in the page (bundled into the runtime by `scripts/build_page_code.ts`).
 *
 * @module
 */

import { nearestName } from "../composition/names.ts";

/** The name of the error a read of an undeclared id is recorded as. */
export const UNDECLARED_READ = "UndeclaredVariableError";

/**
 * Names every library or engine probes on any object (JSON, promises, inspectors): reading
 * them is no mistake of the page's.
 */
function isProbe(key: string): boolean {
  return key in Object.prototype || key === "toJSON" || key === "then" ||
    key.startsWith("__") || key.startsWith("@@") || key.startsWith("$$");
}

/**
 * The message of a read of `id`, which the values lack.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(
 *   undeclaredReadMessage("firstName", ["title", "firstname"]),
 *   '`firstName` is read but not declared; did you mean `firstname`? declared: title, firstname',
 * );
 * ```
 */
export function undeclaredReadMessage(id: string, declared: readonly string[]): string {
  const near = nearestName(id, declared);
  return `\`${id}\` is read but not declared;${near ? ` did you mean \`${near}\`?` : ""} ` +
    `declared: ${declared.join(", ") || "none"}`;
}

/**
 * A `getVariables` over `values` that records, through `record`, the first read of each id
 * `values` lacks.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const seen: string[] = [];
 * const getVariables = trackedVariables({ title: "Hi" }, (e) => seen.push(e.message));
 * assert.equal(getVariables().title, "Hi");
 * assert.equal(getVariables().titel, undefined);
 * assert.deepEqual(structuredClone(getVariables()), { title: "Hi" });
 * assert.deepEqual(seen, ["`titel` is read but not declared; did you mean `title`? declared: title"]);
 * ```
 */
export function trackedVariables(
  values: Record<string, unknown>,
  record: (error: Error) => void,
): () => Readonly<Record<string, unknown>> {
  const declared = Object.keys(values);
  const reported = new Set<string>();
  const lookout = new Proxy(Object.prototype, {
    get(target, key, receiver) {
      if (typeof key === "string" && !isProbe(key) && !reported.has(key)) {
        reported.add(key);
        const error = new Error(undeclaredReadMessage(key, declared));
        error.name = UNDECLARED_READ;
        record(error);
      }
      return Reflect.get(target, key, receiver);
    },
  });
  return () => Object.freeze(Object.assign(Object.create(lookout), structuredClone(values)));
}
