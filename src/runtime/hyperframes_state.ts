/**
 * The HyperFrames model's state for one page ({@linkcode HyperframesState}): what the host
 * gave it, the mounted instances and their queued scripts, and what the clips' last
 * application left. The model's functions (`hyperframes_timing.ts`, `hyperframes_mount.ts`)
 * read and change it; `hyperframes.ts` creates it. Its own module so that those share the
 * type without importing the model.
 *
 * @module
 */

import type { PageGlobal, Scope } from "./hyperframes_scope.ts";

/** What the model's functions use of the page runtime (`HyperframesHost`). */
export interface ModelHost {
  /** The top-level variables (`__vid.getVariables()`). */
  getVariables(): Readonly<Record<string, unknown>>;
  /** Records an error that fails the render with its message. */
  report(error: Error): void;
  /** Leave a sub-composition whose file cannot be loaded out without an error. */
  skipMissing?: boolean;
}

/** A sub-composition's script waiting to run: a file by URL, or inline code (wrapped). */
export interface PendingScript {
  src?: string;
  code?: string;
}

/** The model's state for one page. */
export interface HyperframesState {
  host: ModelHost;
  /** The page's global object. */
  w: PageGlobal;
  /** The mounted instances, in mount order (`window.__vidHyperframesScopes`). */
  scopes: Scope[];
  /** How many hosts were mounted: the last instance number. */
  mounts: number;
  /** The mounted instances' scripts not yet inserted. */
  scripts: PendingScript[];
  /** Elements whose start is being resolved (a reference cycle starts at 0). */
  visiting: Set<Element>;
  /** Each clip's authored inline `visibility`, read before the first time it was hidden. */
  shown: WeakMap<HTMLElement, string>;
  /** The clips hidden at the last `applyClips`. */
  hidden: WeakSet<Element>;
}
