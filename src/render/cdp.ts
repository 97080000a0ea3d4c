/**
 * A minimal Chrome DevTools Protocol client over the browser's WebSocket, with flat
 * sessions. The capture hot path sends raw CDP (seek, BeginFrame, screenshot), so a thin
 * client with no page abstraction is all rendering needs. Web standards only: runs under
 * Deno and Node 22, whose global `WebSocket` it uses; Node 20 has none, so there it loads
 * the `ws` package (a dependency of the npm SDK, see scripts/build_npm.ts), whose
 * `WebSocket` has the same event handlers.
 *
 * @module
 */
import { EXIT_FAILED, VidError } from "../errors.ts";

/** The browser connection closed (crashed or was killed) while a call was pending. */
export class CdpClosedError extends VidError {
  override name = "CdpClosedError";

  /** Creates the error; the CLI exits 1. */
  constructor(message: string, options?: ErrorOptions) {
    super(message, { exitCode: EXIT_FAILED, cause: options?.cause });
  }
}

/** A CDP method returned an error. */
export class CdpError extends VidError {
  override name = "CdpError";
  /** The CDP method that failed. */
  override readonly field: string;
  constructor(method: string, message: string) {
    super(`${method}: ${message}`, { exitCode: EXIT_FAILED });
    this.field = method;
  }
}

type Params = Record<string, unknown>;
type Listener = (params: Params, sessionId?: string) => void;

interface Pending {
  method: string;
  resolve: (value: Params) => void;
  reject: (error: Error) => void;
}

/**
 * The npm package providing `WebSocket` where the runtime has none (Node 20). Held in a
 * variable so bundlers and type checkers leave the import to run time: Deno and Node 22
 * never load it.
 */
const WS_PACKAGE = "ws";

/** The runtime's `WebSocket`, else the `ws` package's. */
async function webSocketClass(): Promise<typeof WebSocket> {
  if (typeof globalThis.WebSocket === "function") return globalThis.WebSocket;
  try {
    const loaded = await import(WS_PACKAGE) as { WebSocket: typeof WebSocket };
    return loaded.WebSocket;
  } catch (error) {
    throw new CdpClosedError(
      `this runtime has no WebSocket and the "${WS_PACKAGE}" package cannot be loaded ` +
        `(${(error as Error).message}); install it (npm install ${WS_PACKAGE}) or use Node 22+`,
      { cause: error },
    );
  }
}

/** One WebSocket connection to a browser. */
export class CdpConnection {
  #socket: WebSocket;
  #nextId = 1;
  #pending = new Map<number, Pending>();
  #listeners = new Map<string, Set<Listener>>();
  #closed = false;

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.onmessage = (event) => this.#onMessage(String(event.data));
    socket.onclose = () => this.#onClose();
    socket.onerror = () => this.#onClose();
  }

  /**
   * Opens a connection to `ws://…/devtools/browser/…`; rejects with
   * {@linkcode CdpClosedError} when it is refused or not open within `timeoutMs`.
   */
  static async connect(url: string, timeoutMs = 10000): Promise<CdpConnection> {
    const Socket = await webSocketClass();
    return await new Promise((resolve, reject) => {
      const socket = new Socket(url);
      const timer = setTimeout(() => {
        socket.onopen = socket.onerror = null;
        socket.close();
        reject(new CdpClosedError(`the browser at ${url} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      socket.onopen = () => {
        clearTimeout(timer);
        resolve(new CdpConnection(socket));
      };
      socket.onerror = () => {
        clearTimeout(timer);
        reject(new CdpClosedError(`cannot connect to the browser at ${url}`));
      };
    });
  }

  /** Whether the connection has closed. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Sends a command; `sessionId` targets an attached page. */
  send<T = Params>(method: string, params: Params = {}, sessionId?: string): Promise<T> {
    if (this.#closed) {
      return Promise.reject(new CdpClosedError(`${method}: the browser connection is closed`));
    }
    const id = this.#nextId++;
    const message: Params = { id, method, params };
    if (sessionId) message.sessionId = sessionId;
    return new Promise<T>((resolve, reject) => {
      this.#pending.set(id, { method, resolve: resolve as (v: Params) => void, reject });
      this.#socket.send(JSON.stringify(message));
    });
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on(method: string, listener: Listener): () => void {
    let set = this.#listeners.get(method);
    if (!set) this.#listeners.set(method, set = new Set());
    set.add(listener);
    return () => set.delete(listener);
  }

  /** Closes the socket. */
  close(): void {
    if (!this.#closed) this.#socket.close();
    this.#onClose();
  }

  #onMessage(text: string): void {
    const message = JSON.parse(text) as {
      id?: number;
      method?: string;
      params?: Params;
      result?: Params;
      error?: { message: string; data?: string };
      sessionId?: string;
    };
    if (message.id !== undefined) {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if (message.error) {
        const detail = message.error.data ? ` (${message.error.data})` : "";
        pending.reject(new CdpError(pending.method, message.error.message + detail));
      } else {
        pending.resolve(message.result ?? {});
      }
      return;
    }
    if (message.method) {
      for (const listener of this.#listeners.get(message.method) ?? []) {
        listener(message.params ?? {}, message.sessionId);
      }
    }
  }

  #onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const pending of this.#pending.values()) {
      pending.reject(new CdpClosedError(`${pending.method}: the browser connection closed`));
    }
    this.#pending.clear();
    for (const listener of this.#listeners.get("__closed") ?? []) listener({});
  }
}

/** A flat session attached to one page target. */
export class CdpSession {
  readonly connection: CdpConnection;
  readonly sessionId: string;
  readonly targetId: string;
  #crash: Promise<never>;
  #fail: (error: Error) => void = () => {};
  #unsubscribe: (() => void)[];

  constructor(connection: CdpConnection, sessionId: string, targetId: string) {
    this.connection = connection;
    this.sessionId = sessionId;
    this.targetId = targetId;
    // A crashed renderer never answers: calls in flight fail instead of hanging.
    this.#crash = new Promise<never>((_, reject) => this.#fail = reject);
    this.#crash.catch(() => {});
    this.#unsubscribe = [
      connection.on("Inspector.targetCrashed", (_params, id) => {
        if (id === sessionId) this.#fail(new CdpClosedError("the page's renderer crashed"));
      }),
      connection.on("Target.detachedFromTarget", (params) => {
        if (params.sessionId === sessionId) {
          this.#fail(new CdpClosedError("the page was detached (closed or crashed)"));
        }
      }),
      connection.on("__closed", () => this.#fail(new CdpClosedError("the browser closed"))),
    ];
  }

  /** Sends a command to this page. */
  send<T = Params>(method: string, params: Params = {}): Promise<T> {
    return Promise.race([this.connection.send<T>(method, params, this.sessionId), this.#crash]);
  }

  /** Subscribes to an event of this page. */
  on(method: string, listener: (params: Params) => void): () => void {
    const off = this.connection.on(method, (params, sessionId) => {
      if (sessionId === this.sessionId) listener(params);
    });
    this.#unsubscribe.push(off);
    return off;
  }

  /**
   * Resolves with the next `method` event of this page; rejects with {@linkcode CdpClosedError}
   * when the page crashes, detaches or the browser goes away first (a wait for `load` on a
   * killed browser would otherwise sit out its whole timeout and not be retried as a crash).
   */
  once(method: string): Promise<Params> {
    let off = (): void => {};
    const event = new Promise<Params>((resolve) => {
      off = this.on(method, (params) => {
        off();
        resolve(params);
      });
    });
    const result = Promise.race([event, this.#crash]).finally(() => off());
    // A caller may stop waiting (its own call failed first): that is no unhandled rejection.
    result.catch(() => {});
    return result;
  }

  /** Drops this session's event subscriptions (after its target closed). */
  dispose(): void {
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
  }
}
