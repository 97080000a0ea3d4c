/**
 * The studio's live updates: the preview server's event stream (`/__preview/events`) says
 * when a project file changed (the studio reads the compositions again) and how the studio's
 * render is going; the header shows whether the stream is connected.
 *
 * @module
 */

import type { StudioElements } from "./dom.ts";
import type { RenderStatus } from "./types.ts";

/** What the studio does on each event. */
export interface LiveUpdateHandlers {
  /** A project file changed. */
  changed(): void;
  /** The render job's status changed. */
  render(status: RenderStatus): void;
}

/**
 * Opens the event stream and shows its state in `connection`; the stream reconnects by
 * itself (EventSource) while the page is open.
 *
 * @example
 * ```ts no_run
 * import { studioElements } from "./dom.ts";
 *
 * listenForUpdates(studioElements(), {
 *   changed: () => location.reload(),
 *   render: (status) => console.log(status.state),
 * });
 * ```
 */
export function listenForUpdates(
  elements: Pick<StudioElements, "connection">,
  handlers: LiveUpdateHandlers,
): EventSource {
  const { connection } = elements;
  const events = new EventSource("/__preview/events");
  events.addEventListener("open", () => {
    connection.textContent = "live";
    connection.dataset.state = "live";
  });
  events.addEventListener("error", () => {
    connection.textContent = "disconnected: is vid preview still running?";
    connection.dataset.state = "down";
  });
  events.addEventListener("change", () => handlers.changed());
  events.addEventListener("render", (event) => {
    handlers.render(JSON.parse((event as MessageEvent<string>).data) as RenderStatus);
  });
  return events;
}
