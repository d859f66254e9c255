import type { Server } from 'node:http';
import { TeamtrError } from './errors.js';

/** Another program listens on the port asked for. */
export class PortInUseError extends TeamtrError {
  constructor(
    readonly host: string,
    readonly port: number,
  ) {
    super(
      `port ${port} on ${host} is in use by another program; pick another with --port (0 = any free port)`,
    );
  }
}

/**
 * Starts `server` on host:port, turning the ways that fails into errors that name the flag
 * (`--port`, `--host`) and say what to do, instead of a stack trace.
 */
export async function listenOrExplain(server: Server, host: string, port: number): Promise<void> {
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new TeamtrError(`--port ${port} is not a port; give 0–65535 (0 = any free port)`);
  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      reject(explain(error, host, port));
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

function explain(error: NodeJS.ErrnoException, host: string, port: number): Error {
  switch (error.code) {
    case 'EADDRINUSE':
      return new PortInUseError(host, port);
    case 'EACCES':
      return new TeamtrError(
        `not allowed to listen on port ${port} (ports below 1024 need privileges); pick another with --port`,
      );
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
      return new TeamtrError(
        `cannot listen on ${host}: no such local address; use --host 127.0.0.1 or an address of this machine`,
      );
    default:
      return error;
  }
}

/** Loopback host names a local server answers to (anything else is refused with 421). */
export function loopbackHosts(port: number, boundHost: string): Set<string> {
  const shown = boundHost.includes(':') ? `[${boundHost}]` : boundHost;
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${shown}:${port}`]);
}

export function isLoopbackHost(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}
