import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

/**
 * Runs a hostile-input case in a child process under a memory and a time limit, so a case that
 * regresses (grows to gigabytes, or hangs) is killed and fails its test instead of taking the
 * test runner down. The clock starts when `setup` has run (imports through tsx take seconds on
 * a loaded machine); the memory limit holds from the start. The child's peak RSS is reported.
 */
export interface BoundedCase {
  /** Module code run before the clock starts: imports, fixtures. */
  setup: string;
  /** Module code run under the time limit; its output is the test's evidence. */
  body: string;
  /** @default 1 GiB */
  memoryBytes?: number;
  /** @default 5000 */
  milliseconds?: number;
  env?: Record<string, string>;
  cwd?: string;
}

export interface BoundedResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The child's own peak resident memory (getrusage). */
  peakRssBytes: number;
  /** Which limit killed the child, if one did. */
  exceeded: 'memory' | 'time' | null;
}

const startMarker = '\u0001started\n';
const rssMarker = /\u0001rss (\d+)\n/;

export function runBounded(testCase: BoundedCase): Promise<BoundedResult> {
  const memoryBytes = testCase.memoryBytes ?? 2 ** 30;
  const milliseconds = testCase.milliseconds ?? 5000;
  const script = [
    `process.on('exit', () => process.stderr.write('\\u0001rss ' + process.resourceUsage().maxRSS * 1024 + '\\n'));`,
    testCase.setup,
    `process.stderr.write(${JSON.stringify(startMarker)});`,
    testCase.body,
  ].join('\n');
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: testCase.cwd,
    env: { ...process.env, TEAMTR_QUIET_BACKEND: '1', ...testCase.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let exceeded: BoundedResult['exceeded'] = null;
  let clock: NodeJS.Timeout | undefined;
  const kill = (reason: 'memory' | 'time') => {
    exceeded ??= reason;
    child.kill('SIGKILL');
  };
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
    if (clock === undefined && stderr.includes(startMarker))
      clock = setTimeout(() => kill('time'), milliseconds);
  });
  const watch = setInterval(() => {
    if (residentBytes(child.pid) > memoryBytes) kill('memory');
  }, 20);
  return new Promise((resolve) => {
    child.on('close', (code) => {
      clearInterval(watch);
      clearTimeout(clock);
      const rss = rssMarker.exec(stderr);
      resolve({
        code,
        stdout,
        stderr: stderr.replace(startMarker, '').replace(rssMarker, ''),
        peakRssBytes: rss ? Number(rss[1]) : Number.NaN,
        exceeded,
      });
    });
  });
}

function residentBytes(pid: number | undefined): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kilobytes = /VmRSS:\s+(\d+) kB/.exec(status);
    return kilobytes ? Number(kilobytes[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}
