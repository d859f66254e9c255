import { resolveRunDirectories } from '../report/runs.js';
import { startHttpServer } from '../http/server.js';
import { TeamtrError } from '../util/errors.js';
import { PortInUseError } from '../util/listen.js';
import { dashboardApp } from './routes.js';
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

/** Serves a read-only live view of the runs until `close()`. */
export async function startDashboard(options: DashboardOptions): Promise<DashboardServer> {
  const host = options.host ?? '127.0.0.1';
  // One damaged run is listed as damaged; it never stops the dashboard for the others.
  const damaged = new Map<string, string>();
  const runDirectories = await resolveRunDirectories(options.runDirectories, {
    onDamaged: (directory, error) => damaged.set(directory, error.message),
  });
  const store = await RunStore.open(runDirectories, damaged);
  const context = {
    store,
    pollIntervalMs: options.pollIntervalMs ?? 1000,
    allowedHosts: null as ReadonlySet<string> | null,
  };
  const running = await startHttpServer(dashboardApp(context, options.onError), {
    host,
    port: options.port ?? defaultDashboardPort,
    orAnyFreePort: options.port === undefined,
  }).catch((error: unknown) => {
    if (error instanceof PortInUseError)
      throw new TeamtrError(
        `port ${error.port} is in use; pick another with --port (0 = any free port)`,
      );
    throw error;
  });
  context.allowedHosts = running.allowedHosts;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : new URL(running.url).hostname;
  return {
    url: `http://${urlHost}:${running.port}/`,
    host,
    port: running.port,
    runDirectories,
    close: running.close,
  };
}
