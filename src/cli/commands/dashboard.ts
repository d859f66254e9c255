import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { startDashboard } from '../../dashboard/server.js';
import { ConfigError } from '../../util/errors.js';
import { untilInterrupted } from '../interrupted.js';

function integerFlag(text: string, flag: string, minimum: number, maximum: number): number {
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < minimum || value > maximum)
    throw new ConfigError(flag, `"${text}" is not an integer from ${minimum} to ${maximum}`);
  return value;
}

export function register(program: Command): void {
  program
    .command('dashboard')
    .description(
      'serve a live, read-only web view of runs: figures update while training writes metrics',
    )
    .argument(
      '[run-dir...]',
      'run directories, or directories of runs (`teamtr compare --out`); default: runs/',
    )
    .option(
      '--host <address>',
      'address to listen on; anything but loopback lets other machines read the runs',
      '127.0.0.1',
    )
    .option(
      '--port <number>',
      'port to listen on, 0 = any free port (default: 8765, or a free port if it is taken)',
    )
    .option('--poll <ms>', 'how often the page checks for new metrics, in milliseconds', '1000')
    .option('--json', 'print one JSON object (url, runs) on stdout once serving')
    .action((directories: string[], flags: DashboardFlags) => serveDashboard(directories, flags));
}

interface DashboardFlags {
  host: string;
  port?: string;
  poll: string;
  json?: boolean;
}

/** Serves the dashboard over `directories` (default runs/) until interrupted. */
async function serveDashboard(directories: string[], flags: DashboardFlags): Promise<void> {
  if (directories.length === 0 && !existsSync('runs'))
    throw new ConfigError(
      'run-dir',
      'no run directory given and there is no runs/ here; pass the --run-dir of `teamtr train`',
    );
  const dashboard = await startDashboard({
    runDirectories: directories.length ? directories : ['runs'],
    host: flags.host,
    port: flags.port === undefined ? undefined : integerFlag(flags.port, '--port', 0, 65535),
    pollIntervalMs: integerFlag(flags.poll, '--poll', 100, 3_600_000),
    onError: (error) =>
      process.stderr.write(
        `teamtr dashboard: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
      ),
  });
  const interrupted = untilInterrupted();
  if (flags.json) {
    process.stdout.write(
      `${JSON.stringify({ url: dashboard.url, host: dashboard.host, port: dashboard.port, runs: dashboard.runDirectories })}\n`,
    );
  } else {
    const count = dashboard.runDirectories.length;
    process.stdout.write(
      `Dashboard for ${count} run${count === 1 ? '' : 's'}: ${dashboard.url}\n  (read-only; updates while runs are written; Ctrl-C to stop)\n`,
    );
  }
  if (!['127.0.0.1', 'localhost', '::1'].includes(flags.host)) {
    process.stderr.write(
      `teamtr dashboard: listening on ${flags.host}: anyone who can reach this machine can read these runs\n`,
    );
  }
  await interrupted;
  await dashboard.close();
  process.stderr.write('teamtr dashboard: stopped\n');
}
