/**
 * The studio's shareable state in its URL (composition, frame, changed variables, mute and
 * volume), so a reload or a shared link opens the same view.
 *
 * @module
 */

/** What the studio's URL holds. */
export interface UrlState {
  /** The composition's entry file; "" for the one the server started with. */
  entry: string;
  /** The frame to show. */
  frame: number;
  /** Variables that differ from the defaults, applied once the declarations are known. */
  values?: Record<string, unknown>;
  /** Sound off. */
  muted: boolean;
  /** Studio volume, 0-1. */
  volume: number;
}

/**
 * A JSON object from the URL; undefined when absent, unreadable or not an object.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseJsonObject('{"a":1}'), { a: 1 });
 * assert.equal(parseJsonObject("[1]"), undefined);
 * assert.equal(parseJsonObject("{"), undefined);
 * ```
 */
export function parseJsonObject(raw: string | null): Record<string, unknown> | undefined {
  if (raw === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed && typeof parsed === "object" && !Array.isArray(parsed)
      ? parsed as Record<string, unknown>
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads the state from a URL's search part; what is missing or unreadable takes its default
 * (frame 0, sound on, full volume).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(readUrlState("?frame=12&muted=1&volume=0.5"), {
 *   entry: "",
 *   frame: 12,
 *   values: undefined,
 *   muted: true,
 *   volume: 0.5,
 * });
 * ```
 */
export function readUrlState(search: string): UrlState {
  const params = new URLSearchParams(search);
  const raw = params.get("volume");
  return {
    entry: params.get("composition") ?? "",
    frame: Math.max(0, Math.floor(Number(params.get("frame")) || 0)),
    values: parseJsonObject(params.get("vars")),
    muted: params.get("muted") === "1",
    volume: raw === null ? 1 : Math.max(0, Math.min(1, Number(raw) || 0)),
  };
}

/**
 * The values that differ from the defaults: what the URL (and `--variables`) needs. With no
 * defaults known yet, every value.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(changedValues({ a: 1, b: 2 }, { a: 1, b: 3 }), { b: 2 });
 * ```
 */
export function changedValues(
  values: Record<string, unknown>,
  defaults: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const changed: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    if (!defaults || defaults[key] !== value) changed[key] = value;
  }
  return changed;
}

/**
 * The URL search part of `state`, leaving out what is at its default (`defaultEntry` is the
 * composition the server started with).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * const state = { entry: "index.html", frame: 3, values: {}, muted: false, volume: 1 };
 * assert.equal(urlSearch(state, "index.html"), "?frame=3");
 * ```
 */
export function urlSearch(state: UrlState, defaultEntry: string): string {
  const next = new URLSearchParams();
  if (state.entry !== defaultEntry) next.set("composition", state.entry);
  next.set("frame", String(state.frame));
  if (state.values && Object.keys(state.values).length > 0) {
    next.set("vars", JSON.stringify(state.values));
  }
  if (state.muted) next.set("muted", "1");
  if (state.volume !== 1) next.set("volume", String(state.volume));
  return `?${next}`;
}
