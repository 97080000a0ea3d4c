/**
 * The preview server's server-sent events (`GET /__preview/events`): one hub per server
 * that holds the studio pages' open streams and sends them `change` (file edits) and
 * `render` (a render's status, a few updates a second) events.
 *
 * @module
 */

import type { PreviewRenderStatus } from "./render_job.ts";

/** The server-sent event streams of the studio pages, and the edit count they start from. */
export interface EventHub {
  /** File edits seen so far; the `hello` event tells a new stream. */
  changes: number;
  /** Sends one event to every open stream (dropping the ones that went away). */
  broadcast(event: string, data: unknown): void;
  /** Opens a stream: `GET /__preview/events`. */
  respond(): Response;
  /** Sends the keep-alive comment line to every open stream. */
  ping(): void;
  /** Ends every open stream. */
  close(): void;
}

/** Creates the hub of one preview server. */
export function createEventHub(): EventHub {
  const encoder = new TextEncoder();
  const streams = new Set<ReadableStreamDefaultController<Uint8Array>>();
  const send = (chunk: Uint8Array): void => {
    for (const stream of streams) {
      try {
        stream.enqueue(chunk);
      } catch {
        streams.delete(stream);
      }
    }
  };
  const hub: EventHub = {
    changes: 0,
    broadcast: (event, data) =>
      send(encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)),
    respond: () => {
      let own: ReadableStreamDefaultController<Uint8Array> | undefined;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          own = controller;
          streams.add(controller);
          controller.enqueue(
            encoder.encode(`event: hello\ndata: ${JSON.stringify({ changes: hub.changes })}\n\n`),
          );
        },
        cancel() {
          if (own) streams.delete(own);
        },
      });
      return new Response(body, {
        headers: {
          "content-type": "text/event-stream",
          "connection": "keep-alive",
          "cache-control": "no-store",
        },
      });
    },
    ping: () => send(encoder.encode(": ping\n\n")),
    close: () => {
      for (const stream of streams) {
        try {
          stream.close();
        } catch {
          // the client went away first
        }
      }
      streams.clear();
    },
  };
  return hub;
}

/** A render's status for the event stream, a few updates a second and every change of state. */
export function renderStatusReporter(
  hub: EventHub,
  log: (message: string) => void,
): (status: PreviewRenderStatus) => void {
  let lastRenderEvent = 0;
  let lastRenderState = "";
  return (status) => {
    // Every frame reports progress; the studio needs a few updates a second.
    const now = performance.now();
    if (status.state === lastRenderState && now - lastRenderEvent < 100) return;
    lastRenderEvent = now;
    lastRenderState = status.state;
    hub.broadcast("render", status);
    if (status.state === "done") log(`rendered ${status.output}`);
    if (status.state === "failed") log(`render failed: ${status.error?.message}`);
  };
}
