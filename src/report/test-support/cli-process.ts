import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * The real `teamtr` CLI from source in a child process. Tests use it instead of calling main()
 * in-process because capturing process.stdout there also swallows the test runner's own
 * reports (which travel over the same stdout), and because a signal (Ctrl-C) can only be
 * sent to a process.
 */

const mainModule = fileURLToPath(new URL('../../cli/main.ts', import.meta.url));

export interface CliProcess {
  child: ChildProcess;
  /** Everything written so far. */
  output: { stdout: string; stderr: string };
  /** The exit code (null if killed by a signal). */
  exited: Promise<number | null>;
}

export function startCli(argv: readonly string[]): CliProcess {
  const script = `const { main } = await import(${JSON.stringify(mainModule)}); process.exitCode = await main(process.argv.slice(1));`;
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', script, '--', ...argv],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => resolve(code)),
  );
  return { child, output, exited };
}

/** Runs the CLI to the end. */
export async function runCli(
  argv: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = startCli(argv);
  const code = await cli.exited;
  return { code, ...cli.output };
}

/** Waits for the first complete stdout line, or fails after `seconds` or when the process exits. */
export async function firstLine(cli: CliProcess, seconds: number): Promise<string> {
  let done = false;
  void cli.exited.then(() => (done = true));
  for (let waited = 0; waited < seconds * 20; waited++) {
    const newline = cli.output.stdout.indexOf('\n');
    if (newline >= 0) return cli.output.stdout.slice(0, newline);
    if (done) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `no output line from teamtr ${done ? '(it exited)' : `within ${seconds} s`}; stderr: ${cli.output.stderr}`,
  );
}
