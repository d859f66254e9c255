import { createServer, type Server } from 'node:http';
import { isIP } from 'node:net';
import { resolveRunDirectories } from '../report/runs.js';
import { TeamtrError } from '../util/errors.js';
import { isLoopbackHost } from '../util/listen.js';
import { handleRequest } from './routes.js';
import { RunStore } from './run-store.js';

export interface DashboardOptions {
  /** Run directories, or directories of runs (`teamtr compare --out`). */
  runDirectories: readonly string[];
  /** Address to listen on. Anything but loopback lets other machines read the runs. @default '127.0.0.1' */
  host?: string;
  /** 0 picks a free port. @default 8765, or a free port when 8765 is taken */
  port?: number;
  /** How often the page asks for new metrics. @default 1000 */
  pollIntervalMs?: number;
  /** Called with errors a request could not report to its client (they are also sent as 500). */
  onError?: (error: unknown) => void;
}

export interface DashboardServer {
  url: string;
  host: string;
  port: number;
  /** The run directories served, in id order. */
  runDirectories: string[];
  close(): Promise<void>;
}

export const defaultDashboardPort = 8765;

function listen(server: Server, host: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => {
      server.off('listening', onListening);
      reject(error);
    };
    const onListening = () => {
      server.off('error', onError);
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/** Serves a read-only live view of the runs until `close()`. */
export async function startDashboard(options: DashboardOptions): Promise<DashboardServer> {
  const host = options.host ?? '127.0.0.1';
  const runDirectories = await resolveRunDirectories(options.runDirectories);
  const store = await RunStore.open(runDirectories);
  const context = {
    store,
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    allowedHosts: null as Set<string> | null,
  };
  const server = createServer((request, response) => {
    handleRequest(request, response, context).catch((error: unknown) => {
      options.onError?.(error);
      if (!response.headersSent) {
        const message =
          error instanceof TeamtrError
            ? error.message
            : 'internal error; see the terminal running `teamtr dashboard`';
        response.writeHead(error instanceof TeamtrError ? 403 : 500, {
          'content-type': 'application/json; charset=utf-8',
        });
        response.end(JSON.stringify({ error: message }));
      } else {
        response.destroy();
      }
    });
  });
  let port: number;
  if (
    options.port !== undefined &&
    !(Number.isInteger(options.port) && options.port >= 0 && options.port <= 65_535)
  )
    throw new TeamtrError(`--port ${options.port} is not a port; give 0–65535 (0 = any free port)`);
  try {
    port = await listen(server, host, options.port ?? defaultDashboardPort);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' && options.port === undefined) port = await listen(server, host, 0);
    else if (code === 'EADDRINUSE')
      throw new TeamtrError(
        `port ${options.port} is in use; pick another with --port (0 = any free port)`,
      );
    else if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
      throw new TeamtrError(
        `cannot listen on ${host}: no such local address; use --host 127.0.0.1 or an address of this machine`,
      );
    else throw error;
  }
  const urlHost =
    isIP(host) === 6 ? `[${host}]` : host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  if (isLoopbackHost(host))
    context.allowedHosts = new Set([
      `127.0.0.1:${port}`,
      `localhost:${port}`,
      `[::1]:${port}`,
      `${urlHost}:${port}`,
    ]);
  return {
    url: `http://${urlHost}:${port}/`,
    host,
    port,
    runDirectories,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
