import { getRequestListener } from '@hono/node-server';
import type { Hono, MiddlewareHandler } from 'hono';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopbackHost, listenOrExplain, loopbackHosts, PortInUseError } from '../util/listen.js';
import type { NodeEnvironment } from './guards.js';

/**
 * Runs a hono app on Node's HTTP server with the limits every teamtr server keeps: a client
 * must send its headers within `headersTimeoutMs` and its whole request within
 * `requestTimeoutMs` (a slowly dribbled body cannot hold a connection: 408), a malformed
 * request line or Host is a 400, and a loopback server learns the Host names it answers.
 */

export interface HttpServerOptions {
  /** @default '127.0.0.1' */
  host?: string;
  port: number;
  /** When `port` is taken, listen on any free port instead of failing. @default false */
  orAnyFreePort?: boolean;
  /** @default 10_000 */
  headersTimeoutMs?: number;
  /** @default 60_000 */
  requestTimeoutMs?: number;
}

export interface RunningHttpServer {
  server: Server;
  url: string;
  port: number;
  /** Host headers accepted when bound to loopback; null otherwise (any). */
  allowedHosts: ReadonlySet<string> | null;
  close(): Promise<void>;
}

export async function startHttpServer(
  app: Hono<NodeEnvironment>,
  options: HttpServerOptions,
): Promise<RunningHttpServer> {
  const headersTimeout = options.headersTimeoutMs ?? 10_000;
  const listener = getRequestListener(app.fetch, {
    overrideGlobalObjects: false,
    // A request without a Host still gets a URL; the Host guard then judges the header itself.
    hostname: 'host.invalid',
    // The adapter could not even build the request (a Host that is no host name).
    errorHandler: (error) =>
      Response.json({ error: `bad request: ${(error as Error).message}` }, { status: 400 }),
  });
  const server = createServer(
    // Node checks the timeouts every connectionsCheckingInterval (30 s by default).
    { connectionsCheckingInterval: Math.min(1_000, headersTimeout) },
    (incoming, outgoing) => void listener(incoming, outgoing),
  );
  server.headersTimeout = headersTimeout;
  server.requestTimeout = options.requestTimeoutMs ?? 60_000;
  const host = options.host ?? '127.0.0.1';
  try {
    await listenOrExplain(server, host, options.port);
  } catch (error) {
    if (!options.orAnyFreePort || !(error instanceof PortInUseError)) throw error;
    await listenOrExplain(server, host, 0);
  }
  const { port } = server.address() as AddressInfo;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return {
    server,
    url: `http://${shownHost}:${port}`,
    port,
    allowedHosts: isLoopbackHost(host) ? loopbackHosts(port, host) : null,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * One line per request on `write` (method, path, status, milliseconds) and, for a 4xx or 5xx,
 * the error text the client got: a user of the server sees what its clients were told.
 */
export function requestLog(write: (line: string) => void): MiddlewareHandler<NodeEnvironment> {
  return async (context, next) => {
    const started = performance.now();
    await next();
    const milliseconds = Math.round(performance.now() - started);
    const status = context.res.status;
    const error = status >= 400 ? context.get('errorText') : undefined;
    write(
      `${context.req.method} ${context.req.path} ${status} ${milliseconds} ms${error ? ` — ${error}` : ''}`,
    );
  };
}
