/**
 * The render browser's network guard: a per-render HTTP proxy on loopback that Chromium
 * is launched behind (`--proxy-server`, with loopback's implicit bypass removed). Every
 * connection the page makes goes through it: navigations, sub-resources, iframes and
 * workers (whatever process renders them), fetch/XHR, EventSource, WebSocket (tunnelled
 * with CONNECT) and every redirect hop (each hop is a new proxy request). WebTransport
 * (QUIC over UDP) is not attempted behind a proxy; WebRTC's UDP is switched off by flag. Each target is
 * checked with the address policy and the proxy connects to the exact addresses it
 * checked, so DNS rebinding cannot reach a private host. The render's own project server
 * is the only private origin allowed.
 *
 * Chromium's Fetch domain was not used: it does not see WebSocket, and cross-origin
 * iframes and workers are separate targets that would each need interception.
 *
 * Node built-ins only: the Lambda worker bundles this file for Node 22.
 *
 * @module
 */

import {
  createServer,
  type IncomingMessage,
  request as httpRequest,
  type ServerResponse,
} from "node:http";
import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import { BlockedAddressError, type CheckedAddress, resolvePublicHost } from "./address_policy.ts";
import { pinnedLookup } from "./guarded_fetch.ts";

/** A request the proxy refused. */
export interface BlockedRequest {
  /** `host:port` as the browser asked for it. */
  target: string;
  /** Why it was refused. */
  reason: string;
}

/** A running guard proxy. */
export interface GuardProxy {
  /** `http://127.0.0.1:<port>`, for `--proxy-server`. */
  readonly url: string;
  /** Requests refused so far, the first 100 (a render can report them). */
  readonly blocked: readonly BlockedRequest[];
  /** Stops listening and cuts every open tunnel. */
  close(): Promise<void>;
}

/** Options of {@linkcode startGuardProxy}. */
export interface GuardProxyOptions {
  /**
   * Origins allowed whatever their address, as `host:port` (the render's project server,
   * `127.0.0.1:41234`).
   */
  allowHosts: readonly string[];
  /** Told of every refused request. */
  onBlocked?: (blocked: BlockedRequest) => void;
}

/** Splits `host:port` (IPv6 in brackets) using the WHATWG parser. */
function parseAuthority(authority: string, defaultPort: number): { host: string; port: number } {
  const url = new URL(`http://${authority}/`);
  return { host: url.hostname, port: url.port === "" ? defaultPort : Number(url.port) };
}

/** What the proxy's handlers share: the allowed origins, the refusals so far, open sockets. */
interface ProxyState {
  /** Allowed origins as `host:port`, port always given. */
  allowed: Set<string>;
  blocked: BlockedRequest[];
  onBlocked?: (blocked: BlockedRequest) => void;
  /** Every open client and upstream socket, cut on close. */
  sockets: Set<Duplex>;
}

/**
 * The addresses to connect to for `host:port` (undefined: an allowed origin, connected
 * by name), or a refusal.
 */
async function decide(
  state: ProxyState,
  host: string,
  port: number,
): Promise<CheckedAddress[] | undefined> {
  const key = `${host}:${port}`;
  if (state.allowed.has(key)) return undefined;
  try {
    return await resolvePublicHost(host, "network");
  } catch (error) {
    const reason = error instanceof BlockedAddressError
      ? error.message.replace(/^network: /, "")
      : String(error);
    const entry = { target: key, reason };
    // Kept for reporting, bounded: a page could make millions of refused requests.
    if (state.blocked.length < 100) state.blocked.push(entry);
    state.onBlocked?.(entry);
    throw error;
  }
}

/** Answers a proxy request with `status` and closes the connection. */
function refuse(socket: Duplex, status: string): void {
  socket.end(`HTTP/1.1 ${status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n`);
}

/**
 * Connects `client` to `host:port` once the policy allows it: a CONNECT tunnel (answered
 * with 200), or a forwarded Upgrade request (`replay` is its head).
 */
async function tunnel(
  state: ProxyState,
  client: Duplex,
  head: Uint8Array,
  host: string,
  port: number,
  replay?: string,
): Promise<void> {
  state.sockets.add(client);
  client.on("close", () => state.sockets.delete(client));
  client.on("error", () => client.destroy());
  let addresses: CheckedAddress[] | undefined;
  try {
    addresses = await decide(state, host, port);
  } catch {
    refuse(client, "403 Forbidden");
    return;
  }
  if (client.destroyed) return;
  // Every checked address is tried in turn (IPv6 then IPv4, say), none other.
  const upstream: Socket = connect({
    host: host.replace(/^\[|\]$/g, ""),
    port,
    ...(addresses ? { lookup: pinnedLookup(addresses) } : {}),
    autoSelectFamily: (addresses?.length ?? 0) > 1,
  });
  let connected = false;
  state.sockets.add(upstream);
  upstream.on("close", () => {
    state.sockets.delete(upstream);
    client.destroy();
  });
  upstream.on("error", () => {
    if (!connected) refuse(client, "502 Bad Gateway");
    upstream.destroy();
  });
  upstream.once("connect", () => {
    connected = true;
    if (replay === undefined) client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    else upstream.write(replay);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  client.on("close", () => upstream.destroy());
}

/** A plain-http proxy request: the absolute URL is the target. */
async function forwardHttp(
  state: ProxyState,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  let url: URL;
  try {
    url = new URL(req.url ?? "");
    if (url.protocol !== "http:") throw new Error("not http");
  } catch {
    res.writeHead(400, { "content-type": "text/plain" }).end("vid guard proxy: bad request");
    return;
  }
  const port = url.port === "" ? 80 : Number(url.port);
  let addresses: CheckedAddress[] | undefined;
  try {
    addresses = await decide(state, url.hostname, port);
  } catch (error) {
    res.writeHead(403, { "content-type": "text/plain" })
      .end(`vid: blocked by the render's network guard: ${(error as Error).message}`);
    return;
  }
  const headers = { ...req.headers };
  delete headers["proxy-connection"];
  delete headers["proxy-authorization"];
  const upstream = httpRequest({
    host: url.hostname.replace(/^\[|\]$/g, ""),
    ...(addresses ? { lookup: pinnedLookup(addresses) } : {}),
    port,
    method: req.method,
    path: url.pathname + url.search,
    headers,
  }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.statusMessage, answer.headers);
    answer.pipe(res);
  });
  upstream.on("error", () => {
    if (!res.headersSent) res.writeHead(502).end();
    else res.destroy();
  });
  req.pipe(upstream);
}

/** A CONNECT request: a tunnel to `host:port` (https, and ws:// as Chromium sends it). */
function connectTunnel(
  state: ProxyState,
  req: IncomingMessage,
  client: Duplex,
  head: Uint8Array,
): void {
  let target: { host: string; port: number };
  try {
    target = parseAuthority(req.url ?? "", 443);
  } catch {
    refuse(client, "400 Bad Request");
    return;
  }
  void tunnel(state, client, head, target.host, target.port);
}

/**
 * An Upgrade request with an absolute URL. ws:// through an HTTP proxy is tunnelled with
 * CONNECT by Chromium; an Upgrade request is forwarded the same way, under the same check.
 */
function forwardUpgrade(
  state: ProxyState,
  req: IncomingMessage,
  client: Duplex,
  head: Uint8Array,
): void {
  let url: URL;
  try {
    url = new URL(req.url ?? "");
  } catch {
    refuse(client, "400 Bad Request");
    return;
  }
  const port = url.port === "" ? 80 : Number(url.port);
  const lines = [`${req.method} ${url.pathname}${url.search} HTTP/1.1`];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (/^proxy-/i.test(req.rawHeaders[i])) continue;
    lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
  }
  void tunnel(state, client, head, url.hostname, port, lines.join("\r\n") + "\r\n\r\n");
}

/**
 * Starts the proxy on 127.0.0.1 at a free port.
 *
 * @example
 * ```ts no_run
 * const proxy = await startGuardProxy({ allowHosts: ["127.0.0.1:41234"] });
 * // launch Chromium with guardLaunchFlags(proxy.url, ["127.0.0.1:41234"])
 * await proxy.close();
 * ```
 */
export async function startGuardProxy(options: GuardProxyOptions): Promise<GuardProxy> {
  const blocked: BlockedRequest[] = [];
  const allowed = new Set(options.allowHosts.map((a) => {
    const { host, port } = parseAuthority(a, 80);
    return `${host}:${port}`;
  }));
  const sockets = new Set<Duplex>();
  const state: ProxyState = { allowed, blocked, onBlocked: options.onBlocked, sockets };
  const server = createServer((req, res) => forwardHttp(state, req, res));
  server.on(
    "connect",
    (req: IncomingMessage, client: Duplex, head: Uint8Array) =>
      connectTunnel(state, req, client, head),
  );
  server.on(
    "upgrade",
    (req: IncomingMessage, client: Duplex, head: Uint8Array) =>
      forwardUpgrade(state, req, client, head),
  );
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    blocked,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

/**
 * Chromium flags that send every connection of the browser through the guard proxy:
 * loopback's implicit proxy bypass is removed (`<-loopback>`) and only the allowed
 * project-server origins bypass it; WebRTC may not send UDP outside the proxy (so no
 * STUN/ICE to private addresses: chromium-headless-shell reads the `--force-` switch,
 * Chromium the other, both checked by tests), and the browser never resolves names
 * itself.
 *
 * @example
 * ```ts
 * guardLaunchFlags("http://127.0.0.1:9000", ["127.0.0.1:41234"]);
 * ```
 */
export function guardLaunchFlags(proxyUrl: string, bypassHosts: readonly string[]): string[] {
  return [
    `--proxy-server=${proxyUrl}`,
    `--proxy-bypass-list=${["<-loopback>", ...bypassHosts].join(";")}`,
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--dns-prefetch-disable",
  ];
}
