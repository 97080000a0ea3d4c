/**
 * The windows of sub-compositions and clips on a video's timeline, as the HyperFrames model
 * (`hyperframes.ts`) reports them and the page runtime's API (`page_runtime.ts`) hands them to
 * the studio's timeline. Its own module so that the two share the type without importing each
 * other.
 *
 * @module
 */

/** A sub-composition's or a clip's window on the video's timeline, in seconds. */
export interface TimedWindow {
  /** A `data-composition-src` host or a `class="clip"` element. */
  kind: "composition" | "clip";
  /** The host's `data-composition-id`, or the clip's `#id`. */
  label: string;
  /** When it starts on the video's timeline. */
  start: number;
  /** When it ends; null when it lasts to the end. */
  end: number | null;
}
