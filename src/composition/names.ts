/**
 * The one did-you-mean of vid: the edit distance and the nearest declared name, pure (no
 * Node or Deno API) so the page runtime's read tracking (`src/runtime/variable_reads.ts`)
 * bundles the very rules the command line uses for override keys and undeclared reads.
 *
 * @module
 */

/**
 * Damerau-Levenshtein distance (optimal string alignment): insertions, deletions,
 * substitutions and swaps of two neighbouring characters each cost 1.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(editDistance("tittle", "title"), 1);
 * assert.equal(editDistance("subtilte", "subtitle"), 1); // one swap
 * ```
 */
export function editDistance(a: string, b: string): number {
  const rows = a.length + 1;
  const cols = b.length + 1;
  const d: number[][] = Array.from({ length: rows }, (_, i) => {
    const row = new Array<number>(cols).fill(0);
    row[0] = i;
    return row;
  });
  for (let j = 0; j < cols; j++) d[0][j] = j;
  for (let i = 1; i < rows; i++) {
    for (let j = 1; j < cols; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[rows - 1][cols - 1];
}

/**
 * The declared name closest to an undeclared `key`, or undefined when none is close.
 * Letter case is ignored; a name is close when at most 1 edit away for keys up to 3
 * characters, 2 up to 6 and 3 beyond (and fewer edits than the key has characters, so a
 * one-letter key never "means" another one-letter name). Ties go to the name declared
 * first.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(nearestName("tittle", ["title", "subtitle"]), "title");
 * assert.equal(nearestName("background", ["title"]), undefined);
 * ```
 */
export function nearestName(key: string, names: readonly string[]): string | undefined {
  const wanted = key.toLowerCase();
  const limit = Math.min(wanted.length - 1, wanted.length <= 3 ? 1 : wanted.length <= 6 ? 2 : 3);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const name of names) {
    const distance = editDistance(wanted, name.toLowerCase());
    if (distance <= limit && distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best;
}
